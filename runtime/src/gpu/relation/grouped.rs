//! `@tuple_diff` and `@tuple_merge` (and the sortedness checks they and `@join_unique`
//! make) for relations whose key matrix passes one storage binding.
//!
//! A relation's columns each fit a binding (a column is one buffer), but its key matrix is
//! as large as all of them: at 2 GiB per binding (an H100's), a relation of two i64 columns
//! passes it at 1.3·10^8 rows, which CSPA's ValueAlias reaches, and so may the merge of the
//! distinct tuples of a join's batches. Such relations are keyed by column groups instead,
//! as `@tuple_unique` sorts them (`key_column_groups`): a key matrix per group, each within
//! a binding, one dispatch per group, and no pass ever binds all the keys at once.
//! - A search of each row of `x` in `y` narrows, group by group, the range of rows of `y`
//!   equal to it so far (two binary searches in the range per group, `group_search`); the
//!   range left is empty when the row is not in `y`, and starts where the row would go.
//! - `@tuple_diff(a, b)`: the rows of `a` whose range in `b` is empty.
//! - `@tuple_merge(a, b)` of disjoint `a` and `b` (rows of `b` in `a` dropped first, by the
//!   same search, unless `b` came from `@tuple_diff(_, a)`): every row goes to its index
//!   plus the number of rows of the other relation before it (`merge_scatter`), which gives
//!   each output row's source; the columns, and each group's merged key matrix (kept for
//!   the next iteration, as the one-binding merge keeps its), are gathered through it.
//! - Sortedness: per row, whether it is before, equal to or after the row before on the
//!   groups so far (`check_sorted_group`).
//!
//! The one-binding kernels in `relation.rs` remain the path for every relation that fits.

use std::ops::Range;
use std::rc::Rc;

use super::super::buffer::GpuBuffer;
use super::super::compact::where_true;
use super::super::device::Device;
use super::super::error::Result;
use super::super::keys::{unused, KeyMatrix};
use super::super::pipeline::Commands;
use super::{
    cache_insert, key_column_groups, record, record_gather_merged, DeviceRelation, Dispatch, Out,
    Params, Status, KEYS,
};

/// The column groups `a` and `b` are keyed by in an operation whose output may have
/// `a.rows + b.rows` rows (a merge's), each group's keys within `key_bytes`: the same groups
/// for both, one (all columns) when all keys fit.
pub(super) fn shared_groups(
    a: &DeviceRelation,
    b: &DeviceRelation,
    key_bytes: u64,
) -> Vec<Range<usize>> {
    key_column_groups(a.rows + b.rows, a.arity(), key_bytes)
}

impl DeviceRelation {
    /// The key matrix of the columns `group` alone, encoded once while they live (as
    /// `keys`, whose cache it shares: a group of the first columns is also the key matrix
    /// of a join on them).
    fn group_keys(
        &self,
        device: &Device,
        what: &str,
        group: Range<usize>,
    ) -> Result<Rc<KeyMatrix>> {
        DeviceRelation {
            columns: self.columns[group].to_vec(),
            rows: self.rows,
        }
        .keys(device, what)
    }

    /// The key matrices of every group.
    fn all_group_keys(
        &self,
        device: &Device,
        what: &str,
        groups: &[Range<usize>],
    ) -> Result<Vec<Rc<KeyMatrix>>> {
        groups
            .iter()
            .map(|g| self.group_keys(device, what, g.clone()))
            .collect()
    }
}

/// Records into `status`'s slot `slot` the first row of `relation` not after (strictly: not
/// before) the row before it, column group by column group; nothing for a relation known
/// sorted or of fewer than two rows.
pub(super) fn check_sorted_in_groups(
    status: &Status,
    device: &Device,
    what: &str,
    relation: &DeviceRelation,
    groups: &[Range<usize>],
    slot: u32,
    strictly: bool,
) -> Result<()> {
    let rows = relation.rows;
    if rows < 2 || relation.known_sorted(strictly) {
        return Ok(());
    }
    let keys = relation.all_group_keys(device, what, groups)?;
    let state = device.scratch::<u32>("sorted state", rows)?;
    let flag = status.words(device)?;
    let mut commands = Commands::new(device, "check_sorted");
    let last = keys.len() - 1;
    for (g, k) in keys.iter().enumerate() {
        let (b, idx) = (unused(device)?, unused(device)?);
        let mode = u32::from(strictly) | (u32::from(g == 0) << 1) | (u32::from(g == last) << 2);
        record(
            &mut commands,
            Dispatch {
                entry: "check_sorted_group",
                params: Params {
                    rows_a: rows,
                    words: k.num_words(),
                    mode,
                    slot,
                    ..Params::new(0)
                }
                .words()?,
                a: k.words.raw(),
                b: b.raw(),
                idx: idx.raw(),
                out: state.raw(),
                flag: flag.raw(),
                items: rows,
            },
        )?;
    }
    commands.submit()
}

/// Per row `i` of `x`, the rows `[ranges[2i], ranges[2i+1])` of `y` equal to it (empty: not
/// in `y`; the range then starts at the number of rows of `y` before it), and when `missing`
/// is asked for, a flag per row of `x` that is 1 when it is not in `y`. `x` and `y` are
/// sorted, non-empty, and keyed by the same `groups`.
fn search_in_groups(
    device: &Device,
    what: &str,
    x: &DeviceRelation,
    y: &DeviceRelation,
    groups: &[Range<usize>],
    missing: bool,
) -> Result<(GpuBuffer<u32>, Option<GpuBuffer<u32>>)> {
    let kx = x.all_group_keys(device, what, groups)?;
    let ky = y.all_group_keys(device, what, groups)?;
    let ranges = device.scratch::<u32>("group search ranges", 2 * x.rows)?;
    let flags = if missing {
        Some(device.scratch::<u32>("not in b", x.rows)?)
    } else {
        None
    };
    let mut commands = Commands::new(device, what);
    let last = groups.len() - 1;
    for (g, (kx, ky)) in kx.iter().zip(&ky).enumerate() {
        let (idx, no_flags) = (unused(device)?, unused(device)?);
        let mode = u32::from(g == 0) | (u32::from(g == last && missing) << 1);
        record(
            &mut commands,
            Dispatch {
                entry: "group_search",
                params: Params {
                    rows_a: x.rows,
                    rows_b: y.rows,
                    words: kx.num_words(),
                    mode,
                    ..Params::new(x.rows)
                }
                .words()?,
                a: kx.words.raw(),
                b: ky.words.raw(),
                idx: idx.raw(),
                out: ranges.raw(),
                flag: flags.as_ref().unwrap_or(&no_flags).raw(),
                items: x.rows,
            },
        )?;
    }
    commands.submit()?;
    Ok((ranges, flags))
}

/// Checks that `a` and `b` (arguments 1 and 2) are sorted and duplicate-free.
fn checked_pair_in_groups(
    device: &Device,
    what: &str,
    a: &DeviceRelation,
    b: &DeviceRelation,
    groups: &[Range<usize>],
) -> Out<()> {
    let status = Status::new(2);
    check_sorted_in_groups(&status, device, what, a, groups, 0, true)?;
    check_sorted_in_groups(&status, device, what, b, groups, 1, true)?;
    status.sorted_or_error(device, &[(0, 0, true), (1, 1, true)])
}

/// `@tuple_diff(a, b)` keyed by column groups (see the module).
pub(super) fn tuple_diff(
    device: &Device,
    a: &DeviceRelation,
    b: &DeviceRelation,
    groups: &[Range<usize>],
) -> Out<DeviceRelation> {
    checked_pair_in_groups(device, "@tuple_diff", a, b, groups)?;
    if a.rows == 0 {
        return Ok(DeviceRelation::empty(device, a.arity())?);
    }
    if b.rows == 0 {
        return Ok(a.clone().sorted().without(b));
    }
    let (_ranges, missing) = search_in_groups(device, "@tuple_diff", a, b, groups, true)?;
    let Some(missing) = missing else {
        unreachable!("search_in_groups returns the flags it was asked for")
    };
    let kept = where_true(device, &missing)?;
    if kept.len() == a.rows {
        return Ok(a.clone().sorted().without(b));
    }
    Ok(a.gather(device, &kept, kept.len())?.sorted().without(b))
}

/// `@tuple_merge(a, b)` keyed by column groups (see the module).
pub(super) fn tuple_merge(
    device: &Device,
    a: &DeviceRelation,
    b: &DeviceRelation,
    groups: &[Range<usize>],
) -> Out<DeviceRelation> {
    let what = "@tuple_merge";
    checked_pair_in_groups(device, what, a, b, groups)?;
    if b.rows == 0 {
        return Ok(a.clone().sorted());
    }
    if a.rows == 0 {
        return Ok(b.clone().sorted());
    }
    let fresh = if b.disjoint_from(a) {
        b.clone()
    } else {
        let (_ranges, missing) = search_in_groups(device, what, b, a, groups, true)?;
        let Some(missing) = missing else {
            unreachable!("search_in_groups returns the flags it was asked for")
        };
        let kept = where_true(device, &missing)?;
        if kept.is_empty() {
            return Ok(a.clone().sorted());
        }
        b.gather(device, &kept, kept.len())?
    };
    let (na, nb) = (a.rows, fresh.rows);
    let total = na + nb;
    // Each row's rank in the other relation: how many of its rows come before it.
    let (rank_a, _) = search_in_groups(device, what, a, &fresh, groups, false)?;
    let (rank_b, _) = search_in_groups(device, what, &fresh, a, groups, false)?;
    let ka = a.all_group_keys(device, what, groups)?;
    let kb = fresh.all_group_keys(device, what, groups)?;
    let sources = device.scratch::<u32>("merge sources", total)?;
    let mut commands = Commands::new(device, what);
    for (ranks, rows, first_source) in [(&rank_a, na, 0), (&rank_b, nb, na)] {
        let (a_unused, b_unused, out_unused) = (unused(device)?, unused(device)?, unused(device)?);
        record(
            &mut commands,
            Dispatch {
                entry: "merge_scatter",
                params: Params {
                    mode: super::super::keys::check_len(what, first_source)?,
                    ..Params::new(rows)
                }
                .words()?,
                a: a_unused.raw(),
                b: b_unused.raw(),
                idx: ranks.raw(),
                out: out_unused.raw(),
                flag: sources.raw(),
                items: rows,
            },
        )?;
    }
    let columns = record_gather_merged(device, &mut commands, a, &fresh, &sources)?;
    let mut merged_keys = Vec::with_capacity(groups.len());
    for (key_a, key_b) in ka.iter().zip(&kb) {
        let words = key_a.num_words();
        let out = device.scratch::<u32>("merged keys", words * total)?;
        let flag = unused(device)?;
        record(
            &mut commands,
            Dispatch {
                entry: "gather_merged_keys",
                params: Params {
                    rows_a: na,
                    rows_b: nb,
                    words,
                    ..Params::new(total)
                }
                .words()?,
                a: key_a.words.raw(),
                b: key_b.words.raw(),
                idx: sources.raw(),
                out: out.raw(),
                flag: flag.raw(),
                items: total,
            },
        )?;
        merged_keys.push(KeyMatrix {
            words: out,
            rows: total,
            columns: key_a.columns.clone(),
        });
    }
    commands.submit()?;
    for (group, keys) in groups.iter().zip(merged_keys) {
        cache_insert(&KEYS, &columns[group.clone()], total, Rc::new(keys));
    }
    Ok(DeviceRelation {
        columns,
        rows: total,
    }
    .sorted())
}
