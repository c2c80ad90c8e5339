//! `if`/`else`, `while` and `repeat` carrying a value.

use super::*;

impl Gen<'_> {
    /// A new value to carry through a branch or loop: its initial expression.
    pub(super) fn carried(&mut self) -> Option<Expr> {
        let pool = self.pool.clone();
        let e = self.elementwise(&pool, None, None, false)?;
        (e.ty.is_real()).then_some(e)
    }

    /// `x = ...` keeping `x`'s type and shape: an element-wise call on `x`, sometimes
    /// through a new user function.
    pub(super) fn update(
        &mut self,
        x: VarId,
        lines: &mut Vec<String>,
        uses: &mut Vec<VarId>,
        calls: &mut Vec<usize>,
    ) -> bool {
        let (ty, shape) = (self.p.vars[x].ty.clone(), self.p.vars[x].shape);
        let mut scope = self.pool.clone();
        scope.push(x);
        let Some(e) = self.elementwise(&scope, Some((&ty, shape)), Some(x), false) else {
            return false;
        };
        let e = if self.rng.chance(0.35) {
            // The same computation through a user function.
            let mut args = vec![self.var_operand(x)];
            if let Some(&other) = e.uses.iter().find(|&&u| u != x) {
                args.push(self.var_operand(other));
            } else {
                let t = self.related_type(&ty);
                args.push(self.scalar_literal(&t));
            }
            match self.new_function(args, Some(&ty)) {
                Some(call) if call.shape == shape => call,
                _ => e,
            }
        } else {
            e
        };
        lines.push(format!("  {} = {};", self.name(x), e.text));
        uses.extend(e.uses.iter().copied().filter(|&u| u != x));
        calls.extend(e.calls);
        true
    }

    pub(super) fn if_(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let wrong = self.deliberate();
        let cond = if wrong {
            match self.rows_var(|v| v.ty == Type::Bool) {
                Some(v) => self.var_operand(v),
                None => return,
            }
        } else {
            let pool = self.pool.clone();
            match self.pick_var(&pool, |v| v.shape == Shape::Scalar && v.ty == Type::Bool) {
                Some(v) if self.rng.chance(0.7) => self.var_operand(v),
                _ => self.scalar_literal(&Type::Bool),
            }
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        self.p.vars[x].reordered = init.uses.iter().any(|&u| self.p.vars[u].reordered);
        // When a branch makes `x` depend on a summation order, the other branch must not
        // decide on `x` either (`tests/fuzz/bound.rs` reads the program without its control
        // flow): the branches are made again with `x` reordered from the start.
        let (lines, uses, calls) = loop {
            let mut lines = vec![format!("{}:{} = {};", self.name(x), init.ty, init.text)];
            let mut uses = init.uses.clone();
            uses.extend(cond.uses.iter().copied());
            let mut calls = init.calls.clone();
            lines.push(format!("if ({}) {{", cond.text));
            if !self.update(x, &mut lines, &mut uses, &mut calls) {
                return;
            }
            if self.rng.chance(0.6) {
                lines.push("} else {".to_string());
                if !self.update(x, &mut lines, &mut uses, &mut calls) {
                    return;
                }
            }
            lines.push("}".to_string());
            let reordered = uses.iter().any(|&u| self.p.vars[u].reordered);
            if reordered && !self.p.vars[x].reordered {
                self.p.vars[x].reordered = true;
                continue;
            }
            // Branches made again may use no reordered value after all: `x` is reordered
            // exactly when what it is computed from is (the bound siblings' analysis reads
            // the program so, and finds no sibling for a value marked beyond that).
            self.p.vars[x].reordered = reordered;
            break (lines, uses, calls);
        };
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }

    pub(super) fn while_(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        self.p.vars[x].reordered = init.uses.iter().any(|&u| self.p.vars[u].reordered);
        let (i, c) = (format!("{}_i", self.name(x)), format!("{}_c", self.name(x)));
        let k = self.rng.range(0, 3);
        let mut lines = vec![
            format!("{}:{} = {};", self.name(x), init.ty, init.text),
            format!("{i}:i64 = 0:i64;"),
            format!("{c}:bool = @lt({i}, {k}:i64);"),
            format!("while ({c}) {{"),
        ];
        let mut uses = init.uses.clone();
        let mut calls = init.calls.clone();
        if !self.update(x, &mut lines, &mut uses, &mut calls) {
            return;
        }
        lines.push(format!("  {i} = @plus({i}, 1:i64);"));
        lines.push(format!("  {c} = @lt({i}, {k}:i64);"));
        lines.push("}".to_string());
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }

    pub(super) fn repeat(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        self.p.vars[x].reordered = init.uses.iter().any(|&u| self.p.vars[u].reordered);
        let k = if self.deliberate() {
            -1
        } else {
            self.rng.range(0, 3)
        };
        let mut lines = vec![
            format!("{}:{} = {};", self.name(x), init.ty, init.text),
            format!("repeat ({k}:i64) {{"),
        ];
        let mut uses = init.uses.clone();
        let mut calls = init.calls.clone();
        if !self.update(x, &mut lines, &mut uses, &mut calls) {
            return;
        }
        lines.push("}".to_string());
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }
}
