//! Relation builtins for Datalog's semi-naive evaluation (the CPU oracle of the GPU library
//! kernels in `gpu/relation.rs`).
//!
//! A relation is a `list<i64>`: one cell per column, all of one length, row `r` the tuple of
//! the cells' `r`-th elements. Tuples order lexicographically, column 0 most significant.
//!
//! - `@tuple_unique(r)`: the distinct tuples of `r`, sorted.
//! - `@tuple_diff(a, b)`: the tuples of `a` not in `b`; both sorted and duplicate-free.
//! - `@tuple_merge(a, b)`: the union of `a` and `b`, sorted and duplicate-free; both sorted
//!   and duplicate-free.
//! - `@sorted_join(probe, build)`: the equi-join of the key columns `probe` with the key
//!   columns `build`, which must be sorted (duplicates allowed): a list of two i64 vectors
//!   `(ip, ib)`, one entry per matching pair, in probe order and then build order (the
//!   layout of `@join_index`).
//!
//! Inputs that break a precondition (unsorted, duplicates, mixed arities) are errors that
//! name the argument and the first offending row; the GPU kernels check the same and fail
//! with the same message ([`not_sorted`]).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::bail;
use crate::error::Result;
use crate::value::{List, Value, Vector};

use super::keys::key_columns;
use super::Args;

/// The columns of a relation argument, each an i64 vector, all of one length.
pub(crate) struct Columns {
    pub columns: Vec<Vec<i64>>,
    pub rows: usize,
}

impl Columns {
    fn compare(&self, i: usize, other: &Columns, j: usize) -> Ordering {
        for (a, b) in self.columns.iter().zip(&other.columns) {
            match a[i].cmp(&b[j]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }

    fn compare_rows(&self, i: usize, j: usize) -> Ordering {
        self.compare(i, self, j)
    }

    fn gather(&self, rows: &[usize]) -> Vec<Vec<i64>> {
        self.columns
            .iter()
            .map(|c| rows.iter().map(|&r| c[r]).collect())
            .collect()
    }
}

/// Argument `i` (0-based) of a relation builtin as i64 columns of one length; at least one
/// column.
pub(crate) fn relation_argument(args: &Args<'_, '_>, i: usize) -> Result<Columns> {
    let value = args.value(i)?;
    let cells = key_columns(value)?;
    if cells.is_empty() {
        bail!("argument {} has no columns", i + 1);
    }
    let rows = cells[0].len();
    let mut columns = Vec::with_capacity(cells.len());
    for (c, cell) in cells.iter().enumerate() {
        let Some(values) = cell.as_i64s() else {
            bail!(
                "argument {}: column {c} is {}, relation columns must be i64",
                i + 1,
                cell.ty()
            );
        };
        if values.len() != rows {
            bail!(
                "argument {}: columns have different lengths ({rows} vs {})",
                i + 1,
                values.len()
            );
        }
        columns.push(values.to_vec());
    }
    Ok(Columns { columns, rows })
}

/// Two relation arguments of one arity.
pub(crate) fn relation_pair(args: &Args<'_, '_>) -> Result<(Columns, Columns)> {
    args.exactly(2)?;
    let a = relation_argument(args, 0)?;
    let b = relation_argument(args, 1)?;
    if a.columns.len() != b.columns.len() {
        bail!(
            "the relations have different arities ({} vs {})",
            a.columns.len(),
            b.columns.len()
        );
    }
    Ok((a, b))
}

/// The error for argument `arg` (0-based) whose row `row` does not come after row `row - 1`.
pub(crate) fn not_sorted(arg: usize, row: usize, strictly: bool) -> String {
    if strictly {
        format!(
            "argument {} is not sorted and duplicate-free (row {row} does not come after row {})",
            arg + 1,
            row - 1
        )
    } else {
        format!(
            "argument {} is not sorted (row {row} comes before row {})",
            arg + 1,
            row - 1
        )
    }
}

/// Fails unless the rows of `r` are in increasing order (strictly: no duplicates).
fn check_sorted(r: &Columns, arg: usize, strictly: bool) -> Result<()> {
    for row in 1..r.rows {
        let order = r.compare_rows(row - 1, row);
        if order == Ordering::Greater || (strictly && order == Ordering::Equal) {
            bail!("{}", not_sorted(arg, row, strictly));
        }
    }
    Ok(())
}

/// A relation value from its columns.
pub(crate) fn relation_value(columns: Vec<Vec<i64>>) -> Value {
    let mut offsets = Vec::with_capacity(columns.len() + 1);
    offsets.push(0);
    let mut values = Vec::with_capacity(columns.iter().map(Vec::len).sum());
    for c in columns {
        values.extend(c);
        offsets.push(values.len());
    }
    Value::List(List::Flat {
        values: Vector::I64(Arc::new(values)),
        offsets: Arc::new(offsets),
    })
}

/// `@tuple_unique(r)`.
pub(crate) fn tuple_unique(args: &Args<'_, '_>) -> Result<Value> {
    args.exactly(1)?;
    let r = relation_argument(args, 0)?;
    let mut rows: Vec<usize> = (0..r.rows).collect();
    rows.sort_unstable_by(|&i, &j| r.compare_rows(i, j));
    rows.dedup_by(|j, i| r.compare_rows(*i, *j) == Ordering::Equal);
    Ok(relation_value(r.gather(&rows)))
}

/// `@tuple_diff(a, b)`.
pub(crate) fn tuple_diff(args: &Args<'_, '_>) -> Result<Value> {
    let (a, b) = relation_pair(args)?;
    check_sorted(&a, 0, true)?;
    check_sorted(&b, 1, true)?;
    let mut kept = Vec::new();
    let mut j = 0;
    for i in 0..a.rows {
        while j < b.rows && b.compare(j, &a, i) == Ordering::Less {
            j += 1;
        }
        if j == b.rows || b.compare(j, &a, i) != Ordering::Equal {
            kept.push(i);
        }
    }
    Ok(relation_value(a.gather(&kept)))
}

/// `@tuple_merge(a, b)`.
pub(crate) fn tuple_merge(args: &Args<'_, '_>) -> Result<Value> {
    let (a, b) = relation_pair(args)?;
    check_sorted(&a, 0, true)?;
    check_sorted(&b, 1, true)?;
    let mut columns: Vec<Vec<i64>> = (0..a.columns.len())
        .map(|_| Vec::with_capacity(a.rows + b.rows))
        .collect();
    let push = |columns: &mut Vec<Vec<i64>>, r: &Columns, row: usize| {
        for (out, c) in columns.iter_mut().zip(&r.columns) {
            out.push(c[row]);
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < a.rows || j < b.rows {
        let order = if i == a.rows {
            Ordering::Greater
        } else if j == b.rows {
            Ordering::Less
        } else {
            a.compare(i, &b, j)
        };
        match order {
            Ordering::Less => {
                push(&mut columns, &a, i);
                i += 1;
            }
            Ordering::Greater => {
                push(&mut columns, &b, j);
                j += 1;
            }
            Ordering::Equal => {
                push(&mut columns, &a, i);
                i += 1;
                j += 1;
            }
        }
    }
    Ok(relation_value(columns))
}

/// `@sorted_join(probe, build)`.
pub(crate) fn sorted_join(args: &Args<'_, '_>) -> Result<Value> {
    let (probe, build) = relation_pair(args)?;
    check_sorted(&build, 1, false)?;
    let (mut ip, mut ib) = (Vec::new(), Vec::new());
    for i in 0..probe.rows {
        let first = partition_point(build.rows, |j| build.compare(j, &probe, i).is_lt());
        let end = partition_point(build.rows, |j| build.compare(j, &probe, i).is_le());
        for j in first..end {
            ip.push(i as i64);
            ib.push(j as i64);
        }
    }
    let n = ip.len();
    ip.extend(ib);
    Ok(Value::List(List::Flat {
        values: Vector::I64(Arc::new(ip)),
        offsets: Arc::new(vec![0, n, 2 * n]),
    }))
}

/// The first index in `0..n` where `before` turns false (`before` true on a prefix).
fn partition_point(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::ArgValue;

    fn rel(columns: &[&[i64]]) -> Value {
        relation_value(columns.iter().map(|c| c.to_vec()).collect())
    }

    fn call(f: fn(&Args<'_, '_>) -> Result<Value>, values: &[Value]) -> Result<Value> {
        let list: Vec<ArgValue<'_>> = values.iter().map(ArgValue::Value).collect();
        f(&Args { list: &list })
    }

    #[test]
    fn tuple_unique_sorts_and_drops_duplicate_tuples() {
        let r = rel(&[&[2, 1, 2, 1, 1], &[5, 7, 5, 6, 7]]);
        assert_eq!(
            call(tuple_unique, &[r]).unwrap(),
            rel(&[&[1, 1, 2], &[6, 7, 5]])
        );
        assert_eq!(
            call(tuple_unique, &[rel(&[&[], &[]])]).unwrap(),
            rel(&[&[], &[]])
        );
    }

    #[test]
    fn tuple_diff_keeps_the_tuples_missing_from_the_second() {
        let a = rel(&[&[1, 1, 2, 3], &[1, 2, 2, 0]]);
        let b = rel(&[&[1, 2, 4], &[2, 2, 0]]);
        assert_eq!(call(tuple_diff, &[a, b]).unwrap(), rel(&[&[1, 3], &[1, 0]]));
    }

    #[test]
    fn tuple_merge_is_the_sorted_union() {
        let a = rel(&[&[1, 3], &[1, 0]]);
        let b = rel(&[&[1, 2, 3], &[2, 2, 0]]);
        assert_eq!(
            call(tuple_merge, &[a, b]).unwrap(),
            rel(&[&[1, 1, 2, 3], &[1, 2, 2, 0]])
        );
    }

    #[test]
    fn unsorted_or_duplicated_inputs_are_errors_naming_the_row() {
        let unsorted = rel(&[&[2, 1]]);
        let sorted = rel(&[&[1]]);
        let e = call(tuple_diff, &[sorted.clone(), unsorted.clone()]).unwrap_err();
        assert_eq!(
            e.message,
            "argument 2 is not sorted and duplicate-free (row 1 does not come after row 0)"
        );
        let e = call(tuple_merge, &[rel(&[&[1, 1]]), sorted.clone()]).unwrap_err();
        assert!(e.message.starts_with("argument 1 is not sorted"));
        let e = call(sorted_join, &[sorted, unsorted]).unwrap_err();
        assert_eq!(
            e.message,
            "argument 2 is not sorted (row 1 comes before row 0)"
        );
    }

    #[test]
    fn sorted_join_pairs_every_probe_row_with_its_equal_build_rows() {
        let probe = rel(&[&[3, 1, 9]]);
        let build = rel(&[&[1, 1, 3, 4]]);
        assert_eq!(
            call(sorted_join, &[probe, build]).unwrap(),
            Value::List(List::Flat {
                values: Vector::I64(Arc::new(vec![0, 1, 1, 2, 0, 1])),
                offsets: Arc::new(vec![0, 3, 6]),
            })
        );
    }

    #[test]
    fn relations_of_other_types_or_arities_are_errors() {
        let e = call(tuple_diff, &[rel(&[&[1], &[2]]), rel(&[&[1]])]).unwrap_err();
        assert_eq!(e.message, "the relations have different arities (2 vs 1)");
        let e = call(tuple_unique, &[Value::from_bools(vec![true])]).unwrap_err();
        assert_eq!(
            e.message,
            "argument 1: column 0 is bool, relation columns must be i64"
        );
    }
}
