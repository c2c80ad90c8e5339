//! The `horsec` command line as a user runs it: the README's first command, `.tbl` data
//! written by `gen-tpch` and read by `run --data`, and exit codes on bad input.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{compare_answers, conformance_dir, tpch_sort_keys};

fn horsec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the horsec binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_with_no_flags_prints_q6_as_a_table_on_the_embedded_data() {
    let out = horsec(&["run", "queries/tpch/q6.hir"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0].trim(), "revenue", "{stdout}");
    assert!(lines[1].starts_with('-'), "{stdout}");
    let revenue: f64 = lines[2].trim().parse().expect("a number");
    assert!((revenue - 1_193_053.225_3).abs() < 1e-3, "{stdout}");
}

/// `horsec run FILE --backend cpu --data DIR --format tsv` for each of the 22 conformance
/// programs, on SF 0.01 `.tbl` files written by `horsec gen-tpch`.
#[test]
fn run_reads_tbl_files_and_answers_every_tpch_query() {
    let Some(conformance) = conformance_dir() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().to_str().expect("a UTF-8 path");
    let out = horsec(&["gen-tpch", "--sf", "0.01", "--out", data]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for q in 1..=22 {
        let program = conformance.join(format!("tpch/queries/q{q}.hir"));
        let program = program.to_str().expect("a UTF-8 path");
        let out = horsec(&[
            "run",
            program,
            "--backend",
            "cpu",
            "--data",
            data,
            "--format",
            "tsv",
        ]);
        assert!(out.status.success(), "q{q}: {}", text(&out.stderr));
        let expected = conformance.join(format!("tpch/expected-sf0.01/q{q}.tsv"));
        let expected = std::fs::read_to_string(expected).expect("the expected answer");
        if let Err(diff) = compare_answers(&text(&out.stdout), &expected, tpch_sort_keys(q)) {
            panic!("q{q} from .tbl files: {diff}");
        }
    }
}

#[test]
fn bad_input_exits_1_with_a_located_message() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bad = dir.path().join("bad.hir");
    std::fs::write(
        &bad,
        "module m { def main() : i64 { x:i64 = @nope(1:i64); return x; } }\n",
    )
    .expect("write");
    let out = horsec(&["run", bad.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("bad.hir:1:") && stderr.contains("error:") && stderr.contains("nope"),
        "{stderr}"
    );

    let missing = horsec(&["run", "queries/tpch/q6.hir", "--data", "/nonexistent/dir"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("/nonexistent/dir"),
        "{}",
        text(&missing.stderr)
    );

    let none = horsec(&[
        "check",
        Path::new("no/such/file.hir").to_str().expect("UTF-8"),
    ]);
    assert_eq!(none.status.code(), Some(1));
}

#[test]
fn a_warm_up_that_is_not_a_duration_is_refused_before_any_data_loads() {
    for seconds in ["-1", "nan", "inf"] {
        let flag = format!("--warm-up={seconds}");
        let out = horsec(&["bench", "queries/tpch/q6.hir", "--gpu-only", &flag]);
        fails_with(&out, "expected a number of seconds, 0 or more");
        assert!(
            !text(&out.stderr).contains("data loaded"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// A program file in a fresh temporary directory (kept alive by the returned guard).
fn program_file(source: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("p.hir");
    std::fs::write(&path, source).expect("write the program");
    let path = path.to_str().expect("UTF-8").to_string();
    (dir, path)
}

/// Exit code 1, no panic, and `needle` in stderr.
fn fails_with(out: &Output, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("internal compiler error"), "{stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in:\n{stderr}");
}

#[test]
fn run_piped_into_head_exits_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let (_dir, program) = program_file(
        "module m { import Builtin.*; def main() : i64 { r:i64 = @range(300000:i64); return r; } }",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(["run", &program, "--backend", "cpu", "--format", "tsv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the horsec binary runs");
    // Read the first lines, then close the pipe like `head` does.
    let mut first = [0u8; 64];
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_exact(&mut first)
        .expect("the first lines");
    let out = child.wait_with_output().expect("horsec ends");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// `horsec run … 2>&1 | head -1` on a program that warns and then fails: the messages go
/// to a reader that left, and horsec still exits with the program's 1, not a panic's 101.
#[test]
fn messages_to_a_closed_standard_error_do_not_panic() {
    use std::process::Stdio;
    let (_dir, program) = program_file(
        "module m { import Builtin.*; def main() : i64 { r:i64 = @range(-5:i64); return r; } }",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(["run", &program, "--backend", "cpu"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the horsec binary runs");
    // Close the reading end before horsec has compiled anything, so every message meets
    // a broken pipe.
    drop(child.stderr.take());
    let status = child.wait().expect("horsec ends");
    assert_eq!(status.code(), Some(1), "{status:?}");
}

#[test]
fn an_adapter_name_that_matches_no_adapter_is_an_error_listing_the_adapters() {
    let out = horsec(&[
        "run",
        "queries/tpch/q6.hir",
        "--adapter",
        "no-such-adapter-anywhere",
    ]);
    fails_with(
        &out,
        "error: --adapter: no GPU adapter: no adapter name contains `no-such-adapter-anywhere`",
    );
    assert!(text(&out.stderr).contains("available:"));
}

#[test]
fn runtime_errors_show_the_source_line_and_mark_the_statement() {
    let (_dir, program) = program_file(
        "module m {\n    import Builtin.*;\n    def main() : date {\n        \
         d:date = @datetime_add(1998-09-02:date, 999999999999:i64, `day:sym);\n        \
         return d;\n    }\n}\n",
    );
    for backend in ["cpu", "gpu"] {
        let out = horsec(&["run", &program, "--backend", backend]);
        if backend == "gpu" && text(&out.stderr).contains("no GPU adapter") {
            continue;
        }
        fails_with(
            &out,
            "p.hir:4:9: error: @datetime_add: 1998-09-02:date plus 999999999999 day is outside \
             the date range 0000-01-01 to 9999-12-31",
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("4 |         d:date = @datetime_add(1998-09-02:date"),
            "{stderr}"
        );
        assert!(stderr.contains("  |         ^^^^"), "{stderr}");
    }
}

#[test]
fn a_program_that_loads_no_table_generates_no_data() {
    // SF 100000 would need terabytes: the run succeeds only if nothing is generated.
    let (_dir, program) = program_file(
        "module m { import Builtin.*; def main() : i64 { r:i64 = @plus(1:i64, 2:i64); return r; } }",
    );
    let out = horsec(&["run", &program, "--backend", "cpu", "--tpch", "100000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains('3'), "{}", text(&out.stdout));
}

#[test]
fn tpch_scales_beyond_memory_or_disk_fail_before_starting() {
    let out = horsec(&[
        "run",
        "queries/tpch/q6.hir",
        "--backend",
        "cpu",
        "--tpch",
        "100000",
    ]);
    fails_with(&out, "TPC-H at scale factor 100000 needs about");
    assert!(text(&out.stderr).contains("of memory"));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().to_str().expect("UTF-8");
    let out = horsec(&["gen-tpch", "--sf", "100000", "--out", data]);
    fails_with(&out, "TPC-H at scale factor 100000 needs about");
    assert!(text(&out.stderr).contains("of disk"));
    assert!(
        std::fs::read_dir(dir.path())
            .expect("listable")
            .next()
            .is_none(),
        "nothing was written"
    );
}

const REGION_PROGRAM: &str = "module m { import Builtin.*; def main() : table {
    t:table = @load_table(`region:sym);
    k:i32 = check_cast(@column_value(t, `r_regionkey:sym), i32);
    n:sym = check_cast(@column_value(t, `r_name:sym), sym);
    columns:list<?> = @list(k, n);
    r:table = @table((`key, `name):sym, columns);
    return r;
} }";

#[test]
fn data_dir_needs_only_the_tables_the_program_loads() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        dir.path().join("region.tbl"),
        "0|AFRICA|lar deposits|\n1|AMERICA|hs use|\n",
    )
    .expect("write region.tbl");
    let data = dir.path().to_str().expect("UTF-8");
    let (_p, program) = program_file(REGION_PROGRAM);
    let out = horsec(&[
        "run",
        &program,
        "--backend",
        "cpu",
        "--data",
        data,
        "--format",
        "tsv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "key\tname\n0\tAFRICA\n1\tAMERICA\n");

    // A loaded table whose file is missing is named.
    let (_q, nation) = program_file(
        "module m { import Builtin.*; def main() : table { t:table = @load_table(`nation:sym); return t; } }",
    );
    let out = horsec(&["run", &nation, "--backend", "cpu", "--data", data]);
    fails_with(&out, "nation.tbl");
}

#[test]
fn a_tbl_value_that_does_not_parse_names_file_line_and_column() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        dir.path().join("region.tbl"),
        "0|AFRICA|lar deposits|\n1x|AMERICA|hs use|\n",
    )
    .expect("write region.tbl");
    let data = dir.path().to_str().expect("UTF-8");
    let (_p, program) = program_file(REGION_PROGRAM);
    let out = horsec(&["run", &program, "--backend", "cpu", "--data", data]);
    fails_with(
        &out,
        "region.tbl:2:1: column `r_regionkey`: expected an i32 integer, found `1x`",
    );
}

#[test]
fn sizes_from_values_are_checked_before_allocating() {
    for (call, needle) in [
        (
            "@vector(9223372036854775807:i64, 1:i64)",
            "@vector: cannot make 9223372036854775807 elements",
        ),
        (
            "@range(4000000000000:i64)",
            "@range: cannot make 4000000000000 elements",
        ),
        (
            "@randk(1000000000000:i64, 3:i64)",
            "@randk: cannot make 1000000000000 random numbers",
        ),
        (
            "@vector(-5:i64, 1:i64)",
            "@vector: cannot make -5 elements: the count -5 is negative",
        ),
    ] {
        let (_dir, program) = program_file(&format!(
            "module m {{ import Builtin.*; def main() : i64 {{ r:i64 = {call}; return r; }} }}"
        ));
        let out = horsec(&["run", &program, "--backend", "cpu"]);
        fails_with(&out, needle);
    }
}

/// `r_regionkey` of no rows: a column on the GPU, compressed to nothing.
const NO_REGIONS: &str = "t:table = @load_table(`region:sym);
            k:i32 = check_cast(@column_value(t, `r_regionkey:sym), i32);
            none:bool = @gt(k, 100:i32);
            e:i32 = @compress(none, k);";

#[test]
fn count_and_sum_of_no_rows_are_zero() {
    let (_dir, program) = program_file(&format!(
        "module m {{ import Builtin.*; def main() : table {{
            {NO_REGIONS}
            s:i64 = @sum(e);
            c:i64 = @count(e);
            columns:list<?> = @list(s, c);
            r:table = @table((`s, `c):sym, columns);
            return r;
        }} }}"
    ));
    for backend in ["cpu", "gpu"] {
        let out = horsec(&["run", &program, "--backend", backend, "--format", "tsv"]);
        if backend == "gpu" && text(&out.stderr).contains("no GPU adapter") {
            continue;
        }
        assert!(out.status.success(), "{backend}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "s\tc\n0\t0\n", "{backend}");
    }
}

/// `@avg`, `@min` and `@max` of no rows on `backend`: each fails naming the builtin.
fn empty_extremes_fail(backend: &str) {
    for (builtin, message) in [
        ("max", "@max: no maximum of no elements"),
        ("min", "@min: no minimum of no elements"),
        ("avg", "@avg: no average of no elements"),
    ] {
        let ty = if builtin == "avg" { "f64" } else { "i32" };
        let (_dir, program) = program_file(&format!(
            "module m {{ import Builtin.*; def main() : {ty} {{
            {NO_REGIONS}
            m:{ty} = @{builtin}(e);
            return m;
        }} }}"
        ));
        let out = horsec(&["run", &program, "--backend", backend]);
        if backend == "gpu" && text(&out.stderr).contains("no GPU adapter") {
            return;
        }
        fails_with(&out, message);
    }
}

#[test]
fn avg_min_and_max_of_no_rows_are_errors_on_the_cpu() {
    empty_extremes_fail("cpu");
}

/// The kernels' reductions must agree with the CPU (no sentinel such as `i32::MIN`).
#[test]
fn avg_min_and_max_of_no_rows_are_errors_on_the_gpu() {
    empty_extremes_fail("gpu");
}

#[test]
fn a_csv_value_that_does_not_parse_in_a_typed_column_names_file_line_and_column() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let csv = dir.path().join("prices.csv");
    std::fs::write(&csv, "id:i64,price:f64\n1,2.5\n2,cheap\n").expect("write the CSV");
    let (_p, program) = program_file(
        "module m { import Builtin.*; def main() : table { t:table = @load_table(`prices:sym); return t; } }",
    );
    let table = format!("prices={}", csv.display());
    let out = horsec(&["run", &program, "--backend", "cpu", "--table", &table]);
    fails_with(
        &out,
        "prices.csv:3: column 2 `price`: expected f64, found `cheap`",
    );
}

/// `horsec run --time` on the GPU ends with every byte moved either way, in the form scripts
/// read (q6's answer is one f64: what comes back is its 8 bytes and a few words of counts),
/// and a second run in a new process finds the pipelines the first one put in the cache.
#[test]
fn time_reports_the_bytes_moved_and_a_second_run_loads_cached_pipelines() {
    if common::gpu().is_none() {
        return;
    }
    let cache = tempfile::tempdir().expect("a temporary directory");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_horsec"))
            .args(["run", "queries/tpch/q6.hir", "--backend", "gpu", "--time"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("HORSEC_CACHE_DIR", cache.path())
            .output()
            .expect("the horsec binary runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let first = run();
    let bytes = |report: &str, what: &str| -> u64 {
        let line = report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("bytes {what}: ")))
            .unwrap_or_else(|| panic!("no `bytes {what}:` line in\n{report}"));
        line.parse()
            .unwrap_or_else(|_| panic!("`bytes {what}: {line}` is not an integer"))
    };
    assert!(bytes(&first, "uploaded") > 0, "{first}");
    assert!(bytes(&first, "downloaded") <= 1024, "{first}");
    let cache_line = |report: &str| {
        report
            .lines()
            .find(|l| l.trim_start().starts_with("pipeline cache"))
            .unwrap_or_else(|| panic!("no pipeline cache line in\n{report}"))
            .to_string()
    };
    if cache_line(&first).contains("off") {
        eprintln!("SKIPPED the second run: this adapter keeps no pipeline cache");
        return;
    }
    assert!(cache_line(&first).contains("empty"), "{first}");
    let second = run();
    assert!(
        cache_line(&second).contains("bytes loaded from"),
        "{second}"
    );
}

#[test]
fn time_reports_gpu_busy_from_timestamps_in_every_timed_run() {
    let Some(device) = common::gpu() else {
        return;
    };
    if !device.has_timestamps() {
        eprintln!("SKIPPED: this adapter writes no timestamps");
        return;
    }
    let run = horsec(&["run", "queries/tpch/q6.hir", "--backend", "gpu", "--time"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let report = text(&run.stderr);
    let busy = report
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("GPU busy (timestamps)"))
        .unwrap_or_else(|| panic!("no GPU busy line in\n{report}"));
    let ms = |field: &str| -> f64 {
        field
            .parse()
            .unwrap_or_else(|_| panic!("`{field}` is not a time in ms"))
    };
    let first = busy.split_whitespace().next().unwrap_or_default();
    assert!(ms(first) > 0.0, "{report}");
    // Several timed runs in one process: each reads the timestamps its kernels wrote from
    // the same host-readable log, which every run maps and gives back.
    let bench = horsec(&[
        "bench",
        "--gpu-only",
        "--runs",
        "3",
        "--warm-up",
        "0",
        "--time",
        "queries/tpch/q6.hir",
    ]);
    assert!(bench.status.success(), "{}", text(&bench.stderr));
    let table = text(&bench.stdout) + &text(&bench.stderr);
    let row = table
        .lines()
        .find(|l| l.starts_with("q6 "))
        .unwrap_or_else(|| panic!("no q6 row in\n{table}"));
    // query, compile, gpu cold, gpu, kernels, busy, ...
    let busy = row.split_whitespace().nth(5).unwrap_or_default();
    assert!(ms(busy) > 0.0, "{table}");
}

#[test]
fn a_length_mismatch_the_compiler_proves_is_a_located_compile_error_on_both_backends() {
    let program = "tests/programs/errors/literal_length_mismatch.hir";
    let check = horsec(&["check", program]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stderr));
    insta::assert_snapshot!("literal_length_mismatch", text(&check.stderr));
    for backend in ["cpu", "gpu"] {
        let out = horsec(&["run", program, "--backend", backend]);
        if backend == "gpu" && text(&out.stderr).contains("no GPU adapter") {
            continue;
        }
        fails_with(
            &out,
            "literal_length_mismatch.hir:9:5: error: @plus: length mismatch (3 vs 2)",
        );
        assert!(
            text(&out.stderr).contains(&text(&check.stderr)),
            "--backend {backend}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn columns_of_two_tables_are_compared_when_the_program_runs() {
    let program = "tests/programs/errors/columns_of_two_tables.hir";
    let check = horsec(&["check", program]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    for backend in ["cpu", "gpu"] {
        let out = horsec(&["run", program, "--backend", backend]);
        if backend == "gpu" && text(&out.stderr).contains("no GPU adapter") {
            continue;
        }
        fails_with(
            &out,
            "columns_of_two_tables.hir:10:5: error: @plus: length mismatch (15000 vs 60175)",
        );
    }
}
