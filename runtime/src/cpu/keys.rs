//! Row keys: the common machinery of `@group`, `@order`, `@unique`, `@member` and
//! `@join_index`.
//!
//! A column becomes one `u64` per row whose equality is value equality and whose unsigned
//! order is value order: integers and temporal values with the sign bit flipped, floats by the
//! usual order-preserving bit trick, strings by their code in a sorted dictionary (merged
//! first when two columns have different dictionaries). Rows of several columns then get
//! dense ids by hashing pairs (previous id, next column key), never a per-row allocation.

use rustc_hash::FxHashMap;

use crate::bail;
use crate::error::Result;
pub(crate) use crate::keys::{common_rows, domain, key_columns, Domain};
use crate::value::{StrDict, Vector};

const SIGN: u64 = 1 << 63;

fn int_key(x: i64) -> u64 {
    (x as u64) ^ SIGN
}

fn float_key(x: f64) -> u64 {
    // -0.0 equals 0.0, and every NaN is one value (sorting after +inf).
    let x = if x == 0.0 {
        0.0
    } else if x.is_nan() {
        f64::NAN
    } else {
        x
    };
    let bits = x.to_bits();
    if bits & SIGN != 0 {
        !bits
    } else {
        bits | SIGN
    }
}

fn integer_keys(v: &Vector) -> Option<Vec<u64>> {
    Some(match v {
        Vector::Bool(x) => x.iter().map(|&e| u64::from(e)).collect(),
        Vector::Char(x) => x.iter().map(|&e| u64::from(e)).collect(),
        Vector::I8(x) => x.iter().map(|&e| int_key(i64::from(e))).collect(),
        Vector::I16(x) => x.iter().map(|&e| int_key(i64::from(e))).collect(),
        Vector::I32(x) | Vector::Month(x) | Vector::Date(x) => {
            x.iter().map(|&e| int_key(i64::from(e))).collect()
        }
        Vector::Minute(x) | Vector::Second(x) | Vector::Time(x) => {
            x.iter().map(|&e| int_key(i64::from(e))).collect()
        }
        Vector::I64(x) | Vector::Dt(x) => x.iter().map(|&e| int_key(e)).collect(),
        _ => return None,
    })
}

fn float_keys(v: &Vector) -> Option<Vec<u64>> {
    Some(match v {
        Vector::F32(x) => x.iter().map(|&e| float_key(f64::from(e))).collect(),
        Vector::F64(x) => x.iter().map(|&e| float_key(e)).collect(),
        other => other.to_f64s()?.into_iter().map(float_key).collect(),
    })
}

/// Order-preserving keys of one column in its own domain (strings by their own codes).
pub(crate) fn column_keys(v: &Vector) -> Result<Vec<u64>> {
    if let Some(keys) = integer_keys(v) {
        return Ok(keys);
    }
    match v {
        Vector::F32(_) | Vector::F64(_) => float_keys(v).ok_or_else(|| unreachable_type(v)),
        Vector::Sym(s) | Vector::Str(s) => Ok(s.codes.iter().map(|&c| u64::from(c)).collect()),
        other => bail!("cannot use {} values as keys", other.ty()),
    }
}

fn unreachable_type(v: &Vector) -> crate::error::RuntimeError {
    crate::error::RuntimeError::new(format!("cannot use {} values as keys", v.ty()))
}

/// Keys of two columns in one common domain, so that equal keys mean equal values and key
/// order is value order across the two: integers with integers, reals as floats when either
/// is a float, temporal values with the same temporal type, strings (`sym` and `str` alike)
/// through a merged dictionary, chars with chars.
pub(crate) fn paired_keys(a: &Vector, b: &Vector) -> Result<(Vec<u64>, Vec<u64>)> {
    let (da, db) = (domain(a), domain(b));
    match (da, db) {
        (Domain::Integer, Domain::Integer) | (Domain::Other, Domain::Other)
            if da == Domain::Integer || a.ty() == b.ty() =>
        {
            match (integer_keys(a), integer_keys(b)) {
                (Some(ka), Some(kb)) => Ok((ka, kb)),
                _ => bail!("cannot compare {} with {}", a.ty(), b.ty()),
            }
        }
        (Domain::Integer | Domain::Float, Domain::Integer | Domain::Float) => {
            match (float_keys(a), float_keys(b)) {
                (Some(ka), Some(kb)) => Ok((ka, kb)),
                _ => bail!("cannot compare {} with {}", a.ty(), b.ty()),
            }
        }
        (Domain::Strings, Domain::Strings) => {
            let (Some(sa), Some(sb)) = (a.as_strings(), b.as_strings()) else {
                bail!("cannot compare {} with {}", a.ty(), b.ty());
            };
            let merge = StrDict::merge(&[&sa.dict, &sb.dict]);
            let recode = |k: usize, codes: &[u32]| -> Result<Vec<u64>> {
                let map = &merge.maps[k];
                codes
                    .iter()
                    .map(|&c| match map.get(c as usize) {
                        Some(&m) => Ok(u64::from(m)),
                        None => bail!("string code {c} outside its dictionary"),
                    })
                    .collect()
            };
            Ok((recode(0, &sa.codes)?, recode(1, &sb.codes)?))
        }
        _ => bail!("cannot compare {} with {}", a.ty(), b.ty()),
    }
}

/// Dense ids for rows given by key columns (all of equal length): equal rows get equal ids,
/// numbered 0, 1, … in order of first appearance. Returns the ids and how many there are.
pub(crate) fn dense_ids(columns: &[Vec<u64>], rows: usize) -> (Vec<u32>, usize) {
    let Some((first, rest)) = columns.split_first() else {
        // No key columns: every row is the same (empty) key.
        return (vec![0; rows], usize::from(rows > 0));
    };
    let (mut ids, mut count) = dense_single(first);
    for column in rest {
        let (min, span) = min_span(column);
        let cells = (count as u64).checked_mul(span.saturating_add(1));
        let mut next = 0u32;
        match cells.filter(|&c| c <= table_limit(rows)) {
            // Few (id, key) combinations: number them through a direct table.
            Some(cells) => {
                let mut table = vec![u32::MAX; cells as usize];
                for (id, &key) in ids.iter_mut().zip(column) {
                    let slot =
                        &mut table[*id as usize * (span as usize + 1) + (key - min) as usize];
                    if *slot == u32::MAX {
                        *slot = next;
                        next += 1;
                    }
                    *id = *slot;
                }
            }
            None => {
                let mut map: FxHashMap<(u32, u64), u32> = FxHashMap::default();
                map.reserve(count.min(rows));
                for (id, &key) in ids.iter_mut().zip(column) {
                    *id = *map.entry((*id, key)).or_insert_with(|| {
                        next += 1;
                        next - 1
                    });
                }
            }
        }
        count = next as usize;
    }
    (ids, count)
}

/// The largest direct table worth allocating for `rows` rows.
pub(crate) fn table_limit(rows: usize) -> u64 {
    (rows as u64).saturating_mul(4).max(1 << 16)
}

/// The minimum of a key column and its span (maximum minus minimum); `(0, 0)` when empty.
pub(crate) fn min_span(keys: &[u64]) -> (u64, u64) {
    let (min, max) = keys
        .iter()
        .fold((u64::MAX, 0u64), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    if keys.is_empty() {
        (0, 0)
    } else {
        (min, max - min)
    }
}

/// Dense ids of one key column; a direct table when the keys span a small range, hashing
/// otherwise.
fn dense_single(keys: &[u64]) -> (Vec<u32>, usize) {
    let mut ids = Vec::with_capacity(keys.len());
    let mut next = 0u32;
    let (min, span) = min_span(keys);
    if !keys.is_empty() && span < table_limit(keys.len()) {
        let mut table = vec![u32::MAX; span as usize + 1];
        for &k in keys {
            let slot = &mut table[(k - min) as usize];
            if *slot == u32::MAX {
                *slot = next;
                next += 1;
            }
            ids.push(*slot);
        }
    } else {
        let mut map: FxHashMap<u64, u32> = FxHashMap::default();
        for &k in keys {
            ids.push(*map.entry(k).or_insert_with(|| {
                next += 1;
                next - 1
            }));
        }
    }
    (ids, next as usize)
}

/// Compares rows `i` and `j` over key columns, first column most significant.
pub(crate) fn compare_rows(columns: &[Vec<u64>], i: usize, j: usize) -> std::cmp::Ordering {
    for column in columns {
        let ord = column[i].cmp(&column[j]);
        if ord != std::cmp::Ordering::Equal {
            return ord;
        }
    }
    std::cmp::Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Strings;
    use std::sync::Arc;

    #[test]
    fn keys_preserve_order_across_signs_and_types() {
        let f = column_keys(&Vector::from_f64s(vec![
            -2.5,
            -0.0,
            0.0,
            1.0,
            f64::INFINITY,
        ]))
        .unwrap();
        assert!(f.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(f[1], f[2]);
        let i = column_keys(&Vector::I32(Arc::new(vec![-5, -1, 0, 7]))).unwrap();
        assert!(i.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn paired_keys_put_mixed_types_in_one_domain() {
        let (a, b) = paired_keys(
            &Vector::I32(Arc::new(vec![1, 2])),
            &Vector::from_i64s(vec![2, 1]),
        )
        .unwrap();
        assert_eq!((a[0], a[1]), (b[1], b[0]));
        let (a, b) = paired_keys(
            &Vector::I32(Arc::new(vec![1])),
            &Vector::from_f64s(vec![1.0]),
        )
        .unwrap();
        assert_eq!(a, b);
        let (a, b) = paired_keys(
            &Vector::Sym(Strings::from_strs(&["x", "b"])),
            &Vector::Str(Strings::from_strs(&["b", "c"])),
        )
        .unwrap();
        assert_eq!(a[1], b[0]);
        assert!(a[0] > b[1]);
        assert!(paired_keys(
            &Vector::Date(Arc::new(vec![1])),
            &Vector::from_i64s(vec![1])
        )
        .is_err());
    }

    #[test]
    fn dense_ids_number_rows_by_first_appearance() {
        let (ids, n) = dense_ids(&[vec![5, 3, 5, 3, 9]], 5);
        assert_eq!((ids, n), (vec![0, 1, 0, 1, 2], 3));
        let (ids, n) = dense_ids(&[vec![1, 1, 2, 1], vec![7, 8, 7, 7]], 4);
        assert_eq!((ids, n), (vec![0, 1, 2, 0], 3));
        let (ids, n) = dense_ids(&[vec![u64::MAX, 0, u64::MAX]], 3);
        assert_eq!((ids, n), (vec![0, 1, 0], 2));
        // Wide second column: hashed pairs instead of a table.
        let (ids, n) = dense_ids(
            &[vec![1, 1, 2, 1], vec![u64::MAX, 0, u64::MAX, u64::MAX]],
            4,
        );
        assert_eq!((ids, n), (vec![0, 1, 2, 0], 3));
        assert_eq!(dense_ids(&[vec![]], 0), (vec![], 0));
    }
}
