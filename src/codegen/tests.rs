//! Code generation, specified construct by construct on small hand-built kernels. Each test
//! builds a typed function, runs the analyses, names the kernel's statements by hand (as the
//! outliner would) and checks the launch description; the WGSL is snapshot.

use horsec_runtime::builtin::Builtin;
use horsec_runtime::kernel::{
    BufferRef, DictionarySource, Length, OutputLayout, ParamValue, Pass, ScratchPurpose, ValuePart,
};
use horsec_runtime::plan::Slot;
use horsec_runtime::types::Type;

use super::*;
use crate::analysis::testing::*;
use crate::analysis::{analyze_function, StmtId};
use crate::outline::kernel::{Kernel, KernelId};
use crate::sema::typed::{FunctionId, LocalId};

/// Generates the kernel of `statements`, reading `inputs` and producing `outputs`, with the
/// geometry of the statement `geometry_of`.
fn kernel_of(
    program: &TypedProgram,
    statements: &[usize],
    geometry_of: usize,
    inputs: &[LocalId],
    outputs: &[LocalId],
) -> Result<KernelModule, CodegenError> {
    let analysis = analyze_function(program, FunctionId(0)).expect("analyses");
    let geometry = analysis
        .geometry
        .get(StmtId(geometry_of))
        .cloned()
        .expect("a geometry");
    let kernel = Kernel {
        id: KernelId(0),
        name: "main_k0".to_string(),
        function: FunctionId(0),
        statements: statements.iter().map(|&s| StmtId(s)).collect(),
        geometry,
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
        grouped: None,
    };
    generate_kernel(program, &analysis, &kernel)
}

fn entry_points(module: &KernelModule) -> Vec<String> {
    module
        .passes
        .iter()
        .map(|p| match p {
            Pass::Entry { entry_point, .. } => entry_point.clone(),
            Pass::ExclusiveScan { .. } => "<scan>".to_string(),
            Pass::Cells(cells) => format!(
                "<cells: {} {} {} {}>",
                cells.per_workgroup, cells.per_thread, cells.split, cells.combine
            ),
        })
        .collect()
}

#[test]
fn a_filtered_sum_is_one_pass_whose_last_workgroup_folds_the_partials() {
    // q6 in small: s = sum(compress(x < 24, x * 0.5))
    let mut f = FunctionBuilder::new("main");
    let x = f.param("x", Type::F64);
    let m = f.local("m", Type::Bool);
    let y = f.local("y", Type::F64);
    let z = f.local("z", Type::F64);
    let s = f.local("s", Type::F64);
    f.assign(m, call(Builtin::Lt, vec![var(x), lit_f64(&[24.0])])); // s0
    f.assign(y, call(Builtin::Compress, vec![var(m), var(x)])); // s1
    f.assign(z, call(Builtin::Mul, vec![var(y), lit_f64(&[0.5])])); // s2
    f.assign(s, call(Builtin::Sum, vec![var(z)])); // s3
    f.ret(vec![var(s)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0, 1, 2, 3], 0, &[x], &[s]).expect("generates");
    assert_eq!(entry_points(&module), ["main_pass"]);
    // f64 arithmetic reads its operands' bits as u64 (IEEE special values, `Helper::IeeeF64`).
    assert!(module.features.float64 && module.features.int64);
    assert_eq!(
        module.outputs[0].layout,
        OutputLayout::Vector {
            length: Length::Constant(1),
            capacity: Length::Constant(1)
        }
    );
    // The workgroups count themselves done in a buffer the kernel keeps across launches
    // (the last sets it back to zero), and the one result is also written where the host
    // maps it.
    assert!(module
        .scratch
        .iter()
        .any(|s| s.purpose == ScratchPurpose::WorkgroupsDone && s.purpose.kept()));
    assert!(module
        .wgsl
        .contains("atomicStore(&workgroups_done[0], 0u);"));
    assert!(module.bindings.iter().any(|b| b.buffer
        == BufferRef::Output {
            slot: module.outputs[0].slot,
            part: ValuePart::HostReadable
        }));
    insta::assert_snapshot!("codegen_filtered_sum", module.wgsl);
}

#[test]
fn a_compressed_live_out_value_is_compacted_by_flags_scan_and_scatter() {
    let mut f = FunctionBuilder::new("main");
    let x = f.param("x", Type::I32);
    let m = f.local("m", Type::Bool);
    let y = f.local("y", Type::I32);
    let w = f.local("w", Type::I64);
    f.assign(m, call(Builtin::Gt, vec![var(x), lit_i64(&[3])])); // s0
    f.assign(y, call(Builtin::Compress, vec![var(m), var(x)])); // s1
    f.assign(w, call(Builtin::Where, vec![var(m)])); // s2
    f.ret(vec![var(y), var(w)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0, 1, 2], 0, &[x], &[y, w]).expect("generates");
    assert_eq!(entry_points(&module), ["flags_pass", "<scan>", "main_pass"]);
    // Both outputs are kept under the same mask: one compaction serves both.
    for output in &module.outputs {
        let OutputLayout::Vector { length, capacity } = &output.layout else {
            panic!("a vector output");
        };
        assert!(matches!(length, Length::Compacted(_)));
        assert_eq!(
            *capacity,
            Length::Of {
                slot: Slot(x.0),
                part: ValuePart::Elements
            }
        );
    }
    insta::assert_snapshot!("codegen_compaction", module.wgsl);
}

#[test]
fn symbol_literals_become_dictionary_bounds_resolved_at_launch() {
    let mut f = FunctionBuilder::new("main");
    let seg = f.param("seg", Type::Sym);
    let eq = f.local("eq", Type::Bool);
    let lt = f.local("lt", Type::Bool);
    f.assign(
        eq,
        call(Builtin::Eq, vec![var(seg), lit_sym(&["BUILDING"])]),
    ); // s0
    f.assign(
        lt,
        call(Builtin::Lt, vec![lit_sym(&["BUILDING"]), var(seg)]),
    ); // s1
    f.ret(vec![var(eq), var(lt)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0, 1], 0, &[seg], &[eq, lt]).expect("generates");
    let bounds: Vec<&ParamValue> = module
        .params
        .iter()
        .map(|p| &p.value)
        .filter(|v| !matches!(v, ParamValue::Length(_)))
        .collect();
    assert_eq!(
        bounds,
        [
            &ParamValue::SymbolLower {
                text: "BUILDING".to_string(),
                slot: Slot(seg.0)
            },
            &ParamValue::SymbolUpper {
                text: "BUILDING".to_string(),
                slot: Slot(seg.0)
            }
        ]
    );
    // `BUILDING < seg` is `seg > BUILDING`: codes at or past the upper bound.
    assert!(module
        .wgsl
        .contains("(read_in_seg(u32(i)) >= params.sym0_upper)"));
    insta::assert_snapshot!("codegen_symbols", module.wgsl);
}

#[test]
fn date_parts_follow_the_cpu_calendar_and_arithmetic_promotes() {
    let mut f = FunctionBuilder::new("main");
    let d = f.param("d", Type::Date);
    let k = f.param("k", Type::I32);
    let year = f.local("year", Type::I16);
    let total = f.local("total", Type::I64);
    let later = f.local("later", Type::Date);
    f.assign(year, call(Builtin::DateYear, vec![var(d)])); // s0
    f.assign(total, call(Builtin::Plus, vec![var(year), lit_i64(&[1])])); // s1
    f.assign(later, call(Builtin::Plus, vec![var(d), var(k)])); // s2
    f.ret(vec![var(total), var(later)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0, 1, 2], 0, &[d, k], &[total, later]).expect("generates");
    assert!(module.wgsl.contains("fn civil_from_days"));
    insta::assert_snapshot!("codegen_dates", module.wgsl);
}

#[test]
fn gathers_check_their_indexes_through_a_status_bit() {
    let mut f = FunctionBuilder::new("main");
    let col = f.param("col", Type::F64);
    let idx = f.param("idx", Type::I64);
    let g = f.local("g", Type::F64);
    f.assign(g, call(Builtin::Index, vec![var(col), var(idx)])); // s0
    f.ret(vec![var(g)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0], 0, &[col, idx], &[g]).expect("generates");
    assert_eq!(module.checks.len(), 1);
    assert_eq!(
        module.checks[0].message,
        "@index: index out of range reading col"
    );
    // The engine names the first bad index from the host's copy of `idx`, as the CPU does.
    let Some(horsec_runtime::kernel::CheckReport::Index(report)) = &module.checks[0].report else {
        panic!("an index report: {:?}", module.checks[0].report);
    };
    assert_eq!(
        report.index,
        horsec_runtime::kernel::IndexSource::Input(horsec_runtime::plan::Slot(idx.0))
    );
    insta::assert_snapshot!("codegen_gather", module.wgsl);
}

#[test]
fn group_aggregates_run_in_per_cell_passes_and_raze_in_place() {
    // q1's aggregation: sums and counts per group cell.
    let mut f = FunctionBuilder::new("main");
    let price = f.param("price", Type::F64);
    let groups = f.param("groups", Type::List(Box::new(Type::I64)));
    let cells = f.local("cells", Type::List(Box::new(Type::F64)));
    let sums = f.local("sums", Type::List(Box::new(Type::F64)));
    let sum = f.local("sum", Type::F64);
    let lens = f.local("lens", Type::List(Box::new(Type::I64)));
    let count = f.local("count", Type::I64);
    let avg = f.local("avg", Type::F64);
    f.assign(
        cells,
        call_args(
            Builtin::EachRight,
            vec![fun(Builtin::Index), arg(var(price)), arg(var(groups))],
        ),
    ); // s0
    f.assign(
        sums,
        call_args(Builtin::Each, vec![fun(Builtin::Sum), arg(var(cells))]),
    ); // s1
    f.assign(sum, call(Builtin::Raze, vec![var(sums)])); // s2
    f.assign(
        lens,
        call_args(Builtin::Each, vec![fun(Builtin::Len), arg(var(groups))]),
    ); // s3
    f.assign(count, call(Builtin::Raze, vec![var(lens)])); // s4
    f.assign(avg, call(Builtin::Div, vec![var(sum), var(count)])); // s5
    f.ret(vec![var(sum), var(avg)]);
    let program = program(f.finish());
    let module = kernel_of(
        &program,
        &[0, 1, 2, 3, 4, 5],
        0,
        &[price, groups],
        &[sum, avg],
    )
    .expect("generates");
    assert_eq!(
        entry_points(&module),
        ["<cells: cells_pass cell_thread_pass cell_split_pass cell_combine_pass>"]
    );
    let Pass::Cells(cells) = &module.passes[0] else {
        panic!("a per-cell pass");
    };
    assert_eq!(
        cells.cells,
        Length::Of {
            slot: Slot(groups.0),
            part: ValuePart::ListOffsets
        }
    );
    insta::assert_snapshot!("codegen_group_aggregates", module.wgsl);
}

#[test]
fn fetch_gathers_an_enums_keys_and_keeps_their_dictionary() {
    let mut f = FunctionBuilder::new("main");
    let e = f.param("e", Type::Enum(Box::new(Type::Sym)));
    let keys = f.local("keys", Type::Sym);
    f.assign(keys, call(Builtin::Fetch, vec![var(e)])); // s0
    f.ret(vec![var(keys)]);
    let program = program(f.finish());
    let analysis = analyze_function(&program, FunctionId(0)).expect("analyses");
    let rows = match analysis.shapes.before[0].get(&e) {
        Some(crate::analysis::Shape::Enumeration { values, .. }) => values.clone(),
        other => panic!("an enum shape, got {other:?}"),
    };
    let kernel = Kernel {
        id: KernelId(0),
        name: "main_k0".to_string(),
        function: FunctionId(0),
        statements: vec![StmtId(0)],
        geometry: crate::analysis::Geometry::Vector(rows),
        inputs: vec![e],
        outputs: vec![keys],
        grouped: None,
    };
    let module = generate_kernel(&program, &analysis, &kernel).expect("generates");
    assert_eq!(
        module.outputs[0].dictionary,
        Some(DictionarySource::Input(Slot(e.0)))
    );
    insta::assert_snapshot!("codegen_fetch", module.wgsl);
}

#[test]
fn a_builtin_without_gpu_code_is_an_error_naming_it_and_the_kernel() {
    let mut f = FunctionBuilder::new("main");
    let x = f.param("x", Type::F64);
    let y = f.local("y", Type::F64);
    f.assign(y, call(Builtin::Exp, vec![var(x)])); // s0
    f.ret(vec![var(y)]);
    let program = program(f.finish());
    let error = kernel_of(&program, &[0], 0, &[x], &[y]).expect_err("f64 exp has no GPU form");
    assert!(!error.is_compiler_bug());
    assert_eq!(
        error.to_string(),
        "kernel main_k0: cannot generate `y = @exp(x)` (@exp): f64 transcendental functions \
         have no GPU instruction (only sqrt is exact in f64)"
    );
}

#[test]
fn mod_is_generated_with_a_status_bit_for_an_integer_zero_divisor() {
    let mut f = FunctionBuilder::new("main");
    let k = f.param("k", Type::I64);
    let x = f.param("x", Type::F64);
    let r = f.local("r", Type::I64);
    let m = f.local("m", Type::F64);
    f.assign(r, call(Builtin::Mod, vec![var(k), lit_i64(&[7])])); // s0
    f.assign(m, call(Builtin::Mod, vec![var(x), var(k)])); // s1
    f.ret(vec![var(r), var(m)]);
    let program = program(f.finish());
    let module = kernel_of(&program, &[0, 1], 0, &[k, x], &[r, m]).expect("generates");
    // Only the integer @mod can fail (a float one by zero is NaN, as on the CPU).
    assert_eq!(module.checks.len(), 1);
    assert_eq!(module.checks[0].message, "@mod: integer modulo by zero");
    assert_eq!(module.checks[0].report, None);
    assert!(module.wgsl.contains("fn mod_i64(") && module.wgsl.contains("fn mod_f64("));
    insta::assert_snapshot!("codegen_mod", module.wgsl);
}

#[test]
fn invalid_wgsl_is_reported_as_a_compiler_bug_not_a_panic() {
    let error = validate("main_k9", "fn broken( {").expect_err("does not parse");
    assert!(error.is_compiler_bug());
    assert!(error
        .to_string()
        .starts_with("internal compiler error: the WGSL generated for kernel main_k9"));
}

#[test]
fn an_integer_widened_and_resigned_at_once_is_a_compiler_bug() {
    // naga writes `i64(u32)` as a sign-extending conversion: valid WGSL, wrong values from
    // 2^31. Kernels widen in the source's signedness first.
    let module = |body: &str| {
        format!(
            "@group(0) @binding(0) var<storage, read_write> out: array<i64>;\n\
             @compute @workgroup_size(1)\n\
             fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n    {body}\n}}\n"
        )
    };
    let error = validate("main_k0", &module("out[0] = i64(id.x);")).expect_err("rejected");
    assert!(error.is_compiler_bug());
    assert!(error
        .to_string()
        .contains("widen in the source's signedness first"));
    let error = validate("main_k0", &module("out[0] = bitcast<i64>(u64(i32(id.x)));"))
        .expect_err("rejected");
    assert!(error.to_string().contains("from Sint of 4"), "{error}");
    validate("main_k0", &module("out[0] = i64(u64(id.x));")).expect("zero-extended first");
    validate("main_k0", &module("out[0] = i64(i32(id.x));")).expect("sign kept");
}

#[test]
fn float_arithmetic_skips_its_checks_only_where_no_compiler_fold_can_apply() {
    let mut f = FunctionBuilder::new("main");
    let x = f.param("x", Type::F64);
    let y = f.param("y", Type::F64);
    let z = f.param("z", Type::F64);
    let [distinct, same, product, sum_of_product, by_zero, by_half] = [
        "distinct",
        "same",
        "product",
        "sum_of_product",
        "by_zero",
        "by_half",
    ]
    .map(|name| f.local(name, Type::F64));
    f.assign(distinct, call(Builtin::Minus, vec![var(x), var(y)])); // s0
    f.assign(same, call(Builtin::Minus, vec![var(x), var(distinct)])); // s1
    f.assign(product, call(Builtin::Mul, vec![var(x), var(z)])); // s2
    f.assign(
        sum_of_product,
        call(Builtin::Plus, vec![var(product), var(y)]),
    ); // s3
    f.assign(by_zero, call(Builtin::Mul, vec![var(z), lit_f64(&[0.0])])); // s4
    f.assign(by_half, call(Builtin::Mul, vec![var(z), lit_f64(&[0.5])])); // s5
    let outputs = [distinct, same, product, sum_of_product, by_zero, by_half];
    f.ret(outputs.iter().map(|&l| var(l)).collect());
    let program = program(f.finish());
    let module =
        kernel_of(&program, &[0, 1, 2, 3, 4, 5], 0, &[x, y, z], &outputs).expect("generates");
    let line = |name: &str| {
        module
            .wgsl
            .lines()
            .find(|l| l.contains(&format!("let v_{name}:")))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    // Two different columns: nothing for a compiler to fold, the hardware's IEEE result.
    let unchecked = |name: &str| !line(name).contains("_f64(");
    assert!(unchecked("distinct"), "{}", line("distinct"));
    // x - (x - y) shares x: a compiler may relate the operands, so the bits decide.
    assert!(line("same").contains("minus_f64("), "{}", line("same"));
    assert!(unchecked("product"), "{}", line("product"));
    // A product added unchecked could be fused into one rounding.
    assert!(
        line("sum_of_product").contains("plus_f64("),
        "{}",
        line("sum_of_product")
    );
    // z * 0 may be folded to 0 (wrong for an infinite or NaN z); z * 0.5 may not.
    assert!(line("by_zero").contains("mul_f64("), "{}", line("by_zero"));
    assert!(unchecked("by_half"), "{}", line("by_half"));
}
