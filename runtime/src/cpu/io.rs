//! Text and random numbers: `@str @format @rand @randk @seed` (`@print` goes straight to
//! the environment).
//!
//! `@str(x)` is one `str` holding the elements of `x` as their literal text joined by `,`
//! (HorsePower's `str((-1,2,3):i32)` is `'-1,2,3'`); a table's rows are joined by newlines.
//! `@format(x)` is one `str` holding the aligned table a person would see.
//!
//! Random numbers come from a SplitMix64 generator whose state belongs to the running
//! thread: the same `@seed` gives the same numbers on every run. The default seed is 16807,
//! as HorsePower's.

use std::cell::Cell;

use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::format::{write_value, OutputFormat};
use crate::value::{Strings, Value, Vector};

const DEFAULT_SEED: u64 = 16_807;

thread_local! {
    static RANDOM_STATE: Cell<u64> = const { Cell::new(DEFAULT_SEED) };
}

fn next_random() -> u64 {
    RANDOM_STATE.with(|state| {
        let s = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// A random integer in `[0, bound)` (`bound` positive), without modulo bias.
fn below(bound: i64) -> Result<i64> {
    let Ok(bound) = u64::try_from(bound) else {
        bail!("the range must be positive, got {bound}");
    };
    if bound == 0 {
        bail!("the range must be positive, got 0");
    }
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let r = next_random();
        if r < zone {
            return Ok((r % bound) as i64);
        }
    }
}

fn integers(v: &Vector) -> Result<std::borrow::Cow<'_, [i64]>> {
    v.to_i64s()
        .ok_or_else(|| RuntimeError::new(format!("expected integers, got {}", v.ty())))
}

/// `@rand(x)`: for each `x_i`, a random i64 in `[0, x_i)`.
pub(crate) fn rand(x: &Vector) -> Result<Value> {
    let bounds = integers(x)?;
    Ok(Value::from_i64s(
        bounds
            .iter()
            .map(|&b| below(b))
            .collect::<Result<Vec<_>>>()?,
    ))
}

/// `@randk(n, x)`: `n` random i64 in `[0, x)`.
pub(crate) fn randk(n: &Vector, x: &Vector) -> Result<Value> {
    let (n, bound) = match (n.len(), n.integer_at(0), x.len(), x.integer_at(0)) {
        (1, Some(n), 1, Some(x)) => (n, x),
        _ => bail!("expected two integers (count, range)"),
    };
    let n = crate::sizes::checked_count(n, 8)
        .map_err(|e| RuntimeError::new(format!("cannot make {n} random numbers: {e}")))?;
    let mut out = crate::sizes::try_vec_with_capacity(n)
        .map_err(|e| RuntimeError::new(format!("cannot make {n} random numbers: {e}")))?;
    for _ in 0..n {
        out.push(below(bound)?);
    }
    Ok(Value::from_i64s(out))
}

/// `@seed(x)`: restarts the generator from `x`; returns `x` as i64.
pub(crate) fn seed(x: &Vector) -> Result<Value> {
    let seed = match (x.len(), x.integer_at(0)) {
        (1, Some(s)) => s,
        _ => bail!("expected one integer seed"),
    };
    RANDOM_STATE.with(|state| state.set(seed as u64));
    Ok(Value::from_i64s(vec![seed]))
}

/// `@str` and `@format`.
pub(crate) fn to_text(b: Builtin, value: &Value) -> Result<Value> {
    let format = if b == Builtin::Format {
        OutputFormat::Table
    } else {
        OutputFormat::Tsv
    };
    let mut bytes = Vec::new();
    write_value(value, format, &mut bytes)
        .map_err(|e| RuntimeError::new(format!("cannot format the value: {e}")))?;
    let text = String::from_utf8_lossy(&bytes);
    let whole_text = b == Builtin::Format
        || matches!(value, Value::Table(_) | Value::KTable(..) | Value::Dict(_));
    let text = if whole_text {
        text.trim_end_matches('\n').to_string()
    } else {
        text.lines().collect::<Vec<_>>().join(",")
    };
    Ok(Value::Vector(Vector::Str(Strings::from_strs(&[text]))))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::Value;

    fn values(v: &Value) -> Vec<i64> {
        v.as_vector().and_then(|v| v.as_i64s()).unwrap().to_vec()
    }

    #[test]
    fn seeded_random_numbers_repeat_and_stay_in_range() {
        run(B::Seed, &[i32s(&[42])]).unwrap();
        let first = values(&run(B::Randk, &[i32s(&[50]), i32s(&[10])]).unwrap());
        run(B::Seed, &[i32s(&[42])]).unwrap();
        let again = values(&run(B::Randk, &[i32s(&[50]), i32s(&[10])]).unwrap());
        assert_eq!(first, again);
        assert!(first.iter().all(|&r| (0..10).contains(&r)));
        assert_eq!(values(&run(B::Rand, &[i32s(&[1, 1])]).unwrap()), [0, 0]);
        assert!(run(B::Rand, &[i32s(&[0])]).is_err());
        assert!(run(B::Randk, &[i32s(&[-1]), i32s(&[5])]).is_err());
    }

    #[test]
    fn str_joins_element_text() {
        assert_eq!(
            texts(&run(B::Str, &[i32s(&[-1, 2, 3])]).unwrap()),
            ["-1,2,3"]
        );
        assert_eq!(texts(&run(B::Str, &[syms(&["a"])]).unwrap()), ["a"]);
        assert_eq!(texts(&run(B::Format, &[i64s(&[7])]).unwrap()).len(), 1);
    }
}
