//! Stable LSD radix sort of u32 keys on the GPU (see `shaders/radix_sort.wgsl`).

use super::buffer::GpuBuffer;
use super::device::Device;
use super::error::Result;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::reduce::bitwise_or;
use super::scan::{record_scan, tile_count, TileParams, SUM_VALUES};
use super::template::radix_sort_source;

/// Key bits sorted per pass; must match `RADIX_BITS` in `radix_sort.wgsl`.
const RADIX_BITS: u32 = 4;
const RADIX: u32 = 1 << RADIX_BITS;

const SORT_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

/// The keys in ascending order and the permutation that sorts them:
/// `keys[j] == input[permutation[j]]`, equal keys in input order (stable).
#[derive(Debug)]
pub struct SortedU32 {
    pub keys: GpuBuffer<u32>,
    pub permutation: GpuBuffer<u32>,
}

/// Sorts `keys` ascending, stably, returning the sorted keys and the permutation.
/// Other key types sort by first mapping them to order-preserving u32 bits.
///
/// Only the key bits some key has set are sorted on: the OR of all keys is computed (and read
/// back) first, so keys below 2^16, such as dates as days since 1970, take 4 passes, not 8.
pub fn radix_sort_u32(device: &Device, keys: &GpuBuffer<u32>) -> Result<SortedU32> {
    radix_sort_u32_below(device, keys, None)
}

/// [`radix_sort_u32`] of keys the caller knows to be at most `largest` (a group rank, a
/// key less its minimum): the passes cover its bits without reading the keys' OR back.
pub fn radix_sort_u32_below(
    device: &Device,
    keys: &GpuBuffer<u32>,
    largest: Option<u32>,
) -> Result<SortedU32> {
    let n = keys.len();
    // Ping-pong buffers: pass p writes set p % 2, every element (not cleared first).
    let sets = [
        (
            device.scratch::<u32>("sort keys A", n)?,
            device.scratch::<u32>("sort payload A", n)?,
        ),
        (
            device.scratch::<u32>("sort keys B", n)?,
            device.scratch::<u32>("sort payload B", n)?,
        ),
    ];
    if n == 0 {
        let [(sorted_keys, permutation), _] = sets;
        return Ok(SortedU32 {
            keys: sorted_keys,
            permutation,
        });
    }
    let bits_of = |x: u32| u32::BITS - x.leading_zeros();
    let used_bits = match largest {
        Some(largest) => bits_of(largest),
        None => bits_of(bitwise_or(device, keys)?),
    };
    // At least one pass: it also writes the identity payload when all keys are 0.
    let passes = used_bits.div_ceil(RADIX_BITS).max(1);
    let source = radix_sort_source(device.items_per_thread())?;
    let histogram = device.pipeline(&KernelSpec {
        label: "radix_sort.histogram",
        source,
        entry_point: "histogram",
        constants: &[],
        bindings: SORT_BINDINGS,
    })?;
    let scatter = device.pipeline(&KernelSpec {
        label: "radix_sort.scatter",
        source,
        entry_point: "scatter",
        constants: &[],
        bindings: SORT_BINDINGS,
    })?;
    let num_tiles = tile_count(n, device.tile_size());
    let counts_len = RADIX as usize * num_tiles as usize;
    // Every tile writes its counts of every digit: no clear.
    let tile_counts = device.scratch::<u32>("sort tile counts", counts_len)?;
    let mut commands = Commands::new(device, "radix_sort_u32");
    for pass in 0..passes {
        let params = device.uniform(
            "sort params",
            &TileParams {
                n: n as u32,
                num_tiles,
                extra_0: pass * RADIX_BITS,
                extra_1: u32::from(pass == 0),
            },
        )?;
        let (keys_out, payload_out) = &sets[(pass % 2) as usize];
        let (keys_in, payload_in) = if pass == 0 {
            // The payload is the index on the first pass; the binding is only a stand-in.
            (keys.raw(), keys.raw())
        } else {
            let (k, p) = &sets[((pass + 1) % 2) as usize];
            (k.raw(), p.raw())
        };
        commands.dispatch(
            &histogram,
            &[
                &params,
                keys_in,
                payload_in,
                tile_counts.raw(),
                keys_out.raw(),
                payload_out.raw(),
            ],
            u64::from(num_tiles),
        )?;
        let offsets = record_scan(&mut commands, tile_counts.raw(), counts_len, SUM_VALUES)?;
        commands.dispatch(
            &scatter,
            &[
                &params,
                keys_in,
                payload_in,
                offsets.raw(),
                keys_out.raw(),
                payload_out.raw(),
            ],
            u64::from(num_tiles),
        )?;
    }
    commands.submit()?;
    let [set_a, set_b] = sets;
    let (sorted_keys, permutation) = if (passes - 1) % 2 == 0 { set_a } else { set_b };
    Ok(SortedU32 {
        keys: sorted_keys,
        permutation,
    })
}
