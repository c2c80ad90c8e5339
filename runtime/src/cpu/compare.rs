//! Comparisons: `@lt @gt @leq @geq @eq @neq`, element-wise, giving bool.
//!
//! Reals compare after numeric promotion (an i32 with an f64 as f64); temporal values only
//! with the same temporal type; `char` with `char`; strings (`sym` and `str`, mixed freely)
//! by string order: codes directly when both share a dictionary, else through a merged one.

use std::sync::Arc;

use super::elementwise::zip_with;
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::types::Type;
use crate::value::{StrDict, Vector};
use crate::value_ops::gather_codes;

/// The comparison `b` on every pair (broadcasting a length-1 side).
fn compare_slices<T: PartialOrd + Copy>(b: Builtin, x: &[T], y: &[T]) -> Result<Vec<bool>> {
    match b {
        Builtin::Lt => zip_with(x, y, |p, q| p < q),
        Builtin::Gt => zip_with(x, y, |p, q| p > q),
        Builtin::Leq => zip_with(x, y, |p, q| p <= q),
        Builtin::Geq => zip_with(x, y, |p, q| p >= q),
        Builtin::Eq => zip_with(x, y, |p, q| p == q),
        Builtin::Neq => zip_with(x, y, |p, q| p != q),
        other => bail!("@{other} is not a comparison"),
    }
}

/// Evaluates a comparison builtin.
pub(crate) fn compare(b: Builtin, x: &Vector, y: &Vector) -> Result<Vector> {
    let (tx, ty) = (x.ty(), y.ty());
    let result = if let Some(common) = Type::promote(&tx, &ty) {
        let (x, y) = (x.cast_real(&common)?, y.cast_real(&common)?);
        match (&x, &y) {
            (Vector::Bool(a), Vector::Bool(c)) => compare_slices(b, a, c)?,
            (Vector::I8(a), Vector::I8(c)) => compare_slices(b, a, c)?,
            (Vector::I16(a), Vector::I16(c)) => compare_slices(b, a, c)?,
            (Vector::I32(a), Vector::I32(c)) => compare_slices(b, a, c)?,
            (Vector::I64(a), Vector::I64(c)) => compare_slices(b, a, c)?,
            (Vector::F32(a), Vector::F32(c)) => compare_slices(b, a, c)?,
            (Vector::F64(a), Vector::F64(c)) => compare_slices(b, a, c)?,
            _ => bail!("cannot compare {tx} with {ty}"),
        }
    } else {
        match (x, y) {
            (Vector::Char(a), Vector::Char(c)) => compare_slices(b, a, c)?,
            (Vector::Month(a), Vector::Month(c))
            | (Vector::Date(a), Vector::Date(c))
            | (Vector::Minute(a), Vector::Minute(c))
            | (Vector::Second(a), Vector::Second(c))
            | (Vector::Time(a), Vector::Time(c)) => compare_slices(b, a, c)?,
            (Vector::Dt(a), Vector::Dt(c)) => compare_slices(b, a, c)?,
            (Vector::Sym(a) | Vector::Str(a), Vector::Sym(c) | Vector::Str(c)) => {
                if Arc::ptr_eq(&a.dict, &c.dict) {
                    compare_slices(b, &a.codes, &c.codes)?
                } else {
                    let merge = StrDict::merge(&[&a.dict, &c.dict]);
                    let ca = gather_codes(&merge.maps[0], &a.codes)?;
                    let cc = gather_codes(&merge.maps[1], &c.codes)?;
                    compare_slices(b, &ca, &cc)?
                }
            }
            _ => bail!("cannot compare {tx} with {ty}"),
        }
    };
    Ok(Vector::from_bools(result))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;

    #[test]
    fn numbers_compare_after_promotion() {
        assert_eq!(
            run(B::Lt, &[i32s(&[1, 2, 3]), f64s(&[2.0])]).unwrap(),
            bools(&[1, 0, 0])
        );
        assert_eq!(
            run(B::Geq, &[i64s(&[5]), i32s(&[4, 5, 6])]).unwrap(),
            bools(&[1, 1, 0])
        );
        assert_eq!(
            run(B::Neq, &[bools(&[1, 0]), bools(&[1, 1])]).unwrap(),
            bools(&[0, 1])
        );
        assert_eq!(run(B::Eq, &[i64s(&[]), i64s(&[])]).unwrap(), bools(&[]));
    }

    #[test]
    fn dates_compare_with_dates_only() {
        assert_eq!(
            run(B::Leq, &[dates(&[1, 2, 3]), dates(&[2])]).unwrap(),
            bools(&[1, 1, 0])
        );
        assert!(run(B::Lt, &[dates(&[1]), i32s(&[2])]).is_err());
    }

    #[test]
    fn strings_compare_by_text_across_dictionaries() {
        let col = syms(&["MAIL", "SHIP", "AIR", "MAIL"]);
        assert_eq!(
            run(B::Eq, &[col.clone(), syms(&["MAIL"])]).unwrap(),
            bools(&[1, 0, 0, 1])
        );
        assert_eq!(
            run(B::Eq, &[col.clone(), syms(&["RAIL"])]).unwrap(),
            bools(&[0, 0, 0, 0])
        );
        // "MAIL" < "MZ" < "SHIP" although "MZ" is not in the column's dictionary.
        assert_eq!(
            run(B::Lt, &[col.clone(), strs(&["MZ"])]).unwrap(),
            bools(&[1, 0, 1, 1])
        );
        assert_eq!(
            run(B::Gt, &[col.clone(), col]).unwrap(),
            bools(&[0, 0, 0, 0])
        );
        assert_eq!(
            run(B::Eq, &[chars("ab"), chars("b")]).unwrap(),
            bools(&[0, 1])
        );
        assert!(run(B::Eq, &[syms(&["a"]), i64s(&[1])]).is_err());
    }

    #[test]
    fn mismatched_lengths_are_errors() {
        let err = run(B::Eq, &[i64s(&[1, 2]), i64s(&[1, 2, 3])]).unwrap_err();
        assert_eq!(err.message, "@eq: length mismatch (2 vs 3)");
    }
}
