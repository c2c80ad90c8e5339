//! `@order(k, dirs)`: the i64 permutation that sorts `k` (a vector or a list of columns, the
//! first most significant); `dirs` holds one bool per column, 1 ascending and 0 descending
//! (one flag applies to every column). The sort is stable: equal rows keep their order.
//! Strings sort by string value (codes of a sorted dictionary).

use rayon::slice::ParallelSliceMut;

use super::keys::{column_keys, common_rows, key_columns, min_span};
use crate::bail;
use crate::error::Result;
use crate::value::{Value, Vector};

/// Evaluates `@order`.
pub(crate) fn order(k: &Value, dirs: &Vector) -> Result<Value> {
    let columns = key_columns(k)?;
    if columns.is_empty() {
        bail!("no key columns to sort by");
    }
    let Some(dirs) = dirs.as_bools() else {
        bail!("the directions must be bool, got {}", dirs.ty());
    };
    if dirs.len() != columns.len() && dirs.len() != 1 {
        bail!(
            "{} direction(s) for {} key column(s)",
            dirs.len(),
            columns.len()
        );
    }
    let rows = common_rows(&columns)?;
    if u32::try_from(rows).is_err() {
        bail!("too many rows to sort ({rows})");
    }
    let mut keys = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        let ascending = dirs.get(i).or(dirs.first()).copied().unwrap_or(true);
        let mut column_keys = column_keys(column)?;
        if !ascending {
            // Keys are order-preserving, so complementing them reverses the order.
            column_keys.iter_mut().for_each(|key| *key = !*key);
        }
        keys.push(column_keys);
    }
    let permutation = sort_rows(keys, rows);
    Ok(Value::from_i64s(permutation))
}

/// Bits needed for the values `0..=span`.
fn bits_for(span: u64) -> u32 {
    64 - span.leading_zeros()
}

/// Replaces keys by their rank among the column's distinct keys (same order, fewer bits).
fn rank_compress(keys: &mut [u64]) {
    let mut distinct = keys.to_vec();
    distinct.par_sort_unstable();
    distinct.dedup();
    keys.iter_mut().for_each(|k| {
        *k = distinct.partition_point(|&d| d < *k) as u64;
    });
}

/// The stable sorting permutation of rows by key columns (first most significant).
///
/// Columns are packed into one u64 per row when their value ranges fit in 64 bits together
/// (rank-compressing wide columns such as floats first), so the sort compares single
/// integers; ties broken by row number make the unstable parallel sort stable. Only when
/// even the ranks do not fit are rows compared column by column, from a row-major copy.
fn sort_rows(mut keys: Vec<Vec<u64>>, rows: usize) -> Vec<i64> {
    let fits = |keys: &[Vec<u64>]| keys.iter().map(|k| bits_for(min_span(k).1)).sum::<u32>() <= 64;
    if keys.len() > 1 && !fits(&keys) {
        for column in keys.iter_mut() {
            if bits_for(min_span(column).1) > 32 {
                rank_compress(column);
            }
        }
        if !fits(&keys) {
            keys.iter_mut().for_each(|c| rank_compress(c));
        }
    }
    if keys.len() == 1 || fits(&keys) {
        let layout: Vec<(u64, u32)> = keys
            .iter()
            .map(|k| {
                let (min, span) = min_span(k);
                (min, bits_for(span))
            })
            .collect();
        let mut pairs: Vec<(u64, u32)> = (0..rows)
            .map(|row| {
                let packed = keys
                    .iter()
                    .zip(&layout)
                    .fold(0u64, |acc, (k, &(min, bits))| {
                        let shifted = if bits >= 64 { 0 } else { acc << bits };
                        shifted | (k[row] - min)
                    });
                (packed, row as u32)
            })
            .collect();
        pairs.par_sort_unstable();
        return pairs.into_iter().map(|(_, i)| i64::from(i)).collect();
    }
    let width = keys.len();
    let mut row_major = vec![0u64; rows * width];
    for (c, column) in keys.iter().enumerate() {
        for (row, &k) in column.iter().enumerate() {
            row_major[row * width + c] = k;
        }
    }
    let mut idx: Vec<u32> = (0..rows as u32).collect();
    idx.par_sort_unstable_by(|&a, &b| {
        let (ra, rb) = (a as usize * width, b as usize * width);
        row_major[ra..ra + width]
            .cmp(&row_major[rb..rb + width])
            .then(a.cmp(&b))
    });
    idx.into_iter().map(i64::from).collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;

    #[test]
    fn sorts_one_column_stably_in_either_direction() {
        assert_eq!(
            run(B::Order, &[i32s(&[3, 1, 2, 1]), bools(&[1])]).unwrap(),
            i64s(&[1, 3, 2, 0])
        );
        assert_eq!(
            run(B::Order, &[i32s(&[3, 1, 2, 1]), bools(&[0])]).unwrap(),
            i64s(&[0, 2, 1, 3])
        );
        assert_eq!(
            run(B::Order, &[f64s(&[0.5, -1.0, 2.0]), bools(&[1])]).unwrap(),
            i64s(&[1, 0, 2])
        );
        assert_eq!(run(B::Order, &[i64s(&[]), bools(&[1])]).unwrap(), i64s(&[]));
        assert_eq!(
            run(B::Order, &[i64s(&[7, 7, 7]), bools(&[0])]).unwrap(),
            i64s(&[0, 1, 2])
        );
    }

    #[test]
    fn sorts_several_columns_with_mixed_directions() {
        let k = list(vec![
            syms(&["b", "a", "b", "a"]),
            f64s(&[1.0, 2.0, 3.0, 1.0]),
        ]);
        assert_eq!(
            run(B::Order, &[k.clone(), bools(&[1, 0])]).unwrap(),
            i64s(&[1, 3, 2, 0])
        );
        assert_eq!(
            run(B::Order, &[k.clone(), bools(&[0, 1])]).unwrap(),
            i64s(&[0, 2, 3, 1])
        );
        assert!(run(B::Order, &[k, bools(&[1, 0, 1])]).is_err());
        assert!(run(B::Order, &[i64s(&[1]), i64s(&[1])]).is_err());
    }

    #[test]
    fn wide_columns_sort_as_well_as_narrow_ones() {
        // Full-range columns are rank-compressed before packing.
        let a = i64s(&[i64::MAX, i64::MIN, 0, i64::MIN]);
        let b = f64s(&[1e300, -1e300, 0.0, -1e300]);
        let c = i64s(&[3, 2, 1, 0]);
        let k = list(vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(
            run(B::Order, &[k, bools(&[1, 1, 1])]).unwrap(),
            i64s(&[3, 1, 2, 0])
        );
        let k = list(vec![b, a, c]);
        assert_eq!(
            run(B::Order, &[k, bools(&[0, 1, 0])]).unwrap(),
            i64s(&[0, 2, 1, 3])
        );
    }

    #[test]
    fn rows_too_wide_to_pack_are_compared_column_by_column() {
        // Nine columns of 256 distinct values need 72 bits: no packing possible.
        let rows = 1000;
        let keys: Vec<Vec<u64>> = (0..9u64)
            .map(|c| {
                (0..rows as u64)
                    .map(|r| (r * (2 * c + 7) + c * 13) % 256)
                    .collect()
            })
            .collect();
        let mut expected: Vec<usize> = (0..rows).collect();
        expected.sort_by(|&a, &b| keys.iter().map(|k| k[a]).cmp(keys.iter().map(|k| k[b])));
        let expected: Vec<i64> = expected.into_iter().map(|i| i as i64).collect();
        assert_eq!(super::sort_rows(keys, rows), expected);
    }
}
