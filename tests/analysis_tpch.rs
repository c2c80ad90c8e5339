//! The GPU compiler's analyses on the 22 TPC-H programs of the conformance suite: every
//! program is analysed without error, every statement gets a shape and a geometry, and the
//! shapes of q6 and q1 are the ones the outliner relies on.

mod common;

use common::tpch_queries_dir as queries_dir;
use std::path::{Path, PathBuf};

use horsec::analysis::{analyze_function, print_geometry, print_shapes, FunctionAnalysis};
use horsec::sema::typed::TypedProgram;

/// The typed program of `path`, or the front end's diagnostics.
fn try_typed(path: &Path) -> Result<TypedProgram, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (ast, diagnostics) = horsec::syntax::parse(&text);
    let ast = ast.ok_or_else(|| format!("{}: {diagnostics:?}", path.display()))?;
    let (typed, diagnostics) = horsec::sema::analyze(&ast);
    if horsec::diag::has_errors(&diagnostics) {
        return Err(format!("{}: {diagnostics:?}", path.display()));
    }
    typed.ok_or_else(|| format!("{}: no typed program", path.display()))
}

fn typed(path: &Path) -> TypedProgram {
    try_typed(path).unwrap_or_else(|e| panic!("{e}"))
}

fn analyze_query(name: &str) -> Option<(TypedProgram, FunctionAnalysis)> {
    let path = queries_dir()?.join(format!("{name}.hir"));
    let program = typed(&path);
    let analysis =
        analyze_function(&program, program.entry).unwrap_or_else(|e| panic!("{name}: {e}"));
    Some((program, analysis))
}

/// The printed line of the statement assigning `local`, without its name.
fn line_of<'a>(printed: &'a str, local: &str) -> &'a str {
    let prefix = format!("{local} : ");
    printed
        .lines()
        .find_map(|line| line.trim_start().strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no line for {local} in\n{printed}"))
}

#[test]
fn every_tpch_program_gets_shapes_geometry_and_dependences() {
    let Some(dir) = queries_dir() else {
        return;
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read the query directory")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "hir"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 22,
        "expected the 22 TPC-H queries in {}",
        dir.display()
    );
    let mut analysed = 0;
    for path in paths {
        // Front-end conformance is tested elsewhere; here a rejected program is only skipped.
        let program = match try_typed(&path) {
            Ok(program) => program,
            Err(message) => {
                eprintln!("SKIPPED (the front end rejects it): {message}");
                continue;
            }
        };
        analysed += 1;
        let analysis = analyze_function(&program, program.entry)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let function = &program.functions[program.entry.0];
        let statements = analysis.geometry.geometries.len();
        assert!(statements > 0, "{}", path.display());
        assert_eq!(analysis.dependence.graph.node_count(), statements);
        assert_eq!(analysis.shapes.values.len(), statements);
        // Every value of a TPC-H program has a known structure.
        let printed = print_shapes(&program, &analysis.shapes);
        assert!(
            !printed.contains("Wildcard"),
            "{}: a shape stayed unknown\n{printed}",
            path.display()
        );
        assert_eq!(printed.lines().count(), statements);
        assert_eq!(
            print_geometry(function, &analysis.geometry).lines().count(),
            statements
        );
        assert!(analysis
            .dependence
            .to_dot(&program, function)
            .starts_with("digraph"));
    }
    assert!(analysed > 0, "no TPC-H program got through the front end");
}

#[test]
fn q6_filters_and_reduces_in_the_geometry_of_lineitem() {
    let Some((program, analysis)) = analyze_query("q6") else {
        return;
    };
    let shapes = print_shapes(&program, &analysis.shapes);
    assert_eq!(
        line_of(&shapes, "t0"),
        "Table(Symbol(lineitem.columns), Symbol(lineitem))"
    );
    assert_eq!(line_of(&shapes, "t5"), "Vector(Symbol(lineitem))");
    assert_eq!(line_of(&shapes, "t25"), "Vector(Symbol(lineitem))");
    assert_eq!(
        line_of(&shapes, "t31"),
        "Vector(Compressed(Symbol(lineitem), t25))"
    );
    assert_eq!(
        line_of(&shapes, "t32"),
        "Vector(Compressed(Symbol(lineitem), t25))"
    );
    assert_eq!(
        line_of(&shapes, "t42"),
        "Vector(Compressed(Symbol(lineitem), t25))"
    );
    assert_eq!(line_of(&shapes, "t43"), "Vector(Constant(1))");
    assert_eq!(line_of(&shapes, "t46"), "Table(Constant(1), Constant(1))");

    // Everything between the column loads and the result table runs over lineitem's rows,
    // the compressed statements inside that same geometry.
    let function = &program.functions[program.entry.0];
    let geometry = print_geometry(function, &analysis.geometry);
    for local in [
        "t17", "t18", "t19", "t20", "t21", "t22", "t23", "t24", "t25", "t31", "t32",
    ] {
        assert_eq!(
            line_of(&geometry, local),
            "Vector(Symbol(lineitem))",
            "{local}"
        );
    }
    for local in ["t42", "t43"] {
        assert_eq!(
            line_of(&geometry, local),
            "Vector(Compressed(Symbol(lineitem), t25))",
            "{local}"
        );
    }
    for local in ["t0", "t5", "t44", "t45", "t46"] {
        assert_eq!(line_of(&geometry, local), "Cpu", "{local}");
    }

    // Only the reduction's result needs a barrier before it is used.
    let dependences = analysis.dependence.to_text(&program, function);
    let synchronized: Vec<&str> = dependences
        .lines()
        .filter(|line| line.contains("sync("))
        .collect();
    assert_eq!(synchronized.len(), 1, "{dependences}");
    assert!(
        synchronized[0].ends_with("true t43 sync(write)"),
        "{dependences}"
    );
}

#[test]
fn q1_group_aggregates_have_one_value_per_group() {
    let Some((program, analysis)) = analyze_query("q1") else {
        return;
    };
    let shapes = print_shapes(&program, &analysis.shapes);
    let keys = line_of(&shapes, "t44");
    assert!(keys.starts_with("Vector(Dynamic("), "{keys}");
    // Sums over each group, counts and the sorted output all have the groups' size.
    for local in ["t45", "t48", "t51", "t54", "t63", "t71", "t73", "t83"] {
        assert_eq!(line_of(&shapes, local), keys, "{local}");
    }
    assert_eq!(
        line_of(&shapes, "t22"),
        "Vector(Compressed(Symbol(lineitem), t17))"
    );
    // The groups' row lists: one cell per group.
    let groups = keys
        .strip_prefix("Vector(")
        .and_then(|k| k.strip_suffix(')'))
        .expect("a vector");
    let rows = line_of(&shapes, "t43");
    assert!(
        rows.starts_with(&format!("List({groups}, Vector(")),
        "{rows}"
    );
}
