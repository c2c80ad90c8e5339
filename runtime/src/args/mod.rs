//! The arguments of a builtin call and their checked accessors, shared by both backends so
//! that the CPU builtins and the GPU library kernels accept and refuse the same calls with the
//! same messages.

use std::borrow::Cow;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::plan::Callee;
use crate::value::{Value, Vector};

pub(crate) mod graph;
pub mod group;
pub(crate) mod join;

/// An argument of a builtin call: a value, or a function literal (`@sum` in `@each(@sum, x)`).
#[derive(Clone, Copy, Debug)]
pub enum ArgValue<'a> {
    Value(&'a Value),
    Function(Callee),
}

/// The arguments of one builtin call, with checked accessors.
pub(crate) struct Args<'a, 'v> {
    pub list: &'a [ArgValue<'v>],
}

impl<'a, 'v> Args<'a, 'v> {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Fails unless there are exactly `n` arguments.
    pub fn exactly(&self, n: usize) -> Result<()> {
        if self.list.len() != n {
            bail!("takes {n} argument(s), got {}", self.list.len());
        }
        Ok(())
    }

    /// Argument `i` as a value (not a function literal).
    pub fn value(&self, i: usize) -> Result<&'v Value> {
        match self.list.get(i) {
            Some(ArgValue::Value(v)) => Ok(v),
            Some(ArgValue::Function(_)) => {
                bail!("argument {} must be a value, got a function literal", i + 1)
            }
            None => bail!("missing argument {}", i + 1),
        }
    }

    /// Argument `i` as a vector; an enum stands for its values (its domain gathered).
    pub fn vector(&self, i: usize) -> Result<Cow<'v, Vector>> {
        as_vector(self.value(i)?)
            .map_err(|e| RuntimeError::new(format!("argument {}: {}", i + 1, e.message)))
    }

    /// Argument `i` as a function literal.
    pub fn function(&self, i: usize) -> Result<Callee> {
        match self.list.get(i) {
            Some(ArgValue::Function(f)) => Ok(*f),
            Some(ArgValue::Value(v)) => {
                bail!(
                    "argument {} must be a function literal, got a {}",
                    i + 1,
                    v.ty()
                )
            }
            None => bail!("missing argument {}", i + 1),
        }
    }

    /// How many leading arguments are function literals.
    pub fn leading_functions(&self) -> usize {
        self.list
            .iter()
            .take_while(|a| matches!(a, ArgValue::Function(_)))
            .count()
    }
}

/// A value used where a vector is expected: a vector itself, or the values of an enum.
/// The elements `@take(n, x)` (`take`) or `@drop(n, x)` keep of `len`: the first or last
/// `|n|` (take), or all but those (drop), clamped to `len`. `n` is one integer, or the
/// call's error.
pub(crate) fn take_or_drop_range(
    take: bool,
    n: &Vector,
    len: usize,
) -> Result<std::ops::Range<usize>> {
    let n = match (n.len(), n.integer_at(0)) {
        (1, Some(n)) => n,
        _ => bail!(
            "expected one integer count, got {} element(s) of {}",
            n.len(),
            n.ty()
        ),
    };
    let k = usize::try_from(n.unsigned_abs())
        .unwrap_or(usize::MAX)
        .min(len);
    Ok(match (take, n >= 0) {
        (true, true) => 0..k,
        (true, false) => len - k..len,
        (false, true) => k..len,
        (false, false) => 0..len - k,
    })
}

pub(crate) fn as_vector(value: &Value) -> Result<Cow<'_, Vector>> {
    match value {
        Value::Vector(v) => Ok(Cow::Borrowed(v)),
        Value::Enum(e) => Ok(Cow::Owned(e.domain.gather(&e.index)?)),
        other => bail!("expected a vector, got a {}", other.ty()),
    }
}
