//! Exclusive prefix sum over u32 on the GPU (reduce-then-scan, see `shaders/scan.wgsl`).

use super::buffer::GpuBuffer;
use super::device::Device;
use super::error::Result;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::template::scan_source;

/// Parameters of the tiled kernels, as laid out in the shaders' `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct TileParams {
    pub n: u32,
    pub num_tiles: u32,
    pub extra_0: u32,
    pub extra_1: u32,
}

const SCAN_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

/// Load map that sums the values as they are.
pub(crate) const SUM_VALUES: &str = "x";
/// Load map that counts non-zero values (true flags).
pub(crate) const COUNT_NONZERO: &str = "u32(x != 0u)";

/// The exclusive prefix sum of `input`, with the total appended: `n + 1` elements,
/// `out[i] = input[0] + … + input[i-1]`, `out[n]` = the sum of all. Sums wrap modulo 2³².
pub fn exclusive_scan(device: &Device, input: &GpuBuffer<u32>) -> Result<GpuBuffer<u32>> {
    let mut commands = Commands::new(device, "exclusive_scan");
    let output = record_scan(&mut commands, input.raw(), input.len(), SUM_VALUES)?;
    commands.submit()?;
    Ok(output)
}

pub(crate) fn tile_count(n: usize, tile_size: u32) -> u32 {
    n.div_ceil(tile_size as usize) as u32
}

/// Records the scan of the first `n` u32 of `input`, each loaded through `map`, and returns
/// the `n + 1`-element output buffer (filled once the commands run).
pub(crate) fn record_scan(
    commands: &mut Commands<'_>,
    input: &wgpu::Buffer,
    n: usize,
    map: &str,
) -> Result<GpuBuffer<u32>> {
    let device = commands.device();
    let output = device.zeroed::<u32>("scan output", n + 1)?;
    if n == 0 {
        // The only element, the total, is already zero.
        return Ok(output);
    }
    let source = scan_source(map, device.items_per_thread())?;
    let reduce = device.pipeline(&KernelSpec {
        label: "scan.reduce_tiles",
        source,
        entry_point: "reduce_tiles",
        constants: &[],
        bindings: SCAN_BINDINGS,
    })?;
    let scan = device.pipeline(&KernelSpec {
        label: "scan.scan_tiles",
        source,
        entry_point: "scan_tiles",
        constants: &[],
        bindings: SCAN_BINDINGS,
    })?;
    let num_tiles = tile_count(n, device.tile_size());
    let params = device.uniform(
        "scan params",
        &TileParams {
            n: n as u32,
            num_tiles,
            extra_0: 0,
            extra_1: 0,
        },
    )?;
    let tile_offsets = if num_tiles == 1 {
        device.zeroed::<u32>("scan tile offsets", 1)?
    } else {
        let tile_sums = device.zeroed::<u32>("scan tile sums", num_tiles as usize)?;
        commands.dispatch(
            &reduce,
            &[&params, input, tile_sums.raw(), output.raw()],
            u64::from(num_tiles),
        )?;
        // Level k + 1 scans the tile sums of level k: log_tile(n) levels in all.
        record_scan(commands, tile_sums.raw(), num_tiles as usize, SUM_VALUES)?
    };
    commands.dispatch(
        &scan,
        &[&params, input, tile_offsets.raw(), output.raw()],
        u64::from(num_tiles),
    )?;
    Ok(output)
}
