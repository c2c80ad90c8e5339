//! The abstract syntax tree of a HorseIR program, as written, with source spans.
//!
//! The parser builds it; semantic analysis reads it; [`super::printer`] prints it back as
//! HorseIR. Nothing here is resolved or typed beyond what the source says.

use horsec_runtime::types::Type;

/// A byte range `start..end` in the source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A name with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A possibly qualified name: `plus` or `Builtin.plus`.
#[derive(Clone, Debug, PartialEq)]
pub struct QualifiedName {
    pub module: Option<Ident>,
    pub name: Ident,
    pub span: Span,
}

/// A type as written, with its location (`list<?>`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub ty: Type,
    pub span: Span,
}

/// A whole source file.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub modules: Vec<Module>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub name: Ident,
    pub items: Vec<Item>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Import(Import),
    Global(Global),
    Function(Function),
}

/// `import Builtin.*;`, `import m.f;`, `import m.{a,b};`
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    pub module: Ident,
    pub names: ImportNames,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ImportNames {
    /// `.*`
    All,
    /// `.f` or `.{a,b,c}`
    Some(Vec<Ident>),
}

/// `global name:type = operand;`
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub name: Ident,
    pub ty: TypeExpr,
    pub value: Operand,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// `def`: an ordinary function.
    Def,
    /// `kernel`: a function the outliner made (or a user wrote) to run on the GPU.
    Kernel,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub kind: FunctionKind,
    pub name: Ident,
    pub params: Vec<Param>,
    /// Declared return types; empty when the function declares none.
    pub returns: Vec<TypeExpr>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: TypeExpr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `var x, y:T;`
    Var {
        names: Vec<Ident>,
        ty: TypeExpr,
    },
    /// `targets = expr;`
    Assign {
        targets: Vec<Target>,
        expr: Expr,
    },
    /// `expr;`
    Expr(Expr),
    /// `return;` or `return a, b;`
    Return(Vec<Operand>),
    If {
        cond: Operand,
        then_block: Block,
        else_block: Option<Block>,
    },
    While {
        cond: Operand,
        body: Block,
    },
    Repeat {
        count: Operand,
        body: Block,
    },
    Break,
    Continue,
}

/// One left-hand side of an assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// `x:T` (declares `x`) or `x` (assigns a declared `x`).
    Name { name: Ident, ty: Option<TypeExpr> },
    /// `_`: the value is discarded. `ty` is kept only to report `_:T` as an error.
    Discard { ty: Option<TypeExpr>, span: Span },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Call(Call),
    /// `check_cast(e, T)`; `e` is a call or an operand.
    CheckCast(Box<Expr>, TypeExpr),
    Operand(Operand),
}

/// `@f(args)`
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub callee: QualifiedName,
    pub args: Vec<Arg>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Operand(Operand),
    /// A function literal `@f` passed to a higher-order builtin.
    Function(QualifiedName),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Name(Ident),
    Literal(Literal),
}

impl Operand {
    pub fn span(&self) -> Span {
        match self {
            Operand::Name(i) => i.span,
            Operand::Literal(l) => l.span,
        }
    }
}

/// A typed literal: `1:i32`, `(1,2):i64`, `` `abc:sym ``, `():f64` (empty vector).
///
/// The parser checks each element against the suffix type (`(0,1):str` is an error, so is
/// month 00) and stores it already converted.
#[derive(Clone, Debug, PartialEq)]
pub struct Literal {
    pub values: Vec<LiteralValue>,
    pub ty: TypeExpr,
    /// Whether it was written in parentheses (a one-element vector `(5):i32` prints so).
    pub parenthesized: bool,
    pub span: Span,
}

/// One element of a literal, in the encoding of its type (see `horsec_runtime::value`).
#[derive(Clone, Debug, PartialEq)]
pub enum LiteralValue {
    Bool(bool),
    /// `char`: one byte.
    Char(u8),
    /// i8–i64, range-checked against the suffix.
    Int(i64),
    /// f32/f64.
    Float(f64),
    Complex {
        re: f64,
        im: f64,
    },
    /// `str` and `sym` (unescaped text).
    Text(String),
    /// `date`: days since 1970-01-01.
    Date(i32),
    /// `month`: `year*12 + month-1`.
    Month(i32),
    /// `minute`: minutes since midnight.
    Minute(i32),
    /// `second`: seconds since midnight.
    Second(i32),
    /// `time`: milliseconds since midnight.
    Time(i32),
    /// `dt`: milliseconds since 1970-01-01T00:00:00.000.
    Dt(i64),
}
