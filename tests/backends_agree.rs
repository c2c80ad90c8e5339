//! The GPU backend gives the CPU oracle's answer or its error (SF 0.01, lavapipe will do):
//! each program of `tests/programs/backends_agree/` runs on both backends, and either both
//! answer the same table (floats by the usual relative tolerance) or both fail with the same
//! message at the same source location. Each program is a defect the GPU once had.
//!
//! Without a GPU adapter every test says SKIPPED; `HORSEC_REQUIRE_GPU=1` makes that a failure.

mod common;

use std::path::PathBuf;

use common::{compare_answers, gpu, run_gpu_tsv, run_tsv, tpch};

fn program(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/backends_agree")
        .join(format!("{name}.hir"))
}

/// Runs `name` on both backends and asserts they agree; returns the GPU's outcome and the
/// compute steps that ran on the CPU during the GPU run.
fn agree(name: &str) -> Option<(Result<String, String>, Vec<String>)> {
    let device = gpu()?;
    let path = program(name);
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db);
    let (gpu, cpu_steps) = match run_gpu_tsv(&path, &db, device) {
        Ok((answer, steps)) => (Ok(answer), steps),
        Err(e) => (Err(e), Vec::new()),
    };
    match (&gpu, &cpu) {
        (Ok(g), Ok(c)) => {
            if let Err(diff) = compare_answers(g, c, &[]) {
                panic!("{name}: the backends answer differently: {diff}");
            }
        }
        (Err(g), Err(c)) => assert_eq!(g, c, "{name}: the backends fail differently"),
        (g, c) => panic!("{name}: GPU gives {g:?}, CPU gives {c:?}"),
    }
    Some((gpu, cpu_steps))
}

/// The program answers (on both backends) with every kernel on the GPU.
fn answers_on_the_gpu(name: &str) {
    if let Some((gpu, cpu_steps)) = agree(name) {
        assert!(gpu.is_ok(), "{name}: {gpu:?}");
        assert!(
            cpu_steps.is_empty(),
            "{name}: steps ran on the CPU: {cpu_steps:?}"
        );
    }
}

/// The program fails (on both backends) with `message`.
fn fails_with(name: &str, message: &str) {
    if let Some((gpu, _)) = agree(name) {
        let error = gpu.expect_err(name);
        assert!(error.contains(message), "{name}: {error}");
    }
}

#[test]
fn a_scalar_second_argument_of_a_user_function_is_broadcast() {
    answers_on_the_gpu("scalar_second_argument");
}

#[test]
fn a_scalar_first_argument_of_a_user_function_computes_every_element() {
    answers_on_the_gpu("scalar_first_argument");
}

#[test]
fn a_scalar_argument_inside_repeat_is_broadcast() {
    answers_on_the_gpu("scalar_inside_repeat");
}

#[test]
fn one_function_called_with_scalars_and_vectors_at_different_sites() {
    answers_on_the_gpu("one_function_scalar_and_vector_sites");
}

#[test]
fn element_wise_arguments_from_different_tables_fail_with_the_cpu_message() {
    fails_with(
        "plus_across_tables",
        "8:5: @plus: length mismatch (15000 vs 60175)",
    );
}

#[test]
fn an_unused_value_with_mismatched_lengths_still_fails() {
    fails_with(
        "unused_mismatch_still_fails",
        "@plus: length mismatch (15000 vs 60175)",
    );
}

#[test]
fn a_compress_mask_of_another_length_fails_with_the_cpu_message() {
    fails_with(
        "compress_mask_of_another_table",
        "9:5: @compress: length mismatch (mask 60175 vs 15000)",
    );
}

#[test]
fn literal_vectors_of_different_lengths_fail_with_the_cpu_message() {
    fails_with(
        "literals_of_different_lengths",
        "@plus: length mismatch (3 vs 5)",
    );
}

#[test]
fn a_negative_vector_count_fails_with_the_cpu_message() {
    fails_with("vector_negative_count", "@vector: cannot make -5 elements");
}

#[test]
fn a_negative_vector_count_checked_by_the_engine_fails_with_the_cpu_message() {
    fails_with(
        "vector_negative_count_argument",
        "4:5: @vector: cannot make -5 elements: the count -5 is negative",
    );
}

#[test]
fn an_index_out_of_range_fails_with_the_cpu_message() {
    fails_with(
        "index_out_of_range",
        "7:5: @index: index 7 out of range for length 5",
    );
}

#[test]
fn an_index_out_of_range_read_after_later_library_steps_keeps_its_message_and_location() {
    // The kernel's status word is read late (with the next read-back): the @order and the
    // kernels after it run first, and the run still fails with the index's own error.
    fails_with(
        "index_out_of_range_then_library_steps",
        "7:5: @index: index 7 out of range for length 5",
    );
}

#[test]
fn an_index_out_of_range_before_a_condition_fails_before_the_condition_is_used() {
    // The `if` reads a scalar computed from the failed kernel's output: that read is where
    // the deferred status words come back, and the index's error wins.
    fails_with(
        "index_out_of_range_then_if",
        "7:5: @index: index 7 out of range for length 5",
    );
}

#[test]
fn an_if_on_a_vector_fails() {
    fails_with("if_on_a_vector", "`if` condition must be one bool");
}

#[test]
fn an_if_on_a_vector_in_code_whose_values_are_unused_fails() {
    fails_with(
        "if_on_a_vector_in_unused_code",
        "`if` condition must be one bool",
    );
}

#[test]
fn each_sum_of_i32_cells_is_i64_on_both_backends() {
    if let Some((gpu, _)) = agree("each_sum_of_i32_cells") {
        assert!(gpu.is_ok(), "{gpu:?}");
    }
}
