//! `@group(k)`: `k` a vector or a list of equally long columns.
//!
//! Returns a dict whose keys are the i64 position of the first row of each group and whose
//! values are a flat list with one i64 vector of row positions (ascending) per group. Groups
//! come in ascending order of their key values (strings by string order, first column most
//! significant), which is the order rNdN's sort-based group produces; rows are assigned to
//! groups by hashing, so the cost is linear in the rows plus a sort of the distinct keys.

use std::sync::Arc;

use super::keys::{column_keys, common_rows, compare_rows, dense_ids, key_columns};
use super::reduce::reduce_segments;
use crate::args::group::{check_value_lengths, group_aggregate_ops, Reduction};
use crate::args::Args;
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::value::{Dict, List, Value, Vector};

/// Evaluates `@group`.
pub(crate) fn group(k: &Value) -> Result<Value> {
    let columns = key_columns(k)?;
    if columns.is_empty() {
        bail!("no key columns to group by");
    }
    let rows = common_rows(&columns)?;
    let keys = columns
        .iter()
        .map(|c| column_keys(c))
        .collect::<Result<Vec<_>>>()?;
    let (ids, count) = dense_ids(&keys, rows);

    // The first row of each group: ids are numbered in order of first appearance.
    let mut first_row = Vec::with_capacity(count);
    for (row, &id) in ids.iter().enumerate() {
        if id as usize == first_row.len() {
            first_row.push(row);
        }
    }
    // Groups in key order; keys of different groups differ, so an unstable sort is exact.
    let mut by_key: Vec<usize> = (0..count).collect();
    by_key.sort_unstable_by(|&a, &b| compare_rows(&keys, first_row[a], first_row[b]));
    let mut rank = vec![0usize; count];
    for (r, &g) in by_key.iter().enumerate() {
        rank[g] = r;
    }

    // Counting sort of the rows by group rank keeps rows ascending within each group.
    let mut offsets = vec![0usize; count + 1];
    for &id in &ids {
        offsets[rank[id as usize] + 1] += 1;
    }
    for g in 0..count {
        offsets[g + 1] += offsets[g];
    }
    let mut next = offsets.clone();
    let mut positions = vec![0i64; rows];
    for (row, &id) in ids.iter().enumerate() {
        let slot = &mut next[rank[id as usize]];
        positions[*slot] = row as i64;
        *slot += 1;
    }
    let group_keys: Vec<i64> = by_key.iter().map(|&g| first_row[g] as i64).collect();
    Ok(Value::Dict(Dict {
        keys: Box::new(Value::from_i64s(group_keys)),
        values: Box::new(Value::List(List::Flat {
            values: Vector::I64(Arc::new(positions)),
            offsets: Arc::new(offsets),
        })),
    }))
}

/// Evaluates `@group_aggregate(k, ops, x1, …, xn)` the unfused way: `@group(k)`, then each
/// reduction over each group's rows (ascending), so its sums add in the order the CPU's
/// `@each(@sum, @each_right(@index, x, rows))` adds them.
pub(crate) fn group_aggregate(args: &Args<'_, '_>) -> Result<Value> {
    let aggregates = group_aggregate_ops(args)?;
    let Value::Dict(groups) = group(args.value(0)?)? else {
        bail!("@group gave no dictionary");
    };
    let Value::List(List::Flat {
        values: Vector::I64(positions),
        offsets,
    }) = &*groups.values
    else {
        bail!("@group gave no flat list of rows");
    };
    check_value_lengths(args, &aggregates, positions.len())?;
    let mut cells = Vec::with_capacity(aggregates.len() + 1);
    cells.push((*groups.keys).clone());
    for aggregate in &aggregates {
        let result = match aggregate.value {
            None => reduce_segments(
                Builtin::Count,
                &Vector::from_i64s(positions.to_vec()),
                offsets,
            )?,
            Some(i) => {
                let gathered = args.vector(i)?.gather(positions)?;
                let b = match aggregate.reduction {
                    Reduction::Sum => Builtin::Sum,
                    Reduction::Avg => Builtin::Avg,
                    Reduction::Len => Builtin::Count,
                };
                reduce_segments(b, &gathered, offsets)?
            }
        };
        cells.push(Value::Vector(result));
    }
    Ok(Value::List(List::Mixed(Arc::new(cells))))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::Value;

    fn parts(d: &Value) -> (Value, Vec<Value>) {
        match d {
            Value::Dict(d) => ((*d.keys).clone(), cells(&d.values)),
            other => panic!("not a dict: {other:?}"),
        }
    }

    #[test]
    fn groups_come_in_key_order_with_first_rows_as_keys() {
        let (keys, groups) = parts(&run(B::Group, &[i32s(&[30, 10, 30, 20, 10])]).unwrap());
        assert_eq!(keys, i64s(&[1, 3, 0]));
        assert_eq!(groups, vec![i64s(&[1, 4]), i64s(&[3]), i64s(&[0, 2])]);
    }

    #[test]
    fn multi_column_keys_and_strings() {
        let k = list(vec![chars("NRAN"), syms(&["F", "F", "F", "O"])]);
        let (keys, groups) = parts(&run(B::Group, &[k]).unwrap());
        // (A,F) < (N,F) < (N,O) < (R,F)
        assert_eq!(keys, i64s(&[2, 0, 3, 1]));
        assert_eq!(groups, vec![i64s(&[2]), i64s(&[0]), i64s(&[3]), i64s(&[1])]);
        let single = list(vec![i64s(&[5, 5])]);
        assert_eq!(
            parts(&run(B::Group, &[single]).unwrap()).1,
            vec![i64s(&[0, 1])]
        );
    }

    #[test]
    fn all_equal_and_empty_inputs() {
        let (keys, groups) = parts(&run(B::Group, &[syms(&["x", "x", "x"])]).unwrap());
        assert_eq!((keys, groups), (i64s(&[0]), vec![i64s(&[0, 1, 2])]));
        let (keys, groups) = parts(&run(B::Group, &[i64s(&[])]).unwrap());
        assert_eq!((keys, groups.len()), (i64s(&[]), 0));
        assert!(run(B::Group, &[list(vec![i64s(&[1]), i64s(&[1, 2])])]).is_err());
    }

    #[test]
    fn group_aggregate_equals_the_unfused_reductions() {
        let k = list(vec![chars("NRNAR"), chars("FFOFF")]);
        let ops = syms(&["sum", "avg", "len", "sum"]);
        let x = f64s(&[1.0, 2.0, 4.0, 8.0, 16.0]);
        let y = i32s(&[1, 2, 3, 4, 5]);
        let result = run(B::GroupAggregate, &[k, ops, x.clone(), x, y]).unwrap();
        // (A,F) < (N,F) < (N,O) < (R,F)
        assert_eq!(
            cells(&result),
            vec![
                i64s(&[3, 0, 2, 1]),
                f64s(&[8.0, 1.0, 4.0, 18.0]),
                f64s(&[8.0, 1.0, 4.0, 9.0]),
                i64s(&[1, 1, 1, 2]),
                i64s(&[4, 1, 3, 7]),
            ]
        );
    }

    #[test]
    fn group_aggregate_checks_its_arguments() {
        let k = i32s(&[1, 1, 2]);
        let err = |args: &[Value]| run(B::GroupAggregate, args).unwrap_err().message;
        assert!(err(&[k.clone(), syms(&["sum"])]).contains("no value column"));
        assert!(err(&[k.clone(), syms(&["len"]), i32s(&[1, 2, 3])]).contains("value column(s)"));
        assert!(err(&[k.clone(), syms(&["max"]), i32s(&[1, 2, 3])]).contains("unknown reduction"));
        assert!(err(&[k.clone(), syms(&["sum"]), i32s(&[1, 2])]).contains("2 values for 3"));
        assert!(err(&[k, syms(&["sum"]), syms(&["a", "b", "c"])]).contains("cannot sum sym"));
    }
}
