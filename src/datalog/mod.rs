//! The Datalog front end: Soufflé's core language (`.decl`, `.input`, `.output`, facts,
//! rules with conjunctions, comparisons and arithmetic on numbers, `_`, stratified
//! negation) parsed, checked, stratified and lowered to HorseIR text, which the rest of the
//! compiler takes as it takes a `.hir` file (`horsec compile prog.dl --emit hir` prints it).

pub mod ast;
pub mod bench;
pub mod check;
pub mod lexer;
pub mod lower;
pub mod parser;

pub use lower::{InputRelation, LowerOptions, Lowered};

use crate::diag::{has_errors, Diagnostic};

/// True for a path the driver treats as Datalog (`.dl`).
pub fn is_datalog(name: &str) -> bool {
    name.ends_with(".dl")
}

/// Parses, checks and lowers a Datalog program; the diagnostics of every stage that ran.
pub fn compile(text: &str, options: LowerOptions) -> (Option<Lowered>, Vec<Diagnostic>) {
    let (program, mut diags) = parser::parse(text);
    if has_errors(&diags) {
        return (None, diags);
    }
    match check::check(&program) {
        Ok(checked) => (Some(lower::lower(&checked, options)), diags),
        Err(errors) => {
            diags.extend(errors);
            (None, diags)
        }
    }
}
