//! The kernel outliner on the 22 TPC-H programs of the conformance suite: snapshots of
//! `--emit shapes` and `--emit outline` per query, and the kernel counts the design promises
//! (q6 one kernel, q1 at most five, at most rNdN's 208 over the 22).

mod common;

use common::tpch_queries_dir as queries_dir;
use std::path::Path;

use horsec::driver::{compile, Compilation, Stage};
use horsec::outline::{print_all_shapes, print_outline};

/// rNdN's kernel counts with its full outliner, for the queries the thesis reports.
const RNDN_KERNELS: [(u32, usize); 11] = [
    (1, 5),
    (2, 18),
    (3, 9),
    (4, 9),
    (5, 13),
    (6, 1),
    (7, 19),
    (8, 17),
    (9, 11),
    (10, 9),
    (11, 9),
];

fn outline_file(path: &Path) -> Compilation {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let c = compile(&path.display().to_string(), &text, Stage::Outline);
    assert!(
        !c.failed() && c.outlined.is_some(),
        "{}",
        c.render_diagnostics()
    );
    c
}

/// Each query's compilation up to the outliner, q1 to q22; None when the suite is missing.
fn queries() -> Option<Vec<(u32, Compilation)>> {
    let dir = queries_dir()?;
    Some(
        (1..=22)
            .map(|n| (n, outline_file(&dir.join(format!("q{n}.hir")))))
            .collect(),
    )
}

fn kernel_count(c: &Compilation) -> usize {
    c.outlined.as_ref().map_or(0, |o| o.kernels().count())
}

#[test]
fn shapes_and_outline_of_every_query_match_their_snapshots() {
    let Some(queries) = queries() else {
        return;
    };
    for (n, c) in &queries {
        let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
            continue;
        };
        insta::assert_snapshot!(format!("q{n}_shapes"), print_all_shapes(typed, outlined));
        insta::assert_snapshot!(format!("q{n}_outline"), print_outline(typed, outlined));
    }
}

#[test]
fn kernel_counts_meet_the_design_targets() {
    let Some(queries) = queries() else {
        return;
    };
    let count = |n: u32| {
        queries
            .iter()
            .find(|(q, _)| *q == n)
            .map_or(0, |(_, c)| kernel_count(c))
    };
    assert_eq!(count(6), 1, "q6 is one kernel");
    assert!(count(1) <= 5, "q1 has {} kernels", count(1));
    let total: usize = queries.iter().map(|(_, c)| kernel_count(c)).sum();
    assert!(total <= 208, "{total} kernels over the 22 queries");
}

#[test]
fn every_kernel_reads_its_inputs_and_writes_its_outputs() {
    let Some(queries) = queries() else {
        return;
    };
    for (n, c) in &queries {
        let Some(outlined) = c.outlined.as_ref() else {
            continue;
        };
        for kernel in outlined.kernels() {
            assert!(!kernel.statements.is_empty(), "q{n} {}", kernel.name);
            assert!(
                !kernel.outputs.is_empty(),
                "q{n} {} computes nothing anyone reads",
                kernel.name
            );
            assert!(
                kernel.statements.windows(2).all(|w| w[0] < w[1]),
                "q{n} {}: statements in program order",
                kernel.name
            );
        }
    }
}

/// The outlined program is itself HorseIR: kernels are `kernel` functions, launches are calls.
/// Run on the CPU backend it must give the original program's answer, which checks that each
/// kernel's inputs and outputs and the launch order are right.
#[test]
fn each_outlined_query_runs_to_the_answer_of_the_original() {
    let (Some(dir), Some(queries)) = (queries_dir(), queries()) else {
        return;
    };
    let db = common::tpch(0.01);
    let scratch = std::env::temp_dir().join(format!("horsec-outline-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    for (n, c) in &queries {
        let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
            continue;
        };
        let original = dir.join(format!("q{n}.hir"));
        let outlined_path = scratch.join(format!("q{n}.outline.hir"));
        std::fs::write(&outlined_path, print_outline(typed, outlined)).expect("write");
        let expected = common::run_tsv(&original, &db).unwrap_or_else(|e| panic!("q{n}: {e}"));
        let actual =
            common::run_tsv(&outlined_path, &db).unwrap_or_else(|e| panic!("q{n} outlined: {e}"));
        assert_eq!(
            actual, expected,
            "q{n}: the outlined program answers differently"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Control flow: the HorsePower unit programs with if/else, loops, break, continue, a return
/// inside a loop and recursion, outlined (loops whose bodies qualify become part of kernels),
/// still compute what the originals compute.
#[test]
fn outlined_control_flow_programs_compute_what_the_originals_do() {
    let Some(dir) = common::conformance_dir() else {
        return;
    };
    let db = common::tpch(0.01);
    let scratch = std::env::temp_dir().join(format!("horsec-outline-cf-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    for test in ["t16", "t17", "t18", "t19", "t20", "t21", "t22", "t33"] {
        let original = dir.join(format!("horsepower-unit/pass/{test}.hir"));
        let c = outline_file(&original);
        let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
            continue;
        };
        let outlined_path = scratch.join(format!("{test}.outline.hir"));
        std::fs::write(&outlined_path, print_outline(typed, outlined)).expect("write");
        let expected = common::run_tsv(&original, &db).unwrap_or_else(|e| panic!("{test}: {e}"));
        let actual =
            common::run_tsv(&outlined_path, &db).unwrap_or_else(|e| panic!("{test} outlined: {e}"));
        assert_eq!(
            actual, expected,
            "{test}: the outlined program answers differently"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `cargo test --release --test outline_tpch -- --nocapture kernel_counts_per_query` prints
/// the table for the notes.
#[test]
fn kernel_counts_per_query() {
    let Some(queries) = queries() else {
        return;
    };
    let mut total = 0;
    let mut report = String::from("query  horsec  rNdN\n");
    for (n, c) in &queries {
        let count = kernel_count(c);
        total += count;
        let rndn = RNDN_KERNELS
            .iter()
            .find(|(q, _)| q == n)
            .map_or_else(|| "-".to_string(), |(_, k)| k.to_string());
        report += &format!("q{n:<5} {count:>6}  {rndn:>4}\n");
    }
    report += &format!("total  {total:>6}   208\n");
    println!("{report}");
}

/// The fused group aggregation applies exactly where moving the reductions to the `@group`
/// changes nothing, and the outlined program answers as the original does either way.
#[test]
fn group_aggregation_fuses_only_where_nothing_else_reads_the_lists() {
    let program = |extra: &str, result: &str| {
        format!(
            "module m {{ import Builtin.*;
  def main() : table {{
    t:table = @load_table(`lineitem:sym);
    q:f64 = check_cast(@column_value(t, `l_quantity:sym), f64);
    n:i32 = check_cast(@column_value(t, `l_linenumber:sym), i32);
    f:char = check_cast(@column_value(t, `l_returnflag:sym), char);
    g:? = @group(f);
    k:i64 = @keys(g);
    rows:? = @values(g);
    cells:? = @each_right(@index, q, rows);
    sums:? = @each(@sum, cells);
    total:f64 = @raze(sums);
    ncells:? = @each_right(@index, n, rows);
    navg:? = @each(@avg, ncells);
    avg_n:f64 = @raze(navg);
    counts:? = @each(@len, rows);
    count:i64 = @raze(counts);
    {extra}
    flag:char = @index(f, k);
    cols:? = @list(flag, total, avg_n, count, {result});
    r:table = @table((`flag, `total, `avg_n, `count, `x):sym, cols);
    return r;
  }}
}}"
        )
    };
    let cases = [
        // Fused: nothing else reads the dictionary, the lists or the cells.
        (program("", "count"), true),
        // Another row count of the same groups: part of the pattern.
        (
            program("firsts:? = @each(@len, rows); x:i64 = @raze(firsts);", "x"),
            true,
        ),
        // The rows' lists are read elsewhere: the unfused statements stay.
        (
            program("z:? = @raze(rows); x:i64 = @index(z, k);", "x"),
            false,
        ),
        // A cell list read by something other than a reduction.
        (
            program("y:? = @raze(cells); x:f64 = @index(y, k);", "x"),
            false,
        ),
    ];
    let db = common::tpch(0.01);
    let scratch = std::env::temp_dir().join(format!("horsec-fuse-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    for (i, (text, fused)) in cases.iter().enumerate() {
        let c = compile("fuse.hir", text, Stage::Outline);
        assert!(!c.failed(), "case {i}: {}", c.render_diagnostics());
        let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
            panic!("case {i}: not outlined");
        };
        let printed = print_outline(typed, outlined);
        assert_eq!(
            printed.contains("@group_aggregate("),
            *fused,
            "case {i}:\n{printed}"
        );
        let original = scratch.join(format!("case{i}.hir"));
        let outlined_path = scratch.join(format!("case{i}.outline.hir"));
        std::fs::write(&original, text).expect("write");
        std::fs::write(&outlined_path, &printed).expect("write");
        let expected = common::run_tsv(&original, &db).unwrap_or_else(|e| panic!("case {i}: {e}"));
        let actual = common::run_tsv(&outlined_path, &db)
            .unwrap_or_else(|e| panic!("case {i} outlined: {e}"));
        assert_eq!(
            actual, expected,
            "case {i}: the outlined program answers differently"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
