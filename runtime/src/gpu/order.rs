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

use super::buffer::GpuBuffer;
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{check_len, gather, iota, record_keys, word_min_max, KeyMatrix};
use super::pipeline::Commands;
use super::sort::radix_sort_u32_below;

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
    let mut permutation = less_significant;
    for (c, &(first, count)) in keys.columns.iter().enumerate().rev() {
        let up = ascending
            .get(c)
            .or(ascending.first())
            .copied()
            .unwrap_or(true);
        for word in (first..first + count).rev() {
            let (min, max) = ranges[word];
            if min == max {
                // Every row has the same word: this pass would not move anything.
                continue;
            }
            let sort_keys = device.zeroed::<u32>("order keys", rows)?;
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
