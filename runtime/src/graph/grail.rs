//! GRAIL reachability index (Yildirim, Chaoji, Zaki, "GRAIL: scalable reachability index for
//! large graphs", VLDB 2010), the value of `@reach_index(graph, d)`, and its CPU build and
//! queries: the oracle that the GPU build ([`super::grail_gpu`]) is tested against.
//!
//! The index of a directed graph:
//! - `component`: the strongly connected component of every vertex (`0..c`). Vertices of one
//!   component reach each other, so every query between them is answered `true` at once.
//! - `dag`: the condensation, a DAG over the `c` components (edge `a -> b` when some edge
//!   leads from component `a` to component `b`; duplicates are allowed).
//! - `labels`: `d` interval labels `[low, high]` per component. Each label numbers the
//!   components with some key, and `low`/`high` are the smallest/largest key among the
//!   component's descendants (itself included). If `a` reaches `b`, `b`'s descendants are
//!   `a`'s, so `[low_b, high_b] ⊆ [low_a, high_a]` for every label: a label that does not
//!   contain the destination's proves the pair unreachable, exactly. Labels whose keys are a
//!   depth-first post-order (as GRAIL's) have `high = key`, and their intervals are tight;
//!   the CPU build uses them. Any other key order gives correct, possibly looser labels.
//!
//! A query `(s, t)` is `true` when `s` and `t` share a component, `false` when some label
//! excludes `t`'s component, and otherwise decided by a depth-first search over the DAG that
//! never enters a component whose labels exclude `t`'s.
//!
//! As a HorseIR value the index is a `dict<sym, list<i64>>` (no new type: it prints, moves
//! and type-checks like any dictionary) with the keys of [`KEYS`], each value one `i64`
//! vector: `component` (n), `dag_offsets` (c + 1), `dag_targets` (edges of the DAG),
//! `labels` (`d · c · 2`: label `k` of component `x` at `2·(k·c + x)`, low then high) and
//! `label_count` (one value, d). [`ReachIndex::from_value`] checks every invariant the
//! queries rely on, so a hand-made dictionary can give an error but never a wrong answer
//! from a malformed structure (it can still give wrong answers if its labels lie).

use std::sync::Arc;

use rayon::prelude::*;

use crate::bail;
use crate::error::Result;
use crate::graph::csr::{vertex_index, Csr};
use crate::value::{Dict, List, Strings, Value, Vector};

/// `@reach_index(g, 0)` builds this many labels.
pub const DEFAULT_LABELS: usize = 3;
/// Most labels per component.
pub const MAX_LABELS: usize = 8;
/// The dictionary keys of an index value, in order.
pub const KEYS: [&str; 5] = [
    "component",
    "dag_offsets",
    "dag_targets",
    "labels",
    "label_count",
];

/// The seed of label `k`'s random child order (fixed, so an index is reproducible).
pub fn label_seed(k: usize) -> u32 {
    mix(0x6a09_e667 ^ (k as u32).wrapping_mul(0x9e37_79b9))
}

/// A 32-bit integer hash (lowbias32), the same on the CPU and in the WGSL kernels.
pub fn mix(x: u32) -> u32 {
    let mut x = x;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The label count `d` of `@reach_index(g, d)`: 1 to [`MAX_LABELS`], 0 for the default.
pub fn label_count(d: i64) -> Result<usize> {
    match d {
        0 => Ok(DEFAULT_LABELS),
        1..=8 => Ok(d as usize),
        _ => bail!("@reach_index: the label count must be 1 to {MAX_LABELS} (0 for the default {DEFAULT_LABELS}), got {d}"),
    }
}

/// A GRAIL index: components, condensed DAG and interval labels (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct ReachIndex {
    component: Arc<Vec<i64>>,
    dag: Csr,
    labels: Arc<Vec<i64>>,
    label_count: usize,
}

impl ReachIndex {
    /// An index from its parts, after checking that they fit together: components in
    /// `0..c` where `c` is the DAG's vertex count, and `d · c · 2` labels with `low ≤ high`.
    pub fn from_parts(
        component: Arc<Vec<i64>>,
        dag: Csr,
        labels: Arc<Vec<i64>>,
        label_count: usize,
    ) -> Result<ReachIndex> {
        let c = dag.vertex_count();
        if !(1..=MAX_LABELS).contains(&label_count) {
            bail!("reachability index: {label_count} labels per component, expected 1 to {MAX_LABELS}");
        }
        if let Some((v, &bad)) = component
            .iter()
            .enumerate()
            .find(|(_, &x)| vertex_index(x, c).is_none())
        {
            bail!("reachability index: vertex {v} is in component {bad}, outside the {c} components of the DAG");
        }
        if labels.len() != label_count * c * 2 {
            bail!(
                "reachability index: {} label values, expected {} ({label_count} labels of 2 values for {c} components)",
                labels.len(),
                label_count * c * 2
            );
        }
        if let Some(i) = labels.chunks_exact(2).position(|l| l[0] > l[1]) {
            bail!(
                "reachability index: label {} of component {} has low > high",
                i / c.max(1),
                i % c.max(1)
            );
        }
        Ok(ReachIndex {
            component,
            dag,
            labels,
            label_count,
        })
    }

    /// Builds the index on the CPU: Tarjan's strongly connected components, the condensation,
    /// and `d` depth-first post-order labels, one per thread (the labels are independent).
    pub fn build(graph: &Csr, label_count: usize) -> Result<ReachIndex> {
        if !(1..=MAX_LABELS).contains(&label_count) {
            bail!("@reach_index: {label_count} labels, expected 1 to {MAX_LABELS}");
        }
        let (component, c) = strongly_connected_components(graph);
        let dag = condensation(graph, &component, c);
        let per_label: Vec<Vec<i64>> = (0..label_count)
            .into_par_iter()
            .map(|k| post_order_label(&dag, label_seed(k)))
            .collect();
        let labels = per_label.concat();
        let component = component.into_iter().map(i64::from).collect();
        ReachIndex::from_parts(Arc::new(component), dag, Arc::new(labels), label_count)
    }

    /// The index as a HorseIR value (a `dict<sym, list<i64>>`, see the module docs).
    pub fn to_value(&self) -> Value {
        let offsets: Vec<i64> = self.dag.offsets().iter().map(|&o| o as i64).collect();
        let cells = vec![
            Value::Vector(Vector::I64(self.component.clone())),
            Value::Vector(Vector::from_i64s(offsets)),
            Value::Vector(Vector::I64(Arc::new(self.dag.neighbour_values().to_vec()))),
            Value::Vector(Vector::I64(self.labels.clone())),
            Value::Vector(Vector::from_i64s(vec![self.label_count as i64])),
        ];
        Value::Dict(Dict {
            keys: Box::new(Value::Vector(Vector::Sym(Strings::from_strs(&KEYS)))),
            values: Box::new(Value::List(List::Mixed(Arc::new(cells)))),
        })
    }

    /// The index a value holds, if it is one: a dictionary with exactly the keys of [`KEYS`].
    pub fn from_value(value: &Value) -> Result<ReachIndex> {
        let Value::Dict(dict) = value else {
            bail!(
                "expected a reachability index (from @reach_index), got a {}",
                value.ty()
            );
        };
        let keys: Vec<String> = match dict.keys.as_ref() {
            Value::Vector(Vector::Sym(s)) => s.iter().map(str::to_string).collect(),
            _ => bail!("expected a reachability index (from @reach_index), got a dictionary without sym keys"),
        };
        if keys != KEYS {
            bail!(
                "expected a reachability index (from @reach_index): a dictionary with keys {}, got {}",
                KEYS.join(", "),
                keys.join(", ")
            );
        }
        let cell = |i: usize| -> Result<Arc<Vec<i64>>> {
            let found = match dict.values.as_ref() {
                Value::List(List::Mixed(cells)) => match cells.get(i) {
                    Some(Value::Vector(Vector::I64(v))) => Some(v.clone()),
                    _ => None,
                },
                Value::List(List::Flat {
                    values: Vector::I64(values),
                    offsets,
                }) => match (offsets.get(i), offsets.get(i + 1)) {
                    (Some(&a), Some(&b)) if a <= b && b <= values.len() => {
                        Some(Arc::new(values[a..b].to_vec()))
                    }
                    _ => None,
                },
                _ => None,
            };
            match found {
                Some(v) => Ok(v),
                None => bail!("reachability index: `{}` is not an i64 vector", KEYS[i]),
            }
        };
        let component = cell(0)?;
        let offsets = cell(1)?;
        let targets = cell(2)?;
        let labels = cell(3)?;
        let label_count = match cell(4)?.as_slice() {
            [d] => usize::try_from(*d).unwrap_or(0),
            _ => 0,
        };
        let offsets: Vec<usize> = match offsets.iter().map(|&o| usize::try_from(o)).collect() {
            Ok(o) => o,
            Err(_) => bail!("reachability index: a negative DAG offset"),
        };
        let dag = Csr::from_parts(Arc::new(offsets), targets)?;
        ReachIndex::from_parts(component, dag, labels, label_count)
    }

    /// Vertices of the indexed graph.
    pub fn vertex_count(&self) -> usize {
        self.component.len()
    }

    /// Strongly connected components (vertices of the DAG).
    pub fn component_count(&self) -> usize {
        self.dag.vertex_count()
    }

    /// Labels per component (d).
    pub fn label_count(&self) -> usize {
        self.label_count
    }

    /// The component of every vertex.
    pub fn components(&self) -> &[i64] {
        &self.component
    }

    /// The condensed DAG.
    pub fn dag(&self) -> &Csr {
        &self.dag
    }

    /// All labels: label `k` of component `x` is `labels[2·(k·c + x)..][..2]` (low, high).
    pub fn labels(&self) -> &[i64] {
        &self.labels
    }

    /// Bytes of the index as the GPU holds it (u32 words): components, DAG, labels.
    pub fn size_bytes(&self) -> usize {
        4 * (self.component.len()
            + self.dag.vertex_count()
            + 1
            + self.dag.edge_count()
            + self.labels.len())
    }

    /// Whether every label of component `from` contains the one of component `to` (`false`
    /// proves `to` unreachable from `from`).
    #[inline]
    pub fn labels_contain(&self, from: usize, to: usize) -> bool {
        let c = self.component_count();
        (0..self.label_count).all(|k| {
            let a = 2 * (k * c + from);
            let b = 2 * (k * c + to);
            self.labels[a] <= self.labels[b] && self.labels[b + 1] <= self.labels[a + 1]
        })
    }

    /// What the labels alone say about a pair of components.
    pub fn filter(&self, from: usize, to: usize) -> Filtered {
        if from == to {
            Filtered::Reachable
        } else if self.labels_contain(from, to) {
            Filtered::Search
        } else {
            Filtered::Unreachable
        }
    }

    /// `@reachable` through the index, on the CPU: pairs in parallel, each settled by the
    /// labels or by a label-pruned depth-first search of the DAG.
    pub fn reachable(&self, sources: &[i64], destinations: &[i64]) -> Result<Vec<bool>> {
        let pairs = self.component_pairs("@reachable", sources, destinations)?;
        let c = self.component_count();
        Ok(pairs
            .par_iter()
            .map_init(
                || (vec![0u32; c], 0u32, Vec::new()),
                |(stamps, stamp, stack), &(from, to)| match self.filter(from, to) {
                    Filtered::Reachable => true,
                    Filtered::Unreachable => false,
                    Filtered::Search => {
                        *stamp = stamp.wrapping_add(1);
                        if *stamp == 0 {
                            stamps.fill(0);
                            *stamp = 1;
                        }
                        self.pruned_search(from, to, stamps, *stamp, stack)
                    }
                },
            )
            .collect())
    }

    /// The (source component, destination component) of every pair, after checking that the
    /// vertices exist.
    pub fn component_pairs(
        &self,
        builtin: &str,
        sources: &[i64],
        destinations: &[i64],
    ) -> Result<Vec<(usize, usize)>> {
        let n = self.vertex_count();
        if sources.len() != destinations.len() {
            bail!(
                "{builtin}: {} sources but {} destinations",
                sources.len(),
                destinations.len()
            );
        }
        sources
            .iter()
            .zip(destinations)
            .enumerate()
            .map(|(pair, (&s, &t))| {
                let Some(s) = vertex_index(s, n) else {
                    bail!("{builtin}: pair {pair} has source {s}, outside the vertices 0..{n}");
                };
                let Some(t) = vertex_index(t, n) else {
                    bail!(
                        "{builtin}: pair {pair} has destination {t}, outside the vertices 0..{n}"
                    );
                };
                Ok((self.component[s] as usize, self.component[t] as usize))
            })
            .collect()
    }

    fn pruned_search(
        &self,
        from: usize,
        to: usize,
        stamps: &mut [u32],
        stamp: u32,
        stack: &mut Vec<usize>,
    ) -> bool {
        stack.clear();
        stack.push(from);
        stamps[from] = stamp;
        while let Some(x) = stack.pop() {
            for &y in self.dag.adjacent(x) {
                let y = y as usize;
                if y == to {
                    return true;
                }
                if stamps[y] != stamp && self.labels_contain(y, to) {
                    stamps[y] = stamp;
                    stack.push(y);
                }
            }
        }
        false
    }
}

/// What the labels say about a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtered {
    /// Same component.
    Reachable,
    /// Some label excludes the destination.
    Unreachable,
    /// The labels allow it: a search decides.
    Search,
}

/// The strongly connected components of `graph` (iterative Tarjan, O(n + m)): the component
/// of every vertex and the component count. Components are numbered in the order Tarjan
/// completes them, a reverse topological order of the condensation.
pub fn strongly_connected_components(graph: &Csr) -> (Vec<u32>, usize) {
    const UNSEEN: u32 = u32::MAX;
    let n = graph.vertex_count();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut component = vec![UNSEEN; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    // (vertex, position of the next out-edge to look at)
    let mut calls: Vec<(u32, usize)> = Vec::new();
    let mut next_index = 0u32;
    let mut count = 0u32;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        calls.push((root as u32, graph.offsets()[root]));
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut edge)) = calls.last_mut() {
            let v = v as usize;
            let end = graph.offsets()[v + 1];
            if *edge < end {
                let w = graph.neighbour_values()[*edge] as usize;
                *edge += 1;
                if index[w] == UNSEEN {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    calls.push((w as u32, graph.offsets()[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                let parent = parent as usize;
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    component[w as usize] = count;
                    if w as usize == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (component, count as usize)
}

/// The condensation: an edge `component[u] -> component[v]` for every edge `u -> v` between
/// different components, each component's edges without repeats.
pub fn condensation(graph: &Csr, component: &[u32], count: usize) -> Csr {
    let mut members_offsets = vec![0usize; count + 1];
    for &x in component {
        members_offsets[x as usize + 1] += 1;
    }
    for x in 0..count {
        members_offsets[x + 1] += members_offsets[x];
    }
    let mut cursor = members_offsets[..count].to_vec();
    let mut members = vec![0u32; component.len()];
    for (v, &x) in component.iter().enumerate() {
        members[cursor[x as usize]] = v as u32;
        cursor[x as usize] += 1;
    }
    // Last component that added each target, so repeats within a component are skipped.
    let mut added_by = vec![u32::MAX; count];
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0usize);
    let mut targets = Vec::new();
    for x in 0..count {
        for &v in &members[members_offsets[x]..members_offsets[x + 1]] {
            for &w in graph.adjacent(v as usize) {
                let y = component[w as usize];
                if y as usize != x && added_by[y as usize] != x as u32 {
                    added_by[y as usize] = x as u32;
                    targets.push(i64::from(y));
                }
            }
        }
        offsets.push(targets.len());
    }
    // The parts satisfy the CSR invariants by construction.
    Csr::from_parts(Arc::new(offsets), Arc::new(targets)).unwrap_or_else(|_| Csr::empty(count))
}

/// One GRAIL label of a DAG: a depth-first traversal whose roots and children come in a
/// seeded random order (a random rotation and direction of each adjacency list, roots in a
/// random rotation of the vertex order); `[low, high] = [smallest post-order rank of a
/// descendant, own post-order rank]`, ranks from 1. Returns `2·c` values, low then high.
pub fn post_order_label(dag: &Csr, seed: u32) -> Vec<i64> {
    let c = dag.vertex_count();
    let mut label = vec![0i64; 2 * c];
    let mut visited = vec![false; c];
    let mut rank = 0i64;
    // (vertex, children visited so far, rotation, step)
    let mut stack: Vec<(usize, usize, usize, bool)> = Vec::new();
    let first = if c == 0 { 0 } else { mix(seed) as usize % c };
    let start = |x: usize| {
        let h = mix(seed ^ (x as u32).wrapping_mul(0x2c1b_3c6d)) as usize;
        (x, 0usize, h >> 1, h & 1 == 1)
    };
    for r in 0..c {
        let root = (first + r) % c;
        if visited[root] {
            continue;
        }
        visited[root] = true;
        stack.push(start(root));
        while let Some(top) = stack.last_mut() {
            let (x, done, rotation, backwards) = *top;
            let children = dag.adjacent(x);
            if done < children.len() {
                top.1 += 1;
                let i = (rotation + done) % children.len();
                let i = if backwards { children.len() - 1 - i } else { i };
                let y = children[i] as usize;
                if !visited[y] {
                    visited[y] = true;
                    stack.push(start(y));
                }
                continue;
            }
            stack.pop();
            rank += 1;
            let low = children
                .iter()
                .map(|&y| label[2 * y as usize])
                .fold(rank, i64::min);
            label[2 * x] = low;
            label[2 * x + 1] = rank;
        }
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::msbfs;

    fn graph(n: usize, edges: &[(i64, i64)]) -> Csr {
        let (src, dst): (Vec<i64>, Vec<i64>) = edges.iter().copied().unzip();
        Csr::from_edges(&src, &dst, n).unwrap()
    }

    fn all_pairs(n: usize) -> (Vec<i64>, Vec<i64>) {
        (0..n * n).map(|i| ((i / n) as i64, (i % n) as i64)).unzip()
    }

    #[test]
    fn tarjan_finds_cycles_and_orders_components_sinks_first() {
        // 0 <-> 1 -> 2 <-> 3 -> 4, 5 alone with a self-loop.
        let g = graph(6, &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 2), (3, 4), (5, 5)]);
        let (component, count) = strongly_connected_components(&g);
        assert_eq!(count, 4);
        assert_eq!(component[0], component[1]);
        assert_eq!(component[2], component[3]);
        assert!(component[4] < component[2] && component[2] < component[0]);
        let dag = condensation(&g, &component, count);
        assert_eq!(dag.edge_count(), 2);
    }

    #[test]
    fn post_order_labels_contain_their_descendants() {
        let g = graph(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (4, 3)]);
        for seed in 0..8 {
            let label = post_order_label(&g, label_seed(seed));
            let mut ranks: Vec<i64> = label.chunks(2).map(|l| l[1]).collect();
            ranks.sort();
            assert_eq!(ranks, vec![1, 2, 3, 4, 5]);
            for x in 0..5 {
                for &y in g.adjacent(x) {
                    let y = y as usize;
                    assert!(label[2 * x] <= label[2 * y] && label[2 * y + 1] < label[2 * x + 1]);
                }
            }
        }
    }

    #[test]
    fn index_answers_equal_bfs_on_every_pair() {
        let g = graph(
            7,
            &[
                (0, 1),
                (1, 2),
                (2, 0),
                (2, 3),
                (3, 4),
                (5, 4),
                (5, 6),
                (6, 6),
            ],
        );
        let (s, t) = all_pairs(7);
        let expected = msbfs::reachable(&g, &s, &t).unwrap();
        for d in 1..=MAX_LABELS {
            let index = ReachIndex::build(&g, d).unwrap();
            assert_eq!(index.reachable(&s, &t).unwrap(), expected, "d = {d}");
        }
    }

    #[test]
    fn index_round_trips_through_its_value() {
        let g = graph(4, &[(0, 1), (1, 0), (1, 2)]);
        let index = ReachIndex::build(&g, 2).unwrap();
        let value = index.to_value();
        assert_eq!(value.ty().to_string(), "dict<sym,list<i64>>");
        assert_eq!(ReachIndex::from_value(&value).unwrap(), index);
        let err = ReachIndex::from_value(&Value::from_i64s(vec![1])).unwrap_err();
        assert!(err.message.contains("expected a reachability index"));
    }

    #[test]
    fn label_counts_outside_one_to_eight_are_errors() {
        assert_eq!(label_count(0).unwrap(), DEFAULT_LABELS);
        assert_eq!(label_count(8).unwrap(), 8);
        assert!(label_count(9).unwrap_err().message.contains("1 to 8"));
        assert!(label_count(-1).is_err());
    }

    #[test]
    fn queries_check_their_vertices() {
        let index = ReachIndex::build(&graph(2, &[(0, 1)]), 1).unwrap();
        let err = index.reachable(&[0, 2], &[1, 0]).unwrap_err();
        assert_eq!(
            err.message,
            "@reachable: pair 1 has source 2, outside the vertices 0..2"
        );
        assert!(index.reachable(&[0], &[]).is_err());
    }
}
