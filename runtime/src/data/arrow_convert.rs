//! Arrow arrays to HorseIR vectors and back: the one place where the two type systems meet.
//!
//! # Reading (Arrow → HorseIR)
//!
//! | Arrow type | HorseIR type | note |
//! |---|---|---|
//! | `Boolean` | `bool` | |
//! | `Int8`, `Int16`, `Int32`, `Int64` | `i8`, `i16`, `i32`, `i64` | |
//! | `UInt8`, `UInt16`, `UInt32` | `i16`, `i32`, `i64` | widened, exact |
//! | `UInt64` | `i64` | a value above `i64::MAX` is an error naming the row |
//! | `Float16`, `Float32` | `f32` | |
//! | `Float64` | `f64` | |
//! | `Decimal32/64/128(p, s)` | `f64` | the nearest double of the decimal, as parsing its text gives |
//! | `Utf8`, `LargeUtf8`, `Utf8View`, `Dictionary(_, Utf8)` | `sym` | dictionary-encoded |
//! | `Date32` | `date` | |
//! | `Date64` | `date` | a value that is not a whole day is an error |
//! | `Timestamp(unit, zone)` | `dt` | milliseconds since the epoch (UTC); a value with a sub-millisecond part is an error |
//! | `Time32(s)` | `second` | |
//! | `Time32(ms)`, `Time64(us/ns)` | `time` | a value with a sub-millisecond part is an error |
//!
//! Any other type (binary, lists, structs, intervals, durations, `Decimal256`, …) is an
//! error naming the column and the type; so is a null (HorseIR has no nulls), naming the row.
//! Nothing is converted silently: where a value cannot be represented exactly, the load fails.
//!
//! # Writing (HorseIR → Arrow)
//!
//! `bool`, the integers, `f32`, `f64` and `date` map to their Arrow twins, `sym` to
//! `Dictionary(Int32, Utf8)`, `str` to `Utf8`, `second` to `Time32(s)`, `time` to
//! `Time32(ms)`, `dt` to `Timestamp(ms)`, `char` to a one-character `Utf8`, `minute` to
//! `Time32(s)` and `month` to `Int32` (its `year * 12 + month - 1` code); an enumeration is
//! written as its key values. Where the Arrow type alone would read back as a different
//! HorseIR type (`char`, `str`, `minute`, `month`), the field carries the metadata
//! `horsec:type`, which the reader honours: a table written by horsec reads back identical.
//! `complex` and list columns are an error.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal32Type, Decimal64Type, Float16Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, DictionaryArray, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray,
    Time32MillisecondArray, Time32SecondArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::bail;
use crate::data::columns::{join_column_parts, ColumnPart, SymBuilder};
use crate::data::phases;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{Strings, Table, Value, Vector};

/// The field metadata key that records a column's HorseIR type where Arrow's does not.
pub const HORSEC_TYPE_KEY: &str = "horsec:type";

const MS_PER_DAY: i64 = 86_400_000;

/// The Arrow type horsec reads `ty` as, or an error naming `column` and the type.
pub fn horseir_type_of(column: &str, ty: &DataType) -> Result<Type> {
    Ok(match ty {
        DataType::Boolean => Type::Bool,
        DataType::Int8 => Type::I8,
        DataType::Int16 | DataType::UInt8 => Type::I16,
        DataType::Int32 | DataType::UInt16 => Type::I32,
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => Type::I64,
        DataType::Float16 | DataType::Float32 => Type::F32,
        DataType::Float64
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..) => Type::F64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Type::Sym,
        DataType::Dictionary(_, values)
            if matches!(
                values.as_ref(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) =>
        {
            Type::Sym
        }
        DataType::Date32 | DataType::Date64 => Type::Date,
        DataType::Timestamp(..) => Type::Dt,
        DataType::Time32(TimeUnit::Second) => Type::Second,
        DataType::Time32(TimeUnit::Millisecond)
        | DataType::Time64(TimeUnit::Microsecond | TimeUnit::Nanosecond) => Type::Time,
        other => {
            bail!("column `{column}` has the Arrow type {other}, which horsec cannot represent")
        }
    })
}

/// Reads one Arrow column (rows `first_row..` of its file, for messages) as a vector.
pub fn vector_from_arrow(field: &Field, array: &dyn Array, first_row: usize) -> Result<Vector> {
    let column = field.name().as_str();
    let problem = |row: usize, what: String| {
        RuntimeError::new(format!(
            "column `{column}`, row {}: {what}",
            first_row + row + 1
        ))
    };
    if array.null_count() > 0 {
        let row = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
        return Err(problem(row, "null value (horsec has no nulls)".to_string()));
    }
    let natural = horseir_type_of(column, array.data_type())?;
    let declared = field.metadata().get(HORSEC_TYPE_KEY).map(String::as_str);
    macro_rules! prim {
        ($t:ty) => {
            array.as_primitive::<$t>().values().to_vec()
        };
    }
    // Exact conversion of integer ticks to a coarser unit; the error names the row.
    let exact = |values: &[i64], per: i64, unit: &str| -> Result<Vec<i64>> {
        values
            .iter()
            .enumerate()
            .map(|(row, &v)| {
                if v % per == 0 {
                    Ok(v / per)
                } else {
                    Err(problem(
                        row,
                        format!("{v} {unit} is not a whole millisecond"),
                    ))
                }
            })
            .collect()
    };
    let to_i32 = |values: Vec<i64>, what: &str| -> Result<Vec<i32>> {
        values
            .into_iter()
            .enumerate()
            .map(|(row, v)| {
                i32::try_from(v).map_err(|_| problem(row, format!("{what} {v} is out of range")))
            })
            .collect()
    };
    let vector = match array.data_type() {
        DataType::Boolean => Vector::Bool(Arc::new(array.as_boolean().iter().flatten().collect())),
        DataType::Int8 => Vector::I8(Arc::new(prim!(Int8Type))),
        DataType::Int16 => Vector::I16(Arc::new(prim!(Int16Type))),
        DataType::Int32 => Vector::I32(Arc::new(prim!(Int32Type))),
        DataType::Int64 => Vector::I64(Arc::new(prim!(Int64Type))),
        DataType::UInt8 => Vector::I16(Arc::new(
            array
                .as_primitive::<UInt8Type>()
                .values()
                .iter()
                .map(|&v| i16::from(v))
                .collect(),
        )),
        DataType::UInt16 => Vector::I32(Arc::new(
            array
                .as_primitive::<UInt16Type>()
                .values()
                .iter()
                .map(|&v| i32::from(v))
                .collect(),
        )),
        DataType::UInt32 => Vector::I64(Arc::new(
            array
                .as_primitive::<UInt32Type>()
                .values()
                .iter()
                .map(|&v| i64::from(v))
                .collect(),
        )),
        DataType::UInt64 => Vector::I64(Arc::new(
            array
                .as_primitive::<UInt64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(row, &v)| {
                    i64::try_from(v).map_err(|_| problem(row, format!("{v} does not fit in i64")))
                })
                .collect::<Result<_>>()?,
        )),
        DataType::Float16 => Vector::F32(Arc::new(
            array
                .as_primitive::<Float16Type>()
                .values()
                .iter()
                .map(|v| v.to_f32())
                .collect(),
        )),
        DataType::Float32 => Vector::F32(Arc::new(prim!(Float32Type))),
        DataType::Float64 => Vector::F64(Arc::new(prim!(Float64Type))),
        DataType::Decimal32(_, scale) => decimals(
            array
                .as_primitive::<Decimal32Type>()
                .values()
                .iter()
                .map(|&v| v as f64),
            *scale,
        ),
        DataType::Decimal64(_, scale) => decimals(
            array
                .as_primitive::<Decimal64Type>()
                .values()
                .iter()
                .map(|&v| v as f64),
            *scale,
        ),
        DataType::Decimal128(_, scale) => decimals(
            array
                .as_primitive::<Decimal128Type>()
                .values()
                .iter()
                .map(|&v| v as f64),
            *scale,
        ),
        DataType::Utf8 => strings(array.as_string::<i32>().iter().flatten()),
        DataType::LargeUtf8 => strings(array.as_string::<i64>().iter().flatten()),
        DataType::Utf8View => strings(array.as_string_view().iter().flatten()),
        DataType::Dictionary(..) => dictionary_strings(column, array)?,
        DataType::Date32 => Vector::Date(Arc::new(prim!(Date32Type))),
        DataType::Date64 => {
            let days = exact(&prim!(Date64Type), MS_PER_DAY, "ms").map_err(|e| {
                RuntimeError::new(e.message.replace("a whole millisecond", "a whole day"))
            })?;
            Vector::Date(Arc::new(to_i32(days, "date")?))
        }
        DataType::Timestamp(unit, _) => Vector::Dt(Arc::new(match unit {
            TimeUnit::Second => prim!(TimestampSecondType)
                .iter()
                .enumerate()
                .map(|(row, &s)| {
                    s.checked_mul(1000)
                        .ok_or_else(|| problem(row, format!("timestamp {s} s is out of range")))
                })
                .collect::<Result<_>>()?,
            TimeUnit::Millisecond => prim!(TimestampMillisecondType),
            TimeUnit::Microsecond => exact(&prim!(TimestampMicrosecondType), 1_000, "us")?,
            TimeUnit::Nanosecond => exact(&prim!(TimestampNanosecondType), 1_000_000, "ns")?,
        })),
        DataType::Time32(TimeUnit::Second) => Vector::Second(Arc::new(prim!(Time32SecondType))),
        DataType::Time32(_) => Vector::Time(Arc::new(prim!(Time32MillisecondType))),
        DataType::Time64(TimeUnit::Microsecond) => Vector::Time(Arc::new(to_i32(
            exact(&prim!(Time64MicrosecondType), 1_000, "us")?,
            "time",
        )?)),
        DataType::Time64(_) => Vector::Time(Arc::new(to_i32(
            exact(&prim!(Time64NanosecondType), 1_000_000, "ns")?,
            "time",
        )?)),
        other => {
            bail!("column `{column}` has the Arrow type {other}, which horsec cannot represent")
        }
    };
    debug_assert_eq!(vector.ty(), natural);
    match declared {
        None => Ok(vector),
        Some(name) => retype(column, vector, name, first_row),
    }
}

/// The nearest doubles of decimals with `scale` digits after the point. Dividing by the
/// exact power of ten rounds once, as parsing the decimal's text does (for |v| < 2^53).
fn decimals(unscaled: impl Iterator<Item = f64>, scale: i8) -> Vector {
    let power = 10f64.powi(i32::from(scale.unsigned_abs()));
    Vector::F64(Arc::new(if scale >= 0 {
        unscaled.map(|v| v / power).collect()
    } else {
        unscaled.map(|v| v * power).collect()
    }))
}

fn strings<'a>(texts: impl Iterator<Item = &'a str>) -> Vector {
    let mut symbols = SymBuilder::default();
    for text in texts {
        symbols.push(text);
    }
    Vector::Sym(symbols.finish())
}

/// A dictionary-encoded string column as `sym`: each dictionary entry is looked up once.
fn dictionary_strings(column: &str, array: &dyn Array) -> Result<Vector> {
    let DataType::Dictionary(key_type, _) = array.data_type() else {
        bail!("column `{column}` is not a dictionary");
    };
    macro_rules! keyed {
        ($k:ty) => {{
            let dictionary = array.as_dictionary::<$k>();
            let keys: Vec<usize> = dictionary
                .keys()
                .values()
                .iter()
                .map(|&k| k as usize)
                .collect();
            (keys, dictionary.values().clone())
        }};
    }
    let (keys, values): (Vec<usize>, ArrayRef) = match key_type.as_ref() {
        DataType::Int8 => keyed!(Int8Type),
        DataType::Int16 => keyed!(Int16Type),
        DataType::Int32 => keyed!(Int32Type),
        DataType::Int64 => keyed!(Int64Type),
        DataType::UInt8 => keyed!(UInt8Type),
        DataType::UInt16 => keyed!(UInt16Type),
        DataType::UInt32 => keyed!(UInt32Type),
        DataType::UInt64 => keyed!(UInt64Type),
        other => bail!("column `{column}` has dictionary keys of type {other}"),
    };
    let entries: Vec<&str> = match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().map(|v| v.unwrap_or("")).collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().map(|v| v.unwrap_or("")).collect(),
        DataType::Utf8View => values.as_string_view().iter().map(|v| v.unwrap_or("")).collect(),
        other => bail!("column `{column}` has the Arrow type Dictionary({key_type}, {other}), which horsec cannot represent"),
    };
    let mut symbols = SymBuilder::with_capacity(keys.len());
    for key in keys {
        match entries.get(key) {
            Some(text) => symbols.push(text),
            None => bail!("column `{column}`: dictionary key {key} is out of range"),
        }
    }
    Ok(Vector::Sym(symbols.finish()))
}

/// Applies the `horsec:type` a writer recorded: the column's own HorseIR type.
fn retype(column: &str, vector: Vector, declared: &str, first_row: usize) -> Result<Vector> {
    let problem = |row: usize, what: String| {
        RuntimeError::new(format!(
            "column `{column}`, row {}: {what}",
            first_row + row + 1
        ))
    };
    Ok(match (declared, vector) {
        ("char", Vector::Sym(strings)) => {
            use rayon::prelude::*;
            // Each distinct text is checked once; the rows are mapped on every core.
            let bytes: Vec<Option<u8>> =
                strings.dict.strings.iter().map(|text| one_byte(text)).collect();
            let chars = strings
                .codes
                .par_iter()
                .map(|&code| bytes[code as usize])
                .collect::<Option<Vec<u8>>>();
            match chars {
                Some(chars) => Vector::Char(Arc::new(chars)),
                None => {
                    let row = strings
                        .codes
                        .iter()
                        .position(|&code| bytes[code as usize].is_none())
                        .unwrap_or(0);
                    let text = strings.get(row);
                    return Err(problem(row, format!("`{text}` is not one character")));
                }
            }
        }
        ("str", Vector::Sym(strings)) => Vector::Str(strings),
        ("month", Vector::I32(codes)) => Vector::Month(codes),
        ("minute", Vector::Second(seconds)) => {
            Vector::Minute(Arc::new(seconds.iter().map(|s| s.div_euclid(60)).collect()))
        }
        (_, vector) if vector.ty().to_string() == declared => vector,
        (declared, vector) => bail!(
            "column `{column}` is marked {HORSEC_TYPE_KEY}={declared} but holds Arrow data read as {}",
            vector.ty()
        ),
    })
}

/// The byte of a one-character text whose character is below U+0100 (a `char`).
fn one_byte(text: &str) -> Option<u8> {
    let mut chars = text.chars();
    let c = chars.next()?;
    (chars.next().is_none()).then_some(())?;
    u8::try_from(u32::from(c)).ok()
}

/// Whether `ty` is read as text (`sym`, or what a `horsec:type` makes of it).
fn is_text(ty: &DataType) -> bool {
    match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_text(values),
        _ => false,
    }
}

/// Reads one Arrow column as [`vector_from_arrow`] does, except that text stays a
/// [`SymBuilder`] borrowing the array's strings: the parts of a column read on several
/// cores merge their dictionaries once ([`columns_from_batches`]).
fn part_from_arrow<'a>(
    field: &Field,
    array: &'a dyn Array,
    first_row: usize,
) -> Result<ColumnPart<'a>> {
    if !is_text(array.data_type()) {
        return vector_from_arrow(field, array, first_row).map(ColumnPart::Vector);
    }
    let column = field.name().as_str();
    if array.null_count() > 0 {
        let row = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
        bail!(
            "column `{column}`, row {}: null value (horsec has no nulls)",
            first_row + row + 1
        );
    }
    let mut symbols = SymBuilder::with_capacity(array.len());
    match array.data_type() {
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .flatten()
            .for_each(|text| symbols.push(text)),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .flatten()
            .for_each(|text| symbols.push(text)),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .flatten()
            .for_each(|text| symbols.push(text)),
        _ => push_dictionary(column, array, &mut symbols)?,
    }
    Ok(ColumnPart::Syms(symbols))
}

/// Appends the rows of a dictionary-encoded text column: each entry is looked up once.
fn push_dictionary<'a>(
    column: &str,
    array: &'a dyn Array,
    symbols: &mut SymBuilder<'a>,
) -> Result<()> {
    let DataType::Dictionary(key_type, _) = array.data_type() else {
        bail!("column `{column}` is not a dictionary");
    };
    macro_rules! keyed {
        ($k:ty) => {{
            let dictionary = array.as_dictionary::<$k>();
            let texts = dictionary_texts(column, key_type, dictionary.values())?;
            symbols.push_keyed(
                &texts,
                dictionary.keys().values().iter().map(|&k| k as usize),
            )
        }};
    }
    let pushed = match key_type.as_ref() {
        DataType::Int8 => keyed!(Int8Type),
        DataType::Int16 => keyed!(Int16Type),
        DataType::Int32 => keyed!(Int32Type),
        DataType::Int64 => keyed!(Int64Type),
        DataType::UInt8 => keyed!(UInt8Type),
        DataType::UInt16 => keyed!(UInt16Type),
        DataType::UInt32 => keyed!(UInt32Type),
        DataType::UInt64 => keyed!(UInt64Type),
        other => bail!("column `{column}` has dictionary keys of type {other}"),
    };
    pushed.map_err(|key| {
        RuntimeError::new(format!(
            "column `{column}`: dictionary key {key} is out of range"
        ))
    })
}

/// The entries of an Arrow dictionary of text.
fn dictionary_texts<'a>(
    column: &str,
    key_type: &DataType,
    values: &'a ArrayRef,
) -> Result<Vec<&'a str>> {
    Ok(match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().map(|v| v.unwrap_or("")).collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().map(|v| v.unwrap_or("")).collect(),
        DataType::Utf8View => values.as_string_view().iter().map(|v| v.unwrap_or("")).collect(),
        other => bail!("column `{column}` has the Arrow type Dictionary({key_type}, {other}), which horsec cannot represent"),
    })
}

/// Reads record batches of one schema as raw columns, their rows one after another: every
/// batch is converted on its own core, then the parts of each column are joined.
pub(crate) fn columns_from_batches(
    schema: &arrow_schema::SchemaRef,
    batches: &[RecordBatch],
) -> Result<Vec<Vector>> {
    use rayon::prelude::*;
    if batches.is_empty() {
        return vectors_from_batch(&RecordBatch::new_empty(schema.clone()), 0);
    }
    let mut first_rows = Vec::with_capacity(batches.len());
    let mut rows = 0;
    for batch in batches {
        first_rows.push(rows);
        rows += batch.num_rows();
    }
    let parts = phases::time("convert", || {
        batches
            .par_iter()
            .zip(first_rows)
            .map(|(batch, first_row)| {
                batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(batch.columns())
                    .map(|(field, array)| part_from_arrow(field, array.as_ref(), first_row))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let columns = phases::time("join pieces", || join_column_parts(parts))?;
    // A `horsec:type` recorded on a text column applies to the joined column.
    schema
        .fields()
        .iter()
        .zip(columns)
        .map(
            |(field, vector)| match field.metadata().get(HORSEC_TYPE_KEY) {
                Some(declared) if is_text(field.data_type()) => {
                    retype(field.name(), vector, declared, 0)
                }
                _ => Ok(vector),
            },
        )
        .collect()
}

/// Reads a record batch as raw columns (`first_row` locates its rows in the file).
pub fn vectors_from_batch(batch: &RecordBatch, first_row: usize) -> Result<Vec<Vector>> {
    batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| vector_from_arrow(field, array.as_ref(), first_row))
        .collect()
}

/// A record batch as a HorseIR table (see the module documentation for the types).
pub fn table_from_batch(batch: &RecordBatch) -> Result<Table> {
    let columns = vectors_from_batch(batch, 0)?;
    Ok(Table {
        names: batch
            .schema()
            .fields()
            .iter()
            .map(|f| Arc::from(f.name().as_str()))
            .collect(),
        columns: columns.into_iter().map(Value::Vector).collect(),
    })
}

/// One HorseIR column as an Arrow field and array.
pub fn vector_to_arrow(name: &str, vector: &Vector) -> Result<(Field, ArrayRef)> {
    let marked = |field: Field, ty: &str| {
        field.with_metadata(HashMap::from([(
            HORSEC_TYPE_KEY.to_string(),
            ty.to_string(),
        )]))
    };
    let plain = |ty: DataType| Field::new(name, ty, false);
    Ok(match vector {
        Vector::Bool(v) => (
            plain(DataType::Boolean),
            Arc::new(BooleanArray::from(v.to_vec())) as ArrayRef,
        ),
        Vector::I8(v) => (plain(DataType::Int8), Arc::new(Int8Array::from(v.to_vec()))),
        Vector::I16(v) => (
            plain(DataType::Int16),
            Arc::new(Int16Array::from(v.to_vec())),
        ),
        Vector::I32(v) => (
            plain(DataType::Int32),
            Arc::new(Int32Array::from(v.to_vec())),
        ),
        Vector::I64(v) => (
            plain(DataType::Int64),
            Arc::new(Int64Array::from(v.to_vec())),
        ),
        Vector::F32(v) => (
            plain(DataType::Float32),
            Arc::new(Float32Array::from(v.to_vec())),
        ),
        Vector::F64(v) => (
            plain(DataType::Float64),
            Arc::new(Float64Array::from(v.to_vec())),
        ),
        Vector::Date(v) => (
            plain(DataType::Date32),
            Arc::new(Date32Array::from(v.to_vec())),
        ),
        Vector::Month(v) => (
            marked(plain(DataType::Int32), "month"),
            Arc::new(Int32Array::from(v.to_vec())),
        ),
        Vector::Minute(v) => (
            marked(plain(DataType::Time32(TimeUnit::Second)), "minute"),
            Arc::new(Time32SecondArray::from(
                v.iter().map(|m| m * 60).collect::<Vec<_>>(),
            )),
        ),
        Vector::Second(v) => (
            plain(DataType::Time32(TimeUnit::Second)),
            Arc::new(Time32SecondArray::from(v.to_vec())),
        ),
        Vector::Time(v) => (
            plain(DataType::Time32(TimeUnit::Millisecond)),
            Arc::new(Time32MillisecondArray::from(v.to_vec())),
        ),
        Vector::Dt(v) => (
            plain(DataType::Timestamp(TimeUnit::Millisecond, None)),
            Arc::new(TimestampMillisecondArray::from(v.to_vec())),
        ),
        Vector::Char(v) => (
            marked(plain(DataType::Utf8), "char"),
            Arc::new(StringArray::from_iter_values(
                v.iter().map(|&b| char::from(b).to_string()),
            )),
        ),
        Vector::Str(s) => (
            marked(plain(DataType::Utf8), "str"),
            Arc::new(StringArray::from_iter_values(s.iter())),
        ),
        Vector::Sym(s) => sym_to_arrow(name, s)?,
        Vector::Complex(_) => bail!("column `{name}` is complex, which Arrow cannot hold"),
    })
}

/// A `sym` column as `Dictionary(Int32, Utf8)`: its codes and dictionary as they are.
fn sym_to_arrow(name: &str, strings: &Strings) -> Result<(Field, ArrayRef)> {
    let keys = strings
        .codes
        .iter()
        .map(|&code| i32::try_from(code))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| RuntimeError::new(format!("column `{name}` has too many distinct symbols")))?;
    let values = StringArray::from_iter_values(strings.dict.strings.iter().map(|s| s.as_ref()));
    let array = DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), Arc::new(values))
        .map_err(|e| RuntimeError::new(format!("column `{name}`: {e}")))?;
    let ty = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Ok((Field::new(name, ty, false), Arc::new(array)))
}

/// A HorseIR value as a column: a vector, or an enumeration as its key values.
fn column_vector(name: &str, value: &Value) -> Result<Vector> {
    match value {
        Value::Vector(vector) => Ok(vector.clone()),
        Value::Device(device) => match device.host() {
            Some(vector) => Ok(vector.clone()),
            None => bail!("column `{name}` is still on the device"),
        },
        Value::Enum(enumeration) => enumeration.domain.gather(&enumeration.index),
        other => bail!(
            "column `{name}` is a {}, which is not a column of values",
            other.ty()
        ),
    }
}

/// A HorseIR result as one record batch: a table's columns (a keyed table's key columns
/// first), or a vector as the single column `value`.
pub fn value_to_batch(value: &Value) -> Result<RecordBatch> {
    let (names, columns): (Vec<Arc<str>>, Vec<Value>) = match value {
        Value::Table(table) => (table.names.clone(), table.columns.clone()),
        Value::KTable(keys, values) => (
            keys.names.iter().chain(&values.names).cloned().collect(),
            keys.columns
                .iter()
                .chain(&values.columns)
                .cloned()
                .collect(),
        ),
        other => (vec![Arc::from("value")], vec![other.clone()]),
    };
    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays = Vec::with_capacity(columns.len());
    for (name, column) in names.iter().zip(&columns) {
        let (field, array) = vector_to_arrow(name, &column_vector(name, column)?)?;
        fields.push(field);
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| RuntimeError::new(format!("cannot build the result batch: {e}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use arrow_array::{
        Date64Array, Decimal128Array, LargeStringArray, NullArray, Time64MicrosecondArray,
        TimestampMicrosecondArray, UInt64Array, UInt8Array,
    };

    fn read(array: ArrayRef) -> Result<Vector> {
        let field = Field::new("c", array.data_type().clone(), true);
        vector_from_arrow(&field, array.as_ref(), 0)
    }

    #[test]
    fn arrow_types_map_to_the_documented_horseir_types() {
        let decimals = Decimal128Array::from(vec![7, 123_456, -5])
            .with_precision_and_scale(15, 2)
            .expect("valid decimal type");
        assert_eq!(
            read(Arc::new(decimals)),
            Ok(Vector::F64(Arc::new(vec![0.07, 1234.56, -0.05])))
        );
        assert_eq!(
            read(Arc::new(UInt8Array::from(vec![255u8]))),
            Ok(Vector::I16(Arc::new(vec![255])))
        );
        assert_eq!(
            read(Arc::new(LargeStringArray::from(vec!["b", "a", "b"]))),
            Ok(Vector::Sym(Strings::from_strs(&["b", "a", "b"])))
        );
        assert_eq!(
            read(Arc::new(Date64Array::from(vec![86_400_000 * 3]))),
            Ok(Vector::Date(Arc::new(vec![3])))
        );
        assert_eq!(
            read(Arc::new(TimestampMicrosecondArray::from(vec![1_500_000]))),
            Ok(Vector::Dt(Arc::new(vec![1_500])))
        );
        assert_eq!(
            read(Arc::new(Time64MicrosecondArray::from(vec![2_000]))),
            Ok(Vector::Time(Arc::new(vec![2])))
        );
    }

    #[test]
    fn inexact_values_nulls_and_unrepresentable_types_are_errors_naming_the_column() {
        let error = read(Arc::new(UInt64Array::from(vec![1, u64::MAX]))).unwrap_err();
        assert_eq!(
            error.message,
            format!("column `c`, row 2: {} does not fit in i64", u64::MAX)
        );
        let error = read(Arc::new(TimestampMicrosecondArray::from(vec![1_001]))).unwrap_err();
        assert_eq!(
            error.message,
            "column `c`, row 1: 1001 us is not a whole millisecond"
        );
        let error = read(Arc::new(Date64Array::from(vec![1]))).unwrap_err();
        assert_eq!(error.message, "column `c`, row 1: 1 ms is not a whole day");
        let error = read(Arc::new(Int32Array::from(vec![Some(1), None]))).unwrap_err();
        assert_eq!(
            error.message,
            "column `c`, row 2: null value (horsec has no nulls)"
        );
        let error = read(Arc::new(NullArray::new(0))).unwrap_err();
        assert_eq!(
            error.message,
            "column `c` has the Arrow type Null, which horsec cannot represent"
        );
    }

    /// A table of every type horsec writes.
    pub(crate) fn every_type() -> Table {
        let vectors = vec![
            ("b", Vector::Bool(Arc::new(vec![true, false]))),
            ("c", Vector::Char(Arc::new(vec![b'R', b'F']))),
            ("i8", Vector::I8(Arc::new(vec![-1, 2]))),
            ("i16", Vector::I16(Arc::new(vec![-300, 2]))),
            ("i32", Vector::I32(Arc::new(vec![i32::MIN, 7]))),
            ("i64", Vector::I64(Arc::new(vec![i64::MAX, -7]))),
            ("f32", Vector::F32(Arc::new(vec![1.5, -0.25]))),
            ("f64", Vector::F64(Arc::new(vec![0.07, 1e300]))),
            ("sym", Vector::Sym(Strings::from_strs(&["MAIL", "AIR"]))),
            ("str", Vector::Str(Strings::from_strs(&["a b", ""]))),
            ("month", Vector::Month(Arc::new(vec![23_964, 0]))),
            ("date", Vector::Date(Arc::new(vec![10_561, -1]))),
            ("minute", Vector::Minute(Arc::new(vec![61, 0]))),
            ("second", Vector::Second(Arc::new(vec![3_661, 0]))),
            ("time", Vector::Time(Arc::new(vec![3_661_001, 0]))),
            ("dt", Vector::Dt(Arc::new(vec![912_470_400_123, -1]))),
        ];
        Table {
            names: vectors.iter().map(|(n, _)| Arc::from(*n)).collect(),
            columns: vectors.into_iter().map(|(_, v)| Value::Vector(v)).collect(),
        }
    }

    #[test]
    fn every_written_type_reads_back_as_itself() {
        let table = every_type();
        let batch = value_to_batch(&Value::Table(Arc::new(table.clone()))).expect("writable");
        assert_eq!(table_from_batch(&batch), Ok(table));
    }

    #[test]
    fn enumerations_are_written_as_their_keys_and_complex_is_refused() {
        let keys = Value::Enum(crate::value::Enumeration {
            domain: Vector::I32(Arc::new(vec![10, 20, 30])),
            index: Arc::new(vec![2, 0]),
        });
        let batch = value_to_batch(&keys).expect("writable");
        assert_eq!(batch.schema().field(0).name(), "value");
        assert_eq!(
            table_from_batch(&batch).expect("readable").columns,
            vec![Value::Vector(Vector::I32(Arc::new(vec![30, 10])))]
        );
        let complex = Value::Vector(Vector::Complex(Arc::new(vec![])));
        assert_eq!(
            value_to_batch(&complex).unwrap_err().message,
            "column `value` is complex, which Arrow cannot hold"
        );
    }
}
