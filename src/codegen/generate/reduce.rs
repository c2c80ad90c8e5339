//! Reductions over the kernel (`@sum`, `@min`, `@max`, `@avg`, `@len`) and per-cell work of
//! list kernels (`@each` and friends).

use super::*;

impl Generator<'_> {
    pub(super) fn reduction(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        value: Val,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let op = match builtin {
            Builtin::Sum => ReduceOp::Sum,
            Builtin::Min => ReduceOp::Min,
            Builtin::Max => ReduceOp::Max,
            Builtin::Avg => ReduceOp::Avg,
            _ => ReduceOp::Count,
        };
        let ty = value.ty.clone();
        let (acc, identity, folded, counted) = match op {
            ReduceOp::Count => ("u32", "0u".to_string(), "1u".to_string(), false),
            ReduceOp::Sum | ReduceOp::Avg => {
                let sum_ty = if ty.is_float() {
                    Type::F64
                } else if ty.is_integer() {
                    Type::I64
                } else {
                    return Err(self.error(Some(builtin), format!("cannot sum {ty}")));
                };
                let acc = if sum_ty == Type::F64 { "f64" } else { "i64" };
                let folded = self
                    .convert_expr(&value.expr, &ty, &sum_ty)
                    .unwrap_or_default();
                (
                    acc,
                    wgsl::zero(acc).to_string(),
                    folded,
                    op == ReduceOp::Avg,
                )
            }
            ReduceOp::Min | ReduceOp::Max => {
                let max = op == ReduceOp::Max;
                let (acc, identity) = extreme_identity(&ty, max).ok_or_else(|| {
                    self.error(Some(builtin), format!("no GPU minimum or maximum of {ty}"))
                })?;
                // Floats fold through `min_f64`/`max_f64` (NaN after every number).
                self.ieee_float(&ty);
                let folded = if ty == Type::Bool {
                    format!("select(0u, 1u, {})", value.expr)
                } else {
                    value.expr.clone()
                };
                // Counted whatever the type: the minimum or maximum of no elements is an
                // error on both backends, never the accumulator's starting value.
                (acc, identity, folded, true)
            }
        };
        self.use_type(acc);
        if matches!(self.layout, Layout::List { .. }) {
            // Per-cell results are values of the cell-level statements that follow.
            let name = self.name(target);
            self.values.insert(
                target,
                Val {
                    expr: format!("v_{name}"),
                    ty: result_ty.clone(),
                    level: Level::Cell,
                    active: Vec::new(),
                    dictionary: value.dictionary.clone(),
                    text: None,
                    list: true,
                },
            );
        }
        // The CPU's message (runtime/src/cpu/reduce.rs), so both backends fail alike; a
        // per-cell reduction fails as the CPU's `@each` does.
        let reported = if matches!(self.layout, Layout::List { .. }) {
            Builtin::Each
        } else {
            builtin
        };
        let empty_bit = match op {
            ReduceOp::Min => Some("minimum"),
            ReduceOp::Max => Some("maximum"),
            ReduceOp::Avg => Some("average"),
            ReduceOp::Sum | ReduceOp::Count => None,
        }
        .map(|what| self.status_bit(format!("@{reported}: no {what} of no elements"), None))
        .transpose()?;
        self.reductions.push(Reduction {
            op,
            target,
            acc,
            identity,
            value: folded,
            active: value.active.clone(),
            counted,
            empty_bit,
            result: result_ty.clone(),
            dictionary: value.dictionary.clone(),
        });
        Ok(())
    }

    pub(super) fn each(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let Some(Arg::Function(Callee::Builtin(f), _)) = args.first() else {
            return Err(self.error(Some(builtin), "@each of a user function inside a kernel"));
        };
        let f = *f;
        let rest = self.operand_args(builtin, &args[1..])?;
        let cell_ty = match result_ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        if !matches!(self.layout, Layout::List { .. }) {
            return Err(self.error(Some(builtin), "@each inside a vector kernel"));
        }
        match (builtin, f, rest.as_slice()) {
            (Builtin::Each, Builtin::Len | Builtin::Count, [list]) => {
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "@each(@len, …) of a value that is not a list of cells",
                    ));
                }
                let val = Val {
                    expr: wgsl::u32_to_i64("cell_end - cell_start"),
                    ty: Type::I64,
                    level: Level::Cell,
                    active: Vec::new(),
                    dictionary: None,
                    text: None,
                    list: true,
                };
                self.use_type("i64");
                self.define(target, val, Vec::new())
            }
            (Builtin::Each, Builtin::Sum | Builtin::Avg | Builtin::Min | Builtin::Max, [list]) => {
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "a per-cell reduction of a value that is not a list of cells",
                    ));
                }
                self.reduction(target, f, list, &cell_ty)
            }
            (Builtin::EachRight, Builtin::Index, [source, list]) => {
                // A list input of positions: the engine names the first one out of range
                // (in cell order, as the CPU meets them) from the host's copy.
                let list_input = match list {
                    Operand::Local(local, _) if !self.values.contains_key(local) => Some(*local),
                    _ => None,
                };
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "@each_right(@index, x, l) with l not a list of cells",
                    ));
                }
                let list_input = list_input.filter(|_| list.active.is_empty());
                let (mut val, prelude) =
                    self.gather_named(f, builtin, source, &list, list_input)?;
                val.list = true;
                self.define_with(target, val, Vec::new(), prelude)
            }
            (Builtin::Each, f, [list]) if is_elementwise(f) => {
                let list = self.operand(list)?;
                let mut val = self.map(f, &[list], &cell_ty)?;
                val.list = true;
                self.define(target, val, Vec::new())
            }
            (Builtin::EachRight | Builtin::EachLeft | Builtin::EachItem, f, [a, b])
                if is_elementwise(f) =>
            {
                let (a, b) = (self.operand(a)?, self.operand(b)?);
                let fixed_ok = match builtin {
                    Builtin::EachRight => a.level == Level::Scalar,
                    Builtin::EachLeft => b.level == Level::Scalar,
                    _ => true,
                };
                if !fixed_ok {
                    return Err(self.error(
                        Some(builtin),
                        "the fixed argument of @each_left/@each_right is not one element",
                    ));
                }
                let mut val = self.map(f, &[a, b], &cell_ty)?;
                val.list = true;
                self.define(target, val, Vec::new())
            }
            _ => Err(self.error(
                Some(builtin),
                format!("@{builtin} of @{f} is not generated yet"),
            )),
        }
    }

    // ----- element-wise builtins -----------------------------------------------------------
}
