//! Compatibility analysis of one body (a function body, or the body of a compound statement
//! that stays on the host): groups its statements into kernels in rNdN's three greedy steps.
//!
//! The *units* of a body are its top-level statements; a compound statement whose whole
//! subtree can run in one kernel is a single GPU unit (see [`Context::compound_geometry`]).
//! Edges between units are the function's data dependences lifted to the units that contain
//! their endpoints; edges that point backward (loop-carried, inside a host loop) only order
//! one iteration's launches after the previous one's and are ignored, as in rNdN.
//!
//! 1. **Pipeline** (reverse program order): a GPU unit joins the kernel of its data successors
//!    when they all sit in one kernel, no edge to it is synchronized, and the geometries are
//!    equal (scalars fuse with anything).
//! 2. **Siblings**: two kernels of equal geometry that are both successors of one group (they
//!    read the same data) merge when no path joins them.
//! 3. **Parent into child**: a kernel merges into the successor it shares the most values
//!    with, allowing the successor to run masked over a compressed geometry.
//!
//! 4. Beyond rNdN: kernels of equal geometry that no path joins merge even when they read
//!    no common data (one launch instead of two).
//!
//! Every merge keeps the graph of groups acyclic: two groups never merge when a path between
//! them passes through a third group (the case of Figure 4.13 in the rNdN thesis), and a
//! merged kernel never runs a masked statement over a compacted input (see
//! [`Context::masked_reads_are_inside`]). Steps 2 and 3 repeat until nothing merges, then
//! step 4 runs, and the whole repeats until nothing merges.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use crate::analysis::dependence::DependenceKind;
use crate::analysis::device::Device;
use crate::analysis::{Geometry, StmtId};
use crate::sema::typed::StmtKind;

use super::compatibility::{merge_geometry, Fusion};
use super::group_aggregate::FusedGroup;

mod context;
pub(crate) use context::{Context, Members};

/// Storage buffers one kernel may bind. wgpu devices differ (lavapipe allows 32, NVIDIA far
/// more), and the program is compiled before a device is chosen, so kernels are sized for the
/// smallest limit of the devices we run on: a fused kernel of a wide query (TPC-H q10 gathers
/// eight columns, each with its index check) is split rather than refused by the device.
pub const MAX_STORAGE_BINDINGS: usize = 32;

/// What a unit is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Role {
    /// Fusable into a generated kernel, with its geometry.
    Gpu(Geometry),
    /// A library kernel of its own.
    Library,
    /// A simple host statement.
    Host,
    /// A compound statement whose bodies are outlined separately.
    HostCompound,
    /// A fused group aggregation (index into the body's fused groups): one library call in
    /// place of its statements, which form this one unit.
    Fused(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct Unit {
    pub stmt: StmtId,
    pub role: Role,
}

/// Dependences between two units (or groups), all pointing the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Link {
    /// How many values (true dependences) flow along it.
    values: usize,
    /// Some dependence needs a barrier between the two ends.
    barrier: bool,
}

impl Link {
    fn add(&mut self, other: Link) {
        self.values += other.values;
        self.barrier |= other.barrier;
    }
}

/// A group of units: a kernel (with its launch geometry) or one host/library unit.
#[derive(Clone, Debug)]
struct Group {
    units: Vec<usize>,
    kernel: Option<Geometry>,
}

/// The groups of one body, from which the builder emits launches and host statements.
#[derive(Clone, Debug)]
pub(crate) struct Partition {
    pub units: Vec<Unit>,
    /// The links between units, sorted by `(from, to)`, one per pair.
    links: Vec<((usize, usize), Link)>,
    group_of: Vec<usize>,
    groups: Vec<Option<Group>>,
    /// The links between groups, kept up to date by every merge (rebuilding it from the
    /// unit links after each merge made the outliner quadratic in a body's size).
    graph: GroupGraph,
    /// Per group, how many merges changed it: the key under which refusals are remembered.
    versions: Vec<u32>,
    /// Per group, its first unit (`usize::MAX` once merged away), kept by every merge: the
    /// launch order breaks ties by it, and is walked again after every merge.
    first_units: Vec<usize>,
    /// Pairs [`Partition::merged`] refused, with the versions of both groups then. A refusal
    /// stands while neither group changes: other merges only contract the graph, so a path
    /// between the two through a third group stays one, and every other condition depends
    /// on the two groups alone. Each step rescans all pairs after a merge; without this the
    /// same refusals were worked out again each time.
    refused: RefCell<HashSet<u128, BuildHasherDefault<PairHasher>>>,
    /// Per group, true once step 2 (siblings) found every pair of its children refused, or
    /// step 3 (parent into child) every child. Such a group is skipped until a merge changes
    /// it, one of its successors or its links: a merge makes `into` stand for both groups,
    /// so exactly `into`, `from` and the predecessors of `into` may see a new answer, and
    /// every other pair keeps its refusal (see `refused`). Without this each step scanned
    /// every group's children again after every merge, each pair a refusal look-up.
    settled: RefCell<Settled>,
}

/// Groups [`Partition::sibling_merge`] and [`Partition::parent_merge`] have nothing to
/// merge for (see [`Partition::settled`]).
#[derive(Clone, Debug, Default)]
struct Settled {
    siblings: Vec<bool>,
    parent: Vec<bool>,
}

/// The hash of a packed refusal key or a pair of groups: the steps look up every pair again
/// after each merge, and SipHash made the lookups a visible part of compile time.
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, value: usize) {
        let mixed = (self.0.rotate_left(29) ^ value as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = mixed ^ (mixed >> 32);
    }

    fn write_u128(&mut self, key: u128) {
        let mixed = (key as u64) ^ ((key >> 64) as u64).rotate_left(32);
        self.0 = (mixed ^ (mixed >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
}

/// The refusal key of groups `a` and `b` at their versions: exact below 2^32 groups and 2^31
/// merges into one group (a collision beyond could only cost a fusion, never correctness).
fn refusal_key(a: usize, version_a: u32, b: usize, version_b: u32, fusion: Fusion) -> u128 {
    let fusion = match fusion {
        Fusion::Identical => 0u128,
        Fusion::Masked => 1,
    };
    ((a as u128) << 96)
        | (u128::from(version_a) << 64)
        | ((b as u128) << 32)
        | (u128::from(version_b) << 1)
        | fusion
}

/// A merge a step chose: `(into, from, geometry of the merged kernel)`.
type Merge = (usize, usize, Geometry);

/// [`Partition::topological`] one group at a time (Kahn's algorithm, ties to the group whose
/// first unit comes first), so that a step can stop once it has what it looks for. A cycle
/// ends the walk before every live group was given.
struct TopologicalWalk<'a> {
    graph: &'a GroupGraph,
    indegree: Vec<usize>,
    /// The ready groups, one bit each at its first unit (the first units of live groups are
    /// distinct): the next group is the lowest bit set. (A heap of them cost more than the
    /// rest of the walk.)
    ready: Vec<u64>,
    /// The live group whose first unit each unit is.
    group_at: Vec<usize>,
    /// Each group's first unit (`usize::MAX` for a merged-away one).
    first_of: &'a [usize],
}

impl<'a> TopologicalWalk<'a> {
    fn new(partition: &'a Partition, graph: &'a GroupGraph) -> TopologicalWalk<'a> {
        // A group's predecessors are exactly the groups linked to it.
        let indegree: Vec<usize> = graph.predecessors.iter().map(GroupSet::len).collect();
        let units = partition.units.len();
        let mut walk = TopologicalWalk {
            graph,
            indegree,
            ready: vec![0; units.div_ceil(64)],
            group_at: vec![usize::MAX; units],
            first_of: &partition.first_units,
        };
        for g in 0..partition.groups.len() {
            let first = walk.first_of[g];
            if let Some(at) = walk.group_at.get_mut(first) {
                *at = g;
                if walk.indegree[g] == 0 {
                    walk.ready[first / 64] |= 1 << (first % 64);
                }
            }
        }
        walk
    }
}

impl Iterator for TopologicalWalk<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let word = self.ready.iter().position(|&bits| bits != 0)?;
        let bits = self.ready[word];
        self.ready[word] = bits & (bits - 1);
        let group = self.group_at[word * 64 + bits.trailing_zeros() as usize];
        for &next in &self.graph.successors[group] {
            self.indegree[next] -= 1;
            if self.indegree[next] == 0 {
                let first = self.first_of[next];
                if let Some(word) = self.ready.get_mut(first / 64) {
                    *word |= 1 << (first % 64);
                }
            }
        }
        Some(group)
    }
}

/// One group of the final partition, in launch order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Placed {
    /// A kernel: its unit statements in program order and its geometry.
    Kernel(Vec<StmtId>, Geometry),
    /// A unit that stays outside kernels.
    Single(usize),
}

/// The group graph at one moment: links between live groups and each group's successors.
#[derive(Clone, Debug)]
struct GroupGraph {
    /// Hashed, not ordered: the steps look a link up for every pair they try, again after
    /// each merge, and nothing iterates the links in an order that matters.
    links: HashMap<(usize, usize), Link, BuildHasherDefault<PairHasher>>,
    /// Each group's successors, in ascending order (ties in step 3 go to the first).
    successors: Vec<GroupSet>,
    predecessors: Vec<GroupSet>,
    /// The marks and stack of [`GroupGraph::indirect_path`], kept between its calls: the
    /// merge steps search once or twice per pair they try, and each search allocated both.
    search: RefCell<PathSearch>,
}

#[derive(Clone, Debug, Default)]
struct PathSearch {
    seen: Vec<bool>,
    stack: Vec<usize>,
}

/// A set of groups, as a sorted Vec: the sets are small and scanned far more often than
/// changed (every step walks successors again after each merge), and a tree's nodes made
/// each scan chase pointers.
#[derive(Clone, Debug, Default)]
struct GroupSet(Vec<usize>);

impl GroupSet {
    fn insert(&mut self, group: usize) {
        if let Err(at) = self.0.binary_search(&group) {
            self.0.insert(at, group);
        }
    }

    fn remove(&mut self, group: &usize) {
        if let Ok(at) = self.0.binary_search(group) {
            self.0.remove(at);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn iter(&self) -> std::slice::Iter<'_, usize> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a GroupSet {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for GroupSet {
    type Item = usize;
    type IntoIter = std::vec::IntoIter<usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl GroupGraph {
    /// The graph of one group per unit.
    fn of_units(units: usize, links: &[((usize, usize), Link)]) -> GroupGraph {
        let mut successors = vec![GroupSet::default(); units];
        let mut predecessors = vec![GroupSet::default(); units];
        for &((a, b), _) in links {
            successors[a].insert(b);
            predecessors[b].insert(a);
        }
        GroupGraph {
            links: links.iter().copied().collect(),
            successors,
            predecessors,
            search: RefCell::default(),
        }
    }

    /// Moves every link of group `from` to group `into`, dropping those between the two.
    fn absorb(&mut self, into: usize, from: usize) {
        for next in std::mem::take(&mut self.successors[from]) {
            self.predecessors[next].remove(&from);
            let link = self.links.remove(&(from, next)).unwrap_or_default();
            if next != into {
                self.links.entry((into, next)).or_default().add(link);
                self.successors[into].insert(next);
                self.predecessors[next].insert(into);
            }
        }
        for previous in std::mem::take(&mut self.predecessors[from]) {
            self.successors[previous].remove(&from);
            let link = self.links.remove(&(previous, from)).unwrap_or_default();
            if previous != into {
                self.links.entry((previous, into)).or_default().add(link);
                self.predecessors[into].insert(previous);
                self.successors[previous].insert(into);
            }
        }
    }

    /// True when a link runs from `from` to `to`.
    fn linked(&self, from: usize, to: usize) -> bool {
        self.successors
            .get(from)
            .is_some_and(|next| next.0.binary_search(&to).is_ok())
    }

    fn link(&self, from: usize, to: usize) -> Link {
        self.links.get(&(from, to)).copied().unwrap_or_default()
    }

    /// True when a path from `from` to `to` passes through some third group.
    fn indirect_path(&self, from: usize, to: usize) -> bool {
        let mut search = self.search.borrow_mut();
        let PathSearch { seen, stack } = &mut *search;
        seen.clear();
        seen.resize(self.successors.len(), false);
        stack.clear();
        if let Some(next) = self.successors.get(from) {
            stack.extend(next.iter().copied().filter(|&g| g != to));
        }
        while let Some(group) = stack.pop() {
            if group == to {
                return true;
            }
            if std::mem::replace(&mut seen[group], true) {
                continue;
            }
            if let Some(next) = self.successors.get(group) {
                stack.extend(next.iter().copied());
            }
        }
        false
    }
}

impl Partition {
    /// The units of a body (its top-level statements `stmts`) and the links between them.
    /// The statements of each of `fused` form one unit at the place of its anchor.
    pub fn new(cx: &Context<'_>, stmts: &[StmtId], fused: &[FusedGroup]) -> Partition {
        let mut absorbed: rustc_hash::FxHashMap<StmtId, usize> = Default::default();
        for (index, group) in fused.iter().enumerate() {
            for &stmt in &group.absorbed {
                absorbed.insert(stmt, index);
            }
        }
        let units: Vec<Unit> = stmts
            .iter()
            .filter_map(|&stmt| match absorbed.get(&stmt) {
                Some(&index) if fused[index].anchor == stmt => Some(Unit {
                    stmt,
                    role: Role::Fused(index),
                }),
                Some(_) => None,
                None => Some(Unit {
                    stmt,
                    role: unit_role(cx, stmt),
                }),
            })
            .collect();
        // The unit holding each statement of the function (its own, a compound unit's
        // subtree, or the fused group's anchor), looked up once per statement rather than
        // searched for per dependence end.
        let mut unit_at: Vec<Option<usize>> = vec![None; cx.tree.len()];
        for (index, unit) in units.iter().enumerate() {
            let end = cx.subtree_end(unit.stmt).min(unit_at.len());
            for slot in unit_at.iter_mut().take(end).skip(unit.stmt.0) {
                *slot = Some(index);
            }
        }
        for (&stmt, &index) in &absorbed {
            if let Some(slot) = unit_at.get_mut(stmt.0) {
                let anchor = fused[index].anchor;
                *slot = units.iter().position(|u| u.stmt == anchor);
            }
        }
        let unit_of = |stmt: StmtId| -> Option<usize> { unit_at.get(stmt.0).copied().flatten() };
        // Collected, then sorted and merged per pair (a tree's insertion per dependence and
        // per pair around a barrier cost more than the rest of the partition).
        let graph = &cx.analysis.dependence;
        let mut links: Vec<((usize, usize), Link)> = Vec::with_capacity(graph.graph.edge_count());
        for edge in graph.graph.edge_references() {
            let (Some(from), Some(to)) = (graph.stmt(edge.source()), graph.stmt(edge.target()))
            else {
                continue;
            };
            let (Some(a), Some(b)) = (unit_of(from), unit_of(to)) else {
                continue;
            };
            // Same unit: internal. Backward: carried to the next iteration of a host loop.
            if a >= b {
                continue;
            }
            let weight = edge.weight();
            links.push((
                (a, b),
                Link {
                    values: usize::from(weight.kind == DependenceKind::True),
                    barrier: cx.needs_barrier(from, weight),
                },
            ));
        }
        // Effects and exits stay in place: everything before runs before, everything after
        // runs after.
        for (index, unit) in units.iter().enumerate() {
            if cx.is_barrier(unit.stmt) {
                for other in 0..units.len() {
                    let key = match other.cmp(&index) {
                        std::cmp::Ordering::Less => (other, index),
                        std::cmp::Ordering::Greater => (index, other),
                        std::cmp::Ordering::Equal => continue,
                    };
                    links.push((key, Link::default()));
                }
            }
        }
        // Stable: the dependences arrive sorted already, and the pairs of each barrier in
        // runs, which the merge sort takes as they are.
        links.sort_by_key(|&(pair, _)| pair);
        links.dedup_by(|(pair, link), (kept, sum)| {
            let same = pair == kept;
            if same {
                sum.add(*link);
            }
            same
        });
        let groups = units
            .iter()
            .enumerate()
            .map(|(index, unit)| {
                Some(Group {
                    units: vec![index],
                    kernel: match &unit.role {
                        Role::Gpu(geometry) => Some(geometry.clone()),
                        _ => None,
                    },
                })
            })
            .collect();
        Partition {
            group_of: (0..units.len()).collect(),
            graph: GroupGraph::of_units(units.len(), &links),
            versions: vec![0; units.len()],
            first_units: (0..units.len()).collect(),
            // Sized for a few refusals per unit (grown by rehashing, it was a visible part
            // of the first step).
            refused: RefCell::new(HashSet::with_capacity_and_hasher(
                4 * units.len(),
                Default::default(),
            )),
            settled: RefCell::new(Settled {
                siblings: vec![false; units.len()],
                parent: vec![false; units.len()],
            }),
            units,
            links,
            groups,
        }
    }

    /// Runs the three steps.
    pub fn outline(&mut self, cx: &Context<'_>) {
        self.pipeline(cx);
        loop {
            loop {
                let merged_siblings = self.merge_while(cx, Partition::sibling_merge);
                let merged_parent = self.merge_while(cx, Partition::parent_merge);
                if !merged_siblings && !merged_parent {
                    break;
                }
            }
            if !self.merge_while(cx, Partition::independent_merge) {
                break;
            }
        }
    }

    fn kernel_geometry(&self, group: usize) -> Option<&Geometry> {
        self.groups.get(group)?.as_ref()?.kernel.as_ref()
    }

    fn unit_statements(&self, groups: &[usize]) -> Vec<StmtId> {
        groups
            .iter()
            .filter_map(|&g| self.groups.get(g)?.as_ref())
            .flat_map(|group| group.units.iter().map(|&u| self.units[u].stmt))
            .collect()
    }

    /// The geometry of kernels `a` and `b` merged, or `None` when they must stay apart.
    fn merged(
        &self,
        cx: &Context<'_>,
        graph: &GroupGraph,
        a: usize,
        b: usize,
        fusion: Fusion,
    ) -> Option<Geometry> {
        if a == b {
            return None;
        }
        let key = refusal_key(a, self.versions[a], b, self.versions[b], fusion);
        if self.refused.borrow().contains(&key) {
            return None;
        }
        let merged = self.merged_uncached(cx, graph, a, b, fusion);
        if merged.is_none() {
            self.refused.borrow_mut().insert(key);
        }
        merged
    }

    fn merged_uncached(
        &self,
        cx: &Context<'_>,
        graph: &GroupGraph,
        a: usize,
        b: usize,
        fusion: Fusion,
    ) -> Option<Geometry> {
        let geometry = merge_geometry(self.kernel_geometry(a)?, self.kernel_geometry(b)?, fusion)?;
        if graph.link(a, b).barrier || graph.link(b, a).barrier {
            return None;
        }
        // The group graph is acyclic (every merge keeps it so): where a link runs one way,
        // no path runs the other, and that search (through every group after it) is skipped.
        let (forward, backward) = (graph.linked(a, b), graph.linked(b, a));
        if (!backward && graph.indirect_path(a, b)) || (!forward && graph.indirect_path(b, a)) {
            return None;
        }
        let members = Members::new(cx, &self.unit_statements(&[a, b]));
        if !(cx.masked_reads_are_inside(&members, &geometry)
            && cx.refusing_scalars_stay_scalar(&members, &geometry))
        {
            return None;
        }
        // Worked out once for the two checks that read it.
        let (inputs, outputs) = cx.interface(&members);
        (cx.scalar_outputs_stay_scalar(&members, &geometry, &outputs)
            && cx.failures_hide_no_earlier_error(&members)
            && cx.checks_wait_for_no_later_refusal(&members)
            && cx.checks_run_after_earlier_refusals(&members)
            && cx.waits_for_no_later_failure(&members)
            && cx.storage_bindings(&members, &inputs, &outputs) <= MAX_STORAGE_BINDINGS)
            .then_some(geometry)
    }

    fn merge(&mut self, into: usize, from: usize, geometry: Geometry) {
        let Some(moved) = self.groups.get_mut(from).and_then(Option::take) else {
            return;
        };
        for &unit in &moved.units {
            self.group_of[unit] = into;
        }
        if let Some(Some(target)) = self.groups.get_mut(into) {
            target.units.extend(moved.units);
            target.units.sort_unstable();
            target.kernel = Some(geometry);
        }
        self.graph.absorb(into, from);
        self.versions[into] += 1;
        self.versions[from] += 1;
        self.first_units[into] = self.first_units[into].min(self.first_units[from]);
        self.first_units[from] = usize::MAX;
        let settled = self.settled.get_mut();
        for group in [into, from]
            .into_iter()
            .chain(self.graph.predecessors[into].iter().copied())
        {
            settled.siblings[group] = false;
            settled.parent[group] = false;
        }
    }

    /// Step 1, in reverse program order: a GPU unit joins the kernel holding all of its data
    /// successors when the geometries are equal and nothing needs a barrier.
    fn pipeline(&mut self, cx: &Context<'_>) {
        for unit in (0..self.units.len()).rev() {
            if !matches!(self.units[unit].role, Role::Gpu(_)) {
                continue;
            }
            // The one group that all of the unit's data successors sit in, if there is one.
            let first = self.links.partition_point(|&(pair, _)| pair < (unit, 0));
            let end = self
                .links
                .partition_point(|&(pair, _)| pair < (unit + 1, 0));
            let mut successors = self.links[first..end]
                .iter()
                .filter(|(_, link)| link.values > 0)
                .map(|&((_, to), _)| self.group_of[to]);
            let Some(kernel) = successors.next() else {
                continue;
            };
            if successors.any(|group| group != kernel) {
                continue;
            }
            let own = self.group_of[unit];
            if let Some(geometry) = self.merged(cx, &self.graph, own, kernel, Fusion::Identical) {
                self.merge(kernel, own, geometry);
            }
        }
    }

    /// Makes the merges `find` names, one at a time, until it names none (each merge changes
    /// the graph the next is looked for in). `find` gives `(into, from, geometry)`. Returns
    /// whether anything merged.
    fn merge_while(
        &mut self,
        cx: &Context<'_>,
        find: fn(&Partition, &Context<'_>) -> Option<Merge>,
    ) -> bool {
        let mut merged_any = false;
        while let Some((into, from, geometry)) = find(self, cx) {
            self.merge(into, from, geometry);
            merged_any = true;
        }
        merged_any
    }

    /// Step 2: kernels of equal geometry that read the output of one group merge when no
    /// path joins them: the first such pair, in group order.
    fn sibling_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        for parent in 0..self.groups.len() {
            // Most groups feed one other group: no pair to look at (this scan runs again
            // after every merge).
            if graph.successors[parent].len() < 2 || self.settled.borrow().siblings[parent] {
                continue;
            }
            let children: Vec<usize> = graph.successors[parent]
                .iter()
                .copied()
                .filter(|&c| graph.link(parent, c).values > 0 && self.kernel_geometry(c).is_some())
                .collect();
            for (i, &first) in children.iter().enumerate() {
                for &second in &children[i + 1..] {
                    if let Some(geometry) = self.merged(cx, graph, first, second, Fusion::Identical)
                    {
                        return Some((first, second, geometry));
                    }
                }
            }
            self.settled.borrow_mut().siblings[parent] = true;
        }
        None
    }

    /// Step 3, in program order of the parents: a kernel merges into the successor kernel it
    /// passes the most values to, which may run masked over a compressed geometry: the
    /// first such parent, with the child it merges into.
    fn parent_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        let unsettled =
            |g: usize| self.kernel_geometry(g).is_some() && !self.settled.borrow().parent[g];
        let mut remaining = (0..self.groups.len()).filter(|&g| unsettled(g)).count();
        if remaining == 0 {
            return None;
        }
        // The launch order is walked only until every kernel that may merge was tried: most
        // calls find the merge, or learn there is none, well before the last group.
        let mut walk = TopologicalWalk::new(self, graph);
        while remaining > 0 {
            let Some(parent) = walk.next() else {
                break;
            };
            if !unsettled(parent) {
                continue;
            }
            remaining -= 1;
            if let Some(merge) = self.merge_into_child(cx, parent) {
                return Some(merge);
            }
        }
        if remaining == 0 {
            return None;
        }
        // The walk ended early: the graph has a cycle (a bug); the groups in id order, as
        // `order` gives them then.
        (0..self.groups.len())
            .filter(|&g| unsettled(g))
            .find_map(|parent| self.merge_into_child(cx, parent))
    }

    /// Step 3 for one kernel: the merge into the child it passes the most values to (the
    /// first such child), or `None` after marking it settled.
    fn merge_into_child(&self, cx: &Context<'_>, parent: usize) -> Option<Merge> {
        let graph = &self.graph;
        let mut best: Option<(usize, usize, Geometry)> = None;
        for &child in &graph.successors[parent] {
            let values = graph.link(parent, child).values;
            if values == 0 || best.as_ref().is_some_and(|(v, _, _)| *v >= values) {
                continue;
            }
            if let Some(geometry) = self.merged(cx, graph, parent, child, Fusion::Masked) {
                best = Some((values, child, geometry));
            }
        }
        if let Some((_, child, geometry)) = best {
            return Some((child, parent, geometry));
        }
        self.settled.borrow_mut().parent[parent] = true;
        None
    }

    /// Beyond rNdN, once steps 2 and 3 are done: two kernels of equal geometry that no path
    /// joins merge even when they share no input, saving a launch: the first such pair, in
    /// launch order.
    fn independent_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        let kernels: Vec<usize> = self
            .order(graph)
            .into_iter()
            .filter(|&g| self.kernel_geometry(g).is_some())
            .collect();
        for (i, &first) in kernels.iter().enumerate() {
            for &second in &kernels[i + 1..] {
                if let Some(geometry) = self.merged(cx, graph, first, second, Fusion::Identical) {
                    return Some((first, second, geometry));
                }
            }
        }
        None
    }

    /// The live groups in a topological order of the group graph that keeps program order
    /// wherever the dependences allow (ties go to the group whose first unit comes first).
    /// `None` if the graph has a cycle (a bug: every merge keeps it acyclic).
    fn topological(&self, graph: &GroupGraph) -> Option<Vec<usize>> {
        let mut order = Vec::with_capacity(self.groups.len());
        order.extend(TopologicalWalk::new(self, graph));
        let live = self.groups.iter().filter(|g| g.is_some()).count();
        (order.len() == live).then_some(order)
    }

    /// Live groups in topological order, or in first-unit order if (by a bug) there is none.
    fn order(&self, graph: &GroupGraph) -> Vec<usize> {
        self.topological(graph).unwrap_or_else(|| {
            (0..self.groups.len())
                .filter(|&g| self.groups[g].is_some())
                .collect()
        })
    }

    /// The final groups in launch order; `None` if the group graph has a cycle.
    pub fn placed(&self) -> Option<Vec<Placed>> {
        let order = self.topological(&self.graph)?;
        Some(
            order
                .into_iter()
                .filter_map(|g| {
                    let group = self.groups[g].as_ref()?;
                    Some(match &group.kernel {
                        Some(geometry) => Placed::Kernel(
                            group.units.iter().map(|&u| self.units[u].stmt).collect(),
                            geometry.clone(),
                        ),
                        None => Placed::Single(*group.units.first()?),
                    })
                })
                .collect(),
        )
    }
}

fn unit_role(cx: &Context<'_>, stmt: StmtId) -> Role {
    let Some(s) = cx.tree.stmt(stmt) else {
        return Role::Host;
    };
    match &s.kind {
        StmtKind::If { .. } | StmtKind::While { .. } | StmtKind::Repeat { .. } => {
            match cx.compound_geometry(stmt) {
                Some(geometry) => Role::Gpu(geometry),
                None => Role::HostCompound,
            }
        }
        _ => match cx.gpu_geometry(stmt) {
            Some(geometry) => Role::Gpu(geometry),
            None if cx.analysis.dependence.device(stmt) == Some(Device::Library) => Role::Library,
            None => Role::Host,
        },
    }
}
