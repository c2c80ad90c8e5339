//! Test helpers: builds small typed functions and programs by hand, so the analyses can be
//! specified on exactly the programs a test needs.

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use crate::sema::typed::{
    Arg, Callee, Expr, ExprKind, Function, FunctionId, Local, LocalId, Operand, Stmt, StmtKind,
    Target, TypedProgram,
};
use crate::syntax::ast::{FunctionKind, Literal, LiteralValue, Span, TypeExpr};

/// Builds one function statement by statement; nested bodies are built by closures.
pub struct FunctionBuilder {
    name: String,
    params: Vec<LocalId>,
    locals: Vec<Local>,
    /// The body being built, innermost last.
    bodies: Vec<Vec<Stmt>>,
}

/// Something that can be the right-hand side of an assignment.
pub trait IntoExpr {
    fn into_expr(self) -> Expr;
}

impl IntoExpr for Expr {
    fn into_expr(self) -> Expr {
        self
    }
}

impl IntoExpr for Operand {
    fn into_expr(self) -> Expr {
        Expr {
            kind: ExprKind::Operand(self),
            types: Vec::new(),
            span: Span::default(),
        }
    }
}

impl FunctionBuilder {
    pub fn new(name: &str) -> FunctionBuilder {
        FunctionBuilder {
            name: name.to_string(),
            params: Vec::new(),
            locals: Vec::new(),
            bodies: vec![Vec::new()],
        }
    }

    pub fn local(&mut self, name: &str, ty: Type) -> LocalId {
        self.locals.push(Local {
            name: name.to_string(),
            ty,
            span: Span::default(),
        });
        LocalId(self.locals.len() - 1)
    }

    pub fn param(&mut self, name: &str, ty: Type) -> LocalId {
        let id = self.local(name, ty);
        self.params.push(id);
        id
    }

    fn push(&mut self, kind: StmtKind) {
        if let Some(body) = self.bodies.last_mut() {
            body.push(Stmt {
                kind,
                span: Span::default(),
            });
        }
    }

    fn nested(&mut self, build: impl FnOnce(&mut FunctionBuilder)) -> Vec<Stmt> {
        self.bodies.push(Vec::new());
        build(self);
        self.bodies.pop().unwrap_or_default()
    }

    /// `target = expr;`
    pub fn assign(&mut self, target: LocalId, expr: impl IntoExpr) {
        self.assign_many(&[target], expr);
    }

    /// `a, b = expr;`
    pub fn assign_many(&mut self, targets: &[LocalId], expr: impl IntoExpr) {
        let mut expr = expr.into_expr();
        expr.types = targets
            .iter()
            .map(|t| self.locals[t.0].ty.clone())
            .collect();
        self.push(StmtKind::Assign {
            targets: targets.iter().map(|&t| Target::Local(t)).collect(),
            declares: vec![true; targets.len()],
            expr,
        });
    }

    /// `expr;`
    pub fn expr(&mut self, expr: impl IntoExpr) {
        self.push(StmtKind::Expr(expr.into_expr()));
    }

    pub fn declare(&mut self, locals: &[LocalId]) {
        self.push(StmtKind::Declare(locals.to_vec()));
    }

    pub fn ret(&mut self, operands: Vec<Operand>) {
        self.push(StmtKind::Return(operands));
    }

    pub fn if_(&mut self, cond: Operand, then: impl FnOnce(&mut FunctionBuilder)) {
        let then_body = self.nested(then);
        self.push(StmtKind::If {
            cond,
            then_body,
            else_body: None,
        });
    }

    pub fn if_else(
        &mut self,
        cond: Operand,
        then: impl FnOnce(&mut FunctionBuilder),
        otherwise: impl FnOnce(&mut FunctionBuilder),
    ) {
        let then_body = self.nested(then);
        let else_body = self.nested(otherwise);
        self.push(StmtKind::If {
            cond,
            then_body,
            else_body: Some(else_body),
        });
    }

    pub fn while_(&mut self, cond: Operand, body: impl FnOnce(&mut FunctionBuilder)) {
        let body = self.nested(body);
        self.push(StmtKind::While { cond, body });
    }

    pub fn repeat(&mut self, count: Operand, body: impl FnOnce(&mut FunctionBuilder)) {
        let body = self.nested(body);
        self.push(StmtKind::Repeat { count, body });
    }

    pub fn brk(&mut self) {
        self.push(StmtKind::Break);
    }

    pub fn cont(&mut self) {
        self.push(StmtKind::Continue);
    }

    pub fn finish(mut self) -> Function {
        Function {
            module: "default".to_string(),
            name: self.name,
            kind: FunctionKind::Def,
            params: self.params,
            returns: Vec::new(),
            locals: self.locals,
            body: self.bodies.pop().unwrap_or_default(),
            span: Span::default(),
        }
    }
}

/// A program whose entry is its only function.
pub fn program(function: Function) -> TypedProgram {
    TypedProgram {
        functions: vec![function],
        globals: Vec::new(),
        entry: FunctionId(0),
    }
}

pub fn var(local: LocalId) -> Operand {
    Operand::Local(local, Span::default())
}

/// `local` as the whole right-hand side (a copy).
pub fn copy(local: LocalId) -> Operand {
    var(local)
}

fn literal(values: Vec<LiteralValue>, ty: Type) -> Operand {
    Operand::Literal(Literal {
        parenthesized: values.len() != 1,
        values,
        ty: TypeExpr {
            ty,
            span: Span::default(),
        },
        span: Span::default(),
    })
}

pub fn lit_i64(values: &[i64]) -> Operand {
    literal(
        values.iter().map(|&v| LiteralValue::Int(v)).collect(),
        Type::I64,
    )
}

pub fn lit_f64(values: &[f64]) -> Operand {
    literal(
        values.iter().map(|&v| LiteralValue::Float(v)).collect(),
        Type::F64,
    )
}

pub fn lit_bool(values: &[bool]) -> Operand {
    literal(
        values.iter().map(|&v| LiteralValue::Bool(v)).collect(),
        Type::Bool,
    )
}

pub fn lit_sym(values: &[&str]) -> Operand {
    literal(
        values
            .iter()
            .map(|v| LiteralValue::Text(v.to_string()))
            .collect(),
        Type::Sym,
    )
}

/// `@builtin(operands…)`
pub fn call(builtin: Builtin, args: Vec<Operand>) -> Expr {
    call_args(builtin, args.into_iter().map(Arg::Operand).collect())
}

/// `@builtin(args…)` with function arguments: `@each(@sum, l)`.
pub fn call_args(builtin: Builtin, args: Vec<Arg>) -> Expr {
    Expr {
        kind: ExprKind::Call {
            callee: Callee::Builtin(builtin),
            args,
        },
        types: Vec::new(),
        span: Span::default(),
    }
}

/// A function literal argument `@builtin`.
pub fn fun(builtin: Builtin) -> Arg {
    Arg::Function(Callee::Builtin(builtin), Span::default())
}

pub fn arg(operand: Operand) -> Arg {
    Arg::Operand(operand)
}

/// `check_cast(expr, ty)`
pub fn cast(expr: Expr, ty: Type) -> Expr {
    Expr {
        types: vec![ty.clone()],
        kind: ExprKind::CheckCast {
            expr: Box::new(expr),
            ty,
        },
        span: Span::default(),
    }
}
