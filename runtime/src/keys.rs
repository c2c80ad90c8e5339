//! The key rules every backend follows: which columns of a `@group`, `@order`, `@unique`,
//! `@member` or `@join_index` argument are keys, and which columns compare with which
//! (their domain). The CPU and GPU key encodings both start here.

use std::borrow::Cow;

use crate::args::as_vector;
use crate::bail;
use crate::error::Result;
use crate::value::{List, Value, Vector};

/// The comparison domain of a column (shared with the GPU keys, which pair columns by the
/// same rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    Integer,
    Float,
    Strings,
    Other,
}

pub(crate) fn domain(v: &Vector) -> Domain {
    domain_of_type(&v.ty())
}

/// [`domain`] of a vector of type `ty` (a device vector has a type, not host elements).
pub(crate) fn domain_of_type(ty: &crate::types::Type) -> Domain {
    use crate::types::Type;
    match ty {
        Type::Bool | Type::I8 | Type::I16 | Type::I32 | Type::I64 => Domain::Integer,
        Type::F32 | Type::F64 => Domain::Float,
        Type::Sym | Type::Str => Domain::Strings,
        _ => Domain::Other,
    }
}

/// The key columns of a `@group`/`@order`/`@join_index` argument: a vector (or enum) is one
/// column, a list gives one column per cell.
pub(crate) fn key_columns(value: &Value) -> Result<Vec<Cow<'_, Vector>>> {
    match value {
        Value::List(list @ List::Flat { .. }) => Ok(list
            .cells()
            .into_iter()
            .filter_map(|c| match c {
                Value::Vector(v) => Some(Cow::Owned(v)),
                _ => None,
            })
            .collect()),
        Value::List(List::Mixed(cells)) => cells.iter().map(as_vector).collect(),
        other => Ok(vec![as_vector(other)?]),
    }
}

/// The number of rows shared by key columns; columns of different lengths are an error.
pub(crate) fn common_rows(columns: &[Cow<'_, Vector>]) -> Result<usize> {
    let rows = columns.first().map_or(0, |c| c.len());
    if let Some(c) = columns.iter().find(|c| c.len() != rows) {
        bail!("key columns have different lengths ({rows} vs {})", c.len());
    }
    Ok(rows)
}
