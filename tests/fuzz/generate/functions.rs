//! User functions with scalar and vector parameters.

use super::*;

impl Gen<'_> {
    /// A call of a new or an earlier user function, with scalar and vector arguments.
    pub(super) fn call(&mut self) {
        if !self.signatures.is_empty() && self.rng.chance(0.35) {
            let sig = self.rng.pick(&self.signatures).clone();
            if let Some(e) = self.call_existing(&sig) {
                self.assign_expr(e);
                return;
            }
        }
        let class = self.rows_var(|v| v.ty.is_basic()).map(|v| self.class_of(v));
        let n = 1 + self.rng.below(3);
        let mut args = Vec::new();
        for _ in 0..n {
            let vector = class.is_some() && self.rng.chance(0.6);
            let arg = if vector {
                let c = class.unwrap_or_default();
                match self.rows_var(|v| v.shape == Shape::Rows(c) && v.ty.is_basic()) {
                    Some(v) => self.var_operand(v),
                    None => continue,
                }
            } else {
                let pool = self.pool.clone();
                match self.pick_var(&pool, |v| v.shape == Shape::Scalar && v.ty.is_basic()) {
                    Some(v) if self.rng.chance(0.4) => self.var_operand(v),
                    _ => {
                        let ty = weighted(&mut self.rng, LITERAL_TYPES);
                        self.scalar_literal(&ty)
                    }
                }
            };
            args.push(arg);
        }
        if args.is_empty() {
            return;
        }
        if let Some(e) = self.new_function(args, None) {
            self.assign_expr(e);
        }
    }

    /// Defines a function of `args`' types (scalar where the argument is) whose body is a few
    /// element-wise calls, and returns the call of it on `args`. With `want`, the function
    /// returns exactly that type.
    pub(super) fn new_function(&mut self, args: Vec<Operand>, want: Option<&Type>) -> Option<Expr> {
        // The body may decide something on its parameters.
        if args
            .iter()
            .any(|a| a.uses.iter().any(|&u| self.p.vars[u].reordered))
        {
            return None;
        }
        let index = self.p.functions.len();
        let fvar = self.new_var("f", Type::Func, Shape::Scalar);
        let fname = self.name(fvar);
        let call_class = args.iter().map(|a| a.shape).find(|s| *s != Shape::Scalar);
        let max = call_class.map_or(1, |s| self.max_len(s));
        let body_class = self.new_class(max);
        let mut scope = Vec::new();
        let mut params = Vec::new();
        for a in &args {
            let shape = if a.shape == Shape::Scalar {
                Shape::Scalar
            } else {
                Shape::Rows(body_class)
            };
            let v = self.new_var("p", a.ty.clone(), shape);
            scope.push(v);
            params.push(format!("{}:{}", self.name(v), a.ty));
        }
        let mut body: Vec<Stmt> = Vec::new();
        let steps = 1 + self.rng.below(3);
        let mut last = None;
        for step in 0..steps {
            let final_step = step + 1 == steps;
            let e = match (final_step, want) {
                (true, Some(t)) => {
                    let shape = if call_class.is_some() && self.rng.chance(0.8) {
                        Shape::Rows(body_class)
                    } else {
                        Shape::Scalar
                    };
                    let first = scope.first().copied();
                    self.elementwise(&scope, Some((t, shape)), first, false)
                        .or_else(|| {
                            self.elementwise(
                                &scope,
                                Some((t, Shape::Rows(body_class))),
                                None,
                                false,
                            )
                        })
                        .or_else(|| self.elementwise(&scope, Some((t, Shape::Scalar)), None, false))
                }
                _ => self.elementwise(&scope, None, None, false),
            };
            let Some(e) = e else {
                if final_step && want.is_some() {
                    return None;
                }
                continue;
            };
            let v = self.new_var("fv", e.ty.clone(), e.shape);
            body.push(Stmt {
                lines: vec![format!("{}:{} = {};", self.name(v), e.ty, e.text)],
                defs: vec![v],
                uses: e.uses,
                calls: Vec::new(),
            });
            scope.push(v);
            last = Some(v);
        }
        // A reduction inside the function now and then (a scalar result from vectors).
        if want.is_none() && self.rng.chance(0.2) {
            if let Some(x) = last.filter(|&x| self.p.vars[x].ty.is_real()) {
                let ty = result_type(B::Sum, &[value(&self.p.vars[x].ty)])?;
                let v = self.new_var("fv", ty.clone(), Shape::Scalar);
                self.p.vars[v].reordered = sums_floats(B::Sum, &self.p.vars[x].ty);
                body.push(Stmt {
                    lines: vec![format!("{}:{ty} = @sum({});", self.name(v), self.name(x))],
                    defs: vec![v],
                    uses: vec![x],
                    calls: Vec::new(),
                });
                last = Some(v);
            }
        }
        let result = last?;
        let ret_ty = self.p.vars[result].ty.clone();
        let returns_scalar = self.p.vars[result].shape == Shape::Scalar;
        self.p.functions.push(Function {
            name: fname.clone(),
            header: format!("def {fname}({}) : {ret_ty}", params.join(", ")),
            body,
            result,
        });
        self.signatures.push(FunctionSig {
            index,
            params: args
                .iter()
                .map(|a| (a.ty.clone(), a.shape == Shape::Scalar))
                .collect(),
            returns: ret_ty.clone(),
            returns_scalar,
        });
        let shape = if returns_scalar {
            Shape::Scalar
        } else {
            call_class.unwrap_or(Shape::Scalar)
        };
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        Some(Expr {
            text: format!("@{fname}({})", texts.join(", ")),
            ty: ret_ty,
            shape,
            uses: args.iter().flat_map(|a| a.uses.clone()).collect(),
            calls: vec![index],
        })
    }

    /// A call of an earlier function on other arguments of its parameter types.
    pub(super) fn call_existing(&mut self, sig: &FunctionSig) -> Option<Expr> {
        let mut class = None;
        let mut args = Vec::new();
        for (ty, scalar) in &sig.params {
            let arg = if *scalar {
                let pool = self.pool.clone();
                match self.pick_var(&pool, |v| {
                    v.shape == Shape::Scalar && v.ty == *ty && !v.reordered
                }) {
                    Some(v) if self.rng.chance(0.4) => self.var_operand(v),
                    _ => self.scalar_literal(ty),
                }
            } else {
                let v = self.rows_var(|v| {
                    v.ty == *ty && !v.reordered && class.is_none_or(|c| v.shape == Shape::Rows(c))
                })?;
                class = Some(self.class_of(v));
                self.var_operand(v)
            };
            args.push(arg);
        }
        let shape = match class {
            Some(c) if !sig.returns_scalar => Shape::Rows(c),
            _ => Shape::Scalar,
        };
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        Some(Expr {
            text: format!(
                "@{}({})",
                self.p.functions[sig.index].name,
                texts.join(", ")
            ),
            ty: sig.returns.clone(),
            shape,
            uses: args.iter().flat_map(|a| a.uses.clone()).collect(),
            calls: vec![sig.index],
        })
    }
}
