//! TPC-H on the GPU backend (lavapipe will do): each of the 22 conformance programs, and each
//! of our own `queries/tpch/` programs, gives the expected answer at SF 0.01, and the same
//! answer as the CPU backend (the differential test). With `HORSEC_TPCH_SF1` set (to `1` or a
//! directory of SF 1 `.tbl` files) the conformance programs are also checked at SF 1.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use std::path::PathBuf;

use common::{
    compare_answers, conformance_dir, conformance_program, gpu, our_program, run_gpu_tsv, run_tsv,
    tpch, tpch_sort_keys,
};

fn check_query(program: PathBuf, query: u32, sf: f64) {
    let (Some(conformance), Some(device)) = (conformance_dir(), gpu()) else {
        return;
    };
    let dir = if sf >= 1.0 {
        "expected-sf1"
    } else {
        "expected-sf0.01"
    };
    let expected_path = conformance.join(format!("tpch/{dir}/q{query}.tsv"));
    let expected = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let db = tpch(sf);
    let (actual, cpu_steps) = run_gpu_tsv(&program, &db, device)
        .unwrap_or_else(|e| panic!("q{query} failed on the GPU:\n{e}"));
    if let Err(diff) = compare_answers(&actual, &expected, tpch_sort_keys(query)) {
        panic!(
            "q{query} on the GPU at SF {sf} ({}): {diff}",
            program.display()
        );
    }
    // The differential check: the CPU backend's answer, compared by the same rule.
    let cpu = run_tsv(&program, &db).unwrap_or_else(|e| panic!("q{query} failed on the CPU:\n{e}"));
    if let Err(diff) = compare_answers(&actual, &cpu, tpch_sort_keys(query)) {
        panic!("q{query}: GPU and CPU backends differ at SF {sf}: {diff}");
    }
    eprintln!("q{query}: compute steps on the CPU: {cpu_steps:?}");
}

macro_rules! tpch_tests {
    ($($name:ident => $q:literal),* $(,)?) => {
        mod conformance_sf001 {
            use super::*;
            $(#[test] fn $name() {
                if let Some(p) = conformance_program($q) { check_query(p, $q, 0.01) }
            })*
        }
        mod ours_sf001 {
            use super::*;
            $(#[test] fn $name() { check_query(our_program($q), $q, 0.01) })*
        }
    };
}

tpch_tests! {
    q01 => 1, q02 => 2, q03 => 3, q04 => 4, q05 => 5, q06 => 6, q07 => 7, q08 => 8,
    q09 => 9, q10 => 10, q11 => 11, q12 => 12, q13 => 13, q14 => 14, q15 => 15, q16 => 16,
    q17 => 17, q18 => 18, q19 => 19, q20 => 20, q21 => 21, q22 => 22,
}

/// All 22 conformance programs at SF 1 on the GPU (slow on lavapipe).
#[test]
fn sf1() {
    if std::env::var_os("HORSEC_TPCH_SF1").is_none() {
        eprintln!("SKIPPED: set HORSEC_TPCH_SF1=1 (or =DIR of .tbl files) to check SF 1");
        return;
    }
    for q in 1..=22 {
        if let Some(p) = conformance_program(q) {
            let start = std::time::Instant::now();
            check_query(p, q, 1.0);
            eprintln!(
                "GPU q{q} at SF 1: {:.0} ms",
                start.elapsed().as_secs_f64() * 1e3
            );
        }
    }
}
