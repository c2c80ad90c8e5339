//! `@reach_index` and `@reachable` through an index, on the GPU: the GRAIL index of
//! [`super::grail`] built by level-synchronous kernels, and queries answered by a label
//! filter plus the IBFS kernel pruned by the labels.
//!
//! The build ([`GpuReachIndex::build`]), all on the device; the host only reads a few words
//! between levels (queue lengths, counts) and sizes buffers:
//! 1. Strongly connected components (`shaders/grail_scc.wgsl`): Kahn trimming of the graph
//!    (in-degrees), which on a DAG removes every vertex and already gives the DAG's levels;
//!    otherwise the reverse graph (built like the condensation below), Kahn trimming of the
//!    out-degrees, and colouring rounds for the rest.
//! 2. Components renumbered `0..c` and the condensed DAG with its reverse, in CSR form
//!    (`shaders/grail_dag.wgsl`, prefix sums from `shaders/grail_scan.wgsl`), and the DAG's
//!    levels by Kahn's algorithm (unless step 1 gave them).
//! 3. `d` labels by four passes per label (`shaders/grail_label.wgsl`), level by level,
//!    recorded in one submission per label with no read-back.
//!
//! A query ([`GpuReachIndex::reachable`]): `shaders/grail_query.wgsl` settles each pair whose
//! ends share a component (reachable) or whose labels exclude the destination (unreachable),
//! then, with the reach sets of a few hub components, each pair with a hub between its ends
//! (reachable) or a hub that reaches the source but not the destination, or is reached by
//! the destination but not the source (unreachable); the other pairs run on the condensed
//! DAG as IBFS searches ([`GpuGraph`]) that never expand a component whose labels exclude
//! the lane's destination.
//!
//! Labels alone settle mostly negative pairs: on a random DAG of average degree 50 about half
//! the pairs are reachable, and a label (an interval of one spanning tree's post-order)
//! proves reachability only for tree descendants, a handful of pairs. Without hubs each of
//! those pairs costs a search whose frontier spans much of the graph within a few levels.
//! The reach sets of [`DEFAULT_HUBS`] hubs (two unpruned IBFS batches, forward and on the
//! reverse DAG, built on the first query and kept) settle most of them, which is how GRAIL's
//! successors (FERRARI, BFL, IP) use landmarks too.

mod build;
mod kernels;

use std::sync::{Arc, Mutex};

use crate::bail;
use crate::error::Result;
use crate::gpu::{Device, MAX_ELEMENTS};
use crate::graph::csr::{vertex_index, Csr};
use crate::graph::gpu::{
    download_i32, scratch, storage, GpuGraph, GpuOptions, PruningLabels, SearchStats,
};
use crate::graph::grail::{mix, ReachIndex};

use kernels::{dispatch, query_module, read_words, submit, u32s, uniform, workgroups, Module};
pub use kernels::{
    grail_sources, GrailKernels, DAG_WGSL, LABEL_WGSL, QUERY_WGSL, SCAN_WGSL, SCC_WGSL,
};

/// What a build did, for `--time`-like reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Kahn levels of the trimming passes (forward, then backward).
    pub trim_levels: usize,
    /// Vertices left for colouring after trimming.
    pub colored_vertices: usize,
    /// Colouring rounds.
    pub color_rounds: usize,
    /// Levels of the condensed DAG.
    pub dag_levels: usize,
}

/// What a query did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    pub pairs: usize,
    /// Pairs the label filter answered (same component, or excluded by a label).
    pub settled_by_labels: usize,
    /// Hub components whose reach sets the filter used (0: none).
    pub hubs: usize,
    /// Pairs the hub reach sets answered, of those the labels left open.
    pub settled_by_hubs: usize,
    /// The searches that built the hub reach sets (forward and backward, summed); all zero
    /// when an earlier query had built them.
    pub hub_search: SearchStats,
    /// The pruned search of the rest.
    pub search: SearchStats,
}

/// Hub components per query by default: 128 (4 status words per component in each
/// direction). On a random DAG of 2·10^5 vertices and average degree 50, 64 hubs settle 83 %
/// of the reachable pairs the labels leave open, 128 hubs 85 %, 256 hubs 88 %.
pub const DEFAULT_HUBS: usize = 128;

/// Most hub components: one IBFS batch.
pub const MAX_HUBS: usize = 1024;

/// Verdicts of `shaders/grail_query.wgsl`.
const SETTLED_UNREACHABLE: i32 = 0;
const SETTLED_REACHABLE: i32 = 1;
const HUB_REACHABLE: i32 = 3;
const HUB_UNREACHABLE: i32 = 4;

/// The reach sets of the hub components (see `shaders/grail_query.wgsl`).
struct HubSets {
    count: usize,
    words: usize,
    /// Bit j of word `x · words + j / 32`: hub j reaches component x.
    reached_by: wgpu::Buffer,
    /// Bit j of word `x · words + j / 32`: component x reaches hub j.
    reaches: wgpu::Buffer,
}

/// `count` distinct components of `0..c` (`count ≤ c`): one at a hashed position in each of
/// `count` equal blocks of the component numbers, so they spread over the numbering.
pub fn hub_components(c: usize, count: usize) -> Vec<u32> {
    if count >= c {
        return (0..c as u32).collect();
    }
    (0..count)
        .map(|j| {
            let (start, end) = (j * c / count, (j + 1) * c / count);
            (start + mix(0x4855_4253 ^ j as u32) as usize % (end - start)) as u32
        })
        .collect()
}

/// A reachability index on the device: the component of each vertex, the labels, and the
/// condensed DAG ready for pruned IBFS searches.
pub struct GpuReachIndex<'d> {
    device: &'d Device,
    vertex_count: usize,
    component_count: usize,
    dag_edge_count: usize,
    label_count: usize,
    component: wgpu::Buffer,
    labels: wgpu::Buffer,
    dag_offsets: wgpu::Buffer,
    dag_targets: wgpu::Buffer,
    dag: GpuGraph<'d>,
    query: Module,
    /// Built by the first query that uses hubs, for its hub count.
    hubs: Mutex<Option<Arc<HubSets>>>,
    pub stats: BuildStats,
}

impl<'d> GpuReachIndex<'d> {
    /// An index built elsewhere (a value of `@reach_index`), uploaded for GPU queries.
    pub fn upload(device: &'d Device, index: &ReachIndex) -> Result<GpuReachIndex<'d>> {
        let n = index.vertex_count();
        let c = index.component_count();
        let dag = index.dag();
        let m = dag.edge_count();
        if n >= MAX_ELEMENTS || m >= MAX_ELEMENTS || index.labels().len() >= MAX_ELEMENTS {
            bail!(
                "@reachable: an index of {n} vertices and {m} DAG edges is too large for the GPU"
            );
        }
        let reverse = dag.transpose();
        let buffer = |label: &str, values: Vec<u32>| storage(device, label, &values);
        let component = buffer(
            "grail component",
            u32s(index.components().iter().map(|&x| x as usize)),
        )?;
        let labels = buffer(
            "grail labels",
            u32s(index.labels().iter().map(|&x| x as usize)),
        )?;
        let dag_offsets = buffer("grail dag offsets", u32s(dag.offsets().iter().copied()))?;
        let dag_targets = buffer(
            "grail dag targets",
            u32s(dag.neighbour_values().iter().map(|&x| x as usize)),
        )?;
        let dag_graph = GpuGraph::from_buffers(
            device,
            [c, m],
            [
                dag_offsets.clone(),
                dag_targets.clone(),
                buffer(
                    "grail dag reverse offsets",
                    u32s(reverse.offsets().iter().copied()),
                )?,
                buffer(
                    "grail dag reverse targets",
                    u32s(reverse.neighbour_values().iter().map(|&x| x as usize)),
                )?,
            ],
            Some(PruningLabels {
                labels: labels.clone(),
                label_count: index.label_count(),
            }),
        )?;
        Ok(GpuReachIndex {
            device,
            vertex_count: n,
            component_count: c,
            dag_edge_count: m,
            label_count: index.label_count(),
            component,
            labels,
            dag_offsets,
            dag_targets,
            dag: dag_graph,
            query: query_module(device)?,
            hubs: Mutex::new(None),
            stats: BuildStats::default(),
        })
    }

    pub fn vertex_count(&self) -> usize {
        self.vertex_count
    }

    pub fn component_count(&self) -> usize {
        self.component_count
    }

    pub fn dag_edge_count(&self) -> usize {
        self.dag_edge_count
    }

    pub fn label_count(&self) -> usize {
        self.label_count
    }

    /// Bytes of the index on the device (u32 words: components, DAG out-edges, labels; the
    /// reverse DAG that bottom-up search levels use is not counted).
    pub fn size_bytes(&self) -> usize {
        4 * (self.vertex_count
            + self.component_count
            + 1
            + self.dag_edge_count
            + 2 * self.label_count * self.component_count)
    }

    /// The index as a host value (the value of `@reach_index`).
    pub fn download(&self) -> Result<ReachIndex> {
        let device = self.device;
        let c = self.component_count;
        let widen = |words: Vec<u32>| -> Vec<i64> { words.into_iter().map(i64::from).collect() };
        let component = widen(read_words(device, &self.component, 0, self.vertex_count)?);
        let offsets: Vec<usize> = read_words(device, &self.dag_offsets, 0, c + 1)?
            .into_iter()
            .map(|o| o as usize)
            .collect();
        let targets = widen(read_words(
            device,
            &self.dag_targets,
            0,
            self.dag_edge_count,
        )?);
        let labels = widen(read_words(
            device,
            &self.labels,
            0,
            2 * self.label_count * c,
        )?);
        let dag = Csr::from_parts(Arc::new(offsets), Arc::new(targets))?;
        ReachIndex::from_parts(Arc::new(component), dag, Arc::new(labels), self.label_count)
    }

    /// The reach sets of `count` hubs (at most [`MAX_HUBS`] and the component count), from
    /// the cache when the last query used as many; with the searches that built them.
    fn hub_sets(&self, count: usize) -> Result<(Arc<HubSets>, SearchStats)> {
        let count = count.min(MAX_HUBS).min(self.component_count);
        if let Ok(slot) = self.hubs.lock() {
            if let Some(hubs) = slot.as_ref().filter(|h| h.count == count) {
                return Ok((hubs.clone(), SearchStats::default()));
            }
        }
        let hubs = hub_components(self.component_count, count);
        let (reached_by, words, forward) = self.dag.reach_sets(&hubs)?;
        let (reaches, back_words, backward) = self.dag.reversed()?.reach_sets(&hubs)?;
        if words != back_words {
            bail!("GPU GRAIL: hub reach sets of {words} and {back_words} words");
        }
        let stats = SearchStats {
            lanes: forward.lanes,
            batches: forward.batches + backward.batches,
            levels: forward.levels + backward.levels,
            bottom_up_levels: forward.bottom_up_levels + backward.bottom_up_levels,
            checks: forward.checks + backward.checks,
        };
        let sets = Arc::new(HubSets {
            count,
            words,
            reached_by,
            reaches,
        });
        if let Ok(mut slot) = self.hubs.lock() {
            *slot = Some(sets.clone());
        }
        Ok((sets, stats))
    }

    /// `@reachable` through the index: the label filter (with [`DEFAULT_HUBS`] hubs) on the
    /// GPU, then pruned IBFS over the condensed DAG for the pairs it leaves open.
    pub fn reachable(
        &self,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
    ) -> Result<(Vec<bool>, QueryStats)> {
        self.reachable_with_hubs(sources, destinations, options, DEFAULT_HUBS)
    }

    /// [`Self::reachable`] with the reach sets of `hubs` hub components (0: labels alone;
    /// at most [`MAX_HUBS`]). The answers never depend on `hubs`.
    pub fn reachable_with_hubs(
        &self,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
        hubs: usize,
    ) -> Result<(Vec<bool>, QueryStats)> {
        let device = self.device;
        let n = self.vertex_count;
        if sources.len() != destinations.len() {
            bail!(
                "@reachable: {} sources but {} destinations",
                sources.len(),
                destinations.len()
            );
        }
        let pairs = sources.len();
        if pairs >= MAX_ELEMENTS / 2 {
            bail!("@reachable: {pairs} pairs, more than the GPU handles in one call");
        }
        let mut source_ids = Vec::with_capacity(pairs);
        let mut destination_ids = Vec::with_capacity(pairs);
        for (pair, (&s, &t)) in sources.iter().zip(destinations).enumerate() {
            let Some(s) = vertex_index(s, n) else {
                bail!("@reachable: pair {pair} has source {s}, outside the vertices 0..{n}");
            };
            let Some(t) = vertex_index(t, n) else {
                bail!("@reachable: pair {pair} has destination {t}, outside the vertices 0..{n}");
            };
            source_ids.push(s as u32);
            destination_ids.push(t as u32);
        }
        let mut stats = QueryStats {
            pairs,
            ..QueryStats::default()
        };
        if pairs == 0 {
            return Ok((Vec::new(), stats));
        }
        let hub_sets = if hubs == 0 || self.component_count == 0 {
            None
        } else {
            let (sets, built) = self.hub_sets(hubs)?;
            stats.hubs = sets.count;
            stats.hub_search = built;
            Some(sets)
        };
        let no_hubs = scratch(device, "grail no hubs", 1)?;
        let (reached_by, reaches) = match &hub_sets {
            Some(sets) => (&sets.reached_by, &sets.reaches),
            None => (&no_hubs, &no_hubs),
        };
        let params = uniform(
            device,
            "grail query params",
            &[
                pairs as u32,
                self.component_count as u32,
                self.label_count as u32,
                hub_sets.as_ref().map_or(0, |sets| sets.words as u32),
            ],
        )?;
        let source_buffer = storage(device, "grail query sources", &source_ids)?;
        let destination_buffer = storage(device, "grail query destinations", &destination_ids)?;
        let verdict = scratch(device, "grail verdicts", pairs)?;
        let pair_components = scratch(device, "grail pair components", 2 * pairs)?;
        let group = self.query.bind(
            device,
            &[
                &params,
                &self.component,
                &self.labels,
                &source_buffer,
                &destination_buffer,
                &verdict,
                &pair_components,
                reached_by,
                reaches,
            ],
        )?;
        submit(device, "grail label filter", |encoder| {
            dispatch(
                encoder,
                self.query.pipeline("label_filter")?,
                &group,
                &[],
                workgroups(device, pairs),
            );
            Ok(())
        })?;
        let verdicts = download_i32(device, &verdict, pairs)?;
        let ends = read_words(device, &pair_components, 0, 2 * pairs)?;
        let mut answers = vec![false; pairs];
        let mut open = Vec::new();
        let (mut from, mut to) = (Vec::new(), Vec::new());
        for (pair, &v) in verdicts.iter().enumerate() {
            match v {
                SETTLED_UNREACHABLE => stats.settled_by_labels += 1,
                SETTLED_REACHABLE => {
                    stats.settled_by_labels += 1;
                    answers[pair] = true;
                }
                HUB_UNREACHABLE => stats.settled_by_hubs += 1,
                HUB_REACHABLE => {
                    stats.settled_by_hubs += 1;
                    answers[pair] = true;
                }
                _ => {
                    open.push(pair);
                    from.push(i64::from(ends[2 * pair]));
                    to.push(i64::from(ends[2 * pair + 1]));
                }
            }
        }
        if !open.is_empty() {
            let (lengths, search) = self.dag.search("@reachable", &from, &to, options)?;
            stats.search = search;
            for (&pair, &length) in open.iter().zip(&lengths) {
                answers[pair] = length >= 0;
            }
        }
        Ok((answers, stats))
    }
}
