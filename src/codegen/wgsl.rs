//! WGSL spelling of HorseIR types and constants, conversions between them, and the helper
//! functions generated modules include on demand.
//!
//! Inside a kernel a value is held in its *register type*: `bool` for bool (stored as a `u32`
//! word), otherwise the storage element of [`GpuElement::of_type`].

use horsec_runtime::kernel::GpuElement;
use horsec_runtime::types::Type;

use crate::syntax::ast::LiteralValue;

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
    Some(format!("{target}({expr})"))
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
    /// `round_f32`/`round_f64`: half away from zero (Rust's `round`; WGSL's rounds to even).
    Round,
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
        }
    }

    /// Helpers this one calls.
    pub fn requires(self) -> &'static [Helper] {
        match self {
            Helper::CivilFromDays => &[Helper::FloorDiv],
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
}
