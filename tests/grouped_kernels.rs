//! Grouped kernels: a filter, the values it keeps and their group aggregation in one
//! generated kernel, which never writes the kept rows (`outline::grouped`). Each program of
//! `tests/programs/grouped/` runs on both backends (SF 0.01, lavapipe will do): the GPU
//! gives the CPU's answer, with the grouped kernel alone, or, where it declines (more groups
//! than its registers hold), with the unfused kernel and `@group_aggregate` after it.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use std::path::PathBuf;

use common::{gpu, gpu_answers_as_cpu, run_gpu_profiled, tpch};
use horsec_runtime::profile::Placement;

/// How a program's aggregation ran on the GPU.
#[derive(Debug, PartialEq)]
enum Ran {
    /// The grouped kernel alone.
    Grouped,
    /// The grouped kernel declined; the unfused kernel and `@group_aggregate` ran.
    Declined,
}

/// Runs `tests/programs/grouped/{name}.hir` on both backends, asserts they answer alike
/// with no step on the CPU, and that the aggregation ran as `expected`.
fn grouped(name: &str, expected: Ran) {
    let Some(device) = gpu() else {
        return;
    };
    let profile = gpu_answers_as_cpu("grouped", name, device);
    let steps: Vec<(Placement, String)> = profile
        .steps()
        .map(|(placement, step, _)| (placement, step.to_string()))
        .collect();
    assert!(
        profile.cpu_compute_steps().is_empty(),
        "{name}: steps ran on the CPU: {steps:?}"
    );
    let library_aggregation = steps
        .iter()
        .any(|(p, s)| *p == Placement::GpuLibrary && s.contains("group_aggregate"));
    let kernels = steps
        .iter()
        .filter(|(p, _)| *p == Placement::GpuKernel)
        .count();
    match expected {
        // The grouped kernel alone, the kernel reading the keys back being its epilogue;
        // the kernel it replaced never ran.
        Ran::Grouped => {
            assert!(!library_aggregation, "{name}: {steps:?}");
            assert_eq!(kernels, 1, "{name}: {steps:?}");
        }
        Ran::Declined => {
            assert!(library_aggregation, "{name}: {steps:?}");
            assert_eq!(kernels, 3, "{name}: {steps:?}");
        }
    }
}

#[test]
fn a_filter_computed_values_and_two_char_keys_run_in_one_kernel() {
    grouped("filtered_char_keys", Ran::Grouped);
}

#[test]
fn bool_and_negative_i8_keys_come_back_in_key_order() {
    grouped("signed_and_bool_keys", Ran::Grouped);
}

#[test]
fn an_i16_key_with_negative_values_comes_back_in_key_order() {
    grouped("i16_key", Ran::Grouped);
}

#[test]
fn element_wise_work_over_the_groups_runs_in_the_grouped_kernel_after_the_aggregation() {
    grouped("epilogue_arithmetic", Ran::Grouped);
}

#[test]
fn more_groups_than_registers_decline_to_the_unfused_steps() {
    grouped("more_groups_than_registers", Ran::Declined);
}

#[test]
fn a_mask_that_keeps_no_row_gives_no_group() {
    grouped("no_row_kept", Ran::Grouped);
}

/// The workgroups' slot entries are claimed in whatever order their invocations race to
/// them; the sums must not depend on it: the same bits every run.
#[test]
fn a_grouped_kernel_gives_the_same_bits_every_run() {
    let Some(device) = gpu() else {
        return;
    };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/grouped/filtered_char_keys.hir");
    let db = tpch(0.01);
    let runs: Vec<String> = (0..3)
        .map(|_| {
            run_gpu_profiled(&path, &db, device)
                .unwrap_or_else(|e| panic!("on the GPU: {e}"))
                .0
        })
        .collect();
    assert!(runs.iter().all(|r| *r == runs[0]), "{runs:#?}");
}
