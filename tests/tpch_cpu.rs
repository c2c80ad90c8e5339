//! TPC-H answers on the CPU backend: each of the 22 conformance programs, and each of our own
//! `queries/tpch/` programs, gives the expected answer at SF 0.01. With `HORSEC_TPCH_SF1`
//! set (to `1`, or to a directory of SF 1 `.tbl` files as `horsec gen-tpch --sf 1` writes)
//! both sets are also checked at SF 1 (one SF 1 database shared by both).

mod common;

use std::path::PathBuf;

use common::{
    compare_answers, conformance_dir, conformance_program, our_program, run_tsv, tpch,
    tpch_sort_keys,
};

fn check_query(program: PathBuf, query: u32, sf: f64) {
    let Some(conformance) = conformance_dir() else {
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
    let actual = run_tsv(&program, &db).unwrap_or_else(|e| panic!("q{query} failed:\n{e}"));
    if let Err(diff) = compare_answers(&actual, &expected, tpch_sort_keys(query)) {
        panic!("q{query} at SF {sf} ({}): {diff}", program.display());
    }
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

/// All 22 conformance programs and ours at SF 1 (slow: SF 1 takes seconds to load and the
/// CPU backend seconds per query on 2 cores).
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
                "conformance q{q} at SF 1: {:.0} ms",
                start.elapsed().as_secs_f64() * 1e3
            );
        }
        check_query(our_program(q), q, 1.0);
    }
}
