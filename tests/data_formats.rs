//! Data in and out through the command line: Parquet and Arrow tables in (`--table`,
//! `--data`), results out (`--format parquet|arrow --out`), round trips, the cached default
//! data, and every kind of bad input ending in exit code 1 with the file, row or line and
//! column named.

use std::path::Path;
use std::process::{Command, Output};

fn horsec_in(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HORSEC_CACHE_DIR", cache)
        .output()
        .expect("the horsec binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeds(out: &Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Exit code 1, no panic, and `needle` in stderr.
fn fails_with(out: &Output, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in:\n{stderr}");
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Reads every column of `sales` and returns them as they are.
const SALES_PROGRAM: &str = "module m { import Builtin.*; def main() : table {
    t:table = @load_table(`sales:sym);
    id:i64 = check_cast(@column_value(t, `id:sym), i64);
    price:f64 = check_cast(@column_value(t, `price:sym), f64);
    day:date = check_cast(@column_value(t, `day:sym), date);
    name:sym = check_cast(@column_value(t, `name:sym), sym);
    columns:list<?> = @list(id, price, day, name);
    r:table = @table((`id, `price, `day, `name):sym, columns);
    return r;
} }";

const SALES_CSV: &str = "id,price,day,name\n\
    1,2.5,1998-12-01,\"Smith, J\"\n\
    -7,1e300,1970-01-01,Doe\n\
    3,0.07,2000-02-29,Doe\n";

#[test]
fn csv_to_parquet_to_arrow_and_back_gives_the_identical_table() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    std::fs::write(d.join("p.hir"), SALES_PROGRAM).expect("writable");
    std::fs::write(d.join("sales.csv"), SALES_CSV).expect("writable");
    let program = d.join("p.hir");
    let program = path_str(&program);
    let run = |input: &str, extra: &[&str]| {
        let table = format!("sales={}", path_str(&d.join(input)));
        let mut args = vec!["run", program, "--backend", "cpu", "--table", &table];
        args.extend_from_slice(extra);
        horsec_in(d, &args)
    };
    let from_csv = succeeds(&run("sales.csv", &["--format", "tsv"]));
    assert!(from_csv.contains("Smith, J"), "{from_csv}");

    let parquet = d.join("sales.parquet");
    let out = run(
        "sales.csv",
        &["--format", "parquet", "--out", path_str(&parquet)],
    );
    assert_eq!(succeeds(&out), "", "the result goes to the file");
    let from_parquet = succeeds(&run("sales.parquet", &["--format", "tsv"]));
    assert_eq!(from_parquet, from_csv);

    let arrow = d.join("sales.arrow");
    succeeds(&run(
        "sales.parquet",
        &["--format", "arrow", "--out", path_str(&arrow)],
    ));
    let from_arrow = succeeds(&run("sales.arrow", &["--format", "tsv"]));
    assert_eq!(from_arrow, from_csv);
}

#[test]
fn tpch_written_as_parquet_answers_q6_as_the_generated_data_does() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("tpch");
    let out = horsec_in(
        dir.path(),
        &[
            "gen-tpch",
            "--sf",
            "0.01",
            "--out",
            path_str(&data),
            "--format",
            "parquet",
        ],
    );
    succeeds(&out);
    assert!(data.join("lineitem.parquet").is_file());
    let q6 = |source: &[&str]| {
        let mut args = vec![
            "run",
            "queries/tpch/q6.hir",
            "--backend",
            "cpu",
            "--format",
            "tsv",
        ];
        args.extend_from_slice(source);
        succeeds(&horsec_in(dir.path(), &args))
    };
    let generated = q6(&["--tpch", "0.01"]);
    assert_eq!(q6(&["--data", path_str(&data)]), generated);
}

#[test]
fn the_default_data_is_generated_once_into_the_cache_and_regenerated_when_corrupt() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let run = || {
        horsec_in(
            cache.path(),
            &[
                "run",
                "queries/tpch/q6.hir",
                "--backend",
                "cpu",
                "--format",
                "tsv",
            ],
        )
    };
    let first = run();
    let answer = succeeds(&first);
    assert!(
        text(&first.stderr).contains("note: generated the TPC-H tables once into"),
        "{}",
        text(&first.stderr)
    );
    let second = run();
    assert_eq!(succeeds(&second), answer);
    assert_eq!(text(&second.stderr), "", "a warm run says nothing");

    let cached = horsec_runtime::data::tpch_cache_dir(cache.path(), 0.01).join("lineitem.parquet");
    let mut bytes = std::fs::read(&cached).expect("the cache holds lineitem");
    bytes.truncate(bytes.len() - 100);
    std::fs::write(&cached, bytes).expect("writable");
    let third = run();
    assert_eq!(succeeds(&third), answer);
    assert!(
        text(&third.stderr).contains("are unusable") && text(&third.stderr).contains("lineitem"),
        "{}",
        text(&third.stderr)
    );
    assert_eq!(text(&run().stderr), "", "repaired");
}

#[test]
fn bad_data_files_fail_with_the_file_line_and_column_named() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    std::fs::write(d.join("p.hir"), SALES_PROGRAM).expect("writable");
    let program = d.join("p.hir");
    let program = path_str(&program);
    let run_on = |name: &str, contents: &[u8]| {
        let path = d.join(name);
        std::fs::write(&path, contents).expect("writable");
        let table = format!("sales={}", path_str(&path));
        horsec_in(d, &["run", program, "--backend", "cpu", "--table", &table])
    };
    // A header without a column the program reads.
    fails_with(
        &run_on("header.csv", b"id,price,day\n1,2.5,1998-12-01\n"),
        "header.csv: table `sales` has no column `name`, which the program reads (its columns: id, price, day)",
    );
    // A wrong field count.
    fails_with(
        &run_on("fields.csv", b"id,price,day,name\n1,2.5,1998-12-01\n"),
        "fields.csv",
    );
    // A number out of range and an invalid date, in declared columns.
    fails_with(
        &run_on(
            "range.csv",
            b"id:i64,price,day,name\n99999999999999999999,1,1998-12-01,x\n",
        ),
        "range.csv:2: column 1 `id`: expected i64, found `99999999999999999999`",
    );
    fails_with(
        &run_on("date.csv", b"id,price,day:date,name\n1,1,1998-02-30,x\n"),
        "date.csv:2: column 3 `day`: expected date, found `1998-02-30`",
    );
    // A truncated Parquet file, and a format horsec does not read.
    fails_with(
        &run_on("cut.parquet", b"PAR1 not really parquet"),
        "cut.parquet: not a readable Parquet file",
    );
    fails_with(&run_on("t.xlsx", b""), "unknown data file extension");
    // A Parquet result without --out.
    let out = horsec_in(d, &["run", program, "--format", "parquet"]);
    fails_with(&out, "--format parquet writes a file: give --out FILE");
}

#[test]
fn a_malformed_tbl_row_in_a_data_dir_is_named_by_line_and_column() {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        dir.path().join("region.tbl"),
        "0|AFRICA|a|\n1|AMERICA|b|extra|\n",
    )
    .expect("writable");
    let program = dir.path().join("p.hir");
    std::fs::write(
        &program,
        "module m { import Builtin.*; def main() : i32 {
            t:table = @load_table(`region:sym);
            k:i32 = check_cast(@column_value(t, `r_regionkey:sym), i32);
            return k; } }",
    )
    .expect("writable");
    let out = horsec_in(
        dir.path(),
        &[
            "run",
            path_str(&program),
            "--backend",
            "cpu",
            "--data",
            path_str(dir.path()),
        ],
    );
    fails_with(
        &out,
        "region.tbl:2:1: table `region` has 3 fields per line, found 4",
    );
}
