//! When a float `+`, `-` or `*` can skip its special-value checks.
//!
//! The IEEE helpers (`plus_f64`, …) decide zeros, infinities and NaN on the bits because a
//! shader compiler may assume floats are finite and ignore the sign of zero: it may fold
//! `x - x` to 0, `x * 0` to 0 and `x + 0` to `x`, which differ from IEEE for infinities,
//! NaN and negative zero. Such folds need the compiler to know something of the operands:
//! that one is a constant zero or special, or that both are the same value. Where neither
//! can be known, the hardware's own operation is the IEEE one and the checks only cost
//! time (q1's pass over the rows spends a tenth of its time in them on an H100).
//!
//! So an operation runs unchecked when its operands are made of disjoint *leaves*: loads
//! from different buffers (a load is known only by its buffer, whatever its index),
//! launch parameters and the row index, combined by conversions and arithmetic, with
//! constants that are finite and not zero. Anything else (a literal in the text, a helper
//! that makes a special value, a variable made elsewhere) keeps the checks.
//!
//! Only f64 operations skip them: f32 ones always go through their helpers, since a GPU
//! may flush an f32 subnormal operand or result to zero (NVIDIA does), which only the
//! helpers' tests on the bits see; NVIDIA keeps f64 subnormals.

use super::*;

/// Calls an operand may contain: conversions and the arithmetic helpers, whose results
/// depend on their arguments alone (`opaque_*` is its argument).
const PURE_CALLS: &[&str] = &[
    "f64",
    "f32",
    "i64",
    "i32",
    "u32",
    "u64",
    "plus_f64",
    "minus_f64",
    "mul_f64",
    "div_f64",
    "plus_f32",
    "minus_f32",
    "mul_f32",
    "div_f32",
    "opaque_f64",
    "opaque_f32",
];

impl Generator<'_> {
    /// Whether `x op y` (floats, `op` one of `+ - *`) may be computed without the IEEE
    /// helper: both operands' leaves are known and none is shared. A sum or difference
    /// of a product stays checked: nothing stops the compiler from fusing an unchecked
    /// `a * b + c` into one rounding (naga marks no operation NoContraction), where the
    /// CPU rounds twice; the checks read the product's bits, which keeps it rounded.
    pub(super) fn unchecked_float_is_exact(&self, op: &str, x: &str, y: &str) -> bool {
        if op != "*" && (self.is_product(x) || self.is_product(y)) {
            return false;
        }
        match (self.leaves(x), self.leaves(y)) {
            (Some(a), Some(b)) => a.is_disjoint(&b),
            _ => false,
        }
    }

    /// `expr` as the operand of an unchecked float operation: taken through its bits
    /// (`opaque_f32`/`opaque_f64`, see [`Generator::ieee_float`]) when it may be the result
    /// of arithmetic, else as it is. Given `(x * c1) * c2` with `c1` and `c2` the same for
    /// every thread (constants, even hidden ones, or parameters), a shader compiler may
    /// compute `c1 * c2` once and multiply each `x` by it: one rounding fewer than the CPU's.
    /// NVIDIA's made `@pi(@pi(k))` of `k * π²`, an f64 ulp off (fuzz seed
    /// 11297679030470676998 on an H200). Its operands' bits keep each step rounded.
    pub(super) fn rounded_operand(&self, expr: &str, suffix: &str) -> String {
        if self.is_arithmetic(expr) {
            cat!("opaque_", suffix, "(", expr, ")")
        } else {
            expr.to_string()
        }
    }

    /// Whether `expr` may be the result of arithmetic (or a variable holding one): an
    /// operator or arithmetic helper outside its loads' indices (a load is a value of its
    /// own, whatever its index).
    pub(super) fn is_arithmetic(&self, expr: &str) -> bool {
        let mut depth = 0usize;
        let operator_outside = expr.bytes().any(|c| {
            match c {
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            depth == 0 && matches!(c, b'*' | b'+' | b'-' | b'/')
        });
        // Indices hold integer arithmetic only, never these float helpers.
        operator_outside
            || ["plus_f", "minus_f", "mul_f", "div_f", "opaque_f"]
                .iter()
                .any(|call| expr.contains(call))
            || self.arithmetic_variables.contains(expr.trim())
    }

    /// Whether `expr` may be a product (or a variable holding one).
    pub(super) fn is_product(&self, expr: &str) -> bool {
        expr.contains('*') || expr.contains("mul_f") || self.product_variables.contains(expr.trim())
    }

    /// The leaves of the WGSL expression `expr` (see the module comment); None when the
    /// expression holds anything whose value the compiler might know or relate.
    pub(super) fn leaves(&self, expr: &str) -> Option<BTreeSet<String>> {
        // Scanned as bytes: names and brackets are ASCII, and a byte of a multi-byte
        // character is neither a digit, a letter nor `_`, as the character is not.
        let bytes = expr.as_bytes();
        let mut leaves = BTreeSet::new();
        let mut at = 0;
        while at < bytes.len() {
            let c = bytes[at];
            if c.is_ascii_digit() {
                // A literal: its value is the compiler's to see.
                return None;
            }
            if !(c.is_ascii_alphabetic() || c == b'_') {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len()
                && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_' || bytes[at] == b'.')
            {
                at += 1;
            }
            let name = &expr[start..at];
            let mut next = at;
            while next < bytes.len() && bytes[next] == b' ' {
                next += 1;
            }
            match bytes.get(next) {
                Some(b'(') => {
                    if !PURE_CALLS.contains(&name) {
                        return None;
                    }
                }
                Some(b'[') => {
                    // A load: known by its buffer; the index is skipped.
                    if !self.bindings.iter().any(|b| b.name == name) {
                        return None;
                    }
                    leaves.insert(name.to_string());
                    let mut depth = 0usize;
                    at = next;
                    while at < bytes.len() {
                        match bytes[at] {
                            b'[' => depth += 1,
                            b']' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        at += 1;
                    }
                    at += 1;
                }
                _ => {
                    if name == "i" || name.starts_with("params.") {
                        leaves.insert(name.to_string());
                    } else if let Some(known) = self.variable_leaves.get(name) {
                        leaves.extend(known.as_ref()?.iter().cloned());
                    } else if !self.constant_is_ordinary(name) {
                        return None;
                    }
                }
            }
        }
        Some(leaves)
    }

    /// Whether `name` is one of the kernel's constants, finite and not zero.
    fn constant_is_ordinary(&self, name: &str) -> bool {
        let Some((_, _, value)) = self.constants.iter().find(|(n, _, _)| n == name) else {
            return false;
        };
        let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        digits
            .parse::<f64>()
            .is_ok_and(|v| v.is_finite() && v != 0.0)
    }
}
