//! Arithmetic: `@plus @minus @mul @div @power @logb @mod`.
//!
//! Operands are promoted to the larger type of bool < i8 < i16 < i32 < i64 < f32 < f64, a
//! `bool` operand counting as `i16` (HorsePower promotes bools before arithmetic). Integer
//! arithmetic wraps on overflow, as the GPU's does.
//!
//! Choices where the references leave room:
//! - `@div` always divides in floating point: f32 when both operands are f32, else f64.
//!   Division by zero follows IEEE 754 (`x/0` is ±inf, `0/0` is NaN) rather than failing, so
//!   the CPU and GPU agree and one zero row does not abort a query.
//! - `@mod(x, y)` is `x mod y` with the sign of `y` (floored, as in APL and q); an integer
//!   `y` of 0 is an error.
//! - `@power` and `@logb` (`log` of `y` in base `x`) are floating point like `@div`.
//! - Temporal values: `@plus(t, n)`/`@plus(n, t)`/`@minus(t, n)` shift a temporal `t` by an
//!   integer count of its own unit (days for a date), and fail when a date, month or dt
//!   would leave years 0000–9999; `@minus(t1, t2)` of one temporal type gives the
//!   difference in that unit (i32, or i64 for dt, as the type rules say).

use std::sync::Arc;

use super::elementwise::{try_zip_with, zip_with};
use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::Vector;

/// Element arithmetic shared by the integer and float types.
trait Num: Copy + PartialEq {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `self mod o` with the sign of `o`; `None` for an integer zero divisor.
    fn modulo(self, o: Self) -> Option<Self>;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn modulo(self, o: Self) -> Option<Self> {
                if o == 0 {
                    return None;
                }
                let r = self.wrapping_rem(o);
                Some(if r != 0 && ((r < 0) != (o < 0)) { r.wrapping_add(o) } else { r })
            }
        }
    )*};
}
int_num!(i8, i16, i32, i64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn modulo(self, o: Self) -> Option<Self> {
                Some(self - o * (self / o).floor())
            }
        }
    )*};
}
float_num!(f32, f64);

/// The type arithmetic on `a` and `b` happens in (bools count as i16).
fn arithmetic_type(a: &Type, b: &Type) -> Option<Type> {
    let widen = |t: &Type| {
        if *t == Type::Bool {
            Type::I16
        } else {
            t.clone()
        }
    };
    Type::promote(&widen(a), &widen(b))
}

/// Applies a [`Num`] method element-wise to two vectors already cast to one type.
macro_rules! num_zip {
    ($x:expr, $y:expr, $zip:ident, $op:expr) => {
        match ($x, $y) {
            (Vector::I8(a), Vector::I8(b)) => Vector::I8(Arc::new($zip(a, b, $op)?)),
            (Vector::I16(a), Vector::I16(b)) => Vector::I16(Arc::new($zip(a, b, $op)?)),
            (Vector::I32(a), Vector::I32(b)) => Vector::I32(Arc::new($zip(a, b, $op)?)),
            (Vector::I64(a), Vector::I64(b)) => Vector::I64(Arc::new($zip(a, b, $op)?)),
            (Vector::F32(a), Vector::F32(b)) => Vector::F32(Arc::new($zip(a, b, $op)?)),
            (Vector::F64(a), Vector::F64(b)) => Vector::F64(Arc::new($zip(a, b, $op)?)),
            (a, b) => bail!("cannot do arithmetic on {} and {}", a.ty(), b.ty()),
        }
    };
}

/// Evaluates an arithmetic builtin.
pub(crate) fn binary(b: Builtin, x: &Vector, y: &Vector) -> Result<Vector> {
    if x.ty().is_temporal() || y.ty().is_temporal() {
        return temporal_arith(b, x, y);
    }
    let Some(ty) = arithmetic_type(&x.ty(), &y.ty()) else {
        bail!("cannot do arithmetic on {} and {}", x.ty(), y.ty());
    };
    match b {
        Builtin::Div | Builtin::Power | Builtin::Logb => {
            let both_f32 = x.ty() == Type::F32 && y.ty() == Type::F32;
            let float = if both_f32 { Type::F32 } else { Type::F64 };
            let (x, y) = (x.cast_real(&float)?, y.cast_real(&float)?);
            Ok(match (&x, &y) {
                (Vector::F32(a), Vector::F32(c)) => Vector::F32(Arc::new(match b {
                    Builtin::Div => zip_with(a, c, |p, q| p / q)?,
                    Builtin::Power => zip_with(a, c, f32::powf)?,
                    _ => zip_with(a, c, |base, v| v.log(base))?,
                })),
                (Vector::F64(a), Vector::F64(c)) => Vector::F64(Arc::new(match b {
                    Builtin::Div => zip_with(a, c, |p, q| p / q)?,
                    Builtin::Power => zip_with(a, c, f64::powf)?,
                    _ => zip_with(a, c, |base, v| v.log(base))?,
                })),
                _ => bail!("cannot do arithmetic on {} and {}", x.ty(), y.ty()),
            })
        }
        Builtin::Plus | Builtin::Minus | Builtin::Mul | Builtin::Mod => {
            let (x, y) = (x.cast_real(&ty)?, y.cast_real(&ty)?);
            Ok(match b {
                Builtin::Plus => num_zip!(&x, &y, zip_with, Num::add),
                Builtin::Minus => num_zip!(&x, &y, zip_with, Num::sub),
                Builtin::Mul => num_zip!(&x, &y, zip_with, Num::mul),
                _ => num_zip!(&x, &y, try_zip_with, modulo),
            })
        }
        other => bail!("@{other} is not an arithmetic builtin"),
    }
}

fn modulo<T: Num>(a: T, b: T) -> Result<T> {
    a.modulo(b)
        .ok_or_else(|| RuntimeError::new("integer modulo by zero"))
}

/// `@plus`/`@minus` with a temporal operand (see the module notes). A date, month or dt
/// shifted outside years 0000–9999 is an error naming the value and the amount.
fn temporal_arith(b: Builtin, x: &Vector, y: &Vector) -> Result<Vector> {
    let (tx, ty) = (x.ty(), y.ty());
    // Every value passed `check_calendar`, so it fits its type's encoding.
    let rebuild = |t: &Type, v: Vec<i64>| -> Vector {
        let narrow = |v: Vec<i64>| Arc::new(v.into_iter().map(|e| e as i32).collect::<Vec<i32>>());
        match t {
            Type::Month => Vector::Month(narrow(v)),
            Type::Date => Vector::Date(narrow(v)),
            Type::Minute => Vector::Minute(narrow(v)),
            Type::Second => Vector::Second(narrow(v)),
            Type::Time => Vector::Time(narrow(v)),
            _ => Vector::Dt(Arc::new(v)),
        }
    };
    let minus = b == Builtin::Minus;
    let shift = |t: &Type, value: i64, amount: i64| -> Result<i64> {
        crate::temporal::shift(t, value, amount, minus).map_err(RuntimeError::new)
    };
    match (b, tx.is_temporal(), ty.is_temporal()) {
        (Builtin::Plus | Builtin::Minus, true, false) if ty.is_integer() => {
            let (a, n) = (temporal_i64s(x)?, y.to_i64s().unwrap_or_default());
            let out = try_zip_with(&a, &n, |t, k| shift(&tx, t, k))?;
            Ok(rebuild(&tx, out))
        }
        (Builtin::Plus, false, true) if tx.is_integer() => {
            let (n, a) = (x.to_i64s().unwrap_or_default(), temporal_i64s(y)?);
            let out = try_zip_with(&n, &a, |k, t| shift(&ty, t, k))?;
            Ok(rebuild(&ty, out))
        }
        (Builtin::Minus, true, true) if tx == ty => {
            // Both operands lie in their range, so the difference cannot overflow.
            let (a, c) = (temporal_i64s(x)?, temporal_i64s(y)?);
            Ok(Vector::from_i64s(zip_with(&a, &c, i64::wrapping_sub)?))
        }
        _ => bail!("cannot apply @{b} to {tx} and {ty}"),
    }
}

/// The integer encodings of a temporal vector, widened to i64.
pub(crate) fn temporal_i64s(v: &Vector) -> Result<Vec<i64>> {
    Ok(match v {
        Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => x.iter().map(|&e| i64::from(e)).collect(),
        Vector::Dt(x) => x.to_vec(),
        other => bail!("{} is not a temporal type", other.ty()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::value::{Value, Vector};
    use std::sync::Arc;

    #[test]
    fn promotes_to_the_larger_type_and_broadcasts() {
        assert_eq!(
            run(B::Plus, &[i32s(&[1, 2]), i64s(&[10])]).unwrap(),
            i64s(&[11, 12])
        );
        assert_eq!(
            run(B::Minus, &[i32s(&[1]), f64s(&[0.25, 0.5])]).unwrap(),
            f64s(&[0.75, 0.5])
        );
        assert_eq!(run(B::Mul, &[i32s(&[3]), i32s(&[4])]).unwrap(), i32s(&[12]));
        let bool_sum = run(B::Plus, &[bools(&[1, 1]), bools(&[1, 0])]).unwrap();
        assert_eq!(bool_sum, Value::Vector(Vector::I16(Arc::new(vec![2, 1]))));
        assert_eq!(run(B::Plus, &[i64s(&[]), i64s(&[])]).unwrap(), i64s(&[]));
    }

    #[test]
    fn length_mismatch_names_the_builtin() {
        let err = run(B::Plus, &[i64s(&[1, 2, 3]), i64s(&[1, 2, 3, 4, 5])]).unwrap_err();
        assert_eq!(err.message, "@plus: length mismatch (3 vs 5)");
        assert!(run(B::Plus, &[syms(&["a"]), i64s(&[1])]).is_err());
    }

    #[test]
    fn div_is_floating_and_follows_ieee_on_zero() {
        assert_eq!(
            run(B::Div, &[i64s(&[7, 1]), i64s(&[2, 0])]).unwrap(),
            f64s(&[3.5, f64::INFINITY])
        );
        let f32_div = run(
            B::Div,
            &[Value::Vector(Vector::F32(Arc::new(vec![1.0]))), i32s(&[4])],
        )
        .unwrap();
        // The wider operand is f32: the quotient is f32 (the type rules, as rNdN).
        assert_eq!(f32_div, f32s(&[0.25]));
        let same_width = run(
            B::Div,
            &[
                Value::Vector(Vector::F32(Arc::new(vec![1.0]))),
                Value::Vector(Vector::F32(Arc::new(vec![4.0]))),
            ],
        )
        .unwrap();
        assert_eq!(same_width, Value::Vector(Vector::F32(Arc::new(vec![0.25]))));
    }

    #[test]
    fn mod_takes_the_sign_of_the_divisor_and_rejects_zero() {
        assert_eq!(
            run(B::Mod, &[i64s(&[7, -7, 7]), i64s(&[3, 3, -3])]).unwrap(),
            i64s(&[1, 2, -2])
        );
        assert_eq!(
            run(B::Mod, &[f64s(&[7.5]), f64s(&[2.0])]).unwrap(),
            f64s(&[1.5])
        );
        assert!(run(B::Mod, &[i64s(&[1]), i64s(&[0])]).is_err());
    }

    #[test]
    fn integer_overflow_wraps_instead_of_panicking() {
        assert_eq!(
            run(B::Plus, &[i64s(&[i64::MAX]), i64s(&[1])]).unwrap(),
            i64s(&[i64::MIN])
        );
    }

    #[test]
    fn dates_shift_by_days_and_subtract_to_day_counts() {
        assert_eq!(
            run(B::Plus, &[dates(&[10]), i32s(&[5])]).unwrap(),
            dates(&[15])
        );
        assert_eq!(
            run(B::Minus, &[dates(&[10]), i64s(&[3])]).unwrap(),
            dates(&[7])
        );
        assert_eq!(
            run(B::Minus, &[dates(&[10]), dates(&[3])]).unwrap(),
            i32s(&[7])
        );
        assert!(run(B::Mul, &[dates(&[10]), i64s(&[3])]).is_err());
    }

    #[test]
    fn a_date_shifted_out_of_the_calendar_is_an_error_naming_it() {
        let day = crate::temporal::days_from_civil(1998, 9, 2);
        let err = run(B::Plus, &[dates(&[day]), i64s(&[999_999_999_999])]).unwrap_err();
        assert_eq!(
            err.message,
            "@plus: 1998-09-02:date plus 999999999999: \
             the result is outside the date range 0000-01-01 to 9999-12-31"
        );
        let err = run(B::Minus, &[dates(&[day]), i64s(&[i64::MIN])]).unwrap_err();
        assert!(
            err.message.starts_with("@minus: 1998-09-02:date minus"),
            "{}",
            err.message
        );
        assert!(run(B::Plus, &[i64s(&[i64::MAX]), dates(&[day])]).is_err());
    }
}
