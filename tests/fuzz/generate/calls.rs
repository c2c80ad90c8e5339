//! Element-wise calls (over any scope: `main`, a function body, a loop) and the
//! statements of one call.

use super::*;

impl Gen<'_> {
    /// A unary or binary element-wise call over `scope` (and literals), optionally of exactly
    /// type and shape `want`, optionally with `first` as its first operand.
    pub(super) fn elementwise(
        &mut self,
        scope: &[VarId],
        want: Option<(&Type, Shape)>,
        first: Option<VarId>,
        binary_only: bool,
    ) -> Option<Expr> {
        for _ in 0..40 {
            let wrong = self.deliberate();
            let a = match first {
                Some(v) => self.var_operand(v),
                None => match want {
                    Some((_, Shape::Rows(c))) if self.rng.chance(0.8) => {
                        let v = self.pick_var(scope, |var| var.shape == Shape::Rows(c))?;
                        self.var_operand(v)
                    }
                    _ => match self.pick_var(scope, |v| v.ty.is_basic()) {
                        Some(v) if self.rng.chance(0.85) => self.var_operand(v),
                        _ => {
                            let ty = weighted(&mut self.rng, LITERAL_TYPES);
                            self.scalar_literal(&ty)
                        }
                    },
                },
            };
            let unary = !binary_only && self.rng.chance(0.3);
            let (builtin, args) = if unary {
                // Dates are few in the pool: a free unary call sometimes takes one.
                let a = match self.pick_var(scope, |v| v.ty == Type::Date) {
                    Some(v) if first.is_none() && want.is_none() && self.rng.chance(0.15) => {
                        self.var_operand(v)
                    }
                    _ => a,
                };
                if a.ty == Type::Date && self.rng.chance(0.25) {
                    // Days between two dates: another date of the value's shape, or a literal.
                    let shape = a.shape;
                    let b = match self.pick_var(scope, |v| {
                        v.ty == Type::Date && (v.shape == shape || v.shape == Shape::Scalar)
                    }) {
                        Some(v) if self.rng.chance(0.6) => self.var_operand(v),
                        _ => self.scalar_literal(&Type::Date),
                    };
                    (B::DatetimeDiff, vec![a, b])
                } else if a.ty == Type::Date && self.rng.chance(0.35) {
                    let builtin = *self.rng.pick(&[B::DatetimeAdd, B::DatetimeSub]);
                    // An amount of the value's shape, or a literal, and a unit.
                    let shape = a.shape;
                    let amount = match self.pick_var(scope, |v| {
                        v.ty.is_integer() && (v.shape == shape || v.shape == Shape::Scalar)
                    }) {
                        Some(v) if self.rng.chance(0.5) => self.var_operand(v),
                        _ => {
                            let ty = weighted(&mut self.rng, &[(Type::I32, 2), (Type::I64, 1)]);
                            self.scalar_literal(&ty)
                        }
                    };
                    let unit = Operand {
                        text: format!("`{}:sym", self.rng.pick(DATE_UNITS)),
                        ty: Type::Sym,
                        shape: Shape::Scalar,
                        uses: Vec::new(),
                    };
                    (builtin, vec![a, amount, unit])
                } else if self.rng.chance(FLOAT_FUNCTION_SHARE) {
                    (weighted(&mut self.rng, FLOAT_FUNCTIONS), vec![a])
                } else {
                    (weighted(&mut self.rng, UNARY), vec![a])
                }
            } else {
                let builtin = weighted(&mut self.rng, BINARY);
                let shape = a.shape;
                let b_var = if self.rng.chance(0.6) {
                    self.pick_var(scope, |v| {
                        v.ty.is_basic()
                            && if wrong {
                                matches!((v.shape, shape), (Shape::Rows(x), Shape::Rows(y)) if x != y)
                            } else {
                                v.shape == shape || v.shape == Shape::Scalar || shape == Shape::Scalar
                            }
                    })
                } else {
                    None
                };
                let b = match b_var {
                    Some(v) => self.var_operand(v),
                    None if wrong => continue,
                    None => {
                        let ty = self.related_type(&a.ty);
                        self.scalar_literal(&ty)
                    }
                };
                if self.rng.chance(0.5) && first.is_none() {
                    (builtin, vec![b, a])
                } else {
                    (builtin, vec![a, b])
                }
            };
            let reordered = args
                .iter()
                .any(|o| o.uses.iter().any(|&u| self.p.vars[u].reordered));
            if reordered && !CONTINUOUS.contains(&builtin) {
                continue;
            }
            let arg_types: Vec<ArgType> = args.iter().map(|o| value(&o.ty)).collect();
            let Some(ty) = result_type(builtin, &arg_types) else {
                continue;
            };
            if !ty.is_basic() {
                continue;
            }
            let shape = args
                .iter()
                .map(|o| o.shape)
                .find(|s| *s != Shape::Scalar)
                .unwrap_or(Shape::Scalar);
            if let Some((want_ty, want_shape)) = want {
                if ty != *want_ty || shape != want_shape {
                    continue;
                }
            }
            let texts: Vec<&str> = args.iter().map(|o| o.text.as_str()).collect();
            return Some(Expr {
                text: format!("@{}({})", builtin.name(), texts.join(", ")),
                ty,
                shape,
                uses: args.iter().flat_map(|o| o.uses.clone()).collect(),
                calls: Vec::new(),
            });
        }
        None
    }

    /// `v:T = expr;` added to `main` and the pool.
    pub(super) fn assign_expr(&mut self, e: Expr) -> VarId {
        let v = self.new_var("v", e.ty.clone(), e.shape);
        let line = format!("{}:{} = {};", self.name(v), e.ty, e.text);
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses: e.uses,
                calls: e.calls,
            },
            &[v],
        );
        v
    }

    /// A single-line statement `v:T = @b(args);` whose type the rules give.
    pub(super) fn simple_call(
        &mut self,
        b: B,
        args: &[Operand],
        shape: Shape,
        prefix: &str,
    ) -> Option<VarId> {
        let types: Vec<ArgType> = args.iter().map(|o| value(&o.ty)).collect();
        let ty = result_type(b, &types)?;
        let texts: Vec<&str> = args.iter().map(|o| o.text.as_str()).collect();
        let v = self.new_var(prefix, ty.clone(), shape);
        let line = format!(
            "{}:{ty} = @{}({});",
            self.name(v),
            b.name(),
            texts.join(", ")
        );
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses: args.iter().flat_map(|o| o.uses.clone()).collect(),
                calls: Vec::new(),
            },
            &[v],
        );
        Some(v)
    }

    pub(super) fn rows_var(&mut self, fits: impl Fn(&Var) -> bool) -> Option<VarId> {
        let pool = self.pool.clone();
        self.pick_var(&pool, |v| matches!(v.shape, Shape::Rows(_)) && fits(v))
    }

    pub(super) fn class_of(&self, v: VarId) -> ClassId {
        match self.p.vars[v].shape {
            Shape::Rows(c) => c,
            Shape::Scalar => usize::MAX,
        }
    }
}
