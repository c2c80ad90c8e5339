//! The outliner's steps specified on small hand-built programs.

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use crate::analysis::testing::*;
use crate::analysis::StmtId;
use crate::sema::typed::{Function, LocalId, TypedProgram};

use super::*;

fn outlined(function: Function) -> (TypedProgram, OutlinedFunction) {
    let program = program(function);
    let outlined = outline_program(&program).expect("outlines");
    let main = outlined.functions.into_iter().next().expect("one function");
    (program, main)
}

/// The statement ids of each kernel, in launch order.
fn kernel_statements(f: &OutlinedFunction) -> Vec<Vec<usize>> {
    f.kernels
        .iter()
        .map(|k| k.statements.iter().map(|s| s.0).collect())
        .collect()
}

/// Two rows of `n` elements each: `x:f64`, `y:f64` read from a loaded table, so their size
/// is the table's row count.
fn columns(f: &mut FunctionBuilder, names: &[&str]) -> Vec<LocalId> {
    let t = f.local("t", Type::Table);
    f.assign(t, call(Builtin::LoadTable, vec![lit_sym(&["lineitem"])]));
    names
        .iter()
        .map(|name| {
            let column = f.local(name, Type::F64);
            f.assign(
                column,
                cast(
                    call(Builtin::ColumnValue, vec![var(t), lit_sym(&[name])]),
                    Type::F64,
                ),
            );
            column
        })
        .collect()
}

#[test]
fn step_1_pipelines_element_wise_statements_of_one_geometry_into_one_kernel() {
    // a = x + y; b = a * x; return b  →  one kernel holding both, reading x and y.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x", "y"]); // s0..s2
    let a = f.local("a", Type::F64);
    let b = f.local("b", Type::F64);
    f.assign(a, call(Builtin::Plus, vec![var(c[0]), var(c[1])])); // s3
    f.assign(b, call(Builtin::Mul, vec![var(a), var(c[0])])); // s4
    f.ret(vec![var(b)]); // s5
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![3, 4]]);
    let kernel = &main.kernels[0];
    assert_eq!(kernel.inputs, vec![c[0], c[1]]);
    assert_eq!(kernel.outputs, vec![b], "a is used only inside the kernel");
    assert_eq!(kernel.name, "main_k0");
    assert_eq!(
        main.body,
        vec![
            OutlinedStmt::Host(StmtId(0)),
            OutlinedStmt::Host(StmtId(1)),
            OutlinedStmt::Host(StmtId(2)),
            OutlinedStmt::Launch(KernelId(0)),
            OutlinedStmt::Host(StmtId(5)),
        ]
    );
}

#[test]
fn a_reduction_ends_its_kernel_and_its_result_starts_another() {
    // s = @sum(x); d = x / s  — the reduction writes with a grid-wide barrier (write sync).
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let s = f.local("s", Type::F64);
    let d = f.local("d", Type::F64);
    f.assign(s, call(Builtin::Sum, vec![var(c[0])])); // s2
    f.assign(d, call(Builtin::Div, vec![var(c[0]), var(s)])); // s3
    f.ret(vec![var(d)]); // s4
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2], vec![3]]);
    assert_eq!(main.kernels[0].outputs, vec![s]);
    assert_eq!(main.kernels[1].inputs, vec![c[0], s]);
}

#[test]
fn a_gather_reads_its_source_after_a_barrier() {
    // y = x * 2; i = @where(m); g = @index(y, i): y must be complete before the gather.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let y = f.local("y", Type::F64);
    let m = f.local("m", Type::Bool);
    let i = f.local("i", Type::I64);
    let g = f.local("g", Type::F64);
    f.assign(y, call(Builtin::Mul, vec![var(c[0]), lit_f64(&[2.0])])); // s2
    f.assign(m, call(Builtin::Gt, vec![var(c[0]), lit_f64(&[1.0])])); // s3
    f.assign(i, call(Builtin::Where, vec![var(m)])); // s4
    f.assign(g, call(Builtin::Index, vec![var(y), var(i)])); // s5
    f.ret(vec![var(g)]); // s6
    let (_, main) = outlined(f.finish());
    let kernels = kernel_statements(&main);
    assert_eq!(kernels.len(), 2, "{kernels:?}");
    assert!(
        kernels[0].contains(&2) && !kernels[0].contains(&5),
        "{kernels:?}"
    );
    assert_eq!(kernels[1], vec![5]);
}

#[test]
fn compress_is_a_mask_so_filter_and_reduction_share_one_kernel() {
    // q6 in small: m = x < 24; a = @compress(m, x); b = @compress(m, y); p = a * b; s = @sum(p)
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x", "y"]); // s0..s2
    let m = f.local("m", Type::Bool);
    let a = f.local("a", Type::F64);
    let b = f.local("b", Type::F64);
    let p = f.local("p", Type::F64);
    let s = f.local("s", Type::F64);
    f.assign(m, call(Builtin::Lt, vec![var(c[0]), lit_f64(&[24.0])])); // s3
    f.assign(a, call(Builtin::Compress, vec![var(m), var(c[0])])); // s4
    f.assign(b, call(Builtin::Compress, vec![var(m), var(c[1])])); // s5
    f.assign(p, call(Builtin::Mul, vec![var(a), var(b)])); // s6
    f.assign(s, call(Builtin::Sum, vec![var(p)])); // s7
    f.ret(vec![var(s)]); // s8
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![3, 4, 5, 6, 7]]);
    let kernel = &main.kernels[0];
    assert_eq!(kernel.geometry, Geometry::Vector(Size::rows("lineitem")));
    assert_eq!(kernel.outputs, vec![s]);
}

#[test]
fn step_2_merges_sibling_kernels_that_read_the_same_data() {
    // a = @sum(x); b = @max(x): two reductions of x, no path between them → one kernel.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let a = f.local("a", Type::F64);
    let b = f.local("b", Type::F64);
    f.assign(a, call(Builtin::Sum, vec![var(c[0])])); // s2
    f.assign(b, call(Builtin::Max, vec![var(c[0])])); // s3
    f.ret(vec![var(a), var(b)]); // s4
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2, 3]]);
    assert_eq!(main.kernels[0].outputs, vec![a, b]);
}

#[test]
fn step_2_keeps_siblings_apart_when_a_path_joins_them() {
    // s = @sum(x); d = x / s: both read x, but d needs s, through a barrier.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]);
    let s = f.local("s", Type::F64);
    let d = f.local("d", Type::F64);
    f.assign(s, call(Builtin::Sum, vec![var(c[0])])); // s2
    f.assign(d, call(Builtin::Div, vec![var(c[0]), var(s)])); // s3
    f.ret(vec![var(d)]);
    let (_, main) = outlined(f.finish());
    assert_eq!(main.kernels.len(), 2);
}

#[test]
fn step_3_merges_a_parent_into_a_child_running_masked_over_a_compressed_geometry() {
    // m = x > 0 (full size); a = @compress(m, x) (full: lazy); s = @sum(a) runs over
    // Compressed(n, m): step 1 cannot pipeline a into s (different geometry), step 3 can.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]);
    let m = f.local("m", Type::Bool);
    let a = f.local("a", Type::F64);
    let s = f.local("s", Type::F64);
    f.assign(m, call(Builtin::Gt, vec![var(c[0]), lit_f64(&[0.0])])); // s2
    f.assign(a, call(Builtin::Compress, vec![var(m), var(c[0])])); // s3
    f.assign(s, call(Builtin::Sum, vec![var(a)])); // s4
    f.ret(vec![var(s)]);
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2, 3, 4]]);
}

#[test]
fn a_masked_statement_never_reads_a_compacted_input() {
    // a = @compress(m, x) is compacted by a sort in between: o = @order(a); g = @index(a, o)
    // Then p = a * 2 over Compressed(n, m) reads `a` inside the kernel that computes it, but
    // q = g * 2 (same compressed size, through the library call) must run in a kernel of its
    // own geometry: its input g comes compacted from a gather.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]);
    let m = f.local("m", Type::Bool);
    let a = f.local("a", Type::F64);
    let o = f.local("o", Type::I64);
    let g = f.local("g", Type::F64);
    let q = f.local("q", Type::F64);
    f.assign(m, call(Builtin::Gt, vec![var(c[0]), lit_f64(&[0.0])])); // s2
    f.assign(a, call(Builtin::Compress, vec![var(m), var(c[0])])); // s3
    f.assign(o, call(Builtin::Order, vec![var(a), lit_bool(&[true])])); // s4 library
    f.assign(g, call(Builtin::Index, vec![var(a), var(o)])); // s5
    f.assign(q, call(Builtin::Mul, vec![var(g), lit_f64(&[2.0])])); // s6
    f.ret(vec![var(q)]);
    let (_, main) = outlined(f.finish());
    let kernels = kernel_statements(&main);
    assert_eq!(kernels, vec![vec![2, 3], vec![5, 6]], "{kernels:?}");
    assert!(matches!(
        &main.kernels[1].geometry,
        Geometry::Vector(Size::Compressed(..))
    ));
}

#[test]
fn figure_4_13_a_merge_that_would_close_a_cycle_through_the_host_is_refused() {
    // k1: a = x + 1 feeds both k2 (c = a * b) and a library sort o = @order(a), whose result
    // b = @index(a, o)... feeds k2 too. Merging k1 into k2 would put the sort both before and
    // after the merged kernel, so k1 stays a kernel of its own.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let a = f.local("a", Type::F64);
    let o = f.local("o", Type::I64);
    let r = f.local("r", Type::F64);
    f.assign(a, call(Builtin::Plus, vec![var(c[0]), lit_f64(&[1.0])])); // s2
    f.assign(o, call(Builtin::Order, vec![var(a), lit_bool(&[true])])); // s3 library
    f.assign(
        r,
        call(
            Builtin::Plus,
            vec![var(a), var(o)], // s4: same geometry as s2, reads a (free) and o
        ),
    );
    f.ret(vec![var(r)]);
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2], vec![4]]);
    assert_eq!(
        main.body,
        vec![
            OutlinedStmt::Host(StmtId(0)),
            OutlinedStmt::Host(StmtId(1)),
            OutlinedStmt::Launch(KernelId(0)),
            OutlinedStmt::Library(StmtId(3)),
            OutlinedStmt::Launch(KernelId(1)),
            OutlinedStmt::Host(StmtId(5)),
        ]
    );
}

#[test]
fn figure_4_13_a_parent_merges_only_with_the_child_that_closes_no_cycle() {
    // a = x + 1; s = @sum(a); r = a + s. `a` could go with the reduction or with `r`, but
    // r needs s after a barrier: a kernel {a, r} would run both before and after {s}.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let a = f.local("a", Type::F64);
    let s = f.local("s", Type::F64);
    let r = f.local("r", Type::F64);
    f.assign(a, call(Builtin::Plus, vec![var(c[0]), lit_f64(&[1.0])])); // s2
    f.assign(s, call(Builtin::Sum, vec![var(a)])); // s3
    f.assign(r, call(Builtin::Plus, vec![var(a), var(s)])); // s4
    f.ret(vec![var(r)]);
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2, 3], vec![4]]);
    assert_eq!(
        main.kernels[0].outputs,
        vec![a, s],
        "a is read after the barrier"
    );
}

#[test]
fn an_if_else_whose_branches_qualify_runs_inside_a_kernel() {
    // if (flag) { y = x * 2 } else { y = x * 3 }; z = y + 1  →  one kernel.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let flag = f.param("flag", Type::Bool);
    let y = f.local("y", Type::F64);
    let z = f.local("z", Type::F64);
    f.declare(&[y]); // s2
    f.if_else(
        var(flag),
        |b| b.assign(y, call(Builtin::Mul, vec![var(c[0]), lit_f64(&[2.0])])), // s4
        |b| b.assign(y, call(Builtin::Mul, vec![var(c[0]), lit_f64(&[3.0])])), // s5
    ); // s3
    f.assign(z, call(Builtin::Plus, vec![var(y), lit_f64(&[1.0])])); // s6
    f.ret(vec![var(z)]); // s7
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![3, 6]]);
    assert_eq!(main.kernels[0].inputs, vec![flag, c[0]]);
    assert_eq!(main.kernels[0].outputs, vec![z]);
}

#[test]
fn each_reductions_followed_by_raze_stay_in_one_list_kernel() {
    // parts = @each_right(@index, x, cells); sums = @each(@sum, parts); r = @raze(sums)
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let cells = f.param("cells", Type::List(Box::new(Type::I64)));
    let parts = f.local("parts", Type::List(Box::new(Type::F64)));
    let sums = f.local("sums", Type::List(Box::new(Type::F64)));
    let razed = f.local("razed", Type::F64);
    f.assign(
        parts,
        call_args(
            Builtin::EachRight,
            vec![fun(Builtin::Index), arg(var(c[0])), arg(var(cells))],
        ),
    ); // s2
    f.assign(
        sums,
        call_args(Builtin::Each, vec![fun(Builtin::Sum), arg(var(parts))]),
    ); // s3
    f.assign(razed, call(Builtin::Raze, vec![var(sums)])); // s4
    f.ret(vec![var(razed)]);
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2, 3, 4]]);
    assert!(matches!(main.kernels[0].geometry, Geometry::List { .. }));
}

#[test]
fn library_and_host_statements_never_enter_kernels() {
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let o = f.local("o", Type::I64);
    let g = f.local("g", Type::F64);
    f.assign(o, call(Builtin::Order, vec![var(c[0]), lit_bool(&[true])])); // s2
    f.assign(g, call(Builtin::Index, vec![var(c[0]), var(o)])); // s3
    f.ret(vec![var(g)]); // s4
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![3]]);
    assert_eq!(main.body[2], OutlinedStmt::Library(StmtId(2)));
}

#[test]
fn a_loop_whose_body_qualifies_becomes_part_of_a_kernel() {
    // y = x; repeat (3) { y = y * 2 }; z = y + 1  →  one kernel with the loop inside.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let y = f.local("y", Type::F64);
    let z = f.local("z", Type::F64);
    f.assign(y, copy(c[0])); // s2
    f.repeat(lit_i64(&[3]), |b| {
        // s3
        b.assign(y, call(Builtin::Mul, vec![var(y), lit_f64(&[2.0])])); // s4
    });
    f.assign(z, call(Builtin::Plus, vec![var(y), lit_f64(&[1.0])])); // s5
    f.ret(vec![var(z)]); // s6
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2, 3, 5]]);
    assert_eq!(main.kernels[0].outputs, vec![z]);
    assert_eq!(main.kernels[0].inputs, vec![c[0]]);
}

#[test]
fn a_loop_with_a_barrier_inside_stays_on_the_host_and_its_body_is_outlined() {
    // while (go) { s = @sum(x); x = x / s; go = s > 1 }: the reduction needs a barrier
    // inside the loop, so the loop runs on the host, launching kernels each iteration.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let go = f.local("go", Type::Bool);
    let s = f.local("s", Type::F64);
    f.assign(go, lit_bool(&[true])); // s2
    f.while_(var(go), |b| {
        // s3
        b.assign(s, call(Builtin::Sum, vec![var(c[0])])); // s4
        b.assign(c[0], call(Builtin::Div, vec![var(c[0]), var(s)])); // s5
        b.assign(go, call(Builtin::Gt, vec![var(s), lit_f64(&[1.0])])); // s6
    });
    f.ret(vec![var(c[0])]); // s7
    let (_, main) = outlined(f.finish());
    let OutlinedStmt::While { stmt, body } = &main.body[3] else {
        panic!("a host loop: {:?}", main.body);
    };
    assert_eq!(*stmt, StmtId(3));
    assert!(body.iter().all(|s| matches!(s, OutlinedStmt::Launch(_))));
    // The scalar `go` fuses with the sum's consumer side: s5 and s6 both read s.
    let kernels = kernel_statements(&main);
    assert!(kernels.contains(&vec![4]), "{kernels:?}");
    // x is carried from one iteration's launch to the next: an output of the kernel that
    // writes it, and `go` is read by the host loop.
    let writer = main
        .kernels
        .iter()
        .find(|k| k.statements.contains(&StmtId(5)))
        .expect("a kernel writes x");
    assert!(writer.outputs.contains(&c[0]), "{writer:?}");
    assert!(main.kernels.iter().any(|k| k.outputs.contains(&go)));
}

#[test]
fn a_scalar_whose_value_leaves_the_kernel_stays_out_of_a_vector_kernel() {
    // y = -x; i = 0; go = i < 3; while (go) { ... } — `go` is a scalar the host loop reads:
    // fused into y's kernel it would be computed per thread with nowhere to be written.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let y = f.local("y", Type::F64);
    let i = f.local("i", Type::I64);
    let go = f.local("go", Type::Bool);
    f.assign(y, call(Builtin::Neg, vec![var(c[0])])); // s2
    f.assign(i, lit_i64(&[0])); // s3
    f.assign(go, call(Builtin::Lt, vec![var(i), lit_i64(&[3])])); // s4
    let s = f.local("s", Type::F64);
    f.while_(var(go), |b| {
        // s5: a reduction in the body makes it a host loop
        b.assign(s, call(Builtin::Sum, vec![var(y)])); // s6
        b.assign(y, call(Builtin::Div, vec![var(y), var(s)])); // s7
        b.assign(i, call(Builtin::Plus, vec![var(i), lit_i64(&[1])])); // s8
        b.assign(go, call(Builtin::Lt, vec![var(i), lit_i64(&[3])])); // s9
    });
    f.ret(vec![var(y)]); // s10
    let (_, main) = outlined(f.finish());
    assert!(
        main.body
            .iter()
            .any(|s| matches!(s, OutlinedStmt::While { .. })),
        "a host loop: {:?}",
        main.body
    );
    let kernels = kernel_statements(&main);
    let vector = main
        .kernels
        .iter()
        .find(|k| k.statements.contains(&StmtId(2)))
        .expect("a kernel computes y");
    assert!(!vector.statements.contains(&StmtId(4)), "{kernels:?}");
    assert!(!vector.outputs.contains(&go), "{kernels:?}");
}

#[test]
fn a_loop_exit_keeps_its_place_in_the_host_program() {
    // if (c) { return x; } — nothing after the `if` may be launched before it.
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let flag = f.param("flag", Type::Bool);
    let y = f.local("y", Type::F64);
    let z = f.local("z", Type::F64);
    f.assign(y, call(Builtin::Neg, vec![var(c[0])])); // s2
    f.if_(var(flag), |b| {
        // s3
        b.ret(vec![var(y)]); // s4
    });
    f.assign(z, call(Builtin::Neg, vec![var(c[0])])); // s5
    f.ret(vec![var(z)]); // s6
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2], vec![5]]);
    assert!(matches!(main.body[3], OutlinedStmt::If { .. }));
}

#[test]
fn a_kernel_whose_values_nobody_reads_still_runs_for_its_checks() {
    // The CPU fails `@neg` of a bad argument whether or not its value is read; the GPU must
    // too, so the kernel stays (with no outputs).
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]); // s0, s1
    let unused = f.local("unused", Type::F64);
    f.assign(unused, call(Builtin::Neg, vec![var(c[0])])); // s2
    f.ret(vec![var(c[0])]); // s3
    let (_, main) = outlined(f.finish());
    assert_eq!(kernel_statements(&main), vec![vec![2]]);
    assert!(main.kernels[0].outputs.is_empty());
    assert_eq!(
        main.body,
        vec![
            OutlinedStmt::Host(StmtId(0)),
            OutlinedStmt::Host(StmtId(1)),
            OutlinedStmt::Launch(main.kernels[0].id),
            OutlinedStmt::Host(StmtId(3)),
        ]
    );
}

#[test]
fn the_outline_prints_kernels_as_kernel_definitions_and_launches_as_calls() {
    let mut f = FunctionBuilder::new("main");
    let c = columns(&mut f, &["x"]);
    let m = f.local("m", Type::Bool);
    let a = f.local("a", Type::F64);
    let s = f.local("s", Type::F64);
    f.assign(m, call(Builtin::Gt, vec![var(c[0]), lit_f64(&[0.0])]));
    f.assign(a, call(Builtin::Compress, vec![var(m), var(c[0])]));
    f.assign(s, call(Builtin::Sum, vec![var(a)]));
    f.ret(vec![var(s)]);
    let program = program(f.finish());
    let outlined = outline_program(&program).expect("outlines");
    let text = print_outline(&program, &outlined);
    assert!(
        text.contains("    kernel main_k0(x:f64) : f64 {\n        // geometry: Vector(Symbol(lineitem))\n        m:bool = @gt(x, 0.0:f64);"),
        "{text}"
    );
    assert!(text.contains("        return s;\n    }\n"), "{text}");
    assert!(text.contains("        s:f64 = @main_k0(x);\n"), "{text}");
    let dot = print_dot(&program, &outlined);
    assert!(dot.contains("subgraph \"cluster_main_k0\""), "{dot}");
    assert!(dot.contains("\"f0_s2\" -> \"f0_s3\""), "{dot}");
}

use crate::analysis::{Geometry, Size};
