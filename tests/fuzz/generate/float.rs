//! Statements of the floating functions ([`FLOAT_FUNCTIONS`]) of values brought into their
//! domains, converted between f32 and f64, or made infinite and NaN.

use super::*;

/// How an argument is brought near where the functions bend: divided (by [`DIVISORS`]),
/// multiplied (by [`FACTORS`]: large products for the trigonometric ones' argument reduction,
/// `@exp` overflowing, negative values, f32 subnormals), or shifted (by [`SHIFTS`]: next to 1
/// for `@acosh`, `@atanh`, `@log`, far below 0 for an `@exp` that is an f32 subnormal).
/// Subnormal f32 values are where GPUs part from the CPU: NVIDIA flushes them in
/// comparisons, conversions and negation (see `tests/programs/backends_agree/
/// f32_arithmetic_on_subnormals.hir`), which values of TPC-H columns rarely reach.
const STEPS: &[(B, u32)] = &[(B::Div, 5), (B::Mul, 2), (B::Minus, 2)];

const FACTORS: &[(f64, u32)] = &[
    (-1.0, 2),
    (0.001, 1),
    (-0.25, 1),
    (1000.0, 1),
    (65536.0, 1),
    (1.0e7, 1),
    (1.0e-40, 1),
];

const SHIFTS: &[(f64, u32)] = &[(1.0, 3), (-1.0, 1), (0.5, 1), (100.0, 1), (-100.0, 1)];

/// Divisors that bring TPC-H values (prices up to 10^5, keys up to 6·10^3, quantities up to
/// 50, discounts and taxes below 1) into the ranges where the functions bend: |x| <= 1 for
/// `@asin`, `@acos`, `@atanh`, near 1 for `@acosh`, below about 88 before `@exp`, `@sinh` and
/// `@cosh` overflow f32, small multiples of π for the trigonometric ones; and 0, whose
/// quotients are infinities, and NaN of 0.
const DIVISORS: &[(f64, u32)] = &[
    (0.0, 2),
    (-1.0, 1),
    (0.5, 1),
    (3.0, 2),
    (7.0, 1),
    (16.0, 1),
    (100.0, 2),
    (1000.0, 1),
    (6000.0, 1),
    (100_000.0, 2),
];

impl Gen<'_> {
    /// `v:T = text;` added to `main` and the pool, `T` the declared type (a numeric type other
    /// than the value's converts it).
    fn assign_declared(&mut self, ty: Type, shape: Shape, text: String, uses: Vec<VarId>) -> VarId {
        let v = self.new_var("v", ty.clone(), shape);
        let line = format!("{}:{ty} = {text};", self.name(v));
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses,
                calls: Vec::new(),
            },
            &[v],
        );
        v
    }

    /// The type of the other precision, for a declaration that converts.
    fn other_float(ty: &Type) -> Type {
        if *ty == Type::F32 {
            Type::F64
        } else {
            Type::F32
        }
    }

    /// A floating function of a real value of the pool (floats preferred; an integer's is f32,
    /// an i64's f64), its argument first divided, multiplied or shifted by a literal or
    /// divided by a column (into the functions' domains, or by 0 to an infinity or NaN) or
    /// converted to the other float type by a declaration; the result sometimes declared in
    /// the other float type, and sometimes the argument of a second function (`@cos` of
    /// `@exp`, `@asin` of `@sin`).
    pub(super) fn float_function(&mut self) {
        let pool = self.pool.clone();
        let fits = |v: &Var| v.ty.is_real() && !v.reordered;
        let x = match self.pick_var(&pool, |v| fits(v) && is_float(&v.ty)) {
            Some(v) if self.rng.chance(0.6) => Some(v),
            _ => self.pick_var(&pool, fits),
        };
        let Some(mut x) = x else {
            return;
        };
        let shape = self.p.vars[x].shape;
        if self.rng.chance(0.5) {
            let step = weighted(&mut self.rng, STEPS);
            let by = match self.pick_var(&pool, |v| {
                fits(v) && (v.shape == shape || v.shape == Shape::Scalar)
            }) {
                Some(v) if step == B::Div && self.rng.chance(0.25) => self.var_operand(v),
                _ => {
                    let value = match step {
                        B::Div => weighted(&mut self.rng, DIVISORS),
                        B::Mul => weighted(&mut self.rng, FACTORS),
                        _ => weighted(&mut self.rng, SHIFTS),
                    };
                    let integral = value.fract() == 0.0 && value.abs() < 1e4;
                    let ty = if integral && self.rng.chance(0.4) {
                        Type::I32
                    } else {
                        weighted(&mut self.rng, &[(Type::F32, 1), (Type::F64, 1)])
                    };
                    // HorseIR literals have no exponent: a tiny factor is written out (Rust's
                    // Display), the others as Debug writes them (`1.0`, not `1`).
                    let text = if ty == Type::I32 {
                        format!("{value}:i32")
                    } else if value.abs() < 1e-5 {
                        format!("{value}:{ty}")
                    } else {
                        format!("{value:?}:{ty}")
                    };
                    Operand {
                        text,
                        ty,
                        shape: Shape::Scalar,
                        uses: Vec::new(),
                    }
                }
            };
            let operand = self.var_operand(x);
            let Some(ty) = result_type(step, &[value(&operand.ty), value(&by.ty)]) else {
                return;
            };
            if !ty.is_real() {
                return;
            }
            let text = format!("@{}({}, {})", step.name(), operand.text, by.text);
            let mut uses = operand.uses;
            uses.extend(by.uses);
            x = self.assign_declared(ty, shape, text, uses);
        }
        if self.rng.chance(0.3) {
            let from = self.p.vars[x].ty.clone();
            // Mostly to f32: TPC-H has no f32 column.
            let to = if from == Type::F32 {
                Type::F64
            } else if self.rng.chance(0.85) {
                Type::F32
            } else {
                Type::F64
            };
            if to != from {
                let text = self.name(x);
                x = self.assign_declared(to, shape, text, vec![x]);
            }
        }
        let chained = if self.rng.chance(0.25) { 2 } else { 1 };
        for _ in 0..chained {
            let builtin = weighted(&mut self.rng, FLOAT_FUNCTIONS);
            let arg_ty = self.p.vars[x].ty.clone();
            let Some(ty) = result_type(builtin, &[value(&arg_ty)]) else {
                return;
            };
            let declared = if self.rng.chance(0.15) {
                Self::other_float(&ty)
            } else {
                ty
            };
            let text = format!("@{}({})", builtin.name(), self.name(x));
            x = self.assign_declared(declared, shape, text, vec![x]);
        }
    }
}
