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
use horsec::codegen;
use horsec::driver::{compile, Stage};
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
/// with no step on the CPU, and gives the GPU run's steps (None without a GPU).
fn gpu_steps(name: &str) -> Option<Vec<(Placement, String)>> {
    let device = gpu()?;
    let profile = gpu_answers_as_cpu("grouped", name, device);
    let steps: Vec<(Placement, String)> = profile
        .steps()
        .map(|(placement, step, _)| (placement, step.to_string()))
        .collect();
    assert!(
        profile.cpu_compute_steps().is_empty(),
        "{name}: steps ran on the CPU: {steps:?}"
    );
    Some(steps)
}

/// Runs `tests/programs/grouped/{name}.hir` as [`gpu_steps`] does, and asserts that the
/// aggregation ran as `expected`.
fn grouped(name: &str, expected: Ran) {
    let Some(steps) = gpu_steps(name) else {
        return;
    };
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

/// The WGSL of the one grouped kernel of `tests/programs/grouped/{name}.hir`.
fn grouped_wgsl(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/programs/grouped/{name}.hir"));
    let text = std::fs::read_to_string(&path).expect("the program");
    let compiled = compile(&path.display().to_string(), &text, Stage::Outline);
    let (Some(typed), Some(outlined)) = (compiled.typed.as_ref(), compiled.outlined.as_ref())
    else {
        panic!(
            "{name} does not compile:\n{}",
            compiled.render_diagnostics()
        );
    };
    let modules = codegen::generate_program(typed, outlined).expect("it generates");
    let grouped: Vec<_> = modules
        .iter()
        .filter(|m| m.wgsl.contains("fn grouped_local_rank"))
        .collect();
    let [grouped] = grouped.as_slice() else {
        panic!("{name}: one grouped kernel, not {}", grouped.len());
    };
    grouped.wgsl.clone()
}

/// Whether the grouped kernel of `tests/programs/grouped/{name}.hir` looks its rows' ranks
/// up through hints (`grouped_rank`) before the walk of the entries.
fn looks_ranks_up_through_hints(name: &str) -> bool {
    grouped_wgsl(name).contains("fn grouped_rank")
}

/// Whether the grouped kernel of `tests/programs/grouped/{name}.hir` adds its counts up with
/// its float sums, having no i64 sums of its own.
fn sums_counts_as_floats(name: &str) -> bool {
    let wgsl = grouped_wgsl(name);
    let floats = wgsl.contains("GROUPED_COUNT_TOTALS");
    assert_ne!(
        floats,
        wgsl.contains("fn grouped_sum_i64"),
        "{name}: counts in one kind of sum"
    );
    floats
}

/// Where the count is a kernel's only integer accumulator and there are float ones, its
/// sums go through the float arrays, exact (every count is an integer below 2^53), and the
/// workgroup memory of the i64 arrays holds more float accumulators a sum; a kernel adding
/// an integer column up, or counting alone, keeps its i64 sums. Each answers as the CPU.
#[test]
fn counts_are_summed_with_the_floats_where_they_are_the_only_integers() {
    assert!(sums_counts_as_floats("filtered_char_keys"));
    grouped("filtered_char_keys", Ran::Grouped);
    assert!(!sums_counts_as_floats("signed_and_bool_keys"));
    grouped("signed_and_bool_keys", Ran::Grouped);
    assert!(!sums_counts_as_floats("i16_key"));
    grouped("i16_key", Ran::Grouped);
}

/// Four keys whose tags share rank hints two by two: each pair's rows keep finding the
/// other's hint and take the walk, and the answer is the CPU's.
#[test]
fn ranks_found_past_colliding_hints_are_right() {
    assert!(looks_ranks_up_through_hints("colliding_rank_hints"));
    grouped("colliding_rank_hints", Ran::Grouped);
}

/// Keys of 2^28 slots: a tag and a rank no longer share a word, so the kernel walks the
/// entries for every row, and answers as the CPU does.
#[test]
fn keys_too_wide_for_hints_find_their_ranks_by_the_walk_alone() {
    assert!(!looks_ranks_up_through_hints(
        "key_domain_too_wide_for_hints"
    ));
    grouped("key_domain_too_wide_for_hints", Ran::Grouped);
}

#[test]
fn more_groups_than_registers_decline_to_the_unfused_steps() {
    grouped("more_groups_than_registers", Ran::Declined);
}

#[test]
fn more_groups_than_registers_over_all_workgroups_decline_though_each_holds_its_own() {
    grouped(
        "more_groups_than_registers_across_workgroups",
        Ran::Declined,
    );
}

#[test]
fn a_mask_that_keeps_no_row_gives_no_group() {
    grouped("no_row_kept", Ran::Grouped);
}

#[test]
fn keys_and_averages_are_whole_operands_of_the_epilogue() {
    grouped("epilogue_operands", Ran::Grouped);
}

#[test]
fn a_checked_builtin_over_the_groups_runs_in_the_epilogue() {
    grouped("epilogue_checks", Ran::Grouped);
}

/// A grouped kernel writes its results only where the host maps them (they come back with
/// the group count), so they live on the host; the GPU steps that read them later, a sort
/// and two kernels, get them uploaded and answer as the CPU does.
#[test]
fn results_read_by_later_gpu_steps_are_uploaded_to_them() {
    let Some(steps) = gpu_steps("results_feed_later_gpu_steps") else {
        return;
    };
    let library = |builtin: &str| {
        steps
            .iter()
            .any(|(p, s)| *p == Placement::GpuLibrary && s.contains(builtin))
    };
    assert!(!library("group_aggregate"), "declined: {steps:?}");
    assert!(library("order"), "{steps:?}");
    let kernels = steps
        .iter()
        .filter(|(p, _)| *p == Placement::GpuKernel)
        .count();
    assert_eq!(kernels, 3, "the grouped kernel and two after it: {steps:?}");
}

/// The epilogue checks each group's value once the groups are counted; a failing check
/// fails the run with the CPU's message. (Guarded by a length the launch resolved before
/// the kernel had counted the groups, the check never ran and the run answered no rows.)
#[test]
fn a_check_over_the_groups_that_fails_fails_the_run_as_on_the_cpu() {
    let Some(device) = gpu() else {
        return;
    };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/grouped/epilogue_check_fails.hir");
    let db = tpch(0.01);
    let cpu = common::run_tsv(&path, &db).expect_err("the CPU refuses");
    let gpu = run_gpu_profiled(&path, &db, device).expect_err("the GPU refuses");
    assert!(cpu.contains("is not an i64"), "{cpu}");
    assert_eq!(gpu, cpu);
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

/// Every combination of key, filter and work after the aggregation, each program on both
/// backends: the random differential fuzzer forms a grouped kernel about once in 4,000
/// programs, too rarely to cover the kernel's key kinds, its epilogue and its empty and
/// sparse inputs. Each must run as the grouped kernel alone and answer as the CPU does.
#[test]
fn keys_filters_and_epilogues_in_combination_answer_as_the_cpu() {
    let Some(device) = gpu() else {
        return;
    };
    // (name, statements defining the key columns `ka` (and `kb`), the key's columns)
    let keys: [(&str, &str, &[&str]); 4] = [
        ("bool", "m2:i32 = @mod(k, 2:i32);\n    ka:bool = @eq(m2, 1:i32);", &["ka"]),
        (
            "bool_i8",
            "m2:i32 = @mod(k, 2:i32);\n    ka:bool = @eq(m2, 1:i32);\n    m7:i32 = @mod(k, 7:i32);\n    kb:i8 = @minus(m7, 3:i32);",
            &["ka", "kb"],
        ),
        (
            "i16",
            "m5:i32 = @mod(k, 5:i32);\n    d5:i32 = @minus(m5, 2:i32);\n    ka:i16 = @mul(d5, 1000:i32);",
            &["ka"],
        ),
        // 2^24 slots: a domain the kernel once refused (its bitmap was capped at 2^20).
        (
            "i16_char",
            "m5:i32 = @mod(k, 5:i32);\n    d5:i32 = @minus(m5, 2:i32);\n    ka:i16 = @mul(d5, 1000:i32);\n    kb:char = check_cast(@column_value(t, `o_orderstatus:sym), char);",
            &["ka", "kb"],
        ),
    ];
    let filters = [
        ("most", "@gt(price, 50000.0:f64)"),
        ("few", "@gt(price, 400000.0:f64)"),
        ("none", "@lt(price, 0.0:f64)"),
    ];
    let db = tpch(0.01);
    let dir = std::env::temp_dir().join(format!("horsec-grouped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    for (key_name, key_defs, key_cols) in keys {
        for (filter_name, filter) in filters {
            for epilogue in [false, true] {
                let name = format!("{key_name}_{filter_name}_{epilogue}");
                let mut body = format!(
                    "    t:table = @load_table(`orders:sym);
    k:i32 = check_cast(@column_value(t, `o_orderkey:sym), i32);
    price:f64 = check_cast(@column_value(t, `o_totalprice:sym), f64);
    {key_defs}
    kept:bool = {filter};
    cp:? = @compress(kept, price);
    ck:? = @compress(kept, k);
"
                );
                for c in key_cols {
                    body += &format!("    c{c}:? = @compress(kept, {c});\n");
                }
                let listed: Vec<String> = key_cols.iter().map(|c| format!("c{c}")).collect();
                if listed.len() == 1 {
                    body += &format!("    g:? = @group({});\n", listed[0]);
                } else {
                    body += &format!(
                        "    key:? = @list({});\n    g:? = @group(key);\n",
                        listed.join(", ")
                    );
                }
                body += "    first:? = @keys(g);
    rows:? = @values(g);
    cells_p:? = @each_right(@index, cp, rows);
    cells_k:? = @each_right(@index, ck, rows);
    each_p:? = @each(@sum, cells_p);
    sum_p:? = @raze(each_p);
    each_k:? = @each(@sum, cells_k);
    sum_k:? = @raze(each_k);
    each_n:? = @each(@len, rows);
    n:? = @raze(each_n);
";
                let mut columns: Vec<String> = Vec::new();
                for c in key_cols {
                    body += &format!("    out_{c}:? = @index(c{c}, first);\n");
                    columns.push(format!("out_{c}"));
                }
                if epilogue {
                    body += "    avg_p:? = @div(sum_p, n);
    more:? = @plus(n, 1:i64);
    big:? = @gt(avg_p, 150000.0:f64);
    scaled:? = @mul(sum_k, 2:i64);
";
                    columns.extend(["avg_p", "more", "big", "scaled"].map(String::from));
                } else {
                    columns.extend(["sum_p", "sum_k", "n"].map(String::from));
                }
                let names: Vec<String> = columns.iter().map(|c| format!("`{c}")).collect();
                let program = format!(
                    "module m {{\n  import Builtin.*;\n  def main() : table {{\n{body}    names:? = ({}):sym;\n    cols:? = @list({});\n    out:table = @table(names, cols);\n    return out;\n  }}\n}}\n",
                    names.join(", "),
                    columns.join(", ")
                );
                let path = dir.join(format!("{name}.hir"));
                std::fs::write(&path, &program).expect("a program file");
                in_one_grouped_kernel_as_the_cpu(&name, &path, &program, &db, device);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The last accumulating workgroup to finish settles the groups, whichever it is and
/// however many there are: one (25 nations), a few (1,500 orders at SF 0.001: 6), and most
/// of the 256 (60,175 line items at SF 0.01: 236). Each answers as the CPU does, with the
/// grouped kernel alone.
#[test]
fn the_last_workgroup_to_finish_settles_the_groups_at_any_workgroup_count() {
    let Some(device) = gpu() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("horsec-settle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    for (table, column, sf) in [
        ("nation", "n_nationkey", 0.01),
        ("orders", "o_orderkey", 0.001),
        ("lineitem", "l_linenumber", 0.01),
    ] {
        let program = format!(
            "module m {{
  import Builtin.*;
  def main() : table {{
    t:table = @load_table(`{table}:sym);
    k:i32 = check_cast(@column_value(t, `{column}:sym), i32);
    m3:i32 = @mod(k, 3:i32);
    key:i16 = @minus(m3, 1:i32);
    kept:bool = @gt(k, 2:i32);
    ck:? = @compress(kept, k);
    ckey:? = @compress(kept, key);
    part:? = @div(ck, 7:i32);
    g:? = @group(ckey);
    first:? = @keys(g);
    rows:? = @values(g);
    cells_k:? = @each_right(@index, ck, rows);
    each_k:? = @each(@sum, cells_k);
    sum_k:? = @raze(each_k);
    cells_p:? = @each_right(@index, part, rows);
    each_p:? = @each(@sum, cells_p);
    sum_p:? = @raze(each_p);
    each_n:? = @each(@len, rows);
    n:? = @raze(each_n);
    out_key:? = @index(ckey, first);
    names:? = (`key, `sum_k, `sum_p, `n):sym;
    cols:? = @list(out_key, sum_k, sum_p, n);
    out:table = @table(names, cols);
    return out;
  }}
}}
"
        );
        let path = dir.join(format!("{table}.hir"));
        std::fs::write(&path, &program).expect("a program file");
        let cpu = in_one_grouped_kernel_as_the_cpu(table, &path, &program, &tpch(sf), device);
        assert_eq!(cpu.lines().count(), 4, "{table}: three groups\n{cpu}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the generated `program` (written at `path`) on both backends: the GPU answers as the
/// CPU does, with one kernel (the grouped kernel alone) and no step on the CPU. Returns the
/// CPU's answer.
fn in_one_grouped_kernel_as_the_cpu(
    name: &str,
    path: &std::path::Path,
    program: &str,
    db: &horsec_runtime::data::Database,
    device: &horsec_runtime::gpu::Device,
) -> String {
    let cpu =
        common::run_tsv(path, db).unwrap_or_else(|e| panic!("{name} on the CPU: {e}\n{program}"));
    let (gpu, profile) = run_gpu_profiled(path, db, device)
        .unwrap_or_else(|e| panic!("{name} on the GPU: {e}\n{program}"));
    if let Err(diff) = common::compare_answers(&gpu, &cpu, &[]) {
        panic!("{name}: the backends answer differently: {diff}\n{program}");
    }
    let kernels: Vec<String> = profile
        .steps()
        .filter(|(p, ..)| *p == Placement::GpuKernel)
        .map(|(_, step, _)| step.to_string())
        .collect();
    assert_eq!(kernels.len(), 1, "{name}: {kernels:?}\n{program}");
    assert!(
        profile.cpu_compute_steps().is_empty(),
        "{name}: steps ran on the CPU\n{program}"
    );
    cpu
}
