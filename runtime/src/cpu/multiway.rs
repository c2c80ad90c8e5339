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
//! The first variable's matches are split over the machine's cores (rayon), each part joined
//! depth first, and the parts' results concatenated in order. `@multiway_count` runs the same
//! join but counts the last variable's matches instead of building rows.

use rayon::slice::ParallelSliceMut;

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
        // Every core sorts (the trie of a 10^8-edge graph is built per run).
        order.par_sort_unstable_by(|&i, &j| row_key(i).cmp(row_key(j)));
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

/// `@multiway_count(spec, r1, …, rk)`: the number of rows `@multiway_join` would give,
/// counted at the last variable without building any row.
pub(crate) fn multiway_count(args: &Args<'_, '_>) -> Result<Value> {
    let (spec, relations) = multiway_arguments(args.list)?;
    let columns: Vec<Vec<&[i64]>> = relations
        .iter()
        .map(|r| r.iter().map(Vec::as_slice).collect())
        .collect();
    let count = leapfrog_count(&spec, &columns);
    let Ok(count) = i64::try_from(count) else {
        crate::bail!("{count} rows do not fit an i64");
    };
    Ok(Value::from_i64s(vec![count]))
}

/// The tries of the atoms of `spec`: each distinct trie once (a relation that several atoms
/// read in one column order, such as `link` in triangles, is indexed once), and per atom the
/// position of its trie.
pub fn atom_tries(spec: &Spec, relations: &[Vec<&[i64]>]) -> (Vec<Trie>, Vec<usize>) {
    let mut tries: Vec<Trie> = Vec::new();
    let mut built: Vec<Vec<&[i64]>> = Vec::new();
    let mut of_atom = Vec::with_capacity(relations.len());
    for (a, columns) in relations.iter().enumerate() {
        let permuted: Vec<&[i64]> = spec
            .trie_columns(a)
            .into_iter()
            .map(|c| columns[c])
            .collect();
        // Equal slices (same memory and length, or equal contents) index alike.
        match built.iter().position(|b| {
            b.len() == permuted.len()
                && b.iter()
                    .zip(&permuted)
                    .all(|(x, y)| std::ptr::eq(*x, *y) || x == y)
        }) {
            Some(t) => of_atom.push(t),
            None => {
                of_atom.push(tries.len());
                tries.push(Trie::build(&permuted));
                built.push(permuted);
            }
        }
    }
    (tries, of_atom)
}

/// The join's result, one column per variable in the variable order, rows sorted.
pub fn leapfrog_triejoin(spec: &Spec, relations: &[Vec<&[i64]>]) -> Vec<Vec<i64>> {
    let n = spec.variables.len();
    let parts = run(spec, relations, || Sink::Rows(vec![Vec::new(); n]));
    let mut result: Vec<Vec<i64>> = vec![Vec::new(); n];
    for part in parts {
        if let Sink::Rows(columns) = part {
            for (column, values) in result.iter_mut().zip(columns) {
                column.extend(values);
            }
        }
    }
    result
}

/// The number of rows of [`leapfrog_triejoin`], counted at the last variable: no row is
/// built (the count of a triangle listing needs no list).
pub fn leapfrog_count(spec: &Spec, relations: &[Vec<&[i64]>]) -> u64 {
    run(spec, relations, || Sink::Count(0))
        .into_iter()
        .map(|part| match part {
            Sink::Count(n) => n,
            Sink::Rows(columns) => columns.first().map_or(0, |c| c.len() as u64),
        })
        .sum()
}

/// Where complete bindings go.
enum Sink {
    /// Each variable's column.
    Rows(Vec<Vec<i64>>),
    Count(u64),
}

/// Joins depth first: the first variable's matches split over the cores (rayon, in parts
/// small enough to balance skewed degrees), the rest of the join per part into a sink of
/// its own; the sinks in the order of their parts.
fn run(spec: &Spec, relations: &[Vec<&[i64]>], sink: impl Fn() -> Sink + Sync) -> Vec<Sink> {
    use rayon::prelude::*;
    let (tries, of_atom) = atom_tries(spec, relations);
    let atom_tries: Vec<&Trie> = of_atom.iter().map(|&t| &tries[t]).collect();
    let join = Join::new(spec, atom_tries);
    let n = spec.variables.len();
    let atoms = spec.atoms.len();
    let mut first: Vec<(i64, Vec<usize>)> = Vec::new();
    if let Some(limits) = join.limits(0, &[]) {
        let mut nodes = vec![0; atoms];
        join.leapfrog(0, &mut nodes, &limits, &mut |value, nodes| {
            first.push((value, nodes.to_vec()))
        });
    }
    if n == 1 {
        let mut only = sink();
        match &mut only {
            Sink::Rows(columns) => columns[0].extend(first.iter().map(|(value, _)| *value)),
            Sink::Count(count) => *count = first.len() as u64,
        }
        return vec![only];
    }
    let threads = rayon::current_num_threads();
    let chunk = first.len().div_ceil(threads * 64).max(1);
    first
        .par_chunks(chunk)
        .map(|part| {
            let mut out = sink();
            let mut scratch = vec![vec![0; atoms]; n];
            let mut bound = vec![0; n];
            for (value, nodes) in part {
                bound[0] = *value;
                join.descend(1, nodes, &mut scratch[1..], &mut bound, &mut out);
            }
            out
        })
        .collect()
}

/// One variable's step: the atoms that contain it and the comparisons it must pass.
struct Step {
    /// (atom, trie level of the variable).
    atoms: Vec<(usize, usize)>,
    checks: Vec<(CompareOp, usize)>,
}

/// The range the comparisons with bound variables leave a variable: `lower ..= upper`,
/// less the `skips` (`!=`).
struct Limits {
    lower: i64,
    upper: i64,
    skips: Vec<i64>,
}

struct Join<'t> {
    /// Per atom, its trie.
    tries: Vec<&'t Trie>,
    steps: Vec<Step>,
}

impl<'t> Join<'t> {
    fn new(spec: &Spec, tries: Vec<&'t Trie>) -> Join<'t> {
        let steps = (0..spec.variables.len())
            .map(|v| Step {
                atoms: spec.atoms_with(v),
                checks: spec.checks_at(v),
            })
            .collect();
        Join { tries, steps }
    }

    /// Binds variable `v` (>= 1) from `nodes` (each atom's node after the variables before
    /// it) and goes on to the end; `scratch[0]` holds the nodes this level moves, the rest
    /// the deeper levels'.
    fn descend(
        &self,
        v: usize,
        nodes: &[usize],
        scratch: &mut [Vec<usize>],
        bound: &mut [i64],
        sink: &mut Sink,
    ) {
        let Some(limits) = self.limits(v, bound) else {
            return;
        };
        let Some((here, deeper)) = scratch.split_first_mut() else {
            return;
        };
        here.copy_from_slice(nodes);
        if v + 1 == self.steps.len() {
            match sink {
                Sink::Count(count) => self.leapfrog(v, here, &limits, &mut |_, _| *count += 1),
                Sink::Rows(out) => self.leapfrog(v, here, &limits, &mut |value, _| {
                    bound[v] = value;
                    for (column, &x) in out.iter_mut().zip(bound.iter()) {
                        column.push(x);
                    }
                }),
            }
            return;
        }
        self.leapfrog(v, here, &limits, &mut |value, reached| {
            bound[v] = value;
            self.descend(v + 1, reached, deeper, bound, sink);
        });
    }

    /// What the comparisons of variable `v` with the variables bound before it (`bound`)
    /// leave; None when nothing can pass.
    fn limits(&self, v: usize, bound: &[i64]) -> Option<Limits> {
        let (mut lower, mut upper) = (i64::MIN, i64::MAX);
        let mut skips = Vec::new();
        for &(op, u) in &self.steps[v].checks {
            if u == v {
                // `v op v` holds for every value or for none.
                if !op.holds(0, 0) {
                    return None;
                }
                continue;
            }
            let x = bound[u];
            match op {
                CompareOp::Gt => lower = lower.max(x.checked_add(1)?),
                CompareOp::Ge => lower = lower.max(x),
                CompareOp::Lt => upper = upper.min(x.checked_sub(1)?),
                CompareOp::Le => upper = upper.min(x),
                CompareOp::Ne => skips.push(x),
            }
        }
        (lower <= upper).then_some(Limits {
            lower,
            upper,
            skips,
        })
    }

    /// Leapfrog join of variable `v`: every value within `limits` in the children of all
    /// atoms containing it; `emit` gets it with each atom's node (`nodes` updated).
    fn leapfrog(
        &self,
        v: usize,
        nodes: &mut [usize],
        limits: &Limits,
        emit: &mut dyn FnMut(i64, &[usize]),
    ) {
        let step = &self.steps[v];
        let iters: Vec<(usize, &[i64], usize)> = step
            .atoms
            .iter()
            .map(|&(a, depth)| {
                let trie = self.tries[a];
                let (lo, hi) = trie.children(depth, nodes[a]);
                (a, &trie.levels[depth][..hi], lo)
            })
            .collect();
        let mut positions: Vec<usize> = iters
            .iter()
            .map(|&(_, level, lo)| seek(level, lo, limits.lower))
            .collect();
        loop {
            let mut key = i64::MIN;
            for (p, &(_, level, _)) in positions.iter().zip(&iters) {
                match level.get(*p) {
                    Some(&k) => key = key.max(k),
                    None => return,
                }
            }
            if key > limits.upper {
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
                if !limits.skips.contains(&key) {
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
    fn a_count_equals_the_rows_and_one_trie_serves_every_atom_of_one_relation() {
        let (mut from, mut to) = (Vec::new(), Vec::new());
        // A 5-clique both ways, plus a pendant: 10 triangles, 5 four-cliques.
        for a in 0..5 {
            for b in 0..5 {
                if a != b {
                    from.push(a);
                    to.push(b);
                }
            }
        }
        from.extend([4, 9]);
        to.extend([9, 4]);
        let e: Vec<&[i64]> = vec![&from, &to];
        let specs = [
            ("x y z; x y; y z; x z; where x < y, y < z", 10),
            (
                "a b c d; a b; a c; a d; b c; b d; c d; where a < b, b < c, c < d",
                5,
            ),
            ("x y; x y", 22),
            ("x; x", 6),
        ];
        for (text, expected) in specs {
            let spec = Spec::parse(text).unwrap();
            let relations: Vec<Vec<&[i64]>> = vec![e.clone(); spec.atoms.len()];
            let rows = leapfrog_triejoin(&spec, &relations);
            assert_eq!(rows[0].len(), expected, "{text}");
            assert_eq!(leapfrog_count(&spec, &relations), expected as u64, "{text}");
            let (tries, of_atom) = atom_tries(&spec, &relations);
            if spec.atoms[0].len() == 2 {
                assert_eq!(tries.len(), 1, "{text}");
                assert!(of_atom.iter().all(|&t| t == 0));
            }
        }
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
