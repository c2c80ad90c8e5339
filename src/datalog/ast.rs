//! The Datalog syntax tree, every node with its source span.

use crate::syntax::ast::Span;

/// A whole `.dl` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub decls: Vec<Decl>,
    pub inputs: Vec<Directive>,
    pub outputs: Vec<Directive>,
    /// Facts (clauses without a body) and rules, in source order.
    pub clauses: Vec<Clause>,
}

/// `.decl name(attr: type, …)`
#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub name: String,
    pub span: Span,
    pub attrs: Vec<Attr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: String,
    pub ty: AttrType,
    pub span: Span,
}

/// The types of Soufflé's core language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrType {
    Number,
    Symbol,
}

impl AttrType {
    pub fn name(self) -> &'static str {
        match self {
            AttrType::Number => "number",
            AttrType::Symbol => "symbol",
        }
    }
}

/// `.input name` or `.output name`.
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub relation: String,
    pub span: Span,
}

/// `head.` (a fact) or `head :- body.` (a rule).
#[derive(Clone, Debug, PartialEq)]
pub struct Clause {
    pub head: Atom,
    pub body: Vec<Literal>,
    pub span: Span,
}

/// `rel(t1, …, tn)`
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub relation: String,
    pub args: Vec<Term>,
    pub span: Span,
    /// The span of the relation name.
    pub name_span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Positive(Atom),
    /// `!rel(…)`
    Negative(Atom),
    /// `v = count : { r(…) }`, `v = sum x : { r(…) }`, `min`, `max`.
    Aggregate(Aggregate),
    /// `left op right`
    Constraint {
        op: CmpOp,
        left: Term,
        right: Term,
        span: Span,
    },
}

/// `result = kind target : { atom }`: one value over the tuples of `atom` (Soufflé's
/// aggregates; the body is one atom whose variables appear nowhere else in the rule).
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub result: String,
    pub result_span: Span,
    pub kind: AggregateKind,
    /// The aggregated variable (none for `count`).
    pub target: Option<(String, Span)>,
    pub atom: Atom,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateKind {
    Count,
    Sum,
    Min,
    Max,
}

impl AggregateKind {
    pub fn from_name(name: &str) -> Option<AggregateKind> {
        match name {
            "count" => Some(AggregateKind::Count),
            "sum" => Some(AggregateKind::Sum),
            "min" => Some(AggregateKind::Min),
            "max" => Some(AggregateKind::Max),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AggregateKind::Count => "count",
            AggregateKind::Sum => "sum",
            AggregateKind::Min => "min",
            AggregateKind::Max => "max",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Var(String, Span),
    /// `_`
    Wildcard(Span),
    Number(i64, Span),
    /// A string constant, unescaped.
    Symbol(String, Span),
    Binary {
        op: ArithOp,
        left: Box<Term>,
        right: Box<Term>,
        span: Span,
    },
    /// `-t`
    Negate(Box<Term>, Span),
}

impl Term {
    pub fn span(&self) -> Span {
        match self {
            Term::Var(_, s)
            | Term::Wildcard(s)
            | Term::Number(_, s)
            | Term::Symbol(_, s)
            | Term::Negate(_, s) => *s,
            Term::Binary { span, .. } => *span,
        }
    }

    /// The variables of the term, in order of appearance (with repeats).
    pub fn variables<'t>(&'t self, out: &mut Vec<&'t str>) {
        match self {
            Term::Var(name, _) => out.push(name),
            Term::Binary { left, right, .. } => {
                left.variables(out);
                right.variables(out);
            }
            Term::Negate(t, _) => t.variables(out),
            Term::Wildcard(_) | Term::Number(..) | Term::Symbol(..) => {}
        }
    }
}
