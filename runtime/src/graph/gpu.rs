//! IBFS on the GPU: `@shortest_path_length` and `@reachable` for many (source, destination)
//! pairs as one library kernel (`shaders/ibfs.wgsl`, which describes the five kernels of a
//! level).
//!
//! The host side:
//! - validates the pairs (an out-of-range vertex is an error naming the pair), answers
//!   source = destination with 0, and groups the rest by source, so pairs that share a source
//!   share one search ("lane");
//! - packs the distinct sources into batches of ω = 32·W lanes, W u32 words of status bits per
//!   vertex (W = 1 … 32, so ω = 32 … 1024; chosen from the number of sources and the device's
//!   binding limit). Batches run one after another on the same buffers;
//! - records the levels of a batch in chunks of a few levels with no read-back in between:
//!   every dispatch but one per level is indirect, sized on the GPU by the `control` kernel,
//!   which also picks top-down or bottom-up for the next level and stops the batch (zero
//!   workgroups from then on) when no destination is pending or the frontier is empty. The
//!   host reads one `done` word per chunk, and keeps two chunks in flight so the GPU does not
//!   wait for that read;
//! - downloads the lengths once, after the last batch.
//!
//! [`GpuGraph`] keeps the graph (and its reverse, for bottom-up levels) resident on the
//! device, so a program (or a benchmark) that searches one graph many times uploads it once.

use wgpu::util::DeviceExt;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::template::{render, WORKGROUP_SIZE};
use crate::gpu::{Device, GpuError, MAX_ELEMENTS};
use crate::graph::csr::{vertex_index, Csr};
use crate::graph::msbfs::Direction;

/// `shaders/ibfs.wgsl`.
pub const IBFS_WGSL: &str = include_str!("../../../shaders/ibfs.wgsl");

/// Tuning knobs of the GPU search. Answers never depend on them; tests use them to exercise
/// every path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuOptions {
    /// Top-down, bottom-up, or chosen per level on the GPU from the frontier's edge count.
    pub direction: Direction,
    /// u32 words of lanes per vertex (ω = 32·W): 1, 2, 4, 8, 16 or 32; other values round up
    /// to the next of these. 0 chooses from the number of distinct sources.
    pub lane_words: usize,
    /// Levels recorded between two reads of the `done` flag; 0 means [`DEFAULT_CHECK_EVERY`].
    pub check_every: usize,
    /// A level goes bottom-up when the frontier's out-edges exceed 1/share of all edges;
    /// 0 means [`DEFAULT_BOTTOM_UP_SHARE`].
    pub bottom_up_share: u32,
}

/// Most u32 words of lanes per vertex: ω = 1024.
pub const MAX_LANE_WORDS: usize = 32;
/// Levels per chunk by default. Small-world graphs finish in 5–10 levels, so a batch costs
/// one or two read-backs; levels recorded after the end cost only empty indirect dispatches.
pub const DEFAULT_CHECK_EVERY: usize = 4;
/// Bottom-up once the frontier's out-edges exceed 1/16 of the edges (as on the CPU).
pub const DEFAULT_BOTTOM_UP_SHARE: u32 = 16;

/// What one call did, for benchmarks and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Concurrent searches per batch (ω).
    pub lanes: usize,
    /// Batches run.
    pub batches: usize,
    /// Levels run, summed over batches.
    pub levels: u64,
    /// Of those, levels that ran bottom-up.
    pub bottom_up_levels: u64,
    /// Read-backs of the `done` flag.
    pub checks: u64,
}

/// For each pair `i`, the number of edges on a shortest path from `sources[i]` to
/// `destinations[i]`: 0 when equal, -1 when unreachable. Uploads the graph, then searches.
pub fn shortest_path_lengths_gpu(
    device: &Device,
    graph: &Csr,
    sources: &[i64],
    destinations: &[i64],
    options: GpuOptions,
) -> Result<Vec<i64>> {
    GpuGraph::upload(device, graph)?
        .search("@shortest_path_length", sources, destinations, options)
        .map(|(lengths, _)| lengths)
}

/// For each pair `i`, whether `destinations[i]` can be reached from `sources[i]`.
pub fn reachable_gpu(
    device: &Device,
    graph: &Csr,
    sources: &[i64],
    destinations: &[i64],
    options: GpuOptions,
) -> Result<Vec<bool>> {
    let (lengths, _) =
        GpuGraph::upload(device, graph)?.search("@reachable", sources, destinations, options)?;
    Ok(lengths.into_iter().map(|length| length >= 0).collect())
}

/// A graph resident on the device (out-edges and in-edges in CSR form, u32 indexes) with the
/// compiled IBFS pipelines.
pub struct GpuGraph<'d> {
    device: &'d Device,
    vertex_count: usize,
    edge_count: usize,
    offsets: wgpu::Buffer,
    neighbours: wgpu::Buffer,
    reverse_offsets: wgpu::Buffer,
    reverse_neighbours: wgpu::Buffer,
    /// Shared with [`GpuGraph::reversed`] views of the same graph.
    kernels: std::sync::Arc<Kernels>,
    scratch: std::sync::Mutex<Option<Scratch>>,
    pruning: Option<PruningLabels>,
    /// Bound in place of the labels when there are none.
    no_labels: wgpu::Buffer,
}

/// Parameters of one batch (`Params` in the shader): 12 u32, a multiple of 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    m: u32,
    words: u32,
    max_workgroups: u32,
    lane_count: u32,
    source_offset: u32,
    target_count: u32,
    target_offset: u32,
    direction: u32,
    bottom_up_share: u32,
    label_count: u32,
    label_stride: u32,
}

/// Slots of the shader's `control` array that the host reads.
const LEVEL: usize = 3;
const DONE: usize = 5;
const BOTTOM_UP_LEVELS: usize = 6;
const CONTROL_WORDS: usize = 8;
/// Byte offsets of the indirect arguments in `args` (see the shader).
const ARGS_TOP_DOWN: u64 = 0;
const ARGS_BOTTOM_UP: u64 = 16;
const ARGS_IDENTIFY: u64 = 32;
const ARGS_SETTLE: u64 = 48;
const ARGS_WORDS: usize = 16;

/// Binding kinds of group 0, in binding order (see the shader).
const GROUP0: [Access; 18] = [
    Access::Uniform,   // params
    Access::Read,      // offsets
    Access::Read,      // neighbours
    Access::Read,      // reverse_offsets
    Access::Read,      // reverse_neighbours
    Access::ReadWrite, // seen
    Access::ReadWrite, // frontier
    Access::ReadWrite, // next_bits
    Access::Read,      // queue_in
    Access::ReadWrite, // queue_out
    Access::ReadWrite, // control
    Access::Read,      // sources
    Access::Read,      // targets
    Access::ReadWrite, // results
    Access::ReadWrite, // lane_pending
    Access::ReadWrite, // active_lanes
    Access::Read,      // labels
    Access::Read,      // lane_destinations
];

/// `lane_destinations` of a lane with several destinations: not pruned.
const NO_DESTINATION: u32 = u32::MAX;

/// GRAIL labels that prune the search (on the condensed DAG of a reachability index): a lane
/// with one destination never expands a vertex whose labels do not contain the destination's.
pub struct PruningLabels {
    /// `2 · (k · vertices + v)`: low, then high, of label `k` of vertex `v`.
    pub labels: wgpu::Buffer,
    pub label_count: usize,
}

#[derive(Clone, Copy)]
enum Access {
    Uniform,
    Read,
    ReadWrite,
}

/// The pipelines, built here rather than through `gpu::Commands` because the level kernels
/// are dispatched indirectly and `control` needs a second bind group.
struct Kernels {
    group0: wgpu::BindGroupLayout,
    group1: wgpu::BindGroupLayout,
    seed: wgpu::ComputePipeline,
    exclude: wgpu::ComputePipeline,
    control: wgpu::ComputePipeline,
    top_down: wgpu::ComputePipeline,
    bottom_up: wgpu::ComputePipeline,
    identify: wgpu::ComputePipeline,
    settle: wgpu::ComputePipeline,
}

pub(crate) fn gpu_error(e: GpuError) -> RuntimeError {
    RuntimeError::new(format!("GPU IBFS: {e}"))
}

pub(crate) fn command_error(label: String, message: String) -> GpuError {
    GpuError::Command { label, message }
}

pub(crate) fn shader_error(label: String, message: String) -> GpuError {
    GpuError::Shader { label, message }
}

/// The WGSL of the IBFS kernels, specialised (as validated in tests).
pub fn ibfs_source() -> std::result::Result<String, GpuError> {
    render(
        "ibfs.wgsl",
        IBFS_WGSL,
        &[("WORKGROUP_SIZE", &WORKGROUP_SIZE.to_string())],
    )
}

impl Kernels {
    fn new(device: &Device) -> Result<Kernels> {
        let source = ibfs_source().map_err(gpu_error)?;
        let raw = &device.device;
        device
            .capture_errors("ibfs.wgsl", shader_error, || {
                let module = device.shader_module("ibfs.wgsl", source.as_str());
                let entries: Vec<wgpu::BindGroupLayoutEntry> = GROUP0
                    .iter()
                    .enumerate()
                    .map(|(binding, access)| layout_entry(binding as u32, *access))
                    .collect();
                let group0 = raw.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("ibfs group 0"),
                    entries: &entries,
                });
                let group1 = raw.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("ibfs group 1"),
                    entries: &[layout_entry(0, Access::ReadWrite)],
                });
                let level_layout = raw.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("ibfs"),
                    bind_group_layouts: &[Some(&group0)],
                    immediate_size: 0,
                });
                let control_layout = raw.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("ibfs control"),
                    bind_group_layouts: &[Some(&group0), Some(&group1)],
                    immediate_size: 0,
                });
                let pipeline = |entry: &str, layout: &wgpu::PipelineLayout| {
                    raw.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(entry),
                        layout: Some(layout),
                        module: &module,
                        entry_point: Some(entry),
                        compilation_options: Default::default(),
                        cache: None,
                    })
                };
                Kernels {
                    seed: pipeline("seed", &level_layout),
                    exclude: pipeline("exclude", &level_layout),
                    control: pipeline("control_level", &control_layout),
                    top_down: pipeline("expand_top_down", &level_layout),
                    bottom_up: pipeline("expand_bottom_up", &level_layout),
                    identify: pipeline("identify", &level_layout),
                    settle: pipeline("settle", &level_layout),
                    group0,
                    group1,
                }
            })
            .map_err(gpu_error)
    }
}

fn layout_entry(binding: u32, access: Access) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: match access {
                Access::Uniform => wgpu::BufferBindingType::Uniform,
                Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
                Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
            },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The searches of one call, grouped and batched on the host.
struct Plan {
    /// Distinct sources, batch after batch.
    sources: Vec<u32>,
    /// (destination, lane) of every pair that needs a search, batch after batch.
    targets: Vec<[u32; 2]>,
    /// The pair position of each target.
    target_pairs: Vec<usize>,
    /// (source offset, lanes, target offset, targets) per batch.
    batches: Vec<[usize; 4]>,
    /// The destination of each lane (parallel to `sources`) when it has only one, else
    /// [`NO_DESTINATION`]: what label pruning compares against.
    lane_destinations: Vec<u32>,
}

impl<'d> GpuGraph<'d> {
    /// Uploads `graph` and its reverse and compiles the kernels.
    pub fn upload(device: &'d Device, graph: &Csr) -> Result<GpuGraph<'d>> {
        let n = graph.vertex_count();
        let m = graph.edge_count();
        if n >= MAX_ELEMENTS || m >= MAX_ELEMENTS {
            bail!(
                "GPU IBFS: a graph of {n} vertices and {m} edges is too large: at most {MAX_ELEMENTS} of each"
            );
        }
        let reverse = graph.transpose();
        // Both fit in u32: checked just above.
        let to_u32 = |values: &[usize]| values.iter().map(|&x| x as u32).collect::<Vec<u32>>();
        let ids = |values: &[i64]| values.iter().map(|&x| x as u32).collect::<Vec<u32>>();
        let offsets = storage(device, "ibfs offsets", &to_u32(graph.offsets()))?;
        let neighbours = storage(device, "ibfs neighbours", &ids(graph.neighbour_values()))?;
        let reverse_offsets = storage(device, "ibfs reverse offsets", &to_u32(reverse.offsets()))?;
        let reverse_neighbours = storage(
            device,
            "ibfs reverse neighbours",
            &ids(reverse.neighbour_values()),
        )?;
        GpuGraph::from_buffers(
            device,
            [n, m],
            [offsets, neighbours, reverse_offsets, reverse_neighbours],
            None,
        )
    }

    /// A graph already on the device: `[vertices, edges]` and the u32 buffers `[offsets,
    /// neighbours, reverse offsets, reverse neighbours]` in CSR form (the caller vouches for
    /// the CSR invariants), optionally with labels that prune the searches.
    pub fn from_buffers(
        device: &'d Device,
        [n, m]: [usize; 2],
        [offsets, neighbours, reverse_offsets, reverse_neighbours]: [wgpu::Buffer; 4],
        pruning: Option<PruningLabels>,
    ) -> Result<GpuGraph<'d>> {
        if n >= MAX_ELEMENTS || m >= MAX_ELEMENTS {
            bail!(
                "GPU IBFS: a graph of {n} vertices and {m} edges is too large: at most {MAX_ELEMENTS} of each"
            );
        }
        Ok(GpuGraph {
            device,
            vertex_count: n,
            edge_count: m,
            offsets,
            neighbours,
            reverse_offsets,
            reverse_neighbours,
            kernels: std::sync::Arc::new(Kernels::new(device)?),
            scratch: std::sync::Mutex::new(None),
            pruning,
            no_labels: scratch(device, "ibfs no labels", 1)?,
        })
    }

    pub fn vertex_count(&self) -> usize {
        self.vertex_count
    }

    pub fn edge_count(&self) -> usize {
        self.edge_count
    }

    /// The reverse graph (every edge turned around) on the same device buffers and compiled
    /// kernels, without pruning labels.
    pub fn reversed(&self) -> Result<GpuGraph<'d>> {
        Ok(GpuGraph {
            device: self.device,
            vertex_count: self.vertex_count,
            edge_count: self.edge_count,
            offsets: self.reverse_offsets.clone(),
            neighbours: self.reverse_neighbours.clone(),
            reverse_offsets: self.offsets.clone(),
            reverse_neighbours: self.neighbours.clone(),
            kernels: self.kernels.clone(),
            scratch: std::sync::Mutex::new(None),
            pruning: None,
            no_labels: scratch(self.device, "ibfs no labels", 1)?,
        })
    }

    /// The reach set of each of up to [`MAX_LANE_WORDS`]` · 32` distinct `sources` as bits: one
    /// unpruned search per source, run until its frontier is empty. In the returned buffer,
    /// bit `j % 32` of word `v · words + j / 32` says whether `sources[j]` reaches `v` (a
    /// source reaches itself). Returns the buffer, `words`, and what the search did.
    pub fn reach_sets(&self, sources: &[u32]) -> Result<(wgpu::Buffer, usize, SearchStats)> {
        let n = self.vertex_count;
        if sources.is_empty() || sources.len() > 32 * MAX_LANE_WORDS {
            bail!(
                "GPU IBFS: reach sets of {} sources, expected 1 to {}",
                sources.len(),
                32 * MAX_LANE_WORDS
            );
        }
        let mut distinct = sources.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != sources.len() || distinct.last().is_some_and(|&v| v as usize >= n) {
            bail!("GPU IBFS: reach sets need distinct sources among the {n} vertices");
        }
        let words = self.lane_words(0, sources.len())?;
        if 32 * words < sources.len() {
            bail!(
                "GPU IBFS: the status bits of {} sources over {n} vertices do not fit one storage binding",
                sources.len()
            );
        }
        let plan = Plan {
            sources: sources.to_vec(),
            targets: Vec::new(),
            target_pairs: Vec::new(),
            batches: vec![[0, sources.len(), 0, 0]],
            lane_destinations: Vec::new(),
        };
        let (_, stats, seen) = self.run(&plan, words, GpuOptions::default(), Mode::ReachSets)?;
        match seen {
            Some(seen) => Ok((
                seen,
                words,
                SearchStats {
                    lanes: 32 * words,
                    ..stats
                },
            )),
            None => bail!("GPU IBFS: the reach sets were not kept"),
        }
    }

    /// `@shortest_path_length` on the resident graph.
    pub fn shortest_path_lengths(
        &self,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
    ) -> Result<Vec<i64>> {
        self.search("@shortest_path_length", sources, destinations, options)
            .map(|(lengths, _)| lengths)
    }

    /// `@reachable` on the resident graph.
    pub fn reachable(
        &self,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
    ) -> Result<Vec<bool>> {
        let (lengths, _) = self.search("@reachable", sources, destinations, options)?;
        Ok(lengths.into_iter().map(|length| length >= 0).collect())
    }

    /// Lengths of shortest paths and what the search did.
    pub fn search(
        &self,
        builtin: &str,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
    ) -> Result<(Vec<i64>, SearchStats)> {
        let n = self.vertex_count;
        if sources.len() != destinations.len() {
            bail!(
                "{builtin}: {} sources but {} destinations",
                sources.len(),
                destinations.len()
            );
        }
        let mut lengths = vec![-1i64; sources.len()];
        let mut open = Vec::new();
        for (pair, (&source, &destination)) in sources.iter().zip(destinations).enumerate() {
            let Some(source) = vertex_index(source, n) else {
                bail!("{builtin}: pair {pair} has source {source}, outside the vertices 0..{n}");
            };
            let Some(destination) = vertex_index(destination, n) else {
                bail!(
                    "{builtin}: pair {pair} has destination {destination}, outside the vertices 0..{n}"
                );
            };
            if source == destination {
                lengths[pair] = 0;
            } else {
                open.push((source as u32, destination as u32, pair));
            }
        }
        if open.is_empty() {
            return Ok((lengths, SearchStats::default()));
        }
        open.sort_unstable_by_key(|&(source, _, pair)| (source, pair));
        let distinct = open.chunk_by(|a, b| a.0 == b.0).count();
        let words = self.lane_words(options.lane_words, distinct)?;
        let mut plan = plan(&open, 32 * words);
        if self.pruning.is_none() {
            plan.lane_destinations.clear();
        }
        let (results, mut stats, _) = self.run(&plan, words, options, Mode::Lengths)?;
        for (&pair, &length) in plan.target_pairs.iter().zip(&results) {
            lengths[pair] = i64::from(length);
        }
        stats.lanes = 32 * words;
        Ok((lengths, stats))
    }

    /// Words per vertex: enough lanes for every distinct source (up to ω = 1024), as a power
    /// of two, and small enough for a status array to fit one storage binding.
    fn lane_words(&self, requested: usize, distinct_sources: usize) -> Result<usize> {
        let wanted = if requested == 0 {
            distinct_sources.div_ceil(32)
        } else {
            requested
        };
        let mut words = wanted.clamp(1, MAX_LANE_WORDS).next_power_of_two();
        let limits = self.device.limits();
        let limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let bytes = |words: usize| (self.vertex_count.max(1) * words * 4) as u64;
        while words > 1 && (bytes(words) > limit || self.vertex_count * words >= MAX_ELEMENTS) {
            words /= 2;
        }
        if bytes(words) > limit || self.vertex_count * words >= MAX_ELEMENTS {
            bail!(
                "GPU IBFS: the status bits of {} vertices do not fit one storage binding ({limit} bytes)",
                self.vertex_count
            );
        }
        Ok(words)
    }

    /// Runs every batch of `plan`; returns the length of each target (-1: unreachable), and
    /// in [`Mode::ReachSets`] a copy of `seen` after the (single) batch.
    fn run(
        &self,
        plan: &Plan,
        words: usize,
        options: GpuOptions,
        mode: Mode,
    ) -> Result<(Vec<i32>, SearchStats, Option<wgpu::Buffer>)> {
        let device = self.device;
        let n = self.vertex_count;
        let lanes = 32 * words;
        let status_len = n * words;
        // The status arrays and queues of the last call, when it used the same width:
        // allocating (and zero-filling) hundreds of MB per call would cost more than a
        // small search. Taken out of the cache for the call, so concurrent calls never
        // share them.
        let cached = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut slot| slot.take())
            .filter(|scratch| scratch.words == words);
        let scratch = match cached {
            Some(scratch) => scratch,
            None => Scratch {
                words,
                seen: scratch(device, "ibfs seen", status_len)?,
                frontier: scratch(device, "ibfs frontier", status_len)?,
                next: scratch(device, "ibfs next", status_len)?,
                queues: [
                    scratch(device, "ibfs queue 0", n)?,
                    scratch(device, "ibfs queue 1", n)?,
                ],
                control: scratch(device, "ibfs control", CONTROL_WORDS)?,
                args: buffer(
                    device,
                    "ibfs args",
                    (ARGS_WORDS * 4) as u64,
                    wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                )?,
                lane_pending: scratch(device, "ibfs lane pending", lanes)?,
                active: scratch(device, "ibfs active lanes", words)?,
                params: buffer(
                    device,
                    "ibfs params",
                    std::mem::size_of::<Params>() as u64,
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                )?,
                staging: [
                    readback(device, "ibfs control staging 0", CONTROL_WORDS)?,
                    readback(device, "ibfs control staging 1", CONTROL_WORDS)?,
                ],
            },
        };
        let buffers = Buffers {
            sources: storage(device, "ibfs sources", &plan.sources)?,
            // A binding holds at least one 8-byte target (a reach-set run has none).
            targets: if plan.targets.is_empty() {
                storage(device, "ibfs targets", &[[0u32; 2]])?
            } else {
                storage(device, "ibfs targets", &plan.targets)?
            },
            lane_destinations: storage(device, "ibfs lane destinations", &plan.lane_destinations)?,
            results: storage(device, "ibfs results", &vec![-1i32; plan.targets.len()])?,
            scratch,
        };
        // Parity p: level L with (L - 1) % 2 == p expands queue p and fills queue 1 - p.
        let groups = [self.bind_group(&buffers, 0)?, self.bind_group(&buffers, 1)?];
        let args_group = device
            .capture_errors("ibfs args group", command_error, || {
                device.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("ibfs args"),
                    layout: &self.kernels.group1,
                    entries: &[wgpu::BindGroupEntry {
                        binding: 0,
                        resource: buffers.scratch.args.as_entire_binding(),
                    }],
                })
            })
            .map_err(gpu_error)?;

        let check_every = if options.check_every == 0 {
            DEFAULT_CHECK_EVERY
        } else {
            options.check_every
        };
        let mut stats = SearchStats {
            batches: plan.batches.len(),
            ..SearchStats::default()
        };
        for &[source_offset, lane_count, target_offset, target_count] in &plan.batches {
            let params = Params {
                n: n as u32,
                m: self.edge_count as u32,
                words: words as u32,
                max_workgroups: device.max_workgroups_per_dispatch(),
                lane_count: lane_count as u32,
                source_offset: source_offset as u32,
                target_count: target_count as u32,
                target_offset: target_offset as u32,
                direction: match options.direction {
                    Direction::Auto => 0,
                    Direction::TopDown => 1,
                    Direction::BottomUp => 2,
                },
                bottom_up_share: if options.bottom_up_share == 0 {
                    DEFAULT_BOTTOM_UP_SHARE
                } else {
                    options.bottom_up_share
                },
                label_count: match mode {
                    Mode::Lengths => self.pruning.as_ref().map_or(0, |p| p.label_count as u32),
                    Mode::ReachSets => 0,
                },
                label_stride: n as u32,
            };
            // Queue-ordered: runs after the work already submitted for the previous batch.
            device.count_upload(std::mem::size_of_val(&params) as u64);
            device
                .write_after_queued(&buffers.scratch.params, 0, bytemuck::bytes_of(&params))
                .map_err(gpu_error)?;
            let control = self.run_batch(&buffers, &groups, &args_group, &params, check_every)?;
            stats.levels += u64::from(control.words[LEVEL]);
            stats.bottom_up_levels += u64::from(control.words[BOTTOM_UP_LEVELS]);
            stats.checks += control.checks;
        }
        let seen = match mode {
            Mode::Lengths => None,
            Mode::ReachSets => {
                let copy = self::scratch(device, "ibfs reach sets", status_len)?;
                submit_copy(device, &buffers.scratch.seen, &copy, status_len)?;
                Some(copy)
            }
        };
        let results = download_i32(device, &buffers.results, plan.targets.len())?;
        // Every batch leaves `next` zero (identify clears it) and the next call clears the
        // rest, so the scratch buffers can serve it as they are.
        if let Ok(mut slot) = self.scratch.lock() {
            *slot = Some(buffers.scratch);
        }
        Ok((results, stats, seen))
    }

    /// Records and submits the levels of one batch, chunk by chunk, until the GPU reports it
    /// done; returns the final `control` words.
    fn run_batch(
        &self,
        buffers: &Buffers,
        groups: &[wgpu::BindGroup; 2],
        args_group: &wgpu::BindGroup,
        params: &Params,
        check_every: usize,
    ) -> Result<ControlState> {
        let device = self.device;
        let raw = &device.device;
        let kernels = &self.kernels;
        // Every level adds a vertex to some lane's search tree, and a search tree has at most
        // n levels: more chunks than that means the kernels are broken, not the input.
        let max_chunks = (self.vertex_count + 2).div_ceil(check_every) + 2;
        let mut in_flight: Option<(usize, wgpu::SubmissionIndex)> = None;
        let mut level = 0usize;
        let mut checks = 0u64;
        for chunk in 0..max_chunks {
            let index = device
                .capture_errors("ibfs levels", command_error, || {
                    let mut encoder = raw.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("ibfs levels"),
                    });
                    if chunk == 0 {
                        for buffer in [
                            &buffers.scratch.seen,
                            &buffers.scratch.frontier,
                            &buffers.scratch.control,
                            &buffers.scratch.lane_pending,
                            &buffers.scratch.active,
                        ] {
                            encoder.clear_buffer(buffer, 0, None);
                        }
                    }
                    {
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some("ibfs levels"),
                            timestamp_writes: None,
                        });
                        if chunk == 0 && params.label_count != 0 {
                            // Pruning: the lanes' excluded vertices count as seen from the
                            // start (before the seed sets the sources' own bits).
                            let threads = params.n as usize * params.words as usize;
                            let workgroups = threads
                                .div_ceil(WORKGROUP_SIZE as usize)
                                .min(params.max_workgroups as usize)
                                .max(1) as u32;
                            pass.set_pipeline(&kernels.exclude);
                            pass.set_bind_group(0, &groups[1], &[]);
                            pass.dispatch_workgroups(workgroups, 1, 1);
                        }
                        if chunk == 0 {
                            // The seed fills queue 0, which level 1 (parity 0) expands: the
                            // parity-1 bind group has queue 0 as its output.
                            let threads = params.lane_count.max(params.target_count);
                            let workgroups = threads
                                .div_ceil(WORKGROUP_SIZE)
                                .min(params.max_workgroups)
                                .max(1);
                            pass.set_pipeline(&kernels.seed);
                            pass.set_bind_group(0, &groups[1], &[]);
                            pass.dispatch_workgroups(workgroups, 1, 1);
                            pass.set_pipeline(&kernels.control);
                            pass.set_bind_group(0, &groups[1], &[]);
                            pass.set_bind_group(1, args_group, &[]);
                            pass.dispatch_workgroups(1, 1, 1);
                        }
                        for step in 0..check_every {
                            let parity = (level + step) % 2;
                            let group = &groups[parity];
                            for (pipeline, offset) in [
                                (&kernels.top_down, ARGS_TOP_DOWN),
                                (&kernels.bottom_up, ARGS_BOTTOM_UP),
                                (&kernels.identify, ARGS_IDENTIFY),
                                (&kernels.settle, ARGS_SETTLE),
                            ] {
                                pass.set_pipeline(pipeline);
                                pass.set_bind_group(0, group, &[]);
                                pass.dispatch_workgroups_indirect(&buffers.scratch.args, offset);
                            }
                            pass.set_pipeline(&kernels.control);
                            pass.set_bind_group(0, group, &[]);
                            pass.set_bind_group(1, args_group, &[]);
                            pass.dispatch_workgroups(1, 1, 1);
                        }
                    }
                    encoder.copy_buffer_to_buffer(
                        &buffers.scratch.control,
                        0,
                        &buffers.scratch.staging[chunk % 2],
                        0,
                        (CONTROL_WORDS * 4) as u64,
                    );
                    device.submit_indexed(encoder.finish())
                })
                .map_err(gpu_error)?;
            level += check_every;
            // Two chunks in flight: read the previous chunk's flag while this one runs.
            if let Some((previous, previous_index)) = in_flight.replace((chunk, index)) {
                checks += 1;
                let words = read_control(
                    device,
                    &buffers.scratch.staging[previous % 2],
                    previous_index,
                )?;
                if words[DONE] != 0 {
                    return Ok(ControlState { words, checks });
                }
            }
        }
        // The last chunk recorded: its flag decides.
        if let Some((last, index)) = in_flight {
            checks += 1;
            let words = read_control(device, &buffers.scratch.staging[last % 2], index)?;
            if words[DONE] != 0 {
                return Ok(ControlState { words, checks });
            }
        }
        bail!("GPU IBFS: a batch did not finish within {} levels", level)
    }

    fn bind_group(&self, buffers: &Buffers, parity: usize) -> Result<wgpu::BindGroup> {
        let queue_in = &buffers.scratch.queues[parity];
        let queue_out = &buffers.scratch.queues[1 - parity];
        let labels = self.pruning.as_ref().map_or(&self.no_labels, |p| &p.labels);
        let resources: [&wgpu::Buffer; 18] = [
            &buffers.scratch.params,
            &self.offsets,
            &self.neighbours,
            &self.reverse_offsets,
            &self.reverse_neighbours,
            &buffers.scratch.seen,
            &buffers.scratch.frontier,
            &buffers.scratch.next,
            queue_in,
            queue_out,
            &buffers.scratch.control,
            &buffers.sources,
            &buffers.targets,
            &buffers.results,
            &buffers.scratch.lane_pending,
            &buffers.scratch.active,
            labels,
            &buffers.lane_destinations,
        ];
        let limit = self.device.limits().max_storage_buffer_binding_size;
        if let Some(big) = resources.iter().find(|b| b.size() > limit) {
            bail!(
                "GPU IBFS: a buffer of {} bytes exceeds the device's storage binding limit of {limit} bytes",
                big.size()
            );
        }
        let entries = crate::gpu::whole_buffer_entries(&resources);
        self.device
            .capture_errors("ibfs bind group", command_error, || {
                self.device
                    .device
                    .create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("ibfs"),
                        layout: &self.kernels.group0,
                        entries: &entries,
                    })
            })
            .map_err(gpu_error)
    }
}

/// The per-call buffers, reused by every batch.
struct Buffers {
    sources: wgpu::Buffer,
    lane_destinations: wgpu::Buffer,
    targets: wgpu::Buffer,
    results: wgpu::Buffer,
    scratch: Scratch,
}

/// The buffers that depend only on the graph and the lane width, reused by every batch of a
/// call and cached on the [`GpuGraph`] for the next call.
struct Scratch {
    words: usize,
    seen: wgpu::Buffer,
    frontier: wgpu::Buffer,
    next: wgpu::Buffer,
    queues: [wgpu::Buffer; 2],
    control: wgpu::Buffer,
    args: wgpu::Buffer,
    lane_pending: wgpu::Buffer,
    active: wgpu::Buffer,
    params: wgpu::Buffer,
    staging: [wgpu::Buffer; 2],
}

/// What a run keeps: the lengths of its targets, or also every lane's reach set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lengths,
    ReachSets,
}

/// Copies the first `len` u32 of `from` into `to` (queue-ordered after the work submitted).
fn submit_copy(device: &Device, from: &wgpu::Buffer, to: &wgpu::Buffer, len: usize) -> Result<()> {
    device
        .capture_errors("ibfs copy", command_error, || {
            let mut encoder =
                device
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("ibfs copy"),
                    });
            encoder.copy_buffer_to_buffer(from, 0, to, 0, (len * 4) as u64);
            device.submit_indexed(encoder.finish())
        })
        .map_err(gpu_error)?;
    Ok(())
}

struct ControlState {
    words: [u32; CONTROL_WORDS],
    checks: u64,
}

/// Groups the open pairs (sorted by source) into batches of at most `lanes` distinct sources.
fn plan(open: &[(u32, u32, usize)], lanes: usize) -> Plan {
    let mut plan = Plan {
        sources: Vec::new(),
        lane_destinations: Vec::new(),
        targets: Vec::with_capacity(open.len()),
        target_pairs: Vec::with_capacity(open.len()),
        batches: Vec::new(),
    };
    for group in open.chunk_by(|a, b| a.0 == b.0) {
        let full = plan.batches.last().is_none_or(|batch| batch[1] == lanes);
        if full {
            plan.batches
                .push([plan.sources.len(), 0, plan.targets.len(), 0]);
        }
        let Some(batch) = plan.batches.last_mut() else {
            continue; // unreachable: a batch was pushed just above
        };
        let lane = batch[1] as u32;
        batch[1] += 1;
        batch[3] += group.len();
        plan.sources.push(group[0].0);
        plan.lane_destinations.push(match group {
            [(_, destination, _)] => *destination,
            _ => NO_DESTINATION,
        });
        for &(_, destination, pair) in group {
            plan.targets.push([destination, lane]);
            plan.target_pairs.push(pair);
        }
    }
    plan
}

/// Storage usage of the buffers the host also copies into or out of.
pub(crate) const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// A storage buffer holding `data` (at least 4 bytes: wgpu cannot bind an empty buffer).
pub(crate) fn storage<T: bytemuck::Pod>(
    device: &Device,
    label: &str,
    data: &[T],
) -> Result<wgpu::Buffer> {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    if bytes.is_empty() {
        return buffer(device, label, 4, STORAGE_USAGE);
    }
    check_size(device, label, bytes.len() as u64)?;
    device.count_upload(bytes.len() as u64);
    // Counted with the device's buffer creations (`--time`, memory samples).
    let _timer = device.costs.buffers.timer();
    device
        .capture_errors(label, command_error, || {
            device
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage: STORAGE_USAGE,
                })
        })
        .map_err(gpu_error)
}

/// A zeroed storage buffer of `len` u32 (wgpu zero-initialises buffers).
pub(crate) fn scratch(device: &Device, label: &str, len: usize) -> Result<wgpu::Buffer> {
    buffer(device, label, (len.max(1) * 4) as u64, STORAGE_USAGE)
}

pub(crate) fn readback(device: &Device, label: &str, len: usize) -> Result<wgpu::Buffer> {
    buffer(
        device,
        label,
        (len * 4) as u64,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    )
}

fn check_size(device: &Device, label: &str, bytes: u64) -> Result<()> {
    let limit = device.limits().max_buffer_size;
    if bytes > limit {
        bail!(
            "GPU IBFS: buffer `{label}` would have {bytes} bytes, more than the device's {limit}"
        );
    }
    Ok(())
}

pub(crate) fn buffer(
    device: &Device,
    label: &str,
    bytes: u64,
    usage: wgpu::BufferUsages,
) -> Result<wgpu::Buffer> {
    check_size(device, label, bytes)?;
    // Counted with the device's buffer creations (`--time`, memory samples).
    let _timer = device.costs.buffers.timer();
    device
        .capture_errors(label, command_error, || {
            device.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        })
        .map_err(gpu_error)
}

/// Maps a staging buffer once submission `index` has finished; returns its words.
fn read_control(
    device: &Device,
    staging: &wgpu::Buffer,
    index: wgpu::SubmissionIndex,
) -> Result<[u32; CONTROL_WORDS]> {
    let bytes = map_read(device, staging, Some(index))?;
    let mut words = [0u32; CONTROL_WORDS];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    Ok(words)
}

pub(crate) fn map_read(
    device: &Device,
    staging: &wgpu::Buffer,
    index: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<u8>> {
    let readback_error = |e: String| gpu_error(GpuError::Readback(e));
    let (sender, receiver) = std::sync::mpsc::channel();
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |result| {
            // The receiver outlives the poll below; a failed send cannot happen.
            let _ = sender.send(result);
        });
    device
        .wait_for_map(&receiver, index)
        .map_err(|e| readback_error(e.to_string()))?;
    device.count_download(staging.size());
    let bytes = {
        let view = staging
            .slice(..)
            .get_mapped_range()
            .map_err(|e| readback_error(e.to_string()))?;
        view.to_vec()
    };
    staging.unmap();
    Ok(bytes)
}

pub(crate) fn download_i32(device: &Device, source: &wgpu::Buffer, len: usize) -> Result<Vec<i32>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let staging = readback(device, "ibfs results staging", len)?;
    let index = device
        .capture_errors("ibfs results download", command_error, || {
            let mut encoder =
                device
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("ibfs results download"),
                    });
            encoder.copy_buffer_to_buffer(source, 0, &staging, 0, (len * 4) as u64);
            device.submit_indexed(encoder.finish())
        })
        .map_err(gpu_error)?;
    let bytes = map_read(device, &staging, Some(index))?;
    Ok(bytemuck::pod_collect_to_vec::<u8, i32>(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_groups_by_source_and_fills_batches() {
        // Sorted by source: 3 distinct sources, 2 lanes per batch.
        let open = [(1, 5, 0), (1, 6, 3), (2, 5, 1), (4, 0, 2)];
        let plan = plan(&open, 2);
        assert_eq!(plan.sources, vec![1, 2, 4]);
        assert_eq!(plan.targets, vec![[5, 0], [6, 0], [5, 1], [0, 0]]);
        assert_eq!(plan.target_pairs, vec![0, 3, 1, 2]);
        assert_eq!(plan.batches, vec![[0, 2, 0, 3], [2, 1, 3, 1]]);
        // Source 1 has two destinations: its lane is not pruned.
        assert_eq!(plan.lane_destinations, vec![NO_DESTINATION, 5, 0]);
    }

    #[test]
    fn ibfs_validates() {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        let source = ibfs_source().expect("renders");
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("ibfs.wgsl does not parse:\n{}", e.emit_to_string(&source)));
        Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("ibfs.wgsl is invalid:\n{}", e.emit_to_string(&source)));
    }
}
