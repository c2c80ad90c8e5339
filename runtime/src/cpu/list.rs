//! Lists: `@list @raze @enlist @tolist @match` and the `@each` family.
//!
//! `@each(f, l)` calls `f` on each cell, `@each_right(f, x, l)` calls `f(x, cell)`,
//! `@each_left(f, l, x)` calls `f(cell, x)` and `@each_item(f, a, b)` calls `f(a_i, b_i)`. A
//! vector passed where a list is expected counts as a list of its elements. The calls TPC-H
//! makes on millions of group cells have fast paths over flat lists that never build a cell:
//! `@each(@len|@count|@sum|@avg|@min|@max, l)` reduce segments, and
//! `@each_right(@index, x, l)` is one gather that keeps `l`'s offsets.

use std::sync::Arc;

use super::reduce::reduce_segments;
use super::{invoke, Args, Env};
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::plan::Callee;
use crate::value::{List, Value, Vector};

/// `@list(a, b, …)`: one cell per argument.
pub(crate) fn list(args: &Args<'_, '_>) -> Result<Value> {
    // Sized once: collecting through `Result` grows the vector from nothing.
    let mut cells = Vec::with_capacity(args.len());
    for i in 0..args.len() {
        cells.push(args.value(i)?.clone());
    }
    Ok(Value::List(List::from_cells(cells)))
}

/// `@raze(l)`: the cells concatenated into one vector (a vector is returned as it is). An
/// empty list of unknown cell type razes to an empty i64 vector.
pub(crate) fn raze(l: &Value) -> Result<Value> {
    match l {
        Value::List(List::Flat { values, .. }) => Ok(Value::Vector(values.clone())),
        Value::List(List::Mixed(cells)) => {
            if cells.is_empty() {
                return Ok(Value::from_i64s(Vec::new()));
            }
            let vectors = cells
                .iter()
                .map(|c| match c {
                    Value::Vector(v) => Ok(v.clone()),
                    other => bail!("cannot raze a list with a {} cell", other.ty()),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::Vector(Vector::concat(&vectors)?))
        }
        Value::Vector(_) => Ok(l.clone()),
        other => bail!("expected a list, got a {}", other.ty()),
    }
}

/// `@enlist(x)`: a list whose one cell is `x`.
pub(crate) fn enlist(x: &Value) -> Value {
    Value::List(List::from_cells(vec![x.clone()]))
}

/// `@tolist(v)`: one cell per element.
pub(crate) fn to_list(v: &Vector) -> Result<Value> {
    Ok(Value::List(List::flat(v.clone(), (0..=v.len()).collect())?))
}

/// A value as list cells (a vector gives its elements as one-element cells).
fn as_list(v: &Value) -> Result<List> {
    match v {
        Value::List(l) => Ok(l.clone()),
        Value::Vector(v) => List::flat(v.clone(), (0..=v.len()).collect()),
        other => bail!("expected a list, got a {}", other.ty()),
    }
}

/// A flat list of one value per cell.
fn per_cell(values: Vector) -> Result<Value> {
    let offsets = (0..=values.len()).collect();
    Ok(Value::List(List::flat(values, offsets)?))
}

/// The `@each` family.
pub(crate) fn each(b: Builtin, args: &Args<'_, '_>, env: &mut dyn Env) -> Result<Value> {
    let f = args.function(0)?;
    match b {
        Builtin::Each => {
            args.exactly(2)?;
            let l = as_list(args.value(1)?)?;
            if let (Callee::Builtin(op), List::Flat { values, offsets }) = (f, &l) {
                match op {
                    Builtin::Len | Builtin::Count => {
                        let lengths = offsets
                            .windows(2)
                            .map(|w| w[1].saturating_sub(w[0]) as i64)
                            .collect();
                        return per_cell(Vector::from_i64s(lengths));
                    }
                    Builtin::Sum | Builtin::Avg | Builtin::Min | Builtin::Max => {
                        return per_cell(reduce_segments(op, values, offsets)?);
                    }
                    _ => {}
                }
            }
            let results = l
                .cells()
                .iter()
                .map(|c| invoke(f, std::slice::from_ref(c), env))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::List(List::from_cells(results)))
        }
        Builtin::EachRight | Builtin::EachLeft => {
            args.exactly(3)?;
            let right = b == Builtin::EachRight;
            let (fixed, l) = if right {
                (args.value(1)?, args.value(2)?)
            } else {
                (args.value(2)?, args.value(1)?)
            };
            let l = as_list(l)?;
            if let (true, Callee::Builtin(Builtin::Index), List::Flat { values, offsets }) =
                (right, f, &l)
            {
                if let (Some(idx), Ok(source)) = (values.to_i64s(), super::as_vector(fixed)) {
                    let gathered = source.gather(&idx)?;
                    return Ok(Value::List(List::Flat {
                        values: gathered,
                        offsets: offsets.clone(),
                    }));
                }
            }
            let mut results = Vec::with_capacity(l.len());
            for cell in l.cells() {
                let call_args = if right {
                    [fixed.clone(), cell]
                } else {
                    [cell, fixed.clone()]
                };
                results.push(invoke(f, &call_args, env)?);
            }
            Ok(Value::List(List::from_cells(results)))
        }
        Builtin::EachItem => {
            args.exactly(3)?;
            let (a, c) = (as_list(args.value(1)?)?, as_list(args.value(2)?)?);
            if a.len() != c.len() {
                bail!("length mismatch ({} vs {} cells)", a.len(), c.len());
            }
            let mut results = Vec::with_capacity(a.len());
            for (x, y) in a.cells().into_iter().zip(c.cells()) {
                results.push(invoke(f, &[x, y], env)?);
            }
            Ok(Value::List(List::from_cells(results)))
        }
        other => bail!("@{other} is not an each builtin"),
    }
}

/// `@match(a, b)`: whether two values have identical content (strings by text, whatever
/// their dictionaries; lists by cells, however stored).
pub(crate) fn values_match(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Vector(x), Value::Vector(y)) => vectors_match(x, y),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len()
                && x.cells()
                    .iter()
                    .zip(y.cells().iter())
                    .all(|(p, q)| values_match(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            values_match(&x.keys, &y.keys) && values_match(&x.values, &y.values)
        }
        (Value::Enum(_), Value::Enum(_)) => match (super::as_vector(a), super::as_vector(b)) {
            (Ok(x), Ok(y)) => vectors_match(&x, &y),
            _ => false,
        },
        (Value::Table(x), Value::Table(y)) => tables_match(x, y),
        (Value::KTable(xk, xv), Value::KTable(yk, yv)) => {
            tables_match(xk, yk) && tables_match(xv, yv)
        }
        _ => false,
    }
}

fn vectors_match(x: &Vector, y: &Vector) -> bool {
    match (x, y) {
        (Vector::Sym(p), Vector::Sym(q)) | (Vector::Str(p), Vector::Str(q)) => {
            p.len() == q.len() && p.iter().zip(q.iter()).all(|(s, t)| s == t)
        }
        _ => x == y,
    }
}

fn tables_match(x: &Arc<crate::value::Table>, y: &Arc<crate::value::Table>) -> bool {
    x.names == y.names
        && x.columns
            .iter()
            .zip(&y.columns)
            .all(|(p, q)| values_match(p, q))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::{List, Value};

    #[test]
    fn list_raze_enlist_tolist() {
        let l = run(B::List, &[i64s(&[1, 2]), i64s(&[3])]).unwrap();
        assert!(matches!(l, Value::List(List::Flat { .. })));
        assert_eq!(run(B::Raze, &[l]).unwrap(), i64s(&[1, 2, 3]));
        let mixed = run(B::List, &[i64s(&[1]), syms(&["a"])]).unwrap();
        assert!(matches!(mixed, Value::List(List::Mixed(_))));
        assert!(run(B::Raze, &[mixed]).is_err());
        assert_eq!(
            cells(&run(B::Enlist, &[i64s(&[1, 2])]).unwrap()),
            vec![i64s(&[1, 2])]
        );
        assert_eq!(
            cells(&run(B::ToList, &[i64s(&[4, 5])]).unwrap()),
            vec![i64s(&[4]), i64s(&[5])]
        );
        let strings = run(B::List, &[syms(&["b"]), syms(&["a", "c"])]).unwrap();
        assert_eq!(texts(&run(B::Raze, &[strings]).unwrap()), ["b", "a", "c"]);
    }

    #[test]
    fn each_reduces_group_cells() {
        let groups = list(vec![i64s(&[0, 2]), i64s(&[1])]);
        let prices = f64s(&[1.5, 10.0, 2.5]);
        let gathered = run_with(B::EachRight, &[B::Index], &[prices, groups.clone()]).unwrap();
        assert_eq!(cells(&gathered), vec![f64s(&[1.5, 2.5]), f64s(&[10.0])]);
        let sums = run_with(B::Each, &[B::Sum], std::slice::from_ref(&gathered)).unwrap();
        assert_eq!(run(B::Raze, &[sums]).unwrap(), f64s(&[4.0, 10.0]));
        let lens = run_with(B::Each, &[B::Len], &[groups]).unwrap();
        assert_eq!(run(B::Raze, &[lens]).unwrap(), i64s(&[2, 1]));
        let mins = run_with(B::Each, &[B::Min], &[gathered]).unwrap();
        assert_eq!(run(B::Raze, &[mins]).unwrap(), f64s(&[1.5, 10.0]));
        let empty = run_with(B::Each, &[B::Sum], &[list(vec![])]).unwrap();
        assert_eq!(run(B::Raze, &[empty]).unwrap(), i64s(&[]));
    }

    #[test]
    fn each_variants_call_the_function_per_cell() {
        let l = list(vec![i64s(&[1, 2]), i64s(&[3])]);
        let right = run_with(B::EachRight, &[B::Plus], &[i64s(&[10]), l.clone()]).unwrap();
        assert_eq!(cells(&right), vec![i64s(&[11, 12]), i64s(&[13])]);
        let left = run_with(B::EachLeft, &[B::Minus], &[l.clone(), i64s(&[1])]).unwrap();
        assert_eq!(cells(&left), vec![i64s(&[0, 1]), i64s(&[2])]);
        let item = run_with(B::EachItem, &[B::Mul], &[l.clone(), l.clone()]).unwrap();
        assert_eq!(cells(&item), vec![i64s(&[1, 4]), i64s(&[9])]);
        let unique = run_with(B::Each, &[B::Unique], std::slice::from_ref(&l)).unwrap();
        assert_eq!(cells(&unique), vec![i64s(&[0, 1]), i64s(&[0])]);
        let err =
            run_with(B::Each, &[B::Sum], &[list(vec![syms(&["a"]), i64s(&[1])])]).unwrap_err();
        assert!(err.message.starts_with("@sum: "), "{}", err.message);
        assert!(run_with(B::EachItem, &[B::Mul], &[l, list(vec![i64s(&[1])])]).is_err());
        assert!(run(B::Each, &[i64s(&[1])]).is_err());
    }

    #[test]
    fn match_compares_content() {
        let a = syms(&["x", "y"]);
        let b = run(B::Append, &[syms(&["x"]), syms(&["y"])]).unwrap();
        assert_eq!(run(B::Match, &[a.clone(), b]).unwrap(), bools(&[1]));
        assert_eq!(run(B::Match, &[a, syms(&["x"])]).unwrap(), bools(&[0]));
        assert_eq!(
            run(B::Match, &[i64s(&[1]), i32s(&[1])]).unwrap(),
            bools(&[0])
        );
    }
}
