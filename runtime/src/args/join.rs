//! `@join_index`'s argument checks: comparison literals first, then the two sides' key
//! columns. The CPU builtin and the GPU library kernel both parse calls here.

use crate::args::Args;
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::plan::Callee;
use crate::value::Value;

/// The checked arguments of `@join_index`: one comparison per key column pair, the key
/// columns of both sides, and their row counts. Shared by the CPU builtin and the GPU
/// library kernel, so both accept and reject exactly the same calls.
pub(crate) struct JoinArguments<C> {
    pub ops: Vec<Builtin>,
    pub a: Vec<C>,
    pub b: Vec<C>,
    pub rows_a: usize,
    pub rows_b: usize,
}

/// Parses and checks `@join_index`'s arguments; `columns` takes a side apart into key
/// columns (the GPU's also takes columns that are on the device) and `rows` checks that a
/// side's columns have one length and returns it.
pub(crate) fn join_arguments_with<'v, C>(
    args: &Args<'_, 'v>,
    columns: impl Fn(&'v Value) -> Result<Vec<C>>,
    rows: impl Fn(&[C]) -> Result<usize>,
) -> Result<JoinArguments<C>> {
    let k = args.leading_functions();
    if k == 0 {
        bail!("expected one or more comparison function literals first");
    }
    args.exactly(k + 2)?;
    let mut ops = Vec::with_capacity(k);
    for i in 0..k {
        match args.function(i)? {
            Callee::Builtin(
                op @ (Builtin::Eq
                | Builtin::Neq
                | Builtin::Lt
                | Builtin::Gt
                | Builtin::Leq
                | Builtin::Geq),
            ) => ops.push(op),
            Callee::Builtin(other) => {
                bail!("@{other} is not a comparison (use @eq, @neq, @lt, @gt, @leq or @geq)")
            }
            Callee::Function(_) => bail!("user functions are not supported as join predicates"),
        }
    }
    let (ca, cb) = (columns(args.value(k)?)?, columns(args.value(k + 1)?)?);
    // One predicate over lists of several columns applies to every column pair (rNdN's
    // multi-column equi-join form `@join_index(@eq, (a1, a2), (b1, b2))`).
    if k == 1 && ca.len() == cb.len() && ca.len() > 1 {
        ops.resize(ca.len(), ops[0]);
    }
    if ca.len() != ops.len() || cb.len() != ops.len() {
        bail!(
            "{k} predicate(s) need {k} key column(s) per side, got {} and {}",
            ca.len(),
            cb.len()
        );
    }
    let (rows_a, rows_b) = (rows(&ca)?, rows(&cb)?);
    Ok(JoinArguments {
        ops,
        a: ca,
        b: cb,
        rows_a,
        rows_b,
    })
}
