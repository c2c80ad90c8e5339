//! Stream compaction on the GPU: `@where` (positions of true flags) and `@compress`
//! (the values under true flags). Both scan the flags, read back the count, then scatter.

use super::buffer::GpuBuffer;
use super::device::Device;
use super::error::{GpuError, Result};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::{record_scan, TileParams, COUNT_NONZERO};
use super::template::{compact_source, where_source, GpuScalar, WORKGROUP_SIZE};

/// The indexes `i` with `flags[i] != 0`, in increasing order.
pub fn where_true(device: &Device, flags: &GpuBuffer<u32>) -> Result<GpuBuffer<u32>> {
    let n = flags.len();
    let (offsets, count) = scan_flags(device, flags)?;
    let output = device.zeroed::<u32>("where output", count)?;
    if count == 0 {
        return Ok(output);
    }
    let source = where_source()?;
    let kernel = device.pipeline(&KernelSpec {
        label: "where.where_true",
        source: &source,
        entry_point: "where_true",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
        ],
    })?;
    let params = element_params(device, n)?;
    let mut commands = Commands::new(device, "where");
    commands.dispatch(
        &kernel,
        &[&params, flags.raw(), offsets.raw(), output.raw()],
        element_workgroups(n),
    )?;
    commands.submit()?;
    Ok(output)
}

/// The `values[i]` with `mask[i] != 0`, in order. `mask` and `values` must have one length.
pub fn compress<T: GpuScalar>(
    device: &Device,
    mask: &GpuBuffer<u32>,
    values: &GpuBuffer<T>,
) -> Result<GpuBuffer<T>> {
    if let Some(feature) = T::FEATURE {
        device.require_feature(feature, &format!("compress of {}", T::WGSL))?;
    }
    if mask.len() != values.len() {
        return Err(GpuError::Command {
            label: "compress".to_string(),
            message: format!(
                "mask has {} elements but values have {}",
                mask.len(),
                values.len()
            ),
        });
    }
    let n = mask.len();
    let (offsets, count) = scan_flags(device, mask)?;
    let output = device.zeroed::<T>("compress output", count)?;
    if count == 0 {
        return Ok(output);
    }
    let source = compact_source::<T>()?;
    let kernel = device.pipeline(&KernelSpec {
        label: "compact.compress",
        source: &source,
        entry_point: "compress",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
        ],
    })?;
    let params = element_params(device, n)?;
    let mut commands = Commands::new(device, "compress");
    commands.dispatch(
        &kernel,
        &[
            &params,
            mask.raw(),
            offsets.raw(),
            values.raw(),
            output.raw(),
        ],
        element_workgroups(n),
    )?;
    commands.submit()?;
    Ok(output)
}

/// Scans the non-zero flags; returns the offsets (n + 1 elements) and the count of true
/// flags, read back because it sizes the output.
fn scan_flags(device: &Device, flags: &GpuBuffer<u32>) -> Result<(GpuBuffer<u32>, usize)> {
    let n = flags.len();
    let mut commands = Commands::new(device, "scan flags");
    let offsets = record_scan(&mut commands, flags.raw(), n, COUNT_NONZERO)?;
    commands.submit()?;
    let total = device.download_range(&offsets, n, 1)?;
    let count = total.first().copied().unwrap_or(0) as usize;
    Ok((offsets, count))
}

fn element_params(device: &Device, n: usize) -> Result<crate::gpu::Uniform> {
    device.uniform(
        "compaction params",
        &TileParams {
            n: n as u32,
            num_tiles: 0,
            extra_0: 0,
            extra_1: 0,
        },
    )
}

/// Workgroups for one invocation per element (clamped later; kernels loop grid-stride).
pub(crate) fn element_workgroups(n: usize) -> u64 {
    (n as u64).div_ceil(u64::from(WORKGROUP_SIZE))
}
