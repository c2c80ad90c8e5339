//! The typed program: what semantic analysis produces and every later stage consumes.
//!
//! Names are resolved (each local declaration is its own [`LocalId`], so the same name in two
//! branches is two locals), calls point at a [`Callee`], and every `?` is replaced by the
//! inferred type. Printed by `horsec compile --emit typed` (see `sema::printer`).

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use crate::syntax::ast::{FunctionKind, Literal, Span};

/// Index into [`TypedProgram::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionId(pub usize);

/// Index into [`TypedProgram::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub usize);

/// Index into a function's [`Function::locals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub usize);

#[derive(Clone, Debug, PartialEq)]
pub struct TypedProgram {
    /// Every function of every module, in source order.
    pub functions: Vec<Function>,
    pub globals: Vec<Global>,
    /// The entry point: `main` (of the first module that defines one).
    pub entry: FunctionId,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub module: String,
    pub name: String,
    pub ty: Type,
    pub value: Literal,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub module: String,
    pub name: String,
    pub kind: FunctionKind,
    /// Locals that receive the arguments, in order.
    pub params: Vec<LocalId>,
    pub returns: Vec<Type>,
    pub locals: Vec<Local>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

impl Function {
    /// `module.name`
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.module, self.name)
    }
}

/// A parameter or local variable declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    pub name: String,
    /// The declared type with every `?` inferred.
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `var a, b:T;` — declares without assigning.
    Declare(Vec<LocalId>),
    /// `targets = expr;`. `declares[i]` is true where target i was written `x:T` (a new local).
    Assign {
        targets: Vec<Target>,
        declares: Vec<bool>,
        expr: Expr,
    },
    /// `expr;`
    Expr(Expr),
    Return(Vec<Operand>),
    If {
        cond: Operand,
        then_body: Vec<Stmt>,
        else_body: Option<Vec<Stmt>>,
    },
    While {
        cond: Operand,
        body: Vec<Stmt>,
    },
    Repeat {
        count: Operand,
        body: Vec<Stmt>,
    },
    Break,
    Continue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Local(LocalId),
    Discard,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    /// The types of the values it produces (several for a call of a multi-return function).
    pub types: Vec<Type>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Call { callee: Callee, args: Vec<Arg> },
    CheckCast { expr: Box<Expr>, ty: Type },
    Operand(Operand),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    Builtin(Builtin),
    Function(FunctionId),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Operand(Operand),
    /// A function literal `@f`.
    Function(Callee, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Local(LocalId, Span),
    Global(GlobalId, Span),
    Literal(Literal),
}
