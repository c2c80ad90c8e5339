//! Answers produced elsewhere (e.g. by `horsec run --format tsv` on a GPU machine) checked
//! against the expected TPC-H answers by the rule of the other TPC-H tests. Set
//! `HORSEC_CHECK_ANSWERS=DIR` (files `DIR/gpu_q{1..22}.tsv`) and `HORSEC_CHECK_SF` (1 or
//! 0.01; default 1); otherwise the test says SKIPPED.

mod common;

use common::{compare_answers, conformance_dir, tpch_sort_keys};

#[test]
fn answers_in_a_directory_match_the_expected_ones() {
    let Some(dir) = std::env::var_os("HORSEC_CHECK_ANSWERS") else {
        eprintln!("SKIPPED: set HORSEC_CHECK_ANSWERS=DIR to check answers written elsewhere");
        return;
    };
    let Some(conformance) = conformance_dir() else {
        return;
    };
    let sf = std::env::var("HORSEC_CHECK_SF").unwrap_or_else(|_| "1".to_string());
    let expected_dir = if sf == "0.01" {
        "expected-sf0.01"
    } else {
        "expected-sf1"
    };
    let dir = std::path::PathBuf::from(dir);
    let mut failures = Vec::new();
    for q in 1..=22 {
        let actual = std::fs::read_to_string(dir.join(format!("gpu_q{q}.tsv")))
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let expected =
            std::fs::read_to_string(conformance.join(format!("tpch/{expected_dir}/q{q}.tsv")))
                .unwrap_or_else(|e| panic!("q{q}: {e}"));
        match compare_answers(&actual, &expected, tpch_sort_keys(q)) {
            Ok(()) => eprintln!("q{q}: ok"),
            Err(diff) => failures.push(format!("q{q}: {diff}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
