//! Element-wise builtins whose elements may fail, checked in the kernel as the CPU checks
//! them: temporal shifts by an integer amount, `@datetime_add`/`@datetime_sub` by a
//! calendar unit and `@fact`. A failing element sets a status bit and records its position
//! and operands, from which the engine writes the CPU's message; its result is 0.

use super::*;

/// `@plus(temporal, integer)`, `@plus(integer, temporal)` or `@minus(temporal, integer)`:
/// a shift the kernel checks against the temporal type's range.
#[derive(Clone, Copy, Debug)]
pub(super) struct TemporalShift {
    /// Which operand is the temporal value (the other is the amount).
    temporal: usize,
    minus: bool,
}

impl TemporalShift {
    pub(super) fn of(b: Builtin, vals: &[Val]) -> Option<TemporalShift> {
        let [x, y] = vals else {
            return None;
        };
        let amount = |t: &Type| t.is_integer();
        match (b, x.ty.is_temporal(), y.ty.is_temporal()) {
            (Builtin::Plus | Builtin::Minus, true, false) if amount(&y.ty) => Some(TemporalShift {
                temporal: 0,
                minus: b == Builtin::Minus,
            }),
            (Builtin::Plus, false, true) if amount(&x.ty) => Some(TemporalShift {
                temporal: 1,
                minus: false,
            }),
            _ => None,
        }
    }
}

impl Generator<'_> {
    /// The record of a shift whose result leaves its type's range: the failing element's
    /// position and its two operands (`failure_record`), and the status bit whose report
    /// ([`CheckReport::Shift`]) the engine turns into the CPU's message. Gives the bit and the
    /// names of the two scratch buffers.
    fn shift_failure(
        &mut self,
        length: Length,
        builtin: Builtin,
        ty: &Type,
        minus: bool,
        unit: Option<String>,
    ) -> Result<(u32, String, String), CodegenError> {
        let ((first, first_name), (operands, operands_name)) =
            self.failure_record(length, GpuElement::I64, 2, "bad_operands");
        let name = builtin.name().to_string();
        let bit = self.status_bit(
            format!("@{name}: a {ty} shifted out of its range"),
            Some(CheckReport::Shift {
                builtin: name,
                ty: ty.clone(),
                minus,
                unit,
                first,
                operands,
            }),
        )?;
        Ok((bit, first_name, operands_name))
    }

    /// A temporal value shifted by an integer amount, computed in i64 and checked as the CPU
    /// checks it ([`horsec_runtime::temporal::shift`]): no i64 overflow, and the result in
    /// the type's calendar range (dates, months, dts: years 0000 to 9999) or its i32
    /// encoding (times of day). A failing element sets a status bit and records its
    /// position and operands, from which the engine writes the CPU's message
    /// ([`CheckReport::Shift`]); its result is 0.
    pub(super) fn temporal_shift(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        shift: TemporalShift,
        vals: &[Val],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let Layout::Vector { length, .. } = &self.layout else {
            return Err(self.error(Some(builtin), "a checked date shift inside a list kernel"));
        };
        let length = length.clone();
        let level = vals.iter().map(|v| v.level).max().unwrap_or(Level::Scalar);
        if level == Level::Cell {
            return Err(self.error(Some(builtin), "a checked date shift per cell"));
        }
        let (value, amount) = (&vals[shift.temporal], &vals[1 - shift.temporal]);
        let ty = value.ty.clone();
        let reg = wgsl::register_type(result_ty)
            .ok_or_else(|| self.error(Some(builtin), format!("a shift of {ty}")))?;
        self.use_type("i64");
        let widen = |g: &Self, v: &Val| {
            wgsl::convert(&v.expr, &v.ty, &Type::I64).ok_or_else(|| {
                g.error(Some(builtin), format!("no conversion from {} to i64", v.ty))
            })
        };
        let (t_expr, k_expr) = (widen(self, value)?, widen(self, amount)?);
        let n = self.scratch.len();
        let (bit, first_name, operands_name) =
            self.shift_failure(length, builtin, &ty, shift.minus, None)?;
        let s = format!("shift{n}");
        // Overflow and range are tested on 32-bit words: lavapipe (Mesa 22.3) miscompiles
        // signed i64 comparisons with constants (`k > 0li` was true for k = -3). An i64 sum
        // overflows when both operands' signs differ from the result's; a difference, when
        // the operands' signs differ and the result's differs from the first's.
        let (op, overflow_bits) = if shift.minus {
            ("-", format!("({s}_t ^ {s}_k) & ({s}_t ^ {s})"))
        } else {
            ("+", format!("({s}_t ^ {s}) & ({s}_k ^ {s})"))
        };
        let (lo, hi) = horsec_runtime::temporal::calendar_range(&ty)
            .unwrap_or((i64::from(i32::MIN), i64::from(i32::MAX)));
        // In range: `s - lo`, unsigned, at most `hi - lo`, compared word by word.
        let span = hi.abs_diff(lo);
        let lo_var = self.constant(wgsl::i64_literal(lo), &Type::I64);
        let (span_high, span_low) = ((span >> 32) as u32, span as u32);
        let prelude = vec![
            format!("let {s}_t: i64 = {t_expr};"),
            format!("let {s}_k: i64 = {k_expr};"),
            format!("let {s}: i64 = {s}_t {op} {s}_k;"),
            format!("let {s}_overflow = (u32(({overflow_bits}) >> 32u) >> 31u) == 1u;"),
            format!("let {s}_r: i64 = {s} - {lo_var};"),
            format!("let {s}_rh = u32({s}_r >> 32u);"),
            format!(
                "let {s}_ok = !{s}_overflow && ({s}_rh < {span_high}u || ({s}_rh == {span_high}u \
                 && u32({s}_r) <= {span_low}u));"
            ),
            format!(
                "if !{s}_ok {{ atomicOr(&status[0], {}u); atomicMax(&{first_name}[0], ~i); \
                 if i < {RECORDED_POSITIONS}u {{ {operands_name}[2u * i] = {s}_t; \
                 {operands_name}[2u * i + 1u] = {s}_k; }} }}",
                1u32 << bit
            ),
        ];
        let expr = if reg == "i64" {
            format!("select(0li, {s}, {s}_ok)")
        } else {
            format!("{reg}(select(0li, {s}, {s}_ok))")
        };
        let actives: Vec<&[String]> = vals.iter().map(|v| v.active.as_slice()).collect();
        let val = Val {
            expr,
            ty: result_ty.clone(),
            level,
            active: union(&actives),
            dictionary: None,
            text: None,
            list: vals.iter().any(|v| v.list),
        };
        self.define_checked_element(target, val, prelude)
    }
}

impl Generator<'_> {
    /// `@fact(n)` of an integer, as [`horsec_runtime::numeric::factorial`] computes it: an
    /// `n` outside 0..=20 (whose factorial is no i64) sets a status bit and records its
    /// position and value, from which the engine writes the CPU's message
    /// ([`CheckReport::Factorial`]); its result is 0.
    pub(super) fn factorial(
        &mut self,
        target: LocalId,
        vals: &[Val],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let builtin = Builtin::Fact;
        let [n_val] = vals else {
            return Err(self.error(Some(builtin), "expects one argument"));
        };
        let Layout::Vector { length, .. } = &self.layout else {
            return Err(self.error(Some(builtin), "a checked factorial inside a list kernel"));
        };
        let length = length.clone();
        if n_val.level == Level::Cell {
            return Err(self.error(Some(builtin), "a checked factorial per cell"));
        }
        if !n_val.ty.is_integer() || *result_ty != Type::I64 {
            return Err(self.error(
                Some(builtin),
                format!("@fact of {} as {result_ty}", n_val.ty),
            ));
        }
        self.use_type("i64");
        let argument = self.conv_raw(n_val, &Type::I64)?;
        let n = self.scratch.len();
        let ((first, first_name), (arguments, arguments_name)) =
            self.failure_record(length, GpuElement::I64, 1, "bad_argument");
        let bit = self.status_bit(
            "@fact: a factorial that is not an i64".to_string(),
            Some(CheckReport::Factorial { first, arguments }),
        )?;
        self.helper(Helper::Factorial);
        let f = format!("fact{n}");
        // The range is tested on 32-bit words: lavapipe (Mesa 22.3) miscompiles signed i64
        // comparisons with constants.
        let prelude = vec![
            format!("let {f}_n: i64 = {argument};"),
            format!(
                "let {f}_ok = u32({f}_n >> 32u) == 0u && u32({f}_n) <= {}u;",
                horsec_runtime::numeric::MAX_FACTORIAL
            ),
            format!(
                "if !{f}_ok {{ atomicOr(&status[0], {}u); atomicMax(&{first_name}[0], ~i); \
                 if i < {RECORDED_POSITIONS}u {{ {arguments_name}[i] = {f}_n; }} }}",
                1u32 << bit
            ),
        ];
        let val = Val {
            expr: format!("select(0li, factorial_i64(u32({f}_n)), {f}_ok)"),
            ty: result_ty.clone(),
            level: n_val.level,
            active: n_val.active.clone(),
            dictionary: None,
            text: None,
            list: n_val.list,
        };
        self.define_checked_element(target, val, prelude)
    }
}

impl Generator<'_> {
    /// `@datetime_add(x, k, unit)`/`@datetime_sub` of a date, month or dt by a literal unit,
    /// as [`horsec_runtime::temporal::datetime_shift`] computes each element: years and
    /// months through the civil calendar (the day clamped to the month's end), units of
    /// fixed length by whole units of the encoding, checked against overflow and the
    /// calendar's years. A failing element sets a status bit and records its position and
    /// operands, from which the engine writes the CPU's message ([`CheckReport::Shift`] with
    /// the unit); its result is 0. A unit the type cannot move by is the CPU's error for the
    /// whole call: that call stays on the CPU.
    pub(super) fn calendar_shift(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        vals: &[Val],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        use horsec_runtime::temporal::{calendar_range, datetime_unit, DatetimeUnit};
        let [value, amount, unit] = vals else {
            return Err(self.error(Some(builtin), "expects three arguments"));
        };
        let Layout::Vector { length, .. } = &self.layout else {
            return Err(self.error(
                Some(builtin),
                "a checked calendar shift inside a list kernel",
            ));
        };
        let length = length.clone();
        let level = [value, amount]
            .iter()
            .map(|v| v.level)
            .max()
            .unwrap_or(Level::Scalar);
        if level == Level::Cell {
            return Err(self.error(Some(builtin), "a checked calendar shift per cell"));
        }
        let ty = value.ty.clone();
        let unit_name = unit
            .text
            .clone()
            .ok_or_else(|| self.error(Some(builtin), "a unit that is not a symbol literal"))?;
        let step = datetime_unit(&unit_name)
            .ok_or_else(|| self.error(Some(builtin), format!("the unit `{unit_name}`")))?;
        if !amount.ty.is_integer() || *result_ty != ty {
            return Err(self.error(
                Some(builtin),
                format!("a shift of a {ty} by {} as {result_ty}", amount.ty),
            ));
        }
        let refused = |g: &Self| {
            g.error(
                Some(builtin),
                format!("a shift the CPU refuses for the whole call (a {ty} by `{unit_name})"),
            )
        };
        const DAY_MS: i64 = 86_400_000;
        let minus = builtin == Builtin::DatetimeSub;
        self.use_type("i64");
        self.helper(Helper::CalendarShift);
        let widen = |g: &Self, v: &Val| {
            wgsl::convert(&v.expr, &v.ty, &Type::I64).ok_or_else(|| {
                g.error(Some(builtin), format!("no conversion from {} to i64", v.ty))
            })
        };
        let (v_expr, k_expr) = (widen(self, value)?, widen(self, amount)?);
        let n = self.scratch.len();
        let s = format!("cal{n}");
        let neg = if minus { "-" } else { "" };
        // The amount in units of the encoding (months, days or milliseconds): `k * per`, whose
        // overflow (the CPU's checked_mul) shows as a quotient by `per` other than `k`, then
        // negated for @datetime_sub, which overflows only for i64::MIN.
        let per = match (step, &ty) {
            (DatetimeUnit::Months(per), Type::Month | Type::Date | Type::Dt) => per,
            (DatetimeUnit::Millis(ms), Type::Dt) => ms,
            (DatetimeUnit::Millis(ms), Type::Date) if ms % DAY_MS == 0 => ms / DAY_MS,
            _ => return Err(refused(self)),
        };
        let negation_ok = if minus {
            format!(" && !(u32({s}_p >> 32u) == 0x80000000u && u32({s}_p) == 0u)")
        } else {
            String::new()
        };
        let mut prelude = vec![
            format!("let {s}_v: i64 = {v_expr};"),
            format!("let {s}_k: i64 = {k_expr};"),
            format!("let {s}_p: i64 = {s}_k * {per}li;"),
            format!("let {s}_q: i64 = {s}_p / {per}li;"),
            format!(
                "let {s}_kok = u32({s}_q) == u32({s}_k) && u32({s}_q >> 32u) == u32({s}_k >> 32u){negation_ok};"
            ),
            format!("let {s}_d: i64 = {neg}{s}_p;"),
        ];
        match (step, &ty) {
            (DatetimeUnit::Months(_), Type::Date) => prelude.extend([
                format!("let {s}_m = shift_months({s}_v, {s}_d);"),
                format!("let {s}_ok = {s}_kok && {s}_m.ok;"),
                format!("let {s}_r: i64 = {s}_m.value;"),
            ]),
            (DatetimeUnit::Months(_), Type::Dt) => prelude.extend([
                format!("let {s}_days = floor_div_i64({s}_v, {DAY_MS}li);"),
                format!("let {s}_m = shift_months({s}_days, {s}_d);"),
                format!("let {s}_ok = {s}_kok && {s}_m.ok;"),
                format!(
                    "let {s}_r: i64 = {s}_m.value * {DAY_MS}li + ({s}_v - {s}_days * {DAY_MS}li);"
                ),
            ]),
            _ => {
                // A sum overflows when both operands' signs differ from the result's.
                let (lo, hi) = calendar_range(&ty).ok_or_else(|| refused(self))?;
                let lo = self.constant(wgsl::i64_literal(lo), &Type::I64);
                let hi = self.constant(wgsl::i64_literal(hi), &Type::I64);
                prelude.extend([
                    format!("let {s}_r: i64 = {s}_v + {s}_d;"),
                    format!(
                        "let {s}_overflow = (u32((({s}_v ^ {s}_r) & ({s}_d ^ {s}_r)) >> 32u) >> 31u) == 1u;"
                    ),
                    format!(
                        "let {s}_ok = {s}_kok && !{s}_overflow && le_i64({lo}, {s}_r) && le_i64({s}_r, {hi});"
                    ),
                ]);
            }
        }
        let (bit, first_name, operands_name) =
            self.shift_failure(length, builtin, &ty, minus, Some(unit_name))?;
        prelude.push(format!(
            "if !{s}_ok {{ atomicOr(&status[0], {}u); atomicMax(&{first_name}[0], ~i); \
             if i < {RECORDED_POSITIONS}u {{ {operands_name}[2u * i] = {s}_v; \
             {operands_name}[2u * i + 1u] = {s}_k; }} }}",
            1u32 << bit
        ));
        let reg = wgsl::register_type(result_ty)
            .ok_or_else(|| self.error(Some(builtin), format!("a shift of {ty}")))?;
        let expr = if reg == "i64" {
            format!("select(0li, {s}_r, {s}_ok)")
        } else {
            format!("{reg}(select(0li, {s}_r, {s}_ok))")
        };
        let actives: Vec<&[String]> = [value, amount]
            .iter()
            .map(|v| v.active.as_slice())
            .collect();
        let val = Val {
            expr,
            ty: result_ty.clone(),
            level,
            active: union(&actives),
            dictionary: None,
            text: None,
            list: value.list || amount.list,
        };
        self.define_checked_element(target, val, prelude)
    }
}
