//! The value-level entry point of the GPU library kernels: [`run_library`] takes a builtin
//! and its arguments as the CPU builtins do, uploads what it needs, runs the kernels, and
//! downloads the result as a [`Value`] equal to the CPU builtin's.
//!
//! Covered: `@order`, `@group`, `@unique`, `@member`, `@index_of`, `@join_index`,
//! `@index_a`, `@like`, `@sub_string`, and `@each(@unique, l)` of a flat list
//! ([`each_unique`]). Anything else, and argument types without a GPU encoding, is an error
//! naming the builtin (`@member: comparing i32 with f64 needs …`), never a CPU fallback.
//!
//! Work on the CPU, all of it per distinct string or per argument, never per row:
//! merging two string dictionaries (`keys::paired_keys_merging_dictionaries_on_cpu`), and
//! building `@sub_string`'s new dictionary ([`sub_string_dictionary_on_cpu`]). Uploads widen
//! `bool`/`char`/`i8`/`i16` to u32 words and downloads narrow them back (WGSL has no 8- or
//! 16-bit storage); offsets of `@group`'s list become `usize`.

use std::borrow::Cow;
use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::dense_group::KeyRanges;
use super::device::{CachedDictionary, Device};
use super::error::{GpuError, Result as GpuResult};
use super::group_aggregate::{group_aggregate, AggregatePath, AggregateSpec, Ranking, ValueColumn};
use super::hash::{
    each_unique_rows, group, index_of_rows, member_slots, unique_rows, GroupStrategy,
};
use super::join::{join_index, JoinKeys};
use super::keys::{
    check_len, device_column, device_key, download_as_i64, encode_keys, flag_words, gather,
    host_key, own_column, paired_keys_merging_dictionaries_on_cpu, params, widen_to_i64,
    ColumnSource, Encoding, KeyColumn, NONE,
};
use super::order::order_permutation;
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::template::{render, workgroup_size_text};
use crate::args::group::{check_value_lengths, group_aggregate_ops};
use crate::args::join::{join_arguments_with, JoinArguments};
use crate::args::{ArgValue, Args};
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::keys::{common_rows, key_columns};
use crate::plan::Callee;
use crate::types::Type;
use crate::value::{DeviceList, DeviceVector, Dict, List, StrDict, Strings, Value, Vector};

/// `shaders/index_assign.wgsl`.
pub const INDEX_ASSIGN_WGSL: &str = include_str!("../../../shaders/index_assign.wgsl");
/// `shaders/like.wgsl`.
pub const LIKE_WGSL: &str = include_str!("../../../shaders/like.wgsl");

/// The builtins [`run_library`] runs.
pub const LIBRARY_BUILTINS: &[Builtin] = &[
    Builtin::Order,
    Builtin::Group,
    Builtin::Unique,
    Builtin::Member,
    Builtin::IndexOf,
    Builtin::JoinIndex,
    Builtin::IndexA,
    Builtin::Like,
    Builtin::SubString,
    Builtin::TupleUnique,
    Builtin::TupleDiff,
    Builtin::TupleMerge,
    Builtin::SortedJoin,
    Builtin::JoinUnique,
    Builtin::MultiwayJoin,
    Builtin::MultiwayCount,
    Builtin::GroupAggregate,
];

/// Runs library builtin `builtin` on the GPU. Errors start with `@name: `, like the CPU's.
pub fn run_library(device: &Device, builtin: Builtin, args: &[ArgValue<'_>]) -> Result<Value> {
    let name = builtin.step_name();
    let result = match builtin {
        Builtin::Order => order(device, args),
        Builtin::Group => group_value(device, args, GroupStrategy::Auto),
        Builtin::Unique => unique(device, args),
        Builtin::Member => member(device, args),
        Builtin::IndexOf => index_of(device, args),
        Builtin::JoinIndex => join(device, args),
        Builtin::IndexA => index_assign(device, args),
        Builtin::Like => like(device, args),
        Builtin::SubString => sub_string(device, args),
        Builtin::TupleUnique | Builtin::TupleDiff | Builtin::TupleMerge | Builtin::SortedJoin => {
            relation(device, builtin, args)
        }
        Builtin::JoinUnique => join_unique(device, args),
        Builtin::MultiwayJoin | Builtin::MultiwayCount => multiway_join(device, builtin, args),
        Builtin::GroupAggregate => group_aggregate_value(device, args).map(|(v, _, _)| v),
        other => Err(Failure::Message(format!(
            "@{} is not a GPU library kernel",
            other.name()
        ))),
    };
    result.map_err(|failure| runtime_error(name, failure))
}

/// A failure as a runtime error starting with `@name: `. Argument checks say what the CPU
/// says, word for word (a program gets the same error on both backends); a limit of the GPU
/// kernels says "on the GPU" in its own words.
fn runtime_error(name: &str, failure: Failure) -> RuntimeError {
    let message = match failure {
        Failure::Message(m) => m,
        Failure::Gpu(GpuError::Unsupported { message, .. }) => message,
        Failure::Gpu(other) => other.to_string(),
    };
    if message.starts_with('@') {
        RuntimeError::new(message)
    } else {
        RuntimeError::new(format!("{name}: {message}"))
    }
}

/// What the types of a key argument (a vector, or a list of key columns) say of the ranges
/// of its key words (see `keys.rs` for the encoding): bounds for bools, chars, i8, i16 and
/// dictionary codes; wide for floats, whose words spread even over a few small values.
fn key_ranges(keys: &Value) -> KeyRanges {
    fn column(ty: &Type, dict: Option<&StrDict>) -> KeyRanges {
        // i8 and i16 are keyed as i32 with the sign bit flipped.
        const ZERO: u32 = 0x8000_0000;
        let bound = match (ty, dict) {
            (Type::Bool, _) => (0, 1),
            (Type::Char, _) => (0, u32::from(u8::MAX)),
            (Type::I8, _) => (ZERO - 128, ZERO + 127),
            (Type::I16, _) => (ZERO - 32_768, ZERO + 32_767),
            (Type::Sym | Type::Str, Some(dict)) => {
                let codes = u32::try_from(dict.strings.len()).unwrap_or(u32::MAX);
                (0, codes.saturating_sub(1))
            }
            (Type::F32 | Type::F64, _) => return KeyRanges::Wide,
            _ => return KeyRanges::Unknown,
        };
        KeyRanges::Bounded(vec![bound])
    }
    let of_value = |v: &Value| match v {
        Value::Device(d) => column(&d.ty, d.dict.as_deref()),
        Value::Vector(v) => column(&v.ty(), v.as_strings().map(|s| &*s.dict)),
        _ => KeyRanges::Unknown,
    };
    let columns: Vec<KeyRanges> = match keys {
        Value::List(List::Mixed(cells)) => cells.iter().map(of_value).collect(),
        Value::List(list) => list.cells().iter().map(of_value).collect(),
        other => vec![of_value(other)],
    };
    if columns.contains(&KeyRanges::Wide) {
        return KeyRanges::Wide;
    }
    let mut bounds = Vec::with_capacity(columns.len());
    for c in columns {
        match c {
            KeyRanges::Bounded(b) => bounds.extend(b),
            other => return other,
        }
    }
    KeyRanges::Bounded(bounds)
}

/// `@group` with an explicit strategy (tests run both; [`run_library`] uses `Auto`).
pub fn run_group(device: &Device, k: &Value, strategy: GroupStrategy) -> Result<Value> {
    group_value(device, &[ArgValue::Value(k)], strategy).map_err(|failure| match failure {
        Failure::Message(m) => RuntimeError::new(format!("@group: {m}")),
        Failure::Gpu(e) => RuntimeError::new(format!("@group: {e}")),
    })
}

enum Failure {
    Message(String),
    Gpu(GpuError),
}

impl From<GpuError> for Failure {
    fn from(e: GpuError) -> Failure {
        Failure::Gpu(e)
    }
}

/// The CPU builtins' argument checks (shared, so both backends reject the same calls) fail
/// with a message.
impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Failure {
        Failure::Message(e.message)
    }
}

type Out<T> = std::result::Result<T, Failure>;

macro_rules! fail {
    ($($arg:tt)*) => {
        return Err(Failure::Message(format!($($arg)*)))
    };
}

fn exactly(args: &[ArgValue<'_>], n: usize) -> Out<()> {
    if args.len() != n {
        fail!("takes {n} argument(s), got {}", args.len());
    }
    Ok(())
}

fn value<'v>(args: &[ArgValue<'v>], i: usize) -> Out<&'v Value> {
    match args.get(i) {
        Some(ArgValue::Value(v)) => Ok(v),
        Some(ArgValue::Function(_)) => fail!("argument {} must be a value", i + 1),
        None => fail!("missing argument {}", i + 1),
    }
}

fn vector<'v>(args: &[ArgValue<'v>], i: usize) -> Out<&'v Vector> {
    as_vector(value(args, i)?)
}

fn as_vector(v: &Value) -> Out<&Vector> {
    match v {
        Value::Vector(v) => Ok(v),
        Value::Enum(_) => {
            fail!("enum arguments are not supported on the GPU (materialise the values first)")
        }
        other => fail!("expected a vector, got a {}", other.ty()),
    }
}

/// A vector is one key column; a list gives one column per cell.
fn own_matrix(
    device: &Device,
    what: &str,
    columns: &[Cow<'_, Vector>],
) -> Out<super::keys::KeyMatrix> {
    if columns.is_empty() {
        fail!("no key columns");
    }
    let rows = common_rows(columns)?;
    let sources = columns
        .iter()
        .map(|c| own_column(what, c))
        .collect::<GpuResult<Vec<_>>>()?;
    Ok(encode_keys(device, what, rows, &sources)?)
}

/// The key matrix of a key argument (a vector, or a list of key columns) and its number of
/// key columns. Columns on the device (kernel outputs) are encoded where they are; host
/// columns are uploaded.
fn key_matrix(device: &Device, what: &str, keys: &Value) -> Out<(super::keys::KeyMatrix, usize)> {
    let cells: Vec<&Value> = match keys {
        Value::Device(_) => vec![keys],
        Value::List(List::Mixed(cells)) if keys.on_device() => cells.iter().collect(),
        _ => {
            let columns = key_columns(keys)?;
            return Ok((own_matrix(device, what, &columns)?, columns.len()));
        }
    };
    let mut sources = Vec::with_capacity(cells.len());
    for cell in &cells {
        sources.push(match cell {
            Value::Device(d) => device_column(what, d)?,
            Value::Vector(v) => own_column(what, v)?,
            other => fail!("expected a vector, got a {}", other.ty()),
        });
    }
    if sources.is_empty() {
        fail!("no key columns");
    }
    let rows = sources[0].rows;
    if let Some(c) = sources.iter().find(|c| c.rows != rows) {
        fail!("key columns have different lengths ({rows} vs {})", c.rows);
    }
    Ok((encode_keys(device, what, rows, &sources)?, sources.len()))
}

/// Row indexes or positions computed on the device, as an i64 vector that stays there.
fn resident_i64(device: &Device, parts: &[&GpuBuffer<u32>]) -> Out<Value> {
    let wide = widen_to_i64(device, parts)?;
    let n = wide.len();
    let words = wide.retyped::<u32>(2 * n);
    Ok(Value::Device(DeviceVector::new(
        Type::I64,
        n,
        None,
        Arc::new(words),
    )))
}

/// Flags computed on the device (`!= not_value`), as a bool vector that stays there.
fn resident_bools(device: &Device, flags: &GpuBuffer<u32>, not_value: u32) -> Out<Value> {
    let words = flag_words(device, flags, not_value)?;
    Ok(Value::Device(DeviceVector::new(
        Type::Bool,
        flags.len(),
        None,
        Arc::new(words),
    )))
}

/// Argument `i` as one key column, on the host or the device.
fn key_operand<'v>(what: &str, args: &[ArgValue<'v>], i: usize) -> Out<KeyColumn<'v>> {
    match value(args, i)? {
        Value::Device(d) => Ok(device_key(what, d)),
        other => Ok(host_key(what, as_vector(other)?)),
    }
}

/// The key columns of one side of `@join_index`: a vector or a list of vectors, each on the
/// host or the device.
fn join_side(value: &Value) -> Result<Vec<KeyColumn<'_>>> {
    const WHAT: &str = "@join_index";
    match value {
        Value::Device(d) => Ok(vec![device_key(WHAT, d)]),
        Value::List(List::Mixed(cells)) if value.on_device() => cells
            .iter()
            .map(|c| match c {
                Value::Device(d) => Ok(device_key(WHAT, d)),
                Value::Vector(v) => Ok(host_key(WHAT, v)),
                other => Err(RuntimeError::new(format!(
                    "expected a vector, got a {}",
                    other.ty()
                ))),
            })
            .collect(),
        _ => Ok(key_columns(value)?
            .into_iter()
            .map(|c| match c {
                Cow::Borrowed(v) => host_key(WHAT, v),
                Cow::Owned(v) => host_key(WHAT, &v).into_owned(),
            })
            .collect()),
    }
}

/// The common length of key columns (an error when they differ).
fn key_rows(columns: &[KeyColumn<'_>]) -> Result<usize> {
    let rows = columns.first().map_or(0, KeyColumn::rows);
    if let Some(c) = columns.iter().find(|c| c.rows() != rows) {
        return Err(RuntimeError::new(format!(
            "key columns have different lengths ({rows} vs {})",
            c.rows()
        )));
    }
    Ok(rows)
}

fn order(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 2)?;
    let dirs = vector(args, 1)?;
    let Some(dirs) = dirs.as_bools() else {
        fail!("the directions must be bool, got {}", dirs.ty());
    };
    let (keys, columns) = key_matrix(device, "@order", value(args, 0)?)?;
    if columns == 0 {
        fail!("no key columns to sort by");
    }
    if dirs.len() != columns && dirs.len() != 1 {
        fail!("{} direction(s) for {} key column(s)", dirs.len(), columns);
    }
    let permutation = order_permutation(device, &keys, dirs)?;
    resident_i64(device, &[&permutation])
}

fn group_value(device: &Device, args: &[ArgValue<'_>], strategy: GroupStrategy) -> Out<Value> {
    exactly(args, 1)?;
    let (keys, _) = key_matrix(device, "@group", value(args, 0)?)?;
    let ranges = key_ranges(value(args, 0)?);
    let groups = group(device, &keys, strategy, &ranges)?;
    // The group keys (one row index per group) and the lists of rows stay on the device.
    let group_keys = resident_i64(device, &[&groups.keys])?;
    let cells = groups.keys.len();
    let Value::Device(rows) = resident_i64(device, &[&groups.rows])? else {
        fail!("the rows of the groups are not on the device");
    };
    Ok(Value::Dict(Dict {
        keys: Box::new(group_keys),
        values: Box::new(Value::DeviceList(DeviceList {
            values: rows,
            offsets: Arc::new(groups.offsets),
            cells,
        })),
    }))
}

/// `@group_aggregate` with the way it went (tests check every path is taken).
pub fn run_group_aggregate(
    device: &Device,
    args: &[ArgValue<'_>],
) -> Result<(Value, AggregatePath, Ranking)> {
    group_aggregate_value(device, args)
        .map_err(|failure| runtime_error("@group_aggregate", failure))
}

/// `@group_aggregate(k, ops, x1, …, xn)`: arguments checked as by the CPU builtin
/// (`args::group`), keys encoded as `@group` encodes them, value columns where they are.
fn group_aggregate_value(
    device: &Device,
    args: &[ArgValue<'_>],
) -> Out<(Value, AggregatePath, Ranking)> {
    let checked = Args { list: args };
    let aggregates = group_aggregate_ops(&checked)?;
    let (keys, _) = key_matrix(device, "@group", value(args, 0)?)?;
    check_value_lengths(&checked, &aggregates, keys.rows)?;
    let mut columns = Vec::new();
    let mut specs = Vec::with_capacity(aggregates.len());
    for aggregate in &aggregates {
        let column = match aggregate.value {
            Some(i) => {
                let operand = Operand::of(args, i)?;
                let (buffer, _) = operand.words(device, "@group_aggregate value")?;
                columns.push(ValueColumn {
                    ty: operand.ty(),
                    buffer,
                });
                Some(columns.len() - 1)
            }
            None => None,
        };
        specs.push(AggregateSpec {
            reduction: aggregate.reduction,
            column,
        });
    }
    // A column passed twice (`@sum` and `@avg` of one column) is read once.
    for i in 0..columns.len() {
        if let Some(j) = (0..i).find(|&j| {
            Arc::ptr_eq(&columns[j].buffer, &columns[i].buffer) && columns[j].ty == columns[i].ty
        }) {
            for spec in &mut specs {
                if spec.column == Some(i) {
                    spec.column = Some(j);
                }
            }
        }
    }
    // A result asked for twice (`@len` of every `@avg`'s groups) is computed once and
    // shared: fewer results per kernel, fewer batches reading the rows again.
    let mut distinct: Vec<AggregateSpec> = Vec::with_capacity(specs.len());
    let result_of: Vec<usize> = specs
        .iter()
        .map(|spec| {
            let same = |d: &AggregateSpec| d.reduction == spec.reduction && d.column == spec.column;
            distinct.iter().position(same).unwrap_or_else(|| {
                distinct.push(*spec);
                distinct.len() - 1
            })
        })
        .collect();
    let ranges = key_ranges(value(args, 0)?);
    let (aggregated, path) = group_aggregate(device, &keys, &ranges, &distinct, &columns)?;
    let (groups, ranking) = (aggregated.groups, aggregated.ranking);
    let results: Vec<Arc<GpuBuffer<u32>>> = aggregated.results.into_iter().map(Arc::new).collect();
    let mut cells = Vec::with_capacity(specs.len() + 1);
    cells.push(resident_i64(device, &[&aggregated.keys])?);
    for (spec, &result) in specs.iter().zip(&result_of) {
        let value_ty = spec.column.map(|c| &columns[c].ty);
        let ty = spec.reduction.result_type(value_ty);
        cells.push(Value::Device(DeviceVector::new(
            ty,
            groups,
            None,
            results[result].clone(),
        )));
    }
    Ok((Value::List(List::Mixed(Arc::new(cells))), path, ranking))
}

fn unique(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 1)?;
    let (keys, _) = key_matrix(device, "@unique", value(args, 0)?)?;
    let rows = unique_rows(device, &keys)?;
    resident_i64(device, &[&rows])
}

fn member(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 2)?;
    let (x, y) = (
        key_operand("@member", args, 0)?,
        key_operand("@member", args, 1)?,
    );
    let (nx, ny) = (x.rows(), y.rows());
    let (cx, cy) = paired_keys_merging_dictionaries_on_cpu(Some(device), "@member", x, y)?;
    let kx = encode_keys(device, "@member", nx, &[cx])?;
    let ky = encode_keys(device, "@member", ny, &[cy])?;
    let slots = member_slots(device, &kx, &ky)?;
    resident_bools(device, &slots, NONE)
}

/// `@index_of(x, y)`: for each element of `y`, the position of its first occurrence in `x`,
/// or `len(x)` when absent. The table is built on `x`; keys paired as for `@member`.
fn index_of(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 2)?;
    let (x, y) = (
        key_operand("@index_of", args, 0)?,
        key_operand("@index_of", args, 1)?,
    );
    let (nx, ny) = (x.rows(), y.rows());
    let (cx, cy) = paired_keys_merging_dictionaries_on_cpu(Some(device), "@index_of", x, y)?;
    let kx = encode_keys(device, "@index_of", nx, &[cx])?;
    let ky = encode_keys(device, "@index_of", ny, &[cy])?;
    let rows = index_of_rows(device, &kx, &ky)?;
    resident_i64(device, &[&rows])
}

fn join(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    let JoinArguments {
        ops,
        a: ca,
        b: cb,
        rows_a,
        rows_b,
    } = join_arguments_with(&Args { list: args }, join_side, key_rows)?;
    let (mut equal_a, mut equal_b, mut check_a, mut check_b) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut check_ops = Vec::new();
    for ((op, a), b) in ops.iter().zip(ca).zip(cb) {
        let (sa, sb) = paired_keys_merging_dictionaries_on_cpu(Some(device), "@join_index", a, b)?;
        if *op == Builtin::Eq {
            equal_a.push(sa);
            equal_b.push(sb);
        } else {
            check_a.push(sa);
            check_b.push(sb);
            check_ops.push(*op);
        }
    }
    let matrices = |a: &[ColumnSource<'_>], b: &[ColumnSource<'_>]| -> Out<_> {
        if a.is_empty() {
            return Ok(None);
        }
        Ok(Some((
            encode_keys(device, "@join_index", rows_a, a)?,
            encode_keys(device, "@join_index", rows_b, b)?,
        )))
    };
    let keys = JoinKeys {
        equal: matrices(&equal_a, &equal_b)?,
        checks: matrices(&check_a, &check_b)?,
        check_ops,
        rows_a,
        rows_b,
    };
    let pairs = join_index(device, &keys)?;
    // Two cells of row indexes, each an i64 vector on the device (written as i64 words).
    let cell = |words| {
        Value::Device(DeviceVector::new(
            Type::I64,
            pairs.pairs,
            None,
            Arc::new(words),
        ))
    };
    Ok(Value::List(List::Mixed(Arc::new(vec![
        cell(pairs.a),
        cell(pairs.b),
    ]))))
}

/// The relation builtins (`gpu/relation.rs`); arguments checked as by the CPU builtins
/// (`crate::relation`). Relations come and go as device columns.
fn relation(device: &Device, builtin: Builtin, args: &[ArgValue<'_>]) -> Out<Value> {
    use super::relation::{self as r, DeviceRelation, RelationError};
    use crate::relation::{relation_pair, relation_single};
    let result = if builtin == Builtin::TupleUnique {
        let a = DeviceRelation::of_argument(device, &relation_single(args)?)?;
        r::tuple_unique(device, &a).map_err(RelationError::Gpu)
    } else {
        let (a, b) = relation_pair(args)?;
        let a = DeviceRelation::of_argument(device, &a)?;
        let b = DeviceRelation::of_argument(device, &b)?;
        match builtin {
            Builtin::TupleDiff => r::tuple_diff(device, &a, &b),
            Builtin::TupleMerge => r::tuple_merge(device, &a, &b),
            _ => r::sorted_join(device, &a, &b),
        }
    };
    match result {
        Ok(relation) => Ok(relation.into_value()),
        Err(RelationError::Precondition(m)) => Err(Failure::Message(m)),
        Err(RelationError::Gpu(e)) => Err(Failure::Gpu(e)),
    }
}

/// `@join_unique` (`gpu/relation/join_unique.rs`); arguments checked as by the CPU builtin.
fn join_unique(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    use super::relation::{self as r, DeviceRelation, RelationError};
    let a = crate::relation::join_unique_arguments(args)?;
    let probe = DeviceRelation::of_argument(device, &a.probe)?;
    let build = DeviceRelation::of_argument(device, &a.build)?;
    let full = match &a.full {
        Some(full) => Some(DeviceRelation::of_argument(device, full)?),
        None => None,
    };
    let batch =
        r::join_batch_rows(device, a.picks.len()).map_err(|e| Failure::Message(e.message))?;
    match r::join_unique(
        device,
        &probe,
        &build,
        a.keys,
        &a.picks,
        full.as_ref(),
        batch,
    ) {
        Ok(relation) => Ok(relation.into_value()),
        Err(RelationError::Precondition(m)) => Err(Failure::Message(m)),
        Err(RelationError::Gpu(e)) => Err(Failure::Gpu(e)),
    }
}

/// `@multiway_join` and `@multiway_count` (`gpu/multiway.rs`); arguments checked as by the
/// CPU builtins. Relations come as device columns (host ones are uploaded).
fn multiway_join(device: &Device, builtin: Builtin, args: &[ArgValue<'_>]) -> Out<Value> {
    use super::relation::DeviceRelation;
    use crate::relation::RelationColumn;
    let (spec, relations) = crate::multiway::multiway_relations(args)?;
    // A host column given to several atoms is uploaded once (its trie is then built once).
    let mut uploaded: Vec<(*const i64, usize, Arc<GpuBuffer<u32>>)> = Vec::new();
    let mut device_relations = Vec::with_capacity(relations.len());
    for r in &relations {
        let mut columns = Vec::with_capacity(r.columns.len());
        for column in &r.columns {
            columns.push(match column {
                RelationColumn::Device(d) => d.buffer.clone(),
                RelationColumn::Host(c) => {
                    match uploaded
                        .iter()
                        .find(|(p, n, _)| std::ptr::eq(*p, c.as_ptr()) && *n == c.len())
                    {
                        Some((_, _, buffer)) => buffer.clone(),
                        None => {
                            let buffer =
                                Arc::new(device.upload(
                                    "relation column",
                                    bytemuck::cast_slice::<i64, u32>(c),
                                )?);
                            uploaded.push((c.as_ptr(), c.len(), buffer.clone()));
                            buffer
                        }
                    }
                }
            });
        }
        device_relations.push(DeviceRelation {
            columns,
            rows: r.rows,
        });
    }
    let relations = device_relations;
    if builtin == Builtin::MultiwayCount {
        let count = super::multiway::multiway_count(device, &spec, &relations)?;
        let Ok(count) = i64::try_from(count) else {
            return Err(Failure::Message(format!("{count} rows do not fit an i64")));
        };
        return Ok(Value::from_i64s(vec![count]));
    }
    let result = super::multiway::multiway_join(device, &spec, &relations)?;
    Ok(crate::relation::relation_value(result))
}

/// The stored words of an `@index_a` operand and words per element. `bool`, `char`, `i8`
/// and `i16` are widened to one word each on upload.
fn element_words(v: &Vector) -> Out<(Cow<'_, [u32]>, u32)> {
    Ok(match v {
        Vector::Bool(x) => (x.iter().map(|&b| u32::from(b)).collect(), 1),
        Vector::Char(x) => (x.iter().map(|&c| u32::from(c)).collect(), 1),
        Vector::I8(x) => (x.iter().map(|&e| i32::from(e) as u32).collect(), 1),
        Vector::I16(x) => (x.iter().map(|&e| i32::from(e) as u32).collect(), 1),
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => (Cow::Borrowed(bytemuck::cast_slice(x.as_slice())), 1),
        Vector::I64(x) | Vector::Dt(x) => (Cow::Borrowed(bytemuck::cast_slice(x.as_slice())), 2),
        Vector::F32(x) => (Cow::Borrowed(bytemuck::cast_slice(x.as_slice())), 1),
        Vector::F64(x) => (Cow::Borrowed(bytemuck::cast_slice(x.as_slice())), 2),
        Vector::Sym(s) | Vector::Str(s) => (Cow::Borrowed(s.codes.as_slice()), 1),
        Vector::Complex(_) => fail!("cannot assign complex values on the GPU"),
    })
}

/// String codes of `s` re-coded by `map` on the GPU (the `Remap` key encoding).
fn remapped_codes(device: &Device, s: &Strings, map: Vec<u32>) -> Out<GpuBuffer<u32>> {
    let source = ColumnSource {
        data: Cow::Borrowed(s.codes.as_slice()),
        resident: None,
        rows: s.len(),
        encoding: Encoding::Remap,
        remap: Some(map),
    };
    Ok(encode_keys(device, "@index_a", s.len(), &[source])?.words)
}

/// `@index_a(x, i, v)`: a copy of `x` with `x[i[j]] = v[j]`; where several j name one
/// position the last (largest j) wins, as in the CPU's sequential loop. `v` must have
/// `x`'s type (the CPU's real-to-real conversion is not done on the GPU).
/// An operand of `@index_a`: a vector on the host, or one on the device whose words are
/// bound as they are.
#[derive(Clone, Copy)]
enum Operand<'v> {
    Host(&'v Vector),
    Device(&'v DeviceVector),
}

impl Operand<'_> {
    fn of<'v>(args: &[ArgValue<'v>], i: usize) -> Out<Operand<'v>> {
        match value(args, i)? {
            Value::Device(d) => Ok(Operand::Device(d)),
            other => Ok(Operand::Host(as_vector(other)?)),
        }
    }

    fn ty(&self) -> Type {
        match self {
            Operand::Host(v) => v.ty(),
            Operand::Device(d) => d.ty.clone(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Operand::Host(v) => v.len(),
            Operand::Device(d) => d.len,
        }
    }

    fn dict(&self) -> Option<Arc<StrDict>> {
        match self {
            Operand::Host(v) => v.as_strings().map(|s| s.dict.clone()),
            Operand::Device(d) => d.dict.clone(),
        }
    }

    /// The elements in the kernels' layout on the device, and words per element.
    fn words(&self, device: &Device, label: &str) -> Out<(Arc<GpuBuffer<u32>>, u32)> {
        match self {
            Operand::Host(v) => {
                let (words, elem) = element_words(v)?;
                Ok((Arc::new(device.upload(label, &words)?), elem))
            }
            Operand::Device(d) => {
                if d.ty == Type::Complex {
                    fail!("cannot assign complex values on the GPU");
                }
                let elem = crate::kernel::GpuElement::of_type(&d.ty).map_or(1, |e| e.size() / 4);
                // Exactly the elements (a kernel's output buffer may have room for more).
                let exact = GpuBuffer::<u32>::view(&d.buffer, d.len * elem as usize);
                Ok((Arc::new(exact), elem as u32))
            }
        }
    }

    /// String codes re-coded by `map` on the GPU.
    fn remapped(&self, device: &Device, map: Vec<u32>) -> Out<GpuBuffer<u32>> {
        match self {
            Operand::Host(v) => match v.as_strings() {
                Some(s) => remapped_codes(device, s, map),
                None => fail!("expected strings, got {}", v.ty()),
            },
            Operand::Device(d) => {
                let source = ColumnSource {
                    data: Cow::Borrowed(&[]),
                    resident: Some(d.buffer.clone()),
                    rows: d.len,
                    encoding: Encoding::Remap,
                    remap: Some(map),
                };
                Ok(encode_keys(device, "@index_a", d.len, &[source])?.words)
            }
        }
    }

    /// Element `j` as an integer (reads one element of a device vector back).
    fn integer_at(&self, device: &Device, j: usize) -> Option<i64> {
        match self {
            Operand::Host(v) => v.integer_at(j),
            Operand::Device(d) if j < d.len => {
                let wide = d.ty == Type::I64;
                let w = if wide { 2 } else { 1 };
                let words = device.download_range(&d.buffer, j * w, w).ok()?;
                Some(if wide {
                    i64::from(words[0]) | (i64::from(words[1]) << 32)
                } else {
                    i64::from(words[0] as i32)
                })
            }
            Operand::Device(_) => None,
        }
    }
}

fn index_assign(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 3)?;
    let (x, i, v) = (
        Operand::of(args, 0)?,
        Operand::of(args, 1)?,
        Operand::of(args, 2)?,
    );
    let (index_buffer, wide_index): (Arc<GpuBuffer<u32>>, bool) = match i {
        Operand::Host(i) => {
            let (words, wide): (Cow<'_, [u32]>, bool) = match i {
                Vector::I64(e) => (Cow::Borrowed(bytemuck::cast_slice(e.as_slice())), true),
                Vector::I32(e) => (Cow::Borrowed(bytemuck::cast_slice(e.as_slice())), false),
                Vector::I16(e) => (e.iter().map(|&k| i32::from(k) as u32).collect(), false),
                Vector::I8(e) => (e.iter().map(|&k| i32::from(k) as u32).collect(), false),
                Vector::Bool(e) => (e.iter().map(|&k| u32::from(k)).collect(), false),
                other => fail!("expected integer indices, got {}", other.ty()),
            };
            (Arc::new(device.upload("index_a index", &words)?), wide)
        }
        // Narrow integers are one i32 (bool: u32) word each on the device already.
        Operand::Device(d) => match d.ty {
            Type::I64 => (d.buffer.clone(), true),
            Type::I32 | Type::I16 | Type::I8 | Type::Bool => (d.buffer.clone(), false),
            ref other => fail!("expected integer indices, got {other}"),
        },
    };
    let n = i.len();
    if v.len() != 1 && v.len() != n {
        fail!("length mismatch ({} indices vs {} values)", n, v.len());
    }
    let same = x.ty() == v.ty()
        || matches!(
            (x.ty(), v.ty()),
            (Type::Sym, Type::Sym) | (Type::Str, Type::Str)
        );
    if !same {
        fail!(
            "cannot assign {} values into a {} vector on the GPU (same types only)",
            v.ty(),
            x.ty()
        );
    }
    // Strings: both sides re-coded into the merged dictionary (merged on the CPU, per
    // distinct string; the codes re-coded on the GPU).
    let (x_words, v_words, elem_words, dict) = match (x.dict(), v.dict()) {
        (Some(dx), Some(dv)) if !Arc::ptr_eq(&dx, &dv) && dx != dv => {
            let merge = StrDict::merge(&[&dx, &dv]);
            let mut maps = merge.maps.into_iter();
            let (Some(mx), Some(mv)) = (maps.next(), maps.next()) else {
                fail!("dictionary merge lost an input");
            };
            let xb = Arc::new(x.remapped(device, mx)?);
            let vb = Arc::new(v.remapped(device, mv)?);
            (xb, vb, 1u32, Some(merge.dict))
        }
        (dx, _) => {
            let (xw, elem) = x.words(device, "index_a x")?;
            let (vw, _) = v.words(device, "index_a v")?;
            (xw, vw, elem, dx)
        }
    };
    let len_x = x.len();
    let out = device.zeroed::<u32>("index_a out", len_x * elem_words as usize)?;
    let winner = device.zeroed::<u32>("index_a winner", len_x)?;
    let error = device.zeroed::<u32>("index_a error", 1)?;
    let source = render(
        "index_assign.wgsl",
        INDEX_ASSIGN_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )?;
    let uniform = params(
        device,
        "index_a params",
        [
            check_len("@index_a", n)?,
            check_len("@index_a", len_x)?,
            elem_words,
            u32::from(wide_index),
            u32::from(v.len() == 1),
            0,
            0,
            0,
        ],
    )?;
    let mut commands = Commands::new(device, "index_a");
    commands.copy(&x_words, out.raw())?;
    for entry in ["claim", "write"] {
        let pipeline = device.pipeline(&KernelSpec {
            label: &format!("index_assign.{entry}"),
            source: &source,
            entry_point: entry,
            constants: &[],
            bindings: &[
                BindingKind::Uniform,
                BindingKind::StorageRead,
                BindingKind::StorageRead,
                BindingKind::StorageReadWrite,
                BindingKind::StorageReadWrite,
                BindingKind::StorageReadWrite,
            ],
        })?;
        commands.dispatch(
            &pipeline,
            &[
                &uniform,
                index_buffer.raw(),
                v_words.raw(),
                winner.raw(),
                out.raw(),
                error.raw(),
            ],
            element_workgroups(n),
        )?;
    }
    commands.submit()?;
    let bad = device.download(&error)?.first().copied().unwrap_or(0);
    if bad != 0 {
        let j = (u32::MAX - bad) as usize;
        let k = i.integer_at(device, j).unwrap_or(-1);
        fail!("index {k} out of range for length {len_x}");
    }
    // The result stays on the device: its words are in the kernels' layout.
    Ok(Value::Device(DeviceVector::new(
        x.ty(),
        len_x,
        dict,
        Arc::new(out),
    )))
}

fn strings_arg<'v>(v: &'v Vector, what: &str) -> Out<&'v Strings> {
    match v.as_strings() {
        Some(s) => Ok(s),
        None => fail!("{what} must be sym or str, got {}", v.ty()),
    }
}

/// Bytes packed four to a little-endian u32 word, zero-padded.
fn pack_bytes(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut word = [0u8; 4];
            word[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(word)
        })
        .collect()
}

/// Dictionaries kept on the device at most; the oldest goes first.
const CACHED_DICTIONARIES: usize = 16;

/// `dict`'s packed bytes and offsets on the device, uploaded on first use and kept (a
/// column's dictionary is matched again by every later `@like` on it).
fn dictionary_on_device(device: &Device, dict: &Arc<StrDict>) -> Out<CachedDictionary> {
    if let Ok(cache) = device.dictionaries.lock() {
        if let Some(hit) = cache.iter().find(|c| Arc::ptr_eq(&c.dict, dict)) {
            return Ok(hit.clone());
        }
    }
    let mut bytes = Vec::new();
    let mut offsets = Vec::with_capacity(dict.strings.len() + 1);
    offsets.push(0u32);
    for entry in &dict.strings {
        bytes.extend_from_slice(entry.as_bytes());
        offsets.push(check_len("@like", bytes.len())?);
    }
    let cached = CachedDictionary {
        dict: dict.clone(),
        bytes: Arc::new(device.upload("like dictionary", &pack_bytes(&bytes))?),
        offsets: Arc::new(device.upload("like offsets", &offsets)?),
    };
    if let Ok(mut cache) = device.dictionaries.lock() {
        if cache.len() >= CACHED_DICTIONARIES {
            cache.remove(0);
        }
        cache.push(cached.clone());
    }
    Ok(cached)
}

/// `@like(s, pattern)`: the pattern is matched once per distinct string of `s`'s dictionary
/// on the GPU (`shaders/like.wgsl`), then gathered to the rows by their codes on the GPU.
/// The dictionary is uploaded as UTF-8 bytes with offsets.
fn like(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    exactly(args, 2)?;
    let strings = StringCodes::of(device, value(args, 0)?, "like codes")?;
    let pattern = strings_arg(vector(args, 1)?, "the pattern")?;
    if pattern.len() != 1 {
        fail!("expected one pattern, got {}", pattern.len());
    }
    let entries = &strings.dict.strings;
    let pattern_bytes = pattern.get(0).as_bytes();
    let cached = dictionary_on_device(device, &strings.dict)?;
    let (dict_bytes, dict_offsets) = (&cached.bytes, &cached.offsets);
    let pattern_words = device.upload("like pattern", &pack_bytes(pattern_bytes))?;
    let matched = device.zeroed::<u32>("like per entry", entries.len())?;
    let source = render(
        "like.wgsl",
        LIKE_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )?;
    let pipeline = device.pipeline(&KernelSpec {
        label: "like.like_entries",
        source: &source,
        entry_point: "like_entries",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
        ],
    })?;
    let uniform = params(
        device,
        "like params",
        [
            check_len("@like", entries.len())?,
            check_len("@like", pattern_bytes.len())?,
            0,
            0,
            0,
            0,
            0,
            0,
        ],
    )?;
    let mut commands = Commands::new(device, "like");
    commands.dispatch(
        &pipeline,
        &[
            &uniform,
            dict_bytes.raw(),
            dict_offsets.raw(),
            pattern_words.raw(),
            matched.raw(),
        ],
        element_workgroups(entries.len()),
    )?;
    commands.submit()?;
    let per_row = gather(device, &matched, &strings.codes)?;
    resident_bools(device, &per_row, 0)
}

/// The codes of a sym/str argument on the device (a device vector's own buffer, or the
/// upload of a host vector's codes) with their dictionary, which stays on the host.
struct StringCodes {
    ty: Type,
    dict: Arc<StrDict>,
    /// Exactly one code per row.
    codes: GpuBuffer<u32>,
}

impl StringCodes {
    fn of(device: &Device, v: &Value, label: &str) -> Out<StringCodes> {
        match v {
            Value::Device(d) if matches!(d.ty, Type::Str | Type::Sym) => {
                let Some(dict) = d.dict.clone() else {
                    fail!("a {} vector on the device has no dictionary", d.ty);
                };
                Ok(StringCodes {
                    ty: d.ty.clone(),
                    dict,
                    codes: GpuBuffer::view(&d.buffer, d.len),
                })
            }
            other => {
                let v = as_vector(other)?;
                let strings = strings_arg(v, "the strings")?;
                Ok(StringCodes {
                    ty: v.ty(),
                    dict: strings.dict.clone(),
                    codes: device.upload(label, strings.codes.as_slice())?,
                })
            }
        }
    }
}

/// Results of [`sub_string_dictionary_on_cpu`] kept on the device at most.
const CACHED_SUB_STRINGS: usize = 16;

/// The dictionary of the substrings of `dict`'s entries and the code map on the device,
/// computed once per dictionary and range: a dictionary never changes (the entry holds
/// it, so its address stays its own), and TPC-H q22 takes the same substring of the same
/// column three times per run.
fn sub_string_dictionary(
    device: &Device,
    dict: &Arc<StrDict>,
    pos: i64,
    len: i64,
) -> Out<(Arc<StrDict>, Arc<GpuBuffer<u32>>)> {
    if let Ok(cache) = device.sub_strings.lock() {
        if let Some(hit) = cache
            .iter()
            .find(|c| Arc::ptr_eq(&c.dict, dict) && c.range == (pos, len))
        {
            return Ok((hit.result.clone(), hit.map.clone()));
        }
    }
    let (result, map) = sub_string_dictionary_on_cpu(dict, pos, len);
    let map = Arc::new(device.upload("sub_string map", &map)?);
    if let Ok(mut cache) = device.sub_strings.lock() {
        if cache.len() >= CACHED_SUB_STRINGS {
            cache.remove(0);
        }
        cache.push(super::device::CachedSubString {
            dict: dict.clone(),
            range: (pos, len),
            result: result.clone(),
            map: map.clone(),
        });
    }
    Ok((result, map))
}

/// `@sub_string`'s per-distinct-string step, on the CPU: the substring of each dictionary
/// entry (1-based `pos`, `len` characters, clipped), the sorted dictionary of the results,
/// and the map from old codes to new ones.
pub fn sub_string_dictionary_on_cpu(
    dict: &StrDict,
    pos: i64,
    len: i64,
) -> (Arc<StrDict>, Vec<u32>) {
    let start = pos.saturating_sub(1);
    let end = start.saturating_add(len);
    let from = start.max(0) as usize;
    let to = end.max(0) as usize;
    let per_entry: Vec<String> = dict
        .strings
        .iter()
        .map(|entry| {
            entry
                .chars()
                .skip(from)
                .take(to.saturating_sub(from))
                .collect()
        })
        .collect();
    let encoded = Strings::from_strs(&per_entry);
    let map = encoded.codes.as_ref().clone();
    (encoded.dict, map)
}

/// `@sub_string(s, (pos, len))` or `@sub_string(s, pos, len)`: the new dictionary is built
/// on the CPU ([`sub_string_dictionary_on_cpu`], once per distinct string, and kept per
/// dictionary and range); the rows are re-coded on the GPU by a gather, and the result
/// stays there with its new dictionary.
fn sub_string(device: &Device, args: &[ArgValue<'_>]) -> Out<Value> {
    let (pos, len) = match args.len() {
        2 => {
            let range = vector(args, 1)?;
            match (range.len(), range.integer_at(0), range.integer_at(1)) {
                (2, Some(p), Some(l)) => (p, l),
                _ => fail!(
                    "expected (position, length) as two integers, got {} element(s) of {}",
                    range.len(),
                    range.ty()
                ),
            }
        }
        3 => {
            let (p, l) = (vector(args, 1)?, vector(args, 2)?);
            match (p.len(), p.integer_at(0), l.len(), l.integer_at(0)) {
                (1, Some(p), 1, Some(l)) => (p, l),
                _ => fail!("expected an integer position and an integer length"),
            }
        }
        n => fail!("takes 2 or 3 arguments, got {n}"),
    };
    if len < 0 {
        fail!("negative length {len}");
    }
    let strings = StringCodes::of(device, value(args, 0)?, "sub_string codes")?;
    let (dict, map) = sub_string_dictionary(device, &strings.dict, pos, len)?;
    let rows = strings.codes.len();
    let recoded = gather(device, &map, &strings.codes)?;
    Ok(Value::Device(DeviceVector::new(
        strings.ty,
        rows,
        Some(dict),
        Arc::new(recoded),
    )))
}

/// The builtins `f` that [`each_library`] runs as `@each(f, l)` on the GPU.
pub const EACH_LIBRARY_BUILTINS: &[Builtin] = &[Builtin::Unique];

/// Whether `@each(f, l)` with these arguments runs on the GPU: `f` is one of
/// [`EACH_LIBRARY_BUILTINS`] and `l` a flat list.
pub fn each_runs_on_gpu(args: &[ArgValue<'_>]) -> bool {
    matches!(
        args,
        [
            ArgValue::Function(Callee::Builtin(f)),
            ArgValue::Value(Value::List(List::Flat { .. }) | Value::DeviceList(_))
        ] if EACH_LIBRARY_BUILTINS.contains(f)
    )
}

/// `@each(f, l)` on the GPU, for the arguments [`each_runs_on_gpu`] accepts.
pub fn each_library(device: &Device, args: &[ArgValue<'_>]) -> Result<Value> {
    match args {
        [ArgValue::Function(Callee::Builtin(Builtin::Unique)), ArgValue::Value(Value::List(list))] => {
            each_unique(device, list)
        }
        [ArgValue::Function(Callee::Builtin(Builtin::Unique)), ArgValue::Value(Value::DeviceList(list))] => {
            each_unique_device_value(device, list)
                .map_err(|failure| runtime_error("@each(@unique)", failure))
        }
        _ => Err(RuntimeError::new(
            "@each: only @each(@unique, l) of a flat list runs as a GPU library kernel",
        )),
    }
}

/// `@each(@unique, l)` on the GPU for a flat list: for each cell, the positions (within the
/// cell) of the first occurrence of each distinct value, in order of appearance — the CPU's
/// result, as a flat i64 list. Each element's cell is found on the GPU (binary search over
/// the offsets), the (cell, value) pairs are hashed, and the first rows of the distinct
/// pairs, ascending, are the result; per-cell counts and their scan give its offsets.
pub fn each_unique(device: &Device, list: &List) -> Result<Value> {
    each_unique_value(device, list).map_err(|failure| runtime_error("@each(@unique)", failure))
}

/// `@each(@unique, l)` of a list a kernel made (TPC-H q16's suppliers per group): the same
/// kernels on its device values and offsets, and the result stays on the device (read back
/// whole, it made q16's one CPU step and 1.8 MB of traffic per run at SF 1).
fn each_unique_device_value(device: &Device, list: &DeviceList) -> Out<Value> {
    if list.cells == 0 {
        // What the CPU's `List::from_cells` builds from no cells.
        return Ok(Value::List(List::Mixed(Arc::new(Vec::new()))));
    }
    let n = list.values.len;
    check_len("@each(@unique)", n)?;
    let column = device_column("@each(@unique)", &list.values)?;
    let keys = encode_keys(device, "@each(@unique)", n, &[column])?;
    let (positions, result_offsets) = each_unique_rows(device, &keys, &list.offsets, list.cells)?;
    let Value::Device(values) = resident_i64(device, &[&positions])? else {
        fail!("the positions are not on the device");
    };
    Ok(Value::DeviceList(DeviceList {
        values,
        offsets: Arc::new(result_offsets),
        cells: list.cells,
    }))
}

fn each_unique_value(device: &Device, list: &List) -> Out<Value> {
    let List::Flat { values, offsets } = list else {
        fail!("expected a flat list (cells of one vector type)");
    };
    let cells = offsets.len().saturating_sub(1);
    if cells == 0 {
        // What the CPU's `List::from_cells` builds from no cells.
        return Ok(Value::List(List::Mixed(Arc::new(Vec::new()))));
    }
    let n = values.len();
    let valid = offsets.first() == Some(&0)
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets.last() == Some(&n);
    if !valid {
        fail!("invalid list offsets for {n} values");
    }
    check_len("@each(@unique)", n)?;
    // Offsets fit u32 (each is at most n): narrowed for upload.
    let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
    let column = own_column("@each(@unique)", values)?;
    let keys = encode_keys(device, "@each(@unique)", n, &[column])?;
    let offsets_gpu = device.upload("list offsets", &offsets32)?;
    let (positions, result_offsets) = each_unique_rows(device, &keys, &offsets_gpu, cells)?;
    let positions = download_as_i64(device, &[&positions])?;
    let result_offsets: Vec<usize> = device
        .download(&result_offsets)?
        .into_iter()
        .map(|o| o as usize)
        .collect();
    Ok(Value::List(List::Flat {
        values: Vector::I64(Arc::new(positions)),
        offsets: Arc::new(result_offsets),
    }))
}
