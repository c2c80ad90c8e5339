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
fn an_index_out_of_range_fails_before_a_later_mod_by_zero_that_a_kernel_waits_for() {
    // `kept2`, after the loop, compresses `k` as `kept` does: fused into `kept`'s kernel, it
    // would make that kernel (and the group, and the `@index` of its keys) wait for the
    // loop, which runs on the CPU, and for the `@mod` by zero before it, which fails first.
    fails_with(
        "index_out_of_range_before_a_loop_a_kernel_waits_for",
        "16:5: @index: index 2 out of range for length 1",
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

/// Positions and counts past 2^31 keep their values when a kernel widens them to i64: the
/// sum, largest element and count of `@range(3000000000)`, and its length. (naga writes a u32
/// widened to i64 as a sign-extending conversion; the generator widens through u64.) The CPU
/// refuses the 24 GB vector, so the answer is checked against closed forms.
#[test]
fn reductions_past_two_to_the_31_positions_are_exact_on_the_gpu() {
    let Some(device) = gpu() else {
        return;
    };
    let path = program("reductions_past_2_31_positions");
    let (answer, cpu_steps) = run_gpu_tsv(&path, &tpch(0.001), device).expect("the GPU answers");
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    let n: i64 = 3_000_000_000;
    let expected = format!(
        "total\tlargest\tcounted\tn\n{}\t{}\t{n}\t{n}\n",
        n * (n - 1) / 2,
        n - 1
    );
    assert_eq!(answer, expected);
}

/// A warm run's `@list` of host columns is the list the run before made of the same
/// columns, not a new concatenation of them (per-row host work: q21 lists l_suppkey with
/// the fetched l_orderkey, 48 MB copied per run at SF 1 before). This holds for a
/// `@fetch`ed enum, which the engine keeps for the next run, as for a table's column.
#[test]
fn a_warm_run_lists_a_column_and_a_fetched_enum_as_the_run_before_did() {
    use horsec::driver::{compile_for, Stage, Target};
    use horsec_runtime::engine::GpuEngine;
    use horsec_runtime::value::{List, Value};
    let Some(device) = gpu() else {
        return;
    };
    let text = "module m {
  import Builtin.*;
  def main() : list<?> {
    t:table = @load_table(`lineitem:sym);
    o:enum<i32> = check_cast(@column_value(t, `l_orderkey:sym), enum<i32>);
    s:i32 = check_cast(@column_value(t, `l_suppkey:sym), i32);
    f:? = @fetch(o);
    l:? = @list(s, f);
    return l;
  }
}";
    let plan = compile_for("listed.hir", text, Stage::Plan, Target::Gpu)
        .plan
        .expect("compiles");
    let db = tpch(0.001);
    let mut engine = GpuEngine::new(device);
    let mut run = || {
        let mut profile = horsec_runtime::profile::Profile::new();
        let mut values = horsec_runtime::interp::run_with(
            &plan,
            &*db,
            &mut std::io::sink(),
            &mut engine,
            &mut profile,
        )
        .expect("runs");
        match values.pop() {
            Some(Value::List(List::Flat { values, offsets })) => (values, offsets),
            other => panic!("a flat list of two columns, not {other:?}"),
        }
    };
    let (first_values, first_offsets) = run();
    let (second_values, second_offsets) = run();
    assert_eq!(first_offsets.len(), 3, "two cells");
    assert_eq!(first_values, second_values);
    assert!(
        std::sync::Arc::ptr_eq(&first_offsets, &second_offsets),
        "the second run concatenated the columns again"
    );
    let cpu = horsec_runtime::interp::run(&plan, &*db, &mut std::io::sink()).expect("runs");
    assert_eq!(
        cpu.last(),
        Some(&Value::List(List::Flat {
            values: first_values,
            offsets: first_offsets
        }))
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

// ----- f32 functions on many arguments ------------------------------------------------------
// Each f32 function, on thousands of f32 and i32 arguments, gives the CPU's text exactly: the
// f64 function rounded to f32 on both backends (codegen::wgsl::Helper::TrigF32, ExpLogF32,
// InverseTrigF32, HyperbolicF32). lavapipe's own f32 functions would agree as well, so the
// arguments are chosen where an approximation shows: near 0 (where sinh, tanh and the
// inverse functions cancel in the textbook formulas), next to 1 (asin, acos, acosh, atanh),
// at the edges of each helper's ranges and of the f32 range (Payne-Hanek reduction of sin,
// cos and tan beyond 2^31, which f32_transcendental_functions_give_the_cpu_s_bits does not
// reach), subnormals and special values.

/// A deterministic stream of 64-bit numbers (Knuth's MMIX LCG), the high bits used.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
}

/// f32 arguments (finite; subnormals included) for the nine functions.
fn function_arguments_f32() -> Vec<f32> {
    let mut values: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x0003_0f1d),
        f32::from_bits(0x807f_ffff),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        std::f32::consts::PI,
        0.1,
        -0.7,
    ];
    let one = 1.0f32.to_bits();
    let mut rng = Lcg(0x5eed_f32f);
    for k in 1..=24 {
        // Next to 1 on both sides, and to -1.
        for v in [one - k, one + k] {
            values.push(f32::from_bits(v));
            values.push(-f32::from_bits(v));
        }
    }
    // Next to the edges of the helpers' ranges: the pass-through below 2^-13, the series of
    // sinh and e^t - 1 below 1 (tanh's 2a), log(1 + u) at u = sqrt(2) - 1 (asinh 0.4067,
    // acosh 1.0987, atanh 0.1716), tanh's 20, sinh's and cosh's overflow near 89.4 and the
    // 100 beyond which they are infinite, e^x's 88.7.
    for edge in [
        1.220_703_1e-4f32,
        2.441_406_2e-4,
        1.0,
        0.5,
        0.406_7,
        1.098_7,
        0.171_6,
        0.414_2,
        10.0,
        20.0,
        88.72,
        89.415_985,
        89.415_99,
        100.0,
        16_777_216.0,
    ] {
        for d in -3i32..=3 {
            let v = f32::from_bits(edge.to_bits().wrapping_add_signed(d));
            values.push(v);
            values.push(-v);
        }
    }
    // Every binade from the subnormals to the largest, a few random significands each.
    for e in -149i32..=127 {
        for _ in 0..3 {
            let m = 1.0 + f64::from(rng.next() >> 9) / f64::from(1u32 << 23);
            let v = (m * 2f64.powi(e)) as f32;
            values.push(if rng.next() & 1 == 0 { v } else { -v });
        }
    }
    // Dense where the functions are not constant or out of range: |x| in [2^-14, 128].
    for _ in 0..1500 {
        let e = (rng.next() % 21) as i32 - 14;
        let m = 1.0 + f64::from(rng.next() >> 9) / f64::from(1u32 << 23);
        let v = (m * 2f64.powi(e)) as f32;
        values.push(if rng.next() & 1 == 0 { v } else { -v });
    }
    // Uniform in [-1, 1] (asin, acos, atanh), and arbitrary finite bit patterns.
    for _ in 0..500 {
        values.push((f64::from(rng.next()) / f64::from(u32::MAX) * 2.0 - 1.0) as f32);
    }
    while values.len() < 3000 {
        let v = f32::from_bits(rng.next());
        if v.is_finite() {
            values.push(v);
        }
    }
    values
}

/// i32 arguments: small ones, the edges and random ones (exact in f64, most not in f32).
fn function_arguments_i32() -> Vec<i64> {
    let mut values: Vec<i64> = (-120..=120).collect();
    values.extend([
        i64::from(i32::MIN),
        i64::from(i32::MIN) + 1,
        i64::from(i32::MAX),
        i64::from(i32::MAX) - 1,
        16_777_217,
        -16_777_217,
        1_000_000_007,
    ]);
    let mut rng = Lcg(0x5eed_0132);
    for _ in 0..300 {
        values.push(i64::from(rng.next() as i32));
    }
    values
}

/// An f32 literal's text (HorseIR writes every digit; subnormals too).
fn f32_literal(v: f32) -> String {
    let text = format!("{v}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

#[test]
fn f32_functions_give_the_cpu_s_bits_on_thousands_of_arguments() {
    let floats = function_arguments_f32();
    let ints = function_arguments_i32();
    // inf, -inf, NaN: no literal spells them, so they are quotients computed in the kernel.
    let specials = ["inf", "-inf", "NaN"];
    let float_text: Vec<String> = floats.iter().map(|&v| f32_literal(v)).collect();
    let int_text: Vec<String> = ints.iter().map(i64::to_string).collect();
    for function in [
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sin", "cos",
        "tan", "exp", "log", "log2", "log10", "sqrt",
    ] {
        let source = format!(
            "module functions {{\n  import Builtin.*;\n  def main() : f32, f32, f32 {{\n    \
             x:f32 = ({}):f32;\n    n:f32 = (1.0, -1.0, 0.0):f32;\n    \
             d:f32 = (0.0, 0.0, 0.0):f32;\n    s:f32 = @div(n, d);\n    \
             k:i32 = ({}):i32;\n    a:f32 = @{function}(x);\n    b:f32 = @{function}(s);\n    \
             c:f32 = @{function}(k);\n    return a, b, c;\n  }}\n}}\n",
            float_text.join(", "),
            int_text.join(", "),
        );
        let path = write_program(&format!("f32_function_{function}"), &source);
        same_text_on_the_gpu(&path, |row| {
            let argument = if row < floats.len() {
                format!(
                    "{:?}:f32 (bits {:#010x})",
                    floats[row],
                    floats[row].to_bits()
                )
            } else if row < floats.len() + specials.len() {
                specials[row - floats.len()].to_string()
            } else {
                format!("{}:i32", ints[row - floats.len() - specials.len()])
            };
            format!("@{function}({argument})")
        });
    }
}

// ----- @mod ---------------------------------------------------------------------------------
// `@mod` in a kernel against the CPU's `Num::modulo` (runtime/src/cpu/arith.rs): the
// remainder with the divisor's sign for integers, `x - y * floor(x / y)` rounded step by step
// for floats. Every pair of a set of values (signs, zeros, each type's extremes, floats'
// special values) is one row; the answers must be the CPU's text exactly (floats print every
// digit that tells them apart, `-0.0` and `NaN` included), with no step on the CPU.

/// A program text returning `@mod(a, b)` of the literal vectors `a` and `b` of `ty`.
fn mod_program(ty: &str, a: &[String], b: &[String]) -> String {
    format!(
        "module modulo {{\n  import Builtin.*;\n  def main() : {ty} {{\n    a:{ty} = ({}):{ty};\n    \
         b:{ty} = ({}):{ty};\n    r:{ty} = @mod(a, b);\n    return r;\n  }}\n}}\n",
        a.join(", "),
        b.join(", ")
    )
}

/// Every pair `(x, y)` of `values` with `y` accepted by `divisor`, as two columns of text.
fn pairs(values: &[i64], divisor: impl Fn(i64) -> bool) -> (Vec<String>, Vec<String>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in values {
        for &y in values.iter().filter(|&&y| divisor(y)) {
            a.push(x.to_string());
            b.push(y.to_string());
        }
    }
    (a, b)
}

/// Writes `source` as `name.hir` where the tests keep their files.
fn write_program(name: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    // A test binary carried to another machine finds no target directory there.
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join(format!("{name}.hir"));
    std::fs::write(&path, source).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// Runs the program at `path` on both backends and asserts the same text, row by row (the
/// first differing rows named with `row_label`), with no compute step on the CPU.
fn same_text_on_the_gpu(path: &std::path::Path, row_label: impl Fn(usize) -> String) {
    let Some(device) = gpu() else {
        return;
    };
    let db = tpch(0.01);
    let cpu = run_tsv(path, &db).unwrap_or_else(|e| panic!("the CPU fails: {e}"));
    let (gpu, cpu_steps) =
        run_gpu_tsv(path, &db, device).unwrap_or_else(|e| panic!("the GPU fails: {e}"));
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    let differing: Vec<String> = gpu
        .lines()
        .zip(cpu.lines())
        .enumerate()
        .filter(|(_, (g, c))| g != c)
        .take(8)
        .map(|(row, (g, c))| format!("{}: GPU {g}, CPU {c}", row_label(row)))
        .collect();
    assert!(differing.is_empty(), "GPU against CPU: {differing:#?}");
    assert_eq!(gpu.lines().count(), cpu.lines().count());
}

/// Values of an integer type between `min` and `max`: small ones of both signs and the
/// extremes with their neighbours.
fn integer_values(min: i64, max: i64) -> Vec<i64> {
    let mut values = vec![
        0,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        5,
        -5,
        7,
        -7,
        10,
        -10,
        100,
        -100,
        127,
        -128,
        32767,
        -32768,
        65536,
        -65536,
        2147483647,
        -2147483648,
        4294967296,
        -4294967296,
        4294967297,
        1000000007,
        -1000000007,
        123456789012345,
        -987654321098765,
    ];
    values.extend([
        min,
        min + 1,
        min + 2,
        max,
        max - 1,
        max / 2,
        min / 2,
        max / 3,
    ]);
    values.retain(|v| (min..=max).contains(v));
    values.sort_unstable();
    values.dedup();
    values
}

#[test]
fn integer_mod_takes_the_divisor_s_sign_on_the_gpu() {
    for (ty, min, max) in [
        ("i8", i64::from(i8::MIN), i64::from(i8::MAX)),
        ("i16", i64::from(i16::MIN), i64::from(i16::MAX)),
        ("i32", i64::from(i32::MIN), i64::from(i32::MAX)),
        ("i64", i64::MIN, i64::MAX),
    ] {
        let values = integer_values(min, max);
        let (a, b) = pairs(&values, |y| y != 0);
        let path = write_program(&format!("mod_{ty}"), &mod_program(ty, &a, &b));
        same_text_on_the_gpu(&path, |row| format!("@mod({}, {}):{ty}", a[row], b[row]));
    }
}

/// The text of an f64 literal (HorseIR writes no exponent: every digit).
fn f64_literal(v: f64) -> String {
    let text = format!("{v}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

/// Literal vectors whose quotient `n / d`, computed in the kernel, is each of `values`:
/// HorseIR has no literal for infinities and NaN, so they are `1/0`, `-1/0` and `0/0`, and
/// any other value is `v/1`, exact.
fn quotients(values: &[f64], literal: &impl Fn(f64) -> String) -> (String, String) {
    let (n, d): (Vec<String>, Vec<String>) = values
        .iter()
        .map(|&v| {
            let (n, d) = if v.is_nan() {
                (0.0, 0.0)
            } else if v.is_infinite() {
                (v.signum(), 0.0)
            } else {
                (v, 1.0)
            };
            (literal(n), literal(d))
        })
        .unzip();
    (n.join(", "), d.join(", "))
}

/// A float program of `ty` whose operands `a` and `b` hold infinities and NaN (see
/// [`quotients`]), returning what `statements` compute from them, of `returns`.
fn float_program(
    ty: &str,
    a: &[f64],
    b: &[f64],
    literal: &impl Fn(f64) -> String,
    returns: &str,
    statements: &str,
) -> String {
    let ((an, ad), (bn, bd)) = (quotients(a, literal), quotients(b, literal));
    format!(
        "module floats {{\n  import Builtin.*;\n  def main() : {returns} {{\n    an:{ty} = ({an}):{ty};\n    \
         ad:{ty} = ({ad}):{ty};\n    bn:{ty} = ({bn}):{ty};\n    bd:{ty} = ({bd}):{ty};\n    \
         a:{ty} = @div(an, ad);\n    b:{ty} = @div(bn, bd);\n{statements}  }}\n}}\n"
    )
}

/// `@mod(a, b)` of float operands that hold infinities and NaN.
fn float_mod_program(ty: &str, a: &[f64], b: &[f64], literal: impl Fn(f64) -> String) -> String {
    float_program(
        ty,
        a,
        b,
        &literal,
        ty,
        &format!("    r:{ty} = @mod(a, b);\n    return r;\n"),
    )
}

fn float_pairs(values: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in values {
        for &y in values {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

#[test]
fn f64_mod_rounds_each_step_and_keeps_ieee_special_values_on_the_gpu() {
    let values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        3.0,
        -3.0,
        7.25,
        -7.25,
        0.1,
        0.3,
        -0.7,
        1.0 / 3.0,
        123456.789,
        -98765.4321,
        9007199254740993.0,
        1e16,
        -1e16,
        1e300,
        -1e300,
        1e-300,
        -1e-300,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let (a, b) = float_pairs(&values);
    let path = write_program("mod_f64", &float_mod_program("f64", &a, &b, f64_literal));
    same_text_on_the_gpu(&path, |row| format!("@mod({:?}, {:?}):f64", a[row], b[row]));
}

#[test]
fn f32_mod_rounds_each_step_in_f32_and_keeps_ieee_special_values_on_the_gpu() {
    // No f32 subnormals: a GPU may flush them (as in every f32 operation it does).
    let values: Vec<f64> = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        3.0,
        -3.0,
        7.25,
        -7.25,
        0.1,
        0.3,
        -0.7,
        1.0 / 3.0,
        123456.79,
        -98765.43,
        16777217.0,
        1e30,
        -1e30,
        1e-30,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]
    .iter()
    .map(|&v| f64::from(v))
    .collect();
    let (a, b) = float_pairs(&values);
    let literal = |v: f64| {
        let text = format!("{}", v as f32);
        if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        }
    };
    let path = write_program("mod_f32", &float_mod_program("f32", &a, &b, literal));
    same_text_on_the_gpu(&path, |row| format!("@mod({:?}, {:?}):f32", a[row], b[row]));
}

// ----- comparisons --------------------------------------------------------------------------
// A comparison with a NaN operand is false (`@neq` true) on both backends, whatever the shader
// compiler assumes of floats. The kernel tests both operands' bits for NaN, or only the one
// that is not a literal (a literal is never NaN).

/// `@lt`, `@leq`, `@gt`, `@geq`, `@eq` and `@neq` of `a` and `b`, and of `a` with literals on
/// either side, for float operands that hold infinities, NaN and signed zeros.
fn float_comparison_program(
    ty: &str,
    a: &[f64],
    b: &[f64],
    literal: impl Fn(f64) -> String,
) -> String {
    let mut statements = String::new();
    let mut names = Vec::new();
    for builtin in ["lt", "leq", "gt", "geq", "eq", "neq"] {
        let mut operands = vec![(builtin.to_string(), "a".to_string(), "b".to_string())];
        for (k, v) in [0.5, 24.0, -1.0, 0.0].into_iter().enumerate() {
            let c = format!("{}:{ty}", literal(v));
            operands.push((format!("{builtin}_a_c{k}"), "a".to_string(), c.clone()));
            operands.push((format!("{builtin}_c{k}_a"), c, "a".to_string()));
        }
        for (name, x, y) in operands {
            statements += &format!("    {name}:bool = @{builtin}({x}, {y});\n");
            names.push(name);
        }
    }
    statements += &format!("    return {};\n", names.join(", "));
    let returns = vec!["bool"; names.len()].join(", ");
    float_program(ty, a, b, &literal, &returns, &statements)
}

/// Every comparison of [`float_comparison_program`] over all pairs of `values` (of `ty`),
/// the same text on both backends.
fn comparisons_agree(ty: &str, values: &[f64], literal: impl Fn(f64) -> String) {
    let (a, b) = float_pairs(values);
    let path = write_program(
        &format!("compare_{ty}"),
        &float_comparison_program(ty, &a, &b, literal),
    );
    // Each comparison's rows follow the last's: row k is the pair k modulo their count.
    same_text_on_the_gpu(&path, |row| {
        format!(
            "row {row} of a, b = {:?}, {:?}",
            a[row % a.len()],
            b[row % b.len()]
        )
    });
}

#[test]
fn f64_comparisons_with_nan_infinities_and_zeros_give_the_cpu_s_answers_on_the_gpu() {
    let values = [
        0.0,
        -0.0,
        0.5,
        -1.0,
        1.0,
        24.0,
        23.999999999999996,
        5e-324,
        -5e-324,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    comparisons_agree("f64", &values, f64_literal);
}

#[test]
fn f32_comparisons_with_nan_infinities_and_zeros_give_the_cpu_s_answers_on_the_gpu() {
    // No f32 subnormals: a GPU may flush them in the division that makes the operands.
    let values: Vec<f64> = [
        0.0f32,
        -0.0,
        0.5,
        -1.0,
        1.0,
        24.0,
        23.999998,
        f32::MIN_POSITIVE,
        1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]
    .iter()
    .map(|&v| f64::from(v))
    .collect();
    comparisons_agree("f32", &values, |v| f32_literal(v as f32));
}

/// True when the GPU plan of `name` calls `builtin` outside its kernels (on the CPU).
fn calls_on_the_cpu(name: &str, builtin: horsec_runtime::builtin::Builtin) -> bool {
    use horsec_runtime::plan::{Callee, Expr, Step};
    fn any(steps: &[Step], builtin: horsec_runtime::builtin::Builtin) -> bool {
        steps.iter().any(|step| match step {
            Step::Assign {
                expr:
                    Expr::Call {
                        callee: Callee::Builtin(b),
                        ..
                    },
                ..
            } => *b == builtin,
            Step::If {
                then_body,
                else_body,
                ..
            } => any(then_body, builtin) || any(else_body, builtin),
            Step::While { body, .. } | Step::Repeat { body, .. } => any(body, builtin),
            _ => false,
        })
    }
    let path = program(name);
    let text = std::fs::read_to_string(&path).expect("the program");
    let c = horsec::driver::compile_for(
        &path.display().to_string(),
        &text,
        horsec::driver::Stage::Plan,
        horsec::driver::Target::Gpu,
    );
    let plan = c.plan.expect("compiles");
    plan.functions.iter().any(|f| any(&f.body, builtin))
}

/// The program fails on both backends with `message`, its `@mod` computed in a kernel.
fn mod_fails_in_a_kernel_with(name: &str, message: &str) {
    assert!(
        !calls_on_the_cpu(name, horsec_runtime::builtin::Builtin::Mod),
        "{name}: @mod runs on the CPU"
    );
    fails_with(name, message);
}

#[test]
fn an_i64_mod_by_zero_in_a_kernel_fails_with_the_cpu_message() {
    mod_fails_in_a_kernel_with("mod_by_zero_i64", "9:5: @mod: integer modulo by zero");
}

#[test]
fn an_i32_mod_by_zero_fused_before_a_sum_fails_with_the_cpu_message() {
    mod_fails_in_a_kernel_with("mod_by_zero_i32_fused", "9:5: @mod: integer modulo by zero");
}

#[test]
fn a_mod_of_bools_by_false_fails_with_the_cpu_message() {
    mod_fails_in_a_kernel_with("mod_by_zero_of_bools", "9:5: @mod: integer modulo by zero");
}

#[test]
fn a_mod_by_a_zero_scalar_computed_on_the_gpu_fails_with_the_cpu_message() {
    mod_fails_in_a_kernel_with("mod_by_a_zero_scalar", "10:5: @mod: integer modulo by zero");
}

#[test]
fn a_zero_divisor_in_a_row_compress_removes_is_never_divided_by() {
    answers_on_the_gpu("mod_zero_divisor_compressed_away");
}

// ----- time parts ---------------------------------------------------------------------------

/// `@time`, `@time_hour`, `@time_minute`, `@time_second` and `@time_mill` in a kernel give the
/// CPU's values (runtime/src/cpu/temporal.rs): a dt's time of day is its Euclidean remainder
/// by a day (before 1970 too); a time, second or minute shifted outside one day (its i32
/// encoding allows it) is divided and reduced with truncation, and the i16 result wraps as
/// the CPU's `as` conversion does (hours of a minute near i32::MAX).
#[test]
fn time_parts_give_the_cpu_s_values_on_the_gpu() {
    // Each base value with each shift, as two literal vectors; the shifted values are computed
    // by `@plus` in the kernel.
    let cross = |bases: &[&str], shifts: &[i64]| -> (String, String) {
        let mut b = Vec::new();
        let mut s = Vec::new();
        for base in bases {
            for shift in shifts {
                b.push(base.to_string());
                s.push(shift.to_string());
            }
        }
        (b.join(", "), s.join(", "))
    };
    let (times, time_shifts) = cross(
        &["00:00:00.000", "12:30:45.123", "23:59:59.999"],
        &[
            0,
            1,
            -1,
            -45045124,
            -86400000,
            86400000,
            -1000000000,
            2000000000,
            -2000000000,
        ],
    );
    let (seconds, second_shifts) = cross(
        &["00:00:00", "12:30:45", "23:59:59"],
        &[
            0,
            1,
            -1,
            -45046,
            -86400,
            1000000,
            -1000000,
            2000000000,
            -2000000000,
        ],
    );
    let (minutes, minute_shifts) = cross(
        &["00:00", "12:30", "23:59"],
        &[
            0,
            1,
            -1,
            -751,
            -1440,
            1000000,
            -1000000,
            2000000000,
            -2000000000,
        ],
    );
    let dts = [
        "1970-01-01T00:00:00.000",
        "1969-12-31T23:59:59.999",
        "1969-12-31T00:00:00.000",
        "0000-01-01T00:00:00.000",
        "0000-03-01T12:34:56.789",
        "1998-09-02T12:30:45.123",
        "2000-02-29T23:59:59.999",
        "9999-12-31T23:59:59.999",
    ]
    .join(", ");
    let source = format!(
        "module times {{\n  import Builtin.*;\n  \
         def main() : i16, i16, i16, i16, i16, i16, i16, i16, i16, time, i16, i16, i16, i16 {{\n    \
         tb:time = ({times}):time;\n    tk:i32 = ({time_shifts}):i32;\n    t:time = @plus(tb, tk);\n    \
         sb:second = ({seconds}):second;\n    sk:i32 = ({second_shifts}):i32;\n    s:second = @plus(sb, sk);\n    \
         mb:minute = ({minutes}):minute;\n    mk:i32 = ({minute_shifts}):i32;\n    m:minute = @plus(mb, mk);\n    \
         d:dt = ({dts}):dt;\n    \
         th:i16 = @time_hour(t);\n    tm:i16 = @time_minute(t);\n    ts:i16 = @time_second(t);\n    \
         tl:i16 = @time_mill(t);\n    sh:i16 = @time_hour(s);\n    sm:i16 = @time_minute(s);\n    \
         ss:i16 = @time_second(s);\n    mh:i16 = @time_hour(m);\n    mm:i16 = @time_minute(m);\n    \
         dt:time = @time(d);\n    dh:i16 = @time_hour(d);\n    dm:i16 = @time_minute(d);\n    \
         ds:i16 = @time_second(d);\n    dl:i16 = @time_mill(d);\n    \
         return th, tm, ts, tl, sh, sm, ss, mh, mm, dt, dh, dm, ds, dl;\n  }}\n}}\n"
    );
    let path = write_program("time_parts", &source);
    same_text_on_the_gpu(&path, |row| format!("row {row}"));
}

/// `@datetime_add`/`@datetime_sub` of times of day by every unit of fixed length their
/// resolution allows, in a kernel: the CPU's wrap around midnight (runtime/src/cpu/temporal.rs)
/// for amounts of every integer type up to the i64 extremes, and values outside one day.
#[test]
fn time_of_day_shifts_wrap_around_midnight_as_on_the_cpu() {
    /// A time-of-day type, base values, shifts that take them outside one day, and units.
    struct TimeOfDay {
        ty: &'static str,
        bases: &'static [&'static str],
        shifts: &'static [i64],
        units: &'static [&'static str],
    }
    let types = [
        TimeOfDay {
            ty: "minute",
            bases: &["00:00", "12:30", "23:59"],
            shifts: &[0, 1, -1, -751, 1000000, -2000000000],
            units: &["day", "hour", "minute"],
        },
        TimeOfDay {
            ty: "second",
            bases: &["00:00:00", "12:30:45", "23:59:59"],
            shifts: &[0, 1, -1, -45046, 2000000000, -2000000000],
            units: &["day", "hour", "minute", "second"],
        },
        TimeOfDay {
            ty: "time",
            bases: &["00:00:00.000", "12:30:45.123", "23:59:59.999"],
            shifts: &[0, 1, -1, -45045124, 2000000000, -2000000000],
            units: &["day", "hour", "minute", "second", "mill"],
        },
    ];
    let amounts: &[(&str, &[&str])] = &[
        (
            "i64",
            &[
                "0",
                "1",
                "-1",
                "1439",
                "-86401",
                "100000000000",
                "9223372036854775807",
                "-9223372036854775808",
            ],
        ),
        ("i32", &["0", "7", "-2147483648", "2147483647"]),
        ("i8", &["-128", "127", "-1"]),
        ("bool", &["0", "1"]),
    ];
    let mut body = String::new();
    let mut returned = Vec::new();
    for TimeOfDay {
        ty,
        bases,
        shifts,
        units,
    } in &types
    {
        // Values outside one day: each base shifted by each amount with @plus (its i32 encoding).
        let mut values = Vec::new();
        let mut moves = Vec::new();
        for base in bases.iter() {
            for shift in shifts.iter() {
                values.push(*base);
                moves.push(shift.to_string());
            }
        }
        let n = values.len();
        body += &format!(
            "    {ty}_b:{ty} = ({}):{ty};\n    {ty}_k:i32 = ({}):i32;\n    {ty}_v:{ty} = @plus({ty}_b, {ty}_k);\n",
            values.join(", "),
            moves.join(", ")
        );
        for (amount_ty, amount_values) in amounts {
            // One amount per value, cycling through the amounts.
            let cycled: Vec<&str> = (0..n)
                .map(|i| amount_values[i % amount_values.len()])
                .collect();
            let amount = format!("{ty}_{amount_ty}");
            body += &format!(
                "    {amount}:{amount_ty} = ({}):{amount_ty};\n",
                cycled.join(", ")
            );
            for unit in units.iter() {
                for builtin in ["datetime_add", "datetime_sub"] {
                    let r = format!("r{}", returned.len());
                    body += &format!("    {r}:{ty} = @{builtin}({ty}_v, {amount}, `{unit}:sym);\n");
                    returned.push((r, ty.to_string()));
                }
            }
        }
    }
    let types_list: Vec<&str> = returned.iter().map(|(_, t)| t.as_str()).collect();
    let names: Vec<&str> = returned.iter().map(|(r, _)| r.as_str()).collect();
    let source = format!(
        "module shifts {{\n  import Builtin.*;\n  def main() : {} {{\n{body}    return {};\n  }}\n}}\n",
        types_list.join(", "),
        names.join(", ")
    );
    let path = write_program("time_of_day_shifts", &source);
    same_text_on_the_gpu(&path, |row| format!("row {row}"));
}

// ----- @fact --------------------------------------------------------------------------------

#[test]
fn factorials_of_every_integer_type_are_computed_on_the_gpu() {
    answers_on_the_gpu("fact_of_small_keys");
}

#[test]
fn a_factorial_beyond_i64_fails_naming_the_first_failing_argument() {
    assert!(
        !calls_on_the_cpu("fact_not_an_i64", horsec_runtime::builtin::Builtin::Fact),
        "@fact runs on the CPU"
    );
    fails_with("fact_not_an_i64", "10:5: @fact: 31! is not an i64");
}

// ----- calendar shifts ----------------------------------------------------------------------

/// Runs `source` (written as `name.hir`) on both backends; returns (GPU outcome, CPU outcome)
/// after asserting no compute step ran on the CPU in an answered GPU run.
fn both_outcomes(
    name: &str,
    source: &str,
) -> Option<(Result<String, String>, Result<String, String>)> {
    let device = gpu()?;
    let path = write_program(name, source);
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db);
    let gpu = match run_gpu_tsv(&path, &db, device) {
        Ok((answer, steps)) => {
            assert!(steps.is_empty(), "{name}: steps ran on the CPU: {steps:?}");
            Ok(answer)
        }
        Err(e) => Err(e),
    };
    Some((gpu, cpu))
}

/// `@datetime_add`/`@datetime_sub` of dates, months and dts by every unit their type moves
/// by, in a kernel, against the CPU (`horsec_runtime::temporal::datetime_shift`): values at
/// the calendar's ends and around leap days, amounts up to the i64 extremes. For each type,
/// unit and builtin, the pairs the CPU answers are one program (exact text), and the pairs it
/// refuses are programs that must fail with the CPU's message naming the first failing
/// element: one with every pair (answers and failures interleaved) and one for each of six
/// failures spread over the values and amounts.
#[test]
fn calendar_shifts_of_dates_months_and_dts_agree_with_the_cpu() {
    let dates = [
        "0000-01-01",
        "0000-02-29",
        "1970-01-01",
        "2000-01-31",
        "2000-02-29",
        "2024-03-31",
        "9999-02-28",
        "9999-12-31",
    ];
    let months = ["0000-01", "1970-01", "2000-12", "9999-12"];
    let dts = [
        "0000-01-01T00:00:00.000",
        "1969-12-31T23:59:59.999",
        "2000-01-31T12:34:56.789",
        "9999-12-31T23:59:59.999",
    ];
    // Beside small and calendar-sized amounts, those whose product by a unit (12 months,
    // 86 400 000 ms) just overflows or just does not.
    let amounts: [i64; 21] = [
        0,
        1,
        -1,
        11,
        -13,
        120000,
        -120000,
        1 << 40,
        -(1 << 40),
        (1 << 40) + 1,
        3652424,
        -3652425,
        315537897599999,
        i64::MAX,
        i64::MIN,
        i64::MAX / 12,
        i64::MIN / 86400000,
        -(i64::MAX / 86400000) - 1,
        i64::MAX / 86400000 + 1,
        i64::MIN / 12 - 1,
        i64::MIN / 1000,
    ];
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str]);
    let cases: [Case; 3] = [
        ("date", &dates, &["year", "month", "day"]),
        ("month", &months, &["year", "month"]),
        (
            "dt",
            &dts,
            &["year", "month", "day", "hour", "minute", "second", "mill"],
        ),
    ];
    let db = tpch(0.01);
    let mut failures_checked = 0;
    for (ty_name, values, units) in &cases {
        for unit in units.iter() {
            for builtin in ["datetime_add", "datetime_sub"] {
                let program = |pairs: &[(&str, i64)]| {
                    let (v, k): (Vec<&str>, Vec<String>) =
                        pairs.iter().map(|(v, k)| (*v, k.to_string())).unzip();
                    format!(
                        "module shift {{\n  import Builtin.*;\n  def main() : {ty_name} {{\n    \
                         v:{ty_name} = ({}):{ty_name};\n    k:i64 = ({}):i64;\n    \
                         r:{ty_name} = @{builtin}(v, k, `{unit}:sym);\n    return r;\n  }}\n}}\n",
                        v.join(", "),
                        k.join(", ")
                    )
                };
                let name = format!("shift_{ty_name}_{unit}_{builtin}");
                let mut all = Vec::new();
                for value in values.iter() {
                    for &k in &amounts {
                        all.push((*value, k));
                    }
                }
                // Which pairs the CPU refuses, one pair at a time.
                let (mut answered, mut refused) = (Vec::new(), Vec::new());
                for &pair in &all {
                    let path = write_program(&format!("{name}_one"), &program(&[pair]));
                    match run_tsv(&path, &db) {
                        Ok(_) => answered.push(pair),
                        Err(_) => refused.push(pair),
                    }
                }
                let mut programs = vec![(format!("{name}_answered"), answered.clone())];
                if !refused.is_empty() {
                    // Every pair, failures interleaved: the first failing one is named.
                    programs.push((format!("{name}_all"), all.clone()));
                }
                // Six failures spread over the values and amounts, each alone.
                let spread = refused.len().div_ceil(6).max(1);
                for (j, pair) in refused.iter().step_by(spread).enumerate() {
                    programs.push((format!("{name}_refused{j}"), vec![*pair]));
                }
                for (program_name, pairs) in programs {
                    if pairs.is_empty() {
                        continue;
                    }
                    let Some((gpu, cpu)) = both_outcomes(&program_name, &program(&pairs)) else {
                        return;
                    };
                    if let (Ok(g), Ok(c)) = (&gpu, &cpu) {
                        let differing: Vec<String> = g
                            .lines()
                            .zip(c.lines())
                            .zip(&pairs)
                            .filter(|((g, c), _)| g != c)
                            .take(5)
                            .map(|((g, c), (v, k))| {
                                format!("@{builtin}({v}, {k}, `{unit}): GPU {g}, CPU {c}")
                            })
                            .collect();
                        assert!(differing.is_empty(), "{program_name}: {differing:#?}");
                    }
                    assert_eq!(gpu, cpu, "{program_name}");
                    failures_checked += usize::from(cpu.is_err());
                }
            }
        }
    }
    assert!(
        failures_checked > 20,
        "only {failures_checked} failing programs"
    );
}

// ----- statements the generator cannot translate --------------------------------------------

#[test]
fn a_statement_its_kernel_cannot_write_runs_as_a_step_of_its_own_and_the_kernel_stays_on_the_gpu() {
    answers_on_the_gpu("one_element_beside_a_reverse");
}

/// A step of its own that takes elements of a device vector at host positions takes them on
/// the device, and nothing is read back but the result: `first = @index(backwards, 0)` is a
/// prefix of the 60,175 f64s, not a read-back of 8 bytes for the CPU, for which the host
/// would wait on the kernels before it.
#[test]
fn one_element_of_a_device_vector_is_taken_on_the_device() {
    let Some(device) = gpu() else {
        return;
    };
    let path = program("one_element_beside_a_reverse");
    let (_, profile) = common::run_gpu_profiled(&path, &tpch(0.01), device).expect("runs");
    let reads: Vec<(&str, u32, u64)> = profile.read_backs().collect();
    assert_eq!(reads, [("result", 1, 16)]);
}

/// Positions that are not consecutive are gathered on the device (21 elements each of an
/// `@order` result, a kernel's f64s, chars, syms and i32s; one position three times), and
/// consecutive ones sliced, with nothing read back but the result (the eight vectors, not
/// 1.5 MB of their sources).
#[test]
fn many_elements_of_a_device_vector_are_gathered_on_the_device() {
    answers_on_the_gpu("many_elements_of_a_device_vector");
    let Some(device) = gpu() else {
        return;
    };
    let path = program("many_elements_of_a_device_vector");
    let (_, profile) = common::run_gpu_profiled(&path, &tpch(0.01), device).expect("runs");
    let reads: Vec<(&str, u32, u64)> = profile.read_backs().collect();
    assert_eq!(
        reads,
        [("result", 1, 2 * 21 * 8 + 3 * 21 * 4 + (3 + 2 + 3) * 8)]
    );
}

#[test]
fn a_position_past_the_end_among_many_fails_with_the_cpu_message() {
    fails_with(
        "many_elements_of_a_device_vector_out_of_range",
        "9:5: @index: index 60175 out of range for length 60175",
    );
}

#[test]
fn reversals_are_computed_in_kernels() {
    answers_on_the_gpu("reversals");
}

#[test]
fn ranges_are_computed_in_kernels() {
    answers_on_the_gpu("ranges");
}

#[test]
fn a_range_whose_count_its_kernel_computes_runs_alone_on_the_cpu() {
    if let Some((gpu, cpu_steps)) = agree("range_counted_in_its_kernel") {
        assert!(gpu.is_ok(), "{gpu:?}");
        assert_eq!(cpu_steps, ["@range"]);
    }
}

#[test]
fn a_range_of_a_negative_count_fails_as_on_the_cpu() {
    fails_with(
        "range_of_a_negative_count",
        "10:5: @range: cannot make -20 elements: the count -20 is negative",
    );
}

#[test]
fn products_and_sums_with_two_constants_in_a_row_round_each_step() {
    if let Some((gpu, cpu_steps)) = agree("constant_chains") {
        assert!(gpu.is_ok(), "{gpu:?}");
        // The f64 functions run on the CPU; the products and sums before them on the GPU.
        assert_eq!(cpu_steps, ["@sin"]);
    }
}

// ----- @take and @drop ----------------------------------------------------------------------

#[test]
fn taking_more_elements_than_there_are_keeps_them_all() {
    if let Some((gpu, _)) = agree("take_more_than_there_are") {
        assert!(gpu.is_ok(), "{gpu:?}");
    }
}

#[test]
fn take_and_drop_of_a_device_vector_slice_it_on_the_device() {
    answers_on_the_gpu("take_and_drop_on_the_device");
}

#[test]
fn tolist_cells_give_the_geometry_of_the_list_kernels_after_it() {
    answers_on_the_gpu("tolist_of_device_and_host_vectors");
}

/// f32 arithmetic with subnormal operands gives the CPU's bits, not only its value within
/// the usual tolerance: a subnormal result off by one unit is a relative error of up to 1.
#[test]
fn f32_arithmetic_on_subnormals_rounds_as_the_cpu_to_the_last_bit() {
    let Some(device) = gpu() else {
        return;
    };
    let path = program("f32_arithmetic_on_subnormals");
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db).expect("the CPU answers");
    let (gpu, cpu_steps) = run_gpu_tsv(&path, &db, device).expect("the GPU answers");
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    assert_eq!(cpu.lines().count(), gpu.lines().count());
    for (row, (c, g)) in cpu.lines().zip(gpu.lines()).enumerate() {
        assert_eq!(g, c, "row {row}");
    }
}
