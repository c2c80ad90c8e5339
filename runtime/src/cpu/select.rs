//! Selection and indexing: `@compress @where @index @index_a @index_of @vector @append
//! @member @unique @reverse @take @drop @range`.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::keys::{
    column_keys, common_rows, dense_ids, key_columns, min_span, paired_keys, table_limit,
};
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::sizes::{checked_count, element_bytes, try_vec_with_capacity};
use crate::types::Type;
use crate::value::{Enumeration, List, StrDict, Strings, Value, Vector};

fn mask_of(mask: &Vector) -> Result<&[bool]> {
    mask.as_bools().ok_or_else(|| {
        crate::error::RuntimeError::new(format!("the mask must be bool, got {}", mask.ty()))
    })
}

fn integers(v: &Vector) -> Result<std::borrow::Cow<'_, [i64]>> {
    v.to_i64s().ok_or_else(|| {
        crate::error::RuntimeError::new(format!("expected integer indices, got {}", v.ty()))
    })
}

/// A single non-negative integer (a length or a count).
/// The count of `@vector`/`@range`: one integer, not negative, and `n` elements of
/// `element_bytes` bytes must fit in memory (checked before anything is allocated).
fn count_of(v: &Vector, element_bytes: u64) -> Result<usize> {
    match (v.len(), v.integer_at(0)) {
        (1, Some(n)) => checked_count(n, element_bytes)
            .map_err(|e| crate::error::RuntimeError::new(format!("cannot make {n} elements: {e}"))),
        _ => bail!(
            "expected one integer, got {} element(s) of {}",
            v.len(),
            v.ty()
        ),
    }
}

/// `@compress(mask, x)`: the elements (or cells, or enum rows) of `x` where `mask` holds.
pub(crate) fn compress(mask: &Vector, x: &Value) -> Result<Value> {
    let mask = mask_of(mask)?;
    match x {
        Value::Vector(v) => Ok(Value::Vector(v.compress(mask)?)),
        Value::Enum(e) => {
            let index = Vector::I64(e.index.clone()).compress(mask)?;
            Ok(Value::Enum(Enumeration {
                domain: e.domain.clone(),
                index: Arc::new(index.as_i64s().unwrap_or_default().to_vec()),
            }))
        }
        Value::List(l) => {
            if mask.len() != l.len() {
                bail!("length mismatch (mask {} vs {} cells)", mask.len(), l.len());
            }
            let kept = l
                .cells()
                .into_iter()
                .zip(mask)
                .filter(|(_, &m)| m)
                .map(|(c, _)| c);
            Ok(Value::List(List::from_cells(kept.collect())))
        }
        other => bail!("cannot compress a {}", other.ty()),
    }
}

/// `@where(mask)`: i64 positions where `mask` is true.
pub(crate) fn where_true(mask: &Vector) -> Result<Value> {
    let mask = mask_of(mask)?;
    let positions = mask
        .iter()
        .enumerate()
        .filter(|(_, &m)| m)
        .map(|(i, _)| i as i64);
    Ok(Value::from_i64s(positions.collect()))
}

/// `@index(x, i)`: gathers a vector or enum; on a list, one index takes that cell and
/// several give a list of those cells.
pub(crate) fn index(x: &Value, i: &Vector) -> Result<Value> {
    let idx = integers(i)?;
    match x {
        Value::Vector(v) => Ok(Value::Vector(v.gather(&idx)?)),
        Value::Enum(e) => {
            let index = crate::value_ops::gather_slice(&e.index, &idx)?;
            Ok(Value::Enum(Enumeration {
                domain: e.domain.clone(),
                index: Arc::new(index),
            }))
        }
        Value::List(l) => {
            let cell = |k: i64| {
                usize::try_from(k)
                    .ok()
                    .and_then(|k| l.cell(k))
                    .ok_or_else(|| {
                        crate::error::RuntimeError::new(format!(
                            "cell {k} out of range for a list of {}",
                            l.len()
                        ))
                    })
            };
            if let [k] = idx.as_ref() {
                cell(*k)
            } else {
                let cells = idx.iter().map(|&k| cell(k)).collect::<Result<Vec<_>>>()?;
                Ok(Value::List(List::from_cells(cells)))
            }
        }
        other => bail!("cannot index a {}", other.ty()),
    }
}

fn scatter<T: Copy>(x: &[T], idx: &[i64], v: &[T]) -> Result<Vec<T>> {
    if v.len() != 1 && v.len() != idx.len() {
        bail!(
            "length mismatch ({} indices vs {} values)",
            idx.len(),
            v.len()
        );
    }
    let mut out = x.to_vec();
    for (j, &i) in idx.iter().enumerate() {
        let value = if v.len() == 1 { v[0] } else { v[j] };
        match usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
            Some(slot) => *slot = value,
            None => bail!("index {i} out of range for length {}", x.len()),
        }
    }
    Ok(out)
}

/// `@index_a(x, i, v)`: a copy of `x` with `x[i[j]] = v[j]` (`v` may be one value). A real
/// `v` is converted to `x`'s type; strings are re-coded into a merged dictionary.
pub(crate) fn index_assign(x: &Vector, i: &Vector, v: &Vector) -> Result<Value> {
    let idx = integers(i)?;
    let v = if x.ty().is_real() && v.ty().is_real() {
        v.cast_real(&x.ty())?
    } else {
        v.clone()
    };
    macro_rules! same {
        ($($variant:ident),*) => {
            match (x, &v) {
                $((Vector::$variant(a), Vector::$variant(b)) => Vector::$variant(Arc::new(scatter(a, &idx, b)?)),)*
                (Vector::Sym(a), Vector::Sym(b)) => Vector::Sym(scatter_strings(a, &idx, b)?),
                (Vector::Str(a), Vector::Str(b)) => Vector::Str(scatter_strings(a, &idx, b)?),
                _ => bail!("cannot assign {} values into a {} vector", v.ty(), x.ty()),
            }
        };
    }
    Ok(Value::Vector(same!(
        Bool, Char, I8, I16, I32, I64, F32, F64, Complex, Month, Date, Minute, Second, Time, Dt
    )))
}

fn scatter_strings(x: &Strings, idx: &[i64], v: &Strings) -> Result<Strings> {
    let merge = StrDict::merge(&[&x.dict, &v.dict]);
    let (x, v) = (merge.recode(0, x)?, merge.recode(1, v)?);
    Ok(Strings {
        dict: merge.dict,
        codes: Arc::new(scatter(&x.codes, idx, &v.codes)?),
    })
}

/// `@index_of(x, y)`: for each element of `y`, the position of its first occurrence in `x`,
/// or `len(x)` when absent.
pub(crate) fn index_of(x: &Vector, y: &Vector) -> Result<Value> {
    let (kx, ky) = paired_keys(x, y)?;
    let mut first: FxHashMap<u64, i64> = FxHashMap::default();
    for (pos, &k) in kx.iter().enumerate().rev() {
        first.insert(k, pos as i64);
    }
    let missing = x.len() as i64;
    Ok(Value::from_i64s(
        ky.iter()
            .map(|k| first.get(k).copied().unwrap_or(missing))
            .collect(),
    ))
}

/// `@vector(n, v)`: `n` elements taken cyclically from `v` (one value repeated, usually).
pub(crate) fn vector(n: &Vector, v: &Value) -> Result<Value> {
    let element = match v {
        Value::Vector(v) => element_bytes(&v.ty()),
        other => element_bytes(&other.ty()),
    };
    let n = count_of(n, element)?;
    match v {
        Value::Vector(v) => Ok(Value::Vector(v.cycle_to(n)?)),
        Value::List(l) => {
            let cells = l.cells();
            if cells.is_empty() && n > 0 {
                bail!("cannot fill {n} cells from an empty list");
            }
            Ok(Value::List(List::from_cells(
                cells.iter().cycle().take(n).cloned().collect(),
            )))
        }
        other => bail!("cannot build a vector from a {}", other.ty()),
    }
}

/// `@append(x, y)`: vectors of one type (reals are promoted, strings re-coded), or lists
/// (cells of both; a non-list operand joins as one cell).
pub(crate) fn append(x: &Value, y: &Value) -> Result<Value> {
    match (x, y) {
        (Value::List(a), Value::List(b)) => {
            let mut cells = a.cells();
            cells.extend(b.cells());
            Ok(Value::List(List::from_cells(cells)))
        }
        (Value::List(a), other) => {
            let mut cells = a.cells();
            cells.push(other.clone());
            Ok(Value::List(List::from_cells(cells)))
        }
        (other, Value::List(b)) => {
            let mut cells = vec![other.clone()];
            cells.extend(b.cells());
            Ok(Value::List(List::from_cells(cells)))
        }
        _ => {
            let (a, b) = (super::as_vector(x)?, super::as_vector(y)?);
            let (a, b) = match Type::promote(&a.ty(), &b.ty()) {
                Some(t) => (a.cast_real(&t)?, b.cast_real(&t)?),
                None => (a.into_owned(), b.into_owned()),
            };
            Ok(Value::Vector(Vector::concat(&[a, b])?))
        }
    }
}

/// `@member(x, y)`: for each element of `x`, whether it occurs in `y`.
pub(crate) fn member(x: &Vector, y: &Vector) -> Result<Value> {
    let (kx, ky) = paired_keys(x, y)?;
    let (min, span) = min_span(&ky);
    if !ky.is_empty() && span < table_limit(kx.len() + ky.len()) {
        // Keys of `y` in a small range: a direct table of present keys.
        let mut present = vec![false; span as usize + 1];
        for &k in &ky {
            present[(k - min) as usize] = true;
        }
        let found = kx.iter().map(|&k| {
            k.checked_sub(min)
                .and_then(|i| present.get(i as usize))
                .copied()
                .unwrap_or(false)
        });
        return Ok(Value::from_bools(found.collect()));
    }
    let set: FxHashSet<u64> = ky.into_iter().collect();
    Ok(Value::from_bools(
        kx.iter().map(|k| set.contains(k)).collect(),
    ))
}

/// `@unique(x)`: i64 positions of the first occurrence of each distinct value (or row of a
/// list of columns), in order of appearance.
pub(crate) fn unique(x: &Value) -> Result<Value> {
    let columns = key_columns(x)?;
    let rows = common_rows(&columns)?;
    let keys = columns
        .iter()
        .map(|c| column_keys(c))
        .collect::<Result<Vec<_>>>()?;
    let (ids, count) = dense_ids(&keys, rows);
    let mut positions = Vec::with_capacity(count);
    for (row, &id) in ids.iter().enumerate() {
        // Ids are numbered by first appearance, so a new id is exactly the next one.
        if id as usize == positions.len() {
            positions.push(row as i64);
        }
    }
    Ok(Value::from_i64s(positions))
}

/// `@reverse(x)`: elements (or cells) in reverse order.
pub(crate) fn reverse(x: &Value) -> Result<Value> {
    match x {
        Value::List(l) => {
            let mut cells = l.cells();
            cells.reverse();
            Ok(Value::List(List::from_cells(cells)))
        }
        other => {
            let v = super::as_vector(other)?;
            let idx: Vec<i64> = (0..v.len() as i64).rev().collect();
            Ok(Value::Vector(v.gather(&idx)?))
        }
    }
}

/// `@take(n, x)` and `@drop(n, x)`: the first `n` elements (last `-n` when negative), or all
/// but those. Taking more than there are gives all of them (HorsePower pads with default
/// values; we do not invent data).
pub(crate) fn take_or_drop(b: Builtin, n: &Vector, x: &Value) -> Result<Value> {
    let range = crate::args::take_or_drop_range(b == Builtin::Take, n, x.len())?;
    match x {
        Value::List(l) => Ok(Value::List(List::from_cells(l.cells()[range].to_vec()))),
        other => Ok(Value::Vector(super::as_vector(other)?.slice(range)?)),
    }
}

/// `@range(n)`: `0, 1, …, n-1` as i64.
pub(crate) fn range(n: &Vector) -> Result<Value> {
    let n = count_of(n, 8)?;
    let mut out = try_vec_with_capacity(n)
        .map_err(|e| crate::error::RuntimeError::new(format!("cannot make {n} elements: {e}")))?;
    out.extend(0..n as i64);
    Ok(Value::from_i64s(out))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::Value;

    #[test]
    fn compress_and_where() {
        assert_eq!(
            run(B::Compress, &[bools(&[1, 0, 1]), i32s(&[1, 2, 3])]).unwrap(),
            i32s(&[1, 3])
        );
        assert_eq!(run(B::Where, &[bools(&[0, 1, 1])]).unwrap(), i64s(&[1, 2]));
        assert_eq!(run(B::Where, &[bools(&[])]).unwrap(), i64s(&[]));
        assert!(run(B::Compress, &[bools(&[1]), i32s(&[1, 2])]).is_err());
        assert!(run(B::Compress, &[i32s(&[1]), i32s(&[1])]).is_err());
    }

    #[test]
    fn index_gathers_and_takes_list_cells() {
        assert_eq!(
            run(B::Index, &[i32s(&[-1, 2, 3]), i64s(&[2, 1])]).unwrap(),
            i32s(&[3, 2])
        );
        let err = run(B::Index, &[i32s(&[1]), i64s(&[1])]).unwrap_err();
        assert_eq!(err.message, "@index: index 1 out of range for length 1");
        let pair = list(vec![i64s(&[0, 1]), i64s(&[5, 6])]);
        assert_eq!(
            run(B::Index, &[pair.clone(), i64s(&[1])]).unwrap(),
            i64s(&[5, 6])
        );
        assert!(run(B::Index, &[pair, i64s(&[2])]).is_err());
    }

    #[test]
    fn index_a_scatters_into_a_copy() {
        let x = i64s(&[0, 0, 0, 0]);
        assert_eq!(
            run(B::IndexA, &[x.clone(), i64s(&[1, 3]), i64s(&[7, 9])]).unwrap(),
            i64s(&[0, 7, 0, 9])
        );
        assert_eq!(
            run(B::IndexA, &[bools(&[1, 1]), i64s(&[0]), bools(&[0])]).unwrap(),
            bools(&[0, 1])
        );
        assert_eq!(
            run(B::IndexA, &[x.clone(), i64s(&[2]), i32s(&[5])]).unwrap(),
            i64s(&[0, 0, 5, 0])
        );
        assert!(run(B::IndexA, &[x.clone(), i64s(&[4]), i64s(&[1])]).is_err());
        assert!(run(B::IndexA, &[x, i64s(&[0, 1]), i64s(&[1, 2, 3])]).is_err());
        let s = run(B::IndexA, &[syms(&["a", "b"]), i64s(&[0]), syms(&["z"])]).unwrap();
        assert_eq!(texts(&s), ["z", "b"]);
    }

    #[test]
    fn member_unique_and_index_of_work_across_dictionaries() {
        let x = syms(&["13", "40", "31"]);
        let y = strs(&["31", "13", "23"]);
        assert_eq!(
            run(B::Member, &[x.clone(), y.clone()]).unwrap(),
            bools(&[1, 0, 1])
        );
        assert_eq!(run(B::IndexOf, &[y, x]).unwrap(), i64s(&[1, 3, 0]));
        assert_eq!(
            run(B::Member, &[i32s(&[1, 5]), i64s(&[5])]).unwrap(),
            bools(&[0, 1])
        );
        let wide = i64s(&[i64::MIN, 0, i64::MAX]);
        assert_eq!(
            run(B::Member, &[i64s(&[0, 1, i64::MAX]), wide]).unwrap(),
            bools(&[1, 0, 1])
        );
        assert_eq!(
            run(B::Member, &[i64s(&[3]), i64s(&[])]).unwrap(),
            bools(&[0])
        );
        assert_eq!(
            run(B::Unique, &[i32s(&[3, 1, 3, 2, 1])]).unwrap(),
            i64s(&[0, 1, 3])
        );
        assert_eq!(run(B::Unique, &[i32s(&[])]).unwrap(), i64s(&[]));
        let rows = list(vec![i32s(&[1, 1, 1]), syms(&["a", "b", "a"])]);
        assert_eq!(run(B::Unique, &[rows]).unwrap(), i64s(&[0, 1]));
    }

    #[test]
    fn vector_append_reverse_take_drop_range() {
        assert_eq!(
            run(B::Vector, &[i64s(&[3]), bools(&[1])]).unwrap(),
            bools(&[1, 1, 1])
        );
        assert_eq!(
            run(B::Vector, &[i32s(&[5]), i32s(&[-1, 2, 3])]).unwrap(),
            i32s(&[-1, 2, 3, -1, 2])
        );
        assert_eq!(
            run(B::Append, &[i32s(&[1]), i64s(&[2])]).unwrap(),
            i64s(&[1, 2])
        );
        assert_eq!(
            texts(&run(B::Append, &[syms(&["b"]), syms(&["a"])]).unwrap()),
            ["b", "a"]
        );
        assert!(run(B::Append, &[syms(&["b"]), i64s(&[1])]).is_err());
        assert_eq!(
            run(B::Reverse, &[i64s(&[1, 2, 3])]).unwrap(),
            i64s(&[3, 2, 1])
        );
        assert_eq!(
            run(B::Take, &[i32s(&[-2]), i64s(&[1, 2, 3])]).unwrap(),
            i64s(&[2, 3])
        );
        assert_eq!(
            run(B::Take, &[i32s(&[9]), i64s(&[1, 2])]).unwrap(),
            i64s(&[1, 2])
        );
        assert_eq!(
            run(B::Drop, &[i32s(&[1]), i64s(&[1, 2, 3])]).unwrap(),
            i64s(&[2, 3])
        );
        assert_eq!(
            run(B::Drop, &[i32s(&[-1]), i64s(&[1, 2, 3])]).unwrap(),
            i64s(&[1, 2])
        );
        assert_eq!(run(B::Range, &[i32s(&[3])]).unwrap(), i64s(&[0, 1, 2]));
        assert!(run(B::Range, &[i32s(&[-1])]).is_err());
        assert_eq!(
            run(B::Len, &[list(vec![i64s(&[1]), i64s(&[])])]).unwrap(),
            i64s(&[2])
        );
        let _ = Value::from_i64s(vec![]);
    }
}
