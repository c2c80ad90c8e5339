//! Semantic analysis against the conformance programs: every TPC-H query and every HorsePower
//! `pass` program analyzes without errors, every `fail` program is rejected with an error on
//! the line its comments point to, and the typed TPC-H programs and the rendered diagnostics
//! of the `fail` programs are pinned by snapshots.

mod common;

use common::{conformance_dir, programs};
use std::path::Path;

use horsec::diag::{has_errors, Diagnostic, SourceFile};
use horsec::sema::{analyze, print_typed, typed::TypedProgram};
use horsec::syntax::parse;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Parses and analyzes `text`: the typed program (None after an error) and the diagnostics of
/// both stages.
fn front_end(text: &str) -> (Option<TypedProgram>, Vec<Diagnostic>) {
    let (ast, mut diags) = parse(text);
    let Some(ast) = ast else {
        return (None, diags);
    };
    let (typed, sema_diags) = analyze(&ast);
    diags.extend(sema_diags);
    (typed, diags)
}

/// Analyzes the program at `path`, failing the test with the rendered diagnostics on error.
fn analyzes(path: &Path, name: &str) -> (TypedProgram, SourceFile, Vec<Diagnostic>) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file = SourceFile::new(name, text.clone());
    let (typed, diags) = front_end(&text);
    match typed {
        Some(typed) if !has_errors(&diags) => (typed, file, diags),
        _ => panic!("{name} is rejected:\n{}", file.render_all(&diags)),
    }
}

/// Printing a typed program and analyzing the text again prints the same text.
fn reprints_the_same(name: &str, printed: &str) {
    let (again, diags) = front_end(printed);
    let file = SourceFile::new(format!("printed {name}"), printed.to_string());
    let Some(again) = again else {
        panic!(
            "the typed print of {name} is rejected:\n{}\n{printed}",
            file.render_all(&diags)
        );
    };
    assert_eq!(
        print_typed(&again),
        printed,
        "{name}: printing is not stable"
    );
}

/// `list<?>` (a list whose cells differ in type) is the only `?` a typed program may keep.
fn unresolved_wildcards(printed: &str) -> Vec<&str> {
    printed
        .lines()
        .filter(|line| line.replace("list<?>", "").contains('?'))
        .collect()
}

#[test]
fn tpch_queries_analyze_without_errors_and_every_type_is_inferred() {
    let Some(dir) = conformance_dir() else { return };
    let files = programs(&dir.join("tpch/queries"));
    assert_eq!(files.len(), 26, "expected the 26 TPC-H programs");
    for path in &files {
        let name = format!("tpch/{}", file_name(path));
        let (typed, file, diags) = analyzes(path, &name);
        assert!(
            diags.is_empty(),
            "{name} has warnings:\n{}",
            file.render_all(&diags)
        );
        let printed = print_typed(&typed);
        let left = unresolved_wildcards(&printed);
        assert!(left.is_empty(), "{name}: `?` left in\n{}", left.join("\n"));
        reprints_the_same(&name, &printed);
        insta::assert_snapshot!(
            format!("typed_{}", file_name(path).replace(".hir", "")),
            printed
        );
    }
}

#[test]
fn horsepower_pass_programs_analyze_without_errors() {
    let Some(dir) = conformance_dir() else { return };
    let files = programs(&dir.join("horsepower-unit/pass"));
    assert_eq!(files.len(), 40, "expected the 40 pass programs");
    for path in &files {
        let name = format!("pass/{}", file_name(path));
        let (typed, _, _) = analyzes(path, &name);
        reprints_the_same(&name, &print_typed(&typed));
    }
}

/// For each `fail` program: the line of the error its comments describe, and words its
/// message must contain.
const FAIL_CASES: [(&str, usize, &str); 14] = [
    ("t0.hir", 5, "cannot have type str"),
    ("t1.hir", 5, "month 00"),
    ("t2.hir", 6, "malformed month literal"),
    ("t3.hir", 5, "month 00"),
    ("t4.hir", 5, "`k0` is not declared"),
    ("t5.hir", 7, "`x` is used before any value is assigned"),
    ("t6.hir", 9, "`_` discards a value"),
    ("t7.hir", 5, "`_` is not a value"),
    ("t8.hir", 5, "`_` discards a value"),
    // The grammar needs at least one module, so the parser rejects the empty file at its end;
    // analysis of a program without `main` says "no `main` function" (see the unit tests).
    ("t9.hir", 3, "expected `module`, found end of file"),
    ("t10.hir", 6, "`x` is already declared in this block"),
    ("t11.hir", 12, "`z` is not declared"),
    ("t12.hir", 13, "declares no return type"),
    ("t13.hir", 13, "returns table, but this value is i32"),
];

#[test]
fn horsepower_fail_programs_are_rejected_on_the_line_at_fault() {
    let Some(dir) = conformance_dir() else { return };
    let files = programs(&dir.join("horsepower-unit/fail"));
    assert_eq!(
        files.len(),
        FAIL_CASES.len(),
        "expected the 14 fail programs"
    );
    for (name, line, words) in FAIL_CASES {
        let path = dir.join("horsepower-unit/fail").join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let file = SourceFile::new(format!("fail/{name}"), text.clone());
        let (typed, diags) = front_end(&text);
        let rendered = file.render_all(&diags);
        assert!(typed.is_none(), "fail/{name} was accepted:\n{rendered}");
        assert!(
            diags.iter().any(|d| d.is_error()
                && file.line_col(d.span.start).0 == line
                && d.message.contains(words)),
            "fail/{name}: no error with {words:?} on line {line}:\n{rendered}"
        );
        insta::assert_snapshot!(
            format!("diagnostics_fail_{}", name.replace(".hir", "")),
            rendered
        );
    }
}
