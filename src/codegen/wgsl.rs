//! WGSL spelling of HorseIR types and constants, conversions between them, and the helper
//! functions generated modules include on demand.
//!
//! Inside a kernel a value is held in its *register type*: `bool` for bool (stored as a `u32`
//! word), otherwise the storage element of [`GpuElement::of_type`].

use horsec_runtime::kernel::GpuElement;
use horsec_runtime::types::Type;

use crate::syntax::ast::LiteralValue;

mod float_functions;

/// The WGSL type a value of HorseIR type `ty` has in registers.
pub fn register_type(ty: &Type) -> Option<&'static str> {
    if *ty == Type::Bool {
        return Some("bool");
    }
    GpuElement::of_type(ty).map(GpuElement::wgsl)
}

/// `expr` read from a storage word of type `ty` into its register type.
pub fn load(expr: &str, ty: &Type) -> String {
    if *ty == Type::Bool {
        format!("({expr} != 0u)")
    } else {
        expr.to_string()
    }
}

/// A register value of type `ty` as its storage word.
pub fn store(expr: &str, ty: &Type) -> String {
    if *ty == Type::Bool {
        format!("select(0u, 1u, {expr})")
    } else {
        expr.to_string()
    }
}

/// The zero of a register type.
pub fn zero(wgsl: &str) -> &'static str {
    match wgsl {
        "bool" => "false",
        "u32" => "0u",
        "i32" => "0i",
        "f32" => "0.0f",
        "i64" => "0li",
        "f64" => "0.0lf",
        _ => "0",
    }
}

/// Converts a register value of HorseIR type `from` to the register type of `to` (numeric
/// promotion: value-preserving for integers, rounding for floats).
pub fn convert(expr: &str, from: &Type, to: &Type) -> Option<String> {
    let (source, target) = (register_type(from)?, register_type(to)?);
    if source == target {
        return Some(expr.to_string());
    }
    if source == "bool" {
        let one = match target {
            "u32" => "1u",
            "i32" => "1i",
            "f32" => "1.0f",
            "i64" => "1li",
            "f64" => "1.0lf",
            _ => return None,
        };
        return Some(format!("select({}, {one}, {expr})", zero(target)));
    }
    if target == "bool" {
        return Some(format!("({expr} != {})", zero(source)));
    }
    if (source, target) == ("u32", "i64") {
        return Some(u32_to_i64(expr));
    }
    Some(format!("{target}({expr})"))
}

/// `expr`, a u32 (a position, count, length or code), as an i64, through u64. naga 30
/// writes `i64(x)` of a u32 as SPIR-V's OpSConvert, which extends the sign bit: values
/// from 2^31 came out negative (`@sum(@range(n))` was wrong past n = 2^31). Widening in
/// the source's signedness first is a zero extension; `codegen::validate` rejects the
/// direct form.
pub fn u32_to_i64(expr: &str) -> String {
    let mut text = String::with_capacity(expr.len() + 10);
    text.push_str("i64(u64(");
    text.push_str(expr);
    text.push_str("))");
    text
}

/// Keeps the low 8 or 16 bits (sign-extended) of an i32 register holding an i8 or i16, so
/// arithmetic wraps at the HorseIR type's width as on the CPU.
pub fn wrap_narrow(expr: String, ty: &Type) -> String {
    match ty {
        Type::I8 => format!("(({expr} << 24u) >> 24u)"),
        Type::I16 => format!("(({expr} << 16u) >> 16u)"),
        _ => expr,
    }
}

/// An i64 constant (the most negative one cannot be written as a negated literal).
pub fn i64_literal(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807li - 1li)".to_string()
    } else {
        format!("{v}li")
    }
}

/// An i32 constant.
pub fn i32_literal(v: i64) -> String {
    if v == i64::from(i32::MIN) {
        "(-2147483647i - 1i)".to_string()
    } else {
        format!("{v}i")
    }
}

/// A float constant: finite values in their shortest round-trip decimal form, the others by
/// their bits (WGSL has no infinity or NaN literal).
pub fn float_literal(v: f64, f32_type: bool) -> String {
    if f32_type {
        let v = v as f32;
        if v.is_finite() {
            return format!("{}f", decimal(format!("{v:?}")));
        }
        return format!("bitcast<f32>({}u)", v.to_bits());
    }
    if v.is_finite() {
        format!("{}lf", decimal(format!("{v:?}")))
    } else {
        format!("bitcast<f64>({}lu)", v.to_bits())
    }
}

/// Rust's `{:?}` of a float, made a WGSL float literal body (`24` has no point: `24.0`).
fn decimal(text: String) -> String {
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// One literal element of type `ty` as a register constant; `None` for strings (which are
/// codes resolved at launch) and complex numbers.
pub fn literal(value: &LiteralValue, ty: &Type) -> Option<String> {
    Some(match (value, ty) {
        (LiteralValue::Bool(b), _) => b.to_string(),
        (LiteralValue::Char(c), _) => format!("{c}u"),
        (LiteralValue::Int(v), Type::I64) => i64_literal(*v),
        (LiteralValue::Int(v), Type::F32) => float_literal(*v as f64, true),
        (LiteralValue::Int(v), Type::F64) => float_literal(*v as f64, false),
        (LiteralValue::Int(v), _) => i32_literal(*v),
        (LiteralValue::Float(v), Type::F32) => float_literal(*v, true),
        (LiteralValue::Float(v), _) => float_literal(*v, false),
        (
            LiteralValue::Date(v)
            | LiteralValue::Month(v)
            | LiteralValue::Minute(v)
            | LiteralValue::Second(v)
            | LiteralValue::Time(v),
            _,
        ) => i32_literal(i64::from(*v)),
        (LiteralValue::Dt(v), _) => i64_literal(*v),
        (LiteralValue::Text(_) | LiteralValue::Complex { .. }, _) => return None,
    })
}

/// Helper functions a module may need; each is emitted once, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Helper {
    /// `floor_div_i32`/`floor_mod_i32`, used by the calendar helpers.
    FloorDiv,
    /// `civil_from_days(days) -> vec3<i32>` (year, month, day).
    CivilFromDays,
    /// `days_of_dt(ms: i64) -> i32`: the day of a datetime, clamped to i32.
    DaysOfDt,
    /// `shift_months(days: i64, months: i64) -> Shifted`, `le_i64`, `floor_div_i64`: the
    /// calendar shifts of `@datetime_add`/`@datetime_sub` of dates, months and dts, as
    /// `horsec_runtime::temporal::datetime_shift` computes them.
    CalendarShift,
    /// `factorial_i64(n: u32) -> i64`: `n!` for `n` in 0..=20 (the caller checks the range).
    Factorial,
    /// `rem_euclid_i64(a: i64, d: i64) -> i64`: the Euclidean remainder by a positive `d`
    /// (Rust's `rem_euclid`), never negative.
    RemEuclidI64,
    /// `round_f32`/`round_f64`: half away from zero (Rust's `round`; WGSL's rounds to even).
    Round,
    /// `plus_f32`, `minus_f32`, `mul_f32`, `unordered_f32`: IEEE 754 special values chosen
    /// on the bits. WGSL lets a shader compiler assume that floats are finite, and compilers
    /// use it: Mesa folds `x - x` to 0, `0 / x` to 0 and `x * 0` to 0, NVIDIA `x / x` to 1,
    /// which are wrong for NaN and infinities (the CPU follows IEEE 754: `0 / 0` is NaN,
    /// `inf - inf` is NaN). Integer tests on a value's bits are immune to that assumption, so
    /// every result IEEE makes NaN is chosen by them; the NaN made is the canonical quiet
    /// NaN. Comparisons with a NaN operand are false (`!=` true), as in IEEE.
    IeeeF32,
    /// The same for f64.
    IeeeF64,
    /// `div_f32`: correctly rounded f32 division (through f64), IEEE special values.
    DivF32,
    /// `div_f32_of_f64(a, b)`: the f32 quotient of operands that are not both f32 (an
    /// integer beside an f32, or two integers under `@recip`), as the CPU computes it: their
    /// f64 quotient rounded to f32, where `div_f32` would divide their f32 roundings.
    DivF32OfF64,
    /// `widen_f32`: an f32 as f64, subnormals included (a GPU may flush them).
    WidenF32,
    /// `narrow_f64`: an f64 rounded to f32 as the CPU's `as f32`, subnormal results included
    /// (a GPU may flush them), beyond the f32 range an infinity.
    NarrowF64,
    /// `sin_f32`, `cos_f32`, `tan_f32` of an f64 argument (an f32 or an integer): the f64
    /// functions rounded to f32, as the CPU's.
    TrigF32,
    /// `exp_f32`, `log_f32`, `log2_f32`, `log10_f32` of an f64 argument: the same.
    ExpLogF32,
    /// `argument_class`, `argument_negative`, `argument_f32`: an f32 function's f64 argument
    /// tested on its bits, and a tiny one as the f32 it is (subnormals from their bits).
    FunctionArgumentF64,
    /// `asin_f32`, `acos_f32`, `atan_f32` of an f64 argument: the same as [`Helper::TrigF32`].
    InverseTrigF32,
    /// `sinh_f32`, `cosh_f32`, `tanh_f32`, `asinh_f32`, `acosh_f32`, `atanh_f32` of an f64
    /// argument: the same (through `log_split` of [`Helper::ExpLogF32`]).
    HyperbolicF32,
    /// `mod_i32(a, b, bit)`: `a mod b` with the sign of `b` (floored), as the CPU's; a zero
    /// `b` sets `bit` of the kernel's status word (the CPU's `integer modulo by zero`) and
    /// gives 0. For i8, i16 and i32 (in i32 registers).
    ModI32,
    /// `mod_i64(a, b, bit)`: the same for i64, its tests on 32-bit words.
    ModI64,
    /// `mod_f32(a, b)`: `a - b * floor(a / b)` rounded step by step in f32, as the CPU's.
    ModF32,
    /// `mod_f64(a, b)`: the same in f64. Each step is an IEEE helper (`div_f64`, `mul_f64`,
    /// `minus_f64`), so NaN and infinities come out as on the CPU (a zero or infinite
    /// divisor, or an infinite dividend, gives NaN); the floor of a NaN or infinity is
    /// decided on its bits, and the product reaches the subtraction through its bits, so
    /// that no compiler contracts `a - b * f` into one fma (the CPU rounds the product).
    ModF64,
    /// `special_f32`: an infinity or NaN made at run time from its bits, which are OR-ed with
    /// `params.zero` (always 0, unknown to the shader compiler). NVIDIA's compiler mishandles
    /// an infinity it can fold into a constant: the f64 sum, in a kernel's loop, of
    /// `log_f32` of a comparison it proved false (an infinity made from constant bits) was
    /// 0.0 on the H100 with or without SPIR-V's `SignedZeroInfNanPreserve`, while the same sum
    /// of an infinity it cannot fold is right. Every helper that makes a special value makes
    /// it here. A kernel that uses it has the parameter word `zero`.
    SpecialsF32,
    /// `special_f64`: the same for f64.
    SpecialsF64,
}

impl Helper {
    pub fn source(self) -> &'static str {
        match self {
            Helper::FloorDiv => {
                "fn floor_div_i32(a: i32, b: i32) -> i32 {
    let q = a / b;
    return select(q, q - 1i, (a % b != 0i) && ((a < 0i) != (b < 0i)));
}

fn floor_mod_i32(a: i32, b: i32) -> i32 {
    return a - floor_div_i32(a, b) * b;
}
"
            }
            Helper::CivilFromDays => {
                "// Howard Hinnant's civil_from_days, as runtime/src/temporal.rs computes it.
fn civil_from_days(days: i32) -> vec3<i32> {
    let z = days + 719468i;
    let era = floor_div_i32(z, 146097i);
    let doe = z - era * 146097i;
    let yoe = (doe - doe / 1460i + doe / 36524i - doe / 146096i) / 365i;
    let doy = doe - (365i * yoe + yoe / 4i - yoe / 100i);
    let mp = (5i * doy + 2i) / 153i;
    let day = doy - (153i * mp + 2i) / 5i + 1i;
    let month = select(mp - 9i, mp + 3i, mp < 10i);
    let year = yoe + era * 400i + select(0i, 1i, month <= 2i);
    return vec3<i32>(year, month, day);
}
"
            }
            Helper::DaysOfDt => {
                "// The day of a datetime (floor of ms / 86 400 000), clamped to i32 like the CPU.
fn days_of_dt(ms: i64) -> i32 {
    let q = ms / 86400000li;
    let days = select(q, q - 1li, (ms % 86400000li != 0li) && (ms < 0li));
    return i32(clamp(days, -2147483648li, 2147483647li));
}
"
            }
            Helper::CalendarShift => {
                "// i64 a <= b on 32-bit words: lavapipe (Mesa 22.3) miscompiles signed i64 comparisons
// with constants.
fn le_i64(a: i64, b: i64) -> bool {
    let ah = i32(a >> 32u);
    let bh = i32(b >> 32u);
    return ah < bh || (ah == bh && u32(a) <= u32(b));
}

// a / b rounded down, for b > 0 (Rust's div_euclid).
fn floor_div_i64(a: i64, b: i64) -> i64 {
    let q = a / b;
    return select(q, q - 1li, (u32((a - q * b) >> 32u) >> 31u) == 1u);
}

// Howard Hinnant's civil_from_days of a day count that is an i32, as
// runtime/src/temporal.rs computes it in i64 (the i32 form overflows near i32::MAX).
fn civil_from_days_i64(days: i64) -> vec3<i32> {
    let z = days + 719468li;
    let era = floor_div_i64(z, 146097li);
    let doe = i32(z - era * 146097li);
    let yoe = (doe - doe / 1460i + doe / 36524i - doe / 146096i) / 365i;
    let doy = doe - (365i * yoe + yoe / 4i - yoe / 100i);
    let mp = (5i * doy + 2i) / 153i;
    let day = doy - (153i * mp + 2i) / 5i + 1i;
    let month = select(mp - 9i, mp + 3i, mp < 10i);
    let year = i32(era) * 400i + yoe + select(0i, 1i, month <= 2i);
    return vec3<i32>(year, month, day);
}

// Days since 1970-01-01 of a civil date of the calendar's years (Hinnant's days_from_civil).
fn days_from_civil_i32(year: i32, month: i32, day: i32) -> i32 {
    let y = year - select(0i, 1i, month <= 2i);
    let era = floor_div_i32(y, 400i);
    let yoe = y - era * 400i;
    let doy = (153i * select(month + 9i, month - 3i, month > 2i) + 2i) / 5i + day - 1i;
    let doe = yoe * 365i + yoe / 4i - yoe / 100i + doy;
    return era * 146097i + doe - 719468i;
}

fn days_in_month_i32(year: i32, month: i32) -> i32 {
    if month == 2i {
        let leap = (year % 4i == 0i && year % 100i != 0i) || year % 400i == 0i;
        return select(28i, 29i, leap);
    }
    return select(31i, 30i, month == 4i || month == 6i || month == 9i || month == 11i);
}

struct Shifted {
    value: i64,
    ok: bool,
}

// A day count moved by `months`, the day clamped to the target month's end, as the CPU's
// add_months_to_days: not ok when the day count is no i32, the month count overflows, or
// the year leaves 0000-9999 (MIN_YEAR, MAX_YEAR).
fn shift_months(days: i64, months: i64) -> Shifted {
    let high = u32(days >> 32u);
    let sign = u32(days) >> 31u;
    if !((high == 0u && sign == 0u) || (high == 0xffffffffu && sign == 1u)) {
        return Shifted(0li, false);
    }
    let civil = civil_from_days_i64(days);
    let base = i64(civil.x) * 12li + i64(civil.y - 1i);
    let total = base + months;
    // A sum overflows when both operands' signs differ from the result's.
    if (u32(((base ^ total) & (months ^ total)) >> 32u) >> 31u) == 1u {
        return Shifted(0li, false);
    }
    let year64 = floor_div_i64(total, 12li);
    if !(u32(year64 >> 32u) == 0u && u32(year64) <= 9999u) {
        return Shifted(0li, false);
    }
    let year = i32(year64);
    let month = i32(total - year64 * 12li) + 1i;
    let day = min(civil.z, days_in_month_i32(year, month));
    return Shifted(i64(days_from_civil_i32(year, month, day)), true);
}
"
            }
            Helper::Factorial => {
                "// n! for n in 0..=20, the factorials that are i64 (the caller checks n).
fn factorial_i64(n: u32) -> i64 {
    var f = 1li;
    for (var k = 2u; k <= min(n, 20u); k = k + 1u) {
        f = f * i64(k);
    }
    return f;
}
"
            }
            Helper::RemEuclidI64 => {
                "// a mod d for a positive d, never negative (the CPU's rem_euclid); the sign is tested
// on the high word (lavapipe miscompiles signed i64 comparisons with constants).
fn rem_euclid_i64(a: i64, d: i64) -> i64 {
    let r = a % d;
    return select(r, r + d, (u32(r >> 32u) >> 31u) == 1u);
}
"
            }
            Helper::Round => {
                "// Rounds half away from zero, as Rust's f32::round/f64::round (WGSL's round() rounds
// half to even). x - trunc(x) is exact, so the test sees the true fraction.
fn round_f32(x: f32) -> f32 {
    let t = trunc(x);
    return select(t, t + sign(x), abs(x - t) >= 0.5f);
}

fn round_f64(x: f64) -> f64 {
    let t = trunc(x);
    return select(t, t + sign(x), abs(x - t) >= 0.5lf);
}
"
            }
            Helper::SpecialsF32 => {
                "// An infinity or NaN from its bits, made at run time (see Helper::SpecialsF32): a
// shader compiler folds a constant infinity badly.
fn special_f32(bits: u32) -> f32 {
    return bitcast<f32>(bits | params.zero);
}
"
            }
            Helper::SpecialsF64 => {
                "// The same for f64.
fn special_f64(bits: u64) -> f64 {
    return bitcast<f64>(bits | u64(params.zero));
}
"
            }
            Helper::IeeeF32 => {
                "// IEEE 754 special values decided on the bits: the shader compiler may assume
// floats are finite and fold x - x to 0, 0 / x to 0, x / x to 1, x == x to true; integer
// tests are immune. Classes: 0 zero, 1 finite, 2 infinite, 3 NaN.
fn class_f32(x: f32) -> u32 {
    let b = bitcast<u32>(x) & 0x7fffffffu;
    if b >= 0x7f800000u {
        return select(2u, 3u, b > 0x7f800000u);
    }
    return select(1u, 0u, b == 0u);
}

// Neither zero, subnormal, infinite nor NaN (see normal_f64).
fn normal_f32(x: f32) -> bool {
    let exponent = (bitcast<u32>(x) >> 23u) & 0xffu;
    return exponent - 1u < 0xfeu;
}

fn negative_f32(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x80000000u) != 0u;
}

// A zero with the sign IEEE gives it: a compiler folds x * 0 to +0 and x + 0 to x, losing
// the sign that a later division by it turns into the infinity's sign.
fn signed_zero_f32(negative: bool) -> f32 {
    return special_f32(select(0u, 0x80000000u, negative));
}

fn signed_infinity_f32(negative: bool) -> f32 {
    return special_f32(select(0x7f800000u, 0xff800000u, negative));
}

fn nan_f32() -> f32 {
    return special_f32(0x7fc00000u);
}

// x through its bits, which the compiler cannot relate to anything: given the operands
// themselves it may regroup what IEEE rounds step by step (naga marks no operation
// NoContraction, which would forbid that), as lavapipe made f32(k) + (-683 - f32(k)) of
// -683, not 0, for k = 1 - 2^63 (corpus/sum_regrouped_by_the_shader_compiler.hir).
fn opaque_f32(x: f32) -> f32 {
    return special_f32(bitcast<u32>(x));
}

// -x and |x| on the sign bit, with a mask the compiler cannot see is the sign bit's: NVIDIA's
// made an xor of a float's bits with the sign bit a float negation, which flushes a
// subnormal (-1e-40 came out -0 on an H200, driver 580, also with the result's bits taken
// through params.zero).
fn negated_f32(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ (0x80000000u | params.zero));
}

fn magnitude_f32(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) & (0x7fffffffu | params.zero));
}

// Arithmetic on subnormal f32 operands without a float operation that sees a subnormal:
// NVIDIA flushes subnormal operands of f32 comparisons and conversions to zero, and the
// CPU keeps them. Scaling by 2^24 on the bits is exact and makes an f32 below 2^-101
// normal; scaling back on the bits is exact where the value is.

// x * 2^24, x finite, not zero and below 2^-101 in magnitude: a normal f32.
fn scaled_up_f32(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    if magnitude >= 0x00800000u {
        return bitcast<f32>(bits + (24u << 23u));
    }
    // frac * 2^-149 is frac * 2^-125 scaled: normalized, its leading bit goes.
    let lead = firstLeadingBit(magnitude);
    let fraction = (magnitude << (23u - lead)) & 0x007fffffu;
    return bitcast<f32>((bits & 0x80000000u) | ((lead + 2u) << 23u) | fraction);
}

// r * 2^-24 for a normal or zero r that is exact there (a multiple of 2^-125 below 2^-102).
fn scaled_down_f32(r: f32) -> f32 {
    let bits = bitcast<u32>(r);
    let sign = bits & 0x80000000u;
    let exponent = (bits >> 23u) & 0xffu;
    if exponent > 24u {
        return bitcast<f32>(bits - (24u << 23u));
    }
    if exponent == 0u {
        return bitcast<f32>(sign);
    }
    let significand = (bits & 0x007fffffu) | 0x00800000u;
    return bitcast<f32>(sign | (significand >> (25u - exponent)));
}

// a + b for finite, nonzero a and b, one of them subnormal or both below 2^-101 (the sum
// below 2^-126: see plus_f32). From 2^-101 up, a subnormal is
// below half the spacing of the f32 values on either side of the other operand: the sum is
// that operand. Below, the sum of the scaled operands rounds as the sum does (a sum below
// 2^-126 is a multiple of 2^-149, exact, as its scaled one is).
fn sum_with_subnormal_f32(a: f32, b: f32) -> f32 {
    let ma = bitcast<u32>(a) & 0x7fffffffu;
    let mb = bitcast<u32>(b) & 0x7fffffffu;
    if max(ma, mb) >= (26u << 23u) {
        return select(a, b, mb > ma);
    }
    return scaled_down_f32(opaque_f32(scaled_up_f32(a)) + opaque_f32(scaled_up_f32(b)));
}

// a * b for finite, nonzero a and b, one of them subnormal. With the subnormal scaled up,
// the hardware's product of two normal f32 rounds as the product does where that is at
// least 2^-126 (then exact to scale down). Below, the product is rounded as small_product_f32
// rounds it (the scaled product, rounded to 24 bits first, would round twice).
fn product_with_subnormal_f32(a: f32, b: f32) -> f32 {
    let a_is_subnormal = (bitcast<u32>(a) & 0x7f800000u) == 0u;
    let small = select(b, a, a_is_subnormal);
    let other = select(a, b, a_is_subnormal);
    if (bitcast<u32>(other) & 0x7f800000u) == 0u {
        // Both subnormal: below 2^-252.
        return bitcast<f32>((bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u);
    }
    let scaled = opaque_f32(scaled_up_f32(small)) * opaque_f32(other);
    if ((bitcast<u32>(scaled) >> 23u) & 0xffu) > 24u {
        return scaled_down_f32(scaled);
    }
    return small_product_f32(a, b);
}

// a * b for finite a and b whose product is below 2^-125 in magnitude, where the f32 values
// are the multiples of 2^-149: rounded to even from the exact product of the significands
// (48 bits, from 16-bit limbs). A GPU that flushes subnormal results makes such a product of
// two normal operands 0 (NVIDIA's did), where the CPU's is subnormal.
fn small_product_f32(a: f32, b: f32) -> f32 {
    let sign = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
    // x is its significand times 2^(max(exponent, 1) - 150), a subnormal's without the
    // leading bit: the product is ms * mo units of 2^-149 shifted right by `shift`.
    let ea = (bitcast<u32>(a) >> 23u) & 0xffu;
    let eb = (bitcast<u32>(b) >> 23u) & 0xffu;
    let ms = (bitcast<u32>(a) & 0x007fffffu) | select(0x00800000u, 0u, ea == 0u);
    let mo = (bitcast<u32>(b) & 0x007fffffu) | select(0x00800000u, 0u, eb == 0u);
    let exponents = max(ea, 1u) + max(eb, 1u);
    if exponents >= 151u {
        // Exact: a product below 2^-125 with a shift of 0 or less has fewer than 24 bits.
        return bitcast<f32>(sign | ((ms * mo) << (exponents - 151u)));
    }
    let shift = 151u - exponents;
    let low = (ms & 0xffffu) * (mo & 0xffffu);
    let mid = (ms & 0xffffu) * (mo >> 16u) + (ms >> 16u) * (mo & 0xffffu);
    let lo = low + (mid << 16u);
    let hi = (ms >> 16u) * (mo >> 16u) + (mid >> 16u) + select(0u, 1u, lo < low);
    var units = 0u;
    var half = false;
    var rest = false;
    if shift < 32u {
        units = (lo >> shift) | (hi << (32u - shift));
        half = ((lo >> (shift - 1u)) & 1u) != 0u;
        rest = (lo & ((1u << (shift - 1u)) - 1u)) != 0u;
    } else if shift < 49u {
        let t = shift - 32u;
        units = hi >> t;
        if t == 0u {
            half = (lo >> 31u) != 0u;
            rest = (lo & 0x7fffffffu) != 0u;
        } else {
            half = ((hi >> (t - 1u)) & 1u) != 0u;
            rest = (hi & ((1u << (t - 1u)) - 1u)) != 0u || lo != 0u;
        }
    }
    if half && (rest || (units & 1u) != 0u) {
        units = units + 1u;
    }
    return bitcast<f32>(sign | units);
}

// A sum of normal operands below 2^-126 (a GPU that flushes subnormal results makes it 0)
// is of operands below 2^-101, and exact: sum_with_subnormal_f32 computes it scaled.
fn plus_f32(a: f32, b: f32) -> f32 {
    if normal_f32(a) && normal_f32(b) {
        let sum = opaque_f32(a) + opaque_f32(b);
        let largest = max(bitcast<u32>(a) & 0x7fffffffu, bitcast<u32>(b) & 0x7fffffffu);
        if normal_f32(sum) || class_f32(sum) == 2u || largest >= (26u << 23u) {
            return sum;
        }
        return sum_with_subnormal_f32(a, b);
    }
    let ca = class_f32(a);
    let cb = class_f32(b);
    if ca == 1u && cb == 1u {
        return sum_with_subnormal_f32(a, b);
    }
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 2u && negative_f32(a) != negative_f32(b));
    var sum = select(a + b, nan_f32(), nan);
    if ca == 0u || cb == 0u {
        sum = select(a, b, ca == 0u);
        if ca == 0u && cb == 0u {
            sum = signed_zero_f32(negative_f32(a) && negative_f32(b));
        }
    }
    return sum;
}

fn minus_f32(a: f32, b: f32) -> f32 {
    if normal_f32(a) && normal_f32(b) {
        return plus_f32(a, negated_f32(b));
    }
    let ca = class_f32(a);
    let cb = class_f32(b);
    if ca == 1u && cb == 1u {
        return sum_with_subnormal_f32(a, negated_f32(b));
    }
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 2u && negative_f32(a) == negative_f32(b));
    var difference = select(a - b, nan_f32(), nan);
    if ca == 0u || cb == 0u {
        difference = select(a, negated_f32(b), ca == 0u);
        if ca == 0u && cb == 0u {
            difference = signed_zero_f32(negative_f32(a) && !negative_f32(b));
        }
    }
    return difference;
}

// A product of normal operands below 2^-125 is rounded by small_product_f32 (a GPU that
// flushes subnormal results makes one below 2^-126 0).
fn mul_f32(a: f32, b: f32) -> f32 {
    if normal_f32(a) && normal_f32(b) {
        let product = opaque_f32(a) * opaque_f32(b);
        if ((bitcast<u32>(product) >> 23u) & 0xffu) > 1u {
            return product;
        }
        return small_product_f32(a, b);
    }
    let ca = class_f32(a);
    let cb = class_f32(b);
    if ca == 1u && cb == 1u {
        return product_with_subnormal_f32(a, b);
    }
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 0u) || (ca == 0u && cb == 2u);
    var product = select(a * b, nan_f32(), nan);
    if !nan && (ca == 2u || cb == 2u) {
        // An infinity times a nonzero number, whose hardware product is NaN where the
        // GPU flushes a subnormal operand to zero (NVIDIA's f32 inf * 1e-40).
        product = signed_infinity_f32(negative_f32(a) != negative_f32(b));
    }
    if !nan && (ca == 0u || cb == 0u) {
        product = signed_zero_f32(negative_f32(a) != negative_f32(b));
    }
    return product;
}

fn unordered_f32(a: f32, b: f32) -> bool {
    return is_nan_f32(a) || is_nan_f32(b);
}

// NaN: every exponent bit set and a mantissa not zero, decided on the bits in one test.
fn is_nan_f32(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// An f32's place among the f32 values, as an integer that compares as the value does (+0
// and -0 alike; NaN is the caller's to exclude): a GPU may flush a subnormal operand of a
// float comparison to zero (NVIDIA made 1e-40 == 0 true, where the CPU's is false), and
// integers compare as they are.
fn order_f32(x: f32) -> i32 {
    let bits = bitcast<i32>(x);
    let magnitude = bits & 0x7fffffff;
    return select(magnitude, -magnitude, bits < 0);
}

// The ceiling and floor of an f32, a subnormal's decided on its bits (1 or -0, +0 or -1).
// The zero is the operand's sign bit, not a constant: lavapipe made a choice between the
// constants 1 and -0 of a condition into the condition as a float, +0 (and one between +0
// and -1 into its negation, -0).
fn ceil_f32(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (bits & 0x7f800000u) == 0u && (bits & 0x007fffffu) != 0u {
        return special_f32(select(0x3f800000u, bits & 0x80000000u, (bits & 0x80000000u) != 0u));
    }
    return ceil(x);
}

fn floor_f32(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (bits & 0x7f800000u) == 0u && (bits & 0x007fffffu) != 0u {
        return special_f32(select(bits & 0x80000000u, 0xbf800000u, (bits & 0x80000000u) != 0u));
    }
    return floor(x);
}

// The least and greatest of two floats with NaN after every number (the order of keys):
// @min skips NaN, @max of anything with a NaN is NaN.
fn min_f32(a: f32, b: f32) -> f32 {
    let nan_a = class_f32(a) == 3u;
    return select(a, b, class_f32(b) != 3u && (nan_a || order_f32(b) < order_f32(a)));
}

fn max_f32(a: f32, b: f32) -> f32 {
    let nan_a = class_f32(a) == 3u;
    return select(a, b, !nan_a && (class_f32(b) == 3u || order_f32(b) > order_f32(a)));
}
"
            }
            Helper::IeeeF64 => {
                "// IEEE 754 special values decided on the bits: the shader compiler may assume
// floats are finite and fold x - x to 0, 0 / x to 0, x / x to 1, x == x to true; integer
// tests are immune. Classes: 0 zero, 1 finite, 2 infinite, 3 NaN.
fn class_f64(x: f64) -> u32 {
    let bits = bitcast<u64>(x);
    let hi = u32(bits >> 32u) & 0x7fffffffu;
    let lo = u32(bits & 4294967295lu);
    if hi >= 0x7ff00000u {
        return select(2u, 3u, hi > 0x7ff00000u || lo != 0u);
    }
    return select(1u, 0u, hi == 0u && lo == 0u);
}

// Neither zero, subnormal, infinite nor NaN: an operation on two such numbers has no
// special case to decide (its result, whatever it is, is the hardware's IEEE one).
fn normal_f64(x: f64) -> bool {
    let exponent = u32(bitcast<u64>(x) >> 52u) & 0x7ffu;
    return exponent - 1u < 0x7feu;
}

fn negative_f64(x: f64) -> bool {
    return (u32(bitcast<u64>(x) >> 32u) & 0x80000000u) != 0u;
}

// A zero with the sign IEEE gives it: a compiler folds x * 0 to +0 and x + 0 to x, losing
// the sign that a later division by it turns into the infinity's sign.
fn signed_zero_f64(negative: bool) -> f64 {
    return special_f64(select(0lu, 9223372036854775808lu, negative));
}

fn signed_infinity_f64(negative: bool) -> f64 {
    return special_f64(select(9218868437227405312lu, 18442240474082181120lu, negative));
}

fn nan_f64() -> f64 {
    return special_f64(9221120237041090560lu);
}

// x through its bits, which the compiler cannot relate to anything: given the operands
// themselves it may regroup what IEEE rounds step by step (naga marks no operation
// NoContraction, which would forbid that), as lavapipe made f32(k) + (-683 - f32(k)) of
// -683, not 0, for k = 1 - 2^63 (corpus/sum_regrouped_by_the_shader_compiler.hir).
fn opaque_f64(x: f64) -> f64 {
    return special_f64(bitcast<u64>(x));
}

fn plus_f64(a: f64, b: f64) -> f64 {
    if normal_f64(a) && normal_f64(b) {
        return opaque_f64(a) + opaque_f64(b);
    }
    let ca = class_f64(a);
    let cb = class_f64(b);
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 2u && negative_f64(a) != negative_f64(b));
    var sum = select(a + b, nan_f64(), nan);
    if ca == 0u || cb == 0u {
        sum = select(a, b, ca == 0u);
        if ca == 0u && cb == 0u {
            sum = signed_zero_f64(negative_f64(a) && negative_f64(b));
        }
    }
    return sum;
}

fn minus_f64(a: f64, b: f64) -> f64 {
    if normal_f64(a) && normal_f64(b) {
        return opaque_f64(a) - opaque_f64(b);
    }
    let ca = class_f64(a);
    let cb = class_f64(b);
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 2u && negative_f64(a) == negative_f64(b));
    var difference = select(a - b, nan_f64(), nan);
    if ca == 0u || cb == 0u {
        difference = select(a, -b, ca == 0u);
        if ca == 0u && cb == 0u {
            difference = signed_zero_f64(negative_f64(a) && !negative_f64(b));
        }
    }
    return difference;
}

fn mul_f64(a: f64, b: f64) -> f64 {
    if normal_f64(a) && normal_f64(b) {
        return opaque_f64(a) * opaque_f64(b);
    }
    let ca = class_f64(a);
    let cb = class_f64(b);
    let nan = max(ca, cb) == 3u || (ca == 2u && cb == 0u) || (ca == 0u && cb == 2u);
    var product = select(a * b, nan_f64(), nan);
    if !nan && (ca == 2u || cb == 2u) {
        // As in mul_f32: a GPU may flush a subnormal operand, and inf * 0 is NaN.
        product = signed_infinity_f64(negative_f64(a) != negative_f64(b));
    }
    if !nan && (ca == 0u || cb == 0u) {
        product = signed_zero_f64(negative_f64(a) != negative_f64(b));
    }
    return product;
}

// True where f64 fma rounds once, as on NVIDIA: (1 + 2^-30)^2 - (1 + 2^-29) is 2^-60 fused
// and 0 as a multiply and an add, which lavapipe makes of it. Run-time bits, so that no
// compiler can fold the test.
fn fma_is_fused_f64() -> bool {
    let x = special_f64(4607182418804211712lu);
    return class_f64(fma(x, x, special_f64(13830554455663181824lu))) != 0u;
}

// Every special case of a quotient is chosen on the bits: besides the folds above, lavapipe
// divides f64 by Newton steps on a reciprocal, which make x / 0 and x / inf NaN.
fn div_f64(a: f64, b: f64) -> f64 {
    let ca = class_f64(a);
    let cb = class_f64(b);
    let negative = negative_f64(a) != negative_f64(b);
    var q = a / b;
    // Vulkan lets f64 division be 2.5 ulp off (NVIDIA's is, so x / 5 missed an equal value
    // in @member): one correction by the exact residual a - q * b makes it the correctly
    // rounded quotient the CPU computes. The residual is exact only from a fused fma, and
    // only while the compiler cannot see that q is a / b (it folds (a / b) * b to a): q is
    // taken through its bits.
    if class_f64(q) == 1u && fma_is_fused_f64() {
        let opaque = special_f64(bitcast<u64>(q));
        q = opaque + fma(-opaque, b, a) / b;
    }
    if ca == 2u || cb == 0u {
        q = signed_infinity_f64(negative);
    }
    if ca == 0u || cb == 2u {
        q = signed_zero_f64(negative);
    }
    if max(ca, cb) == 3u || (ca == cb && ca != 1u) {
        q = nan_f64();
    }
    return q;
}

fn unordered_f64(a: f64, b: f64) -> bool {
    return is_nan_f64(a) || is_nan_f64(b);
}

// NaN: every exponent bit set and a mantissa not zero, decided on the bits in one test.
fn is_nan_f64(x: f64) -> bool {
    return (bitcast<u64>(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu;
}

// The least and greatest of two floats with NaN after every number (the order of keys):
// @min skips NaN, @max of anything with a NaN is NaN.
fn min_f64(a: f64, b: f64) -> f64 {
    let nan_a = class_f64(a) == 3u;
    return select(a, b, class_f64(b) != 3u && (nan_a || b < a));
}

fn max_f64(a: f64, b: f64) -> f64 {
    let nan_a = class_f64(a) == 3u;
    return select(a, b, !nan_a && (class_f64(b) == 3u || b > a));
}
"
            }
            Helper::DivF32 => {
                "// f32 division as the CPU's, correctly rounded: WGSL allows 2.5 ulp (NVIDIA divides
// by a reciprocal). The f64 quotient of two f32 values is within an f64 ulp or two of the
// exact one, and an exact quotient of 24-bit significands is never within 2^-48 of an f32
// rounding midpoint, so rounding it to f32 gives the correctly rounded quotient. Special
// cases are chosen on the bits, as in div_f64.
fn div_f32(a: f32, b: f32) -> f32 {
    let ca = class_f32(a);
    let cb = class_f32(b);
    let negative = negative_f32(a) != negative_f32(b);
    var q = narrow_f64(widen_f32(a) / widen_f32(b));
    if ca == 2u || cb == 0u {
        q = signed_infinity_f32(negative);
    }
    if ca == 0u || cb == 2u {
        q = signed_zero_f32(negative);
    }
    if max(ca, cb) == 3u || (ca == cb && ca != 1u) {
        q = nan_f32();
    }
    return q;
}
"
            }
            Helper::DivF32OfF64 => {
                "// The f32 quotient of two f64 operands (integers, f32 values), as the CPU divides
// operands that are not both f32: the correctly rounded f64 quotient (div_f64) rounded to
// f32. An integer beyond 2^24 is not an f32, so div_f32 of the f32 roundings may be an ulp
// off, and a function of the quotient (cos of a large one) anything. Special values as
// div_f32's: an operand is zero, infinite or NaN exactly when its f32 rounding is.
fn div_f32_of_f64(a: f64, b: f64) -> f32 {
    let q = div_f32(narrow_f64(a), narrow_f64(b));
    return select(q, narrow_f64(div_f64(a, b)), class_f32(q) == 1u);
}
"
            }
            Helper::ModI32 => {
                "// a mod b with the sign of b (floored), as the CPU's; a zero b is the CPU's error
// (`bit` of the status word) and gives 0. A divisor of -1 divides every value: it is taken
// as 1, since MIN % -1 overflows WGSL's remainder.
fn mod_i32(a: i32, b: i32, bit: u32) -> i32 {
    if b == 0i {
        atomicOr(&status[0], bit);
        return 0i;
    }
    let d = select(b, 1i, b == -1i);
    let r = a % d;
    return select(r, r + d, r != 0i && ((r < 0i) != (d < 0i)));
}
"
            }
            Helper::ModI64 => {
                "// The same for i64, tested on 32-bit words: lavapipe (Mesa 22.3) miscompiles signed
// i64 comparisons with constants.
fn mod_i64(a: i64, b: i64, bit: u32) -> i64 {
    let b_high = u32(b >> 32u);
    let b_low = u32(b);
    if (b_high | b_low) == 0u {
        atomicOr(&status[0], bit);
        return 0li;
    }
    let minus_one = (b_high & b_low) == 0xffffffffu;
    let d = select(b, 1li, minus_one);
    let r = a % d;
    let r_high = u32(r >> 32u);
    let r_nonzero = (r_high | u32(r)) != 0u;
    return select(r, r + d, r_nonzero && (r_high >> 31u) != (b_high >> 31u));
}
"
            }
            Helper::ModF32 => {
                "// a - b * floor(a / b) as the CPU computes it in f32 (see mod_f64).
fn mod_f32(a: f32, b: f32) -> f32 {
    let q = div_f32(a, b);
    var f = floor_f32(q);
    if class_f32(q) >= 2u {
        f = q;
    } else if class_f32(f) == 0u {
        f = signed_zero_f32(negative_f32(q));
    }
    let p = mul_f32(b, f);
    return minus_f32(a, special_f32(bitcast<u32>(p)));
}
"
            }
            Helper::ModF64 => {
                "// a - b * floor(a / b) as the CPU computes it, each step rounded: the floor of a NaN
// or an infinity is itself and a zero floor keeps the quotient's sign, both decided on the
// bits; the product reaches the subtraction through its bits, so that it is not contracted
// into an fma with it.
fn mod_f64(a: f64, b: f64) -> f64 {
    let q = div_f64(a, b);
    var f = floor(q);
    if class_f64(q) >= 2u {
        f = q;
    } else if class_f64(f) == 0u {
        f = signed_zero_f64(negative_f64(q));
    }
    let p = mul_f64(b, f);
    return minus_f64(a, special_f64(bitcast<u64>(p)));
}
"
            }
            Helper::WidenF32 => {
                "// An f32 as f64, exactly: a subnormal from its bits (f64(x) may see it flushed to 0).
fn widen_f32(x: f32) -> f64 {
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    if magnitude >= 0x00800000u || magnitude == 0u {
        return f64(x);
    }
    let w = f64(magnitude) * 1.401298464324817e-45lf;
    return select(w, -w, (bits & 0x80000000u) != 0u);
}
"
            }
            Helper::NarrowF64 => {
                "// An f64 rounded to f32 as the CPU's `as f32` does, chosen on the bits: a result below the
// least normal f32 is rounded to a multiple of 2^-149 (round is to even, as IEEE's) and
// made from its bits (f32(x) may flush it to 0: NVIDIA's did), one at or beyond halfway
// from the largest f32 to 2^128 is an infinity.
fn narrow_f64(x: f64) -> f32 {
    let bits = bitcast<u64>(x);
    let magnitude = bits & 0x7ffffffffffffffflu;
    let sign = u32(bits >> 32u) & 0x80000000u;
    if magnitude > 0x7ff0000000000000lu {
        return special_f32(0x7fc00000u);
    }
    if magnitude >= 0x47effffff0000000lu {
        return special_f32(sign | 0x7f800000u);
    }
    if magnitude < 0x3810000000000000lu {
        let scaled = bitcast<f64>(magnitude) * bitcast<f64>(u64(149u + 1023u) << 52u);
        return bitcast<f32>(sign | u32(round(scaled)));
    }
    return f32(x);
}
"
            }
            Helper::TrigF32 => float_functions::TRIG_F32,
            Helper::ExpLogF32 => float_functions::EXP_LOG_F32,
            Helper::FunctionArgumentF64 => float_functions::FUNCTION_ARGUMENT_F64,
            Helper::InverseTrigF32 => float_functions::INVERSE_TRIG_F32,
            Helper::HyperbolicF32 => float_functions::HYPERBOLIC_F32,
        }
    }

    /// Helpers this one calls.
    pub fn requires(self) -> &'static [Helper] {
        match self {
            Helper::CivilFromDays => &[Helper::FloorDiv],
            Helper::DivF32 => &[
                Helper::IeeeF32,
                Helper::SpecialsF32,
                Helper::WidenF32,
                Helper::NarrowF64,
            ],
            Helper::DivF32OfF64 => &[
                Helper::DivF32,
                Helper::IeeeF32,
                Helper::SpecialsF32,
                Helper::IeeeF64,
                Helper::SpecialsF64,
            ],
            Helper::NarrowF64 => &[Helper::SpecialsF32],
            Helper::TrigF32 | Helper::ExpLogF32 => {
                &[Helper::WidenF32, Helper::SpecialsF32, Helper::SpecialsF64]
            }
            Helper::InverseTrigF32 => &[
                Helper::FunctionArgumentF64,
                Helper::WidenF32,
                Helper::SpecialsF32,
            ],
            Helper::HyperbolicF32 => &[
                Helper::ExpLogF32,
                Helper::FunctionArgumentF64,
                Helper::WidenF32,
                Helper::SpecialsF32,
                Helper::SpecialsF64,
            ],
            Helper::IeeeF32 => &[Helper::SpecialsF32],
            Helper::IeeeF64 => &[Helper::SpecialsF64],
            Helper::ModF32 => &[Helper::DivF32, Helper::IeeeF32, Helper::SpecialsF32],
            Helper::CalendarShift => &[Helper::FloorDiv],
            Helper::ModF64 => &[Helper::IeeeF64, Helper::SpecialsF64],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_round_trip_wgsl_literals() {
        assert_eq!(float_literal(24.0, false), "24.0lf");
        assert_eq!(float_literal(0.05, false), "0.05lf");
        assert_eq!(float_literal(1e-7, false), "1e-7lf");
        assert_eq!(float_literal(0.5, true), "0.5f");
        assert_eq!(
            float_literal(f64::INFINITY, false),
            "bitcast<f64>(9218868437227405312lu)"
        );
    }

    #[test]
    fn extreme_integers_are_written_without_overflowing_literals() {
        assert_eq!(i64_literal(i64::MIN), "(-9223372036854775807li - 1li)");
        assert_eq!(i32_literal(i64::from(i32::MIN)), "(-2147483647i - 1i)");
        assert_eq!(i32_literal(-5), "-5i");
    }

    #[test]
    fn bools_convert_through_select() {
        assert_eq!(
            convert("b", &Type::Bool, &Type::F64).as_deref(),
            Some("select(0.0lf, 1.0lf, b)")
        );
        assert_eq!(
            convert("x", &Type::I32, &Type::I64).as_deref(),
            Some("i64(x)")
        );
        assert_eq!(convert("x", &Type::Date, &Type::I32).as_deref(), Some("x"));
    }

    #[test]
    fn u32_registers_widen_to_i64_through_u64() {
        // A char's register is a u32; `i64(u32)` would be a sign-extending conversion.
        assert_eq!(
            convert("c", &Type::Char, &Type::I64).as_deref(),
            Some("i64(u64(c))")
        );
        assert_eq!(
            u32_to_i64("cell_end - cell_start"),
            "i64(u64(cell_end - cell_start))"
        );
    }
}
