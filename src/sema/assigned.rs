//! Definite assignment, in its permissive HorseIR form: a use is an error only when *no*
//! assignment can reach it ("may be assigned" forward data-flow). A variable assigned inside a
//! loop body and read after the loop is accepted (HorsePower pass/t28–t31), one declared with
//! `var` and read before any assignment is not (fail/t5).
//!
//! The state only grows along a path (a union over the assignments seen), so `break`,
//! `continue` and `return` can be treated as falling through: the states they would carry are
//! contained in the state at the end of their block. Loops iterate to a fixed point before any
//! use inside them is judged, because an assignment late in the body reaches the next
//! iteration's uses.

use rustc_hash::FxHashSet as HashSet;

use crate::diag::Diagnostic;
use crate::sema::typed::{Arg, Expr, ExprKind, Function, LocalId, Operand, Stmt, StmtKind, Target};

/// Reports each local of `function` read where no assignment reaches it (once per local).
/// Parameters are assigned on entry; locals in `skip` (already reported as undeclared) are
/// never reported.
pub fn check(function: &Function, skip: &HashSet<LocalId>) -> Vec<Diagnostic> {
    let mut state = vec![false; function.locals.len()];
    for param in &function.params {
        if let Some(slot) = state.get_mut(param.0) {
            *slot = true;
        }
    }
    let mut flow = Flow {
        function,
        skip,
        report: true,
        reported: HashSet::default(),
        diags: Vec::new(),
    };
    flow.block(&function.body, &mut state);
    flow.diags
}

struct Flow<'a> {
    function: &'a Function,
    skip: &'a HashSet<LocalId>,
    /// False while a loop's fixed point is being computed: uses are judged only afterwards.
    report: bool,
    reported: HashSet<LocalId>,
    diags: Vec<Diagnostic>,
}

type State = Vec<bool>;

fn union(into: &mut State, other: &State) {
    for (a, b) in into.iter_mut().zip(other) {
        *a |= *b;
    }
}

impl Flow<'_> {
    fn block(&mut self, stmts: &[Stmt], state: &mut State) {
        for stmt in stmts {
            self.stmt(stmt, state);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, state: &mut State) {
        match &stmt.kind {
            StmtKind::Declare(_) | StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Assign { targets, expr, .. } => {
                self.expr(expr, state);
                for target in targets {
                    if let Target::Local(id) = target {
                        if let Some(slot) = state.get_mut(id.0) {
                            *slot = true;
                        }
                    }
                }
            }
            StmtKind::Expr(expr) => self.expr(expr, state),
            StmtKind::Return(operands) => {
                for operand in operands {
                    self.operand(operand, state);
                }
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.operand(cond, state);
                let mut then_state = state.clone();
                self.block(then_body, &mut then_state);
                if let Some(else_body) = else_body {
                    self.block(else_body, state);
                }
                union(state, &then_state);
            }
            StmtKind::While { cond: head, body } | StmtKind::Repeat { count: head, body } => {
                let report = self.report;
                self.report = false;
                loop {
                    let mut end_of_body = state.clone();
                    self.block(body, &mut end_of_body);
                    let before = state.clone();
                    union(state, &end_of_body);
                    if *state == before {
                        break;
                    }
                }
                self.report = report;
                // `state` is now the loop head's fixed point, which is also the exit state.
                self.operand(head, state);
                let mut body_state = state.clone();
                self.block(body, &mut body_state);
            }
        }
    }

    fn expr(&mut self, expr: &Expr, state: &State) {
        match &expr.kind {
            ExprKind::Call { args, .. } => {
                for arg in args {
                    if let Arg::Operand(operand) = arg {
                        self.operand(operand, state);
                    }
                }
            }
            ExprKind::CheckCast { expr, .. } => self.expr(expr, state),
            ExprKind::Operand(operand) => self.operand(operand, state),
        }
    }

    fn operand(&mut self, operand: &Operand, state: &State) {
        let Operand::Local(id, span) = operand else {
            return;
        };
        let assigned = state.get(id.0).copied().unwrap_or(true);
        if assigned || !self.report || self.skip.contains(id) || !self.reported.insert(*id) {
            return;
        }
        let name = self
            .function
            .locals
            .get(id.0)
            .map_or("?", |local| local.name.as_str());
        self.diags.push(Diagnostic::error(
            *span,
            format!("`{name}` is used before any value is assigned to it"),
        ));
    }
}
