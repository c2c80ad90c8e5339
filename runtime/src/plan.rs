//! The plan: what the compiler hands the runtime.
//!
//! A plan is a set of functions whose bodies are steps over numbered variable slots. Steps
//! are builtin calls, calls of other plan functions, and structured control flow. (Kernel
//! launches and library calls join this list with the GPU backend.) A plan is printable
//! (`horsec compile --emit plan`) and can be executed any number of times.

use std::sync::Arc;

pub mod liveness;

use crate::builtin::Builtin;
use crate::kernel::KernelLaunch;
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
    /// The backend it was compiled for.
    pub target: Target,
    /// Where each function's slots are used for the last time, found on its first call
    /// (see `liveness::LastUsesCache`).
    pub last_uses: liveness::LastUsesCache,
}

/// Which backend a plan is for: a CPU plan calls builtins only; a GPU plan launches kernels,
/// calls library builtins that run on the GPU, and keeps container builtins on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cpu,
    Gpu,
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
    /// A generated GPU kernel: reads the values in `inputs`' slots, writes its outputs' slots
    /// (see [`KernelLaunch::outputs`]).
    Launch {
        kernel: Arc<KernelLaunch>,
        inputs: Vec<Slot>,
        at: Location,
    },
}

#[derive(Clone, Debug)]
pub enum Expr {
    Call {
        callee: Callee,
        args: Vec<Arg>,
    },
    /// `check_cast(e, T)`: evaluates `e` and fails at run time unless its value has type T.
    CheckCast {
        expr: Box<Expr>,
        ty: Type,
    },
    /// The value of `e` converted to the real type `ty`: an assignment to a variable declared
    /// with another numeric type than its value's (see
    /// [`crate::typing::compat::converts_at_assignment`]).
    Convert {
        expr: Box<Expr>,
        ty: Type,
    },
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

/// Where a builtin call of a plan runs, as the printed plan shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallPlacement {
    /// Tables, columns and lists: kept on the host by either backend.
    Host,
    /// On the CPU, in a CPU plan.
    Cpu,
    /// A GPU library (or graph) kernel.
    GpuLibrary,
    /// On the CPU in a GPU plan, because no GPU kernel covers it (listed in `--time`).
    CpuFallback,
}

impl CallPlacement {
    fn label(self) -> &'static str {
        match self {
            CallPlacement::Host => "host",
            CallPlacement::Cpu => "cpu",
            CallPlacement::GpuLibrary => "gpu library",
            CallPlacement::CpuFallback => "cpu (no GPU kernel)",
        }
    }
}

/// The backend's answer to where a builtin call runs. The plan does not know which builtins
/// a backend covers; the printer asks this. `function_arg` is a leading function literal
/// (`@unique` in `@each(@unique, l)`).
pub trait CallSites {
    fn placement(&self, builtin: Builtin, function_arg: Option<Builtin>) -> CallPlacement;
}

/// A [`Plan`] printed with the call placements of a backend ([`Plan::display`]).
pub struct PlanDisplay<'a> {
    plan: &'a Plan,
    sites: &'a dyn CallSites,
}

impl Plan {
    /// The plan as text, each builtin call marked with where `sites` runs it.
    pub fn display<'a>(&'a self, sites: &'a dyn CallSites) -> PlanDisplay<'a> {
        PlanDisplay { plan: self, sites }
    }
}

/// Prints the plan as text: one function after another, one step per line, slots by name.
impl std::fmt::Display for PlanDisplay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plan = self.plan;
        for (i, function) in plan.functions.iter().enumerate() {
            let params: Vec<String> = function
                .params
                .iter()
                .map(|s| slot_decl(function, *s))
                .collect();
            let returns: Vec<String> = function.returns.iter().map(Type::to_string).collect();
            let entry = if FunctionId(i) == plan.entry {
                " (entry)"
            } else {
                ""
            };
            writeln!(
                f,
                "function #{i} {}({}) -> ({}){entry}",
                function.name,
                params.join(", "),
                returns.join(", ")
            )?;
            let printer = StepPrinter {
                plan,
                sites: self.sites,
                function,
            };
            printer.steps(f, &function.body, 1)?;
        }
        Ok(())
    }
}

fn slot_decl(function: &PlanFunction, slot: Slot) -> String {
    match function.slots.get(slot.0) {
        Some(info) => format!("{}:{}", info.name, info.ty),
        None => format!("${}", slot.0),
    }
}

struct StepPrinter<'a> {
    plan: &'a Plan,
    sites: &'a dyn CallSites,
    function: &'a PlanFunction,
}

impl StepPrinter<'_> {
    fn steps(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        steps: &[Step],
        depth: usize,
    ) -> std::fmt::Result {
        let pad = "  ".repeat(depth);
        for step in steps {
            match step {
                Step::Assign { targets, expr, at } => {
                    let lhs: Vec<String> = targets
                        .iter()
                        .map(|t| t.map_or_else(|| "_".to_string(), |s| slot_decl(self.function, s)))
                        .collect();
                    let lhs = if lhs.is_empty() {
                        String::new()
                    } else {
                        format!("{} = ", lhs.join(", "))
                    };
                    writeln!(
                        f,
                        "{pad}{lhs}{}    [{}:{}]",
                        self.expr(expr),
                        at.line,
                        at.column
                    )?;
                }
                Step::Return { values, .. } => {
                    let values: Vec<String> = values.iter().map(|v| self.operand(v)).collect();
                    writeln!(f, "{pad}return {}", values.join(", "))?;
                }
                Step::If {
                    cond,
                    then_body,
                    else_body,
                    ..
                } => {
                    writeln!(f, "{pad}if {}", self.operand(cond))?;
                    self.steps(f, then_body, depth + 1)?;
                    if !else_body.is_empty() {
                        writeln!(f, "{pad}else")?;
                        self.steps(f, else_body, depth + 1)?;
                    }
                }
                Step::While { cond, body, .. } => {
                    writeln!(f, "{pad}while {}", self.operand(cond))?;
                    self.steps(f, body, depth + 1)?;
                }
                Step::Repeat { count, body, .. } => {
                    writeln!(f, "{pad}repeat {}", self.operand(count))?;
                    self.steps(f, body, depth + 1)?;
                }
                Step::Break => writeln!(f, "{pad}break")?,
                Step::Continue => writeln!(f, "{pad}continue")?,
                Step::Launch { kernel, inputs, at } => {
                    let outputs: Vec<String> = kernel
                        .outputs
                        .iter()
                        .map(|o| slot_decl(self.function, o.slot))
                        .collect();
                    let inputs: Vec<String> = inputs
                        .iter()
                        .map(|s| self.operand(&Operand::Slot(*s)))
                        .collect();
                    writeln!(
                        f,
                        "{pad}{} = launch {}({})    <gpu kernel, {} pass(es)>    [{}:{}]",
                        outputs.join(", "),
                        kernel.name,
                        inputs.join(", "),
                        kernel.passes.len(),
                        at.line,
                        at.column
                    )?;
                }
            }
        }
        Ok(())
    }

    fn expr(&self, expr: &Expr) -> String {
        match expr {
            Expr::Operand(op) => self.operand(op),
            Expr::CheckCast { expr, ty } => format!("check_cast({}, {ty})", self.expr(expr)),
            Expr::Convert { expr, ty } => format!("{} as {ty}", self.expr(expr)),
            Expr::Call { callee, args } => {
                let texts: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        Arg::Operand(op) => self.operand(op),
                        Arg::Function(c) => self.callee(*c),
                    })
                    .collect();
                let placement = match callee {
                    Callee::Function(_) => "call",
                    Callee::Builtin(b) => {
                        let function_arg = match args.first() {
                            Some(Arg::Function(Callee::Builtin(f))) => Some(*f),
                            _ => None,
                        };
                        self.sites.placement(*b, function_arg).label()
                    }
                };
                format!(
                    "{}({})    <{placement}>",
                    self.callee(*callee),
                    texts.join(", ")
                )
            }
        }
    }

    fn callee(&self, callee: Callee) -> String {
        match callee {
            Callee::Builtin(b) => format!("@{b}"),
            Callee::Function(id) => match self.plan.functions.get(id.0) {
                Some(function) => format!("@{}", function.name),
                None => format!("@#{}", id.0),
            },
        }
    }

    fn operand(&self, op: &Operand) -> String {
        match op {
            Operand::Slot(s) => match self.function.slots.get(s.0) {
                Some(info) => info.name.clone(),
                None => format!("${}", s.0),
            },
            Operand::Const(v) => format!("<{}; {} element(s)>", v.ty(), v.len()),
        }
    }
}
