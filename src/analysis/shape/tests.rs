use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use super::*;
use crate::analysis::defuse::DefSite;
use crate::analysis::geometry::{self, Geometry};
use crate::analysis::testing::*;

fn shapes_of(function: Function) -> (TypedProgram, ShapeResults) {
    let program = program(function);
    let results = analyze(&program, FunctionId(0)).unwrap();
    (program, results)
}

/// The shape statement `stmt` gave its (first) target.
fn value(results: &ShapeResults, stmt: usize) -> Shape {
    results.values[stmt][0].clone()
}

fn lineitem() -> Size {
    Size::rows("lineitem")
}

fn mask(local: LocalId, stmt: usize) -> Mask {
    Mask {
        local,
        def: DefSite::Stmt(StmtId(stmt)),
    }
}

#[test]
fn merging_equal_shapes_keeps_them() {
    let shape = Shape::Vector(lineitem());
    let mut fresh = |_: Vec<u8>| -> Size { unreachable!("no size is made for equal shapes") };
    assert_eq!(merge_shapes(&shape, &shape, &mut fresh), shape);
}

#[test]
fn merging_different_sizes_makes_a_dynamic_size_named_by_its_place() {
    let mut made = Vec::new();
    let mut fresh = |part: Vec<u8>| {
        made.push(part);
        Size::Dynamic(DynamicId(made.len() - 1))
    };
    let merged = merge_shapes(
        &Shape::list(Size::Constant(2), Shape::Vector(lineitem())),
        &Shape::list(Size::Constant(2), Shape::Vector(Size::Constant(7))),
        &mut fresh,
    );
    // The list length agrees; only the cell size becomes dynamic (part [1]: the cell).
    assert_eq!(
        merged,
        Shape::list(
            Size::Constant(2),
            Shape::Vector(Size::Dynamic(DynamicId(0)))
        )
    );
    assert_eq!(made, vec![vec![1]]);
}

#[test]
fn merging_shapes_of_different_kinds_knows_nothing() {
    let mut fresh = |_: Vec<u8>| Size::Dynamic(DynamicId(0));
    let merged = merge_shapes(
        &Shape::Vector(Size::Constant(1)),
        &Shape::Table {
            columns: Size::Constant(1),
            rows: Size::Constant(1),
        },
        &mut fresh,
    );
    assert_eq!(merged, Shape::Wildcard);
}

#[test]
fn element_wise_binary_builtins_broadcast_a_scalar() {
    let mut f = FunctionBuilder::new("main");
    let t = f.local("t", Type::Table);
    let x = f.local("x", Type::F64);
    let y = f.local("y", Type::F64);
    let z = f.local("z", Type::F64);
    let other = f.param("other", Type::F64);
    let w = f.local("w", Type::F64);
    f.assign(t, call(Builtin::LoadTable, vec![lit_sym(&["lineitem"])])); // s0
    f.assign(
        x,
        cast(
            call(Builtin::ColumnValue, vec![var(t), lit_sym(&["l_tax"])]),
            Type::F64,
        ),
    ); // s1
    f.assign(y, call(Builtin::Plus, vec![lit_f64(&[1.0]), var(x)])); // s2
    f.assign(z, call(Builtin::Mul, vec![var(y), var(x)])); // s3
    f.assign(w, call(Builtin::Mul, vec![var(z), var(other)])); // s4
    let (_, results) = shapes_of(f.finish());
    assert_eq!(
        value(&results, 0),
        Shape::Table {
            columns: Size::Symbol {
                table: "lineitem".into(),
                dimension: TableDimension::Columns
            },
            rows: lineitem()
        }
    );
    assert_eq!(value(&results, 1), Shape::Vector(lineitem()));
    assert_eq!(
        value(&results, 2),
        Shape::Vector(lineitem()),
        "1 + x broadcasts"
    );
    assert_eq!(value(&results, 3), Shape::Vector(lineitem()), "equal sizes");
    // A parameter's size cannot be related to the table's: known only at run time.
    let Shape::Vector(Size::Dynamic(id)) = value(&results, 4) else {
        panic!("expected a dynamic vector, got {:?}", value(&results, 4));
    };
    assert_eq!(
        results.dynamic_origin(id),
        Some(&DynamicOrigin::Call {
            stmt: StmtId(4),
            part: vec![0]
        })
    );
}

#[test]
fn compress_and_where_give_the_compressed_size_and_reductions_a_scalar() {
    let mut f = FunctionBuilder::new("main");
    let x = f.param("x", Type::F64);
    let y = f.param("y", Type::F64);
    let m = f.local("m", Type::Bool);
    let cx = f.local("cx", Type::F64);
    let cy = f.local("cy", Type::F64);
    let product = f.local("product", Type::F64);
    let total = f.local("total", Type::F64);
    let positions = f.local("positions", Type::I64);
    f.assign(m, call(Builtin::Lt, vec![var(x), var(y)])); // s0
    f.assign(cx, call(Builtin::Compress, vec![var(m), var(x)])); // s1
    f.assign(cy, call(Builtin::Compress, vec![var(m), var(y)])); // s2
    f.assign(product, call(Builtin::Mul, vec![var(cx), var(cy)])); // s3
    f.assign(total, call(Builtin::Sum, vec![var(product)])); // s4
    f.assign(positions, call(Builtin::Where, vec![var(m)])); // s5
    let (_, results) = shapes_of(f.finish());
    let Shape::Vector(full) = value(&results, 0) else {
        panic!("a vector");
    };
    let compressed = Shape::Vector(Size::compressed(full, mask(m, 0)));
    assert_eq!(value(&results, 1), compressed);
    assert_eq!(
        value(&results, 2),
        compressed,
        "the same mask, the same size"
    );
    assert_eq!(value(&results, 3), compressed);
    assert_eq!(value(&results, 4), Shape::Vector(Size::Constant(1)));
    assert_eq!(
        value(&results, 5),
        compressed,
        "@where(m) has as many elements"
    );
}

#[test]
fn group_each_and_raze_keep_one_size_per_group() {
    // g = @group(k); keys = @keys(g); rows = @values(g);
    // firsts = @index(k, keys); parts = @each_right(@index, x, rows);
    // sums = @each(@sum, parts); razed = @raze(sums)
    let mut f = FunctionBuilder::new("main");
    let k = f.param("k", Type::I64);
    let x = f.param("x", Type::F64);
    let g = f.local(
        "g",
        Type::Dict(
            Box::new(Type::I64),
            Box::new(Type::List(Box::new(Type::I64))),
        ),
    );
    let keys = f.local("keys", Type::I64);
    let rows = f.local("rows", Type::List(Box::new(Type::I64)));
    let firsts = f.local("firsts", Type::I64);
    let parts = f.local("parts", Type::List(Box::new(Type::F64)));
    let sums = f.local("sums", Type::List(Box::new(Type::F64)));
    let razed = f.local("razed", Type::F64);
    f.assign(g, call(Builtin::Group, vec![var(k)])); // s0
    f.assign(keys, call(Builtin::Keys, vec![var(g)])); // s1
    f.assign(rows, call(Builtin::Values, vec![var(g)])); // s2
    f.assign(firsts, call(Builtin::Index, vec![var(k), var(keys)])); // s3
    f.assign(
        parts,
        call_args(
            Builtin::EachRight,
            vec![fun(Builtin::Index), arg(var(x)), arg(var(rows))],
        ),
    ); // s4
    f.assign(
        sums,
        call_args(Builtin::Each, vec![fun(Builtin::Sum), arg(var(parts))]),
    ); // s5
    f.assign(razed, call(Builtin::Raze, vec![var(sums)])); // s6
    let (_, results) = shapes_of(f.finish());
    let Shape::Dictionary(group_keys, group_rows) = value(&results, 0) else {
        panic!("a dictionary");
    };
    let Shape::Vector(groups) = *group_keys else {
        panic!("vector keys");
    };
    let Shape::List(cells, member) = *group_rows else {
        panic!("list values");
    };
    assert_eq!(cells, groups, "one cell per group");
    assert_eq!(value(&results, 3), Shape::Vector(groups.clone()));
    assert_eq!(value(&results, 4), Shape::list(groups.clone(), *member));
    assert_eq!(
        value(&results, 5),
        Shape::list(groups.clone(), Shape::Vector(Size::Constant(1)))
    );
    assert_eq!(value(&results, 6), Shape::Vector(groups), "raze of scalars");
}

#[test]
fn join_index_gives_two_equally_long_index_vectors() {
    let mut f = FunctionBuilder::new("main");
    let a = f.param("a", Type::I32);
    let b = f.param("b", Type::I32);
    let pairs = f.local("pairs", Type::List(Box::new(Type::I64)));
    let left = f.local("left", Type::I64);
    let right = f.local("right", Type::I64);
    f.assign(
        pairs,
        call_args(
            Builtin::JoinIndex,
            vec![fun(Builtin::Eq), arg(var(a)), arg(var(b))],
        ),
    ); // s0
    f.assign(left, call(Builtin::Index, vec![var(pairs), lit_i64(&[0])])); // s1
    f.assign(right, call(Builtin::Index, vec![var(pairs), lit_i64(&[1])])); // s2
    let (_, results) = shapes_of(f.finish());
    assert_eq!(value(&results, 1), value(&results, 2));
    assert!(matches!(
        value(&results, 1),
        Shape::Vector(Size::Dynamic(_))
    ));
}

#[test]
fn an_enum_column_is_an_enumeration_whose_values_are_the_rows() {
    let mut f = FunctionBuilder::new("main");
    let t = f.local("t", Type::Table);
    let e = f.local("e", Type::Enum(Box::new(Type::I32)));
    let keys = f.local("keys", Type::I32);
    f.assign(t, call(Builtin::LoadTable, vec![lit_sym(&["lineitem"])])); // s0
    f.assign(
        e,
        cast(
            call(Builtin::ColumnValue, vec![var(t), lit_sym(&["l_orderkey"])]),
            Type::Enum(Box::new(Type::I32)),
        ),
    ); // s1
    f.assign(keys, call(Builtin::Fetch, vec![var(e)])); // s2
    let (_, results) = shapes_of(f.finish());
    assert!(matches!(
        value(&results, 1),
        Shape::Enumeration { values, .. } if values == lineitem()
    ));
    assert_eq!(value(&results, 2), Shape::Vector(lineitem()));
}

#[test]
fn branches_that_agree_keep_the_shape_and_others_get_a_dynamic_size_of_the_join() {
    // if (c) { a = x; b = x; } else { a = x; b = @compress(m, x); }  — after: a, b
    let mut f = FunctionBuilder::new("main");
    let c = f.param("c", Type::Bool);
    let m = f.param("m", Type::Bool);
    let x = f.param("x", Type::F64);
    let a = f.local("a", Type::F64);
    let b = f.local("b", Type::F64);
    let after = f.local("after", Type::F64);
    f.if_else(
        var(c),
        |t| {
            t.assign(a, copy(x)); // s1
            t.assign(b, copy(x)); // s2
        },
        |e| {
            e.assign(a, copy(x)); // s3
            e.assign(b, call(Builtin::Compress, vec![var(m), var(x)])); // s4
        },
    ); // s0
    f.assign(after, call(Builtin::Plus, vec![var(a), var(b)])); // s5
    let (_, results) = shapes_of(f.finish());
    let fact = &results.before[5];
    assert_eq!(fact[&a], value(&results, 1));
    let Shape::Vector(Size::Dynamic(id)) = fact[&b].clone() else {
        panic!("b differs between the branches: {:?}", fact[&b]);
    };
    assert_eq!(
        results.dynamic_origin(id),
        Some(&DynamicOrigin::Join {
            point: JoinPoint::IfMerge(StmtId(0)),
            local: b,
            part: vec![]
        })
    );
}

#[test]
fn a_loop_that_shrinks_a_vector_reaches_a_fixed_point_with_a_size_of_the_loop_head() {
    // v = x; while (c) { v = @compress(@lt(v, 1), v); }
    let mut f = FunctionBuilder::new("main");
    let c = f.param("c", Type::Bool);
    let x = f.param("x", Type::F64);
    let v = f.local("v", Type::F64);
    let keep = f.local("keep", Type::Bool);
    f.assign(v, copy(x)); // s0
    f.while_(var(c), |b| {
        // s1
        b.assign(keep, call(Builtin::Lt, vec![var(v), lit_f64(&[1.0])])); // s2
        b.assign(v, call(Builtin::Compress, vec![var(keep), var(v)])); // s3
    });
    let (_, results) = shapes_of(f.finish());
    // The first statement of the body reads `v` as the loop head has it.
    let head = &results.before[2];
    let Shape::Vector(Size::Dynamic(id)) = head[&v].clone() else {
        panic!("v changes size in the loop: {:?}", head[&v]);
    };
    assert_eq!(
        results.dynamic_origin(id),
        Some(&DynamicOrigin::Join {
            point: JoinPoint::LoopHead(StmtId(1)),
            local: v,
            part: vec![]
        })
    );
    // Inside the body, the compressed size is relative to the head's size.
    assert_eq!(
        value(&results, 3),
        Shape::Vector(Size::compressed(Size::Dynamic(id), mask(keep, 2)))
    );
}

#[test]
fn a_size_from_the_previous_iteration_is_not_confused_with_the_current_one() {
    // a = @where(m0); while (c) { p = a; a = @where(m); q = @plus(p, a); }
    let mut f = FunctionBuilder::new("main");
    let c = f.param("c", Type::Bool);
    let m = f.param("m", Type::Bool);
    let a = f.local("a", Type::I64);
    let p = f.local("p", Type::I64);
    let q = f.local("q", Type::I64);
    f.assign(a, call(Builtin::Where, vec![var(m)])); // s0
    f.while_(var(c), |b| {
        // s1
        b.assign(p, copy(a)); // s2
        b.assign(a, call(Builtin::Unique, vec![var(m)])); // s3
        b.assign(q, call(Builtin::Plus, vec![var(p), var(a)])); // s4
    });
    let (_, results) = shapes_of(f.finish());
    let fact = &results.before[4];
    assert_ne!(
        fact[&p], fact[&a],
        "p holds the previous iteration's vector"
    );
    let Shape::Vector(Size::Dynamic(id)) = value(&results, 4) else {
        panic!("unrelated sizes: checked at run time");
    };
    assert_eq!(
        results.dynamic_origin(id),
        Some(&DynamicOrigin::Call {
            stmt: StmtId(4),
            part: vec![0]
        })
    );
}

/// TPC-H q6 written with the builder: every statement after the loads runs in the geometry
/// of `lineitem` or of `lineitem` compressed by the predicate.
#[test]
fn q6_runs_in_the_geometry_of_lineitem() {
    let mut f = FunctionBuilder::new("main");
    let t0 = f.local("t0", Type::Table);
    let col = |f: &mut FunctionBuilder, name: &str, column: &str, ty: Type| {
        let local = f.local(name, ty.clone());
        f.assign(
            local,
            cast(
                call(Builtin::ColumnValue, vec![var(t0), lit_sym(&[column])]),
                ty,
            ),
        );
        local
    };
    f.assign(t0, call(Builtin::LoadTable, vec![lit_sym(&["lineitem"])])); // s0
    let t6 = col(&mut f, "t6", "l_extendedprice", Type::F64); // s1
    let t7 = col(&mut f, "t7", "l_discount", Type::F64); // s2
    let t17 = f.local("t17", Type::Bool);
    let t25 = f.local("t25", Type::Bool);
    let t31 = f.local("t31", Type::F64);
    let t32 = f.local("t32", Type::F64);
    let t42 = f.local("t42", Type::F64);
    let t43 = f.local("t43", Type::F64);
    let t44 = f.local("t44", Type::Sym);
    let t45 = f.local("t45", Type::List(Box::new(Type::F64)));
    let t46 = f.local("t46", Type::Table);
    f.assign(t17, call(Builtin::Geq, vec![var(t7), lit_f64(&[0.05])])); // s3
    f.assign(t25, call(Builtin::And, vec![var(t17), lit_bool(&[true])])); // s4
    f.assign(t31, call(Builtin::Compress, vec![var(t25), var(t6)])); // s5
    f.assign(t32, call(Builtin::Compress, vec![var(t25), var(t7)])); // s6
    f.assign(t42, call(Builtin::Mul, vec![var(t31), var(t32)])); // s7
    f.assign(t43, call(Builtin::Sum, vec![var(t42)])); // s8
    f.assign(t44, lit_sym(&["revenue"])); // s9
    f.assign(t45, call(Builtin::List, vec![var(t43)])); // s10
    f.assign(t46, call(Builtin::Table, vec![var(t44), var(t45)])); // s11
    f.ret(vec![var(t46)]); // s12
    let (program, results) = shapes_of(f.finish());
    let printed = print_shapes(&program, &results);
    let expected = "\
t0 : Table(Symbol(lineitem.columns), Symbol(lineitem))
t6 : Vector(Symbol(lineitem))
t7 : Vector(Symbol(lineitem))
t17 : Vector(Symbol(lineitem))
t25 : Vector(Symbol(lineitem))
t31 : Vector(Compressed(Symbol(lineitem), t25))
t32 : Vector(Compressed(Symbol(lineitem), t25))
t42 : Vector(Compressed(Symbol(lineitem), t25))
t43 : Vector(Constant(1))
t44 : Vector(Constant(1))
t45 : List(Constant(1), Vector(Constant(1)))
t46 : Table(Constant(1), Constant(1))
return : Table(Constant(1), Constant(1))
";
    assert_eq!(printed, expected);

    let function = &program.functions[0];
    let geometry = geometry::analyze(&program, function, &results);
    let full = Geometry::Vector(lineitem());
    let compressed = Geometry::Vector(Size::compressed(lineitem(), mask(t25, 4)));
    let expected_geometry = [
        Geometry::Cpu,      // load_table
        Geometry::Cpu,      // column_value
        Geometry::Cpu,      // column_value
        full.clone(),       // geq
        full.clone(),       // and
        full.clone(),       // compress runs over the whole mask
        full,               // compress
        compressed.clone(), // mul of compressed vectors
        compressed,         // sum runs over its input
        Geometry::Cpu,      // literal
        Geometry::Cpu,      // list
        Geometry::Cpu,      // table
        Geometry::Cpu,      // return
    ];
    assert_eq!(geometry.geometries, expected_geometry);
    let printed = crate::analysis::print_geometry(function, &geometry);
    assert!(
        printed.contains("t42 : Vector(Compressed(Symbol(lineitem), t25))\n"),
        "{printed}"
    );
    assert!(
        printed.contains("t31 : Vector(Symbol(lineitem))\n"),
        "{printed}"
    );
}

#[test]
fn printed_shapes_are_indented_by_nesting() {
    let mut f = FunctionBuilder::new("main");
    let c = f.param("c", Type::Bool);
    let x = f.local("x", Type::I64);
    f.if_(var(c), |b| b.assign(x, lit_i64(&[1, 2, 3])));
    let (program, results) = shapes_of(f.finish());
    assert_eq!(
        print_shapes(&program, &results),
        "if c : Vector(Dynamic(0))\n  x : Vector(Constant(3))\n"
    );
}
