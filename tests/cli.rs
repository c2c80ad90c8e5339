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
