//! Reductions on the GPU that finish with a single word read back.

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::device::Device;
use super::error::Result;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::TileParams;
use super::template::or_reduce_source;

/// The bitwise OR of all elements (0 for none), computed on the device and read back.
pub fn bitwise_or(device: &Device, input: &GpuBuffer<u32>) -> Result<u32> {
    let n = input.len();
    if n == 0 {
        return Ok(0);
    }
    let source = or_reduce_source()?;
    let kernel = device.pipeline(&KernelSpec {
        label: "or_reduce.or_all",
        source: &source,
        entry_point: "or_all",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
        ],
    })?;
    let params = device.uniform(
        "or params",
        &TileParams {
            n: n as u32,
            num_tiles: 0,
            extra_0: 0,
            extra_1: 0,
        },
    )?;
    let result = device.zeroed::<u32>("or result", 1)?;
    let mut commands = Commands::new(device, "bitwise_or");
    commands.dispatch(
        &kernel,
        &[&params, input.raw(), result.raw()],
        element_workgroups(n),
    )?;
    commands.submit()?;
    Ok(device.download(&result)?.first().copied().unwrap_or(0))
}
