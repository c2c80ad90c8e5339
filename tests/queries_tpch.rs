//! Our TPC-H programs (`queries/tpch/`) at SF 1 on the CPU backend: each gives the expected
//! answer of `$HORSEC_CONFORMANCE/tpch/expected-sf1/`. Slow (generating SF 1 takes a while), so
//! it runs only with `HORSEC_TPCH_SF1=1`; `tests/tpch_cpu.rs` checks the same programs at SF 0.01.

mod common;

use std::path::PathBuf;

use common::{compare_answers, conformance_dir, run_tsv, tpch, tpch_sort_keys};

#[test]
fn our_programs_answer_tpch_at_sf1() {
    if std::env::var_os("HORSEC_TPCH_SF1").is_none() {
        eprintln!("SKIPPED: set HORSEC_TPCH_SF1=1 to check queries/tpch/ at SF 1");
        return;
    }
    let Some(conformance) = conformance_dir() else {
        return;
    };
    let db = tpch(1.0);
    let mut failures = Vec::new();
    for query in 1..=22 {
        let program =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("queries/tpch/q{query}.hir"));
        let expected_path = conformance.join(format!("tpch/expected-sf1/q{query}.tsv"));
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
        let outcome = run_tsv(&program, &db)
            .and_then(|actual| compare_answers(&actual, &expected, tpch_sort_keys(query)));
        if let Err(why) = outcome {
            failures.push(format!("q{query}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
