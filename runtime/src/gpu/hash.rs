//! The GPU hash table over key-matrix rows (`shaders/hash.wgsl`) and the library kernels
//! built on it: `@group` (hash-based, with a sort-based alternative), `@unique` and
//! `@member`.

use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::dense_group::{dense_ranks, Dense, DenseRanks, KeyRanges};
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{
    check_len, filled, gather, gather_rows, params, record_keys, sorted_offsets, unused, KeyMatrix,
    NONE,
};
use super::order::{order_permutation, order_permutation_in_ranges};
use super::pipeline::{BindingKind, Commands, KernelSpec, Pipeline};
use super::scan::exclusive_scan;
use super::sort::radix_sort_u32_below;
use super::template::{rendered, workgroup_size_text};

/// `shaders/hash.wgsl`: open-addressing hash table over key rows.
pub const HASH_WGSL: &str = include_str!("../../../shaders/hash.wgsl");

const HASH_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

/// The hash module, specialised (rendered once per process, see `template::rendered`).
pub fn hash_source() -> Result<&'static str> {
    rendered(
        "hash.wgsl",
        HASH_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

fn hash_pipeline(device: &Device, entry: &str) -> Result<Arc<Pipeline>> {
    let source = hash_source()?;
    device.pipeline(&KernelSpec {
        label: &format!("hash.{entry}"),
        source,
        entry_point: entry,
        constants: &[],
        bindings: HASH_BINDINGS,
    })
}

/// Slots for `rows` inserted rows: a power of two, at least twice the rows (linear probing
/// stays short and always finds an empty slot).
pub fn table_capacity(rows: usize) -> usize {
    rows.saturating_mul(2).max(64).next_power_of_two()
}

/// Whether a table for `rows` rows fits the device's buffer and binding limits.
pub fn hash_table_fits(device: &Device, rows: usize) -> bool {
    let bytes = (table_capacity(rows) as u64).saturating_mul(4);
    let limits = device.limits();
    bytes <= limits.max_storage_buffer_binding_size
        && bytes <= limits.max_buffer_size
        && table_capacity(rows) < NONE as usize
}

/// A filled hash table: `slots[i]` is the slot of build row `i`; rows with equal keys share
/// a slot, rows with different keys never do.
#[derive(Debug)]
pub struct HashTable {
    pub table: GpuBuffer<u32>,
    pub slots: GpuBuffer<u32>,
    pub capacity: usize,
}

struct Bindings<'a> {
    build: &'a wgpu::Buffer,
    probe: &'a wgpu::Buffer,
    table: &'a wgpu::Buffer,
    slots: &'a wgpu::Buffer,
    counters: &'a wgpu::Buffer,
    flags: &'a wgpu::Buffer,
}

#[allow(clippy::too_many_arguments)]
fn record_hash(
    commands: &mut Commands<'_>,
    entry: &str,
    n: usize,
    words: usize,
    capacity: usize,
    build_rows: usize,
    probe_rows: usize,
    b: &Bindings<'_>,
) -> Result<()> {
    let device = commands.device();
    let pipeline = hash_pipeline(device, entry)?;
    let what = "hash table";
    let uniform = params(
        device,
        entry,
        [
            check_len(what, n)?,
            check_len(what, words)?,
            check_len(what, capacity.saturating_sub(1))?,
            check_len(what, build_rows)?,
            check_len(what, probe_rows)?,
            0,
            0,
            0,
        ],
    )?;
    commands.dispatch(
        &pipeline,
        &[
            &uniform, b.build, b.probe, b.table, b.slots, b.counters, b.flags,
        ],
        element_workgroups(n),
    )
}

/// Inserts every row of `keys` into a new table.
pub fn hash_insert(device: &Device, what: &str, keys: &KeyMatrix) -> Result<HashTable> {
    let mut commands = Commands::new(device, "hash insert");
    let table = record_insert(&mut commands, what, keys)?;
    commands.submit()?;
    Ok(table)
}

/// Records the insertion of every row of `keys` into a new table.
pub(crate) fn record_insert(
    commands: &mut Commands<'_>,
    what: &str,
    keys: &KeyMatrix,
) -> Result<HashTable> {
    let device = commands.device();
    if !hash_table_fits(device, keys.rows) {
        return Err(GpuError::Unsupported {
            what: what.to_string(),
            message: format!(
                "a hash table for {} rows exceeds the device's buffer limits",
                keys.rows
            ),
        });
    }
    let capacity = table_capacity(keys.rows);
    let table = device.zeroed::<u32>("hash table", capacity)?;
    let slots = device.zeroed::<u32>("hash slots", keys.rows)?;
    let (probe, counters, flags) = (unused(device)?, unused(device)?, unused(device)?);
    record_hash(
        commands,
        "insert",
        keys.rows,
        keys.num_words(),
        capacity,
        keys.rows,
        keys.rows,
        &Bindings {
            build: keys.words.raw(),
            probe: probe.raw(),
            table: table.raw(),
            slots: slots.raw(),
            counters: counters.raw(),
            flags: flags.raw(),
        },
    )?;
    Ok(HashTable {
        table,
        slots,
        capacity,
    })
}

/// For each row of `probe`, the slot of the equal key among the rows of `build` (which
/// filled `table`), or [`NONE`]. The two matrices must have the same word layout.
pub fn hash_probe(
    device: &Device,
    table: &HashTable,
    build: &KeyMatrix,
    probe: &KeyMatrix,
) -> Result<GpuBuffer<u32>> {
    let mut commands = Commands::new(device, "hash probe");
    let slots = record_probe(&mut commands, table, build, probe)?;
    commands.submit()?;
    Ok(slots)
}

/// Records [`hash_probe`].
pub(crate) fn record_probe(
    commands: &mut Commands<'_>,
    table: &HashTable,
    build: &KeyMatrix,
    probe: &KeyMatrix,
) -> Result<GpuBuffer<u32>> {
    let device = commands.device();
    let slots = device.zeroed::<u32>("probe slots", probe.rows)?;
    let (counters, flags) = (unused(device)?, unused(device)?);
    record_hash(
        commands,
        "probe",
        probe.rows,
        build.num_words(),
        table.capacity,
        build.rows,
        probe.rows,
        &Bindings {
            build: build.words.raw(),
            probe: probe.words.raw(),
            table: table.table.raw(),
            slots: slots.raw(),
            counters: counters.raw(),
            flags: flags.raw(),
        },
    )?;
    Ok(slots)
}

/// Counts per slot of the rows with a slot (`NONE` rows skipped): `buckets` counters.
pub fn count_slots(
    device: &Device,
    slots: &GpuBuffer<u32>,
    buckets: usize,
) -> Result<GpuBuffer<u32>> {
    let mut commands = Commands::new(device, "count slots");
    let counters = record_count_slots(&mut commands, slots, buckets)?;
    commands.submit()?;
    Ok(counters)
}

/// Records [`count_slots`].
pub(crate) fn record_count_slots(
    commands: &mut Commands<'_>,
    slots: &GpuBuffer<u32>,
    buckets: usize,
) -> Result<GpuBuffer<u32>> {
    let device = commands.device();
    let counters = device.zeroed::<u32>("slot counts", buckets)?;
    let (build, probe, table, flags) = (
        unused(device)?,
        unused(device)?,
        unused(device)?,
        unused(device)?,
    );
    record_hash(
        commands,
        "count_slots",
        slots.len(),
        0,
        1,
        0,
        0,
        &Bindings {
            build: build.raw(),
            probe: probe.raw(),
            table: table.raw(),
            slots: slots.raw(),
            counters: counters.raw(),
            flags: flags.raw(),
        },
    )?;
    Ok(counters)
}

/// Rows bucketed by slot without sorting: records the scatter of each row with a slot into
/// its bucket, `bucket_start[slot] ..` (the exclusive scan of `counts`, the slots'
/// histogram, which the scatter counts down to zero), in no particular order within a
/// bucket. Returns the bucketed rows and a one-word buffer with the largest bucket's size.
pub(crate) fn record_scatter_slots(
    commands: &mut Commands<'_>,
    slots: &GpuBuffer<u32>,
    counts: &GpuBuffer<u32>,
    bucket_start: &GpuBuffer<u32>,
) -> Result<(GpuBuffer<u32>, GpuBuffer<u32>)> {
    let device = commands.device();
    let bucketed = device.zeroed::<u32>("bucketed rows", slots.len())?;
    let largest = device.zeroed::<u32>("largest bucket", 1)?;
    let probe = unused(device)?;
    record_hash(
        commands,
        "scatter_slots",
        slots.len(),
        0,
        1,
        0,
        0,
        &Bindings {
            build: bucket_start.raw(),
            probe: probe.raw(),
            table: largest.raw(),
            slots: slots.raw(),
            counters: counts.raw(),
            flags: bucketed.raw(),
        },
    )?;
    Ok((bucketed, largest))
}

/// A filled table over `keys` and, per slot, the first (lowest) row with that slot's key
/// (`NONE` for empty slots); the flags mark each row that is the first of its key.
fn first_row_per_slot(
    device: &Device,
    what: &str,
    keys: &KeyMatrix,
) -> Result<(HashTable, GpuBuffer<u32>, GpuBuffer<u32>)> {
    let table = hash_insert(device, what, keys)?;
    let counters = filled(device, table.capacity, NONE)?;
    let flags = device.zeroed::<u32>("first row flags", keys.rows)?;
    let (build, probe) = (unused(device)?, unused(device)?);
    let mut commands = Commands::new(device, "first rows");
    for entry in ["first_rows", "is_first"] {
        record_hash(
            &mut commands,
            entry,
            keys.rows,
            0,
            table.capacity,
            keys.rows,
            0,
            &Bindings {
                build: build.raw(),
                probe: probe.raw(),
                table: table.table.raw(),
                slots: table.slots.raw(),
                counters: counters.raw(),
                flags: flags.raw(),
            },
        )?;
    }
    commands.submit()?;
    Ok((table, counters, flags))
}

/// The first row (lowest index) of each distinct key of `keys`, ascending — the order of
/// first appearance — together with the table, whose slots the caller may reuse.
fn first_rows(
    device: &Device,
    what: &str,
    keys: &KeyMatrix,
) -> Result<(GpuBuffer<u32>, HashTable)> {
    let (table, _, flags) = first_row_per_slot(device, what, keys)?;
    Ok((where_true(device, &flags)?, table))
}

/// `@unique` on the GPU: the first row of each distinct key, in order of appearance.
pub fn unique_rows(device: &Device, keys: &KeyMatrix) -> Result<GpuBuffer<u32>> {
    Ok(first_rows(device, "@unique", keys)?.0)
}

/// `@member` on the GPU: for each row of `x`, whether its key occurs among the rows of `y`
/// (as flags: the slot found, or [`NONE`] when absent). The table is built on `y`.
pub fn member_slots(device: &Device, x: &KeyMatrix, y: &KeyMatrix) -> Result<GpuBuffer<u32>> {
    let table = hash_insert(device, "@member", y)?;
    hash_probe(device, &table, y, x)
}

/// `@index_of` on the GPU: for each row of `y`, the first row of `x` with an equal key, or
/// `x.rows` when there is none. The table is built on `x`; the two matrices must have the
/// same word layout.
pub fn index_of_rows(device: &Device, x: &KeyMatrix, y: &KeyMatrix) -> Result<GpuBuffer<u32>> {
    let missing = check_len("@index_of", x.rows)?;
    let (table, first_of_slot, _) = first_row_per_slot(device, "@index_of", x)?;
    let slots = hash_probe(device, &table, x, y)?;
    let out = device.zeroed::<u32>("index_of rows", y.rows)?;
    let mut commands = Commands::new(device, "index_of");
    let values = [check_len("@index_of", y.rows)?, 0, missing, 0, 0, 0, 0, 0];
    record_keys(
        &mut commands,
        "gather_or",
        values,
        first_of_slot.raw(),
        slots.raw(),
        out.raw(),
        y.rows,
    )?;
    commands.submit()?;
    Ok(out)
}

/// `@each(@unique, l)` on the GPU for a flat list of `cells` cells whose keys are `keys`
/// (one row per element) and whose offsets are `offsets` (`cells + 1`, validated by the
/// caller). Returns the positions within its cell of each cell's distinct keys' first
/// elements, cell by cell in order of first appearance, and the `cells + 1` offsets of the
/// result.
pub fn each_unique_rows(
    device: &Device,
    keys: &KeyMatrix,
    offsets: &GpuBuffer<u32>,
    cells: usize,
) -> Result<(GpuBuffer<u32>, GpuBuffer<u32>)> {
    let what = "@each(@unique)";
    let n = keys.rows;
    let n32 = check_len(what, n)?;
    // The composite key: word 0 is the element's cell, then the value's words.
    let value_words = keys.num_words();
    let words = device.zeroed::<u32>("cell keys", (value_words + 1).saturating_mul(n))?;
    let positions = device.zeroed::<u32>("cell positions", n)?;
    let unused_aux = unused(device)?;
    let cells32 = check_len(what, cells)?;
    let mut commands = Commands::new(device, "cell ids");
    record_keys(
        &mut commands,
        "cell_ids",
        [n32, 0, cells32, 0, 0, 0, 0, 0],
        offsets.raw(),
        unused_aux.raw(),
        words.raw(),
        n,
    )?;
    commands.copy_to_offset(&keys.words, words.raw(), (n as u64).saturating_mul(4))?;
    commands.submit()?;
    // Word 0 of the composite matrix (its first n words) is each element's cell.
    let mut commands = Commands::new(device, "cell positions");
    record_keys(
        &mut commands,
        "cell_positions",
        [n32, 0, 0, 0, 0, 0, 0, 0],
        offsets.raw(),
        words.raw(),
        positions.raw(),
        n,
    )?;
    commands.submit()?;
    let mut columns = vec![(0, 1)];
    columns.extend(
        keys.columns
            .iter()
            .map(|&(first, count)| (first + 1, count)),
    );
    let composite = KeyMatrix {
        words,
        rows: n,
        columns,
    };
    let (firsts, _) = first_rows(device, what, &composite)?;
    let result = gather(device, &positions, &firsts)?;
    let result_cells = gather(device, &composite.words, &firsts)?;
    let counts = count_slots(device, &result_cells, cells)?;
    let result_offsets = exclusive_scan(device, &counts)?;
    Ok((result, result_offsets))
}

/// The result of `@group`: `keys[g]` is the first row of group `g`, groups in ascending key
/// order; the rows of group `g` are `rows[offsets[g] .. offsets[g + 1]]`, ascending.
#[derive(Debug)]
pub struct Groups {
    pub keys: GpuBuffer<u32>,
    pub rows: GpuBuffer<u32>,
    /// `groups + 1` offsets into `rows`.
    pub offsets: GpuBuffer<u32>,
}

/// How `@group` assigns rows to groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupStrategy {
    /// Slots in a small key domain where the keys span short ranges, else hashing when the
    /// table fits the device's limits, else sorting.
    Auto,
    /// Slots in a small key domain where the keys span short ranges, hashing otherwise.
    Dense,
    /// Hash the keys (rows per group then by a radix sort on the group rank only).
    Hash,
    /// Sort all key words, then cut at the boundaries.
    Sort,
}

/// `@group` on the GPU; every strategy gives the CPU builtin's exact result.
///
/// Dense: when each key word spans a short range, a row's group is its slot in the product
/// of the ranges (`dense_group`), ranked by counting the occupied slots. Hash: insert every
/// row (its slot is its group), find each group's first row, sort just those first rows by
/// key (few rows when there are few groups) to rank the groups. Either way each row is
/// then placed by a stable radix sort of its group rank — log2(groups) bits, not the key's
/// width. Sort: the full multi-key radix sort of `@order`, then a group starts where a
/// row's key differs from the one before. Sorting serves where hashing cannot: when the
/// table of 2 × rows slots does not fit the device's buffer or binding limits.
///
/// `ranges` is what the key's types say of its words' ranges (see [`KeyRanges`]).
pub fn group(
    device: &Device,
    keys: &KeyMatrix,
    strategy: GroupStrategy,
    ranges: &KeyRanges,
) -> Result<Groups> {
    let mut word_ranges = None;
    if matches!(strategy, GroupStrategy::Auto | GroupStrategy::Dense) {
        match dense_ranks(device, "@group", keys, ranges)? {
            Dense::Ranked(ranked) => return group_dense(device, *ranked),
            Dense::TooLarge(measured) => word_ranges = Some(measured),
            Dense::Skipped => {}
        }
    }
    let hash = match strategy {
        GroupStrategy::Hash | GroupStrategy::Dense => true,
        GroupStrategy::Sort => false,
        GroupStrategy::Auto => hash_table_fits(device, keys.rows),
    };
    if hash {
        let ranked = group_ranks(device, "@group", keys, word_ranges.as_deref())?;
        bucket_by_rank(device, "@group", ranked)
    } else {
        group_by_sort(device, keys)
    }
}

/// Most rows of a group that [`group_dense`] orders in place after scattering the rows
/// into their buckets (one invocation per group, an insertion sort); with larger groups a
/// stable radix sort of the ranks places the rows.
const SMALL_BUCKET: usize = 32;

/// The groups of rows ranked by slot, each group's rows ascending: scattered into their
/// buckets and ordered per bucket when every group is small, else by a stable radix sort of
/// the ranks. The offsets come from the slot counts.
fn group_dense(device: &Device, ranked: DenseRanks) -> Result<Groups> {
    let rows = if ranked.largest <= SMALL_BUCKET {
        ranked.scatter_sorted(device)?
    } else {
        let ranks = ranked.ranks(device)?;
        let largest = check_len("@group", ranked.groups.saturating_sub(1))?;
        radix_sort_u32_below(device, &ranks, Some(largest))?.permutation
    };
    Ok(Groups {
        keys: ranked.keys,
        rows,
        offsets: ranked.offsets,
    })
}

/// Each row's group as its rank in key order: `@group`'s group numbers, before the rows are
/// bucketed. `keys[g]` is the first row of group `g`.
pub struct GroupRanks {
    pub keys: GpuBuffer<u32>,
    /// One rank per row of the key matrix, below `groups`.
    pub ranks: GpuBuffer<u32>,
    pub groups: usize,
}

/// Ranks the rows of `keys` by group by hashing: insert every row (its slot is its group),
/// find each group's first row, and sort just those first rows by key (few rows when there
/// are few groups). Needs [`hash_table_fits`]. `word_ranges`: each key word's `(min, max)`
/// when the caller read them back already (the sort then reads nothing back).
pub fn group_ranks(
    device: &Device,
    what: &str,
    keys: &KeyMatrix,
    word_ranges: Option<&[(u32, u32)]>,
) -> Result<GroupRanks> {
    let (firsts, table) = first_rows(device, what, keys)?;
    let groups = firsts.len();
    // Rank the groups: sort their first rows by key.
    let distinct = gather_rows(device, keys, &firsts)?;
    // The distinct keys hold every key's words: the ranges over all rows are theirs.
    let by_key = match word_ranges {
        Some(ranges) => order_permutation_in_ranges(device, &distinct, &[true], ranges)?,
        None => order_permutation(device, &distinct, &[true])?,
    };
    let group_keys = gather(device, &firsts, &by_key)?;
    // rank_of_slot[slot of group g's first row] = g; each row's rank through its slot.
    let key_slots = gather(device, &table.slots, &group_keys)?;
    let rank_of_slot = device.zeroed::<u32>("rank of slot", table.capacity)?;
    let aux_dummy = unused(device)?;
    let mut commands = Commands::new(device, "group ranks");
    let values = [check_len(what, groups)?, 0, 0, 0, 0, 0, 0, 0];
    record_keys(
        &mut commands,
        "scatter_index",
        values,
        aux_dummy.raw(),
        key_slots.raw(),
        rank_of_slot.raw(),
        groups,
    )?;
    commands.submit()?;
    let ranks = gather(device, &rank_of_slot, &table.slots)?;
    Ok(GroupRanks {
        keys: group_keys,
        ranks,
        groups,
    })
}

/// The rows of each group, ascending, from the rows' group ranks: a stable radix sort on the
/// rank only (log2(groups) bits, not the key's width), with nothing read back.
pub fn bucket_by_rank(device: &Device, what: &str, ranked: GroupRanks) -> Result<Groups> {
    let largest = check_len(what, ranked.groups.saturating_sub(1))?;
    let sorted = radix_sort_u32_below(device, &ranked.ranks, Some(largest))?;
    let offsets = sorted_offsets(device, &sorted.keys, ranked.groups)?;
    Ok(Groups {
        keys: ranked.keys,
        rows: sorted.permutation,
        offsets,
    })
}

pub(crate) fn group_by_sort(device: &Device, keys: &KeyMatrix) -> Result<Groups> {
    let n = keys.rows;
    let permutation = order_permutation(device, keys, &[true])?;
    let flags = device.zeroed::<u32>("group boundaries", n)?;
    let mut commands = Commands::new(device, "group boundaries");
    let values = [
        check_len("@group", n)?,
        0,
        check_len("@group", keys.num_words())?,
        0,
        0,
        0,
        0,
        0,
    ];
    record_keys(
        &mut commands,
        "boundaries",
        values,
        keys.words.raw(),
        permutation.raw(),
        flags.raw(),
        n,
    )?;
    commands.submit()?;
    let starts = where_true(device, &flags)?;
    let groups = starts.len();
    let group_keys = gather(device, &permutation, &starts)?;
    // The starts, then the row count (copied in order with the starts: a host write
    // would land before held work, see `Device::hold`).
    let offsets = device.zeroed::<u32>("group offsets", groups + 1)?;
    let total = device.upload("group row count", &[check_len("@group", n)?])?;
    let mut commands = Commands::new(device, "group offsets");
    commands.copy(&starts, offsets.raw())?;
    commands.copy_bytes(total.raw(), 0, offsets.raw(), (groups * 4) as u64, 4)?;
    commands.submit()?;
    Ok(Groups {
        keys: group_keys,
        rows: permutation,
        offsets,
    })
}
