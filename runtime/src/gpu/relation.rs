//! Relation library kernels of Datalog's semi-naive evaluation (`shaders/relation.wgsl`);
//! the CPU builtins in `cpu/relation.rs` are their oracle and define the semantics.
//!
//! Tuples are key matrices (`keys.rs`: i64 columns encoded as two order-preserving words
//! each), so a lexicographic tuple comparison is a comparison of words.
//! - `@tuple_unique`: the radix-sort permutation of the rows (`order.rs`), a flag per
//!   sorted row that differs from its predecessor, compaction (`compact.rs`), gather.
//! - `@tuple_diff`: per row of `a` a binary search in `b`, compaction, gather.
//! - `@tuple_merge`: the rows of `b` not in `a` (as for `@tuple_diff`), then a merge by
//!   ranks: each row's output position is its index plus its lower bound in the other
//!   relation, and every column is scattered there.
//! - `@sorted_join`: per probe row, the lower and upper bound of its key in the sorted
//!   build keys (count), an exclusive scan (`scan.rs`) of the counts, then one invocation per
//!   output pair finds its probe row by binary search over the scan (load-balanced write).
//!   The build side is searched in place; no hash index is built (see the issue note).
//!
//! Preconditions (sorted, duplicate-free) are checked on the GPU (`check_sorted`) and fail
//! with the CPU's message; the host reads one word per check.

use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{
    check_len, encode_keys, filled, gather, gather_rows, own_column, unused, KeyMatrix,
};
use super::order::order_permutation;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::exclusive_scan;
use super::template::{render, workgroup_size_text};
use crate::value::{List, Value, Vector};

/// `shaders/relation.wgsl`.
pub const RELATION_WGSL: &str = include_str!("../../../shaders/relation.wgsl");

const BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

/// A failure of a relation kernel: a precondition the CPU builtin also checks (its
/// message), or a GPU error.
pub enum RelationError {
    Precondition(String),
    Gpu(GpuError),
}

impl From<GpuError> for RelationError {
    fn from(e: GpuError) -> RelationError {
        RelationError::Gpu(e)
    }
}

type Out<T> = std::result::Result<T, RelationError>;

/// The columns of a relation on the host (all of one length).
pub type Columns<'a> = Vec<&'a [i64]>;

/// A relation uploaded: its raw columns (two words per i64) and its key matrix.
struct Uploaded {
    raw: Vec<GpuBuffer<u32>>,
    keys: KeyMatrix,
}

impl Uploaded {
    fn rows(&self) -> usize {
        self.keys.rows
    }
}

fn upload(device: &Device, what: &str, columns: &Columns<'_>) -> Result<Uploaded> {
    let rows = columns.first().map_or(0, |c| c.len());
    let vectors: Vec<Vector> = columns
        .iter()
        .map(|c| Vector::I64(Arc::new(c.to_vec())))
        .collect();
    let sources = vectors
        .iter()
        .map(|v| own_column(what, v))
        .collect::<Result<Vec<_>>>()?;
    let keys = encode_keys(device, what, rows, &sources)?;
    let raw = columns
        .iter()
        .map(|c| device.upload("relation column", bytemuck::cast_slice::<i64, u32>(c)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Uploaded { raw, keys })
}

struct Dispatch<'b> {
    entry: &'static str,
    params: [u32; 8],
    a: &'b wgpu::Buffer,
    b: &'b wgpu::Buffer,
    idx: &'b wgpu::Buffer,
    out: &'b wgpu::Buffer,
    flag: &'b wgpu::Buffer,
    items: usize,
}

fn run(device: &Device, d: Dispatch<'_>) -> Result<()> {
    if d.items == 0 {
        return Ok(());
    }
    let source = render(
        "relation.wgsl",
        RELATION_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )?;
    let pipeline = device.pipeline(&KernelSpec {
        label: &format!("relation.{}", d.entry),
        source: &source,
        entry_point: d.entry,
        bindings: BINDINGS,
    })?;
    let uniform = device.uniform(d.entry, &d.params);
    let mut commands = Commands::new(device, d.entry);
    commands.dispatch(
        &pipeline,
        &[&uniform, d.a, d.b, d.idx, d.out, d.flag],
        element_workgroups(d.items),
    )?;
    commands.submit()
}

fn params(n: usize, rows_a: usize, rows_b: usize, words: usize, mode: u32) -> Result<[u32; 8]> {
    Ok([
        check_len("relation", n)?,
        check_len("relation", rows_a)?,
        check_len("relation", rows_b)?,
        check_len("relation", words)?,
        mode,
        0,
        0,
        0,
    ])
}

/// Fails with the CPU's message unless the rows of `r` (argument `arg`) are increasing.
fn check_sorted(device: &Device, r: &KeyMatrix, arg: usize, strictly: bool) -> Out<()> {
    if r.rows < 2 {
        return Ok(());
    }
    let first_bad = filled(device, 1, u32::MAX)?;
    let (b, idx, out) = (unused(device)?, unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "check_sorted",
            params: params(0, r.rows, 0, r.num_words(), u32::from(strictly))?,
            a: r.words.raw(),
            b: b.raw(),
            idx: idx.raw(),
            out: out.raw(),
            flag: first_bad.raw(),
            items: r.rows,
        },
    )?;
    match device.download(&first_bad)?.first() {
        Some(&row) if row != u32::MAX => Err(RelationError::Precondition(
            crate::cpu::relation::not_sorted(arg, row as usize, strictly),
        )),
        _ => Ok(()),
    }
}

/// One entry point over rows of `a` (and `b`) producing one u32 per item in `out`.
fn per_row(
    device: &Device,
    entry: &'static str,
    a: &KeyMatrix,
    b: &KeyMatrix,
    items: usize,
) -> Result<GpuBuffer<u32>> {
    let out = device.zeroed::<u32>(entry, items.max(1))?;
    let (idx, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry,
            params: params(items, a.rows, b.rows, a.num_words(), 0)?,
            a: a.words.raw(),
            b: b.words.raw(),
            idx: idx.raw(),
            out: out.raw(),
            flag: flag.raw(),
            items,
        },
    )?;
    Ok(out)
}

/// `column[rows[j]]` for each j, 64-bit elements.
fn gather_column(
    device: &Device,
    column: &GpuBuffer<u32>,
    rows: &GpuBuffer<u32>,
    n: usize,
) -> Result<GpuBuffer<u32>> {
    let out = device.zeroed::<u32>("gathered column", (2 * n).max(1))?;
    let (b, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "gather_pairs",
            params: params(n, 0, 0, 0, 0)?,
            a: column.raw(),
            b: b.raw(),
            idx: rows.raw(),
            out: out.raw(),
            flag: flag.raw(),
            items: n,
        },
    )?;
    Ok(out)
}

fn download_column(device: &Device, words: &GpuBuffer<u32>, n: usize) -> Result<Vec<i64>> {
    let words = device.download_range(words, 0, 2 * n)?;
    Ok(bytemuck::pod_collect_to_vec(&words))
}

/// The rows `rows` (u32 indexes on the device, `n` of them) of every column, downloaded.
fn gather_relation(
    device: &Device,
    r: &Uploaded,
    rows: &GpuBuffer<u32>,
    n: usize,
) -> Result<Vec<Vec<i64>>> {
    r.raw
        .iter()
        .map(|column| {
            if n == 0 {
                return Ok(Vec::new());
            }
            let gathered = gather_column(device, column, rows, n)?;
            download_column(device, &gathered, n)
        })
        .collect()
}

/// `@tuple_unique` on the GPU: the distinct rows, sorted.
pub fn tuple_unique(device: &Device, columns: &Columns<'_>) -> Out<Vec<Vec<i64>>> {
    let (unique, m) = sorted_unique_on_device(device, "@tuple_unique", columns)?;
    if m == 0 {
        return Ok(vec![Vec::new(); columns.len()]);
    }
    Ok(unique
        .iter()
        .map(|column| download_column(device, column, m))
        .collect::<Result<Vec<_>>>()?)
}

/// The distinct rows of `columns`, sorted, left on the device: one buffer per column (two
/// words per i64) and the number of rows (the trie indexes of `gpu/multiway.rs` start here).
pub(crate) fn sorted_unique_on_device(
    device: &Device,
    what: &str,
    columns: &Columns<'_>,
) -> Result<(Vec<GpuBuffer<u32>>, usize)> {
    let r = upload(device, what, columns)?;
    let n = r.rows();
    if n == 0 {
        return Ok((Vec::new(), 0));
    }
    let permutation = order_permutation(device, &r.keys, &[true])?;
    let flags = device.zeroed::<u32>("distinct flags", n)?;
    let (b, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "adjacent_distinct",
            params: params(n, n, 0, r.keys.num_words(), 0)?,
            a: r.keys.words.raw(),
            b: b.raw(),
            idx: permutation.raw(),
            out: flags.raw(),
            flag: flag.raw(),
            items: n,
        },
    )?;
    let kept = where_true(device, &flags)?;
    let m = kept.len();
    if m == 0 {
        return Ok((Vec::new(), 0));
    }
    let rows = gather(device, &permutation, &kept)?;
    let unique = r
        .raw
        .iter()
        .map(|column| gather_column(device, column, &rows, m))
        .collect::<Result<Vec<_>>>()?;
    Ok((unique, m))
}

/// `@tuple_diff` on the GPU: the rows of `a` not in `b`.
pub fn tuple_diff(device: &Device, a: &Columns<'_>, b: &Columns<'_>) -> Out<Vec<Vec<i64>>> {
    let ua = upload(device, "@tuple_diff", a)?;
    let ub = upload(device, "@tuple_diff", b)?;
    check_sorted(device, &ua.keys, 0, true)?;
    check_sorted(device, &ub.keys, 1, true)?;
    if ua.rows() == 0 {
        return Ok(vec![Vec::new(); a.len()]);
    }
    let missing = per_row(device, "not_in_b", &ua.keys, &ub.keys, ua.rows())?;
    let kept = where_true(device, &missing)?;
    let m = kept.len();
    Ok(gather_relation(device, &ua, &kept, m)?)
}

/// `@tuple_merge` on the GPU: the sorted union of `a` and `b`.
pub fn tuple_merge(device: &Device, a: &Columns<'_>, b: &Columns<'_>) -> Out<Vec<Vec<i64>>> {
    let ua = upload(device, "@tuple_merge", a)?;
    let ub = upload(device, "@tuple_merge", b)?;
    check_sorted(device, &ua.keys, 0, true)?;
    check_sorted(device, &ub.keys, 1, true)?;
    // The rows of b that a lacks; the two are then disjoint.
    let fresh = if ub.rows() == 0 {
        device.zeroed::<u32>("no rows", 0)?
    } else {
        let missing = per_row(device, "not_in_b", &ub.keys, &ua.keys, ub.rows())?;
        where_true(device, &missing)?
    };
    let (na, nb) = (ua.rows(), fresh.len());
    let total = na + nb;
    if total == 0 {
        return Ok(vec![Vec::new(); a.len()]);
    }
    let fresh_keys = gather_rows(device, &ub.keys, &fresh)?;
    let positions_a = per_row(device, "merge_position_a", &ua.keys, &fresh_keys, na)?;
    let positions_b = per_row(device, "merge_position_b", &ua.keys, &fresh_keys, nb)?;
    let mut result = Vec::with_capacity(a.len());
    for (column_a, column_b) in ua.raw.iter().zip(&ub.raw) {
        let out = device.zeroed::<u32>("merged column", 2 * total)?;
        let fresh_column;
        let parts: [(&GpuBuffer<u32>, &GpuBuffer<u32>, usize); 2] = [
            (column_a, &positions_a, na),
            (
                if nb > 0 {
                    fresh_column = gather_column(device, column_b, &fresh, nb)?;
                    &fresh_column
                } else {
                    column_b
                },
                &positions_b,
                nb,
            ),
        ];
        for (values, positions, n) in parts {
            let (b, flag) = (unused(device)?, unused(device)?);
            run(
                device,
                Dispatch {
                    entry: "scatter_pairs",
                    params: params(n, 0, 0, 0, 0)?,
                    a: values.raw(),
                    b: b.raw(),
                    idx: positions.raw(),
                    out: out.raw(),
                    flag: flag.raw(),
                    items: n,
                },
            )?;
        }
        result.push(download_column(device, &out, total)?);
    }
    Ok(result)
}

/// `@sorted_join` on the GPU: `(probe rows, build rows)` of every matching pair, as the
/// `list<i64>` value the CPU builtin returns.
pub fn sorted_join(device: &Device, probe: &Columns<'_>, build: &Columns<'_>) -> Out<Value> {
    let up = upload(device, "@sorted_join", probe)?;
    let ub = upload(device, "@sorted_join", build)?;
    check_sorted(device, &ub.keys, 1, false)?;
    let empty = || {
        Value::List(List::Flat {
            values: Vector::I64(Arc::new(Vec::new())),
            offsets: Arc::new(vec![0, 0, 0]),
        })
    };
    let rows = up.rows();
    if rows == 0 || ub.rows() == 0 {
        return Ok(empty());
    }
    let counts = device.zeroed::<u32>("join counts", rows)?;
    let first = device.zeroed::<u32>("join first rows", rows)?;
    let idx = unused(device)?;
    run(
        device,
        Dispatch {
            entry: "join_count",
            params: params(rows, rows, ub.rows(), up.keys.num_words(), 0)?,
            a: up.keys.words.raw(),
            b: ub.keys.words.raw(),
            idx: idx.raw(),
            out: counts.raw(),
            flag: first.raw(),
            items: rows,
        },
    )?;
    let offsets = exclusive_scan(device, &counts)?;
    // Counts are u32: a total past 2^32 wraps the scan, which is then not monotonic.
    let wrapped = filled(device, 1, u32::MAX)?;
    let (a, b, out) = (unused(device)?, unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "check_monotonic",
            params: params(rows, 0, 0, 0, 0)?,
            a: a.raw(),
            b: b.raw(),
            idx: offsets.raw(),
            out: out.raw(),
            flag: wrapped.raw(),
            items: rows,
        },
    )?;
    if device.download(&wrapped)?.first() != Some(&u32::MAX) {
        return Err(RelationError::Gpu(GpuError::Unsupported {
            what: "@sorted_join".to_string(),
            message: "the join has 2^32 or more pairs".to_string(),
        }));
    }
    let total = device.download_range(&offsets, rows, 1)?[0] as usize;
    if total == 0 {
        return Ok(empty());
    }
    let probe_rows = device.zeroed::<u32>("join probe rows", total)?;
    let build_rows = device.zeroed::<u32>("join build rows", total)?;
    let b = unused(device)?;
    run(
        device,
        Dispatch {
            entry: "join_write",
            params: params(total, rows, 0, 0, 0)?,
            a: first.raw(),
            b: b.raw(),
            idx: offsets.raw(),
            out: probe_rows.raw(),
            flag: build_rows.raw(),
            items: total,
        },
    )?;
    let both = super::keys::download_as_i64(device, &[&probe_rows, &build_rows])?;
    Ok(Value::List(List::Flat {
        values: Vector::I64(Arc::new(both)),
        offsets: Arc::new(vec![0, total, 2 * total]),
    }))
}
