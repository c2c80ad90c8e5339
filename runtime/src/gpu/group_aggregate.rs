//! `@group_aggregate` on the GPU (`shaders/group_aggregate.wgsl`): per-group sums, averages
//! and counts straight from each row's group, without building the groups' row lists.
//!
//! Rows get their group's rank (key order) from their slot in a small key domain where the
//! keys span short ranges (`dense_group::dense_ranks`: no hash table, no sort), by hashing
//! otherwise (`hash::group_ranks`), or by sorting where a hash table does not fit. With few
//! groups (at most [`MAX_DIRECT_GROUPS`]) one pass reads the ranks and the value columns
//! once: each workgroup reduces a fixed chunk of rows into per-(slot, group) partials,
//! unrolled in registers, and a second tiny pass adds the partials in workgroup order. With
//! many groups the rows are bucketed by group, and one invocation adds up each group of at
//! most [`SMALL_GROUP`] rows, in ascending row order, while one workgroup reduces each
//! larger group. Either way every sum adds its terms in an order fixed by the data alone,
//! so a run gives the same bits every time; no float atomics.

use std::fmt::Write as _;
use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::dense_group::{dense_ranks, Dense, DenseRanks, KeyRanges};
use super::device::Device;
use super::error::{GpuError, Result};
use super::hash::{bucket_by_rank, group_by_sort, group_ranks, hash_table_fits, Groups};
use super::keys::{check_len, params, unused, KeyMatrix};
use super::pipeline::{BindingKind, Commands, KernelSpec, Pipeline};
use super::sort::radix_sort_u32_below;
use super::template::{render, WORKGROUP_SIZE};
use crate::args::group::Reduction;
use crate::types::Type;

/// `shaders/group_aggregate.wgsl`.
pub const GROUP_AGGREGATE_WGSL: &str = include_str!("../../../shaders/group_aggregate.wgsl");

/// Most groups the one-pass kernel takes: it keeps an accumulator per (slot, group) in each
/// invocation's registers.
pub const MAX_DIRECT_GROUPS: usize = 16;
/// Most rows of a group that one invocation adds up on its own (many groups); larger
/// groups get a workgroup each. Also the most rows of a bucket `segment_rows` orders itself.
pub const SMALL_GROUP: usize = 32;
/// Accumulators (slots × groups) per invocation of the one-pass kernel.
const DIRECT_ACCUMULATORS: usize = 64;
/// Results (and distinct value columns) per kernel: each binds a storage buffer.
const RESULTS_PER_BATCH: usize = 8;
/// Rows per invocation the one-pass kernel aims at before it adds workgroups.
const ROWS_PER_INVOCATION: usize = 32;
/// Most workgroups of the one-pass kernel (their partials are added by one workgroup per
/// accumulator).
const MAX_PARTIAL_WORKGROUPS: usize = 1024;
/// Bindings before the value columns: params, ranks, offsets, partials and totals.
const FIXED_BINDINGS: usize = 7;

/// A value column on the device: exactly its elements, as the kernels lay them out.
pub struct ValueColumn {
    pub ty: Type,
    pub buffer: Arc<GpuBuffer<u32>>,
}

/// One result: its reduction and, unless `len`, the index of its column.
#[derive(Clone, Copy, Debug)]
pub struct AggregateSpec {
    pub reduction: Reduction,
    pub column: Option<usize>,
}

/// The groups' first rows (key order) and one buffer per result (two words per group: i64
/// or f64 as [`Reduction::result_type`] says).
pub struct Aggregated {
    pub keys: GpuBuffer<u32>,
    pub results: Vec<GpuBuffer<u32>>,
    pub groups: usize,
    pub ranking: Ranking,
}

/// How the rows reach their groups.
enum Layout {
    /// Each row's group rank: `index[row]`, or `rank_of[index[row]]` (a row's slot in a small
    /// key domain, then the slot's rank).
    Ranked {
        index: GpuBuffer<u32>,
        rank_of: Option<GpuBuffer<u32>>,
    },
    /// The groups' rows, bucketed, with `groups + 1` offsets.
    Bucketed {
        rows: GpuBuffer<u32>,
        offsets: GpuBuffer<u32>,
        /// Whether each bucket's rows ascend (else `segment_rows` orders them: every
        /// group then has at most [`SMALL_GROUP`] rows).
        sorted: bool,
        /// Whether some group has more than [`SMALL_GROUP`] rows (`None`: not known).
        large_groups: Option<bool>,
    },
}

/// Which way [`group_aggregate`] went (tests check both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatePath {
    /// One pass over the rows, per-workgroup partials.
    Direct,
    /// Rows bucketed by group; small groups one per invocation, large ones per workgroup.
    Bucketed,
}

/// How [`group_aggregate`] ranked the groups (tests check each is taken).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    /// Slots in a small key domain (`dense_group`).
    Dense,
    /// A hash table.
    Hash,
    /// A sort of the keys (the hash table did not fit).
    Sort,
}

/// The groups' first rows, their count and how their rows are laid out.
fn rank_groups(
    device: &Device,
    keys: &KeyMatrix,
    ranges: &KeyRanges,
) -> Result<(GpuBuffer<u32>, usize, Layout, Ranking)> {
    let word_ranges = match dense_ranks(device, "@group", keys, ranges)? {
        Dense::Ranked(dense) => return rank_dense(device, *dense),
        Dense::TooLarge(measured) => Some(measured),
        Dense::Skipped => None,
    };
    let bucketed = |groups: Groups| {
        let count = groups.keys.len();
        let layout = Layout::Bucketed {
            rows: groups.rows,
            offsets: groups.offsets,
            sorted: true,
            large_groups: None,
        };
        (groups.keys, count, layout)
    };
    if hash_table_fits(device, keys.rows) {
        let ranked = group_ranks(device, "@group", keys, word_ranges.as_deref())?;
        if ranked.groups <= MAX_DIRECT_GROUPS {
            let layout = Layout::Ranked {
                index: ranked.ranks,
                rank_of: None,
            };
            return Ok((ranked.keys, ranked.groups, layout, Ranking::Hash));
        }
        let (keys, groups, layout) = bucketed(bucket_by_rank(device, "@group", ranked)?);
        Ok((keys, groups, layout, Ranking::Hash))
    } else {
        let (keys, groups, layout) = bucketed(group_by_sort(device, keys)?);
        Ok((keys, groups, layout, Ranking::Sort))
    }
}

/// [`rank_groups`] by slot: few groups read their rank through the slot; many are bucketed.
fn rank_dense(
    device: &Device,
    dense: DenseRanks,
) -> Result<(GpuBuffer<u32>, usize, Layout, Ranking)> {
    let groups = dense.groups;
    if groups <= MAX_DIRECT_GROUPS {
        let layout = Layout::Ranked {
            index: dense.slots,
            rank_of: Some(dense.rank_of_slot),
        };
        return Ok((dense.keys, groups, layout, Ranking::Dense));
    }
    let large_groups = dense.largest > SMALL_GROUP;
    // Small groups only: scatter the rows into their buckets and let each group's
    // invocation order its few rows. Otherwise a stable sort of the ranks.
    let (rows, sorted) = if large_groups {
        let ranks = dense.ranks(device)?;
        let largest = check_len("@group", groups.saturating_sub(1))?;
        let by_rank = radix_sort_u32_below(device, &ranks, Some(largest))?;
        (by_rank.permutation, true)
    } else {
        (dense.scatter(device)?, false)
    };
    let layout = Layout::Bucketed {
        rows,
        offsets: dense.offsets,
        sorted,
        large_groups: Some(large_groups),
    };
    Ok((dense.keys, groups, layout, Ranking::Dense))
}

/// Runs `@group_aggregate` over the rows of `keys` (checked: every column as long as the
/// key). `ranges`: what the key's types say of its words' ranges (a small key domain is
/// looked for first, see [`Ranking::Dense`]).
pub fn group_aggregate(
    device: &Device,
    keys: &KeyMatrix,
    ranges: &KeyRanges,
    specs: &[AggregateSpec],
    columns: &[ValueColumn],
) -> Result<(Aggregated, AggregatePath)> {
    let rows = keys.rows;
    let (group_keys, groups, layout, ranking) = rank_groups(device, keys, ranges)?;
    let path = match layout {
        Layout::Ranked { .. } => AggregatePath::Direct,
        Layout::Bucketed { .. } => AggregatePath::Bucketed,
    };
    let mut results = Vec::with_capacity(specs.len());
    for _ in specs {
        results.push(device.zeroed::<u32>("group_aggregate result", 2 * groups.max(1))?);
    }
    if groups > 0 {
        // The one-pass kernel's accumulators are unrolled per group; bucketed groups need one.
        let unrolled_groups = match layout {
            Layout::Ranked { .. } => groups,
            Layout::Bucketed { .. } => 1,
        };
        // Value slots per kernel: the count takes one accumulator per group too.
        let value_slots = (DIRECT_ACCUMULATORS / unrolled_groups)
            .saturating_sub(1)
            .clamp(1, RESULTS_PER_BATCH);
        let mut start = 0;
        while start < specs.len() {
            let batch = Batch::take(specs, columns, start, value_slots);
            let end = start + batch.specs.len();
            let shape = Shape {
                rows,
                groups,
                unrolled_groups,
            };
            run_batch(device, &batch, &layout, shape, &results[start..end])?;
            start = end;
        }
    }
    Ok((
        Aggregated {
            keys: group_keys,
            results,
            groups,
            ranking,
        },
        path,
    ))
}

/// Sizes of one call.
#[derive(Clone, Copy)]
struct Shape {
    rows: usize,
    groups: usize,
    /// Groups the `partials` entry unrolls (1 when the rows are bucketed).
    unrolled_groups: usize,
}

/// Which accumulator a value column adds into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Accumulator {
    Float,
    Int,
}

/// The WGSL element of a value column's binding and how one element becomes its
/// accumulator's type.
fn element(ty: &Type) -> Result<(&'static str, Accumulator)> {
    Ok(match ty {
        Type::F64 => ("f64", Accumulator::Float),
        Type::F32 => ("f32", Accumulator::Float),
        Type::I64 => ("i64", Accumulator::Int),
        Type::I32 | Type::I16 | Type::I8 => ("i32", Accumulator::Int),
        Type::Bool => ("u32", Accumulator::Int),
        other => {
            return Err(GpuError::Unsupported {
                what: "@group_aggregate".to_string(),
                message: format!("cannot sum {other}"),
            })
        }
    })
}

/// The results one kernel computes: consecutive specs whose distinct value columns fit the
/// slots and bindings of one kernel.
struct Batch<'c> {
    specs: Vec<AggregateSpec>,
    /// Distinct columns bound.
    columns: Vec<&'c ValueColumn>,
    /// Per column of the call: its position in `columns`.
    bound: Vec<Option<usize>>,
}

impl<'c> Batch<'c> {
    fn take(
        specs: &[AggregateSpec],
        columns: &'c [ValueColumn],
        start: usize,
        value_slots: usize,
    ) -> Batch<'c> {
        let mut batch = Batch {
            specs: Vec::new(),
            columns: Vec::new(),
            bound: vec![None; columns.len()],
        };
        for spec in &specs[start..] {
            if batch.specs.len() == RESULTS_PER_BATCH {
                break;
            }
            if let Some(c) = spec.column {
                if batch.bound[c].is_none() {
                    if batch.columns.len() == value_slots && !batch.specs.is_empty() {
                        break;
                    }
                    batch.bound[c] = Some(batch.columns.len());
                    batch.columns.push(&columns[c]);
                }
            }
            batch.specs.push(*spec);
        }
        batch
    }
}

/// Records and submits one batch: `partials` + `combine` (ranked) or `segments` (bucketed),
/// then `finish`.
fn run_batch(
    device: &Device,
    batch: &Batch<'_>,
    layout: &Layout,
    shape: Shape,
    results: &[GpuBuffer<u32>],
) -> Result<()> {
    // Slots: one per bound column in its accumulator's kind; int slot 0 is the count.
    let mut float_slots = 0usize;
    let mut int_slots = 1usize;
    let mut slot_of = Vec::with_capacity(batch.columns.len());
    let mut elements = Vec::with_capacity(batch.columns.len());
    for column in &batch.columns {
        let (wgsl, accumulator) = element(&column.ty)?;
        elements.push(wgsl);
        slot_of.push(match accumulator {
            Accumulator::Float => {
                float_slots += 1;
                (Accumulator::Float, float_slots - 1)
            }
            Accumulator::Int => {
                int_slots += 1;
                (Accumulator::Int, int_slots - 1)
            }
        });
    }
    let (rank, sort) = match layout {
        Layout::Ranked { rank_of: None, .. } => ("ranks[row]", false),
        Layout::Ranked {
            rank_of: Some(_), ..
        } => ("offsets[ranks[row]]", false),
        Layout::Bucketed { sorted, .. } => ("ranks[row]", !sorted),
    };
    let source = batch_source(
        batch,
        &elements,
        &slot_of,
        Unrolled {
            groups: shape.unrolled_groups,
            float_slots,
            int_slots,
        },
        rank,
        sort,
    )?;
    let groups = shape.groups;
    let what = "@group_aggregate";
    let (workgroups, chunk) = partial_workgroups(shape.rows);
    let ranked = matches!(layout, Layout::Ranked { .. });
    let partial_entries = if ranked { workgroups } else { 1 };
    let partial_f = device.zeroed::<f64>(
        "group_aggregate partials",
        (partial_entries * float_slots.max(1) * groups).max(1),
    )?;
    let partial_i = device.zeroed::<i64>(
        "group_aggregate partials",
        partial_entries * int_slots * groups,
    )?;
    let totals_f = device.zeroed::<f64>("group_aggregate totals", (float_slots * groups).max(1))?;
    let totals_i = device.zeroed::<i64>("group_aggregate totals", int_slots * groups)?;
    let no_offsets = unused(device)?;
    let (ranks, offsets) = match layout {
        Layout::Ranked {
            index,
            rank_of: None,
        } => (index, &no_offsets),
        Layout::Ranked {
            index,
            rank_of: Some(rank_of),
        } => (index, rank_of),
        Layout::Bucketed { rows, offsets, .. } => (rows, offsets),
    };
    let uniform = params(
        device,
        "group_aggregate params",
        [
            check_len(what, shape.rows)?,
            check_len(what, groups)?,
            check_len(what, chunk)?,
            check_len(what, workgroups)?,
            check_len(what, batch.specs.len())?,
            0,
            0,
            0,
        ],
    )?;
    let mut bindings = vec![
        BindingKind::Uniform,
        BindingKind::StorageRead,
        BindingKind::StorageRead,
        BindingKind::StorageReadWrite,
        BindingKind::StorageReadWrite,
        BindingKind::StorageReadWrite,
        BindingKind::StorageReadWrite,
    ];
    bindings.extend(batch.columns.iter().map(|_| BindingKind::StorageRead));
    bindings.extend(results.iter().map(|_| BindingKind::StorageReadWrite));
    let mut args: Vec<&wgpu::Buffer> = vec![
        &uniform,
        ranks.raw(),
        offsets.raw(),
        partial_f.raw(),
        partial_i.raw(),
        totals_f.raw(),
        totals_i.raw(),
    ];
    args.extend(batch.columns.iter().map(|c| c.buffer.raw()));
    args.extend(results.iter().map(GpuBuffer::raw));
    let pipeline = |entry: &str| -> Result<Arc<Pipeline>> {
        device.pipeline(&KernelSpec {
            label: &format!("group_aggregate.{entry}"),
            source: &source,
            entry_point: entry,
            constants: &[],
            bindings: &bindings,
        })
    };
    let mut commands = Commands::new(device, "group_aggregate");
    if ranked {
        let partials = pipeline("partials")?;
        commands.dispatch(&partials, &args, workgroups as u64)?;
        // As the shader counts them: at least one float slot (FLOAT_SLOTS).
        let entries = (float_slots.max(1) + int_slots) * groups;
        let combine = pipeline("combine")?;
        commands.dispatch(&combine, &args, entries as u64)?;
    } else {
        let segment_rows = pipeline("segment_rows")?;
        commands.dispatch(&segment_rows, &args, element_workgroups(groups))?;
        let large_groups = match layout {
            Layout::Bucketed { large_groups, .. } => large_groups.unwrap_or(true),
            Layout::Ranked { .. } => false,
        };
        if large_groups {
            let segments = pipeline("segments")?;
            commands.dispatch(&segments, &args, groups as u64)?;
        }
    }
    let finish = pipeline("finish")?;
    commands.dispatch(
        &finish,
        &args,
        element_workgroups(batch.specs.len() * groups),
    )?;
    commands.submit()
}

/// Workgroups of `partials` and rows per workgroup: a fixed function of the row count, so
/// the order of the additions is too.
fn partial_workgroups(rows: usize) -> (usize, usize) {
    let per_workgroup = WORKGROUP_SIZE as usize * ROWS_PER_INVOCATION;
    let workgroups = rows
        .div_ceil(per_workgroup)
        .clamp(1, MAX_PARTIAL_WORKGROUPS);
    (workgroups, rows.div_ceil(workgroups).max(1))
}

/// The accumulators one kernel unrolls.
#[derive(Clone, Copy)]
struct Unrolled {
    groups: usize,
    float_slots: usize,
    int_slots: usize,
}

/// The shader of one batch, specialised: bindings, unrolled accumulators, the results.
/// `rank` is the WGSL of a row's group in `partials`; `sort` whether `segment_rows` orders
/// each bucket's rows.
fn batch_source(
    batch: &Batch<'_>,
    elements: &[&str],
    slot_of: &[(Accumulator, usize)],
    unrolled: Unrolled,
    rank: &str,
    sort: bool,
) -> Result<String> {
    let Unrolled {
        groups: unrolled_groups,
        float_slots,
        int_slots,
    } = unrolled;
    let mut value_bindings = String::new();
    for (j, element) in elements.iter().enumerate() {
        let binding = FIXED_BINDINGS + j;
        let _ = writeln!(
            value_bindings,
            "@group(0) @binding({binding}) var<storage, read> value_{j}: array<{element}>;"
        );
    }
    let mut output_bindings = String::new();
    for (k, spec) in batch.specs.iter().enumerate() {
        let binding = FIXED_BINDINGS + elements.len() + k;
        let value_ty = spec
            .column
            .and_then(|c| batch.bound[c])
            .map(|j| &batch.columns[j].ty);
        let out = match spec.reduction.result_type(value_ty) {
            Type::I64 => "i64",
            _ => "f64",
        };
        let _ = writeln!(
            output_bindings,
            "@group(0) @binding({binding}) var<storage, read_write> out_{k}: array<{out}>;"
        );
    }
    // One value of each bound column per row, as its accumulator's type.
    let load = |code: &mut String, indent: &str, row: &str| {
        for (j, &(kind, _)) in slot_of.iter().enumerate() {
            let convert = match kind {
                Accumulator::Float => "f64",
                Accumulator::Int => "i64",
            };
            let _ = writeln!(code, "{indent}let v_{j} = {convert}(value_{j}[{row}]);");
        }
    };
    let name = |kind: Accumulator| match kind {
        Accumulator::Float => "f",
        Accumulator::Int => "i",
    };
    let zero = |kind: Accumulator| match kind {
        Accumulator::Float => "f64(0.0)",
        Accumulator::Int => "i64(0)",
    };
    // `partials`: accumulators per (slot, group), unrolled.
    let mut declare = String::new();
    let mut accumulate = String::new();
    let mut reduce = String::new();
    load(&mut accumulate, "        ", "row");
    for g in 0..unrolled_groups {
        let _ = writeln!(declare, "    var i_0_{g} = i64(0);");
        let _ = writeln!(
            accumulate,
            "        i_0_{g} = i_0_{g} + select(i64(0), i64(1), g == {g}u);"
        );
        let _ = writeln!(
            reduce,
            "    {{ let t = tree_i64(local, i_0_{g}); if local == 0u {{ partial_i[int_base + {g}u] = t; }} }}"
        );
        for (j, &(kind, slot)) in slot_of.iter().enumerate() {
            let (n, z) = (name(kind), zero(kind));
            let _ = writeln!(declare, "    var {n}_{slot}_{g} = {z};");
            let _ = writeln!(
                accumulate,
                "        {n}_{slot}_{g} = {n}_{slot}_{g} + select({z}, v_{j}, g == {g}u);"
            );
            let (tree, base, partial) = match kind {
                Accumulator::Float => ("tree_f64", "float_base", "partial_f"),
                Accumulator::Int => ("tree_i64", "int_base", "partial_i"),
            };
            let _ = writeln!(
                reduce,
                "    {{ let t = {tree}(local, {n}_{slot}_{g}); if local == 0u {{ {partial}[{base} + {slot}u * GROUPS + {g}u] = t; }} }}"
            );
        }
    }
    // `segments`: one accumulator per slot for the workgroup's group.
    let mut segment_declare = String::new();
    let mut segment_accumulate = String::new();
    let mut segment_reduce = String::new();
    let mut row_store = String::new();
    load(&mut segment_accumulate, "            ", "row");
    for (j, &(kind, slot)) in slot_of.iter().enumerate() {
        let (n, z) = (name(kind), zero(kind));
        let _ = writeln!(segment_declare, "        var {n}_{slot} = {z};");
        let _ = writeln!(
            segment_accumulate,
            "            {n}_{slot} = {n}_{slot} + v_{j};"
        );
        let (tree, totals) = match kind {
            Accumulator::Float => ("tree_f64", "totals_f"),
            Accumulator::Int => ("tree_i64", "totals_i"),
        };
        let _ = writeln!(
            segment_reduce,
            "        {{ let t = {tree}(local, {n}_{slot}); if local == 0u {{ {totals}[{slot}u * params.groups + g] = t; }} }}"
        );
        let _ = writeln!(
            row_store,
            "        {totals}[{slot}u * params.groups + g] = {n}_{slot};"
        );
    }
    // `segment_rows`: a bucket's rows into ascending order (insertion sort, at most
    // SMALL_GROUP of them) where the bucketing left them in any order.
    let (sort_rows, row_at) = if sort {
        (
            "        var sorted: array<u32, SMALL_GROUP>;
        for (var k = 0u; k < n; k = k + 1u) {
            let row = ranks[cell_start + k];
            var j = k;
            loop {
                if j == 0u || sorted[j - 1u] <= row {
                    break;
                }
                sorted[j] = sorted[j - 1u];
                j = j - 1u;
            }
            sorted[j] = row;
        }",
            "sorted[k]",
        )
    } else {
        ("", "ranks[cell_start + k]")
    };
    // `finish`: each result from the totals.
    let mut finish = String::new();
    for (k, spec) in batch.specs.iter().enumerate() {
        let slot = spec.column.and_then(|c| batch.bound[c]).map(|j| slot_of[j]);
        let total = |(kind, slot): (Accumulator, usize)| match kind {
            Accumulator::Float => format!("totals_f[{slot}u * params.groups + g]"),
            Accumulator::Int => format!("totals_i[{slot}u * params.groups + g]"),
        };
        let expr = match (spec.reduction, slot) {
            (Reduction::Len, _) => "count".to_string(),
            (Reduction::Sum, Some(s)) => total(s),
            (Reduction::Avg, Some(s)) => format!("f64({}) / f64(count)", total(s)),
            (_, None) => {
                return Err(GpuError::Unsupported {
                    what: "@group_aggregate".to_string(),
                    message: format!("`{}` has no value column", spec.reduction.name()),
                })
            }
        };
        let _ = writeln!(finish, "    if result == {k}u {{ out_{k}[g] = {expr}; }}");
    }
    render(
        "group_aggregate.wgsl",
        GROUP_AGGREGATE_WGSL,
        &[
            ("WORKGROUP_SIZE", &WORKGROUP_SIZE.to_string()),
            ("GROUPS", &unrolled_groups.to_string()),
            ("FLOAT_SLOTS", &float_slots.max(1).to_string()),
            ("INT_SLOTS", &int_slots.to_string()),
            ("SMALL_GROUP", &SMALL_GROUP.to_string()),
            ("RANK", rank),
            ("SORT", sort_rows),
            ("ROW_AT", row_at),
            ("VALUE_BINDINGS", &value_bindings),
            ("OUTPUT_BINDINGS", &output_bindings),
            ("DECLARE", &declare),
            ("ACCUMULATE", &accumulate),
            ("REDUCE", &reduce),
            ("SEGMENT_DECLARE", &segment_declare),
            ("SEGMENT_ACCUMULATE", &segment_accumulate),
            ("SEGMENT_REDUCE", &segment_reduce),
            ("ROW_STORE", &row_store),
            ("FINISH", &finish),
        ],
    )
}
