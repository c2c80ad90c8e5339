//! The parser against the conformance programs: every TPC-H query and every HorsePower `pass`
//! program parses without errors and survives a print/parse round trip; the syntactic `fail`
//! programs are rejected with an error on the line that is wrong.

mod common;

use common::{conformance_dir, programs};
use std::path::Path;

use horsec::diag::{Severity, SourceFile};
use horsec::syntax::{parse, print_program};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The Debug form of a value with every `Span { start: …, end: … }` replaced by `Span`.
fn without_spans(debug: &str) -> String {
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(at) = rest.find("Span { start: ") {
        out.push_str(&rest[..at]);
        out.push_str("Span");
        let after = &rest[at..];
        let close = after.find('}').map_or(after.len(), |i| i + 1);
        rest = &after[close..];
    }
    out.push_str(rest);
    out
}

/// Parses `path` without errors, then checks parse(print(ast)) == ast, spans aside.
fn parses_and_round_trips(path: &Path) {
    let source = read(path);
    let (program, diags) = parse(&source);
    let file = SourceFile::new(path.display().to_string(), source.clone());
    let Some(program) = program else {
        panic!(
            "{} does not parse:\n{}",
            path.display(),
            file.render_all(&diags)
        );
    };
    let printed = print_program(&program);
    let (reparsed, diags) = parse(&printed);
    let Some(reparsed) = reparsed else {
        let printed_file = SourceFile::new("printed", printed.clone());
        panic!(
            "printed {} does not parse:\n{}\n{printed}",
            path.display(),
            printed_file.render_all(&diags)
        );
    };
    assert_eq!(
        without_spans(&format!("{reparsed:?}")),
        without_spans(&format!("{program:?}")),
        "round trip changed {}",
        path.display()
    );
    assert_eq!(
        print_program(&reparsed),
        printed,
        "printing is not stable for {}",
        path.display()
    );
}

#[test]
fn tpch_queries_parse_and_round_trip() {
    let Some(dir) = conformance_dir() else { return };
    let files = programs(&dir.join("tpch/queries"));
    assert_eq!(files.len(), 26, "expected the 26 TPC-H programs");
    for path in &files {
        parses_and_round_trips(path);
    }
}

#[test]
fn horsepower_pass_programs_parse_and_round_trip() {
    let Some(dir) = conformance_dir() else { return };
    let files = programs(&dir.join("horsepower-unit/pass"));
    assert_eq!(files.len(), 40, "expected the 40 pass programs");
    for path in &files {
        parses_and_round_trips(path);
    }
}

#[test]
fn syntactic_fail_programs_are_rejected_on_the_right_line() {
    let Some(dir) = conformance_dir() else { return };
    // (program, line of the first error, a word the message must contain)
    let cases = [
        ("t0.hir", 5, "cannot have type str"),
        ("t1.hir", 5, "month 00"),
        ("t2.hir", 6, "malformed month literal `20196-05`"),
        ("t3.hir", 5, "month 00"),
    ];
    for (name, line, words) in cases {
        let path = dir.join("horsepower-unit/fail").join(name);
        let source = read(&path);
        let (program, diags) = parse(&source);
        assert!(program.is_none(), "{name} was accepted");
        let file = SourceFile::new(name, source.clone());
        let first = diags
            .iter()
            .find(|d| d.severity == Severity::Error)
            .unwrap_or_else(|| panic!("{name}: no error"));
        assert_eq!(
            file.line_col(first.span.start).0,
            line,
            "{name}: {}",
            file.render(first)
        );
        assert!(
            first.message.contains(words),
            "{name}: {}",
            file.render(first)
        );
    }
    // t0 also has the untyped literal on line 6.
    let source = read(&dir.join("horsepower-unit/fail/t0.hir"));
    let file = SourceFile::new("t0.hir", source.clone());
    let (_, diags) = parse(&source);
    assert!(diags
        .iter()
        .any(|d| file.line_col(d.span.start).0 == 6 && d.message.contains("literal has no type")));
}
