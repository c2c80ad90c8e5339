//! The kernel outliner: decides which GPU statements of each function are fused into one
//! kernel, and builds the *outlined program* that tells the runtime what to do in order —
//! host statements, library calls and kernel launches, inside the host's control flow.
//!
//! The compatibility analysis follows rNdN's three greedy steps (see `partition`); the
//! kernels it forms are handed to code generation as [`Kernel`]s. Printers: [`print_outline`]
//! (HorseIR with `kernel` definitions, `--emit outline`), [`print_dot`] (the dependence graph
//! with kernels as clusters, `--emit dot`) and [`print_all_shapes`] (`--emit shapes`).

mod builder;
mod compatibility;
pub mod group_aggregate;
mod grouped;
pub mod kernel;
mod partition;
mod printer;

#[cfg(test)]
mod tests;

use std::fmt;

use crate::analysis::{AnalysisError, FunctionAnalysis, StmtId};
use crate::sema::typed::{FunctionId, TypedProgram};

pub use compatibility::{merge_geometry, Fusion};
pub use kernel::{Kernel, KernelId};
pub use partition::MAX_STORAGE_BINDINGS;
pub use printer::{print_all_shapes, print_dot, print_outline};

/// Every function of a program, outlined.
#[derive(Clone, Debug)]
pub struct OutlinedProgram {
    /// In the order of [`TypedProgram::functions`].
    pub functions: Vec<OutlinedFunction>,
}

impl OutlinedProgram {
    /// Every kernel of every function, functions in program order, kernels in launch order.
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> + '_ {
        self.functions.iter().flat_map(|f| f.kernels.iter())
    }

    /// The outlined form of one function.
    pub fn function(&self, id: FunctionId) -> Option<&OutlinedFunction> {
        self.functions.iter().find(|f| f.function == id)
    }
}

/// One function: its kernels and the host program that launches them.
#[derive(Clone, Debug)]
pub struct OutlinedFunction {
    pub function: FunctionId,
    /// Indexed by [`KernelId`], numbered in the order the body first launches them.
    pub kernels: Vec<Kernel>,
    /// What the host does, in order.
    pub body: Vec<OutlinedStmt>,
    /// The analyses the outliner used (shapes and geometry for code generation).
    pub analysis: FunctionAnalysis,
}

impl OutlinedFunction {
    pub fn kernel(&self, id: KernelId) -> Option<&Kernel> {
        self.kernels.get(id.0)
    }
}

/// One step of the host program.
#[derive(Clone, Debug, PartialEq)]
pub enum OutlinedStmt {
    /// A statement the host runs itself (tables, columns, lists, control, effects).
    Host(StmtId),
    /// A library kernel call (sort, group, join, …) on the statement's arguments.
    Library(StmtId),
    /// Launch a generated kernel.
    Launch(KernelId),
    /// A fused group aggregation: one `@group_aggregate` library call in place of a
    /// `@group` and the reductions over its lists (see [`group_aggregate`]).
    GroupAggregate(Box<group_aggregate::FusedGroup>),
    /// Launch a grouped kernel (a kernel that also does the group aggregation of its
    /// values, see [`kernel::GroupedAggregation`]); when it declines, `fallback` runs: the
    /// kernel's statements, the key's list and the aggregation, unfused.
    Grouped {
        kernel: KernelId,
        fallback: Vec<OutlinedStmt>,
    },
    /// An `if` that stays on the host; its condition is the statement's.
    If {
        stmt: StmtId,
        then_body: Vec<OutlinedStmt>,
        else_body: Option<Vec<OutlinedStmt>>,
    },
    /// A `while` that stays on the host; its condition is read before every iteration.
    While {
        stmt: StmtId,
        body: Vec<OutlinedStmt>,
    },
    /// A `repeat` that stays on the host.
    Repeat {
        stmt: StmtId,
        body: Vec<OutlinedStmt>,
    },
}

/// Why a program could not be outlined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutlineError {
    /// An analysis the outliner needs failed on a function.
    Analysis {
        function: String,
        error: AnalysisError,
    },
    /// The kernels of a body could not be ordered (a bug in the outliner).
    Internal { function: String, message: String },
}

impl fmt::Display for OutlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutlineError::Analysis { function, error } => {
                write!(f, "cannot analyse function {function}: {error}")
            }
            OutlineError::Internal { function, message } => write!(
                f,
                "internal outliner error in function {function} (a bug in horsec): {message}"
            ),
        }
    }
}

impl std::error::Error for OutlineError {}

/// Outlines every function of `program`.
pub fn outline_program(program: &TypedProgram) -> Result<OutlinedProgram, OutlineError> {
    outline_analyzed(program, crate::analysis::analyze_program(program))
}

/// Outlines function `id` of `program` again, given its analysis: the driver does this after
/// it placed statements the code generator cannot translate on the host
/// ([`DependenceGraph::run_on_host`](crate::analysis::dependence::DependenceGraph::run_on_host)).
pub fn outline_function(
    program: &TypedProgram,
    id: FunctionId,
    analysis: FunctionAnalysis,
) -> Result<OutlinedFunction, OutlineError> {
    builder::outline_function(program, id, Ok(analysis))
}

/// Outlines every function of `program` given their analyses, in function order (as
/// [`analyze_program`](crate::analysis::analyze_program) gives them): the driver analyses a
/// program once for both the shared mismatch check and the outliner.
pub fn outline_analyzed(
    program: &TypedProgram,
    analyses: Vec<Result<FunctionAnalysis, AnalysisError>>,
) -> Result<OutlinedProgram, OutlineError> {
    if analyses.len() != program.functions.len() {
        return Err(OutlineError::Internal {
            function: "(program)".to_string(),
            message: format!(
                "{} analyses for {} functions",
                analyses.len(),
                program.functions.len()
            ),
        });
    }
    let functions = analyses
        .into_iter()
        .enumerate()
        .map(|(index, analysis)| builder::outline_function(program, FunctionId(index), analysis))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(OutlinedProgram { functions })
}
