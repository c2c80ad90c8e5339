//! `@multiway_join(spec, r1, …, rk)` on the CPU: Leapfrog Triejoin (Veldhuizen) over trie
//! indexes, the oracle of the GPU kernel (`gpu/multiway.rs`). The spec is described in
//! `crate::multiway`.
//!
//! Each relation is indexed as a trie in the variable order: its columns permuted so that
//! their variables come in that order, rows sorted and deduplicated, then one value array per
//! level plus offsets (the children of `levels[d][j]` are `levels[d + 1][offsets[d][j] ..
//! offsets[d][j + 1]]`, sorted and unique). The join binds one variable at a time, depth
//! first; at each variable a leapfrog join intersects the current children of every atom
//! that contains it, seeking by galloping search. Comparisons with variables bound earlier
//! narrow the intersection (`<`, `<=`, `>`, `>=` as bounds, `!=` as a skip).
//!
//! The first variable's matches are split over the machine's cores (`std::thread::scope`),
//! each part joined depth first, and the parts' results concatenated in order.

use crate::error::Result;
use crate::multiway::{CompareOp, Spec};
use crate::value::Value;

use super::Args;
use crate::multiway::multiway_arguments;
use crate::relation::relation_value;

/// A sorted, deduplicated relation as a trie: one value array per level plus offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trie {
    pub levels: Vec<Vec<i64>>,
    /// `offsets[d]` has `levels[d].len() + 1` entries (one fewer level than `levels`).
    pub offsets: Vec<Vec<usize>>,
}

impl Trie {
    /// The trie of the rows of `columns` (all of one length), sorted and deduplicated.
    pub fn build(columns: &[&[i64]]) -> Trie {
        let arity = columns.len();
        let rows = columns.first().map_or(0, |c| c.len());
        let mut order: Vec<usize> = (0..rows).collect();
        let row_key = |r: usize| columns.iter().map(move |c| c[r]);
        order.sort_unstable_by(|&i, &j| row_key(i).cmp(row_key(j)));
        order.dedup_by(|j, i| row_key(*i).eq(row_key(*j)));
        let mut levels: Vec<Vec<i64>> = vec![Vec::new(); arity];
        let mut offsets: Vec<Vec<usize>> = vec![Vec::new(); arity.saturating_sub(1)];
        for (k, &r) in order.iter().enumerate() {
            // The first level where this row differs from the previous one starts a node
            // there and at every deeper level.
            let first_new = if k == 0 {
                0
            } else {
                let previous = order[k - 1];
                (0..arity)
                    .find(|&d| columns[d][r] != columns[d][previous])
                    .unwrap_or(arity)
            };
            for d in first_new..arity {
                if d + 1 < arity {
                    offsets[d].push(levels[d + 1].len());
                }
                levels[d].push(columns[d][r]);
            }
        }
        for d in 0..arity.saturating_sub(1) {
            offsets[d].push(levels[d + 1].len());
        }
        Trie { levels, offsets }
    }

    /// The children range of node `node` of level `depth - 1` (the whole first level at 0).
    fn children(&self, depth: usize, node: usize) -> (usize, usize) {
        if depth == 0 {
            (0, self.levels[0].len())
        } else {
            (
                self.offsets[depth - 1][node],
                self.offsets[depth - 1][node + 1],
            )
        }
    }
}

/// `@multiway_join(spec, r1, …, rk)`.
pub(crate) fn multiway_join(args: &Args<'_, '_>) -> Result<Value> {
    let (spec, relations) = multiway_arguments(args.list)?;
    let columns: Vec<Vec<&[i64]>> = relations
        .iter()
        .map(|r| r.iter().map(Vec::as_slice).collect())
        .collect();
    Ok(relation_value(leapfrog_triejoin(&spec, &columns)))
}

/// The tries of every atom of `spec`, each relation's columns permuted to the variable order.
/// A relation that several atoms read in one column order is indexed once (copied after).
pub fn atom_tries(spec: &Spec, relations: &[Vec<&[i64]>]) -> Vec<Trie> {
    let mut tries: Vec<Trie> = Vec::with_capacity(relations.len());
    let mut built: Vec<(Vec<&[i64]>, usize)> = Vec::new();
    for (a, columns) in relations.iter().enumerate() {
        let permuted: Vec<&[i64]> = spec
            .trie_columns(a)
            .into_iter()
            .map(|c| columns[c])
            .collect();
        match built.iter().find(|(b, _)| *b == permuted) {
            Some(&(_, t)) => tries.push(tries[t].clone()),
            None => {
                built.push((permuted.clone(), tries.len()));
                tries.push(Trie::build(&permuted));
            }
        }
    }
    tries
}

/// The join's result, one column per variable in the variable order, rows sorted.
pub fn leapfrog_triejoin(spec: &Spec, relations: &[Vec<&[i64]>]) -> Vec<Vec<i64>> {
    let tries = atom_tries(spec, relations);
    let join = Join::new(spec, &tries);
    let n = spec.variables.len();
    // The first variable's matches, then the rest of the join per part of them.
    let mut first = Vec::new();
    {
        let mut state = join.start();
        join.intersect(0, &mut state, &mut |value, nodes| {
            first.push((value, nodes.to_vec()))
        });
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = first.len().div_ceil(threads * 4).max(1);
    let parts: Vec<Vec<Vec<i64>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = first
            .chunks(chunk)
            .map(|part| {
                let join = &join;
                scope.spawn(move || {
                    let mut out: Vec<Vec<i64>> = vec![Vec::new(); n];
                    let mut bound = vec![0; n];
                    for (value, nodes) in part {
                        bound[0] = *value;
                        let mut state = nodes.clone();
                        join.descend(1, &mut state, &mut bound, &mut out);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut result: Vec<Vec<i64>> = vec![Vec::new(); n];
    for part in parts {
        for (column, values) in result.iter_mut().zip(part) {
            column.extend(values);
        }
    }
    result
}

/// One variable's step: the atoms that contain it and the comparisons it must pass.
struct Step {
    /// (atom, trie level of the variable).
    atoms: Vec<(usize, usize)>,
    checks: Vec<(CompareOp, usize)>,
}

struct Join<'t> {
    tries: &'t [Trie],
    steps: Vec<Step>,
}

impl<'t> Join<'t> {
    fn new(spec: &Spec, tries: &'t [Trie]) -> Join<'t> {
        let steps = (0..spec.variables.len())
            .map(|v| Step {
                atoms: spec.atoms_with(v),
                checks: spec.checks_at(v),
            })
            .collect();
        Join { tries, steps }
    }

    /// Per atom, the node its last bound variable reached (unused before its first).
    fn start(&self) -> Vec<usize> {
        vec![0; self.tries.len()]
    }

    fn descend(&self, v: usize, nodes: &mut [usize], bound: &mut [i64], out: &mut [Vec<i64>]) {
        if v == self.steps.len() {
            for (column, &value) in out.iter_mut().zip(bound.iter()) {
                column.push(value);
            }
            return;
        }
        let mut matches = Vec::new();
        {
            let bound_now: &[i64] = bound;
            let mut state = nodes.to_vec();
            self.intersect_bounded(v, &mut state, bound_now, &mut |value, reached| {
                matches.push((value, reached.to_vec()))
            });
        }
        for (value, mut reached) in matches {
            bound[v] = value;
            self.descend(v + 1, &mut reached, bound, out);
        }
    }

    /// The first variable (no comparisons can apply but `v op v`).
    fn intersect(&self, v: usize, nodes: &mut [usize], emit: &mut dyn FnMut(i64, &[usize])) {
        self.intersect_bounded(v, nodes, &[], emit)
    }

    /// Leapfrog join of variable `v`: every value in the children of all atoms containing it
    /// that passes the comparisons with `bound`; `emit` gets it with each atom's node.
    fn intersect_bounded(
        &self,
        v: usize,
        nodes: &mut [usize],
        bound: &[i64],
        emit: &mut dyn FnMut(i64, &[usize]),
    ) {
        let step = &self.steps[v];
        let (mut lower, mut upper) = (i64::MIN, i64::MAX);
        let mut skips = Vec::new();
        let mut never = false;
        for &(op, u) in &step.checks {
            if u == v {
                // `v op v` holds for every value or for none.
                never |= !op.holds(0, 0);
                continue;
            }
            let x = bound[u];
            match op {
                CompareOp::Gt => match x.checked_add(1) {
                    Some(b) => lower = lower.max(b),
                    None => never = true,
                },
                CompareOp::Ge => lower = lower.max(x),
                CompareOp::Lt => match x.checked_sub(1) {
                    Some(b) => upper = upper.min(b),
                    None => never = true,
                },
                CompareOp::Le => upper = upper.min(x),
                CompareOp::Ne => skips.push(x),
            }
        }
        if never || lower > upper {
            return;
        }
        let iters: Vec<(usize, &[i64], usize)> = step
            .atoms
            .iter()
            .map(|&(a, depth)| {
                let trie = &self.tries[a];
                let (lo, hi) = trie.children(depth, nodes[a]);
                (a, &trie.levels[depth][..hi], lo)
            })
            .collect();
        let mut positions: Vec<usize> = iters
            .iter()
            .map(|&(_, level, lo)| seek(level, lo, lower))
            .collect();
        loop {
            let mut key = i64::MIN;
            for (p, &(_, level, _)) in positions.iter().zip(&iters) {
                match level.get(*p) {
                    Some(&k) => key = key.max(k),
                    None => return,
                }
            }
            if key > upper {
                return;
            }
            let mut agree = true;
            for (p, &(_, level, _)) in positions.iter_mut().zip(&iters) {
                *p = seek(level, *p, key);
                match level.get(*p) {
                    Some(&k) if k == key => {}
                    Some(_) => agree = false,
                    None => return,
                }
            }
            if agree {
                if !skips.contains(&key) {
                    for (p, &(a, _, _)) in positions.iter().zip(&iters) {
                        nodes[a] = *p;
                    }
                    emit(key, nodes);
                }
                for p in positions.iter_mut() {
                    *p += 1;
                }
            }
        }
    }
}

/// The first position at or after `from` whose value is at least `x` (`level` is sorted):
/// galloping (1, 2, 4, … ahead), then binary search in the last step.
fn seek(level: &[i64], from: usize, x: i64) -> usize {
    if from >= level.len() || level[from] >= x {
        return from;
    }
    let mut step = 1;
    let mut lo = from; // level[lo] < x
    while lo + step < level.len() && level[lo + step] < x {
        lo += step;
        step *= 2;
    }
    let mut hi = (lo + step).min(level.len()); // level[hi] >= x or the end
    lo += 1;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if level[mid] < x {
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

    fn join(spec: &str, relations: &[Vec<Vec<i64>>]) -> Vec<Vec<i64>> {
        let spec = Spec::parse(spec).unwrap();
        let columns: Vec<Vec<&[i64]>> = relations
            .iter()
            .map(|r| r.iter().map(Vec::as_slice).collect())
            .collect();
        leapfrog_triejoin(&spec, &columns)
    }

    #[test]
    fn a_trie_has_one_sorted_unique_level_per_column_and_offsets_to_the_children() {
        let trie = Trie::build(&[&[2, 1, 1, 2, 1], &[5, 7, 6, 5, 7]]);
        assert_eq!(trie.levels, vec![vec![1, 2], vec![6, 7, 5]]);
        assert_eq!(trie.offsets, vec![vec![0, 2, 3]]);
        let empty = Trie::build(&[&[], &[]]);
        assert_eq!(empty.levels, vec![Vec::<i64>::new(), vec![]]);
        assert_eq!(empty.offsets, vec![vec![0]]);
    }

    #[test]
    fn seek_finds_the_first_value_not_below_the_target() {
        let level = [1, 3, 5, 7, 9, 11, 13];
        for x in 0..15 {
            let expected = level.iter().position(|&v| v >= x).unwrap_or(level.len());
            assert_eq!(seek(&level, 0, x), expected, "x = {x}");
        }
        assert_eq!(seek(&level, 4, 2), 4);
    }

    #[test]
    fn triangles_of_a_small_graph_each_once_with_ordered_vertices() {
        // Edges both ways: a 4-clique 0-1-2-3 and a pendant 3-4, with a self-loop and a
        // duplicate edge that must not matter.
        let pairs = [
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 2),
            (1, 3),
            (2, 3),
            (3, 4),
            (4, 4),
            (0, 1),
        ];
        let (mut from, mut to) = (Vec::new(), Vec::new());
        for (a, b) in pairs {
            from.extend([a, b]);
            to.extend([b, a]);
        }
        let e = vec![from, to];
        let result = join(
            "x y z; x y; y z; x z; where x < y, y < z",
            &[e.clone(), e.clone(), e],
        );
        assert_eq!(
            result,
            vec![vec![0, 0, 0, 1], vec![1, 1, 2, 2], vec![2, 3, 3, 3]]
        );
    }

    #[test]
    fn permuted_atoms_and_inequalities_follow_the_spec() {
        // r(a, b) and s(b, a) given with swapped columns: the intersection of r and s⁻¹.
        let r = vec![vec![1, 1, 2, 3], vec![2, 3, 2, 1]];
        let s = vec![vec![2, 2, 1], vec![1, 2, 3]];
        assert_eq!(
            join("a b; a b; b a", &[r.clone(), s.clone()]),
            vec![vec![1, 2, 3], vec![2, 2, 1]]
        );
        assert_eq!(
            join("a b; a b; b a; where a != b", &[r, s]),
            vec![vec![1, 3], vec![2, 1]]
        );
    }

    #[test]
    fn bad_arguments_are_errors_naming_the_problem() {
        use crate::cpu::ArgValue;
        let spec = Value::symbol("x y; x y; y");
        let r = relation_value(vec![vec![1], vec![2]]);
        let list = [ArgValue::Value(&spec), ArgValue::Value(&r)];
        let e = multiway_join(&Args { list: &list }).unwrap_err();
        assert_eq!(
            e.message,
            "spec `x y; x y; y` names 2 atoms but 1 relations are given"
        );
        let list = [
            ArgValue::Value(&spec),
            ArgValue::Value(&r),
            ArgValue::Value(&r),
        ];
        let e = multiway_join(&Args { list: &list }).unwrap_err();
        assert_eq!(
            e.message,
            "argument 3 has 2 columns but its atom in the spec names 1"
        );
    }
}
