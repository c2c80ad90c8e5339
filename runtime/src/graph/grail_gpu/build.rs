//! The index build on the GPU: components, condensed DAG, levels and labels (see the
//! parent module).

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, MAX_ELEMENTS};
use crate::graph::csr::Csr;
use crate::graph::gpu::{scratch, storage, GpuGraph, PruningLabels};
use crate::graph::grail::{label_seed, MAX_LABELS};

use super::kernels::{
    dispatch, gpu_error, query_module, read_words, record_scan, submit, u32s, uniform, workgroups,
    GrailKernels,
};
use super::{BuildStats, GpuReachIndex};

/// Slots of the SCC kernels' `state`.
const TAIL: usize = 0;
const CHANGED: usize = 1;
const LIVE: usize = 2;
const STATE_WORDS: usize = 4;
/// Bytes between two levels' uniforms (the dynamic-offset alignment every device accepts).
const LEVEL_SLOT: u64 = 256;

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

    fn set_params(&self, device: &Device, words: [u32; 4]) -> Result<()> {
        // Queue-ordered: applies to the next submission, after the work recorded before.
        device
            .write_after_queued(&self.params, 0, bytemuck::cast_slice(&words))
            .map_err(gpu_error)
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
        self.set_params(device, [n as u32, 0, 0, 0])?;
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
            self.set_params(device, [n as u32, start as u32, end as u32, level as u32])?;
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
        self.set_params(device, [n as u32, 0, count as u32, 0])?;
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
        self.set_params(device, [n as u32, 0, 0, 0])?;
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
    let unused_binding = scratch(device, "grail dag binding a pass does not use", 1)?;
    let count_group = kernels.dag.bind(
        device,
        &[
            &params,
            graph[0],
            graph[1],
            comp,
            new_id,
            &offsets,
            &unused_binding,
            &reverse_offsets,
            &unused_binding,
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
            let unused_binding = scratch(device, "grail binding a pass does not use", 1)?;
            let group = kernels.dag.bind(
                device,
                &[
                    &params,
                    &offsets,
                    &targets,
                    &scc.comp,
                    &new_id,
                    &unused_binding,
                    &unused_binding,
                    &unused_binding,
                    &unused_binding,
                    &unused_binding,
                    &unused_binding,
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
            hubs: std::sync::Mutex::new(None),
            stats,
        })
    }
}
