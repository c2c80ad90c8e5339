//! Reductions: `@count @sum @avg @min @max`, on a whole vector or per cell of a flat list
//! (the fast path of `@each(@sum, l)`, which TPC-H runs on millions of cells).
//!
//! `@sum` of integers (bool included) is i64 with wrapping overflow, of floats f64 summed in
//! order (deterministic); `@avg` is f64; `@min`/`@max` keep the type and work on reals,
//! temporal values, chars and strings (by string order). `@count` is the length as i64
//! (cells of a list, rows of an enum).
//!
//! Reductions of no elements: a reduction always gives one element (its shape is known
//! statically, which kernel fusion relies on), so HorseIR cannot give SQL's NULL. Where an
//! identity exists it is the answer: `@count` of nothing is 0 and `@sum` is 0 (HorsePower's
//! initial value; SQL's `COALESCE(SUM(x), 0)`). `@avg`, `@min` and `@max` of nothing have no
//! value: they are an error naming the builtin, never a sentinel (`i64::MIN`, `inf`, `NaN`)
//! standing for a value that does not exist.

use std::sync::Arc;

use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::value::{Strings, Value, Vector};

/// Reduces a whole value to a length-1 vector (see the module notes for no elements).
pub(crate) fn reduce(b: Builtin, value: &Value) -> Result<Vector> {
    if b == Builtin::Count {
        return Ok(Vector::from_i64s(vec![value.len() as i64]));
    }
    let v = super::as_vector(value)?;
    reduce_segments(b, &v, &[0, v.len()])
}

/// The elements of segment `i` of `v` (`offsets` as a flat list's).
fn segment<'a, T>(v: &'a [T], offsets: &[usize], i: usize) -> Result<&'a [T]> {
    let range = offsets.get(i).copied().zip(offsets.get(i + 1).copied());
    match range.and_then(|(s, e)| v.get(s..e)) {
        Some(cell) => Ok(cell),
        None => bail!("list offsets do not match its {} values", v.len()),
    }
}

fn segments<T, R>(v: &[T], offsets: &[usize], f: impl Fn(&[T]) -> Result<R>) -> Result<Vec<R>> {
    let cells = offsets.len().saturating_sub(1);
    let mut out = Vec::with_capacity(cells);
    for i in 0..cells {
        out.push(f(segment(v, offsets, i)?)?);
    }
    Ok(out)
}

fn int_sum<T: Copy + Into<i64>>(cell: &[T]) -> i64 {
    cell.iter().fold(0i64, |acc, &x| acc.wrapping_add(x.into()))
}

fn float_sum<T: Copy + Into<f64>>(cell: &[T]) -> f64 {
    cell.iter().fold(0.0, |acc, &x| acc + x.into())
}

/// The order `@min` and `@max` use: a total order, with every NaN after every number (the
/// order of keys, `runtime/BUILTINS.md`), so the minimum skips NaN (NaN only for a cell of
/// NaNs) and the maximum is NaN when any element is, whatever the elements' order.
trait ExtremeOrder: Copy {
    fn before(self, other: Self) -> bool;
}

macro_rules! ordered_extreme {
    ($($t:ty),*) => {$(
        impl ExtremeOrder for $t {
            fn before(self, other: Self) -> bool { self < other }
        }
    )*};
}
ordered_extreme!(bool, i8, i16, i32, i64, u8, u32);

macro_rules! float_extreme {
    ($($t:ty),*) => {$(
        impl ExtremeOrder for $t {
            fn before(self, other: Self) -> bool {
                !self.is_nan() && (other.is_nan() || self < other)
            }
        }
    )*};
}
float_extreme!(f32, f64);

/// Minimum or maximum of a cell; no elements is an error, never a sentinel.
fn extreme<T: ExtremeOrder>(cell: &[T], max: bool) -> Result<T> {
    let Some((&first, rest)) = cell.split_first() else {
        let what = if max { "maximum" } else { "minimum" };
        return Err(RuntimeError::new(format!("no {what} of no elements")));
    };
    Ok(rest.iter().fold(first, |best, &x| {
        if (max && best.before(x)) || (!max && x.before(best)) {
            x
        } else {
            best
        }
    }))
}

/// Reduces each segment `offsets[i]..offsets[i+1]` of `v`: one result element per segment.
pub(crate) fn reduce_segments(b: Builtin, v: &Vector, offsets: &[usize]) -> Result<Vector> {
    let ty = v.ty();
    match b {
        Builtin::Count => {
            let counts = segments(&vec![(); v.len()], offsets, |c| Ok(c.len() as i64))?;
            Ok(Vector::from_i64s(counts))
        }
        Builtin::Sum => Ok(match v {
            Vector::Bool(x) => Vector::from_i64s(segments(x, offsets, |c| {
                Ok(c.iter().filter(|&&e| e).count() as i64)
            })?),
            Vector::I8(x) => Vector::from_i64s(segments(x, offsets, |c| Ok(int_sum(c)))?),
            Vector::I16(x) => Vector::from_i64s(segments(x, offsets, |c| Ok(int_sum(c)))?),
            Vector::I32(x) => Vector::from_i64s(segments(x, offsets, |c| Ok(int_sum(c)))?),
            Vector::I64(x) => Vector::from_i64s(segments(x, offsets, |c| Ok(int_sum(c)))?),
            Vector::F32(x) => Vector::from_f64s(segments(x, offsets, |c| Ok(float_sum(c)))?),
            Vector::F64(x) => Vector::from_f64s(segments(x, offsets, |c| Ok(float_sum(c)))?),
            _ => bail!("cannot sum {ty}"),
        }),
        Builtin::Avg => {
            let sums = reduce_segments(Builtin::Sum, v, offsets)?
                .to_f64s()
                .unwrap_or_default();
            let counts = segments(&vec![(); v.len()], offsets, |c| {
                if c.is_empty() {
                    bail!("no average of no elements");
                }
                Ok(c.len() as f64)
            })?;
            Ok(Vector::from_f64s(
                sums.iter().zip(&counts).map(|(s, n)| s / n).collect(),
            ))
        }
        Builtin::Min | Builtin::Max => {
            let max = b == Builtin::Max;
            macro_rules! pick {
                ($x:expr) => {
                    Arc::new(segments($x, offsets, |c| extreme(c, max))?)
                };
            }
            Ok(match v {
                Vector::Bool(x) => Vector::Bool(pick!(x)),
                Vector::I8(x) => Vector::I8(pick!(x)),
                Vector::I16(x) => Vector::I16(pick!(x)),
                Vector::I32(x) => Vector::I32(pick!(x)),
                Vector::I64(x) => Vector::I64(pick!(x)),
                Vector::F32(x) => Vector::F32(pick!(x)),
                Vector::F64(x) => Vector::F64(pick!(x)),
                Vector::Char(x) => Vector::Char(pick!(x)),
                Vector::Month(x) => Vector::Month(pick!(x)),
                Vector::Date(x) => Vector::Date(pick!(x)),
                Vector::Minute(x) => Vector::Minute(pick!(x)),
                Vector::Second(x) => Vector::Second(pick!(x)),
                Vector::Time(x) => Vector::Time(pick!(x)),
                Vector::Dt(x) => Vector::Dt(pick!(x)),
                Vector::Sym(s) => Vector::Sym(extreme_strings(s, offsets, max)?),
                Vector::Str(s) => Vector::Str(extreme_strings(s, offsets, max)?),
                Vector::Complex(_) => bail!("complex numbers have no order"),
            })
        }
        other => bail!("@{other} is not a reduction"),
    }
}

/// Codes are in string order, so the extreme code is the extreme string.
fn extreme_strings(s: &Strings, offsets: &[usize], max: bool) -> Result<Strings> {
    Ok(Strings {
        dict: s.dict.clone(),
        codes: Arc::new(segments(&s.codes, offsets, |c| extreme(c, max))?),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;

    #[test]
    fn sums_widen_to_i64_or_f64() {
        assert_eq!(run(B::Sum, &[i32s(&[1, 2, 3])]).unwrap(), i64s(&[6]));
        assert_eq!(run(B::Sum, &[bools(&[1, 0, 1])]).unwrap(), i64s(&[2]));
        assert_eq!(run(B::Sum, &[f64s(&[0.5, 0.25])]).unwrap(), f64s(&[0.75]));
        assert!(run(B::Sum, &[syms(&[])]).is_err());
        assert!(run(B::Sum, &[syms(&["a"])]).is_err());
    }

    #[test]
    fn avg_count_min_max() {
        assert_eq!(run(B::Avg, &[i32s(&[1, 2])]).unwrap(), f64s(&[1.5]));
        assert_eq!(run(B::Count, &[i32s(&[1, 2])]).unwrap(), i64s(&[2]));
        assert_eq!(run(B::Min, &[i32s(&[4, 9, 2])]).unwrap(), i32s(&[2]));
        assert_eq!(run(B::Max, &[dates(&[4, 9, 2])]).unwrap(), dates(&[9]));
        assert_eq!(
            texts(&run(B::Max, &[syms(&["b", "c", "a"])]).unwrap()),
            ["c"]
        );
    }

    #[test]
    fn count_and_sum_of_no_elements_are_their_identity() {
        assert_eq!(run(B::Count, &[i64s(&[])]).unwrap(), i64s(&[0]));
        assert_eq!(run(B::Sum, &[i64s(&[])]).unwrap(), i64s(&[0]));
        assert_eq!(run(B::Sum, &[i32s(&[])]).unwrap(), i64s(&[0]));
        assert_eq!(run(B::Sum, &[f64s(&[])]).unwrap(), f64s(&[0.0]));
    }

    #[test]
    fn min_skips_nan_and_max_of_anything_with_a_nan_is_nan_in_any_order() {
        let nan = f64::NAN;
        for cell in [[nan, 1.0, 3.0], [1.0, nan, 3.0], [3.0, 1.0, nan]] {
            assert_eq!(run(B::Min, &[f64s(&cell)]).unwrap(), f64s(&[1.0]));
            let max = run(B::Max, &[f64s(&cell)]).unwrap();
            assert!(
                matches!(&max, crate::value::Value::Vector(crate::value::Vector::F64(v)) if v[0].is_nan())
            );
        }
        let all_nan = run(B::Min, &[f64s(&[nan, nan])]).unwrap();
        assert!(
            matches!(&all_nan, crate::value::Value::Vector(crate::value::Vector::F64(v)) if v[0].is_nan())
        );
    }

    #[test]
    fn avg_min_and_max_of_no_elements_are_errors_not_sentinels() {
        let max = run(B::Max, &[i64s(&[])]).unwrap_err();
        assert_eq!(max.message, "@max: no maximum of no elements");
        let min = run(B::Min, &[f64s(&[])]).unwrap_err();
        assert_eq!(min.message, "@min: no minimum of no elements");
        let avg = run(B::Avg, &[i32s(&[])]).unwrap_err();
        assert_eq!(avg.message, "@avg: no average of no elements");
        assert!(run(B::Min, &[dates(&[])]).is_err());
        assert!(run(B::Max, &[syms(&[])]).is_err());
        let l = list(vec![i64s(&[3, 1]), i64s(&[])]);
        let sums = run_with(B::Each, &[B::Sum], std::slice::from_ref(&l)).unwrap();
        assert_eq!(cells(&sums), [i64s(&[4]), i64s(&[0])]);
        assert!(run_with(B::Each, &[B::Max], &[l]).is_err());
    }
}
