//! A sort of the groups by their own keys, ascending, after `@group`: the GPU pipeline
//! drops it (`horsec::simplify`) as groups already come in key order, and the CPU runs it
//! as written. Each program of `tests/programs/sorted_groups/` runs on both backends (SF 0.01,
//! lavapipe will do); the answers must agree row for row, in order.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use std::path::PathBuf;

use common::{compare_answers, gpu, run_gpu_profiled, run_tsv, tpch};

/// Runs `tests/programs/sorted_groups/{name}.hir` on both backends, asserts they answer
/// alike, in the same row order, and that the GPU ran a sort exactly when `sorts` says.
fn sorted_groups(name: &str, sorts: bool) {
    let Some(device) = gpu() else {
        return;
    };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/sorted_groups")
        .join(format!("{name}.hir"));
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db).unwrap_or_else(|e| panic!("{name} on the CPU: {e}"));
    let (answer, profile) =
        run_gpu_profiled(&path, &db, device).unwrap_or_else(|e| panic!("{name} on the GPU: {e}"));
    // No sort keys: the row order is part of the answer.
    if let Err(diff) = compare_answers(&answer, &cpu, &[]) {
        panic!("{name}: the backends answer differently: {diff}");
    }
    let steps: Vec<String> = profile
        .steps()
        .map(|(_, step, _)| step.to_string())
        .collect();
    let sorted = steps.iter().any(|step| step.contains("order"));
    assert_eq!(sorted, sorts, "{name}: steps {steps:?}");
}

#[test]
fn a_sort_by_every_group_key_ascending_is_dropped_on_the_gpu() {
    sorted_groups("two_keys", false);
}

#[test]
fn a_sort_by_the_first_group_key_alone_is_dropped_on_the_gpu() {
    sorted_groups("key_prefix", false);
}

#[test]
fn a_sort_in_another_order_than_the_groups_runs_on_both_backends() {
    sorted_groups("descending", true);
}
