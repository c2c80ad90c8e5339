//! A sort of the groups by their own keys, ascending, after `@group`: the GPU pipeline
//! drops it (`horsec::simplify`) as groups already come in key order, and the CPU runs it
//! as written. Each program of `tests/programs/sorted_groups/` runs on both backends (SF 0.01,
//! lavapipe will do); the answers must agree row for row, in order.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use common::{gpu, gpu_answers_as_cpu};

/// Runs `tests/programs/sorted_groups/{name}.hir` on both backends, asserts they answer
/// alike, in the same row order, and that the GPU ran a sort exactly when `sorts` says.
fn sorted_groups(name: &str, sorts: bool) {
    let Some(device) = gpu() else {
        return;
    };
    let profile = gpu_answers_as_cpu("sorted_groups", name, device);
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

/// A gather from a list that sema types as a vector: with one group it takes a whole cell,
/// and the identity gather after it keeps one element, so dropping the sort would answer
/// with every row instead of one.
#[test]
fn a_sort_whose_gathers_read_a_list_runs_on_both_backends() {
    sorted_groups("list_gather", true);
}
