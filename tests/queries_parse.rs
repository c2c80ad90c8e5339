//! Our TPC-H programs (`queries/tpch/q1.hir` … `q22.hir`) are well-formed HorseIR: each parses
//! and type-checks without a diagnostic and has the shape every query program must have.

use std::path::PathBuf;

use horsec::diag::SourceFile;
use horsec::sema::analyze;
use horsec::syntax::parse;

fn query_path(query: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("queries/tpch/q{query}.hir"))
}

#[test]
fn every_tpch_program_parses_without_diagnostics() {
    let mut failures = Vec::new();
    for query in 1..=22 {
        let path = query_path(query);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (program, diags) = parse(&text);
        if program.is_none() || !diags.is_empty() {
            let file = SourceFile::new(path.display().to_string(), text.as_str());
            failures.push(file.render_all(&diags));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_tpch_program_type_checks_without_diagnostics() {
    let mut failures = Vec::new();
    for query in 1..=22 {
        let path = query_path(query);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = SourceFile::new(path.display().to_string(), text.as_str());
        let (Some(program), parse_diags) = parse(&text) else {
            failures.push(format!("q{query} does not parse"));
            continue;
        };
        assert!(parse_diags.is_empty(), "{}", file.render_all(&parse_diags));
        let (typed, diags) = analyze(&program);
        if typed.is_none() || !diags.is_empty() {
            failures.push(file.render_all(&diags));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_tpch_program_has_the_required_shape() {
    for query in 1..=22 {
        let path = query_path(query);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let module = format!("module tpch_q{query} {{");
        assert!(text.contains(&module), "q{query}: module tpch_q{query}");
        assert!(
            text.contains("import Builtin.*;"),
            "q{query}: imports Builtin.*"
        );
        assert!(
            text.contains("def main() : table {"),
            "q{query}: def main() : table"
        );
        assert!(
            text.trim_start().starts_with("/*"),
            "q{query}: the SQL is the header comment"
        );
    }
}
