//! Group ranks from a small key domain (`shaders/dense_group.wgsl`): when every key word
//! spans a short range, a row's group is its position in the product of the ranges (its
//! *slot*), and the groups' ranks in key order come from counting the occupied slots. No
//! hash table and no sort of the distinct keys: a min/max pass, one counting pass, two scans
//! of the slots and one compaction, all decided on the device, then one read back (the
//! group count, or that the domain was too large, and the largest group's rows).
//!
//! The slot buffers hold the bound the key's types put on the domain (chars, bools,
//! dictionary codes: [`KeyRanges::Bounded`]) or else as many slots as the rows afford
//! ([`SMALL_DOMAIN`] or [`GPU_DOMAIN`], or 5/4 per row: [`afforded_slots`]); only two of
//! them start zeroed.

use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::device::Device;
use super::error::Result;
use super::keys::{check_len, gather, params, record_word_min_max, unused, KeyMatrix, NONE};
use super::pipeline::{BindingKind, Commands, KernelSpec, Pipeline};
use super::scan::{record_scan, COUNT_NONZERO, SUM_VALUES};
use super::template::{rendered, workgroup_size_text, WORKGROUP_SIZE};
use super::Uniform;

/// `shaders/dense_group.wgsl`.
pub const DENSE_GROUP_WGSL: &str = include_str!("../../../shaders/dense_group.wgsl");

/// Domains up to this many slots are counted in workgroup memory first (two u32 arrays of
/// this length: 16 KiB, WebGPU's minimum workgroup storage).
pub const LOCAL_SLOTS: usize = 2048;
/// Domains of at most this many slots are always taken on a software adapter (lavapipe);
/// larger ones only up to [`afforded_slots`].
pub const SMALL_DOMAIN: u64 = 1 << 16;
/// The same on a GPU: a million slots (their buffers take 28 MB, and the scans over them a
/// few microseconds) hold the part and supplier keys of TPC-H SF 1 (200,000 and 10,000
/// values), whose groups of a few thousand rows (q11, q17) otherwise fail the dense attempt
/// and are hashed after a wasted read-back.
pub const GPU_DOMAIN: u64 = 1 << 20;

/// The most slots a ranking of `rows` rows takes on `device`: [`SMALL_DOMAIN`] or
/// [`GPU_DOMAIN`], or 5/4 per row (the slot buffers take seven words per slot, and two
/// scans pass over them). A key numbering its rows, with gaps of a quarter, still fits:
/// TPC-H's order keys over the line items.
pub fn afforded_slots(device: &Device, rows: usize) -> u64 {
    let rows = rows as u64;
    let floor = if device.adapter_info().device_type == wgpu::DeviceType::Cpu {
        SMALL_DOMAIN
    } else {
        GPU_DOMAIN
    };
    floor.max(rows.saturating_add(rows / 4))
}
/// Rows per invocation the counting pass aims at before adding workgroups (each workgroup
/// clears and flushes its workgroup-memory counts once).
const ROWS_PER_INVOCATION: usize = 16;
/// Most workgroups of the counting pass (it strides over the rows).
const MAX_COUNT_WORKGROUPS: usize = 1024;

const DENSE_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageRead,
];

fn dense_pipeline(device: &Device, entry: &str) -> Result<Arc<Pipeline>> {
    // Rendered once per process: a look-up then finds the text by its address.
    let source = rendered(
        "dense_group.wgsl",
        DENSE_GROUP_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("LOCAL_SLOTS", &LOCAL_SLOTS.to_string()),
        ],
    )?;
    device.pipeline(&KernelSpec {
        label: &format!("dense_group.{entry}"),
        source,
        entry_point: entry,
        constants: &[],
        bindings: DENSE_BINDINGS,
    })
}

/// What the caller knows of a key's words before looking at them.
/// The buffers of one `dense_group.wgsl` dispatch, by binding: `params` at 0, `named` where
/// given, and at every other binding a spare one-word buffer of its own (writable bindings of
/// one dispatch must not alias). There must be a spare for each binding left.
fn dense_bindings<'a>(
    params: &'a wgpu::Buffer,
    named: &[(usize, &'a wgpu::Buffer)],
    spare: &'a [GpuBuffer<u32>],
) -> Result<Vec<&'a wgpu::Buffer>> {
    let mut spare = spare.iter();
    let mut buffers = vec![params];
    for binding in 1..DENSE_BINDINGS.len() {
        buffers.push(match named.iter().find(|(b, _)| *b == binding) {
            Some((_, buffer)) => *buffer,
            None => spare
                .next()
                .ok_or_else(|| super::error::GpuError::Command {
                    label: "dense_group".to_string(),
                    message: format!("no spare buffer for binding {binding}"),
                })?
                .raw(),
        });
    }
    Ok(buffers)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyRanges {
    /// Every word lies within its `(min, max)`, known from the key's types: the slot
    /// buffers need no more than their product.
    Bounded(Vec<(u32, u32)>),
    /// Nothing.
    Unknown,
    /// Words that rarely span short ranges (floats): not worth a look.
    Wide,
}

/// The slots of a key domain whose words span `ranges`: their product, when it is small
/// enough for `rows` rows and fits a u32 index; `None` otherwise.
fn domain_of(device: &Device, ranges: &[(u32, u32)], rows: usize) -> Option<u64> {
    let mut domain = 1u64;
    for &(lo, hi) in ranges {
        domain = domain.checked_mul(u64::from(hi.checked_sub(lo)?) + 1)?;
        if domain > u64::from(u32::MAX) {
            return None;
        }
    }
    (domain <= afforded_slots(device, rows)).then_some(domain)
}

/// Rows ranked by their slot in a small key domain.
pub struct DenseRanks {
    /// Each row's slot.
    pub slots: GpuBuffer<u32>,
    /// Each slot's group rank (key order); meaningless for empty slots.
    pub rank_of_slot: GpuBuffer<u32>,
    /// The first row of each group, in rank order (`groups` elements).
    pub keys: GpuBuffer<u32>,
    /// `groups + 1` offsets: where each group's rows start once bucketed by rank.
    pub offsets: GpuBuffer<u32>,
    pub groups: usize,
    /// Rows of the largest group.
    pub largest: usize,
    /// Each slot's first position in the bucketed rows (`domain + 1`).
    count_scan: GpuBuffer<u32>,
    /// `[groups, largest]`, as read back.
    summary: GpuBuffer<u32>,
    params: Uniform,
    rows: usize,
}

/// What [`dense_ranks`] found.
pub enum Dense {
    /// The rows ranked by slot.
    Ranked(Box<DenseRanks>),
    /// The domain is too large; each key word's `(min, max)`, read back with the outcome
    /// (the sort of the distinct keys by hashing needs no read of its own then).
    TooLarge(Vec<(u32, u32)>),
    /// Not tried: no rows, or keys whose words rarely span short ranges.
    Skipped,
}

/// Ranks the rows of `keys` by group when their key domain is small (see the module
/// documentation); else says why not (the caller hashes or sorts instead).
pub fn dense_ranks(
    device: &Device,
    what: &str,
    keys: &KeyMatrix,
    ranges: &KeyRanges,
) -> Result<Dense> {
    let (rows, words) = (keys.rows, keys.num_words());
    if rows == 0 || words == 0 {
        return Ok(Dense::Skipped);
    }
    let typed = match ranges {
        KeyRanges::Wide => return Ok(Dense::Skipped),
        KeyRanges::Bounded(bounds) if bounds.len() == words => domain_of(device, bounds, rows),
        _ => None,
    };
    // Slots the buffers hold: the types' bound on the domain, or as many as afforded; a
    // measured domain beyond it is refused on the device (see the shader).
    let limits = device.limits();
    let most = (limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        / 4)
    .saturating_sub(1)
    .min(u64::from(u32::MAX - 1));
    let domain = typed.unwrap_or(afforded_slots(device, rows)).min(most) as usize;
    let ranges_buffer = device.zeroed::<u32>("dense ranges", 2 * words + 1)?;
    let uniform = params(
        device,
        "dense params",
        [
            check_len(what, rows)?,
            check_len(what, words)?,
            check_len(what, domain)?,
            0,
            0,
            0,
            0,
            0,
        ],
    )?;
    // Written where read: each row's slot, and per occupied slot its rank, first row and
    // offset; only the counts start from zero.
    let slots = device.scratch::<u32>("dense slots", rows)?;
    let counts = device.zeroed::<u32>("dense counts", domain)?;
    let firsts = device.zeroed::<u32>("dense firsts", domain)?;
    let rank_of_slot = device.scratch::<u32>("rank of slot", domain)?;
    let group_keys = device.scratch::<u32>("group keys", domain)?;
    let group_offsets = device.scratch::<u32>("group offsets", domain + 1)?;
    let summary = device.zeroed::<u32>("dense summary", 2 + 2 * words)?;
    let spare = (0..5).map(|_| unused(device)).collect::<Result<Vec<_>>>()?;
    let mut commands = Commands::new(device, "dense ranks");
    let minmax = record_word_min_max(&mut commands, keys)?;
    let ranking = [
        (1, keys.words.raw()),
        (2, ranges_buffer.raw()),
        (3, slots.raw()),
        (4, counts.raw()),
        (5, firsts.raw()),
        (8, rank_of_slot.raw()),
        (9, group_keys.raw()),
        (10, group_offsets.raw()),
        (11, summary.raw()),
        (14, minmax.raw()),
    ];
    let set_ranges = dense_pipeline(device, "set_ranges")?;
    commands.dispatch(&set_ranges, &dense_bindings(&uniform, &ranking, &spare)?, 1)?;
    let count = dense_pipeline(device, "slot_counts")?;
    let workgroups = rows
        .div_ceil(WORKGROUP_SIZE as usize * ROWS_PER_INVOCATION)
        .clamp(1, MAX_COUNT_WORKGROUPS);
    commands.dispatch(
        &count,
        &dense_bindings(&uniform, &ranking, &spare)?,
        workgroups as u64,
    )?;
    let present_scan = record_scan(&mut commands, counts.raw(), domain, COUNT_NONZERO)?;
    let count_scan = record_scan(&mut commands, counts.raw(), domain, SUM_VALUES)?;
    let compact = dense_pipeline(device, "compact_slots")?;
    let mut compacting = ranking.to_vec();
    compacting.extend([(6, present_scan.raw()), (7, count_scan.raw())]);
    commands.dispatch(
        &compact,
        &dense_bindings(&uniform, &compacting, &spare)?,
        element_workgroups(domain),
    )?;
    commands.submit()?;
    // The one read of the ranking: the group count (NONE: the domain is too large), the
    // largest group's rows and the words' ranges (for the caller's sort when too large).
    let read = device.download(&summary)?;
    drop(spare);
    if read[0] == NONE {
        let ranges = read[2..].chunks_exact(2).map(|w| (w[0], w[1])).collect();
        return Ok(Dense::TooLarge(ranges));
    }
    let (groups, largest) = (read[0] as usize, read[1] as usize);
    Ok(Dense::Ranked(Box::new(DenseRanks {
        slots,
        rank_of_slot,
        keys: group_keys.retyped(groups),
        offsets: group_offsets.retyped(groups + 1),
        groups,
        largest,
        count_scan,
        summary,
        params: uniform,
        rows,
    })))
}

impl DenseRanks {
    /// Each row's group rank (`rank_of_slot[slot]`), for kernels that take ranks.
    pub fn ranks(&self, device: &Device) -> Result<GpuBuffer<u32>> {
        gather(device, &self.rank_of_slot, &self.slots)
    }

    /// The rows bucketed by group in `offsets`' layout, each bucket's rows in no particular
    /// order (the caller orders them where it matters): one scatter pass, no sort.
    pub fn scatter(&self, device: &Device) -> Result<GpuBuffer<u32>> {
        self.bucket_rows(device, false)
    }

    /// The rows bucketed by group, each bucket's rows ascending: a scatter, then one
    /// invocation per group orders its few rows. For groups of at most a few dozen rows
    /// (`largest`); a stable sort of the ranks serves larger ones.
    pub fn scatter_sorted(&self, device: &Device) -> Result<GpuBuffer<u32>> {
        self.bucket_rows(device, true)
    }

    fn bucket_rows(&self, device: &Device, sorted: bool) -> Result<GpuBuffer<u32>> {
        let bucketed = device.scratch::<u32>("bucketed rows", self.rows)?;
        let cursor = device.zeroed::<u32>("bucket cursor", self.count_scan.len())?;
        let spare = (0..11)
            .map(|_| unused(device))
            .collect::<Result<Vec<_>>>()?;
        let mut commands = Commands::new(device, "scatter rows");
        commands.copy(&self.count_scan, cursor.raw())?;
        let scatter = dense_pipeline(device, "scatter_rows")?;
        let scattering = [
            (3, self.slots.raw()),
            (12, cursor.raw()),
            (13, bucketed.raw()),
        ];
        commands.dispatch(
            &scatter,
            &dense_bindings(&self.params, &scattering, &spare)?,
            element_workgroups(self.rows),
        )?;
        if sorted {
            let sort = dense_pipeline(device, "sort_buckets")?;
            let mut sorting = scattering.to_vec();
            sorting.extend([(10, self.offsets.raw()), (11, self.summary.raw())]);
            commands.dispatch(
                &sort,
                &dense_bindings(&self.params, &sorting, &spare)?,
                element_workgroups(self.groups),
            )?;
        }
        commands.submit()?;
        Ok(bucketed)
    }
}
