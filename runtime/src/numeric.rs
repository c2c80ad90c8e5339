//! Numeric results both backends must agree on, with the CPU's error text: the CPU computes
//! them element by element, and the engine names the element a GPU kernel recorded as
//! failing with the same function.

/// The largest `n` whose factorial is an i64 (20! = 2432902008176640000).
pub const MAX_FACTORIAL: i64 = 20;

/// `n!`, or why it is not an i64 (the message after `@fact: `): a negative `n` has none,
/// and 21! exceeds i64.
pub fn factorial(n: i64) -> Result<i64, String> {
    if !(0..=MAX_FACTORIAL).contains(&n) {
        return Err(format!("{n}! is not an i64"));
    }
    Ok((1..=n).product())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorials_end_at_twenty() {
        assert_eq!(factorial(0), Ok(1));
        assert_eq!(factorial(20), Ok(2_432_902_008_176_640_000));
        assert_eq!(factorial(21), Err("21! is not an i64".to_string()));
        assert_eq!(factorial(-1), Err("-1! is not an i64".to_string()));
        // The CPU's former definition, by checked products, agrees on the boundary.
        assert!((1..=21i64)
            .try_fold(1i64, |acc, k| acc.checked_mul(k))
            .is_none());
    }
}
