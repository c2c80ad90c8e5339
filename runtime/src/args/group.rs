//! `@group_aggregate`'s argument checks, shared by the CPU builtin and the GPU library kernel
//! so that both accept and refuse the same calls with the same messages.
//!
//! `@group_aggregate(k, ops, x1, …, xn)`: `k` the key as for `@group`; `ops` a sym vector
//! naming one reduction per result; `sum` and `avg` each take the next value column, `len`
//! (the group's row count) takes none. Value columns are numeric (bool, integers, floats) and
//! as long as the key. The result is a list: the groups' first rows (`@keys(@group(k))`),
//! then one vector per op with one element per group, groups in `@group`'s order.

use crate::args::Args;
use crate::bail;
use crate::error::Result;
use crate::types::Type;

/// One reduction of `@group_aggregate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// `@sum` of a value column: i64 for integers (wrapping), f64 for floats.
    Sum,
    /// `@avg` of a value column: f64.
    Avg,
    /// `@len` of the group's rows: i64.
    Len,
}

impl Reduction {
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Avg => "avg",
            Reduction::Len => "len",
        }
    }

    pub fn from_name(name: &str) -> Option<Reduction> {
        match name {
            "sum" => Some(Reduction::Sum),
            "avg" => Some(Reduction::Avg),
            "len" => Some(Reduction::Len),
            _ => None,
        }
    }

    /// Whether it reads a value column.
    pub fn takes_value(self) -> bool {
        self != Reduction::Len
    }

    /// The type of its result for a value column of type `value` (`None` for `len`).
    pub fn result_type(self, value: Option<&Type>) -> Type {
        match (self, value) {
            (Reduction::Sum, Some(t)) if t.is_integer() => Type::I64,
            (Reduction::Sum | Reduction::Avg, _) => Type::F64,
            (Reduction::Len, _) => Type::I64,
        }
    }
}

/// The types `@group_aggregate(k, ops, x…)` gives when its result list is spread over one
/// target per cell (`first, r1, … = @group_aggregate(…)`, as the outliner writes it): i64
/// first rows, then each reduction's type. `ops` are the reductions' names, `values` the
/// value columns' types; `None` when the names or the column count do not fit (the call's
/// own checks then report it when it runs).
pub fn spread_result_types(ops: &[&str], values: &[Type]) -> Option<Vec<Type>> {
    let mut types = vec![Type::I64];
    let mut next = values.iter();
    for name in ops {
        let reduction = Reduction::from_name(name)?;
        let value = if reduction.takes_value() {
            Some(next.next()?)
        } else {
            None
        };
        types.push(reduction.result_type(value));
    }
    next.next().is_none().then_some(types)
}

/// One result of `@group_aggregate`: its reduction and the index (into the call's
/// arguments) of its value column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregate {
    pub reduction: Reduction,
    pub value: Option<usize>,
}

/// The checked reductions of a `@group_aggregate` call, each with the argument index of its
/// value column. Value columns are checked for type here and for length by
/// [`check_value_lengths`].
pub(crate) fn group_aggregate_ops(args: &Args<'_, '_>) -> Result<Vec<Aggregate>> {
    if args.len() < 2 {
        bail!("takes at least 2 arguments, got {}", args.len());
    }
    let ops = args.vector(1)?;
    let Some(names) = ops.as_strings() else {
        bail!("argument 2: the reductions must be sym, got {}", ops.ty());
    };
    let mut next = 2;
    let mut aggregates = Vec::with_capacity(names.len());
    for i in 0..names.len() {
        let name = names.get(i);
        let Some(reduction) = Reduction::from_name(name) else {
            bail!("argument 2: unknown reduction `{name}` (expected sum, avg or len)");
        };
        let value = if reduction.takes_value() {
            if next >= args.len() {
                bail!("the reduction `{name}` has no value column");
            }
            next += 1;
            Some(next - 1)
        } else {
            None
        };
        aggregates.push(Aggregate { reduction, value });
    }
    if next != args.len() {
        bail!(
            "{} value column(s) for {} reduction(s) that take one",
            args.len() - 2,
            next - 2
        );
    }
    for aggregate in &aggregates {
        if let Some(i) = aggregate.value {
            let ty = args.value(i)?.ty();
            if !ty.is_real() {
                bail!(
                    "argument {}: cannot {} {ty}",
                    i + 1,
                    aggregate.reduction.name()
                );
            }
        }
    }
    Ok(aggregates)
}

/// Fails unless every value column of `aggregates` has `rows` elements (the `@index` of a
/// group's rows into a shorter column would fail).
pub(crate) fn check_value_lengths(
    args: &Args<'_, '_>,
    aggregates: &[Aggregate],
    rows: usize,
) -> Result<()> {
    for aggregate in aggregates {
        if let Some(i) = aggregate.value {
            let len = args.value(i)?.len();
            if len != rows {
                bail!("argument {}: {} values for {rows} key rows", i + 1, len);
            }
        }
    }
    Ok(())
}
