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

#[test]
fn each_unique_of_a_list_a_kernel_made_runs_on_the_gpu() {
    answers_on_the_gpu("each_unique_of_a_list_a_kernel_made");
}

#[test]
fn pooled_buffers_never_alias_values_live_across_loops_and_function_frames() {
    // Values freed at their last use go back to the buffer pool and are handed out again
    // while loop-carried values (`acc`), values read on every iteration (`first`) and the
    // caller's frame stay live; any aliasing changes the sums. (The scalar loop counters
    // run on the CPU: the outliner keeps them out of the vector kernels.)
    if let Some((gpu, _)) = agree("pool_reuse_keeps_live_values") {
        assert!(gpu.is_ok(), "{gpu:?}");
    }
}

/// The compile path of a program about to run leaves naga's validation of generated WGSL to
/// the shader module's creation; a module that does not validate is still reported as an
/// internal compiler error naming the kernel, never as a driver failure or a wrong answer.
#[test]
fn generated_wgsl_that_does_not_validate_is_an_internal_compiler_error() {
    use horsec::driver::{compile_for, Stage, Target};
    use horsec_runtime::engine::GpuEngine;
    use horsec_runtime::plan::Step;
    let Some(device) = gpu() else {
        return;
    };
    let text = "module m {
  import Builtin.*;
  def main() : f64 {
    t:table = @load_table(`region:sym);
    k:i32 = check_cast(@column_value(t, `r_regionkey:sym), i32);
    x:f64 = @mul(k, 2.5:f64);
    return x;
  }
}";
    let c = compile_for("invalid.hir", text, Stage::Plan, Target::Gpu);
    let mut plan = c.plan.expect("compiles");
    let mut broken = None;
    for step in &mut plan.functions[plan.entry.0].body {
        if let Step::Launch { kernel, .. } = step {
            let kernel = std::sync::Arc::make_mut(kernel);
            kernel.wgsl = kernel.wgsl.replacen("fn ", "fn fn ", 1);
            broken = Some(kernel.name.clone());
        }
    }
    let broken = broken.expect("the program launches a kernel");
    let db = tpch(0.001);
    let mut printed = Vec::new();
    let mut profile = horsec_runtime::profile::Profile::new();
    let mut engine = GpuEngine::new(device);
    let error =
        horsec_runtime::interp::run_with(&plan, &*db, &mut printed, &mut engine, &mut profile)
            .expect_err("an invalid module cannot run");
    assert!(
        error.message.starts_with(&format!(
            "internal compiler error: the WGSL generated for kernel {broken} does not validate"
        )),
        "{}",
        error.message
    );
}

#[test]
fn f32_transcendental_functions_give_the_cpu_s_bits() {
    // Exact text, not the usual tolerance: each function is the f64 one rounded to f32 on
    // both backends, and f32 values print with every digit that tells them apart.
    let Some(device) = gpu() else {
        return;
    };
    let path = program("f32_functions_round_like_the_cpu");
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db).expect("the CPU answers");
    let (gpu, cpu_steps) = run_gpu_tsv(&path, &db, device).expect("the GPU answers");
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    let differing: Vec<(&str, &str)> = gpu
        .lines()
        .zip(cpu.lines())
        .filter(|(g, c)| g != c)
        .take(5)
        .collect();
    assert!(differing.is_empty(), "GPU against CPU rows: {differing:?}");
    assert_eq!(gpu.lines().count(), cpu.lines().count());
}
