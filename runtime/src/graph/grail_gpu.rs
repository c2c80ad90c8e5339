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
//! ends share a component (reachable) or whose labels exclude the destination (unreachable);
//! the other pairs run on the condensed DAG as IBFS searches ([`GpuGraph`]) that never expand
//! a component whose labels exclude the lane's destination.

use std::num::NonZeroU64;
use std::sync::Arc;

use wgpu::util::DeviceExt;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuError, MAX_ELEMENTS};
use crate::graph::csr::{vertex_index, Csr};
use crate::graph::gpu::{
    command_error, download_i32, map_read, readback, scratch, shader_error, storage, GpuGraph,
    GpuOptions, PruningLabels, SearchStats,
};
use crate::graph::grail::{label_seed, ReachIndex, MAX_LABELS};

pub const SCC_WGSL: &str = include_str!("../../../shaders/grail_scc.wgsl");
pub const DAG_WGSL: &str = include_str!("../../../shaders/grail_dag.wgsl");
pub const SCAN_WGSL: &str = include_str!("../../../shaders/grail_scan.wgsl");
pub const LABEL_WGSL: &str = include_str!("../../../shaders/grail_label.wgsl");
pub const QUERY_WGSL: &str = include_str!("../../../shaders/grail_query.wgsl");

const WORKGROUP: usize = 256;

fn gpu_error(e: GpuError) -> RuntimeError {
    RuntimeError::new(format!("GPU GRAIL: {e}"))
}
/// Slots of the SCC kernels' `state`.
const TAIL: usize = 0;
const CHANGED: usize = 1;
const LIVE: usize = 2;
const STATE_WORDS: usize = 4;
/// Bytes between two levels' uniforms (the dynamic-offset alignment every device accepts).
const LEVEL_SLOT: u64 = 256;

#[derive(Clone, Copy)]
enum Binding {
    Uniform,
    /// A 16-byte uniform chosen by a dynamic offset at each dispatch.
    DynamicUniform,
    Storage,
}

/// One shader module's pipelines, sharing one bind group layout.
struct Module {
    name: &'static str,
    bindings: Vec<Binding>,
    layout: wgpu::BindGroupLayout,
    pipelines: Vec<(&'static str, wgpu::ComputePipeline)>,
}

impl Module {
    fn new(
        device: &Device,
        name: &'static str,
        source: &str,
        bindings: &[Binding],
        entries: &[&'static str],
    ) -> Result<Module> {
        let raw = &device.device;
        device
            .capture_errors(name, shader_error, || {
                let module = raw.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
                let layout_entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
                    .iter()
                    .enumerate()
                    .map(|(i, binding)| wgpu::BindGroupLayoutEntry {
                        binding: i as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: match binding {
                                Binding::Uniform | Binding::DynamicUniform => {
                                    wgpu::BufferBindingType::Uniform
                                }
                                Binding::Storage => {
                                    wgpu::BufferBindingType::Storage { read_only: false }
                                }
                            },
                            has_dynamic_offset: matches!(binding, Binding::DynamicUniform),
                            min_binding_size: None,
                        },
                        count: None,
                    })
                    .collect();
                let layout = raw.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(name),
                    entries: &layout_entries,
                });
                let pipeline_layout = raw.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some(name),
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                });
                let pipelines = entries
                    .iter()
                    .map(|&entry| {
                        let pipeline =
                            raw.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                                label: Some(entry),
                                layout: Some(&pipeline_layout),
                                module: &module,
                                entry_point: Some(entry),
                                compilation_options: Default::default(),
                                cache: None,
                            });
                        (entry, pipeline)
                    })
                    .collect();
                Module {
                    name,
                    bindings: bindings.to_vec(),
                    layout,
                    pipelines,
                }
            })
            .map_err(gpu_error)
    }

    fn pipeline(&self, entry: &str) -> Result<&wgpu::ComputePipeline> {
        match self.pipelines.iter().find(|(name, _)| *name == entry) {
            Some((_, pipeline)) => Ok(pipeline),
            None => bail!("GPU GRAIL: {} has no kernel `{entry}`", self.name),
        }
    }

    /// A bind group of whole buffers, binding `i` = `buffers[i]`; a dynamic uniform binds
    /// its first 16 bytes (the dispatch picks the slot).
    fn bind(&self, device: &Device, buffers: &[&wgpu::Buffer]) -> Result<wgpu::BindGroup> {
        let limit = device.limits().max_storage_buffer_binding_size;
        if let Some(big) = buffers.iter().find(|b| b.size() > limit) {
            bail!(
                "GPU GRAIL: a buffer of {} bytes exceeds the device's storage binding limit of {limit} bytes",
                big.size()
            );
        }
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, buffer)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: if matches!(self.bindings.get(i), Some(Binding::DynamicUniform)) {
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer,
                        offset: 0,
                        size: NonZeroU64::new(16),
                    })
                } else {
                    buffer.as_entire_binding()
                },
            })
            .collect();
        device
            .capture_errors(self.name, command_error, || {
                device.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(self.name),
                    layout: &self.layout,
                    entries: &entries,
                })
            })
            .map_err(gpu_error)
    }
}

/// The compiled kernels of the build.
pub struct GrailKernels {
    scc: Module,
    dag: Module,
    scan: Module,
    label: Module,
}

impl GrailKernels {
    pub fn new(device: &Device) -> Result<GrailKernels> {
        use Binding::{DynamicUniform, Storage, Uniform};
        let storage_after = |first: Binding, count: usize| {
            let mut b = vec![first];
            b.extend(std::iter::repeat_n(Storage, count));
            b
        };
        Ok(GrailKernels {
            scc: Module::new(
                device,
                "grail_scc.wgsl",
                SCC_WGSL,
                &storage_after(Uniform, 12),
                &[
                    "kahn_degrees",
                    "kahn_seed",
                    "kahn_level",
                    "kahn_remove",
                    "color_init",
                    "color_propagate",
                    "root_init",
                    "backward_sweep",
                    "color_finish",
                ],
            )?,
            dag: Module::new(
                device,
                "grail_dag.wgsl",
                DAG_WGSL,
                &storage_after(Uniform, 10),
                &["mark_representatives", "renumber", "dag_count", "dag_fill"],
            )?,
            scan: Module::new(
                device,
                "grail_scan.wgsl",
                SCAN_WGSL,
                &storage_after(Uniform, 2),
                &["scan_blocks", "add_sums"],
            )?,
            label: Module::new(
                device,
                "grail_label.wgsl",
                LABEL_WGSL,
                &{
                    let mut b = vec![DynamicUniform, Uniform];
                    b.extend(std::iter::repeat_n(Storage, 10));
                    b
                },
                &[
                    "tree_parent",
                    "tree_sizes",
                    "root_sizes",
                    "tree_ranks",
                    "low_high",
                ],
            )?,
        })
    }
}

/// The label filter's pipeline (compiled with each index: it is small).
fn query_module(device: &Device) -> Result<Module> {
    let mut bindings = vec![Binding::Uniform];
    bindings.extend(std::iter::repeat_n(Binding::Storage, 6));
    Module::new(
        device,
        "grail_query.wgsl",
        QUERY_WGSL,
        &bindings,
        &["label_filter"],
    )
}

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
    /// The pruned search of the rest.
    pub search: SearchStats,
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
    pub stats: BuildStats,
}

/// A uniform buffer holding `words`.
fn uniform(device: &Device, label: &str, words: &[u32]) -> Result<wgpu::Buffer> {
    device
        .capture_errors(label, command_error, || {
            device
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytemuck::cast_slice(words),
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                })
        })
        .map_err(gpu_error)
}

/// Workgroups for `threads` threads of a grid-stride kernel.
fn workgroups(device: &Device, threads: usize) -> u32 {
    let wanted = threads.div_ceil(WORKGROUP).max(1);
    wanted.min(device.max_workgroups_per_dispatch() as usize) as u32
}

/// Records `body` into one encoder and submits it.
fn submit(
    device: &Device,
    label: &str,
    body: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
) -> Result<wgpu::SubmissionIndex> {
    let mut encoder = device
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    body(&mut encoder)?;
    device
        .capture_errors(label, command_error, || {
            device.queue.submit([encoder.finish()])
        })
        .map_err(gpu_error)
}

/// One dispatch in its own compute pass.
fn dispatch(
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    group: &wgpu::BindGroup,
    offsets: &[u32],
    workgroups: u32,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: None,
    });
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, group, offsets);
    pass.dispatch_workgroups(workgroups, 1, 1);
}

/// `count` u32 words of `buffer` from word `offset`, after all submitted work.
fn read_words(
    device: &Device,
    buffer: &wgpu::Buffer,
    offset: usize,
    count: usize,
) -> Result<Vec<u32>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let staging = readback(device, "grail readback", count)?;
    let index = submit(device, "grail readback", |encoder| {
        encoder.copy_buffer_to_buffer(buffer, (offset * 4) as u64, &staging, 0, (count * 4) as u64);
        Ok(())
    })?;
    let bytes = map_read(device, &staging, Some(index))?;
    Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes))
}

fn u32s(values: impl Iterator<Item = usize>) -> Vec<u32> {
    // Callers check sizes against MAX_ELEMENTS first.
    values.map(|x| x as u32).collect()
}

/// Buffers of the SCC kernels.
struct Scc {
    params: wgpu::Buffer,
    live: wgpu::Buffer,
    degree: wgpu::Buffer,
    order: wgpu::Buffer,
    state: wgpu::Buffer,
    color: wgpu::Buffer,
    visited: wgpu::Buffer,
    comp: wgpu::Buffer,
    level: wgpu::Buffer,
}

impl Scc {
    fn new(device: &Device, n: usize) -> Result<Scc> {
        Ok(Scc {
            params: uniform(device, "grail scc params", &[0; 4])?,
            live: storage(device, "grail live", &vec![1u32; n])?,
            degree: scratch(device, "grail degree", n)?,
            order: scratch(device, "grail order", n)?,
            state: scratch(device, "grail state", STATE_WORDS)?,
            color: scratch(device, "grail color", n)?,
            visited: scratch(device, "grail visited", n)?,
            comp: scratch(device, "grail component", n)?,
            level: scratch(device, "grail level", n)?,
        })
    }

    /// A bind group over the graph `[offsets, targets]` with `[reverse offsets, reverse
    /// targets]`.
    fn bind(
        &self,
        device: &Device,
        kernels: &GrailKernels,
        graph: [&wgpu::Buffer; 2],
        reverse: [&wgpu::Buffer; 2],
    ) -> Result<wgpu::BindGroup> {
        kernels.scc.bind(
            device,
            &[
                &self.params,
                graph[0],
                graph[1],
                reverse[0],
                reverse[1],
                &self.live,
                &self.degree,
                &self.order,
                &self.state,
                &self.color,
                &self.visited,
                &self.comp,
                &self.level,
            ],
        )
    }

    fn set_params(&self, device: &Device, words: [u32; 4]) {
        // Queue-ordered: applies to the next submission.
        device
            .queue
            .write_buffer(&self.params, 0, bytemuck::cast_slice(&words));
    }

    /// Kahn's algorithm over the live vertices of the bound graph: queues them level by
    /// level into `order`; returns where each level starts (and, last, the total).
    fn kahn(
        &self,
        device: &Device,
        kernels: &GrailKernels,
        group: &wgpu::BindGroup,
        n: usize,
    ) -> Result<Vec<usize>> {
        let scc = &kernels.scc;
        self.set_params(device, [n as u32, 0, 0, 0]);
        submit(device, "grail kahn seed", |encoder| {
            encoder.clear_buffer(&self.degree, 0, None);
            encoder.clear_buffer(&self.state, 0, None);
            dispatch(
                encoder,
                scc.pipeline("kahn_degrees")?,
                group,
                &[],
                workgroups(device, n),
            );
            dispatch(
                encoder,
                scc.pipeline("kahn_seed")?,
                group,
                &[],
                workgroups(device, n),
            );
            Ok(())
        })?;
        let mut starts = vec![
            0usize,
            read_words(device, &self.state, TAIL, 1)?[0] as usize,
        ];
        loop {
            let (start, end) = (starts[starts.len() - 2], starts[starts.len() - 1]);
            if start == end {
                starts.pop();
                return Ok(starts);
            }
            let level = starts.len() - 2;
            self.set_params(device, [n as u32, start as u32, end as u32, level as u32]);
            submit(device, "grail kahn level", |encoder| {
                dispatch(
                    encoder,
                    scc.pipeline("kahn_level")?,
                    group,
                    &[],
                    workgroups(device, end - start),
                );
                Ok(())
            })?;
            let tail = read_words(device, &self.state, TAIL, 1)?[0] as usize;
            if tail > n || tail < end {
                bail!("GPU GRAIL: Kahn's queue went from {end} to {tail} of {n} vertices");
            }
            starts.push(tail);
        }
    }

    /// Makes `order[..count]` components of their own and takes them out of the graph.
    fn remove(
        &self,
        device: &Device,
        kernels: &GrailKernels,
        group: &wgpu::BindGroup,
        n: usize,
        count: usize,
    ) -> Result<()> {
        self.set_params(device, [n as u32, 0, count as u32, 0]);
        submit(device, "grail trim", |encoder| {
            dispatch(
                encoder,
                kernels.scc.pipeline("kahn_remove")?,
                group,
                &[],
                workgroups(device, count),
            );
            Ok(())
        })?;
        Ok(())
    }

    /// Runs `entry` until it reports no change; returns the passes run.
    fn until_stable(
        &self,
        device: &Device,
        kernels: &GrailKernels,
        group: &wgpu::BindGroup,
        n: usize,
        entry: &str,
    ) -> Result<usize> {
        // Each pass settles at least one more vertex, so n + 1 passes bound a correct run.
        for pass in 1..=n + 1 {
            submit(device, entry, |encoder| {
                encoder.clear_buffer(&self.state, (CHANGED * 4) as u64, Some(4));
                dispatch(
                    encoder,
                    kernels.scc.pipeline(entry)?,
                    group,
                    &[],
                    workgroups(device, n),
                );
                Ok(())
            })?;
            if read_words(device, &self.state, CHANGED, 1)?[0] == 0 {
                return Ok(pass);
            }
        }
        bail!(
            "GPU GRAIL: `{entry}` did not settle within {} passes",
            n + 1
        )
    }

    /// Colouring rounds until no vertex is live; returns the rounds run.
    fn color(
        &self,
        device: &Device,
        kernels: &GrailKernels,
        group: &wgpu::BindGroup,
        n: usize,
    ) -> Result<usize> {
        self.set_params(device, [n as u32, 0, 0, 0]);
        // Each round completes at least the component of the largest live vertex.
        for round in 1..=n {
            submit(device, "grail color init", |encoder| {
                dispatch(
                    encoder,
                    kernels.scc.pipeline("color_init")?,
                    group,
                    &[],
                    workgroups(device, n),
                );
                Ok(())
            })?;
            self.until_stable(device, kernels, group, n, "color_propagate")?;
            submit(device, "grail roots", |encoder| {
                dispatch(
                    encoder,
                    kernels.scc.pipeline("root_init")?,
                    group,
                    &[],
                    workgroups(device, n),
                );
                Ok(())
            })?;
            self.until_stable(device, kernels, group, n, "backward_sweep")?;
            submit(device, "grail color finish", |encoder| {
                encoder.clear_buffer(&self.state, (LIVE * 4) as u64, Some(4));
                dispatch(
                    encoder,
                    kernels.scc.pipeline("color_finish")?,
                    group,
                    &[],
                    workgroups(device, n),
                );
                Ok(())
            })?;
            if read_words(device, &self.state, LIVE, 1)?[0] == 0 {
                return Ok(round);
            }
        }
        bail!("GPU GRAIL: colouring did not finish within {n} rounds")
    }
}

/// Exclusive prefix sum of `len` u32 in `data`, in place, recorded into `encoder`. Returns
/// the buffers the recorded passes use (kept alive until submission).
fn record_scan(
    device: &Device,
    kernels: &GrailKernels,
    encoder: &mut wgpu::CommandEncoder,
    data: &wgpu::Buffer,
    len: usize,
) -> Result<Vec<wgpu::Buffer>> {
    let mut keep = Vec::new();
    if len == 0 {
        return Ok(keep);
    }
    let blocks = len.div_ceil(WORKGROUP);
    let params = uniform(device, "grail scan params", &[len as u32, 0, 0, 0])?;
    let sums = scratch(device, "grail scan sums", blocks)?;
    let group = kernels.scan.bind(device, &[&params, data, &sums])?;
    dispatch(
        encoder,
        kernels.scan.pipeline("scan_blocks")?,
        &group,
        &[],
        blocks.min(device.max_workgroups_per_dispatch() as usize) as u32,
    );
    if blocks > 1 {
        keep.extend(record_scan(device, kernels, encoder, &sums, blocks)?);
        dispatch(
            encoder,
            kernels.scan.pipeline("add_sums")?,
            &group,
            &[],
            workgroups(device, len),
        );
    }
    keep.push(params);
    keep.push(sums);
    Ok(keep)
}

/// The condensation's CSR buffers.
struct DagBuffers {
    offsets: wgpu::Buffer,
    targets: wgpu::Buffer,
    reverse_offsets: wgpu::Buffer,
    reverse_targets: wgpu::Buffer,
    edges: usize,
}

/// The DAG over the `c` components that `comp` (ids `0..c`) gives the graph's vertices.
fn build_dag(
    device: &Device,
    kernels: &GrailKernels,
    graph: [&wgpu::Buffer; 2],
    comp: &wgpu::Buffer,
    new_id: &wgpu::Buffer,
    [n, c]: [usize; 2],
) -> Result<DagBuffers> {
    let params = uniform(device, "grail dag params", &[n as u32, c as u32, 0, 0])?;
    let offsets = scratch(device, "grail dag offsets", c + 1)?;
    let reverse_offsets = scratch(device, "grail dag reverse offsets", c + 1)?;
    let cursor = scratch(device, "grail dag cursor", c)?;
    let reverse_cursor = scratch(device, "grail dag reverse cursor", c)?;
    let placeholder = scratch(device, "grail dag placeholder", 1)?;
    let count_group = kernels.dag.bind(
        device,
        &[
            &params,
            graph[0],
            graph[1],
            comp,
            new_id,
            &offsets,
            &placeholder,
            &reverse_offsets,
            &placeholder,
            &cursor,
            &reverse_cursor,
        ],
    )?;
    let mut keep = Vec::new();
    submit(device, "grail dag count", |encoder| {
        dispatch(
            encoder,
            kernels.dag.pipeline("dag_count")?,
            &count_group,
            &[],
            workgroups(device, n),
        );
        keep.extend(record_scan(device, kernels, encoder, &offsets, c + 1)?);
        keep.extend(record_scan(
            device,
            kernels,
            encoder,
            &reverse_offsets,
            c + 1,
        )?);
        Ok(())
    })?;
    let edges = read_words(device, &offsets, c, 1)?[0] as usize;
    if edges >= MAX_ELEMENTS {
        bail!("GPU GRAIL: the condensed DAG has {edges} edges, more than {MAX_ELEMENTS}");
    }
    let targets = scratch(device, "grail dag targets", edges)?;
    let reverse_targets = scratch(device, "grail dag reverse targets", edges)?;
    let fill_group = kernels.dag.bind(
        device,
        &[
            &params,
            graph[0],
            graph[1],
            comp,
            new_id,
            &offsets,
            &targets,
            &reverse_offsets,
            &reverse_targets,
            &cursor,
            &reverse_cursor,
        ],
    )?;
    submit(device, "grail dag fill", |encoder| {
        dispatch(
            encoder,
            kernels.dag.pipeline("dag_fill")?,
            &fill_group,
            &[],
            workgroups(device, n),
        );
        Ok(())
    })?;
    Ok(DagBuffers {
        offsets,
        targets,
        reverse_offsets,
        reverse_targets,
        edges,
    })
}

impl<'d> GpuReachIndex<'d> {
    /// Builds the index of `graph` with `label_count` labels on the GPU (see the module docs).
    pub fn build(
        device: &'d Device,
        kernels: &GrailKernels,
        graph: &Csr,
        label_count: usize,
    ) -> Result<GpuReachIndex<'d>> {
        if !(1..=MAX_LABELS).contains(&label_count) {
            bail!("@reach_index: {label_count} labels, expected 1 to {MAX_LABELS}");
        }
        let n = graph.vertex_count();
        let m = graph.edge_count();
        if n >= MAX_ELEMENTS || m >= MAX_ELEMENTS || 2 * label_count * n >= MAX_ELEMENTS {
            bail!(
                "@reach_index: a graph of {n} vertices and {m} edges with {label_count} labels is too large for the GPU: at most {MAX_ELEMENTS} of each"
            );
        }
        let offsets = storage(
            device,
            "grail offsets",
            &u32s(graph.offsets().iter().copied()),
        )?;
        let targets = storage(
            device,
            "grail targets",
            &u32s(graph.neighbour_values().iter().map(|&v| v as usize)),
        )?;
        let mut stats = BuildStats::default();
        let scc = Scc::new(device, n)?;
        // Step 1: trim by in-degrees. The reverse graph is not built yet: Kahn does not read
        // it, so the forward buffers stand in for it.
        let forward = scc.bind(device, kernels, [&offsets, &targets], [&offsets, &targets])?;
        let forward_levels = scc.kahn(device, kernels, &forward, n)?;
        let trimmed = forward_levels.last().copied().unwrap_or(0);
        stats.trim_levels = forward_levels.len().saturating_sub(1);
        scc.remove(device, kernels, &forward, n, trimmed)?;
        let new_id = scratch(device, "grail new ids", n + 1)?;
        let (c, dag, levels, level_starts) = if trimmed == n {
            // A DAG: every vertex is its own component (named by itself, so ids are already
            // 0..n), and the trimming levels are the DAG's levels.
            let dag = build_dag(
                device,
                kernels,
                [&offsets, &targets],
                &scc.comp,
                &new_id,
                [n, n],
            )?;
            (n, dag, scc.level, forward_levels)
        } else {
            // The reverse graph: the "condensation" of the graph into itself.
            let identity = storage(device, "grail identity", &u32s(0..n))?;
            let reverse = build_dag(
                device,
                kernels,
                [&offsets, &targets],
                &identity,
                &new_id,
                [n, n],
            )?;
            drop((reverse.offsets, reverse.targets));
            let backward = scc.bind(
                device,
                kernels,
                [&reverse.reverse_offsets, &reverse.reverse_targets],
                [&offsets, &targets],
            )?;
            let backward_levels = scc.kahn(device, kernels, &backward, n)?;
            let trimmed_backward = backward_levels.last().copied().unwrap_or(0);
            stats.trim_levels += backward_levels.len().saturating_sub(1);
            scc.remove(device, kernels, &backward, n, trimmed_backward)?;
            stats.colored_vertices = n - trimmed - trimmed_backward;
            if stats.colored_vertices > 0 {
                let both = scc.bind(
                    device,
                    kernels,
                    [&offsets, &targets],
                    [&reverse.reverse_offsets, &reverse.reverse_targets],
                )?;
                stats.color_rounds = scc.color(device, kernels, &both, n)?;
            }
            // Renumber the components 0..c in the order of their naming vertices.
            let params = uniform(device, "grail renumber params", &[n as u32, 0, 0, 0])?;
            let placeholder = scratch(device, "grail placeholder", 1)?;
            let group = kernels.dag.bind(
                device,
                &[
                    &params,
                    &offsets,
                    &targets,
                    &scc.comp,
                    &new_id,
                    &placeholder,
                    &placeholder,
                    &placeholder,
                    &placeholder,
                    &placeholder,
                    &placeholder,
                ],
            )?;
            let mut keep = Vec::new();
            submit(device, "grail renumber", |encoder| {
                dispatch(
                    encoder,
                    kernels.dag.pipeline("mark_representatives")?,
                    &group,
                    &[],
                    workgroups(device, n),
                );
                keep = record_scan(device, kernels, encoder, &new_id, n + 1)?;
                dispatch(
                    encoder,
                    kernels.dag.pipeline("renumber")?,
                    &group,
                    &[],
                    workgroups(device, n),
                );
                Ok(())
            })?;
            let c = read_words(device, &new_id, n, 1)?[0] as usize;
            if c == 0 || c > n {
                bail!("GPU GRAIL: {c} components for {n} vertices");
            }
            let dag = build_dag(
                device,
                kernels,
                [&offsets, &targets],
                &scc.comp,
                &new_id,
                [n, c],
            )?;
            // The DAG's levels, by Kahn's algorithm over it.
            let dag_scc = Scc::new(device, c)?;
            let group = dag_scc.bind(
                device,
                kernels,
                [&dag.offsets, &dag.targets],
                [&dag.reverse_offsets, &dag.reverse_targets],
            )?;
            let dag_levels = dag_scc.kahn(device, kernels, &group, c)?;
            if dag_levels.last().copied().unwrap_or(0) != c {
                bail!("GPU GRAIL: the condensed graph is not acyclic (Kahn's algorithm ordered {:?} of {c} components)", dag_levels.last());
            }
            let Scc {
                level, order, comp, ..
            } = dag_scc;
            drop(comp);
            // The DAG's order replaces the graph's.
            return GpuReachIndex::label(
                device,
                kernels,
                [n, c, label_count],
                scc.comp,
                dag,
                [level, order],
                dag_levels,
                stats,
            );
        };
        GpuReachIndex::label(
            device,
            kernels,
            [n, c, label_count],
            scc.comp,
            dag,
            [levels, scc.order],
            level_starts,
            stats,
        )
    }

    /// Step 3: the labels, given the DAG, the level of each component and the components in
    /// level order (`level_starts` delimiting the levels).
    #[allow(clippy::too_many_arguments)]
    fn label(
        device: &'d Device,
        kernels: &GrailKernels,
        [n, c, label_count]: [usize; 3],
        component: wgpu::Buffer,
        dag: DagBuffers,
        [level, order]: [wgpu::Buffer; 2],
        level_starts: Vec<usize>,
        mut stats: BuildStats,
    ) -> Result<GpuReachIndex<'d>> {
        let depth = level_starts.len().saturating_sub(1);
        stats.dag_levels = depth;
        let labels = scratch(device, "grail labels", 2 * label_count * c)?;
        if c > 0 {
            let mut slots = vec![0u32; depth.max(1) * (LEVEL_SLOT as usize / 4)];
            for l in 0..depth {
                let slot = l * (LEVEL_SLOT as usize / 4);
                slots[slot] = l as u32;
                slots[slot + 1] = level_starts[l] as u32;
                slots[slot + 2] = level_starts[l + 1] as u32;
            }
            let levels = uniform(device, "grail levels", &slots)?;
            let parent = scratch(device, "grail parent", c)?;
            let size = scratch(device, "grail size", c)?;
            let start = scratch(device, "grail start", c + 1)?;
            for k in 0..label_count {
                let label = uniform(
                    device,
                    "grail label",
                    &[c as u32, k as u32, label_seed(k), 0],
                )?;
                let group = kernels.label.bind(
                    device,
                    &[
                        &levels,
                        &label,
                        &dag.offsets,
                        &dag.targets,
                        &dag.reverse_offsets,
                        &dag.reverse_targets,
                        &level,
                        &order,
                        &parent,
                        &size,
                        &start,
                        &labels,
                    ],
                )?;
                let slot = |l: usize| (l as u64 * LEVEL_SLOT) as u32;
                let range = |l: usize| level_starts[l + 1] - level_starts[l];
                let label_kernel = &kernels.label;
                let mut keep = Vec::new();
                submit(device, "grail labels", |encoder| {
                    dispatch(
                        encoder,
                        label_kernel.pipeline("tree_parent")?,
                        &group,
                        &[0],
                        workgroups(device, c),
                    );
                    for l in (1..depth).rev() {
                        dispatch(
                            encoder,
                            label_kernel.pipeline("tree_sizes")?,
                            &group,
                            &[slot(l)],
                            workgroups(device, range(l)),
                        );
                    }
                    dispatch(
                        encoder,
                        label_kernel.pipeline("root_sizes")?,
                        &group,
                        &[0],
                        workgroups(device, c + 1),
                    );
                    keep = record_scan(device, kernels, encoder, &start, c + 1)?;
                    for l in 0..depth {
                        dispatch(
                            encoder,
                            label_kernel.pipeline("tree_ranks")?,
                            &group,
                            &[slot(l)],
                            workgroups(device, range(l)),
                        );
                    }
                    for l in (0..depth).rev() {
                        dispatch(
                            encoder,
                            label_kernel.pipeline("low_high")?,
                            &group,
                            &[slot(l)],
                            workgroups(device, range(l)),
                        );
                    }
                    Ok(())
                })?;
            }
        }
        let dag_graph = GpuGraph::from_buffers(
            device,
            [c, dag.edges],
            [
                dag.offsets.clone(),
                dag.targets.clone(),
                dag.reverse_offsets,
                dag.reverse_targets,
            ],
            Some(PruningLabels {
                labels: labels.clone(),
                label_count,
            }),
        )?;
        device
            .wait_idle()
            .map_err(|e| RuntimeError::new(format!("GPU GRAIL: {e}")))?;
        Ok(GpuReachIndex {
            device,
            vertex_count: n,
            component_count: c,
            dag_edge_count: dag.edges,
            label_count,
            component,
            labels,
            dag_offsets: dag.offsets,
            dag_targets: dag.targets,
            dag: dag_graph,
            query: query_module(device)?,
            stats,
        })
    }

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

    /// `@reachable` through the index: the label filter on the GPU, then pruned IBFS over the
    /// condensed DAG for the pairs it leaves open.
    pub fn reachable(
        &self,
        sources: &[i64],
        destinations: &[i64],
        options: GpuOptions,
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
        let params = uniform(
            device,
            "grail query params",
            &[
                pairs as u32,
                self.component_count as u32,
                self.label_count as u32,
                0,
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
                0 => {}
                1 => answers[pair] = true,
                _ => {
                    open.push(pair);
                    from.push(i64::from(ends[2 * pair]));
                    to.push(i64::from(ends[2 * pair + 1]));
                }
            }
        }
        stats.settled_by_labels = pairs - open.len();
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

/// The WGSL of the GRAIL kernels, by file name (validated by naga in tests).
pub fn grail_sources() -> [(&'static str, &'static str); 5] {
    [
        ("grail_scc.wgsl", SCC_WGSL),
        ("grail_dag.wgsl", DAG_WGSL),
        ("grail_scan.wgsl", SCAN_WGSL),
        ("grail_label.wgsl", LABEL_WGSL),
        ("grail_query.wgsl", QUERY_WGSL),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grail_kernels_validate() {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        for (name, source) in grail_sources() {
            let module = naga::front::wgsl::parse_str(source)
                .unwrap_or_else(|e| panic!("{name} does not parse:\n{}", e.emit_to_string(source)));
            Validator::new(ValidationFlags::all(), Capabilities::all())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name} is invalid:\n{}", e.emit_to_string(source)));
        }
    }
}
