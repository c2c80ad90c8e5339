//! Run-time lengths the engine resolves at launch: of values (from their shapes), of the
//! launch, of an element-wise result and of what a builtin makes.

use super::*;

impl Generator<'_> {
    /// A length the engine can resolve for `size`: a constant, or the length of an input.
    pub(super) fn length_of_size(&self, size: &Size) -> Result<Length, CodegenError> {
        if let Size::Constant(k) = size {
            return Ok(Length::Constant(*k));
        }
        for &input in &self.kernel.inputs {
            match self.shape_before_kernel(input) {
                Some(Shape::Vector(s)) if s == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::Elements,
                    })
                }
                Some(Shape::Enumeration { values, .. }) if values == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::EnumIndex,
                    })
                }
                Some(Shape::List(cells, _)) if cells == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::ListOffsets,
                    })
                }
                _ => {}
            }
        }
        // `@vector(n, v)` and `@range(n)` make their size from `n`, `@append(x, y)` from
        // both lengths.
        let mut produced_elementwise = false;
        // A `@vector` or `@range` whose count this kernel computes: the launch cannot be
        // sized before it runs, so that statement runs on the host (see the driver).
        let mut counted_inside = None;
        for &id in &self.kernel.statements {
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            let StmtKind::Assign { expr, .. } = &stmt.kind else {
                continue;
            };
            let Some((Callee::Builtin(builtin), args)) = expr_call(expr) else {
                continue;
            };
            let produced = self
                .analysis
                .shapes
                .values
                .get(id.0)
                .and_then(|v| v.first());
            if produced.and_then(Shape::vector_size) != Some(size) {
                continue;
            }
            if is_elementwise(builtin) {
                produced_elementwise = true;
            }
            if builtin == Builtin::Append {
                let part = |arg: Option<&Arg>| match arg {
                    Some(Arg::Operand(Operand::Local(local, _))) => Some(Length::Of {
                        slot: Self::slot(*local),
                        part: ValuePart::Elements,
                    }),
                    Some(Arg::Operand(Operand::Literal(literal))) => {
                        Some(Length::Constant(literal.values.len() as u64))
                    }
                    _ => None,
                };
                if let (Some(a), Some(b)) = (part(args.first()), part(args.get(1))) {
                    return Ok(Length::Sum(Box::new(a), Box::new(b)));
                }
            }
            if builtin != Builtin::Vector && builtin != Builtin::Range {
                continue;
            }
            match args.first() {
                Some(Arg::Operand(Operand::Local(n, _))) if self.kernel.inputs.contains(n) => {
                    return Ok(Length::ValueOf(Self::slot(*n)))
                }
                Some(Arg::Operand(Operand::Local(..))) => counted_inside = Some((id, builtin)),
                Some(Arg::Operand(Operand::Literal(literal))) => {
                    if let [LiteralValue::Int(n)] = literal.values.as_slice() {
                        return Ok(Length::Constant((*n).max(0) as u64));
                    }
                }
                _ => {}
            }
        }
        // A size the shape analysis could not prove equal to an input's (the result of an
        // element-wise call on inputs of dynamic sizes): any full-length vector input has it.
        if produced_elementwise && !matches!(size, Size::Compressed(..)) {
            for &input in &self.kernel.inputs {
                if let Some(Shape::Vector(s)) = self.shape_before_kernel(input) {
                    if !s.is_scalar() && !matches!(s, Size::Compressed(..)) {
                        return Ok(Length::Of {
                            slot: Self::slot(input),
                            part: ValuePart::Elements,
                        });
                    }
                }
            }
        }
        if let Some((id, builtin)) = counted_inside {
            let statement = self
                .tree
                .stmt(id)
                .map(|stmt| label(self.program, self.function, stmt))
                .unwrap_or_else(|| format!("{id}"));
            return Err(CodegenError::unsupported(
                &self.kernel.name,
                statement,
                Some(builtin),
                "a count computed in the same kernel".to_string(),
                Some(id),
            ));
        }
        Err(CodegenError::unsupported(
            &self.kernel.name,
            "kernel".to_string(),
            None,
            "no input or literal gives the length of its geometry".to_string(),
            None,
        ))
    }

    // ----- bindings, params, scratch -------------------------------------------------------

    /// The geometry's length (vector layout), before unproven inputs widen the launch.
    pub(super) fn geometry_length(&self) -> Option<Length> {
        match &self.layout {
            Layout::Vector { length, .. } => Some(length.clone()),
            Layout::List { .. } => None,
        }
    }

    /// The number of threads of a vector launch: the geometry's length, widened to every
    /// input whose size the compiler could not relate to it.
    pub(super) fn launch_length(&self) -> Option<Length> {
        let mut length = self.geometry_length()?;
        let mut seen = vec![length.clone()];
        for other in &self.unproven {
            if !seen.contains(other) && !self.checked_equal.contains(other) {
                seen.push(other.clone());
                length = Length::Max(Box::new(length), Box::new(other.clone()));
            }
        }
        Some(length)
    }

    /// The run-time length of an operand of the current statement (vector layout only).
    pub(super) fn operand_length(&self, operand: &Operand) -> Option<Length> {
        let geometry = self.geometry_length()?;
        Some(match operand {
            Operand::Literal(literal) => Length::Constant(literal.values.len() as u64),
            Operand::Global(global, _) => Length::Constant(
                self.program
                    .globals
                    .get(global.0)
                    .map_or(1, |g| g.value.values.len() as u64),
            ),
            Operand::Local(local, _) => {
                if let Some(length) = self.lengths.get(local) {
                    return Some(length.clone());
                }
                let Layout::Vector { size, .. } = &self.layout else {
                    return None;
                };
                match self
                    .analysis
                    .shapes
                    .before
                    .get(self.current.0)
                    .and_then(|fact| fact.get(local))
                {
                    Some(Shape::Vector(s)) if s == size => geometry,
                    Some(Shape::Vector(Size::Constant(k))) => Length::Constant(*k),
                    Some(Shape::Vector(Size::Compressed(..))) => geometry,
                    Some(Shape::Vector(_)) => Length::Of {
                        slot: Self::slot(*local),
                        part: ValuePart::Elements,
                    },
                    _ => geometry,
                }
            }
        })
    }

    /// The length of an element-wise result of operands of lengths `a` and `b`, with the
    /// launch check of their agreement where the compiler cannot see it.
    pub(super) fn broadcast_length(&mut self, builtin: Builtin, a: Length, b: Length) -> Length {
        if a == b || b == Length::Constant(1) {
            return a;
        }
        if a == Length::Constant(1) {
            return b;
        }
        let site = self.site();
        self.launch_checks.push(LaunchCheck {
            builtin: builtin.name().to_string(),
            rule: LaunchRule::Broadcast(a.clone(), b.clone()),
            site,
        });
        Length::Broadcast(Box::new(a), Box::new(b))
    }

    /// The run-time length of the value `builtin` makes from `args` (vector layout), with
    /// the launch checks its arguments need.
    pub(super) fn result_length(
        &mut self,
        builtin: Builtin,
        args: &[Arg],
    ) -> Result<Option<Length>, CodegenError> {
        use Builtin as B;
        let Some(geometry) = self.geometry_length() else {
            return Ok(None);
        };
        let operands: Vec<&Operand> = args
            .iter()
            .filter_map(|arg| match arg {
                Arg::Operand(operand) => Some(operand),
                Arg::Function(..) => None,
            })
            .collect();
        let length_of = |g: &Self, k: usize| {
            operands
                .get(k)
                .and_then(|op| g.operand_length(op))
                .unwrap_or_else(|| geometry.clone())
        };
        Ok(Some(match builtin {
            B::Compress => {
                let (mask, data) = (length_of(self, 0), length_of(self, 1));
                if mask != data {
                    // Once the check has passed both lengths are one.
                    if mask == geometry {
                        self.checked_equal.push(data.clone());
                    }
                    let site = self.site();
                    self.launch_checks.push(LaunchCheck {
                        builtin: builtin.name().to_string(),
                        rule: LaunchRule::MaskLength(mask.clone(), data),
                        site,
                    });
                }
                mask
            }
            B::Where => length_of(self, 0),
            B::Index => length_of(self, 1),
            B::Vector | B::Range => {
                // `@range` makes i64s; `@vector` copies of its second argument.
                let filled = operands.get(1).filter(|_| builtin == B::Vector).map(|op| {
                    crate::analysis::statements::operand_type(self.program, self.function, op)
                });
                let element_bytes = filled
                    .as_ref()
                    .map_or(8, horsec_runtime::sizes::element_bytes);
                match operands.first() {
                    Some(Operand::Local(count, _)) if self.kernel.inputs.contains(count) => {
                        let site = self.site();
                        self.launch_checks.push(LaunchCheck {
                            builtin: builtin.name().to_string(),
                            rule: LaunchRule::Count {
                                count: Self::slot(*count),
                                element_bytes,
                            },
                            site,
                        });
                    }
                    Some(Operand::Literal(literal)) => match literal.values.as_slice() {
                        // Its own length: a one-element `@vector` fuses, as a scalar, into
                        // kernels of any geometry, and must stay one element.
                        [LiteralValue::Int(n)] if *n >= 0 => {
                            return Ok(Some(Length::Constant(*n as u64)))
                        }
                        // The CPU's refusal, with its message, is the answer.
                        _ => {
                            return Err(self.error(
                                Some(builtin),
                                "a count that is not one non-negative integer",
                            ))
                        }
                    },
                    _ => {}
                }
                geometry
            }
            B::Sum | B::Min | B::Max | B::Len | B::Count | B::Avg => Length::Constant(1),
            B::Each | B::EachLeft | B::EachRight | B::EachItem | B::Raze => return Ok(None),
            _ if is_elementwise(builtin) => match operands.len() {
                0 => geometry,
                1 => length_of(self, 0),
                _ => {
                    let (a, b) = (length_of(self, 0), length_of(self, 1));
                    self.broadcast_length(builtin, a, b)
                }
            },
            _ => geometry,
        }))
    }
}
