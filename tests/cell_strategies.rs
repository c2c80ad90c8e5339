//! Per-cell reductions give the CPU oracle's answer (or its error) under every strategy the
//! engine can pick for a list kernel: a thread per cell, a workgroup per cell, and cells split
//! into pieces whose partials are combined in order (`kernel::CellStrategy`), as well as the
//! strategy chosen from the geometry. Each program of `tests/programs/cell_strategies/` is
//! one geometry (SF 0.01, lavapipe will do); floats agree within the usual relative
//! tolerance, since the strategies add in different orders.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use std::path::PathBuf;

use common::{compare_answers, gpu, run_gpu_tsv, run_tsv, tpch};
use horsec_runtime::kernel::{with_cell_strategy, ForcedCells};

fn program(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/cell_strategies")
        .join(format!("{name}.hir"))
}

/// The strategies compared: the engine's own choice, then each one forced.
const STRATEGIES: [Option<ForcedCells>; 4] = [
    None,
    Some(ForcedCells::Thread),
    Some(ForcedCells::Workgroup),
    Some(ForcedCells::Split),
];

/// Runs `name` on the CPU and, once per strategy, on the GPU; asserts every GPU run gives
/// the CPU's answer or fails with its message. `on_the_gpu`: no compute step may fall back
/// to the CPU. Returns the CPU's outcome.
fn agrees_under_every_strategy(name: &str, on_the_gpu: bool) -> Option<Result<String, String>> {
    let device = gpu()?;
    let path = program(name);
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db);
    for strategy in STRATEGIES {
        let run = || run_gpu_tsv(&path, &db, device);
        let outcome = match strategy {
            Some(forced) => with_cell_strategy(forced, run),
            None => run(),
        };
        let gpu = outcome.map(|(answer, cpu_steps)| {
            if on_the_gpu {
                assert!(
                    cpu_steps.is_empty(),
                    "{name} ({strategy:?}): steps ran on the CPU: {cpu_steps:?}"
                );
            }
            answer
        });
        match (&gpu, &cpu) {
            (Ok(g), Ok(c)) => {
                if let Err(diff) = compare_answers(g, c, &[]) {
                    panic!("{name} ({strategy:?}): the backends answer differently: {diff}");
                }
            }
            (Err(g), Err(c)) => assert_eq!(g, c, "{name} ({strategy:?}): they fail differently"),
            (g, c) => panic!("{name} ({strategy:?}): GPU gives {g:?}, CPU gives {c:?}"),
        }
    }
    Some(cpu)
}

/// The program answers on both backends, every strategy agreeing with the CPU.
fn answers_alike(name: &str) {
    if let Some(cpu) = agrees_under_every_strategy(name, true) {
        assert!(cpu.is_ok(), "{name}: {cpu:?}");
    }
}

#[test]
fn tens_of_thousands_of_cells_of_a_row_or_two() {
    answers_alike("many_tiny_cells");
}

#[test]
fn thousands_of_cells_of_about_twenty_rows() {
    answers_alike("short_cells");
}

#[test]
fn fifty_cells_of_about_a_thousand_rows() {
    answers_alike("long_cells");
}

#[test]
fn three_cells_of_a_third_of_the_rows() {
    answers_alike("few_huge_cells");
}

#[test]
fn one_cell_of_every_row() {
    answers_alike("one_cell");
}

#[test]
fn one_huge_cell_among_tens_of_thousands_of_tiny_ones() {
    answers_alike("tiny_cells_and_one_huge");
}

#[test]
fn empty_cells_sum_to_zero_and_count_zero() {
    // The empty cell comes from a three-element literal, which is compressed on the CPU.
    if let Some(cpu) = agrees_under_every_strategy("empty_cells", false) {
        assert!(cpu.is_ok(), "{cpu:?}");
    }
}

#[test]
fn the_minimum_of_an_empty_cell_fails_as_on_the_cpu() {
    if let Some(cpu) = agrees_under_every_strategy("empty_cell_minimum", false) {
        let error = cpu.expect_err("the minimum of an empty cell");
        assert!(
            error.contains("@each: no minimum of no elements"),
            "{error}"
        );
    }
}
