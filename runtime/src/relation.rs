//! The arguments and results of the relation builtins (`@tuple_unique`, `@tuple_diff`,
//! `@tuple_merge`, `@sorted_join`, and the relations of `@multiway_join`), checked and shaped
//! here once for both backends (`cpu/relation.rs` and `gpu/relation.rs`), so that a program
//! gets the same errors on either.
//!
//! A relation is a list of i64 columns of one length (at least one column), each on the host
//! or, on the GPU backend, already on the device (a kernel's output). Row `r` is the tuple of
//! the columns' `r`-th elements; tuples order lexicographically, column 0 most significant.

use std::borrow::Cow;
use std::sync::Arc;

use crate::args::ArgValue;
use crate::bail;
use crate::error::Result;
use crate::value::{DeviceVector, List, Value, Vector};

/// One column of a relation argument.
pub enum RelationColumn<'v> {
    Host(Cow<'v, [i64]>),
    /// An i64 vector in device memory (two words per element).
    Device(&'v DeviceVector),
}

impl RelationColumn<'_> {
    pub fn len(&self) -> usize {
        match self {
            RelationColumn::Host(c) => c.len(),
            RelationColumn::Device(d) => d.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A checked relation argument: its columns, all of `rows` elements.
pub struct RelationArgument<'v> {
    pub columns: Vec<RelationColumn<'v>>,
    pub rows: usize,
}

impl<'v> RelationArgument<'v> {
    /// The columns as host slices; None when some column is on the device (the CPU backend
    /// never sees one: the interpreter hands host steps the host copies).
    pub fn host_columns(&self) -> Option<Vec<&[i64]>> {
        self.columns
            .iter()
            .map(|c| match c {
                RelationColumn::Host(c) => Some(c.as_ref()),
                RelationColumn::Device(_) => None,
            })
            .collect()
    }

    /// The columns as owned host vectors (see [`RelationArgument::host_columns`]).
    pub fn into_host_columns(self) -> Result<Vec<Vec<i64>>> {
        self.columns
            .into_iter()
            .map(|c| match c {
                RelationColumn::Host(c) => Ok(c.into_owned()),
                RelationColumn::Device(_) => {
                    bail!("a relation column is on the device where the host needs it")
                }
            })
            .collect()
    }
}

/// Argument `i` (0-based) as a value; a function literal or a missing argument is an error.
pub fn argument<'v>(args: &[ArgValue<'v>], i: usize) -> Result<&'v Value> {
    match args.get(i) {
        Some(ArgValue::Value(v)) => Ok(v),
        Some(ArgValue::Function(_)) => {
            bail!("argument {} must be a value, got a function literal", i + 1)
        }
        None => bail!("missing argument {}", i + 1),
    }
}

/// Fails unless there are exactly `n` arguments.
pub fn exactly(args: &[ArgValue<'_>], n: usize) -> Result<()> {
    if args.len() != n {
        bail!("takes {n} argument(s), got {}", args.len());
    }
    Ok(())
}

/// The cells of a relation value: a list gives one column per cell, a vector is one column.
fn cells(value: &Value) -> Vec<Cow<'_, Value>> {
    match value {
        Value::List(list @ List::Flat { .. }) => list.cells().into_iter().map(Cow::Owned).collect(),
        Value::List(List::Mixed(cells)) => cells.iter().map(Cow::Borrowed).collect(),
        other => vec![Cow::Borrowed(other)],
    }
}

/// Argument `i` (0-based) of a relation builtin as i64 columns of one length; at least one
/// column.
pub fn relation_argument<'v>(args: &[ArgValue<'v>], i: usize) -> Result<RelationArgument<'v>> {
    let value = argument(args, i)?;
    let cells = cells(value);
    if cells.is_empty() {
        bail!("argument {} has no columns", i + 1);
    }
    let mut columns = Vec::with_capacity(cells.len());
    for (c, cell) in cells.into_iter().enumerate() {
        let column = match cell {
            Cow::Borrowed(Value::Vector(Vector::I64(v))) => {
                RelationColumn::Host(Cow::Borrowed(v.as_slice()))
            }
            Cow::Owned(Value::Vector(Vector::I64(v))) => {
                RelationColumn::Host(Cow::Owned(Arc::unwrap_or_clone(v)))
            }
            Cow::Borrowed(Value::Device(d)) if d.ty == crate::types::Type::I64 => {
                RelationColumn::Device(d)
            }
            other => bail!(
                "argument {}: column {c} is {}, relation columns must be i64",
                i + 1,
                other.ty()
            ),
        };
        columns.push(column);
    }
    let rows = columns[0].len();
    if let Some(c) = columns.iter().find(|c| c.len() != rows) {
        bail!(
            "argument {}: columns have different lengths ({rows} vs {})",
            i + 1,
            c.len()
        );
    }
    Ok(RelationArgument { columns, rows })
}

/// The single relation argument of `@tuple_unique`.
pub fn relation_single<'v>(args: &[ArgValue<'v>]) -> Result<RelationArgument<'v>> {
    exactly(args, 1)?;
    relation_argument(args, 0)
}

/// Two relation arguments of one arity.
pub fn relation_pair<'v>(
    args: &[ArgValue<'v>],
) -> Result<(RelationArgument<'v>, RelationArgument<'v>)> {
    exactly(args, 2)?;
    let a = relation_argument(args, 0)?;
    let b = relation_argument(args, 1)?;
    if a.columns.len() != b.columns.len() {
        bail!(
            "the relations have different arities ({} vs {})",
            a.columns.len(),
            b.columns.len()
        );
    }
    Ok((a, b))
}

/// The error for argument `arg` (0-based) whose row `row` does not come after row `row - 1`.
pub fn not_sorted(arg: usize, row: usize, strictly: bool) -> String {
    if strictly {
        format!(
            "argument {} is not sorted and duplicate-free (row {row} does not come after row {})",
            arg + 1,
            row - 1
        )
    } else {
        format!(
            "argument {} is not sorted (row {row} comes before row {})",
            arg + 1,
            row - 1
        )
    }
}

/// The error for a join whose number of pairs does not fit the GPU's 32-bit counts.
pub const TOO_MANY_PAIRS: &str = "the join has 2^32 or more pairs";

/// A relation value from host columns.
pub fn relation_value(columns: Vec<Vec<i64>>) -> Value {
    let mut offsets = Vec::with_capacity(columns.len() + 1);
    offsets.push(0);
    let mut values = Vec::with_capacity(columns.iter().map(Vec::len).sum());
    for c in columns {
        values.extend(c);
        offsets.push(values.len());
    }
    Value::List(List::Flat {
        values: Vector::I64(Arc::new(values)),
        offsets: Arc::new(offsets),
    })
}

/// `@sorted_join`'s result from host row numbers: `(probe rows, build rows)`, the layout of
/// `@join_index`.
pub fn join_pairs_value(mut probe_rows: Vec<i64>, build_rows: Vec<i64>) -> Value {
    let n = probe_rows.len();
    probe_rows.extend(build_rows);
    Value::List(List::Flat {
        values: Vector::I64(Arc::new(probe_rows)),
        offsets: Arc::new(vec![0, n, 2 * n]),
    })
}

/// A relation value (or `@sorted_join`'s pairs) whose columns stay on the device: each
/// buffer holds `rows` i64 elements (two words each).
pub fn device_relation_value(columns: Vec<Arc<crate::gpu::GpuBuffer<u32>>>, rows: usize) -> Value {
    Value::List(List::Mixed(Arc::new(
        columns
            .into_iter()
            .map(|buffer| {
                Value::Device(DeviceVector::new(
                    crate::types::Type::I64,
                    rows,
                    None,
                    buffer,
                ))
            })
            .collect(),
    )))
}

/// The checked arguments of `@join_unique(probe, build, keys, picks[, full])`: the distinct
/// tuples `picks` of the equi-join of the first `keys` columns of `probe` with the first
/// `keys` columns of `build` (sorted on them, duplicates allowed), less those in `full`.
pub struct JoinUniqueArguments<'v> {
    pub probe: RelationArgument<'v>,
    pub build: RelationArgument<'v>,
    /// Key columns: the first `keys` of each side.
    pub keys: usize,
    /// The result's columns: `p < probe columns` is probe column `p`, else build column
    /// `p - probe columns`.
    pub picks: Vec<usize>,
    /// Tuples left out of the result (sorted and duplicate-free, of `picks.len()` columns).
    pub full: Option<RelationArgument<'v>>,
}

impl JoinUniqueArguments<'_> {
    /// Whether pick `p` reads the probe side, and which column of it (or of the build side).
    pub fn pick(&self, p: usize) -> (bool, usize) {
        let probe_columns = self.probe.columns.len();
        match self.picks[p] {
            c if c < probe_columns => (true, c),
            c => (false, c - probe_columns),
        }
    }
}

/// Non-negative integers of argument `i` (0-based), named `what` in errors.
fn counts_argument(args: &[ArgValue<'_>], i: usize, what: &str) -> Result<Vec<usize>> {
    let Value::Vector(Vector::I64(v)) = argument(args, i)? else {
        bail!("argument {} ({what}) must be i64", i + 1);
    };
    v.iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| {
                crate::error::RuntimeError::new(format!(
                    "argument {} ({what}) has a negative entry {x}",
                    i + 1
                ))
            })
        })
        .collect()
}

/// The arguments of `@join_unique`, checked the same on both backends.
pub fn join_unique_arguments<'v>(args: &[ArgValue<'v>]) -> Result<JoinUniqueArguments<'v>> {
    if !(4..=5).contains(&args.len()) {
        bail!("takes 4 or 5 arguments, got {}", args.len());
    }
    let probe = relation_argument(args, 0)?;
    let build = relation_argument(args, 1)?;
    let keys = match counts_argument(args, 2, "the number of key columns")?.as_slice() {
        [k] => *k,
        other => bail!(
            "argument 3 (the number of key columns) must be one number, got {}",
            other.len()
        ),
    };
    if keys == 0 || keys > probe.columns.len() || keys > build.columns.len() {
        bail!(
            "argument 3: {keys} key columns, but the relations have {} and {} columns (at least one key)",
            probe.columns.len(),
            build.columns.len()
        );
    }
    let picks = counts_argument(args, 3, "the result's columns")?;
    let available = probe.columns.len() + build.columns.len();
    if picks.is_empty() {
        bail!("argument 4 (the result's columns) is empty");
    }
    if let Some(&p) = picks.iter().find(|&&p| p >= available) {
        bail!("argument 4: column {p} is past the {available} columns of both relations");
    }
    let full = if args.len() == 5 {
        let full = relation_argument(args, 4)?;
        if full.columns.len() != picks.len() {
            bail!(
                "the relations have different arities ({} vs {})",
                picks.len(),
                full.columns.len()
            );
        }
        Some(full)
    } else {
        None
    };
    Ok(JoinUniqueArguments {
        probe,
        build,
        keys,
        picks,
        full,
    })
}

/// A test's batch size for `@join_unique` (0: none); see [`join_batch_rows`].
static JOIN_BATCH_ROWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Makes `@join_unique` on both backends write at most `rows` join pairs per batch (`None`:
/// the backends' own sizes again), so that tests batch small inputs.
pub fn set_join_batch_rows(rows: Option<usize>) {
    JOIN_BATCH_ROWS.store(rows.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
}

/// The join pairs `@join_unique` writes per batch: [`set_join_batch_rows`]'s, else
/// `HORSEC_JOIN_BATCH_ROWS`'s (a positive number), else `default` (the backend's own).
pub fn join_batch_rows(default: usize) -> Result<usize> {
    match JOIN_BATCH_ROWS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => match std::env::var("HORSEC_JOIN_BATCH_ROWS") {
            Err(_) => Ok(default),
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => bail!("HORSEC_JOIN_BATCH_ROWS is `{text}`, not a positive number of rows"),
            },
        },
        n => Ok(n),
    }
}
