//! Relation builtins for Datalog's semi-naive evaluation (the CPU oracle of the GPU library
//! kernels in `gpu/relation.rs`), on every core (rayon).
//!
//! A relation is a `list<i64>`: one cell per column, all of one length, row `r` the tuple of
//! the cells' `r`-th elements. Tuples order lexicographically, column 0 most significant.
//! Arguments are checked and results shaped by `crate::relation`, shared with the GPU.
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
//!
//! Parallel plans: sorting by rayon's parallel sort; differences, joins and sortedness checks
//! per row in parallel (binary searches into the other relation); the merge split into
//! pieces at splitters of `a` (each piece merges its rows of `a` with the rows of `b` in its
//! key range), concatenated in order.

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::bail;
use crate::error::Result;
use crate::relation::{
    join_batch_rows, join_pairs_value, join_unique_arguments, not_sorted, relation_pair,
    relation_single, relation_value, RelationArgument,
};
use crate::value::Value;

use super::Args;

/// Rows per parallel task: below this a relation is handled on one thread.
const GRAIN: usize = 1 << 14;

/// The host columns of a checked relation argument, all of one length.
pub(crate) struct Columns<'a> {
    pub columns: Vec<&'a [i64]>,
    pub rows: usize,
}

impl<'a> Columns<'a> {
    fn of(r: &'a RelationArgument<'_>) -> Result<Columns<'a>> {
        let Some(columns) = r.host_columns() else {
            bail!("a relation column is on the device where the host needs it");
        };
        Ok(Columns {
            columns,
            rows: r.rows,
        })
    }

    fn compare(&self, i: usize, other: &Columns<'_>, j: usize) -> Ordering {
        for (a, b) in self.columns.iter().zip(&other.columns) {
            match a[i].cmp(&b[j]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }

    /// The first `n` columns.
    fn prefix(&self, n: usize) -> Columns<'a> {
        Columns {
            columns: self.columns[..n].to_vec(),
            rows: self.rows,
        }
    }

    fn compare_rows(&self, i: usize, j: usize) -> Ordering {
        self.compare(i, self, j)
    }

    /// The first row of `self` not before row `j` of `other` (upper: the first after it).
    fn bound(&self, other: &Columns<'_>, j: usize, upper: bool) -> usize {
        partition_point(self.rows, |i| {
            let order = self.compare(i, other, j);
            order.is_lt() || (upper && order.is_eq())
        })
    }

    fn gather(&self, rows: &[usize]) -> Vec<Vec<i64>> {
        self.columns
            .par_iter()
            .map(|c| rows.iter().map(|&r| c[r]).collect())
            .collect()
    }
}

/// Fails unless the rows of `r` are in increasing order (strictly: no duplicates).
fn check_sorted(r: &Columns<'_>, arg: usize, strictly: bool) -> Result<()> {
    let bad = (1..r.rows.max(1))
        .into_par_iter()
        .with_min_len(GRAIN)
        .find_first(|&row| {
            let order = r.compare_rows(row - 1, row);
            order == Ordering::Greater || (strictly && order == Ordering::Equal)
        });
    if let Some(row) = bad {
        bail!("{}", not_sorted(arg, row, strictly));
    }
    Ok(())
}

/// The distinct rows of `r`, sorted: rows of up to four columns sorted as fixed-size arrays
/// (contiguous, so the parallel sort compares in cache), wider ones as row numbers.
fn unique_rows(r: &Columns<'_>) -> Vec<Vec<i64>> {
    fn fixed<const K: usize>(r: &Columns<'_>) -> Vec<Vec<i64>> {
        let mut rows: Vec<[i64; K]> = (0..r.rows)
            .into_par_iter()
            .with_min_len(GRAIN)
            .map(|i| std::array::from_fn(|c| r.columns[c][i]))
            .collect();
        rows.par_sort_unstable();
        rows.dedup();
        (0..K)
            .into_par_iter()
            .map(|c| rows.iter().map(|row| row[c]).collect())
            .collect()
    }
    match r.columns.len() {
        1 => fixed::<1>(r),
        2 => fixed::<2>(r),
        3 => fixed::<3>(r),
        4 => fixed::<4>(r),
        _ => {
            let mut rows: Vec<usize> = (0..r.rows).collect();
            rows.par_sort_unstable_by(|&i, &j| r.compare_rows(i, j));
            rows.dedup_by(|j, i| r.compare_rows(*i, *j) == Ordering::Equal);
            r.gather(&rows)
        }
    }
}

/// `@tuple_unique(r)`.
pub(crate) fn tuple_unique(args: &Args<'_, '_>) -> Result<Value> {
    let r = relation_single(args.list)?;
    Ok(relation_value(unique_rows(&Columns::of(&r)?)))
}

/// The rows of `a` with no equal row in `b` (both sorted), in order.
fn rows_missing_from(a: &Columns<'_>, b: &Columns<'_>) -> Vec<usize> {
    (0..a.rows)
        .into_par_iter()
        .with_min_len(GRAIN)
        .filter(|&i| {
            let at = b.bound(a, i, false);
            at == b.rows || b.compare(at, a, i) != Ordering::Equal
        })
        .collect()
}

/// `@tuple_diff(a, b)`.
pub(crate) fn tuple_diff(args: &Args<'_, '_>) -> Result<Value> {
    let (a, b) = relation_pair(args.list)?;
    let (a, b) = (Columns::of(&a)?, Columns::of(&b)?);
    check_sorted(&a, 0, true)?;
    check_sorted(&b, 1, true)?;
    Ok(relation_value(a.gather(&rows_missing_from(&a, &b))))
}

/// The sorted union of rows `a_rows` of `a` and `b_rows` of `b` (sorted, duplicate-free).
fn merge_piece(
    a: &Columns<'_>,
    a_rows: std::ops::Range<usize>,
    b: &Columns<'_>,
    b_rows: std::ops::Range<usize>,
) -> Vec<Vec<i64>> {
    let mut columns: Vec<Vec<i64>> = (0..a.columns.len())
        .map(|_| Vec::with_capacity(a_rows.len() + b_rows.len()))
        .collect();
    let push = |columns: &mut Vec<Vec<i64>>, r: &Columns<'_>, row: usize| {
        for (out, c) in columns.iter_mut().zip(&r.columns) {
            out.push(c[row]);
        }
    };
    let (mut i, mut j) = (a_rows.start, b_rows.start);
    while i < a_rows.end || j < b_rows.end {
        let order = if i == a_rows.end {
            Ordering::Greater
        } else if j == b_rows.end {
            Ordering::Less
        } else {
            a.compare(i, b, j)
        };
        match order {
            Ordering::Less => {
                push(&mut columns, a, i);
                i += 1;
            }
            Ordering::Greater => {
                push(&mut columns, b, j);
                j += 1;
            }
            Ordering::Equal => {
                push(&mut columns, a, i);
                i += 1;
                j += 1;
            }
        }
    }
    columns
}

/// `@tuple_merge(a, b)`.
pub(crate) fn tuple_merge(args: &Args<'_, '_>) -> Result<Value> {
    let (a, b) = relation_pair(args.list)?;
    let (a, b) = (Columns::of(&a)?, Columns::of(&b)?);
    check_sorted(&a, 0, true)?;
    check_sorted(&b, 1, true)?;
    // Piece p takes the rows of a from splitter p on and the rows of b from the first one
    // not before that splitter: every row lands in exactly one piece, in key order.
    let pieces = (a.rows + b.rows)
        .div_ceil(GRAIN)
        .clamp(1, 4 * rayon::current_num_threads());
    let a_splits: Vec<usize> = (0..=pieces).map(|p| p * a.rows / pieces).collect();
    let b_splits: Vec<usize> = a_splits
        .iter()
        .enumerate()
        .map(|(p, &i)| match p {
            0 => 0,
            _ if p == pieces || i >= a.rows => b.rows,
            _ => b.bound(&a, i, false),
        })
        .collect();
    let parts: Vec<Vec<Vec<i64>>> = (0..pieces)
        .into_par_iter()
        .map(|p| {
            merge_piece(
                &a,
                a_splits[p]..a_splits[p + 1],
                &b,
                b_splits[p]..b_splits[p + 1],
            )
        })
        .collect();
    let columns = (0..a.columns.len())
        .into_par_iter()
        .map(|c| {
            parts
                .iter()
                .flat_map(|part| part[c].iter().copied())
                .collect()
        })
        .collect();
    Ok(relation_value(columns))
}

/// Per row of `probe`, the range of rows of `build` (sorted) with an equal key.
fn join_ranges(probe: &Columns<'_>, build: &Columns<'_>) -> Vec<(usize, usize)> {
    (0..probe.rows)
        .into_par_iter()
        .with_min_len(GRAIN)
        .map(|i| {
            let first = build.bound(probe, i, false);
            let end = if first < build.rows && build.compare(first, probe, i).is_eq() {
                build.bound(probe, i, true)
            } else {
                first
            };
            (first, end)
        })
        .collect()
}

/// `@sorted_join(probe, build)`.
pub(crate) fn sorted_join(args: &Args<'_, '_>) -> Result<Value> {
    let (probe, build) = relation_pair(args.list)?;
    let (probe, build) = (Columns::of(&probe)?, Columns::of(&build)?);
    check_sorted(&build, 1, false)?;
    let ranges = join_ranges(&probe, &build);
    let mut offsets = Vec::with_capacity(ranges.len() + 1);
    let mut total = 0usize;
    offsets.push(0);
    for &(first, end) in &ranges {
        total += end - first;
        offsets.push(total);
    }
    let mut ip = vec![0i64; total];
    let mut ib = vec![0i64; total];
    // Each probe row fills its own slices of the outputs.
    let mut ip_rest: &mut [i64] = &mut ip;
    let mut ib_rest: &mut [i64] = &mut ib;
    let mut tasks = Vec::with_capacity(ranges.len());
    for (i, &(first, end)) in ranges.iter().enumerate() {
        let (ip_here, ip_next) = std::mem::take(&mut ip_rest).split_at_mut(end - first);
        let (ib_here, ib_next) = std::mem::take(&mut ib_rest).split_at_mut(end - first);
        ip_rest = ip_next;
        ib_rest = ib_next;
        tasks.push((i, first, ip_here, ib_here));
    }
    tasks
        .into_par_iter()
        .with_min_len(GRAIN)
        .for_each(|(i, first, ip_here, ib_here)| {
            for (k, (p, b)) in ip_here.iter_mut().zip(ib_here.iter_mut()).enumerate() {
                *p = i as i64;
                *b = (first + k) as i64;
            }
        });
    Ok(join_pairs_value(ip, ib))
}

/// Join pairs per batch of `@join_unique` (a test may set fewer, see
/// [`crate::relation::set_join_batch_rows`]): 2^26 tuples of two columns are 1 GiB.
const JOIN_BATCH_ROWS: usize = 1 << 26;

/// `@join_unique(probe, build, keys, picks[, full])`: the distinct tuples `picks` of the
/// join, less those in `full`, sorted. The pairs are made, sorted and deduplicated a batch
/// at a time (at most the batch size of them at once, however many the join has), each
/// batch's tuples less `full` kept; the batches' tuples are then sorted and deduplicated
/// together.
pub(crate) fn join_unique(args: &Args<'_, '_>) -> Result<Value> {
    let a = join_unique_arguments(args.list)?;
    let (probe, build) = (Columns::of(&a.probe)?, Columns::of(&a.build)?);
    let (probe_keys, build_keys) = (probe.prefix(a.keys), build.prefix(a.keys));
    check_sorted(&build_keys, 1, false)?;
    let full = match &a.full {
        Some(full) => {
            let full = Columns::of(full)?;
            check_sorted(&full, 4, true)?;
            Some(full)
        }
        None => None,
    };
    let sources: Vec<(bool, &[i64])> = (0..a.picks.len())
        .map(|p| match a.pick(p) {
            (true, c) => (true, probe.columns[c]),
            (false, c) => (false, build.columns[c]),
        })
        .collect();
    let pairs = JoinPairs::new(
        join_ranges(&probe_keys, &build_keys),
        join_batch_rows(JOIN_BATCH_ROWS)?,
    );
    let full = full.as_ref();
    let arity = sources.len();
    let columns = match arity {
        1 => pairs.unique(arity, full, |i, j| [value(&sources[0], i, j)]),
        2 => pairs.unique(arity, full, |i, j| {
            std::array::from_fn::<i64, 2, _>(|c| value(&sources[c], i, j))
        }),
        3 => pairs.unique(arity, full, |i, j| {
            std::array::from_fn::<i64, 3, _>(|c| value(&sources[c], i, j))
        }),
        4 => pairs.unique(arity, full, |i, j| {
            std::array::from_fn::<i64, 4, _>(|c| value(&sources[c], i, j))
        }),
        _ => pairs.unique(arity, full, |i, j| {
            sources.iter().map(|s| value(s, i, j)).collect::<Vec<i64>>()
        }),
    };
    Ok(relation_value(columns))
}

/// The value of a picked column at probe row `i` and build row `j`.
fn value(source: &(bool, &[i64]), i: usize, j: usize) -> i64 {
    match source {
        (true, column) => column[i],
        (false, column) => column[j],
    }
}

/// The pairs of a join: per probe row its build rows (a range), and where its pairs start
/// among all of them.
struct JoinPairs {
    ranges: Vec<(usize, usize)>,
    /// `offsets[i]`: the pairs of the probe rows before `i` (`rows + 1` entries).
    offsets: Vec<usize>,
    batch: usize,
}

impl JoinPairs {
    fn new(ranges: Vec<(usize, usize)>, batch: usize) -> JoinPairs {
        let mut offsets = Vec::with_capacity(ranges.len() + 1);
        let mut total = 0usize;
        offsets.push(0);
        for &(first, end) in &ranges {
            total += end - first;
            offsets.push(total);
        }
        JoinPairs {
            ranges,
            offsets,
            batch: batch.max(1),
        }
    }

    /// The distinct tuples `make(probe row, build row)` of the pairs not in `full`, sorted,
    /// as columns.
    fn unique<T>(
        &self,
        arity: usize,
        full: Option<&Columns<'_>>,
        make: impl Fn(usize, usize) -> T + Sync,
    ) -> Vec<Vec<i64>>
    where
        T: Ord + Send + Sync + AsRef<[i64]>,
    {
        let total = *self.offsets.last().unwrap_or(&0);
        let mut kept: Vec<T> = Vec::new();
        let mut batches = 0;
        let mut start = 0;
        while start < total {
            let end = (start + self.batch).min(total);
            // The probe rows with a pair in [start, end): pairs of row i are
            // offsets[i] .. offsets[i + 1], clipped to the batch.
            let first_row = self.offsets.partition_point(|&o| o <= start) - 1;
            let end_row = self.offsets.partition_point(|&o| o < end);
            let mut rows: Vec<T> = (first_row..end_row)
                .into_par_iter()
                .flat_map_iter(|i| {
                    let (first, _) = self.ranges[i];
                    let from = self.offsets[i].max(start);
                    let to = self.offsets[i + 1].min(end);
                    let make = &make;
                    (from..to).map(move |g| make(i, first + g - self.offsets[i]))
                })
                .collect();
            rows.par_sort_unstable();
            rows.dedup();
            if let Some(full) = full {
                rows = rows
                    .into_par_iter()
                    .with_min_len(GRAIN)
                    .filter(|t| !contains(full, t.as_ref()))
                    .collect();
            }
            kept.append(&mut rows);
            batches += 1;
            start = end;
        }
        if batches > 1 {
            kept.par_sort_unstable();
            kept.dedup();
        }
        (0..arity)
            .into_par_iter()
            .map(|c| kept.iter().map(|t| t.as_ref()[c]).collect())
            .collect()
    }
}

/// Whether sorted `r` has the tuple `t`.
fn contains(r: &Columns<'_>, t: &[i64]) -> bool {
    let compare = |row: usize| {
        r.columns
            .iter()
            .zip(t)
            .map(|(c, x)| c[row].cmp(x))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let at = partition_point(r.rows, |row| compare(row).is_lt());
    at < r.rows && compare(at).is_eq()
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
    use crate::value::{List, Vector};
    use std::sync::Arc;

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
