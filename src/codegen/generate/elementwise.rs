//! The WGSL expression of each element-wise builtin: arithmetic, comparison, logic,
//! numeric and temporal functions (those whose elements may fail are in `checked`).

use super::*;

impl Generator<'_> {
    pub(super) fn elementwise(
        &mut self,
        b: Builtin,
        vals: &[Val],
        result: &Type,
    ) -> Result<String, CodegenError> {
        use Builtin as B;
        let arg = |k: usize| vals.get(k).cloned();
        let unsupported = |g: &Self, why: &str| g.error(Some(b), why.to_string());
        match b {
            B::Plus | B::Minus | B::Mul => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty.is_temporal() || y.ty.is_temporal() {
                    return self.temporal_arithmetic(b, &x, &y, result);
                }
                let op = match b {
                    B::Plus => "+",
                    B::Minus => "-",
                    _ => "*",
                };
                let (cx, cy) = (self.conv(&x, result)?, self.conv(&y, result)?);
                if let Some(suffix) = self.ieee_float(result) {
                    // f32 always through its helper: a GPU may flush a subnormal f32 operand
                    // or result to zero (NVIDIA made `c * 1e-40` of an i32 column 0 on an
                    // H200, fuzz seed 151515), which only the helper's tests on the bits see.
                    if suffix == "f64" && self.unchecked_float_is_exact(op, &cx, &cy) {
                        let x = self.rounded_operand(&cx, suffix);
                        let y = self.rounded_operand(&cy, suffix);
                        return Ok(format!("({x} {op} {y})"));
                    }
                    return Ok(format!("{b}_{suffix}({cx}, {cy})"));
                }
                Ok(wgsl::wrap_narrow(format!("({cx} {op} {cy})"), result))
            }
            B::Mod => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                let (cx, cy) = (self.conv(&x, result)?, self.conv(&y, result)?);
                self.modulo(&cx, &cy, result)
            }
            B::Div => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if *result == Type::F32 && (x.ty != Type::F32 || y.ty != Type::F32) {
                    // The CPU divides in f64 unless both are f32.
                    let (wx, wy) = (self.exact_f64(&x)?, self.exact_f64(&y)?);
                    self.helper(Helper::DivF32OfF64);
                    return Ok(format!("div_f32_of_f64({wx}, {wy})"));
                }
                let (cx, cy) = (self.conv(&x, result)?, self.conv(&y, result)?);
                self.float_division(&cx, &cy, result)
            }
            B::Lt | B::Leq | B::Gt | B::Geq | B::Eq | B::Neq => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                self.compare(b, &x, &y)
            }
            B::And | B::Or | B::Nand | B::Nor | B::Xor => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty != Type::Bool || y.ty != Type::Bool {
                    return Err(unsupported(self, "logic on values that are not bool"));
                }
                let (p, q) = (&x.expr, &y.expr);
                Ok(match b {
                    B::And => format!("({p} && {q})"),
                    B::Or => format!("({p} || {q})"),
                    B::Nand => format!("!({p} && {q})"),
                    B::Nor => format!("!({p} || {q})"),
                    _ => format!("({p} != {q})"),
                })
            }
            B::Not => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                if x.ty != Type::Bool {
                    return Err(unsupported(self, "@not of a value that is not bool"));
                }
                Ok(format!("!{}", x.expr))
            }
            B::Neg | B::Abs | B::Signum | B::Ceil | B::Floor | B::Round | B::Conj => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                self.numeric_unary(b, &x, result)
            }
            B::Sqrt
            | B::Recip
            | B::Pi
            | B::Exp
            | B::Log
            | B::Log2
            | B::Log10
            | B::Sin
            | B::Cos
            | B::Tan
            | B::Asin
            | B::Acos
            | B::Atan
            | B::Sinh
            | B::Cosh
            | B::Tanh
            | B::Asinh
            | B::Acosh
            | B::Atanh => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                let cx = self.conv(&x, result)?;
                let one = if *result == Type::F32 {
                    "1.0f"
                } else {
                    "1.0lf"
                };
                // An f32 result is the f64 function of the argument, exact in f64 (an f32 or
                // a narrower integer), rounded to f32, as the CPU computes it.
                let wide = |g: &mut Self| -> Result<String, CodegenError> {
                    g.use_type("f64");
                    g.conv(&x, &Type::F64)
                };
                match b {
                    // WGSL allows sqrt 2.5 ulp (NVIDIA approximates); the f64 root rounded to
                    // f32 is the correctly rounded f32 root (53 >= 2 * 24 + 2).
                    B::Sqrt if *result == Type::F32 => Ok(format!("f32(sqrt({}))", wide(self)?)),
                    B::Sqrt => Ok(format!("sqrt({cx})")),
                    // The CPU takes the reciprocal of an integer in f64, and rounds it to
                    // f32 (an integer beyond 2^24 is not an f32).
                    B::Recip if *result == Type::F32 && x.ty != Type::F32 => {
                        let w = wide(self)?;
                        self.helper(Helper::DivF32OfF64);
                        Ok(format!("div_f32_of_f64(1.0lf, {w})"))
                    }
                    B::Recip => self.float_division(one, &cx, result),
                    B::Sin | B::Cos | B::Tan if *result == Type::F32 => {
                        let w = wide(self)?;
                        self.use_type("i64");
                        self.helper(Helper::TrigF32);
                        Ok(format!("{b}_f32({w})"))
                    }
                    // WGSL allows f32 exp 3 + 2|x| ulp, and GPUs take it.
                    B::Exp | B::Log | B::Log2 | B::Log10 if *result == Type::F32 => {
                        let w = wide(self)?;
                        self.use_type("i64");
                        self.helper(Helper::ExpLogF32);
                        Ok(format!("{b}_f32({w})"))
                    }
                    // WGSL allows f32 atan 4096 ulp and derives the others from formulas
                    // that cancel near 0 and 1.
                    B::Asin | B::Acos | B::Atan if *result == Type::F32 => {
                        let w = wide(self)?;
                        self.use_type("i64");
                        self.helper(Helper::InverseTrigF32);
                        Ok(format!("{b}_f32({w})"))
                    }
                    B::Sinh | B::Cosh | B::Tanh | B::Asinh | B::Acosh | B::Atanh
                        if *result == Type::F32 =>
                    {
                        let w = wide(self)?;
                        self.use_type("i64");
                        self.helper(Helper::HyperbolicF32);
                        Ok(format!("{b}_f32({w})"))
                    }
                    // As the CPU: an integer's product with π in f64 rounded to f32, an
                    // f32's product with π's f32 (exact in f64, so rounded once). Through
                    // f64, no compiler regroups it with a product before (lavapipe made
                    // (k * 1000.0) * π of k * (1000.0 * π)).
                    B::Pi if *result == Type::F32 => {
                        let pi = if x.ty == Type::F32 {
                            f64::from(std::f32::consts::PI)
                        } else {
                            std::f64::consts::PI
                        };
                        let w = wide(self)?;
                        Ok(format!("f32({w} * {})", wgsl::float_literal(pi, false)))
                    }
                    // π as a constant the compiler cannot see (see `entry_header`), or it
                    // folds a product before into π.
                    B::Pi => {
                        let pi = self.constant(
                            wgsl::float_literal(std::f64::consts::PI, *result == Type::F32),
                            result,
                        );
                        let x = match self.ieee_float(result) {
                            Some(suffix) => self.rounded_operand(&cx, suffix),
                            None => cx,
                        };
                        Ok(format!("({x} * {pi})"))
                    }
                    B::Log10 => Err(unsupported(self, "WGSL has no log10 matching the CPU's")),
                    _ => Err(unsupported(
                        self,
                        "f64 transcendental functions have no GPU instruction (only sqrt is exact in f64)",
                    )),
                }
            }
            B::DateYear | B::DateMonth | B::DateDay => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                self.date_part(b, &x, result)
            }
            B::Date => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                if x.ty != Type::Dt {
                    return Err(unsupported(self, "@date of a value that is not a dt"));
                }
                self.helper(Helper::DaysOfDt);
                Ok(format!("days_of_dt({})", x.expr))
            }
            B::Time | B::TimeHour | B::TimeMinute | B::TimeSecond | B::TimeMill => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                self.time_part(b, &x, result)
            }
            B::DatetimeAdd | B::DatetimeSub => {
                let (Some(x), Some(k), Some(unit)) = (arg(0), arg(1), arg(2)) else {
                    return Err(unsupported(self, "expects three arguments"));
                };
                self.time_of_day_shift(b, &x, &k, &unit)
            }
            B::DatetimeDiff => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty != y.ty || !x.ty.is_temporal() {
                    return Err(unsupported(self, "operands of different temporal types"));
                }
                let (cx, cy) = (self.conv_raw(&x, result)?, self.conv_raw(&y, result)?);
                Ok(format!("({cy} - {cx})"))
            }
            _ => Err(unsupported(
                self,
                "this builtin is not generated on the GPU yet",
            )),
        }
    }

    /// Converts a value to a real type's register type (bool counts as its 0/1 integer).
    pub(super) fn conv(&mut self, val: &Val, to: &Type) -> Result<String, CodegenError> {
        if !(val.ty.is_real() && to.is_real()) {
            return Err(self.error(None, format!("arithmetic between {} and {to}", val.ty)));
        }
        if let Some(constant) = self.integer_constant_as_float(val, to) {
            return Ok(constant);
        }
        self.convert_expr(&val.expr, &val.ty, to)
            .ok_or_else(|| self.error(None, format!("no conversion from {} to {to}", val.ty)))
    }

    /// `expr`, of type `from`, in `to`'s register type ([`wgsl::convert`]), except between
    /// f32 and f64, which go through the bits: a GPU may flush a subnormal to zero in a plain
    /// conversion (NVIDIA did: an f32 `@exp(-88)` divided as f64, or an f64 below 2^-126
    /// assigned to an f32, came out 0, the CPU's not). Every conversion of a value the
    /// kernel computes or reads goes through here.
    pub(super) fn convert_expr(&mut self, expr: &str, from: &Type, to: &Type) -> Option<String> {
        match (from, to) {
            (Type::F32, Type::F64) => {
                self.use_type("f64");
                self.helper(Helper::WidenF32);
                Some(cat!("widen_f32(", expr, ")"))
            }
            (Type::F64, Type::F32) => {
                self.use_type("i64");
                self.helper(Helper::NarrowF64);
                Some(cat!("narrow_f64(", expr, ")"))
            }
            _ => wgsl::convert(expr, from, to),
        }
    }

    /// Converts the integer encoding of any value type to `to`'s register type.
    pub(super) fn conv_raw(&mut self, val: &Val, to: &Type) -> Result<String, CodegenError> {
        self.convert_expr(&val.expr, &val.ty, to)
            .ok_or_else(|| self.error(None, format!("no conversion from {} to {to}", val.ty)))
    }

    pub(super) fn temporal_arithmetic(
        &mut self,
        b: Builtin,
        x: &Val,
        y: &Val,
        result: &Type,
    ) -> Result<String, CodegenError> {
        let reg = wgsl::register_type(result).unwrap_or("i32");
        let as_result = |v: &Val| -> String {
            let own = wgsl::register_type(&v.ty).unwrap_or("i32");
            if own == reg {
                v.expr.clone()
            } else {
                format!("{reg}({})", v.expr)
            }
        };
        match (b, x.ty.is_temporal(), y.ty.is_temporal()) {
            (Builtin::Plus, true, false) if y.ty.is_integer() => {
                Ok(format!("({} + {})", as_result(x), as_result(y)))
            }
            (Builtin::Plus, false, true) if x.ty.is_integer() => {
                Ok(format!("({} + {})", as_result(x), as_result(y)))
            }
            (Builtin::Minus, true, false) if y.ty.is_integer() => {
                Ok(format!("({} - {})", as_result(x), as_result(y)))
            }
            (Builtin::Minus, true, true) if x.ty == y.ty => {
                Ok(format!("({} - {})", as_result(x), as_result(y)))
            }
            _ => Err(self.error(Some(b), format!("@{b} of {} and {}", x.ty, y.ty))),
        }
    }

    pub(super) fn compare(&mut self, b: Builtin, x: &Val, y: &Val) -> Result<String, CodegenError> {
        let op = match b {
            Builtin::Lt => "<",
            Builtin::Leq => "<=",
            Builtin::Gt => ">",
            Builtin::Geq => ">=",
            Builtin::Eq => "==",
            _ => "!=",
        };
        let strings = |t: &Type| matches!(t, Type::Sym | Type::Str);
        if strings(&x.ty) && strings(&y.ty) {
            return match (&x.text, &y.text) {
                (None, Some(text)) => self.compare_with_text(op, x, text),
                (Some(text), None) => self.compare_with_text(flip(op), y, text),
                (Some(_), Some(_)) => {
                    Err(self.error(Some(b), "a comparison of two string literals"))
                }
                (None, None) => {
                    match (&x.dictionary, &y.dictionary) {
                        (Some(DictionarySource::Input(a)), Some(DictionarySource::Input(c))) => {
                            if a != c {
                                let requirement = LaunchRequirement::SameDictionary(*a, *c);
                                if !self.requirements.contains(&requirement) {
                                    self.requirements.push(requirement);
                                }
                            }
                        }
                        _ => {
                            return Err(self.error(
                                Some(b),
                                "a comparison of strings whose dictionaries are not known",
                            ))
                        }
                    }
                    Ok(format!("({} {op} {})", x.expr, y.expr))
                }
            };
        }
        if x.ty.is_real() && y.ty.is_real() {
            let common = Type::promote(&x.ty, &y.ty).unwrap_or(Type::F64);
            // Bools compare as 0/1 words (WGSL orders no bools).
            let common = if common == Type::Bool {
                Type::Char
            } else {
                common
            };
            if common == Type::I64 {
                if let Some(narrow) = self.compare_in_i32(op, x, y) {
                    return Ok(narrow);
                }
            }
            let (cx, cy) = (self.conv_raw(x, &common)?, self.conv_raw(y, &common)?);
            if common == Type::I64 && op != "==" && op != "!=" {
                // An ordering of two i64 values is taken on their 32-bit words (the high words
                // signed, the low words unsigned when the high words are equal): lavapipe
                // (Mesa 22.3) miscompiles an i64 compared with a widened u32 (`@where`
                // positions are `i64(i)`), as in `checked_gather`.
                let high = |v: &str| format!("i32(({v}) >> 32u)");
                let low = |v: &str| format!("u32({v})");
                return Ok(format!(
                    "select({} {op} {}, {} {op} {}, {} == {})",
                    high(&cx),
                    high(&cy),
                    low(&cx),
                    low(&cy),
                    high(&cx),
                    high(&cy)
                ));
            }
            if let Some(suffix) = self.ieee_float(&common) {
                // A NaN operand makes every comparison false and `!=` true, whatever the
                // compiler assumes (`x == x` folds to true). f32 values compare by their
                // places in the order (`order_f32`): NVIDIA flushes subnormal operands.
                let (ox, oy) = if suffix == "f32" {
                    (format!("order_f32({cx})"), format!("order_f32({cy})"))
                } else {
                    (cx.clone(), cy.clone())
                };
                // A float literal is never NaN (`entry_header` sets only finite ones), so
                // with one the test is the other operand's alone: q6's filter, three
                // comparisons of columns with literals, took 38.5 µs on the H200 (SF 1, GPU
                // time) with a `class_f64` of both operands each, 37.0 with this.
                let nan = match (self.finite_constant(&cx), self.finite_constant(&cy)) {
                    (true, true) => "false".to_string(),
                    (true, false) => format!("is_nan_{suffix}({cy})"),
                    (false, true) => format!("is_nan_{suffix}({cx})"),
                    (false, false) => format!("unordered_{suffix}({cx}, {cy})"),
                };
                return Ok(if op == "!=" {
                    format!("(({ox} != {oy}) || {nan})")
                } else {
                    format!("(({ox} {op} {oy}) && !{nan})")
                });
            }
            return Ok(format!("({cx} {op} {cy})"));
        }
        if x.ty == y.ty && (x.ty.is_temporal() || x.ty == Type::Char) {
            return Ok(format!("({} {op} {})", x.expr, y.expr));
        }
        Err(self.error(Some(b), format!("a comparison of {} with {}", x.ty, y.ty)))
    }

    /// An i32-register integer (i8, i16, i32) compared with an i64 literal that fits in i32,
    /// compared in i32: the same answer, since widening is exact. lavapipe (Mesa 22.3)
    /// miscompiles the i64 form: `i64(x) < 1676li` is false for every small `x` (a signed
    /// comparison of a sign-extended i32 with a small i64 constant), while comparisons of
    /// two i64 values, or with a constant beyond i32, are right.
    fn compare_in_i32(&self, op: &str, x: &Val, y: &Val) -> Option<String> {
        let narrow = |v: &Val| wgsl::register_type(&v.ty) == Some("i32") && v.ty.is_integer();
        let small = |v: &Val| {
            self.i64_constants
                .get(&v.expr)
                .filter(|c| i32::try_from(**c).is_ok())
                .map(|c| wgsl::i32_literal(*c))
        };
        if narrow(x) {
            if let Some(c) = small(y) {
                return Some(format!("({} {op} {c})", x.expr));
            }
        }
        if narrow(y) {
            if let Some(c) = small(x) {
                return Some(format!("({c} {op} {})", y.expr));
            }
        }
        None
    }

    /// `column op "text"` through the launch-resolved bounds of the text in the column's
    /// dictionary (see `ParamValue::SymbolLower`).
    pub(super) fn compare_with_text(
        &mut self,
        op: &str,
        column: &Val,
        text: &str,
    ) -> Result<String, CodegenError> {
        let Some(DictionarySource::Input(slot)) = column.dictionary.clone() else {
            return Err(self.error(
                None,
                "a string literal compared with a value of unknown dictionary",
            ));
        };
        let key = (text.to_string(), slot.0);
        let (lower, upper) = match self.symbol_params.get(&key) {
            Some(names) => names.clone(),
            None => {
                let k = self.symbol_params.len();
                let lower = self.param(
                    format!("sym{k}_lower"),
                    ParamValue::SymbolLower {
                        text: text.to_string(),
                        slot,
                    },
                );
                let upper = self.param(
                    format!("sym{k}_upper"),
                    ParamValue::SymbolUpper {
                        text: text.to_string(),
                        slot,
                    },
                );
                self.symbol_params
                    .insert(key, (lower.clone(), upper.clone()));
                (lower, upper)
            }
        };
        let code = &column.expr;
        Ok(match op {
            "<" => format!("({code} < {lower})"),
            "<=" => format!("({code} < {upper})"),
            ">" => format!("({code} >= {upper})"),
            ">=" => format!("({code} >= {lower})"),
            "==" => format!("(({code} >= {lower}) && ({code} < {upper}))"),
            _ => format!("(({code} < {lower}) || ({code} >= {upper}))"),
        })
    }

    pub(super) fn numeric_unary(
        &mut self,
        b: Builtin,
        x: &Val,
        result: &Type,
    ) -> Result<String, CodegenError> {
        use Builtin as B;
        if !x.ty.is_real() {
            return Err(self.error(Some(b), format!("@{b} of {}", x.ty)));
        }
        let cx = self.conv(x, result)?;
        let float = result.is_float();
        let zero = wgsl::zero(wgsl::register_type(result).unwrap_or("i32"));
        // An f32 is negated and made positive on its sign bit, and its sign, ceiling and
        // floor are decided on its bits where it is subnormal: NVIDIA flushes subnormal
        // operands of f32 operations (the CPU's -1e-40 is not 0, its ceil is 1).
        let f32_bits = wgsl::register_type(result) == Some("f32");
        if f32_bits && matches!(b, B::Neg | B::Abs | B::Ceil | B::Floor) {
            self.ieee_float(&Type::F32);
            return Ok(match b {
                B::Neg => format!("negated_f32({cx})"),
                B::Abs => format!("magnitude_f32({cx})"),
                B::Ceil => format!("ceil_f32({cx})"),
                _ => format!("floor_f32({cx})"),
            });
        }
        Ok(match b {
            B::Neg => wgsl::wrap_narrow(format!("(-({cx}))"), result),
            B::Abs if *result == Type::Bool => cx,
            // Not WGSL's integer `abs`: on an H100 (Vulkan, driver 580) a comparison of a
            // float with the negated, converted `abs` came out wrong (`-6.5 <= f32(-abs(4))`
            // was false; fuzzer seed 8133290703911181448), for i32 and i64 alike, while
            // this select gives the same values (`abs` of the most negative stays itself).
            B::Abs if !float => {
                wgsl::wrap_narrow(format!("select({cx}, -({cx}), {cx} < {zero})"), result)
            }
            B::Abs => wgsl::wrap_narrow(format!("abs({cx})"), result),
            B::Signum if *result == Type::Bool => cx,
            B::Signum => {
                let (one, minus) = match wgsl::register_type(result) {
                    Some("f32") => ("1.0f", "-1.0f"),
                    Some("f64") => ("1.0lf", "-1.0lf"),
                    Some("i64") => ("1li", "-1li"),
                    _ => ("1i", "-1i"),
                };
                let keep = if float { cx.clone() } else { zero.to_string() };
                // The sign of a float with an integer result (`@signum(f64)` is i16) is taken
                // before the conversion, which would make 0.05 zero.
                let (sign_of, own_zero) = if x.ty.is_float() && !float {
                    let own = wgsl::register_type(&x.ty).unwrap_or("f64");
                    (x.expr.clone(), wgsl::zero(own))
                } else {
                    (cx.clone(), zero)
                };
                if wgsl::register_type(&x.ty) == Some("i64") {
                    // Of the i64 itself (its conversion to a narrower result would wrap), on
                    // 32-bit words: lavapipe miscompiles signed i64 comparisons with constants.
                    let high = format!("u32({} >> 32u)", x.expr);
                    let negative = format!("(({high} >> 31u) == 1u)");
                    let nonzero = format!("(({high} | u32({})) != 0u)", x.expr);
                    format!(
                        "select(select({keep}, {minus}, {negative}), {one}, {nonzero} && !{negative})"
                    )
                } else if wgsl::register_type(&x.ty) == Some("f32") {
                    // On the bits (see `f32_bits`): a NaN keeps itself, as the CPU's.
                    self.ieee_float(&Type::F32);
                    let ordered = format!("(class_f32({sign_of}) != 3u)");
                    format!(
                        "select(select({keep}, {minus}, order_f32({sign_of}) < 0 && {ordered}), {one}, order_f32({sign_of}) > 0 && {ordered})"
                    )
                } else {
                    format!(
                        "select(select({keep}, {minus}, {sign_of} < {own_zero}), {one}, {sign_of} > {own_zero})"
                    )
                }
            }
            B::Ceil | B::Floor | B::Round | B::Conj if !float => cx,
            B::Conj => cx,
            B::Ceil => format!("ceil({cx})"),
            B::Floor => format!("floor({cx})"),
            _ => {
                self.helper(Helper::Round);
                let suffix = if *result == Type::F32 { "f32" } else { "f64" };
                format!("round_{suffix}({cx})")
            }
        })
    }

    pub(super) fn date_part(
        &mut self,
        b: Builtin,
        x: &Val,
        result: &Type,
    ) -> Result<String, CodegenError> {
        let part = match b {
            Builtin::DateYear => "x",
            Builtin::DateMonth => "y",
            _ => "z",
        };
        let raw = match x.ty {
            Type::Date => {
                self.helper(Helper::CivilFromDays);
                format!("civil_from_days({}).{part}", x.expr)
            }
            Type::Dt => {
                self.helper(Helper::CivilFromDays);
                self.helper(Helper::DaysOfDt);
                format!("civil_from_days(days_of_dt({})).{part}", x.expr)
            }
            Type::Month if b != Builtin::DateDay => {
                self.helper(Helper::FloorDiv);
                if b == Builtin::DateYear {
                    format!("floor_div_i32({}, 12i)", x.expr)
                } else {
                    format!("(floor_mod_i32({}, 12i) + 1i)", x.expr)
                }
            }
            _ => return Err(self.error(Some(b), format!("@{b} of {}", x.ty))),
        };
        let part_val = Val::scalar(raw, Type::I32);
        self.conv_raw(&part_val, result)
    }

    /// `@time` of a dt, and the hour, minute, second or millisecond of a time of day, as
    /// `runtime/src/cpu/temporal.rs` computes them: the milliseconds since midnight in i64
    /// (a dt's Euclidean remainder by a day; a time's own value, a second's times 1000, a
    /// minute's times 60 000, any of which may lie outside one day after arithmetic), then
    /// truncating divisions and remainders by positive constants, wrapped to the result type
    /// (i16) as the CPU's `as` conversion wraps.
    fn time_part(&mut self, b: Builtin, x: &Val, result: &Type) -> Result<String, CodegenError> {
        self.use_type("i64");
        let millis = match x.ty {
            Type::Dt => {
                self.helper(Helper::RemEuclidI64);
                format!("rem_euclid_i64({}, 86400000li)", x.expr)
            }
            Type::Time if b != Builtin::Time => format!("i64({})", x.expr),
            Type::Second if !matches!(b, Builtin::Time | Builtin::TimeMill) => {
                format!("(i64({}) * 1000li)", x.expr)
            }
            Type::Minute if matches!(b, Builtin::TimeHour | Builtin::TimeMinute) => {
                format!("(i64({}) * 60000li)", x.expr)
            }
            _ => return Err(self.error(Some(b), format!("@{b} of {}", x.ty))),
        };
        let part = match b {
            // A dt's time of day lies within one day: an i32.
            Builtin::Time => return Ok(format!("i32({millis})")),
            Builtin::TimeHour => format!("({millis} / 3600000li)"),
            Builtin::TimeMinute => format!("(({millis} / 60000li) % 60li)"),
            Builtin::TimeSecond => format!("(({millis} / 1000li) % 60li)"),
            _ => format!("({millis} % 1000li)"),
        };
        let part_val = Val::scalar(part, Type::I64);
        Ok(wgsl::wrap_narrow(self.conv_raw(&part_val, result)?, result))
    }

    /// `@datetime_add`/`@datetime_sub` of a time of day (minute, second, time) by a unit of
    /// fixed length, as `runtime/src/cpu/temporal.rs` shifts it: only the amount modulo one
    /// day matters, and the result wraps around midnight, so no element fails. (Dates,
    /// months and dts are [`Generator::calendar_shift`]s.) A unit shorter than the type's
    /// resolution, or a month or year, is the CPU's error for the whole call: that call stays
    /// on the CPU.
    fn time_of_day_shift(
        &mut self,
        b: Builtin,
        x: &Val,
        k: &Val,
        unit: &Val,
    ) -> Result<String, CodegenError> {
        let resolution: i64 = match x.ty {
            Type::Minute => 60_000,
            Type::Second => 1000,
            Type::Time => 1,
            _ => return Err(self.error(Some(b), format!("a wrapping shift of a {}", x.ty))),
        };
        let unit_ms: i64 = match unit.text.as_deref() {
            Some("day") => 86_400_000,
            Some("hour") => 3_600_000,
            Some("minute") => 60_000,
            Some("second") => 1000,
            Some("mill") => 1,
            Some(unit @ ("year" | "month")) => {
                return Err(self.error(
                    Some(b),
                    format!(
                        "a shift the CPU refuses for the whole call (a {} by `{unit})",
                        x.ty
                    ),
                ))
            }
            _ => {
                return Err(self.error(
                    Some(b),
                    "a unit that is not a literal `day, `hour, `minute, `second or `mill",
                ))
            }
        };
        if unit_ms % resolution != 0 || !k.ty.is_integer() {
            return Err(self.error(
                Some(b),
                format!("a shift the CPU refuses (of a {} by {})", x.ty, k.ty),
            ));
        }
        let (step, day) = (unit_ms / resolution, 86_400_000 / resolution);
        self.use_type("i64");
        self.helper(Helper::RemEuclidI64);
        let v = self.conv_raw(x, &Type::I64)?;
        let amount = self.conv_raw(k, &Type::I64)?;
        let op = if b == Builtin::DatetimeSub { "-" } else { "+" };
        // |amount mod day| * step < 86 400 000^2 / resolution: no overflow.
        let moved =
            format!("rem_euclid_i64(rem_euclid_i64({amount}, {day}li) * {step}li, {day}li)");
        Ok(format!("i32(rem_euclid_i64({v} {op} {moved}, {day}li))"))
    }

    /// For a float type, the suffix of its IEEE helpers (`plus_f64`, …), with the helpers
    /// and the types they need marked used: see [`Helper::IeeeF32`] for why float
    /// arithmetic and comparisons go through them.
    pub(super) fn ieee_float(&mut self, ty: &Type) -> Option<&'static str> {
        match ty {
            Type::F32 => {
                self.helper(Helper::IeeeF32);
                Some("f32")
            }
            Type::F64 => {
                self.use_type("f64");
                self.use_type("u64");
                self.helper(Helper::IeeeF64);
                Some("f64")
            }
            _ => None,
        }
    }

    /// A real value as an f64, exactly (an f32's subnormals too; an integer beyond 2^53
    /// rounded as the CPU's conversion rounds it).
    fn exact_f64(&mut self, val: &Val) -> Result<String, CodegenError> {
        self.use_type("f64");
        self.conv(val, &Type::F64)
    }

    /// `x / y` in `result` (a float type): IEEE special values on the bits, and f32
    /// quotients correctly rounded (see [`Helper::DivF32`]).
    fn float_division(&mut self, x: &str, y: &str, result: &Type) -> Result<String, CodegenError> {
        match result {
            Type::F32 => {
                self.use_type("f64");
                self.helper(Helper::DivF32);
                Ok(format!("div_f32({x}, {y})"))
            }
            Type::F64 => {
                self.ieee_float(result);
                Ok(format!("div_f64({x}, {y})"))
            }
            other => Err(self.error(Some(Builtin::Div), format!("a division in {other}"))),
        }
    }

    /// `x mod y` in `result`, as the CPU's `Num::modulo` (runtime/src/cpu/arith.rs): of
    /// integers (i8 and i16 in their i32 registers), the remainder with the sign of `y`, a
    /// zero `y` the CPU's error (a status bit; the element is 0); of floats,
    /// `x - y * floor(x / y)`, each operation rounded in `result` as the CPU rounds it, and
    /// the special values decided on the bits (see [`Helper::ModF64`]).
    fn modulo(&mut self, x: &str, y: &str, result: &Type) -> Result<String, CodegenError> {
        match result {
            Type::F32 => {
                self.use_type("f64");
                self.helper(Helper::ModF32);
                Ok(format!("mod_f32({x}, {y})"))
            }
            Type::F64 => {
                self.ieee_float(result);
                self.helper(Helper::ModF64);
                Ok(format!("mod_f64({x}, {y})"))
            }
            Type::I8 | Type::I16 | Type::I32 | Type::I64 => {
                let bit = self.status_bit("@mod: integer modulo by zero".to_string(), None)?;
                let mask = 1u32 << bit;
                if *result == Type::I64 {
                    self.use_type("i64");
                    self.helper(Helper::ModI64);
                    Ok(format!("mod_i64({x}, {y}, {mask}u)"))
                } else {
                    // The remainder's magnitude is below the divisor's, so an i8 or i16
                    // result needs no wrapping.
                    self.helper(Helper::ModI32);
                    Ok(format!("mod_i32({x}, {y}, {mask}u)"))
                }
            }
            other => Err(self.error(Some(Builtin::Mod), format!("@mod in {other}"))),
        }
    }

    /// Adds `helper` and, transitively, the helpers it calls, with the parameters and
    /// types their text uses.
    pub(super) fn helper(&mut self, helper: Helper) {
        if !self.helpers.insert(helper) {
            return;
        }
        match helper {
            Helper::SpecialsF32 | Helper::SpecialsF64 => {
                self.param("zero".to_string(), ParamValue::Zero);
            }
            Helper::WidenF32 => self.use_type("f64"),
            Helper::NarrowF64 => {
                self.use_type("f64");
                self.use_type("u64");
            }
            _ => {}
        }
        for &required in helper.requires() {
            self.helper(required);
        }
    }
}
