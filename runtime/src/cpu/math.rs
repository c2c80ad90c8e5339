//! Unary numeric builtins: `@abs @neg @ceil @floor @round @conj @recip @signum @pi @fact`
//! and the floating functions `@log @exp @log2 @log10 @sqrt`, trigonometric and hyperbolic.
//!
//! Types: `@abs @neg @signum` keep the integer or float type (a bool operand of `@neg`
//! becomes i16); `@ceil @floor @round` keep the type (integers are unchanged); floating
//! functions, `@recip` and `@pi` (`x·π`) give f32 for f32 input, else f64; `@fact` gives i64
//! and fails past 20! (the largest that fits). Complex numbers support `@abs` (magnitude),
//! `@neg` and `@conj`; `@conj` of a real is the real.

use std::sync::Arc;

use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{Complex, Vector};

/// Applies an integer operation to every integer variant, keeping the type.
macro_rules! map_ints {
    ($v:expr, |$x:ident| $op:expr, else $other:expr) => {
        match $v {
            Vector::I8(v) => Vector::I8(Arc::new(v.iter().map(|&$x| $op).collect())),
            Vector::I16(v) => Vector::I16(Arc::new(v.iter().map(|&$x| $op).collect())),
            Vector::I32(v) => Vector::I32(Arc::new(v.iter().map(|&$x| $op).collect())),
            Vector::I64(v) => Vector::I64(Arc::new(v.iter().map(|&$x| $op).collect())),
            _ => $other,
        }
    };
}

/// Applies a float operation to f32 (as f32) or any other real (as f64).
fn map_float(v: &Vector, f32_op: fn(f32) -> f32, f64_op: fn(f64) -> f64) -> Result<Vector> {
    match v {
        Vector::F32(x) => Ok(Vector::F32(Arc::new(
            x.iter().map(|&e| f32_op(e)).collect(),
        ))),
        other => match other.to_f64s() {
            Some(x) => Ok(Vector::from_f64s(x.into_iter().map(f64_op).collect())),
            None => bail!("expected a real number, got {}", other.ty()),
        },
    }
}

/// The f32 and f64 versions of one floating function.
type FloatFns = (fn(f32) -> f32, fn(f64) -> f64);

/// An f32 function computed in f64 and rounded to f32: the f64 libm functions are within an
/// f64 ulp or so of the exact value, so the f32 result is the correctly rounded one but where
/// the exact value lies within about 2^-28 f32 ulp of a rounding midpoint. The GPU computes
/// the same (`codegen::wgsl::Helper::ExpLogF32` and `TrigF32`): libm's own f32 functions
/// round differently in about one case in a few hundred, and a value that decides something
/// discrete (a comparison, `@cos` of a huge `@exp`) must be the same on both backends.
macro_rules! through_f64 {
    ($f:path) => {
        |x: f32| $f(f64::from(x)) as f32
    };
}

fn float_fn(b: Builtin) -> Option<FloatFns> {
    Some(match b {
        Builtin::Log => (through_f64!(f64::ln), f64::ln),
        Builtin::Exp => (through_f64!(f64::exp), f64::exp),
        Builtin::Log2 => (through_f64!(f64::log2), f64::log2),
        Builtin::Log10 => (through_f64!(f64::log10), f64::log10),
        // Correctly rounded either way.
        Builtin::Sqrt => (f32::sqrt, f64::sqrt),
        Builtin::Cos => (through_f64!(f64::cos), f64::cos),
        Builtin::Sin => (through_f64!(f64::sin), f64::sin),
        Builtin::Tan => (through_f64!(f64::tan), f64::tan),
        Builtin::Acos => (through_f64!(f64::acos), f64::acos),
        Builtin::Asin => (through_f64!(f64::asin), f64::asin),
        Builtin::Atan => (through_f64!(f64::atan), f64::atan),
        Builtin::Cosh => (through_f64!(f64::cosh), f64::cosh),
        Builtin::Sinh => (through_f64!(f64::sinh), f64::sinh),
        Builtin::Tanh => (through_f64!(f64::tanh), f64::tanh),
        Builtin::Acosh => (through_f64!(f64::acosh), f64::acosh),
        Builtin::Asinh => (through_f64!(f64::asinh), f64::asinh),
        Builtin::Atanh => (through_f64!(f64::atanh), f64::atanh),
        Builtin::Recip => (|x| 1.0 / x, |x| 1.0 / x),
        Builtin::Pi => (|x| x * std::f32::consts::PI, |x| x * std::f64::consts::PI),
        _ => return None,
    })
}

/// Evaluates a unary numeric builtin.
pub(crate) fn unary(b: Builtin, v: &Vector) -> Result<Vector> {
    if let (Builtin::Pi, Vector::Complex(x)) = (b, v) {
        let pi = std::f64::consts::PI;
        return Ok(Vector::Complex(Arc::new(
            x.iter()
                .map(|c| Complex {
                    re: c.re * pi,
                    im: c.im * pi,
                })
                .collect(),
        )));
    }
    if let Some((f32_op, f64_op)) = float_fn(b) {
        return map_float(v, f32_op, f64_op);
    }
    let unsupported = || RuntimeError::new(format!("not defined on {}", v.ty()));
    match b {
        Builtin::Abs => match v {
            Vector::Bool(_) => Ok(v.clone()),
            Vector::F32(x) => Ok(Vector::F32(Arc::new(x.iter().map(|e| e.abs()).collect()))),
            Vector::F64(x) => Ok(Vector::from_f64s(x.iter().map(|e| e.abs()).collect())),
            Vector::Complex(x) => Ok(Vector::from_f64s(
                x.iter().map(|c| c.re.hypot(c.im)).collect(),
            )),
            _ => Ok(map_ints!(v, |e| e.wrapping_abs(), else return Err(unsupported()))),
        },
        Builtin::Neg => match v {
            Vector::Bool(_) => unary(b, &v.cast_real(&Type::I16)?),
            Vector::F32(x) => Ok(Vector::F32(Arc::new(x.iter().map(|e| -e).collect()))),
            Vector::F64(x) => Ok(Vector::from_f64s(x.iter().map(|e| -e).collect())),
            Vector::Complex(x) => Ok(Vector::Complex(Arc::new(
                x.iter()
                    .map(|c| Complex {
                        re: -c.re,
                        im: -c.im,
                    })
                    .collect(),
            ))),
            _ => Ok(map_ints!(v, |e| e.wrapping_neg(), else return Err(unsupported()))),
        },
        Builtin::Signum => match v {
            Vector::Bool(_) => Ok(v.clone()),
            Vector::F32(x) => Ok(Vector::F32(Arc::new(
                x.iter().map(|&e| float_sign(e.into()) as f32).collect(),
            ))),
            Vector::F64(x) => Ok(Vector::from_f64s(
                x.iter().map(|&e| float_sign(e)).collect(),
            )),
            _ => Ok(map_ints!(v, |e| e.signum(), else return Err(unsupported()))),
        },
        Builtin::Ceil | Builtin::Floor | Builtin::Round => {
            let op: fn(f64) -> f64 = match b {
                Builtin::Ceil => f64::ceil,
                Builtin::Floor => f64::floor,
                _ => f64::round,
            };
            match v {
                Vector::F32(x) => Ok(Vector::F32(Arc::new(
                    x.iter().map(|&e| op(e.into()) as f32).collect(),
                ))),
                Vector::F64(x) => Ok(Vector::from_f64s(x.iter().map(|&e| op(e)).collect())),
                _ if v.ty().is_integer() => Ok(v.clone()),
                _ => Err(unsupported()),
            }
        }
        Builtin::Conj => match v {
            Vector::Complex(x) => Ok(Vector::Complex(Arc::new(
                x.iter()
                    .map(|c| Complex {
                        re: c.re,
                        im: -c.im,
                    })
                    .collect(),
            ))),
            _ if v.ty().is_real() => Ok(v.clone()),
            _ => Err(unsupported()),
        },
        Builtin::Fact => {
            let Some(n) = v.to_i64s() else {
                return Err(unsupported());
            };
            let out = n
                .iter()
                .map(|&k| crate::numeric::factorial(k).map_err(RuntimeError::new))
                .collect::<Result<Vec<i64>>>()?;
            Ok(Vector::from_i64s(out))
        }
        other => bail!("@{other} is not a unary numeric builtin"),
    }
}

fn float_sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::{Value, Vector};
    use std::sync::Arc;

    #[test]
    fn sign_and_rounding_keep_the_type() {
        assert_eq!(run(B::Abs, &[i32s(&[-3, 4])]).unwrap(), i32s(&[3, 4]));
        assert_eq!(run(B::Neg, &[f64s(&[1.5])]).unwrap(), f64s(&[-1.5]));
        assert_eq!(
            run(B::Neg, &[bools(&[1])]).unwrap(),
            Value::Vector(Vector::I16(Arc::new(vec![-1])))
        );
        assert_eq!(
            run(B::Ceil, &[f64s(&[-1.2, 1.2])]).unwrap(),
            f64s(&[-1.0, 2.0])
        );
        assert_eq!(
            run(B::Round, &[f64s(&[2.5, -2.5])]).unwrap(),
            f64s(&[3.0, -3.0])
        );
        assert_eq!(run(B::Floor, &[i64s(&[7])]).unwrap(), i64s(&[7]));
        assert_eq!(
            run(B::Signum, &[i64s(&[-9, 0, 3])]).unwrap(),
            i16s(&[-1, 0, 1])
        );
        assert_eq!(
            run(B::Signum, &[f64s(&[-0.5, 0.0, 2.5])]).unwrap(),
            i16s(&[-1, 0, 1])
        );
    }

    #[test]
    fn floating_functions_give_f64_for_64_bit_types_and_f32_for_narrower_ones() {
        assert_eq!(run(B::Sqrt, &[i64s(&[9])]).unwrap(), f64s(&[3.0]));
        assert_eq!(run(B::Sqrt, &[i32s(&[9])]).unwrap(), f32s(&[3.0]));
        assert_eq!(run(B::Recip, &[i32s(&[4])]).unwrap(), f32s(&[0.25]));
        assert_eq!(
            run(B::Pi, &[i32s(&[1])]).unwrap(),
            f32s(&[std::f32::consts::PI])
        );
        assert_eq!(run(B::Exp, &[i64s(&[])]).unwrap(), f64s(&[]));
        assert!(run(B::Log, &[syms(&["x"])]).is_err());
    }

    #[test]
    fn factorial_is_exact_and_bounded() {
        assert_eq!(
            run(B::Fact, &[i32s(&[0, 5, 20])]).unwrap(),
            i64s(&[1, 120, 2_432_902_008_176_640_000])
        );
        assert!(run(B::Fact, &[i32s(&[21])]).is_err());
        assert!(run(B::Fact, &[i32s(&[-1])]).is_err());
    }
}
