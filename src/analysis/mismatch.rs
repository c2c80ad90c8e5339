//! Length mismatches the compiler proves: an element-wise call or a `@compress` whose
//! operands shape analysis gives two constant lengths that the builtin refuses. Both backends
//! compile through this check (it runs on the typed program, before the backends part), so
//! both refuse such a program alike, with the message the run would give
//! (`@plus: length mismatch (3 vs 5)`), located at the statement.
//!
//! # What is provable
//! Only constant sizes are compared. A constant size comes from literals, `@vector` and
//! `@range` of literal counts, and what keeps their length (element-wise calls on them,
//! reductions): it is the value's length whenever the statement runs. Sizes named after
//! tables are not compared: two different tables may hold as many rows when the program runs
//! (data is chosen at run time: `--tpch`, `--data`), so `o_totalprice` against `l_quantity`
//! stays a run-time check (on the GPU, a launch check with the CPU's message). A compressed
//! size may equal its source (an all-true mask), and a dynamic one is anything. A length-1
//! side of an element-wise call broadcasts, so it never mismatches.
//!
//! A statement is checked wherever it stands, in a branch that may not run too, as a type
//! error is: its operands can never agree.

use horsec_runtime::builtin::Builtin;

use crate::diag::Diagnostic;
use crate::sema::typed::{Arg, Callee, FunctionId, Operand, TypedProgram};

use super::shape::{self, Shape, ShapeResults, Size};
use super::statements::{statement_call, StatementTree};

/// The located errors of every provable length mismatch in `program`, in source order per
/// function. A function whose shape analysis fails is skipped (the GPU outliner reports it).
pub fn provable_mismatches(program: &TypedProgram) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for index in 0..program.functions.len() {
        if let Ok(shapes) = shape::analyze(program, FunctionId(index)) {
            errors.extend(mismatches_in(program, &shapes));
        }
    }
    errors
}

/// [`provable_mismatches`] of one function, given its shapes.
pub fn mismatches_in(program: &TypedProgram, shapes: &ShapeResults) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let Some(function) = program.functions.get(shapes.function.0) else {
        return errors;
    };
    let tree = StatementTree::new(function);
    for (id, _) in tree.iter() {
        let Some(stmt) = tree.stmt(id) else {
            continue;
        };
        let Some((Callee::Builtin(builtin), args)) = statement_call(stmt) else {
            continue;
        };
        let [Arg::Operand(x), Arg::Operand(y)] = args else {
            continue;
        };
        let constant = |operand: &Operand| match operand {
            // Looked at where it is recorded rather than copied out (`operand_shape`).
            Operand::Local(local, _) => match shapes.before.get(id.0)?.get(local)? {
                Shape::Vector(Size::Constant(n)) => Some(*n),
                _ => None,
            },
            _ => match shapes.operand_shape(program, id, operand) {
                Shape::Vector(Size::Constant(n)) => Some(n),
                _ => None,
            },
        };
        let (Some(n), Some(m)) = (constant(x), constant(y)) else {
            continue;
        };
        if let Some(message) = mismatch(builtin, n, m) {
            errors.push(Diagnostic::error(
                stmt.span,
                format!("@{builtin}: {message}"),
            ));
        }
    }
    errors
}

/// What `builtin` says of operands of constant lengths `n` and `m`, if it refuses them (the
/// CPU builtins' wording).
fn mismatch(builtin: Builtin, n: u64, m: u64) -> Option<String> {
    if builtin.is_binary_elementwise() {
        (n != m && n != 1 && m != 1).then(|| format!("length mismatch ({n} vs {m})"))
    } else if builtin == Builtin::Compress {
        (n != m).then(|| format!("length mismatch (mask {n} vs {m})"))
    } else {
        None
    }
}
