//! Boolean logic: `@not @and @or @nand @nor @xor` on bool vectors.

use super::elementwise::zip_with;
use crate::bail;
use crate::builtin::Builtin;
use crate::error::Result;
use crate::value::Vector;

/// `@not`.
pub(crate) fn not(x: &Vector) -> Result<Vector> {
    match x {
        Vector::Bool(v) => Ok(Vector::from_bools(v.iter().map(|&b| !b).collect())),
        other => bail!("expected bool, got {}", other.ty()),
    }
}

/// `@and @or @nand @nor @xor`, element-wise with broadcast.
pub(crate) fn binary(b: Builtin, x: &Vector, y: &Vector) -> Result<Vector> {
    let (Vector::Bool(p), Vector::Bool(q)) = (x, y) else {
        bail!("expected bool operands, got {} and {}", x.ty(), y.ty());
    };
    let out = match b {
        Builtin::And => zip_with(p, q, |a, c| a & c)?,
        Builtin::Or => zip_with(p, q, |a, c| a | c)?,
        Builtin::Nand => zip_with(p, q, |a, c| !(a & c))?,
        Builtin::Nor => zip_with(p, q, |a, c| !(a | c))?,
        Builtin::Xor => zip_with(p, q, |a, c| a ^ c)?,
        other => bail!("@{other} is not a logic builtin"),
    };
    Ok(Vector::from_bools(out))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;

    #[test]
    fn truth_tables() {
        let (p, q) = (bools(&[0, 0, 1, 1]), bools(&[0, 1, 0, 1]));
        assert_eq!(
            run(B::And, &[p.clone(), q.clone()]).unwrap(),
            bools(&[0, 0, 0, 1])
        );
        assert_eq!(
            run(B::Or, &[p.clone(), q.clone()]).unwrap(),
            bools(&[0, 1, 1, 1])
        );
        assert_eq!(
            run(B::Nand, &[p.clone(), q.clone()]).unwrap(),
            bools(&[1, 1, 1, 0])
        );
        assert_eq!(
            run(B::Nor, &[p.clone(), q.clone()]).unwrap(),
            bools(&[1, 0, 0, 0])
        );
        assert_eq!(run(B::Xor, &[p.clone(), q]).unwrap(), bools(&[0, 1, 1, 0]));
        assert_eq!(run(B::Not, &[p]).unwrap(), bools(&[1, 1, 0, 0]));
        assert_eq!(
            run(B::And, &[bools(&[1, 0]), bools(&[1])]).unwrap(),
            bools(&[1, 0])
        );
    }

    #[test]
    fn non_bool_operands_are_errors() {
        assert!(run(B::And, &[i64s(&[1]), bools(&[1])]).is_err());
        assert!(run(B::Not, &[i64s(&[1])]).is_err());
        assert!(run(B::Or, &[bools(&[1, 0]), bools(&[1, 0, 1])]).is_err());
    }
}
