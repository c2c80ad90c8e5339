//! Key matrices: the columns of a `@order`/`@group`/`@unique`/`@member`/`@join_index`
//! argument turned into u32 key words on the GPU (see `shaders/keys.wgsl`), plus the small
//! element-wise kernels the library kernels share (gather, scatter, fill, widen, …).
//!
//! A key matrix holds `num_words` words per row, word-major (`word * rows + row`), word 0
//! most significant. Each column gives one word (32-bit types) or two (64-bit types, high
//! word first). Unsigned word order is value order and word equality is value equality, the
//! same as the CPU builtins' keys (`cpu/keys.rs`), so GPU results equal the CPU's.
//!
//! What runs where: the raw column is uploaded as it is stored (i32/i64/f64/f32 bits,
//! string codes; `bool`, `char`, `i8`, `i16` are widened to u32 words on upload because WGSL
//! has no 8- or 16-bit storage), and the encoding into key bits runs on the GPU. Two string
//! columns with *different* dictionaries are compared through a merged dictionary: the merge
//! is per distinct string and runs on the CPU (`StrDict::merge`, in
//! [`paired_columns_merging_dictionaries_on_cpu`]); re-coding the rows runs on the GPU.

use std::borrow::Cow;
use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::device::Device;
use super::error::{GpuError, Result};
use super::pipeline::{BindingKind, Commands, KernelSpec, Pipeline};
use super::template::{rendered, workgroup_size_text};
use crate::keys::{domain_of_type, Domain};
use crate::types::Type;
use crate::value::{DeviceVector, StrDict, Value, Vector};

/// `shaders/keys.wgsl`: key encoding and element-wise helpers.
pub const KEYS_WGSL: &str = include_str!("../../../shaders/keys.wgsl");
/// `shaders/min_max.wgsl`: minimum and maximum of one key word.
pub const MIN_MAX_WGSL: &str = include_str!("../../../shaders/min_max.wgsl");

/// Rows each workgroup of the min/max pass reduces (grid-stride).
const MIN_MAX_ROWS_PER_WORKGROUP: usize = 4096;

/// The marker for "no slot / no row" in u32 index buffers.
pub const NONE: u32 = u32::MAX;

const KEYS_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
];

/// The keys module, specialised (rendered once).
pub fn keys_source() -> Result<&'static str> {
    rendered(
        "keys.wgsl",
        KEYS_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

/// The min/max module, specialised (rendered once).
pub fn min_max_source() -> Result<&'static str> {
    rendered(
        "min_max.wgsl",
        MIN_MAX_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

/// Eight u32 kernel parameters (every library kernel's `Params` uniform fits in them).
pub(crate) fn params(
    device: &Device,
    label: &str,
    values: [u32; 8],
) -> Result<crate::gpu::Uniform> {
    device.uniform(label, &values)
}

/// A one-word buffer to bind where an entry point leaves a binding unused (wgpu forbids one
/// buffer in a read and a read-write binding of the same dispatch, so each gets its own).
/// Nothing reads it, so it is not cleared: a join binds some fifteen of these, and a clear
/// is a command of its own on the device.
pub(crate) fn unused(device: &Device) -> Result<GpuBuffer<u32>> {
    device.scratch::<u32>("unused binding", 1)
}

fn keys_pipeline(device: &Device, entry: &str) -> Result<Arc<Pipeline>> {
    let source = keys_source()?;
    device.pipeline(&KernelSpec {
        label: &format!("keys.{entry}"),
        source,
        entry_point: entry,
        constants: &[],
        bindings: KEYS_BINDINGS,
    })
}

/// Records one dispatch of a `keys.wgsl` entry point over `items` invocations.
pub(crate) fn record_keys(
    commands: &mut Commands<'_>,
    entry: &str,
    values: [u32; 8],
    src: &wgpu::Buffer,
    aux: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    items: usize,
) -> Result<()> {
    let device = commands.device();
    let pipeline = keys_pipeline(device, entry)?;
    let uniform = params(device, entry, values)?;
    commands.dispatch(
        &pipeline,
        &[&uniform, src, aux, dst],
        element_workgroups(items),
    )
}

fn u32_len(what: &str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| GpuError::Unsupported {
        what: what.to_string(),
        message: format!("{n} elements do not fit u32 indexes"),
    })
}

/// `values[indexes[j]]` for each j.
pub fn gather(
    device: &Device,
    values: &GpuBuffer<u32>,
    indexes: &GpuBuffer<u32>,
) -> Result<GpuBuffer<u32>> {
    let n = indexes.len();
    // Every element is written: no clear to record and run first.
    let out = device.scratch_named::<u32>(&|| "gather output".to_string(), n)?;
    let mut commands = Commands::new(device, "gather");
    record_keys(
        &mut commands,
        "gather",
        [u32_len("gather", n)?, 0, 0, 0, 0, 0, 0, 0],
        values.raw(),
        indexes.raw(),
        out.raw(),
        n,
    )?;
    commands.submit()?;
    Ok(out)
}

/// The `groups + 1` offsets of the cells of `sorted`, ascending values below `groups`: cell
/// `g` is `sorted[offsets[g] .. offsets[g + 1]]`, empty when no value is `g`. Each offset is
/// written once from the sorted values (no counting atomics, no scan).
pub fn sorted_offsets(
    device: &Device,
    sorted: &GpuBuffer<u32>,
    groups: usize,
) -> Result<GpuBuffer<u32>> {
    let n = sorted.len();
    let out = device.zeroed::<u32>("sorted offsets", groups + 1)?;
    let aux = unused(device)?;
    let mut commands = Commands::new(device, "sorted_offsets");
    record_keys(
        &mut commands,
        "sorted_offsets",
        [
            u32_len("sorted_offsets", n)?,
            0,
            u32_len("sorted_offsets", groups)?,
            0,
            0,
            0,
            0,
            0,
        ],
        sorted.raw(),
        aux.raw(),
        out.raw(),
        n + 1,
    )?;
    commands.submit()?;
    Ok(out)
}

/// `flags[j] != not_value` as 0/1 words: a bool vector in the kernels' layout.
pub fn flag_words(
    device: &Device,
    flags: &GpuBuffer<u32>,
    not_value: u32,
) -> Result<GpuBuffer<u32>> {
    let n = flags.len();
    let out = device.zeroed::<u32>("flags", n)?;
    let aux = unused(device)?;
    let mut commands = Commands::new(device, "flags");
    record_keys(
        &mut commands,
        "flags",
        [u32_len("flags", n)?, 0, not_value, 0, 0, 0, 0, 0],
        flags.raw(),
        aux.raw(),
        out.raw(),
        n,
    )?;
    commands.submit()?;
    Ok(out)
}

/// `0, 1, …, n - 1`.
pub fn iota(device: &Device, n: usize) -> Result<GpuBuffer<u32>> {
    let out = device.zeroed::<u32>("iota", n)?;
    let (a, b) = (unused(device)?, unused(device)?);
    let mut commands = Commands::new(device, "iota");
    let values = [u32_len("iota", n)?, 0, 0, 0, 0, 0, 0, 0];
    record_keys(
        &mut commands,
        "iota",
        values,
        a.raw(),
        b.raw(),
        out.raw(),
        n,
    )?;
    commands.submit()?;
    Ok(out)
}

/// `n` copies of `value`.
pub fn filled(device: &Device, n: usize, value: u32) -> Result<GpuBuffer<u32>> {
    let out = device.zeroed::<u32>("fill", n)?;
    let (a, b) = (unused(device)?, unused(device)?);
    let mut commands = Commands::new(device, "fill");
    let values = [u32_len("fill", n)?, 0, value, 0, 0, 0, 0, 0];
    record_keys(
        &mut commands,
        "fill",
        values,
        a.raw(),
        b.raw(),
        out.raw(),
        n,
    )?;
    commands.submit()?;
    Ok(out)
}

/// Downloads u32 index buffers as one vector of i64, widened on the GPU (no 64-bit shader
/// feature needed: each i64 is written as two little-endian words).
pub fn download_as_i64(device: &Device, parts: &[&GpuBuffer<u32>]) -> Result<Vec<i64>> {
    let out = widen_to_i64(device, parts)?;
    device.download(&out)
}

/// The u32 `parts` (row indexes, positions) one after another, widened to i64 on the GPU:
/// the layout of an i64 vector, ready for the next kernel.
pub fn widen_to_i64(device: &Device, parts: &[&GpuBuffer<u32>]) -> Result<GpuBuffer<i64>> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let out = device.zeroed::<i64>("widened", total)?;
    let aux = unused(device)?;
    let mut commands = Commands::new(device, "widen");
    let mut at = 0usize;
    for part in parts {
        let values = [
            u32_len("widen", part.len())?,
            0,
            u32_len("widen", at)?,
            0,
            0,
            0,
            0,
            0,
        ];
        record_keys(
            &mut commands,
            "widen",
            values,
            part.raw(),
            aux.raw(),
            out.raw(),
            part.len(),
        )?;
        at += part.len();
    }
    commands.submit()?;
    Ok(out)
}

/// Downloads `flags[i] != not_value` as bools, packed to bytes on the GPU first.
pub fn download_as_bools(
    device: &Device,
    flags: &GpuBuffer<u32>,
    not_value: u32,
) -> Result<Vec<bool>> {
    let n = flags.len();
    let packed = device.zeroed::<u32>("packed bools", n.div_ceil(4))?;
    let aux = unused(device)?;
    let mut commands = Commands::new(device, "pack_bools");
    let values = [u32_len("pack_bools", n)?, 0, not_value, 0, 0, 0, 0, 0];
    record_keys(
        &mut commands,
        "pack_bools",
        values,
        flags.raw(),
        aux.raw(),
        packed.raw(),
        n.div_ceil(4),
    )?;
    commands.submit()?;
    let words = device.download(&packed)?;
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    // WGSL has no byte storage: the bytes come back packed in words, and Vec<bool> is built
    // from them here (a conversion of the read-back representation, one byte per element).
    Ok(bytes.iter().take(n).map(|&b| b != 0).collect())
}

/// The minimum and maximum of every word of a key matrix, `(min, max)` per word, most
/// significant first: one dispatch per word recorded into one submission, one read back.
pub fn word_min_max(device: &Device, keys: &KeyMatrix) -> Result<Vec<(u32, u32)>> {
    let words = keys.num_words();
    if keys.rows == 0 || words == 0 {
        return Ok(vec![(0, 0); words]);
    }
    let mut commands = Commands::new(device, "min_max");
    let result = record_word_min_max(&mut commands, keys)?;
    commands.submit()?;
    let both = device.download(&result)?;
    Ok(both.chunks_exact(2).map(|w| (w[0], w[1])).collect())
}

/// Records [`word_min_max`] without reading it back: the returned buffer holds `min, max`
/// per word once the commands run (`u32::MAX, 0` for a matrix without rows).
pub(crate) fn record_word_min_max(
    commands: &mut Commands<'_>,
    keys: &KeyMatrix,
) -> Result<GpuBuffer<u32>> {
    let device = commands.device();
    let (rows, words) = (keys.rows, keys.num_words());
    let starts: Vec<u32> = std::iter::repeat_n([u32::MAX, 0u32], words)
        .flatten()
        .collect();
    let result = device.upload("min max", &starts)?;
    if rows == 0 {
        return Ok(result);
    }
    let source = min_max_source()?;
    let pipeline = device.pipeline(&KernelSpec {
        label: "min_max.min_max",
        source,
        entry_point: "min_max",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
        ],
    })?;
    for word in 0..words {
        let offset = u32_len("min_max", word * rows)?;
        let uniform = params(
            device,
            "min max params",
            [
                u32_len("min_max", rows)?,
                offset,
                u32_len("min_max", 2 * word)?,
                0,
                0,
                0,
                0,
                0,
            ],
        )?;
        // Grid-stride, a few thousand words per workgroup: one pair of global atomics each.
        let workgroups = rows.div_ceil(MIN_MAX_ROWS_PER_WORKGROUP).min(1024);
        commands.dispatch(
            &pipeline,
            &[&uniform, keys.words.raw(), result.raw()],
            workgroups as u64,
        )?;
    }
    Ok(result)
}

/// How `encode` turns one stored element into key words; the discriminant is the shader's
/// `MODE_*` constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Unsigned 32-bit values as they are (bool, char, string codes): one word.
    U32 = 0,
    /// i32 with the sign bit flipped: one word.
    I32 = 1,
    /// i32 sign-extended to an i64 key: two words.
    I32Wide = 2,
    /// Unsigned 32-bit values zero-extended to 64 bits: two words.
    U32Wide = 3,
    /// i64 (stored as two words) with the sign bit flipped: two words.
    I64 = 4,
    /// f64 by the total-order trick: two words.
    F64 = 5,
    /// f32 by the total-order trick: one word.
    F32 = 6,
    /// String codes re-coded through a map into a merged dictionary: one word.
    Remap = 7,
    /// i32 as the f64 it equals, by the total-order trick: two words.
    I32AsF64 = 8,
    /// Unsigned 32-bit values (bool, char) as the f64 they equal: two words.
    U32AsF64 = 9,
}

impl Encoding {
    pub fn words(self) -> usize {
        match self {
            Encoding::I32Wide
            | Encoding::U32Wide
            | Encoding::I64
            | Encoding::F64
            | Encoding::I32AsF64
            | Encoding::U32AsF64 => 2,
            _ => 1,
        }
    }
}

/// One column ready to upload: its stored words and how to encode them.
pub struct ColumnSource<'a> {
    /// The stored words on the host, uploaded by [`encode_keys`]; unused with `resident`.
    pub data: Cow<'a, [u32]>,
    /// The stored words already on the device (a kernel's output): encoded from there.
    pub resident: Option<Arc<GpuBuffer<u32>>>,
    pub rows: usize,
    pub encoding: Encoding,
    /// The code map for [`Encoding::Remap`].
    pub remap: Option<Vec<u32>>,
}

fn unsupported(what: &str, message: String) -> GpuError {
    GpuError::Unsupported {
        what: what.to_string(),
        message,
    }
}

/// The stored words of `v` and the encoding of its own keys (the CPU's `column_keys`).
pub fn own_column<'a>(what: &str, v: &'a Vector) -> Result<ColumnSource<'a>> {
    let rows = v.len();
    let (data, encoding): (Cow<'a, [u32]>, Encoding) = match v {
        Vector::Bool(x) => (x.iter().map(|&b| u32::from(b)).collect(), Encoding::U32),
        Vector::Char(x) => (x.iter().map(|&c| u32::from(c)).collect(), Encoding::U32),
        Vector::I8(x) => (
            x.iter().map(|&e| i32::from(e) as u32).collect(),
            Encoding::I32,
        ),
        Vector::I16(x) => (
            x.iter().map(|&e| i32::from(e) as u32).collect(),
            Encoding::I32,
        ),
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => (
            Cow::Borrowed(bytemuck::cast_slice(x.as_slice())),
            Encoding::I32,
        ),
        Vector::I64(x) | Vector::Dt(x) => (
            Cow::Borrowed(bytemuck::cast_slice(x.as_slice())),
            Encoding::I64,
        ),
        Vector::F32(x) => (
            Cow::Borrowed(bytemuck::cast_slice(x.as_slice())),
            Encoding::F32,
        ),
        Vector::F64(x) => (
            Cow::Borrowed(bytemuck::cast_slice(x.as_slice())),
            Encoding::F64,
        ),
        Vector::Sym(s) | Vector::Str(s) => (Cow::Borrowed(s.codes.as_slice()), Encoding::U32),
        Vector::Complex(_) => {
            return Err(unsupported(
                what,
                format!("cannot use {} values as keys", v.ty()),
            ))
        }
    };
    Ok(ColumnSource {
        data,
        resident: None,
        rows,
        encoding,
        remap: None,
    })
}

/// The encoding of a device vector's own keys: its words are in the kernels' layout, which
/// is the layout [`own_column`] uploads, so they are encoded where they are.
pub fn device_column(what: &str, v: &DeviceVector) -> Result<ColumnSource<'static>> {
    let encoding = match v.ty {
        Type::Bool | Type::Char | Type::Sym | Type::Str => Encoding::U32,
        Type::I8 | Type::I16 | Type::I32 => Encoding::I32,
        Type::Month | Type::Date | Type::Minute | Type::Second | Type::Time => Encoding::I32,
        Type::I64 | Type::Dt => Encoding::I64,
        Type::F32 => Encoding::F32,
        Type::F64 => Encoding::F64,
        ref other => {
            return Err(unsupported(
                what,
                format!("cannot use {other} values as keys"),
            ))
        }
    };
    Ok(ColumnSource {
        data: Cow::Borrowed(&[]),
        resident: Some(v.buffer.clone()),
        rows: v.len,
        encoding,
        remap: None,
    })
}

/// Widens a one-word integer encoding to its 64-bit form.
fn widened(column: ColumnSource<'_>) -> ColumnSource<'_> {
    let encoding = match column.encoding {
        Encoding::U32 => Encoding::U32Wide,
        Encoding::I32 => Encoding::I32Wide,
        other => other,
    };
    ColumnSource { encoding, ..column }
}

/// A key column as the pairing rules see it: its type, its dictionary (sym/str) and its
/// words, on the host or already on the device. Built by [`host_key`] or [`device_key`].
pub struct KeyColumn<'a> {
    pub ty: Type,
    pub dict: Option<Arc<StrDict>>,
    /// Where the elements are (for conversions that need them on the host).
    origin: Origin<'a>,
    /// None for a type that cannot be a key (complex): pairing says so.
    source: Option<ColumnSource<'a>>,
}

impl KeyColumn<'_> {
    pub fn rows(&self) -> usize {
        self.source.as_ref().map_or(0, |s| s.rows)
    }

    /// The column owning its host words (for a vector that does not outlive the call).
    pub fn into_owned(self) -> KeyColumn<'static> {
        KeyColumn {
            ty: self.ty,
            dict: self.dict,
            origin: match self.origin {
                Origin::Host(v) => Origin::Host(Cow::Owned(v.into_owned())),
                Origin::Device(d) => Origin::Device(d),
            },
            source: self.source.map(|s| ColumnSource {
                data: Cow::Owned(s.data.into_owned()),
                resident: s.resident,
                rows: s.rows,
                encoding: s.encoding,
                remap: s.remap,
            }),
        }
    }
}

/// Where a key column's elements are.
enum Origin<'a> {
    Host(Cow<'a, Vector>),
    Device(DeviceVector),
}

/// A host vector as a key column.
pub fn host_key<'a>(what: &str, v: &'a Vector) -> KeyColumn<'a> {
    KeyColumn {
        ty: v.ty(),
        dict: v.as_strings().map(|s| s.dict.clone()),
        origin: Origin::Host(Cow::Borrowed(v)),
        source: own_column(what, v).ok(),
    }
}

/// A device vector as a key column (its words are encoded where they are).
pub fn device_key(what: &str, v: &DeviceVector) -> KeyColumn<'static> {
    KeyColumn {
        ty: v.ty.clone(),
        dict: v.dict.clone(),
        origin: Origin::Device(v.clone()),
        source: device_column(what, v).ok(),
    }
}

/// True when one of `a`, `b` is f64 and the other a 32-bit (or narrower) integer.
fn narrow_integer_against_f64(a: &Type, b: &Type) -> bool {
    let narrow_integer = |t: &Type| matches!(t, Type::Bool | Type::I8 | Type::I16 | Type::I32);
    let f64s = |t: &Type| matches!(t, Type::F64);
    (narrow_integer(a) && f64s(b)) || (f64s(a) && narrow_integer(b))
}

/// A 32-bit integer column re-encoded as f64 keys (other encodings unchanged).
fn integer_as_f64(column: ColumnSource<'_>) -> ColumnSource<'_> {
    let encoding = match column.encoding {
        Encoding::I32 => Encoding::I32AsF64,
        Encoding::U32 => Encoding::U32AsF64,
        other => other,
    };
    ColumnSource { encoding, ..column }
}

/// Two columns encoded in one common domain, as the CPU's `paired_keys`: equal key words
/// mean equal values across the two and word order is value order. Integers of different
/// widths are both widened to 64-bit keys; temporal types pair only with themselves; reals
/// pair with reals of the same width, a narrow integer with an f64 through the encode kernel,
/// and other pairs of reals through the promoted type (converted before upload); strings through a merged dictionary when the two
/// dictionaries differ — the merge is per distinct string and runs on the CPU.
pub fn paired_columns_merging_dictionaries_on_cpu<'a>(
    what: &str,
    a: &'a Vector,
    b: &'a Vector,
) -> Result<(ColumnSource<'a>, ColumnSource<'a>)> {
    paired_keys_merging_dictionaries_on_cpu(None, what, host_key(what, a), host_key(what, b))
}

/// [`paired_columns_merging_dictionaries_on_cpu`] of key columns on the host or the device:
/// the codes of strings are re-coded by the encode kernel, on the device.
pub fn paired_keys_merging_dictionaries_on_cpu<'a>(
    device: Option<&Device>,
    what: &str,
    a: KeyColumn<'a>,
    b: KeyColumn<'a>,
) -> Result<(ColumnSource<'a>, ColumnSource<'a>)> {
    let cannot = || unsupported(what, format!("cannot compare {} with {}", a.ty, b.ty));
    let sources = |a: Option<ColumnSource<'a>>,
                   b: Option<ColumnSource<'a>>,
                   ta: &Type,
                   tb: &Type| {
        let a = a.ok_or_else(|| unsupported(what, format!("cannot use {ta} values as keys")))?;
        let b = b.ok_or_else(|| unsupported(what, format!("cannot use {tb} values as keys")))?;
        Ok::<_, GpuError>((a, b))
    };
    let (ta, tb) = (a.ty.clone(), b.ty.clone());
    match (domain_of_type(&ta), domain_of_type(&tb)) {
        (Domain::Integer, Domain::Integer) => {
            let (ca, cb) = sources(a.source, b.source, &ta, &tb)?;
            if ca.encoding == cb.encoding {
                Ok((ca, cb))
            } else {
                Ok((widened(ca), widened(cb)))
            }
        }
        (Domain::Other, Domain::Other) if ta == tb => sources(a.source, b.source, &ta, &tb),
        (Domain::Float, Domain::Float) if ta == tb => sources(a.source, b.source, &ta, &tb),
        // A 32-bit integer against an f64: the integer side is keyed as the f64 it equals
        // (exact), converted by the encode kernel on the GPU.
        (Domain::Integer, Domain::Float) | (Domain::Float, Domain::Integer)
            if narrow_integer_against_f64(&ta, &tb) =>
        {
            let (ca, cb) = sources(a.source, b.source, &ta, &tb)?;
            Ok((integer_as_f64(ca), integer_as_f64(cb)))
        }
        // Other pairs of reals (bool or an integer against an f32, i64 against f64, f32
        // against f64): both sides converted to the promoted type before upload, as the CPU
        // backend compares them (the type rules accept every pair of reals). The conversion
        // is per row on the host: a device column is read back for it.
        (Domain::Integer | Domain::Float, Domain::Integer | Domain::Float) => {
            let common = Type::promote(&ta, &tb).ok_or_else(cannot)?;
            let promoted = |origin: &Origin<'_>| -> Result<ColumnSource<'static>> {
                let host;
                let v: &Vector = match origin {
                    Origin::Host(v) => v,
                    Origin::Device(d) => {
                        let device = device.ok_or_else(|| {
                            unsupported(what, "a device column without its device".to_string())
                        })?;
                        host = match crate::engine::read_back(device, &Value::Device(d.clone())) {
                            Ok(Value::Vector(v)) => v,
                            Ok(_) => return Err(cannot()),
                            Err(e) => return Err(unsupported(what, e.message)),
                        };
                        &host
                    }
                };
                let cast = v
                    .cast_real(&common)
                    .map_err(|e| unsupported(what, e.message))?;
                let column = own_column(what, &cast)?;
                Ok(ColumnSource {
                    data: Cow::Owned(column.data.into_owned()),
                    resident: None,
                    rows: column.rows,
                    encoding: column.encoding,
                    remap: column.remap,
                })
            };
            Ok((promoted(&a.origin)?, promoted(&b.origin)?))
        }
        (Domain::Strings, Domain::Strings) => {
            let (Some(da), Some(db)) = (a.dict.clone(), b.dict.clone()) else {
                return Err(cannot());
            };
            let (mut ca, mut cb) = sources(a.source, b.source, &ta, &tb)?;
            if !Arc::ptr_eq(&da, &db) && da != db {
                let merge = StrDict::merge(&[&da, &db]);
                let mut maps = merge.maps.into_iter();
                ca.encoding = Encoding::Remap;
                ca.remap = maps.next();
                cb.encoding = Encoding::Remap;
                cb.remap = maps.next();
            }
            Ok((ca, cb))
        }
        _ => Err(cannot()),
    }
}

/// Key words of rows on the GPU (see the module documentation for the layout).
#[derive(Debug)]
pub struct KeyMatrix {
    pub words: GpuBuffer<u32>,
    pub rows: usize,
    /// For each key column, its first word and number of words.
    pub columns: Vec<(usize, usize)>,
}

impl KeyMatrix {
    pub fn num_words(&self) -> usize {
        self.columns.iter().map(|&(_, n)| n).sum()
    }
}

/// Uploads columns (all of `rows` elements) and encodes them into a key matrix on the GPU.
pub fn encode_keys(
    device: &Device,
    what: &str,
    rows: usize,
    columns: &[ColumnSource<'_>],
) -> Result<KeyMatrix> {
    if let Some(c) = columns.iter().find(|c| c.rows != rows) {
        return Err(unsupported(
            what,
            format!("key columns have different lengths ({rows} vs {})", c.rows),
        ));
    }
    let mut layout = Vec::with_capacity(columns.len());
    let mut next = 0usize;
    for c in columns {
        layout.push((next, c.encoding.words()));
        next += c.encoding.words();
    }
    let words = device.zeroed::<u32>("key matrix", next.saturating_mul(rows))?;
    let rows32 = u32_len(what, rows)?;
    let mut uploads = Vec::with_capacity(2 * columns.len());
    for c in columns {
        let data = match &c.resident {
            Some(buffer) => buffer.clone(),
            None => Arc::new(device.upload("key column", &c.data)?),
        };
        let remap = match &c.remap {
            Some(map) => device.upload("key remap", map)?,
            None => unused(device)?,
        };
        uploads.push((data, remap));
    }
    let mut commands = Commands::new(device, "encode keys");
    for ((c, &(first, _)), (data, remap)) in columns.iter().zip(&layout).zip(&uploads) {
        let values = [
            rows32,
            c.encoding as u32,
            u32_len(what, first * rows)?,
            rows32,
            0,
            0,
            0,
            0,
        ];
        record_keys(
            &mut commands,
            "encode",
            values,
            data.raw(),
            remap.raw(),
            words.raw(),
            rows,
        )?;
    }
    commands.submit()?;
    Ok(KeyMatrix {
        words,
        rows,
        columns: layout,
    })
}

/// The rows `rows` (indexes into `keys`) of a key matrix, as a key matrix of their own.
pub fn gather_rows(device: &Device, keys: &KeyMatrix, rows: &GpuBuffer<u32>) -> Result<KeyMatrix> {
    let n = rows.len();
    let num_words = keys.num_words();
    let words = device.zeroed::<u32>("gathered keys", num_words.saturating_mul(n))?;
    let mut commands = Commands::new(device, "gather rows");
    let values = [
        u32_len("gather_rows", n)?,
        0,
        u32_len("gather_rows", num_words)?,
        u32_len("gather_rows", keys.rows)?,
        0,
        0,
        0,
        0,
    ];
    record_keys(
        &mut commands,
        "gather_rows",
        values,
        keys.words.raw(),
        rows.raw(),
        words.raw(),
        n,
    )?;
    commands.submit()?;
    Ok(KeyMatrix {
        words,
        rows: n,
        columns: keys.columns.clone(),
    })
}

pub(crate) fn check_len(what: &str, n: usize) -> Result<u32> {
    u32_len(what, n)
}

#[cfg(test)]
mod tests {
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    fn validate(name: &str, source: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{name} does not parse:\n{}", e.emit_to_string(source)));
        Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name} is invalid:\n{}", e.emit_to_string(source)));
    }

    #[test]
    fn library_shaders_validate() {
        let wg = super::workgroup_size_text();
        let substitutions = [("WORKGROUP_SIZE", wg.as_str())];
        for (name, text) in [
            ("keys.wgsl", super::KEYS_WGSL),
            ("min_max.wgsl", super::MIN_MAX_WGSL),
            ("hash.wgsl", super::super::hash::HASH_WGSL),
            ("join.wgsl", super::super::join::JOIN_WGSL),
            (
                "index_assign.wgsl",
                super::super::library::INDEX_ASSIGN_WGSL,
            ),
            ("like.wgsl", super::super::library::LIKE_WGSL),
        ] {
            let source =
                super::super::template::render(name, text, &substitutions).expect("renders");
            validate(name, &source);
        }
        validate(
            "small_sort.wgsl",
            super::super::order::small_sort_source(4096).expect("renders"),
        );
        // Modules with binary searches rendered in (`template::partition_points`).
        for (name, source) in [
            ("relation.wgsl", super::super::relation::relation_source()),
            ("multiway.wgsl", super::super::multiway::join_source()),
            ("multiway_trie.wgsl", super::super::multiway::trie_source()),
        ] {
            let source = source.expect("renders");
            validate(name, source);
        }
    }
}
