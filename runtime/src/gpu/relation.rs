//! Relation library kernels of Datalog's semi-naive evaluation (`shaders/relation.wgsl`);
//! the CPU builtins in `cpu/relation.rs` are their oracle and define the semantics.
//!
//! Relations stay on the device: every kernel takes [`DeviceRelation`]s (a kernel's output,
//! or host columns uploaded once) and returns one, so a semi-naive `while` loop moves no
//! relation between host and device. What the host reads per call is a handful of words:
//! the precondition checks and the sizes it must know to allocate (a count of kept rows, a
//! join's number of pairs).
//!
//! Tuples are key matrices (`keys.rs`: i64 columns encoded as two order-preserving words
//! each), so a lexicographic tuple comparison is a comparison of words.
//! - `@tuple_unique`: the radix-sort permutation of the rows (`order.rs`), a flag per
//!   sorted row that differs from its predecessor, compaction (`compact.rs`), gather.
//! - `@tuple_diff`: per row of `a` a binary search in `b`, compaction, gather.
//! - `@tuple_merge`: the rows of `b` not in `a` (as for `@tuple_diff`), then a merge by
//!   ranks: each row's output position is its index plus its lower bound in the other
//!   relation, and every column is scattered there.
//! - `@sorted_join`: the build side indexed as GDlog's HISA: an open-addressing hash table
//!   (linear probing, load factor at most 0.8) from each distinct key to its first and
//!   one-past-last row in the sorted array, built in two passes (run starts claim slots,
//!   run ends record the end). Per probe row one lookup gives its count and first build row
//!   (count), an exclusive scan (`scan.rs`) of the counts gives the output offsets, then one
//!   invocation per output pair finds its probe row by binary search over the scan
//!   (load-balanced write).
//!
//! Preconditions (sorted, duplicate-free) are checked on the GPU (`check_sorted`) and fail
//! with the CPU's message (`crate::relation::not_sorted`); the checks of one call share one
//! status buffer, read back once. A relation these kernels returned is sorted and
//! duplicate-free by construction: its column buffers are remembered (`SORTED`), and the
//! check of such an argument (or of a prefix of its columns, for the join's non-strict check)
//! is skipped, so a semi-naive iteration does not re-read `full` to check it. The key
//! matrix last encoded is kept too (`KEYS`): `@tuple_diff(new, full)` and then
//! `@tuple_merge(full, delta)` encode `full` once.
//!
//! Full relations are not grown in place (GDlog's eager buffer management): the value model
//! is immutable, and a merge interleaves delta into full, so the previous `full` value (still
//! bound to its variable while the merge runs) would be overwritten. Each merge writes a new
//! buffer of |full| + |delta| rows and the old one is freed when its last value goes.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Weak};

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{
    check_len, encode_keys, filled, gather, gather_rows, unused, ColumnSource, Encoding, KeyMatrix,
};
use super::order::order_permutation;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::exclusive_scan;
use super::template::{render, workgroup_size_text};
use crate::relation::{not_sorted, RelationArgument, RelationColumn, TOO_MANY_PAIRS};

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

/// An empty slot of a HISA table (`EMPTY` in the shader).
const EMPTY: u32 = u32::MAX;

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

/// The column buffers of one relation, held weakly: a remembered relation does not keep
/// device memory alive.
type Remembered = (Vec<Weak<GpuBuffer<u32>>>, usize);

fn same_columns(remembered: &Remembered, columns: &[Arc<GpuBuffer<u32>>], rows: usize) -> bool {
    remembered.1 == rows
        && remembered.0.len() >= columns.len()
        && remembered
            .0
            .iter()
            .zip(columns)
            .all(|(w, c)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(c)))
}

thread_local! {
    /// Relations returned by the kernels here (sorted and duplicate-free); dead ones are
    /// dropped as new ones come.
    static SORTED: RefCell<Vec<Remembered>> = const { RefCell::new(Vec::new()) };
    /// The relation whose key matrix was encoded last, and that matrix.
    static KEYS: RefCell<Option<(Remembered, Rc<KeyMatrix>)>> = const { RefCell::new(None) };
}

fn remember(columns: &[Arc<GpuBuffer<u32>>], rows: usize) -> Remembered {
    (columns.iter().map(Arc::downgrade).collect(), rows)
}

/// A relation in device memory: one buffer per column, each holding `rows` i64 elements as
/// two little-endian words (the layout of an i64 device vector).
#[derive(Clone)]
pub struct DeviceRelation {
    pub columns: Vec<Arc<GpuBuffer<u32>>>,
    pub rows: usize,
}

impl DeviceRelation {
    /// Host columns (all of one length), uploaded.
    pub fn upload(device: &Device, columns: &[&[i64]]) -> Result<DeviceRelation> {
        let rows = columns.first().map_or(0, |c| c.len());
        let columns = columns
            .iter()
            .map(|c| {
                device
                    .upload("relation column", bytemuck::cast_slice::<i64, u32>(c))
                    .map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceRelation { columns, rows })
    }

    /// A checked relation argument: device columns as they are, host columns uploaded.
    pub fn of_argument(device: &Device, r: &RelationArgument<'_>) -> Result<DeviceRelation> {
        let columns = r
            .columns
            .iter()
            .map(|c| match c {
                RelationColumn::Device(d) => Ok(d.buffer.clone()),
                RelationColumn::Host(c) => device
                    .upload("relation column", bytemuck::cast_slice::<i64, u32>(c))
                    .map(Arc::new),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceRelation {
            columns,
            rows: r.rows,
        })
    }

    fn empty(device: &Device, arity: usize) -> Result<DeviceRelation> {
        let columns = (0..arity)
            .map(|_| {
                device
                    .zeroed::<u32>("empty relation column", 0)
                    .map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceRelation { columns, rows: 0 })
    }

    pub fn arity(&self) -> usize {
        self.columns.len()
    }

    /// Marks the relation sorted and duplicate-free (a kernel here made it).
    fn sorted(self) -> DeviceRelation {
        SORTED.with(|sorted| {
            let mut sorted = sorted.borrow_mut();
            sorted.retain(|(columns, _)| columns.iter().all(|w| w.strong_count() > 0));
            sorted.push(remember(&self.columns, self.rows));
        });
        self
    }

    /// Whether a kernel here made the relation (strictly: exactly these columns; else these
    /// columns a prefix of such a relation's, which makes them sorted, duplicates allowed).
    fn known_sorted(&self, strictly: bool) -> bool {
        SORTED.with(|sorted| {
            sorted.borrow().iter().any(|r| {
                same_columns(r, &self.columns, self.rows)
                    && (!strictly || r.0.len() == self.columns.len())
            })
        })
    }

    /// The key matrix of the rows (every column a key column), encoded on the device; the
    /// last one encoded is reused.
    fn keys(&self, device: &Device, what: &str) -> Result<Rc<KeyMatrix>> {
        let cached = KEYS.with(|keys| {
            keys.borrow().as_ref().and_then(|(r, k)| {
                (r.0.len() == self.columns.len() && same_columns(r, &self.columns, self.rows))
                    .then(|| k.clone())
            })
        });
        if let Some(keys) = cached {
            return Ok(keys);
        }
        let keys = Rc::new(self.encode_keys(device, what)?);
        KEYS.with(|k| *k.borrow_mut() = Some((remember(&self.columns, self.rows), keys.clone())));
        Ok(keys)
    }

    fn encode_keys(&self, device: &Device, what: &str) -> Result<KeyMatrix> {
        let sources: Vec<ColumnSource<'static>> = self
            .columns
            .iter()
            .map(|c| ColumnSource {
                data: Cow::Borrowed(&[]),
                resident: Some(c.clone()),
                rows: self.rows,
                encoding: Encoding::I64,
                remap: None,
            })
            .collect();
        encode_keys(device, what, self.rows, &sources)
    }

    /// The rows `rows` (u32 indexes on the device, `n` of them) of every column.
    fn gather(&self, device: &Device, rows: &GpuBuffer<u32>, n: usize) -> Result<DeviceRelation> {
        let columns = self
            .columns
            .iter()
            .map(|c| gather_column(device, c, rows, n).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceRelation { columns, rows: n })
    }

    /// The relation as the value the builtins return, its columns left on the device.
    pub fn into_value(self) -> crate::value::Value {
        crate::relation::device_relation_value(self.columns, self.rows)
    }

    /// The columns, downloaded (tests, and the multiway join's host tries).
    pub fn download(&self, device: &Device) -> Result<Vec<Vec<i64>>> {
        self.columns
            .iter()
            .map(|c| {
                if self.rows == 0 {
                    return Ok(Vec::new());
                }
                let words = device.download_range(c, 0, 2 * self.rows)?;
                Ok(bytemuck::pod_collect_to_vec(&words))
            })
            .collect()
    }
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
    let uniform = device.uniform(d.entry, &d.params)?;
    let mut commands = Commands::new(device, d.entry);
    commands.dispatch(
        &pipeline,
        &[&uniform, d.a, d.b, d.idx, d.out, d.flag],
        element_workgroups(d.items),
    )?;
    commands.submit()
}

/// Kernel parameters: items, rows of a and b, words per row, mode, status slot, table slots.
struct Params {
    n: usize,
    rows_a: usize,
    rows_b: usize,
    words: usize,
    mode: u32,
    slot: u32,
    slots: usize,
}

impl Params {
    fn new(n: usize) -> Params {
        Params {
            n,
            rows_a: 0,
            rows_b: 0,
            words: 0,
            mode: 0,
            slot: 0,
            slots: 0,
        }
    }

    fn words(self) -> Result<[u32; 8]> {
        Ok([
            check_len("relation", self.n)?,
            check_len("relation", self.rows_a)?,
            check_len("relation", self.rows_b)?,
            check_len("relation", self.words)?,
            self.mode,
            self.slot,
            check_len("relation", self.slots)?,
            0,
        ])
    }
}

/// Status words of one call, read back together: each check writes the smallest failing
/// row in its slot (`u32::MAX`: none).
struct Status {
    words: GpuBuffer<u32>,
}

impl Status {
    fn new(device: &Device, slots: usize) -> Result<Status> {
        Ok(Status {
            words: filled(device, slots, u32::MAX)?,
        })
    }

    /// Records the check that the rows of `relation` (keys `r`) are increasing (strictly: no
    /// duplicates) into slot `slot`; nothing for a relation known sorted.
    fn check_sorted(
        &self,
        device: &Device,
        relation: &DeviceRelation,
        r: &KeyMatrix,
        slot: u32,
        strictly: bool,
    ) -> Result<()> {
        if r.rows < 2 || relation.known_sorted(strictly) {
            return Ok(());
        }
        let (b, idx, out) = (unused(device)?, unused(device)?, unused(device)?);
        run(
            device,
            Dispatch {
                entry: "check_sorted",
                params: Params {
                    rows_a: r.rows,
                    words: r.num_words(),
                    mode: u32::from(strictly),
                    slot,
                    ..Params::new(0)
                }
                .words()?,
                a: r.words.raw(),
                b: b.raw(),
                idx: idx.raw(),
                out: out.raw(),
                flag: self.words.raw(),
                items: r.rows,
            },
        )
    }

    fn read(&self, device: &Device) -> Result<Vec<u32>> {
        device.download(&self.words)
    }
}

/// The error of the first failed sortedness check: `checks` pairs a status word with its
/// argument (0-based) and whether it required strictly increasing rows.
fn sorted_or_error(words: &[u32], checks: &[(usize, usize, bool)]) -> Out<()> {
    for &(slot, arg, strictly) in checks {
        if let Some(&row) = words.get(slot).filter(|&&row| row != u32::MAX) {
            return Err(RelationError::Precondition(not_sorted(
                arg,
                row as usize,
                strictly,
            )));
        }
    }
    Ok(())
}

/// One entry point over rows of `a` (and `b`) producing one u32 per item in `out`.
fn per_row(
    device: &Device,
    entry: &'static str,
    a: &KeyMatrix,
    b: &KeyMatrix,
    items: usize,
) -> Result<GpuBuffer<u32>> {
    let out = device.zeroed::<u32>(entry, items)?;
    let (idx, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry,
            params: Params {
                rows_a: a.rows,
                rows_b: b.rows,
                words: a.num_words(),
                ..Params::new(items)
            }
            .words()?,
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
    let out = device.zeroed::<u32>("gathered column", 2 * n)?;
    let (b, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "gather_pairs",
            params: Params::new(n).words()?,
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

/// `@tuple_unique` on the GPU: the distinct rows, sorted.
pub fn tuple_unique(device: &Device, r: &DeviceRelation) -> Result<DeviceRelation> {
    let n = r.rows;
    if n == 0 {
        return DeviceRelation::empty(device, r.arity());
    }
    let keys = r.encode_keys(device, "@tuple_unique")?;
    let permutation = order_permutation(device, &keys, &[true])?;
    let flags = device.zeroed::<u32>("distinct flags", n)?;
    let (b, flag) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "adjacent_distinct",
            params: Params {
                rows_a: n,
                words: keys.num_words(),
                ..Params::new(n)
            }
            .words()?,
            a: keys.words.raw(),
            b: b.raw(),
            idx: permutation.raw(),
            out: flags.raw(),
            flag: flag.raw(),
            items: n,
        },
    )?;
    let kept = where_true(device, &flags)?;
    let rows = gather(device, &permutation, &kept)?;
    Ok(r.gather(device, &rows, kept.len())?.sorted())
}

/// The distinct rows of host `columns`, sorted, on the device (the trie indexes of
/// `gpu/multiway.rs` start here).
pub(crate) fn sorted_unique_on_device(
    device: &Device,
    columns: &[&[i64]],
) -> Result<DeviceRelation> {
    tuple_unique(device, &DeviceRelation::upload(device, columns)?)
}

/// `@tuple_diff` on the GPU: the rows of `a` not in `b`.
pub fn tuple_diff(device: &Device, a: &DeviceRelation, b: &DeviceRelation) -> Out<DeviceRelation> {
    let ka = a.keys(device, "@tuple_diff")?;
    let kb = b.keys(device, "@tuple_diff")?;
    let status = Status::new(device, 2)?;
    status.check_sorted(device, a, &ka, 0, true)?;
    status.check_sorted(device, b, &kb, 1, true)?;
    if a.rows >= 2 || b.rows >= 2 {
        sorted_or_error(&status.read(device)?, &[(0, 0, true), (1, 1, true)])?;
    }
    if a.rows == 0 {
        return Ok(DeviceRelation::empty(device, a.arity())?);
    }
    if b.rows == 0 {
        return Ok(a.clone().sorted());
    }
    let missing = per_row(device, "not_in_b", &ka, &kb, a.rows)?;
    let kept = where_true(device, &missing)?;
    Ok(a.gather(device, &kept, kept.len())?.sorted())
}

/// `@tuple_merge` on the GPU: the sorted union of `a` and `b`.
pub fn tuple_merge(device: &Device, a: &DeviceRelation, b: &DeviceRelation) -> Out<DeviceRelation> {
    let ka = a.keys(device, "@tuple_merge")?;
    let kb = b.keys(device, "@tuple_merge")?;
    let status = Status::new(device, 2)?;
    status.check_sorted(device, a, &ka, 0, true)?;
    status.check_sorted(device, b, &kb, 1, true)?;
    if a.rows >= 2 || b.rows >= 2 {
        sorted_or_error(&status.read(device)?, &[(0, 0, true), (1, 1, true)])?;
    }
    if b.rows == 0 {
        return Ok(a.clone().sorted());
    }
    if a.rows == 0 {
        return Ok(b.clone().sorted());
    }
    // The rows of b that a lacks; the two are then disjoint.
    let missing = per_row(device, "not_in_b", &kb, &ka, b.rows)?;
    let fresh = where_true(device, &missing)?;
    let (na, nb) = (a.rows, fresh.len());
    if nb == 0 {
        return Ok(a.clone().sorted());
    }
    let total = na + nb;
    let fresh_keys = gather_rows(device, &kb, &fresh)?;
    // Row i of a goes to i + (rows of fresh before it): a histogram of fresh's insertion
    // points in a, scanned (a streaming pass over a, no search per row of a).
    let before = device.zeroed::<u32>("merge histogram", na + 1)?;
    let (unused_idx, unused_out) = (unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "merge_count",
            params: Params {
                rows_a: na,
                rows_b: nb,
                words: ka.num_words(),
                ..Params::new(nb)
            }
            .words()?,
            a: ka.words.raw(),
            b: fresh_keys.words.raw(),
            idx: unused_idx.raw(),
            out: unused_out.raw(),
            flag: before.raw(),
            items: nb,
        },
    )?;
    let before = exclusive_scan(device, &before)?;
    let positions_a = device.zeroed::<u32>("merge_position_a", na)?;
    let (unused_a, unused_b, unused_flag) = (unused(device)?, unused(device)?, unused(device)?);
    run(
        device,
        Dispatch {
            entry: "merge_position_a",
            params: Params::new(na).words()?,
            a: unused_a.raw(),
            b: unused_b.raw(),
            idx: before.raw(),
            out: positions_a.raw(),
            flag: unused_flag.raw(),
            items: na,
        },
    )?;
    let positions_b = per_row(device, "merge_position_b", &ka, &fresh_keys, nb)?;
    let mut columns = Vec::with_capacity(a.arity());
    for (column_a, column_b) in a.columns.iter().zip(&b.columns) {
        let out = device.zeroed::<u32>("merged column", 2 * total)?;
        let fresh_column = gather_column(device, column_b, &fresh, nb)?;
        for (values, positions, n) in [
            (column_a.as_ref(), &positions_a, na),
            (&fresh_column, &positions_b, nb),
        ] {
            let (b, flag) = (unused(device)?, unused(device)?);
            run(
                device,
                Dispatch {
                    entry: "scatter_pairs",
                    params: Params::new(n).words()?,
                    a: values.raw(),
                    b: b.raw(),
                    idx: positions.raw(),
                    out: out.raw(),
                    flag: flag.raw(),
                    items: n,
                },
            )?;
        }
        columns.push(Arc::new(out));
    }
    Ok(DeviceRelation {
        columns,
        rows: total,
    }
    .sorted())
}

/// The number of slots of the HISA table of `rows` build rows: a power of two with load
/// factor at most 0.8 (distinct keys are at most the rows), and at least one slot empty.
fn hisa_slots(rows: usize) -> usize {
    (rows + rows / 4 + 1).next_power_of_two().max(2)
}

/// `@sorted_join` on the GPU: `(probe rows, build rows)` of every matching pair, as a
/// relation of two i64 columns left on the device (the layout of `@join_index`).
pub fn sorted_join(
    device: &Device,
    probe: &DeviceRelation,
    build: &DeviceRelation,
) -> Out<DeviceRelation> {
    let kb = build.keys(device, "@sorted_join")?;
    let (rows, rows_b) = (probe.rows, build.rows);
    if rows == 0 || rows_b == 0 {
        let status = Status::new(device, 1)?;
        status.check_sorted(device, build, &kb, 0, false)?;
        if rows_b >= 2 {
            sorted_or_error(&status.read(device)?, &[(0, 1, false)])?;
        }
        return Ok(DeviceRelation::empty(device, 2)?);
    }
    let kp = probe.keys(device, "@sorted_join")?;
    // Status: 0 the build side's order, 1 a wrapped scan, 2 the number of pairs.
    let status = Status::new(device, 3)?;
    status.check_sorted(device, build, &kb, 0, false)?;
    let slots = hisa_slots(rows_b);
    let table = filled(device, 2 * slots, EMPTY)?;
    let words = kb.num_words();
    for entry in ["hisa_insert", "hisa_end"] {
        let (a, idx, out) = (unused(device)?, unused(device)?, unused(device)?);
        run(
            device,
            Dispatch {
                entry,
                params: Params {
                    rows_b,
                    words,
                    slots,
                    ..Params::new(0)
                }
                .words()?,
                a: a.raw(),
                b: kb.words.raw(),
                idx: idx.raw(),
                out: out.raw(),
                flag: table.raw(),
                items: rows_b,
            },
        )?;
    }
    let counts = device.zeroed::<u32>("join counts", rows)?;
    let first = device.zeroed::<u32>("join first rows", rows)?;
    run(
        device,
        Dispatch {
            entry: "join_count",
            params: Params {
                rows_a: rows,
                rows_b,
                words,
                slots,
                ..Params::new(rows)
            }
            .words()?,
            a: kp.words.raw(),
            b: kb.words.raw(),
            idx: table.raw(),
            out: counts.raw(),
            flag: first.raw(),
            items: rows,
        },
    )?;
    let offsets = exclusive_scan(device, &counts)?;
    // Counts are u32: a total past 2^32 wraps the scan, which is then not monotonic.
    for (entry, slot, items) in [("check_monotonic", 1, rows), ("store_total", 2, 1)] {
        let (a, b, out) = (unused(device)?, unused(device)?, unused(device)?);
        run(
            device,
            Dispatch {
                entry,
                params: Params {
                    slot,
                    ..Params::new(rows)
                }
                .words()?,
                a: a.raw(),
                b: b.raw(),
                idx: offsets.raw(),
                out: out.raw(),
                flag: status.words.raw(),
                items,
            },
        )?;
    }
    let words = status.read(device)?;
    sorted_or_error(&words, &[(0, 1, false)])?;
    if words.get(1) != Some(&u32::MAX) {
        return Err(RelationError::Gpu(GpuError::Unsupported {
            what: "@sorted_join".to_string(),
            message: TOO_MANY_PAIRS.to_string(),
        }));
    }
    let total = words.get(2).copied().unwrap_or(0) as usize;
    if total == 0 {
        return Ok(DeviceRelation::empty(device, 2)?);
    }
    let probe_rows = device.zeroed::<u32>("join probe rows", 2 * total)?;
    let build_rows = device.zeroed::<u32>("join build rows", 2 * total)?;
    let b = unused(device)?;
    run(
        device,
        Dispatch {
            entry: "join_write",
            params: Params {
                rows_a: rows,
                ..Params::new(total)
            }
            .words()?,
            a: first.raw(),
            b: b.raw(),
            idx: offsets.raw(),
            out: probe_rows.raw(),
            flag: build_rows.raw(),
            items: total,
        },
    )?;
    Ok(DeviceRelation {
        columns: vec![Arc::new(probe_rows), Arc::new(build_rows)],
        rows: total,
    })
}
