//! `@order` on the GPU: a stable multi-key LSD radix sort returning the sorting permutation.
//!
//! Keys are a [`KeyMatrix`] (order-preserving u32 words, see `keys.rs`). The words are sorted
//! from the least significant (the last word of the last column) to the most significant,
//! each pass a stable radix sort ([`super::sort::radix_sort_u32`]) of that word gathered through the
//! permutation so far, so the final permutation orders rows by all words, ties in input
//! order — exactly the CPU's stable sort. The minimum and maximum of every word are read
//! back first, in one read (`shaders/min_max.wgsl`): a word whose values are all equal is
//! skipped, and the sort key is `word - min` (ascending) or `max - word` (descending), so
//! the radix sort passes only over the bits of `max - min`, without reading anything else
//! back.
//!
//! Up to [`MERGE_SORT_ROWS`] rows (a query's result after filters and aggregation) sort
//! without the radix sort (`shaders/small_sort.wgsl`): each workgroup sorts a chunk of
//! [`small_sort_capacity`] rows in workgroup memory, and merge passes (one dispatch each,
//! log2 of the chunks) merge the sorted chunks pairwise; nothing is read back, where the
//! radix sort takes a read-back and some ten dispatches per key word.

use super::buffer::GpuBuffer;
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{check_len, gather, iota, params, record_keys, word_min_max, KeyMatrix};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::sort::radix_sort_u32_below;
use super::template::{rendered, workgroup_size_text};

/// `shaders/small_sort.wgsl`: the sort of few rows in one workgroup.
pub const SMALL_SORT_WGSL: &str = include_str!("../../../shaders/small_sort.wgsl");

/// Rows one workgroup sorts at most (when workgroup memory allows).
const SMALL_SORT_ROWS: usize = 4096;

/// Rows sorted by chunks and merges at most: up to 6 merge passes of 4096-row chunks, each
/// a binary search per row; larger inputs take the radix sort, whose passes read each key
/// word in order.
pub const MERGE_SORT_ROWS: usize = 1 << 18;

/// Workgroup-memory bytes per row of the one-workgroup sort: its index and leading word.
const SMALL_SORT_ROW_BYTES: u32 = 8;

/// The most rows the one-workgroup sort takes on `device`: `SMALL_SORT_ROWS`, or the
/// largest power of two whose indexes and leading words fit its workgroup memory.
pub fn small_sort_capacity(device: &Device) -> usize {
    let fits = (device.limits().max_compute_workgroup_storage_size / SMALL_SORT_ROW_BYTES) as usize;
    if fits < 2 {
        return 0;
    }
    let power_of_two = 1usize << (usize::BITS - 1 - fits.leading_zeros());
    power_of_two.min(SMALL_SORT_ROWS)
}

/// The one-workgroup sort module for `capacity` rows (rendered once).
pub fn small_sort_source(capacity: usize) -> Result<&'static str> {
    rendered(
        "small_sort.wgsl",
        SMALL_SORT_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("CAPACITY", &capacity.to_string()),
        ],
    )
}

/// The permutation that sorts the rows of `keys` stably, column `c` ascending when
/// `ascending[c]` (one flag may stand for every column).
pub fn order_permutation(
    device: &Device,
    keys: &KeyMatrix,
    ascending: &[bool],
) -> Result<GpuBuffer<u32>> {
    order_permutation_after(device, keys, ascending, None)
}

/// [`order_permutation`] continuing a sort of less significant keys: the permutation that
/// orders the rows by `keys` first, rows with equal keys in the order `less_significant`
/// puts them (None: input order). Keys too large for one key matrix are sorted this way,
/// one matrix of columns at a time from the last (`@tuple_unique` of a large relation).
pub fn order_permutation_after(
    device: &Device,
    keys: &KeyMatrix,
    ascending: &[bool],
    less_significant: Option<GpuBuffer<u32>>,
) -> Result<GpuBuffer<u32>> {
    check_directions(keys, ascending)?;
    // The merge sort of few rows reads no range: nothing to read back.
    if merge_sorts(device, keys.rows, less_significant.is_some()) {
        return sort_in_ranges(device, keys, ascending, None, &[]);
    }
    // Every word's range at once: one read back for the whole sort.
    let ranges = word_min_max(device, keys)?;
    sort_in_ranges(device, keys, ascending, less_significant, &ranges)
}

/// [`order_permutation`] of keys whose words' `(min, max)` the caller read back already
/// (ranges that hold every word suffice: the minimum and maximum over more rows than
/// `keys`' own), so the sort reads nothing back.
pub fn order_permutation_in_ranges(
    device: &Device,
    keys: &KeyMatrix,
    ascending: &[bool],
    ranges: &[(u32, u32)],
) -> Result<GpuBuffer<u32>> {
    if ranges.len() != keys.num_words() {
        return Err(GpuError::Unsupported {
            what: "@order".to_string(),
            message: format!(
                "{} word ranges for {} key words",
                ranges.len(),
                keys.num_words()
            ),
        });
    }
    check_directions(keys, ascending)?;
    sort_in_ranges(device, keys, ascending, None, ranges)
}

/// Whether [`sort_in_ranges`] sorts `rows` rows (more than one) by chunks and merges,
/// which need no word ranges: few rows, not continuing an earlier sort.
fn merge_sorts(device: &Device, rows: usize, continues: bool) -> bool {
    rows > 1 && !continues && rows <= MERGE_SORT_ROWS && small_sort_capacity(device) > 0
}

fn check_directions(keys: &KeyMatrix, ascending: &[bool]) -> Result<()> {
    let columns = keys.columns.len();
    if ascending.len() != columns && ascending.len() != 1 {
        return Err(GpuError::Unsupported {
            what: "@order".to_string(),
            message: format!(
                "{} direction(s) for {columns} key column(s)",
                ascending.len()
            ),
        });
    }
    Ok(())
}

fn sort_in_ranges(
    device: &Device,
    keys: &KeyMatrix,
    ascending: &[bool],
    less_significant: Option<GpuBuffer<u32>>,
    ranges: &[(u32, u32)],
) -> Result<GpuBuffer<u32>> {
    let rows = keys.rows;
    let rows32 = check_len("@order", rows)?;
    let direction = |c: usize| {
        ascending
            .get(c)
            .or(ascending.first())
            .copied()
            .unwrap_or(true)
    };
    if rows <= 1 {
        // Nothing to move: the order so far, or the input order.
        return match less_significant {
            Some(p) => Ok(p),
            None => iota(device, rows),
        };
    }
    if merge_sorts(device, rows, less_significant.is_some()) {
        return merge_sort(device, keys, small_sort_capacity(device), direction);
    }
    let mut permutation = less_significant;
    for (c, &(first, count)) in keys.columns.iter().enumerate().rev() {
        let up = direction(c);
        for word in (first..first + count).rev() {
            let (min, max) = ranges[word];
            if min == max {
                // Every row has the same word: this pass would not move anything.
                continue;
            }
            let sort_keys = device.scratch::<u32>("order keys", rows)?;
            let mut commands = Commands::new(device, "order keys");
            let identity = permutation.is_none();
            let dummy;
            let through = match &permutation {
                Some(p) => p.raw(),
                None => {
                    dummy = super::keys::unused(device)?;
                    dummy.raw()
                }
            };
            let values = [
                rows32,
                u32::from(!up),
                check_len("@order", word * rows)?,
                min,
                max,
                u32::from(identity),
                0,
                0,
            ];
            record_keys(
                &mut commands,
                "order_keys",
                values,
                keys.words.raw(),
                through,
                sort_keys.raw(),
                rows,
            )?;
            commands.submit()?;
            // The sort keys lie in 0 ..= max - min: no read back of their bits.
            let sorted = radix_sort_u32_below(device, &sort_keys, Some(max - min))?;
            permutation = Some(match permutation {
                None => sorted.permutation,
                Some(p) => gather(device, &p, &sorted.permutation)?,
            });
        }
    }
    match permutation {
        Some(p) => Ok(p),
        // No word differs anywhere: the stable order is the input order.
        None => iota(device, rows),
    }
}

/// The stable sorting permutation: chunks of `capacity` rows sorted in workgroup memory,
/// then merged pairwise, one dispatch per pass (see `shaders/small_sort.wgsl`); column `c`
/// ascending when `ascending(c)`.
fn merge_sort(
    device: &Device,
    keys: &KeyMatrix,
    capacity: usize,
    ascending: impl Fn(usize) -> bool,
) -> Result<GpuBuffer<u32>> {
    let rows = keys.rows;
    let mut described = Vec::with_capacity(3 * keys.columns.len());
    for (c, &(first, count)) in keys.columns.iter().enumerate() {
        described.extend([
            check_len("@order", first)?,
            check_len("@order", count)?,
            u32::from(!ascending(c)),
        ]);
    }
    let columns = device.upload("order columns", &described)?;
    let source = small_sort_source(capacity)?;
    let pipeline = |entry: &str| {
        device.pipeline(&KernelSpec {
            label: &format!("small_sort.{entry}"),
            source,
            entry_point: entry,
            constants: &[],
            bindings: &[
                BindingKind::Uniform,
                BindingKind::StorageRead,
                BindingKind::StorageRead,
                BindingKind::StorageReadWrite,
                BindingKind::StorageRead,
            ],
        })
    };
    let sort_params = |width: usize| -> Result<crate::gpu::Uniform> {
        params(
            device,
            "small sort params",
            [
                check_len("@order", rows)?,
                check_len("@order", keys.columns.len())?,
                check_len("@order", width)?,
                0,
                0,
                0,
                0,
                0,
            ],
        )
    };
    // Every kernel writes every row: no clears. Pass p writes `sorted[p % 2]`.
    let sorted = [
        device.scratch::<u32>("order permutation", rows)?,
        device.scratch::<u32>("order permutation", rows)?,
    ];
    let unused = super::keys::unused(device)?;
    let mut commands = Commands::new(device, "@order merge sort");
    let chunks = rows.div_ceil(capacity);
    let chunk_params = sort_params(capacity)?;
    commands.dispatch(
        &*pipeline("sort_chunks")?,
        &[
            &chunk_params,
            keys.words.raw(),
            columns.raw(),
            sorted[0].raw(),
            unused.raw(),
        ],
        chunks as u64,
    )?;
    let (mut width, mut pass) = (capacity, 0usize);
    while width < rows {
        let (input, output) = (&sorted[pass % 2], &sorted[(pass + 1) % 2]);
        let merge_params = sort_params(width)?;
        commands.dispatch(
            &*pipeline("merge_runs")?,
            &[
                &merge_params,
                keys.words.raw(),
                columns.raw(),
                output.raw(),
                input.raw(),
            ],
            super::compact::element_workgroups(rows),
        )?;
        width = width.saturating_mul(2);
        pass += 1;
    }
    commands.submit()?;
    let [even, odd] = sorted;
    Ok(if pass % 2 == 0 { even } else { odd })
}
