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
//! - `@tuple_diff`: per row of `a` a binary search in `b` (no pass over `b`), compaction,
//!   gather.
//! - `@tuple_merge`: a merge path (each run of eight output rows finds its start in both
//!   inputs by one binary search along its diagonal, then merges sequentially) writing the
//!   merged key matrix and every output row's source, then each column gathered through the
//!   sources, all in one submission: one read and one write of each row of `full`. Rows of `b` also in `a` are dropped first, unless `b` is known to have none
//!   (it came from `@tuple_diff(_, a)`: `DISJOINT`), as a semi-naive delta is.
//! - `@sorted_join`: the build side indexed as GDlog's HISA: an open-addressing hash table
//!   (linear probing, load factor at most 0.8) from each distinct key to its first and
//!   one-past-last row in the sorted array, built in two passes (run starts claim slots,
//!   run ends record the end) and kept while the build relation lives (`HISA`: an index of
//!   an earlier stratum is built once, not once per iteration). Per probe row one lookup
//!   gives its count and first build row (count), an exclusive scan (`scan.rs`) of the
//!   counts gives the output offsets, then one invocation per output pair finds its probe
//!   row by binary search over the scan (load-balanced write).
//!
//! A relation whose key matrix passes one storage binding (two i64 columns past 1.3·10^8
//! rows at 2 GiB) is keyed by column groups instead, a key matrix per group: `@tuple_unique`
//! sorts it one group at a time, and `@tuple_diff` and `@tuple_merge` search and merge it
//! one group at a time (`relation/grouped.rs`).
//!
//! Preconditions (sorted, duplicate-free) are checked on the GPU (`check_sorted`) and fail
//! with the CPU's message (`crate::relation::not_sorted`); the checks of one call share one
//! status buffer, read back once, and only when some check ran. A relation these kernels
//! returned is sorted and duplicate-free by construction: its column buffers are remembered
//! (`SORTED`), and the check of such an argument (or of a prefix of its columns, for the
//! join's non-strict check) is skipped, so a semi-naive iteration does not re-read `full` to
//! check it. Key matrices are kept per live relation (`KEYS`), and the merge writes the
//! merged relation's key matrix as it writes its columns: `full` is never re-encoded.
//!
//! What one semi-naive iteration reads back, per recursive relation: the join's number of
//! pairs, `@tuple_unique`'s word ranges and distinct count, `@tuple_diff`'s kept count
//! (the sizes the host must know to allocate); the merge reads nothing.
//!
//! Full relations are not grown in place (GDlog's eager buffer management): the value model
//! is immutable, and a merge interleaves delta into full, so the previous `full` value (still
//! bound to its variable while the merge runs) would be overwritten. Each merge writes a new
//! buffer of |full| + |delta| rows, without clearing it first (`Device::scratch`), and the
//! old one goes back to the buffer pool when its last value goes; the pool's size classes
//! (eight per power of two) hand that buffer to the merge after next, so a loop ping-pongs
//! between two buffers per column that grow geometrically instead of creating one per
//! iteration.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Weak};

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::device::Device;
use super::error::{GpuError, Result};
use super::keys::{
    check_len, encode_keys, filled, gather, gather_rows, iota, unused, ColumnSource, Encoding,
    KeyMatrix,
};
use super::order::order_permutation_after;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::{record_scan, SUM_VALUES};
use super::template::{partition_points, render, workgroup_size_text, Search};
use crate::relation::{not_sorted, RelationArgument, RelationColumn, TOO_MANY_PAIRS};

mod grouped;
mod join_unique;
pub use join_unique::{join_batch_rows, join_unique, take_join_stats, JoinStats, JOIN_BATCH_WGSL};

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

/// Output rows per invocation of `merge_path` (`MERGE_ITEMS` in the shader).
const MERGE_ITEMS: usize = 8;

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
    /// Key matrices of live relations: encoded once per relation (`full` is read by the
    /// diff and the merge of every iteration), or written by the merge that made the
    /// relation, so `full` is never re-encoded. An entry goes when its columns do.
    static KEYS: RefCell<Vec<(Remembered, Rc<KeyMatrix>)>> = const { RefCell::new(Vec::new()) };
    /// `(d, b)` for every `d = @tuple_diff(_, b)`: `d` has no row of `b`, so
    /// `@tuple_merge(b, d)` needs no pass to drop common rows and no read-back of a count.
    static DISJOINT: RefCell<Vec<(Remembered, Remembered)>> = const { RefCell::new(Vec::new()) };
    /// HISA tables of live build relations of `@sorted_join` (an index of an earlier
    /// stratum is probed by every iteration's delta): the table and its number of slots.
    static HISA: RefCell<Vec<(Remembered, HisaTable)>> = const { RefCell::new(Vec::new()) };
}

/// A HISA table (key to first and one-past-last row, `2 * slots` words) and its slots.
type HisaTable = Rc<(GpuBuffer<u32>, usize)>;

fn alive(remembered: &Remembered) -> bool {
    remembered.0.iter().all(|w| w.strong_count() > 0)
}

/// The value cached for exactly these columns (all of them), dead entries dropped first.
fn cached<T: Clone>(
    cache: &'static std::thread::LocalKey<RefCell<Vec<(Remembered, T)>>>,
    columns: &[Arc<GpuBuffer<u32>>],
    rows: usize,
) -> Option<T> {
    cache.with(|entries| {
        let mut entries = entries.borrow_mut();
        entries.retain(|(r, _)| alive(r));
        entries
            .iter()
            .find(|(r, _)| r.0.len() == columns.len() && same_columns(r, columns, rows))
            .map(|(_, value)| value.clone())
    })
}

fn cache_insert<T>(
    cache: &'static std::thread::LocalKey<RefCell<Vec<(Remembered, T)>>>,
    columns: &[Arc<GpuBuffer<u32>>],
    rows: usize,
    value: T,
) {
    cache.with(|entries| {
        let mut entries = entries.borrow_mut();
        entries.retain(|(r, _)| alive(r));
        entries.push((remember(columns, rows), value));
    });
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
            sorted.retain(alive);
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
        if let Some(keys) = cached(&KEYS, &self.columns, self.rows) {
            return Ok(keys);
        }
        let keys = Rc::new(self.encode_keys(device, what)?);
        cache_insert(&KEYS, &self.columns, self.rows, keys.clone());
        Ok(keys)
    }

    /// Records `keys` as the key matrix of the rows (a kernel wrote both).
    fn with_keys(self, keys: KeyMatrix) -> DeviceRelation {
        cache_insert(&KEYS, &self.columns, self.rows, Rc::new(keys));
        self
    }

    /// Whether the relation came from `@tuple_diff(_, other)` (so has no row of `other`).
    fn disjoint_from(&self, other: &DeviceRelation) -> bool {
        DISJOINT.with(|pairs| {
            let mut pairs = pairs.borrow_mut();
            pairs.retain(|(d, b)| alive(d) && alive(b));
            pairs.iter().any(|(d, b)| {
                d.0.len() == self.columns.len()
                    && same_columns(d, &self.columns, self.rows)
                    && b.0.len() == other.columns.len()
                    && same_columns(b, &other.columns, other.rows)
            })
        })
    }

    /// Records that the relation has no row of `other`.
    fn without(self, other: &DeviceRelation) -> DeviceRelation {
        DISJOINT.with(|pairs| {
            let mut pairs = pairs.borrow_mut();
            pairs.retain(|(d, b)| alive(d) && alive(b));
            pairs.push((
                remember(&self.columns, self.rows),
                remember(&other.columns, other.rows),
            ));
        });
        self
    }

    fn encode_keys(&self, device: &Device, what: &str) -> Result<KeyMatrix> {
        self.encode_key_columns(device, what, 0..self.arity())
    }

    /// The key matrix of the columns `columns` alone (their words only, in column order).
    fn encode_key_columns(
        &self,
        device: &Device,
        what: &str,
        columns: std::ops::Range<usize>,
    ) -> Result<KeyMatrix> {
        let sources: Vec<ColumnSource<'static>> = self.columns[columns]
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
        let mut commands = Commands::new(device, "gather relation");
        let columns = self
            .columns
            .iter()
            .map(|c| record_gather_column(&mut commands, c, rows, n).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        commands.submit()?;
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
    let mut commands = Commands::new(device, d.entry);
    record(&mut commands, d)?;
    commands.submit()
}

/// The binary searches of `shaders/relation.wgsl`.
const SEARCHES: &[Search] = &[
    // The first row of b not before row i of a (upper: not after it).
    Search {
        name: "first_row_of_b_from",
        params: ", i: u32, upper: bool",
        before: "compare_ab(i, mid) > select(0, -1, upper)",
    },
    // The merge path: the rows of a among the first d outputs.
    Search {
        name: "merge_diagonal",
        params: ", d: u32",
        before: "a_before_b(mid, d - mid - 1u)",
    },
    // Load-balancing search: the first probe row whose first output is after k.
    Search {
        name: "first_offset_after",
        params: ", k: u32",
        before: "idx[mid] <= k",
    },
];

/// `shaders/relation.wgsl`, specialised (rendered once).
pub(crate) fn relation_source() -> Result<&'static str> {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(source) = SOURCE.get() {
        return Ok(source);
    }
    let source = render(
        "relation.wgsl",
        RELATION_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("SEARCHES", &partition_points(SEARCHES)?),
        ],
    )?;
    Ok(SOURCE.get_or_init(|| source))
}

/// Records one dispatch into `commands` (dispatches of one call go in one submission).
fn record(commands: &mut Commands<'_>, d: Dispatch<'_>) -> Result<()> {
    if d.items == 0 {
        return Ok(());
    }
    let device = commands.device();
    let pipeline = device.pipeline(&KernelSpec {
        label: &format!("relation.{}", d.entry),
        source: relation_source()?,
        entry_point: d.entry,
        constants: &[],
        bindings: BINDINGS,
    })?;
    let uniform = device.uniform(d.entry, &d.params)?;
    commands.dispatch(
        &pipeline,
        &[&uniform, d.a, d.b, d.idx, d.out, d.flag],
        element_workgroups(d.items),
    )
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
    slots: usize,
    /// Created by the first check (no check, no buffer and nothing to read back).
    words: std::cell::OnceCell<GpuBuffer<u32>>,
}

impl Status {
    fn new(slots: usize) -> Status {
        Status {
            slots,
            words: std::cell::OnceCell::new(),
        }
    }

    fn words(&self, device: &Device) -> Result<&GpuBuffer<u32>> {
        if let Some(words) = self.words.get() {
            return Ok(words);
        }
        let words = filled(device, self.slots, u32::MAX)?;
        Ok(self.words.get_or_init(|| words))
    }

    /// The first failed sortedness check of `checks` (see [`sorted_or_error`]), reading the
    /// status words back only when some check ran.
    fn sorted_or_error(&self, device: &Device, checks: &[(usize, usize, bool)]) -> Out<()> {
        if self.words.get().is_none() {
            return Ok(());
        }
        sorted_or_error(&self.read(device)?, checks)
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
        let flag = self.words(device)?;
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
                flag: flag.raw(),
                items: r.rows,
            },
        )
    }

    fn read(&self, device: &Device) -> Result<Vec<u32>> {
        device.download(self.words(device)?)
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

/// Records `column[rows[j]]` for each j (64-bit elements) into a new buffer.
fn record_gather_column(
    commands: &mut Commands<'_>,
    column: &GpuBuffer<u32>,
    rows: &GpuBuffer<u32>,
    n: usize,
) -> Result<GpuBuffer<u32>> {
    let device = commands.device();
    let out = device.scratch::<u32>("gathered column", 2 * n)?;
    let (b, flag) = (unused(device)?, unused(device)?);
    record(
        commands,
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

/// Key words per relation column (an i64 is two order-preserving words).
const WORDS_PER_COLUMN: usize = 2;

/// The most bytes one key matrix of `@tuple_unique` may have: what one storage binding
/// holds (`HORSEC_BINDING_LIMIT` lowers it for tests).
pub fn tuple_key_bytes(device: &Device) -> u64 {
    let limits = device.limits();
    limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
}

/// The columns of a relation of `rows` rows and `arity` columns cut into consecutive groups
/// whose key matrix has at most `key_bytes` bytes (at least one column each: one column's
/// keys take as many bytes as the column itself, which a kernel binds anyway).
fn key_column_groups(rows: usize, arity: usize, key_bytes: u64) -> Vec<std::ops::Range<usize>> {
    let column_bytes = (rows * WORDS_PER_COLUMN * std::mem::size_of::<u32>()) as u64;
    let per_group = (key_bytes / column_bytes.max(1)).clamp(1, arity.max(1) as u64) as usize;
    (0..arity)
        .step_by(per_group)
        .map(|first| first..(first + per_group).min(arity))
        .collect()
}

/// `@tuple_unique` on the GPU: the distinct rows, sorted.
pub fn tuple_unique(device: &Device, r: &DeviceRelation) -> Result<DeviceRelation> {
    tuple_unique_within(device, r, tuple_key_bytes(device))
}

/// [`tuple_unique`] with no key matrix over `key_bytes` bytes.
///
/// The rows' key words (two per column) can be more than one storage binding holds while
/// every column fits one: 2·10^8 pairs of i64, the undirected edges of a 10^8-edge graph,
/// are 1.6 GB per column but 3.2 GB of keys. The columns are then cut into groups whose key
/// matrices fit (each a buffer of its own), and the rows sorted one group at a time from the
/// last (an LSD sort: each group's words sorted stably through the permutation of the groups
/// after it); a row is distinct when some group's words differ from the row before. One
/// group, the usual case, is the plain sort-unique. Device memory is the same either way.
pub fn tuple_unique_within(
    device: &Device,
    r: &DeviceRelation,
    key_bytes: u64,
) -> Result<DeviceRelation> {
    let n = r.rows;
    if n == 0 {
        return DeviceRelation::empty(device, r.arity());
    }
    let mut group_keys = Vec::new();
    let mut permutation = None;
    for group in key_column_groups(n, r.arity(), key_bytes).into_iter().rev() {
        let keys = r.encode_key_columns(device, "@tuple_unique", group)?;
        permutation = Some(order_permutation_after(
            device,
            &keys,
            &[true],
            permutation,
        )?);
        group_keys.push(keys);
    }
    let permutation = match permutation {
        Some(p) => p,
        None => iota(device, n)?,
    };
    // Flags of rows differing from their predecessor in some group: the first group's pass
    // writes them, later ones set more.
    let flags = device.zeroed::<u32>("distinct flags", n)?;
    let mut commands = Commands::new(device, "@tuple_unique distinct");
    for (g, keys) in group_keys.iter().enumerate() {
        let (b, flag) = (unused(device)?, unused(device)?);
        record(
            &mut commands,
            Dispatch {
                entry: "adjacent_distinct",
                params: Params {
                    rows_a: n,
                    words: keys.num_words(),
                    mode: u32::from(g > 0),
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
    }
    commands.submit()?;
    drop(group_keys);
    let kept = where_true(device, &flags)?;
    let rows = gather(device, &permutation, &kept)?;
    Ok(r.gather(device, &rows, kept.len())?.sorted())
}

/// The key matrices of `a` and `b` after checking that both are sorted and duplicate-free
/// (arguments 1 and 2); relations these kernels made are not checked again.
fn checked_pair(
    device: &Device,
    what: &str,
    a: &DeviceRelation,
    b: &DeviceRelation,
) -> Out<(Rc<KeyMatrix>, Rc<KeyMatrix>)> {
    let ka = a.keys(device, what)?;
    let kb = b.keys(device, what)?;
    let status = Status::new(2);
    status.check_sorted(device, a, &ka, 0, true)?;
    status.check_sorted(device, b, &kb, 1, true)?;
    status.sorted_or_error(device, &[(0, 0, true), (1, 1, true)])?;
    Ok((ka, kb))
}

/// `@tuple_diff` on the GPU: the rows of `a` not in `b`, by a binary search of each row of
/// `a` in `b` (no pass over `b`: in a semi-naive loop `a` is the new tuples, `b` all of
/// `full`). One read-back: the number of rows kept.
pub fn tuple_diff(device: &Device, a: &DeviceRelation, b: &DeviceRelation) -> Out<DeviceRelation> {
    tuple_diff_within(device, a, b, tuple_key_bytes(device))
}

/// [`tuple_diff`] with no key matrix over `key_bytes` bytes: past it, keyed by column
/// groups (`grouped.rs`).
pub fn tuple_diff_within(
    device: &Device,
    a: &DeviceRelation,
    b: &DeviceRelation,
    key_bytes: u64,
) -> Out<DeviceRelation> {
    // `a` is known to have no row of `b` (`@join_unique(…, b)` or `@tuple_diff(_, b)` made
    // it, so both are sorted and duplicate-free): nothing to search.
    if a.disjoint_from(b) {
        return Ok(a.clone());
    }
    let groups = grouped::shared_groups(a, b, key_bytes);
    if groups.len() > 1 {
        return grouped::tuple_diff(device, a, b, &groups);
    }
    let (ka, kb) = checked_pair(device, "@tuple_diff", a, b)?;
    if a.rows == 0 {
        return Ok(DeviceRelation::empty(device, a.arity())?);
    }
    if b.rows == 0 {
        return Ok(a.clone().sorted().without(b));
    }
    let missing = per_row(device, "not_in_b", &ka, &kb, a.rows)?;
    let kept = where_true(device, &missing)?;
    if kept.len() == a.rows {
        return Ok(a.clone().sorted().without(b));
    }
    Ok(a.gather(device, &kept, kept.len())?.sorted().without(b))
}

/// `@tuple_merge` on the GPU: the sorted union of `a` and `b`.
///
/// A merge path: every run of eight output rows finds where it starts in `a` and `b` by one
/// binary search along its diagonal, then merges sequentially, writing the merged key
/// matrix and each output row's source; each column is then gathered through the sources.
/// One pass over `a` (in a semi-naive loop `full`; `b` is the delta) that reads each row
/// once and writes it once, and the merged key matrix is kept for the next iteration's
/// diff and merge, so `full` is never encoded again. Rows of `b` also in `a` are dropped first (a search per
/// row of `b` and a read-back of their number), unless `b` is known to have none: it came
/// from `@tuple_diff(_, a)`, as a delta does; then the call reads nothing back.
/// Records the gather of a merge's columns: row `i` of the merged relation from `a` or
/// `fresh` (disjoint from `a`) as `sources` says, for every column (both the one-binding
/// merge and the merge by column groups).
fn record_gather_merged(
    device: &Device,
    commands: &mut Commands<'_>,
    a: &DeviceRelation,
    fresh: &DeviceRelation,
    sources: &GpuBuffer<u32>,
) -> Result<Vec<Arc<GpuBuffer<u32>>>> {
    let (na, nb) = (a.rows, fresh.rows);
    let total = na + nb;
    let mut columns = Vec::with_capacity(a.arity());
    for (column_a, column_b) in a.columns.iter().zip(&fresh.columns) {
        let out = device.scratch::<u32>("merged column", 2 * total)?;
        let flag = unused(device)?;
        record(
            commands,
            Dispatch {
                entry: "gather_merged",
                params: Params {
                    rows_a: na,
                    rows_b: nb,
                    ..Params::new(total)
                }
                .words()?,
                a: column_a.raw(),
                b: column_b.raw(),
                idx: sources.raw(),
                out: out.raw(),
                flag: flag.raw(),
                items: total,
            },
        )?;
        columns.push(Arc::new(out));
    }
    Ok(columns)
}

pub fn tuple_merge(device: &Device, a: &DeviceRelation, b: &DeviceRelation) -> Out<DeviceRelation> {
    tuple_merge_within(device, a, b, tuple_key_bytes(device))
}

/// [`tuple_merge`] with no key matrix over `key_bytes` bytes (the merged one included):
/// past it, keyed by column groups (`grouped.rs`).
pub fn tuple_merge_within(
    device: &Device,
    a: &DeviceRelation,
    b: &DeviceRelation,
    key_bytes: u64,
) -> Out<DeviceRelation> {
    let groups = grouped::shared_groups(a, b, key_bytes);
    if groups.len() > 1 {
        return grouped::tuple_merge(device, a, b, &groups);
    }
    let (ka, kb) = checked_pair(device, "@tuple_merge", a, b)?;
    if b.rows == 0 {
        return Ok(a.clone().sorted());
    }
    if a.rows == 0 {
        return Ok(b.clone().sorted());
    }
    let (fresh, fresh_keys) = if b.disjoint_from(a) {
        (b.clone(), kb)
    } else {
        // The rows of b that a lacks; the two are then disjoint.
        let missing = per_row(device, "not_in_b", &kb, &ka, b.rows)?;
        let kept = where_true(device, &missing)?;
        if kept.is_empty() {
            return Ok(a.clone().sorted());
        }
        let keys = gather_rows(device, &kb, &kept)?;
        (b.gather(device, &kept, kept.len())?, Rc::new(keys))
    };
    let (na, nb) = (a.rows, fresh.rows);
    let total = na + nb;
    let words = ka.num_words();
    let mut commands = Commands::new(device, "@tuple_merge");
    // The merged key matrix and each output row's source, by merge path; then each column
    // gathered through the sources (reads of a's columns in order, mostly).
    let merged_keys = device.scratch::<u32>("merged keys", words * total)?;
    let sources = device.scratch::<u32>("merge sources", total)?;
    let idx = unused(device)?;
    record(
        &mut commands,
        Dispatch {
            entry: "merge_path",
            params: Params {
                rows_a: na,
                rows_b: nb,
                words,
                ..Params::new(total)
            }
            .words()?,
            a: ka.words.raw(),
            b: fresh_keys.words.raw(),
            idx: idx.raw(),
            out: merged_keys.raw(),
            flag: sources.raw(),
            items: total.div_ceil(MERGE_ITEMS),
        },
    )?;
    let columns = record_gather_merged(device, &mut commands, a, &fresh, &sources)?;
    commands.submit()?;
    let keys = KeyMatrix {
        words: merged_keys,
        rows: total,
        columns: ka.columns.clone(),
    };
    Ok(DeviceRelation {
        columns,
        rows: total,
    }
    .sorted()
    .with_keys(keys))
}

/// The number of slots of the HISA table of `rows` build rows: a power of two with load
/// factor at most 0.8 (distinct keys are at most the rows), and at least one slot empty.
fn hisa_slots(rows: usize) -> usize {
    (rows + rows / 4 + 1).next_power_of_two().max(2)
}

/// The HISA table of `build` (keys `kb`): built on first use, then kept while the build
/// relation lives, so a relation of an earlier stratum probed by every iteration of a loop
/// is indexed once.
fn hisa_table(device: &Device, build: &DeviceRelation, kb: &KeyMatrix) -> Result<HisaTable> {
    if let Some(table) = cached(&HISA, &build.columns, build.rows) {
        return Ok(table);
    }
    let rows_b = build.rows;
    let slots = hisa_slots(rows_b);
    let table = filled(device, 2 * slots, EMPTY)?;
    let words = kb.num_words();
    let mut commands = Commands::new(device, "HISA build");
    for entry in ["hisa_insert", "hisa_end"] {
        let (a, idx, out) = (unused(device)?, unused(device)?, unused(device)?);
        record(
            &mut commands,
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
    commands.submit()?;
    let table = Rc::new((table, slots));
    cache_insert(&HISA, &build.columns, build.rows, table.clone());
    Ok(table)
}

/// The probe and build sides of a HISA join (see `hisa_table`), as its count pass reads them.
pub(super) struct JoinSides<'a> {
    pub probe: &'a KeyMatrix,
    pub build: &'a KeyMatrix,
    pub table: &'a GpuBuffer<u32>,
    pub slots: usize,
    pub rows: usize,
    pub rows_b: usize,
}

/// What [`record_join_counts`] leaves on the device: each probe row's number of matches, its
/// first match in the build side, and the exclusive scan of the counts (where its pairs start).
pub(super) struct JoinCounts {
    pub counts: GpuBuffer<u32>,
    pub first: GpuBuffer<u32>,
    pub offsets: GpuBuffer<u32>,
}

/// Records a join's count pass, the scan of the counts, and two status words: `wrapped`
/// (`u32::MAX` unless the scan wrapped past 2^32, which leaves it not monotonic) and
/// `wrapped + 1` (the number of pairs). Shared by `@sorted_join` and `@join_unique`.
pub(super) fn record_join_counts(
    commands: &mut Commands<'_>,
    sides: JoinSides<'_>,
    status_words: &GpuBuffer<u32>,
    wrapped: u32,
) -> Result<JoinCounts> {
    let device = commands.device();
    let rows = sides.rows;
    let counts = device.scratch::<u32>("join counts", rows)?;
    let first = device.scratch::<u32>("join first rows", rows)?;
    record(
        commands,
        Dispatch {
            entry: "join_count",
            params: Params {
                rows_a: rows,
                rows_b: sides.rows_b,
                words: sides.build.num_words(),
                slots: sides.slots,
                ..Params::new(rows)
            }
            .words()?,
            a: sides.probe.words.raw(),
            b: sides.build.words.raw(),
            idx: sides.table.raw(),
            out: counts.raw(),
            flag: first.raw(),
            items: rows,
        },
    )?;
    let offsets = record_scan(commands, counts.raw(), rows, SUM_VALUES)?;
    // Counts are u32: a total past 2^32 wraps the scan, which is then not monotonic.
    for (entry, slot, items) in [
        ("check_monotonic", wrapped, rows),
        ("store_total", wrapped + 1, 1),
    ] {
        let (a, b, out) = (unused(device)?, unused(device)?, unused(device)?);
        record(
            commands,
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
                flag: status_words.raw(),
                items,
            },
        )?;
    }
    Ok(JoinCounts {
        counts,
        first,
        offsets,
    })
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
        let status = Status::new(1);
        status.check_sorted(device, build, &kb, 0, false)?;
        status.sorted_or_error(device, &[(0, 1, false)])?;
        return Ok(DeviceRelation::empty(device, 2)?);
    }
    let kp = probe.keys(device, "@sorted_join")?;
    // Status: 0 the build side's order, 1 a wrapped scan, 2 the number of pairs.
    let status = Status::new(3);
    status.check_sorted(device, build, &kb, 0, false)?;
    let status_words = status.words(device)?;
    let hisa = hisa_table(device, build, &kb)?;
    let (table, slots) = (&hisa.0, hisa.1);
    let mut commands = Commands::new(device, "@sorted_join");
    // The counts stay alive until the pairs are written, as the other buffers of the join.
    let JoinCounts {
        counts: _counts,
        first,
        offsets,
    } = record_join_counts(
        &mut commands,
        JoinSides {
            probe: &kp,
            build: &kb,
            table,
            slots,
            rows,
            rows_b,
        },
        status_words,
        1,
    )?;
    commands.submit()?;
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
    let probe_rows = device.scratch::<u32>("join probe rows", 2 * total)?;
    let build_rows = device.scratch::<u32>("join build rows", 2 * total)?;
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
