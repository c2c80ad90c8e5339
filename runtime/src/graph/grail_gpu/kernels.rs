//! The GRAIL kernels' pipelines and the small host helpers that record and read them.

use std::num::NonZeroU64;

use wgpu::util::DeviceExt;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuError};
use crate::graph::gpu::{command_error, map_read, readback, scratch, shader_error};

pub const SCC_WGSL: &str = include_str!("../../../../shaders/grail_scc.wgsl");
pub const DAG_WGSL: &str = include_str!("../../../../shaders/grail_dag.wgsl");
pub const SCAN_WGSL: &str = include_str!("../../../../shaders/grail_scan.wgsl");
pub const LABEL_WGSL: &str = include_str!("../../../../shaders/grail_label.wgsl");
pub const QUERY_WGSL: &str = include_str!("../../../../shaders/grail_query.wgsl");

pub(super) const WORKGROUP: usize = 256;

pub(super) fn gpu_error(e: GpuError) -> RuntimeError {
    RuntimeError::new(format!("GPU GRAIL: {e}"))
}
#[derive(Clone, Copy)]
pub(super) enum Binding {
    Uniform,
    /// A 16-byte uniform chosen by a dynamic offset at each dispatch.
    DynamicUniform,
    Storage,
}

/// One shader module's pipelines, sharing one bind group layout.
pub(super) struct Module {
    name: &'static str,
    bindings: Vec<Binding>,
    layout: wgpu::BindGroupLayout,
    pipelines: Vec<(&'static str, wgpu::ComputePipeline)>,
}

impl Module {
    pub(super) fn new(
        device: &Device,
        name: &'static str,
        source: &str,
        bindings: &[Binding],
        entries: &[&'static str],
    ) -> Result<Module> {
        let raw = &device.device;
        device
            .capture_errors(name, shader_error, || {
                let module = device.shader_module(name, source);
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

    pub(super) fn pipeline(&self, entry: &str) -> Result<&wgpu::ComputePipeline> {
        match self.pipelines.iter().find(|(name, _)| *name == entry) {
            Some((_, pipeline)) => Ok(pipeline),
            None => bail!("GPU GRAIL: {} has no kernel `{entry}`", self.name),
        }
    }

    /// A bind group of whole buffers, binding `i` = `buffers[i]`; a dynamic uniform binds
    /// its first 16 bytes (the dispatch picks the slot).
    pub(super) fn bind(
        &self,
        device: &Device,
        buffers: &[&wgpu::Buffer],
    ) -> Result<wgpu::BindGroup> {
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
    pub(super) scc: Module,
    pub(super) dag: Module,
    pub(super) scan: Module,
    pub(super) label: Module,
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
pub(super) fn query_module(device: &Device) -> Result<Module> {
    let mut bindings = vec![Binding::Uniform];
    bindings.extend(std::iter::repeat_n(Binding::Storage, 8));
    Module::new(
        device,
        "grail_query.wgsl",
        QUERY_WGSL,
        &bindings,
        &["label_filter"],
    )
}

/// A uniform buffer holding `words`.
pub(super) fn uniform(device: &Device, label: &str, words: &[u32]) -> Result<wgpu::Buffer> {
    // Counted with the device's buffer creations (`--time`, memory samples).
    let _timer = device.costs.buffers.timer();
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
pub(super) fn workgroups(device: &Device, threads: usize) -> u32 {
    let wanted = threads.div_ceil(WORKGROUP).max(1);
    wanted.min(device.max_workgroups_per_dispatch() as usize) as u32
}

/// Records `body` into one encoder and submits it.
pub(super) fn submit(
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
            device.submit_indexed(encoder.finish())
        })
        .map_err(gpu_error)
}

/// One dispatch in its own compute pass.
pub(super) fn dispatch(
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
pub(super) fn read_words(
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

pub(super) fn u32s(values: impl Iterator<Item = usize>) -> Vec<u32> {
    // Callers check sizes against MAX_ELEMENTS first.
    values.map(|x| x as u32).collect()
}

/// Exclusive prefix sum of `len` u32 in `data`, in place, recorded into `encoder`. Returns
/// the buffers the recorded passes use (kept alive until submission).
pub(super) fn record_scan(
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
