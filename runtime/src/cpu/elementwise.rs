//! The shape rule of element-wise binary builtins: equal lengths, or one side of length 1
//! broadcast against the other.

use crate::bail;
use crate::error::Result;

/// The result length of an element-wise operation on lengths `n` and `m`.
pub(crate) fn result_len(n: usize, m: usize) -> Result<usize> {
    match (n, m) {
        (n, m) if n == m => Ok(n),
        (1, m) => Ok(m),
        (n, 1) => Ok(n),
        (n, m) => bail!("length mismatch ({n} vs {m})"),
    }
}

/// `f(x[i], y[i])` for each position, broadcasting a length-1 side.
pub(crate) fn zip_with<A: Copy, B: Copy, R>(
    x: &[A],
    y: &[B],
    f: impl Fn(A, B) -> R,
) -> Result<Vec<R>> {
    result_len(x.len(), y.len())?;
    Ok(match (x, y) {
        _ if x.len() == y.len() => x.iter().zip(y).map(|(&a, &b)| f(a, b)).collect(),
        ([a], _) => y.iter().map(|&b| f(*a, b)).collect(),
        (_, [b]) => x.iter().map(|&a| f(a, *b)).collect(),
        _ => Vec::new(),
    })
}

/// Like [`zip_with`] for an operation that can fail on some element pair.
pub(crate) fn try_zip_with<A: Copy, B: Copy, R>(
    x: &[A],
    y: &[B],
    f: impl Fn(A, B) -> Result<R>,
) -> Result<Vec<R>> {
    let n = result_len(x.len(), y.len())?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let a = if x.len() == 1 { x[0] } else { x[i] };
        let b = if y.len() == 1 { y[0] } else { y[i] };
        out.push(f(a, b)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasts_a_length_one_side_and_rejects_other_mismatches() {
        assert_eq!(
            zip_with(&[1, 2, 3], &[10], |a, b| a + b).unwrap(),
            [11, 12, 13]
        );
        assert_eq!(zip_with(&[1], &[10, 20], |a, b| a + b).unwrap(), [11, 21]);
        assert_eq!(
            zip_with::<i32, i32, i32>(&[], &[], |a, b| a + b).unwrap(),
            Vec::<i32>::new()
        );
        let err = zip_with(&[1, 2, 3], &[1, 2, 3, 4, 5], |a, b| a + b).unwrap_err();
        assert_eq!(err.message, "length mismatch (3 vs 5)");
        assert!(try_zip_with(&[1, 2], &[0], |a: i32, b: i32| a
            .checked_div(b)
            .ok_or_else(|| crate::error::RuntimeError::new("zero")))
        .is_err());
    }
}
