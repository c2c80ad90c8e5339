//! Statements of the kernel: assignments, the builtin calls they make, and the WGSL
//! variables their values are bound to.

use super::*;

impl Generator<'_> {
    pub(super) fn statement(&mut self, id: StmtId) -> Result<(), CodegenError> {
        let stmt = self
            .tree
            .stmt(id)
            .ok_or_else(|| CodegenError::malformed(&self.kernel.name, "unknown statement id"))?;
        let (target, expr) = match &stmt.kind {
            StmtKind::Assign { targets, expr, .. } => match targets.as_slice() {
                [Target::Local(local)] => (Some(*local), expr),
                [Target::Discard] => (None, expr),
                _ => return Err(self.error(None, "several assignment targets in a kernel")),
            },
            StmtKind::Expr(expr) => (None, expr),
            StmtKind::Declare(_) => return Ok(()),
            StmtKind::If { .. } | StmtKind::While { .. } | StmtKind::Repeat { .. } => {
                return Err(self.error(None, "control flow inside a kernel is not generated yet"))
            }
            _ => return Err(self.error(None, "this statement cannot run in a kernel")),
        };
        let Some(target) = target else {
            // A discarded pure value does nothing.
            return Ok(());
        };
        // A declaration of another numeric type converts the expression's value, computed in
        // its own type.
        let converted_to = match (self.function.locals.get(target.0), expr.types.as_slice()) {
            (Some(declared), [value]) if converts_at_assignment(&declared.ty, value) => {
                Some((declared.ty.clone(), value.clone()))
            }
            _ => None,
        };
        let result_ty = match &converted_to {
            Some((_, value)) => value.clone(),
            None => self.local_type(target),
        };
        self.assign(target, expr, &result_ty)?;
        match converted_to {
            Some((declared, _)) => self.convert_assigned(target, &declared),
            None => Ok(()),
        }
    }

    /// Defines `target` as the value of `expr`, of type `result_ty`.
    pub(super) fn assign(
        &mut self,
        target: LocalId,
        expr: &Expr,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        match expr_call(expr) {
            None => match &expr.kind {
                ExprKind::Operand(operand) => {
                    if let Some(length) = self.operand_length(operand) {
                        self.lengths.insert(target, length);
                    }
                    let val = self.operand(operand)?;
                    self.define(target, val, Vec::new())
                }
                _ => Err(self.error(None, "an expression that cannot run in a kernel")),
            },
            Some((Callee::Function(_), _)) => {
                Err(self.error(None, "a call of a user function inside a kernel"))
            }
            Some((Callee::Builtin(builtin), args)) => self.call(target, builtin, args, result_ty),
        }
    }

    /// Converts the value just defined for `target` to `declared`, its variable's numeric
    /// type, as the CPU converts at the assignment (Rust's `as`). Conversions WGSL makes
    /// differently (a float to an integer: NaN and saturation at i8/i16), and reductions,
    /// whose value is made after the loop, are left to the CPU.
    pub(super) fn convert_assigned(
        &mut self,
        target: LocalId,
        declared: &Type,
    ) -> Result<(), CodegenError> {
        let unsupported = |g: &Self, why: &str| {
            g.error(
                None,
                format!("{why} assigned to a variable declared {declared} (converted on the CPU)"),
            )
        };
        if self.reductions.iter().any(|r| r.target == target) {
            return Err(unsupported(self, "a reduction"));
        }
        let Some(val) = self.values.get(&target).cloned() else {
            return Err(unsupported(self, "a value made outside the element loop"));
        };
        if val.ty == *declared {
            return Ok(());
        }
        if val.list {
            return Err(unsupported(self, "a list"));
        }
        if val.ty.is_float() && declared.is_integer() {
            return Err(unsupported(self, "a float"));
        }
        let converted = wgsl::wrap_narrow(self.conv(&val, declared)?, declared);
        let wgsl_ty = wgsl::register_type(declared).ok_or_else(|| {
            self.error(
                None,
                format!("a value of type {declared} has no GPU layout"),
            )
        })?;
        self.use_type(wgsl_ty);
        let var = format!("v_{}_as_{declared}", self.name(target));
        let lines = match val.level {
            Level::Cell => &mut self.cell_lines,
            _ => &mut self.element_lines,
        };
        lines.push(format!("let {var}: {wgsl_ty} = {converted};"));
        self.values.insert(
            target,
            Val {
                expr: var,
                ty: declared.clone(),
                ..val
            },
        );
        Ok(())
    }

    pub(super) fn operand_args(
        &self,
        builtin: Builtin,
        args: &[Arg],
    ) -> Result<Vec<Operand>, CodegenError> {
        args.iter()
            .map(|arg| match arg {
                Arg::Operand(operand) => Ok(operand.clone()),
                Arg::Function(..) => {
                    Err(self.error(Some(builtin), "an unexpected function argument"))
                }
            })
            .collect()
    }

    /// Defines `target` as each thread's element position (an i64), existing under
    /// `conditions`: `@where` and `@range` over the kernel's elements.
    fn define_position(
        &mut self,
        target: LocalId,
        conditions: Vec<String>,
    ) -> Result<(), CodegenError> {
        self.use_type("i64");
        let val = Val::element(wgsl::u32_to_i64("i"), Type::I64, None);
        self.define(target, val, conditions)
    }

    pub(super) fn call(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let length = self.result_length(builtin, args)?;
        if let Some(length) = &length {
            if matches!(
                builtin,
                Builtin::Sum
                    | Builtin::Min
                    | Builtin::Max
                    | Builtin::Len
                    | Builtin::Count
                    | Builtin::Avg
            ) {
                if let Some(Arg::Operand(operand)) = args.first() {
                    if let Some(folded) = self.operand_length(operand) {
                        self.reduced_lengths.insert(target, folded);
                    }
                }
            }
            self.lengths.insert(target, length.clone());
        }
        self.generate_call(target, builtin, args, result_ty)
    }

    pub(super) fn generate_call(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        use Builtin as B;
        match builtin {
            B::Compress => {
                let ops = self.operand_args(builtin, args)?;
                let [mask, value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                let (mask, value) = (self.operand(mask)?, self.operand(value)?);
                if mask.level != Level::Element || value.level != Level::Element {
                    return Err(self.error(
                        Some(builtin),
                        "compression of a one-element or per-cell value",
                    ));
                }
                // Compacted vectors pair by position after compaction, not by row: a mask and
                // data compacted by different masks (or one of them only) are of different
                // lengths (the run's error) or pair other rows than this kernel's threads.
                let conditions = |v: &Val| {
                    let mut c = v.active.clone();
                    c.sort();
                    c.dedup();
                    c
                };
                if conditions(&mask) != conditions(&value) {
                    return Err(self.error(
                        Some(builtin),
                        "a mask and data compacted by different masks (they pair by position \
                         after compaction)",
                    ));
                }
                let mut val = value.clone();
                val.active = union(&[
                    mask.active.as_slice(),
                    value.active.as_slice(),
                    std::slice::from_ref(&mask.expr),
                ]);
                let active = val.active.clone();
                val.active = Vec::new();
                if self.kernel.grouped.is_some() && self.row_reads.contains_key(&val.expr) {
                    // A grouped kernel reads every column of a kept row in one go: loaded
                    // under its mask, a row's values wait for the mask's own load, and the
                    // pass over the rows (q1's filter keeps 98 % of them) pays two memory
                    // round trips per step instead of one. The read is in bounds at every
                    // row; the value still exists only where the mask holds.
                    self.define(target, val, Vec::new())?;
                    if let Some(defined) = self.values.get_mut(&target) {
                        defined.active = active;
                    }
                    return Ok(());
                }
                self.define(target, val, active)
            }
            B::Where => {
                let ops = self.operand_args(builtin, args)?;
                let [mask] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let mask = self.operand(mask)?;
                if !matches!(self.layout, Layout::Vector { .. })
                    || mask.level != Level::Element
                    || !mask.active.is_empty()
                {
                    return Err(self.error(
                        Some(builtin),
                        "@where of a mask that is not over the kernel's full geometry (positions would need a scan)",
                    ));
                }
                self.define_position(target, vec![mask.expr])
            }
            B::Reverse => {
                let ops = self.operand_args(builtin, args)?;
                let [Operand::Local(local, _)] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one vector argument"));
                };
                self.reversed(target, *local)
            }
            B::Range => {
                // Element i of `@range(n)` is i, where the kernel's elements are the range's.
                let range_size = self
                    .analysis
                    .shapes
                    .values
                    .get(self.current.0)
                    .and_then(|values| values.first())
                    .and_then(Shape::vector_size);
                let over_the_geometry = matches!(
                    &self.layout,
                    Layout::Vector { size, .. } if Some(size) == range_size
                );
                if !over_the_geometry {
                    return Err(self.error(
                        Some(builtin),
                        "a range of another length than the kernel's elements",
                    ));
                }
                self.define_position(target, Vec::new())
            }
            B::Index => {
                let ops = self.operand_args(builtin, args)?;
                let [source, index] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                // An index read straight from an input: the engine names the first one out of
                // range from the host's copy, as the CPU does.
                let index_input = match index {
                    Operand::Local(local, _) if !self.values.contains_key(local) => Some(*local),
                    _ => None,
                };
                let index = self.operand(index)?;
                let index_input = index_input.filter(|_| index.active.is_empty());
                let (val, prelude) = self.gather(builtin, source, &index, index_input)?;
                self.define_with(target, val, index.active.clone(), prelude)
            }
            B::Fetch => {
                let ops = self.operand_args(builtin, args)?;
                let [Operand::Local(local, _)] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one enum local"));
                };
                self.fetch(target, *local, result_ty)
            }
            B::Vector => {
                let ops = self.operand_args(builtin, args)?;
                let [_, value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                if let Operand::Local(local, _) = value {
                    let cyclic = !self.values.contains_key(local)
                        && !matches!(
                            self.analysis
                                .shapes
                                .before
                                .get(self.current.0)
                                .and_then(|f| f.get(local)),
                            Some(Shape::Vector(Size::Constant(1)))
                        );
                    if cyclic {
                        return self.cyclic_fill(target, *local);
                    }
                }
                let value = self.operand(value)?;
                if value.level != Level::Scalar {
                    return Err(self.error(
                        Some(builtin),
                        "@vector of a longer vector made in this kernel",
                    ));
                }
                let mut val = value;
                val.level = Level::Element;
                val.text = None;
                self.define(target, val, Vec::new())
            }
            B::Sum | B::Min | B::Max | B::Len | B::Count | B::Avg => {
                let ops = self.operand_args(builtin, args)?;
                let [value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let value = self.operand(value)?;
                if !matches!(self.layout, Layout::Vector { .. }) {
                    return Err(self.error(
                        Some(builtin),
                        "a whole-vector reduction inside a list kernel",
                    ));
                }
                if value.level != Level::Element {
                    return Err(self.error(
                        Some(builtin),
                        "a reduction of a one-element value inside a kernel",
                    ));
                }
                self.reduction(target, builtin, value, result_ty)
            }
            B::Append => {
                let ops = self.operand_args(builtin, args)?;
                let [first, second] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                self.append(target, first, second, result_ty)
            }
            B::Each | B::EachLeft | B::EachRight | B::EachItem => {
                self.each(target, builtin, args, result_ty)
            }
            B::Raze => {
                let ops = self.operand_args(builtin, args)?;
                let [list] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let mut val = self.operand(list)?;
                if !val.list {
                    return Err(self.error(Some(builtin), "@raze of a value that is not a list"));
                }
                val.list = false;
                self.define(target, val, Vec::new())
            }
            _ => {
                let ops = self.operand_args(builtin, args)?;
                let vals = ops
                    .iter()
                    .map(|op| self.operand(op))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(shift) = checked::TemporalShift::of(builtin, &vals) {
                    return self.temporal_shift(target, builtin, shift, &vals, result_ty);
                }
                if matches!(builtin, B::DatetimeAdd | B::DatetimeSub)
                    && vals
                        .first()
                        .is_some_and(|v| matches!(v.ty, Type::Date | Type::Dt | Type::Month))
                {
                    return self.calendar_shift(target, builtin, &vals, result_ty);
                }
                if builtin == B::Fact {
                    return self.factorial(target, &vals, result_ty);
                }
                let val = self.map(builtin, &vals, result_ty)?;
                // An integer @mod checks its divisor (a status bit): see `checked_extent`.
                if builtin == B::Mod && result_ty.is_integer() {
                    return self.define_checked_element(target, val, Vec::new());
                }
                self.define(target, val, Vec::new())
            }
        }
    }

    /// An element-wise builtin applied to `vals` (already at one level).
    pub(super) fn map(
        &mut self,
        builtin: Builtin,
        vals: &[Val],
        result_ty: &Type,
    ) -> Result<Val, CodegenError> {
        let level = vals.iter().map(|v| v.level).max().unwrap_or(Level::Scalar);
        if vals
            .iter()
            .any(|v| v.level != Level::Scalar && v.level != level)
        {
            return Err(self.error(
                Some(builtin),
                "operands of one element-wise call at different levels (per element and per cell)",
            ));
        }
        let actives: Vec<&[String]> = vals.iter().map(|v| v.active.as_slice()).collect();
        let active = union(&actives);
        let expr = self.elementwise(builtin, vals, result_ty)?;
        if let Some(wgsl) = wgsl::register_type(result_ty) {
            self.use_type(wgsl);
        }
        Ok(Val {
            expr,
            ty: result_ty.clone(),
            level,
            active,
            dictionary: None,
            text: None,
            list: vals.iter().any(|v| v.list),
        })
    }

    /// Binds `target` to `val`, an element-wise value whose evaluation (with `prelude`) may
    /// fail a check: evaluated only within [`Generator::checked_extent`].
    pub(super) fn define_checked_element(
        &mut self,
        target: LocalId,
        val: Val,
        prelude: Vec<String>,
    ) -> Result<(), CodegenError> {
        let extent = self.checked_extent(target);
        self.define_checked(target, val, extent, prelude)
    }

    /// For a value whose evaluation may fail (a check setting a status bit), `i < <its
    /// length>` when that length may differ from the geometry's: the launch spans the longest
    /// input, and a failing check on an element past the value's end (an empty vector
    /// against a one-element one, whose broadcast is empty) would fail a run the CPU
    /// completes.
    ///
    /// None in a grouped kernel's epilogue: there the loop over the groups bounds `i`, and
    /// every value is one per group. A guard would compare `i` with a length the launch
    /// resolves before the kernel has counted the groups (an epilogue `@fact` over the
    /// groups' counts went unchecked, and the run answered where the CPU refused).
    fn checked_extent(&mut self, target: LocalId) -> Vec<String> {
        if self.in_epilogue {
            return Vec::new();
        }
        let (Some(own), Some(geometry)) = (self.lengths.get(&target), self.geometry_length())
        else {
            return Vec::new();
        };
        if *own == geometry {
            return Vec::new();
        }
        let own = own.clone();
        let name = cat!("len_v_", self.name(target));
        vec![cat!("i < ", self.param(name, ParamValue::Length(own)))]
    }

    /// Binds `target` to `val`, evaluated under `extra` conjuncts besides its own.
    pub(super) fn define(
        &mut self,
        target: LocalId,
        val: Val,
        extra: Vec<String>,
    ) -> Result<(), CodegenError> {
        self.define_with(target, val, extra, Vec::new())
    }

    pub(super) fn define_with(
        &mut self,
        target: LocalId,
        val: Val,
        extra: Vec<String>,
        prelude: Vec<String>,
    ) -> Result<(), CodegenError> {
        let active = union(&[val.active.as_slice(), extra.as_slice()]);
        self.define_checked(target, Val { active, ..val }, Vec::new(), prelude)
    }

    /// Binds `target` to `val` (its `prelude` first), evaluated only where `extent` holds
    /// besides its own conjuncts; unlike those, `extent` does not follow the value (see
    /// [`Generator::checked_extent`]: past it the value is never read, but a check there
    /// would fail the run).
    pub(super) fn define_checked(
        &mut self,
        target: LocalId,
        mut val: Val,
        extent: Vec<String>,
        prelude: Vec<String>,
    ) -> Result<(), CodegenError> {
        let active = val.active.clone();
        let condition = union(&[active.as_slice(), extent.as_slice()]);
        let wgsl_ty = wgsl::register_type(&val.ty).ok_or_else(|| {
            self.error(
                None,
                format!("a value of type {} has no GPU layout", val.ty),
            )
        })?;
        self.use_type(wgsl_ty);
        // A value computed before under the same condition is read from its variable:
        // programs repeat expressions (q1 computes `1 - l_discount` and the discounted
        // price twice), and the shader compiler does not merge the copies, each under its
        // own `if`. Expressions are pure; a prelude or an extent (checks) is never shared.
        let key = (prelude.is_empty() && extent.is_empty())
            .then(|| (val.level, wgsl_ty, condition.clone(), val.expr.clone()));
        if let Some(var) = key.as_ref().and_then(|key| self.computed.get(key)) {
            val.expr = var.clone();
            val.active = active;
            val.text = None;
            self.values.insert(target, val);
            return Ok(());
        }
        let var = cat!("v_", self.name(target));
        if let Some(key) = key {
            self.computed.insert(key, var.clone());
        }
        let leaves = self.leaves(&val.expr);
        self.variable_leaves.insert(var.clone(), leaves);
        if self.is_product(&val.expr) {
            self.product_variables.insert(var.clone());
        }
        if self.is_arithmetic(&val.expr) {
            self.arithmetic_variables.insert(var.clone());
        }
        let lines = match val.level {
            Level::Cell => &mut self.cell_lines,
            _ => &mut self.element_lines,
        };
        if condition.is_empty() {
            lines.extend(prelude);
            lines.push(cat!("let ", var, ": ", wgsl_ty, " = ", val.expr, ";"));
        } else {
            lines.push(cat!("var ", var, ": ", wgsl_ty, ";"));
            lines.push(cat!("if ", condition.join(" && "), " {"));
            lines.extend(prelude.into_iter().map(|l| cat!("    ", l)));
            lines.push(cat!("    ", var, " = ", val.expr, ";"));
            lines.push("}".to_string());
        }
        val.expr = var;
        val.active = active;
        val.text = None;
        self.values.insert(target, val);
        Ok(())
    }
}
