//! The plan: what the compiler hands the runtime.
//!
//! A plan is a set of functions whose bodies are steps over numbered variable slots. Steps
//! are builtin calls, calls of other plan functions, and structured control flow. (Kernel
//! launches and library calls join this list with the GPU backend.) A plan is printable
//! (`horsec compile --emit plan`) and can be executed any number of times.

use crate::builtin::Builtin;
use crate::types::Type;
use crate::value::Value;

/// Index of a function in [`Plan::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionId(pub usize);

/// Index of a variable slot in a [`PlanFunction`]'s frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot(pub usize);

#[derive(Clone, Debug)]
pub struct Plan {
    pub functions: Vec<PlanFunction>,
    /// The entry point (`main`).
    pub entry: FunctionId,
}

#[derive(Clone, Debug)]
pub struct PlanFunction {
    /// Qualified name, `module.name`.
    pub name: String,
    /// Slots that receive the arguments, in order.
    pub params: Vec<Slot>,
    pub returns: Vec<Type>,
    /// Name and static type of every slot, for printing and error messages.
    pub slots: Vec<SlotInfo>,
    pub body: Vec<Step>,
}

#[derive(Clone, Debug)]
pub struct SlotInfo {
    pub name: String,
    pub ty: Type,
}

/// A source position carried into the plan so runtime errors can point at the statement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Location {
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug)]
pub enum Step {
    /// `targets = expr;` (`None` targets discard a value); also expression statements.
    Assign {
        targets: Vec<Option<Slot>>,
        expr: Expr,
        at: Location,
    },
    Return {
        values: Vec<Operand>,
        at: Location,
    },
    If {
        cond: Operand,
        then_body: Vec<Step>,
        else_body: Vec<Step>,
        at: Location,
    },
    While {
        cond: Operand,
        body: Vec<Step>,
        at: Location,
    },
    Repeat {
        count: Operand,
        body: Vec<Step>,
        at: Location,
    },
    Break,
    Continue,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Call { callee: Callee, args: Vec<Arg> },
    /// `check_cast(e, T)`: evaluates `e` and fails at run time unless its value has type T.
    CheckCast { expr: Box<Expr>, ty: Type },
    Operand(Operand),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    Builtin(Builtin),
    Function(FunctionId),
}

#[derive(Clone, Debug)]
pub enum Arg {
    Operand(Operand),
    /// A function literal such as `@sum` in `@each(@sum, x)`.
    Function(Callee),
}

#[derive(Clone, Debug)]
pub enum Operand {
    Slot(Slot),
    Const(Value),
}
