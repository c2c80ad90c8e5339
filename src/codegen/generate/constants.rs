//! The literals of a kernel: module-scope constants, and the lines at each entry point that
//! hide the float ones from the shader compiler.

use super::*;

impl Generator<'_> {
    /// A one-element literal as the kernel reads it: text as its code (resolved at launch),
    /// any other value as a constant (see [`Generator::constant`]).
    pub(super) fn literal_val(&mut self, literal: &Literal) -> Result<Val, CodegenError> {
        let ty = literal.ty.ty.clone();
        let [value] = literal.values.as_slice() else {
            return Err(self.error(
                None,
                format!(
                    "a literal of {} elements inside a kernel (only one-element literals are generated)",
                    literal.values.len()
                ),
            ));
        };
        if let LiteralValue::Text(text) = value {
            let mut val = Val::scalar("0u".to_string(), ty);
            val.text = Some(text.clone());
            val.dictionary = Some(DictionarySource::Literal(vec![text.clone()]));
            return Ok(val);
        }
        let expr = wgsl::literal(value, &ty)
            .ok_or_else(|| self.error(None, format!("a {ty} literal has no GPU form")))?;
        let expr = self.constant(expr, &ty);
        if let (LiteralValue::Int(v), Type::I64) = (value, &ty) {
            self.i64_constants.insert(expr.clone(), *v);
        }
        Ok(Val::scalar(expr, ty))
    }

    /// A literal as the kernel reads it. WGSL evaluates every expression of constants when
    /// the shader is created, and naga refuses many that a run-time value accepts: it cannot
    /// convert an i64 or f64 constant to another type (`f64(8li)`) nor apply a math function
    /// to an f64 one (`ceil(332.25lf)`), and a constant out of a function's domain
    /// (`sqrt(-3.0f)`), an overflow (`-(-2147483648i)`) or a division by zero is an error.
    /// So numeric and bool literals are module-scope private variables, which make the expressions
    /// reading them run-time ones with the CPU's semantics. The shader compiler still folds
    /// integer and bool ones; float ones it cannot know (see [`Generator::entry_header`]).
    pub(super) fn constant(&mut self, expr: String, ty: &Type) -> String {
        let wgsl = match wgsl::register_type(ty) {
            Some(reg @ ("bool" | "i32" | "u32" | "f32" | "i64" | "f64")) => reg,
            _ => return expr,
        };
        if let Some((name, _, _)) = self
            .constants
            .iter()
            .find(|(_, t, value)| *t == wgsl && *value == expr)
        {
            return name.clone();
        }
        if matches!(wgsl, "f32" | "f64") {
            // Each entry point makes the constant opaque (see `entry_header`).
            self.helper(if wgsl == "f32" {
                Helper::SpecialsF32
            } else {
                Helper::SpecialsF64
            });
        }
        let name = format!("constant{}", self.constants.len());
        self.constants.push((name.clone(), wgsl, expr));
        name
    }

    /// An entry point's first lines: its header, then each float constant set again from
    /// its bits through `special_f32`/`special_f64`, whose value the shader compiler cannot
    /// know. Knowing two constants, compilers regroup `(x * c1) * c2` as `x * (c1 * c2)`
    /// and `(x + c1) + c2` as `x + (c1 + c2)` (naga marks no operation exact): one rounding
    /// fewer, where the CPU rounds each step. `@pi(@mul(k, 1e7))` was an `f64` ulp off on
    /// lavapipe, which `@sin` of the result (on the CPU) made 1e-5 apart.
    pub(super) fn entry_header(&self, name: &str) -> String {
        let mut text = entry_signature(name);
        for (constant, ty, value) in &self.constants {
            if let Some(bits) = finite_float_bits(ty, value) {
                let _ = writeln!(text, "    {constant} = {bits};");
            }
        }
        text
    }

    /// Whether `expr` names a float constant with a finite value: one `entry_header` sets
    /// from its bits, never NaN.
    pub(super) fn finite_constant(&self, expr: &str) -> bool {
        self.constants
            .iter()
            .any(|(name, ty, value)| name == expr && finite_float_bits(ty, value).is_some())
    }

    /// An integer literal converted to a float as a float constant of its own, which the
    /// kernel hides from the shader compiler (see `entry_header`): `f64(constant1)` of an
    /// `i32` constant is a constant the compiler folds, and regroups `(x * 3) * 7` as
    /// `x * 21.0`. Only where the integer is exact in the float type (as every value there
    /// converts alike); None for anything else.
    pub(super) fn integer_constant_as_float(&mut self, val: &Val, to: &Type) -> Option<String> {
        if !(val.ty.is_integer() && to.is_float()) {
            return None;
        }
        let (_, _, value) = self
            .constants
            .iter()
            .find(|(name, ty, _)| *name == val.expr && matches!(*ty, "i32" | "i64"))?;
        let v: i64 = value
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .ok()?;
        let exact = if *to == Type::F32 { 1 << 24 } else { 1 << 53 };
        if v.unsigned_abs() > exact {
            return None;
        }
        let literal = wgsl::float_literal(v as f64, *to == Type::F32);
        Some(self.constant(literal, to))
    }
}

/// A finite float constant of WGSL type `ty` and literal `value` set from its bits
/// (`special_f32(0x…u)`, `special_f64(0x…lu)`); None for any other constant.
fn finite_float_bits(ty: &str, value: &str) -> Option<String> {
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    match ty {
        "f32" => digits
            .parse::<f32>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| format!("special_f32({:#x}u)", v.to_bits())),
        "f64" => digits
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(|v| format!("special_f64({:#x}lu)", v.to_bits())),
        _ => None,
    }
}

fn entry_signature(name: &str) -> String {
    format!(
        "@compute @workgroup_size(WORKGROUP_SIZE)
fn {name}(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {{
"
    )
}
