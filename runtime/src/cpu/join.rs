//! `@join_index(f, a, b)` and `@join_index(f1, …, fk, la, lb)`.
//!
//! The result is a list of two i64 vectors `(ia, ib)`, one entry per pair of rows where every
//! predicate `fj(a_j[ia], b_j[ib])` holds (`@eq @neq @lt @gt @leq @geq`); cell 0 indexes
//! the first argument. Pairs come sorted by `ia`, then `ib`.
//!
//! Equality predicates are joined by hashing: rows of both sides get dense ids over their
//! equality columns, `b`'s rows are bucketed by id (a counting sort), and each row of `a`
//! walks its bucket, checking the other predicates on the way. Without any equality
//! predicate every pair is checked.

use std::borrow::Cow;

use std::sync::Arc;

use super::keys::{common_rows, dense_ids, key_columns, paired_keys};
use super::Args;
pub(crate) use crate::args::join::{join_arguments_with, JoinArguments};
use crate::builtin::Builtin;
use crate::error::Result;
use crate::value::{List, Value, Vector};

/// A non-equality predicate over one pair of key columns.
struct Check {
    op: Builtin,
    a: Vec<u64>,
    b: Vec<u64>,
}

impl Check {
    fn holds(&self, i: usize, j: usize) -> bool {
        let (x, y) = (self.a[i], self.b[j]);
        match self.op {
            Builtin::Neq => x != y,
            Builtin::Lt => x < y,
            Builtin::Gt => x > y,
            Builtin::Leq => x <= y,
            Builtin::Geq => x >= y,
            _ => x == y,
        }
    }
}

/// Parses and checks `@join_index`'s arguments, with the key columns of host vectors.
pub(crate) fn join_arguments<'v>(args: &Args<'_, 'v>) -> Result<JoinArguments<Cow<'v, Vector>>> {
    join_arguments_with(args, key_columns, |columns| common_rows(columns))
}

/// Evaluates `@join_index`.
pub(crate) fn join_index(args: &Args<'_, '_>) -> Result<Value> {
    let JoinArguments {
        ops,
        a: ca,
        b: cb,
        rows_a,
        rows_b,
    } = join_arguments(args)?;

    let mut equal_keys = Vec::new();
    let mut checks = Vec::new();
    for ((op, a), b) in ops.iter().zip(&ca).zip(&cb) {
        let (ka, kb) = paired_keys(a, b)?;
        if *op == Builtin::Eq {
            let mut both = ka;
            both.extend_from_slice(&kb);
            equal_keys.push(both);
        } else {
            checks.push(Check {
                op: *op,
                a: ka,
                b: kb,
            });
        }
    }
    let holds = |i: usize, j: usize| checks.iter().all(|c| c.holds(i, j));

    let (mut ia, mut ib) = (Vec::new(), Vec::new());
    if equal_keys.is_empty() {
        for i in 0..rows_a {
            for j in 0..rows_b {
                if holds(i, j) {
                    ia.push(i as i64);
                    ib.push(j as i64);
                }
            }
        }
    } else {
        let (ids, count) = dense_ids(&equal_keys, rows_a + rows_b);
        let (ids_a, ids_b) = ids.split_at(rows_a);
        let mut start = vec![0usize; count + 1];
        for &id in ids_b {
            start[id as usize + 1] += 1;
        }
        for g in 0..count {
            start[g + 1] += start[g];
        }
        let mut next = start.clone();
        let mut bucketed = vec![0u32; rows_b];
        for (j, &id) in ids_b.iter().enumerate() {
            bucketed[next[id as usize]] = j as u32;
            next[id as usize] += 1;
        }
        for (i, &id) in ids_a.iter().enumerate() {
            let bucket = &bucketed[start[id as usize]..start[id as usize + 1]];
            for &j in bucket {
                if holds(i, j as usize) {
                    ia.push(i as i64);
                    ib.push(i64::from(j));
                }
            }
        }
    }
    let n = ia.len();
    ia.extend_from_slice(&ib);
    Ok(Value::List(List::Flat {
        values: Vector::I64(Arc::new(ia)),
        offsets: Arc::new(vec![0, n, 2 * n]),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;

    #[test]
    fn equi_join_lists_every_matching_pair_in_order() {
        let out = run_with(
            B::JoinIndex,
            &[B::Eq],
            &[i32s(&[1, 2, 3, 2]), i64s(&[2, 4, 2, 1])],
        )
        .unwrap();
        assert_eq!(
            cells(&out),
            vec![i64s(&[0, 1, 1, 3, 3]), i64s(&[3, 0, 2, 0, 2])]
        );
        let none = run_with(B::JoinIndex, &[B::Eq], &[i32s(&[1]), i32s(&[])]).unwrap();
        assert_eq!(cells(&none), vec![i64s(&[]), i64s(&[])]);
    }

    #[test]
    fn strings_join_across_dictionaries() {
        let out = run_with(
            B::JoinIndex,
            &[B::Eq],
            &[syms(&["x", "y"]), strs(&["y", "z", "x"])],
        )
        .unwrap();
        assert_eq!(cells(&out), vec![i64s(&[0, 1]), i64s(&[2, 0])]);
    }

    #[test]
    fn extra_predicates_are_checked_on_probe() {
        // q17 shape: quantity < limit of the same part.
        let a = list(vec![f64s(&[1.0, 5.0, 2.0]), i32s(&[7, 7, 8])]);
        let b = list(vec![f64s(&[3.0, 3.0]), i32s(&[7, 8])]);
        let out = run_with(B::JoinIndex, &[B::Lt, B::Eq], &[a, b]).unwrap();
        assert_eq!(cells(&out), vec![i64s(&[0, 2]), i64s(&[0, 1])]);
        let a = list(vec![i32s(&[1, 1, 2]), i32s(&[10, 11, 10])]);
        let b = list(vec![i32s(&[1, 2]), i32s(&[10, 10])]);
        let out = run_with(B::JoinIndex, &[B::Eq, B::Neq], &[a, b]).unwrap();
        assert_eq!(cells(&out), vec![i64s(&[1]), i64s(&[0])]);
    }

    #[test]
    fn joins_without_equality_check_every_pair() {
        let out = run_with(B::JoinIndex, &[B::Gt], &[i32s(&[1, 3]), i32s(&[2, 0])]).unwrap();
        assert_eq!(cells(&out), vec![i64s(&[0, 1, 1]), i64s(&[1, 0, 1])]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(run_with(B::JoinIndex, &[B::Plus], &[i32s(&[1]), i32s(&[1])]).is_err());
        assert!(run_with(B::JoinIndex, &[B::Eq, B::Eq], &[i32s(&[1]), i32s(&[1])]).is_err());
        assert!(run(B::JoinIndex, &[i32s(&[1]), i32s(&[1])]).is_err());
        assert!(run_with(B::JoinIndex, &[B::Eq], &[i32s(&[1]), dates(&[1])]).is_err());
    }
}
