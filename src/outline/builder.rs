//! Builds the outlined form of one function: partitions each body (recursively through the
//! compound statements that stay on the host), turns each kernel group into a [`Kernel`] with
//! its inputs and outputs, and lays out the host program in launch order.

use crate::analysis::statements::nested_bodies;
use crate::analysis::{AnalysisError, FunctionAnalysis, StmtId};
use crate::sema::typed::{FunctionId, Stmt, StmtKind, TypedProgram};

use super::group_aggregate;
use super::grouped::{self, GroupedKernels};
use super::kernel::{Kernel, KernelId};
use super::partition::{Context, Members, Partition, Placed, Role};
use super::{OutlineError, OutlinedFunction, OutlinedStmt};

/// Outlines `program.functions[id]`, given its analysis (or why it has none).
pub(crate) fn outline_function(
    program: &TypedProgram,
    id: FunctionId,
    analysis: Result<FunctionAnalysis, AnalysisError>,
) -> Result<OutlinedFunction, OutlineError> {
    let function = program
        .functions
        .get(id.0)
        .ok_or_else(|| OutlineError::Internal {
            function: format!("#{}", id.0),
            message: "no such function".to_string(),
        })?;
    let analysis = analysis.map_err(|error| OutlineError::Analysis {
        function: function.qualified_name(),
        error,
    })?;
    // Kernel names must be unique in the program: qualify them by module when two modules
    // define functions of the same name.
    let shared_name = program
        .functions
        .iter()
        .filter(|f| f.name == function.name)
        .count()
        > 1;
    let prefix = if shared_name {
        format!("{}_{}", function.module, function.name)
    } else {
        function.name.clone()
    };
    let (kernels, body) = {
        let cx = Context::new(program, function, &analysis);
        let mut builder = Builder {
            cx: &cx,
            function: id,
            prefix,
            kernels: Vec::new(),
            flags: 0,
        };
        let top = builder.body_ids(0, &function.body);
        let body = builder.outline_body(&top)?;
        (builder.kernels, body)
    };
    Ok(OutlinedFunction {
        function: id,
        kernels,
        body,
        analysis,
    })
}

struct Builder<'a, 'p> {
    cx: &'a Context<'p>,
    function: FunctionId,
    prefix: String,
    kernels: Vec<Kernel>,
    /// Decline flags of grouped kernels given out so far.
    flags: usize,
}

impl Builder<'_, '_> {
    /// The ids of the statements of `body`, whose first statement has id `first`.
    fn body_ids(&self, first: usize, body: &[Stmt]) -> Vec<StmtId> {
        let mut next = first;
        body.iter()
            .map(|_| {
                let id = StmtId(next);
                next = self.cx.subtree_end(id);
                id
            })
            .collect()
    }

    /// The statement ids of each body nested directly in the compound statement `stmt`.
    fn nested_ids(&self, stmt: StmtId, s: &Stmt) -> Vec<Vec<StmtId>> {
        let mut first = stmt.0 + 1;
        nested_bodies(s)
            .into_iter()
            .map(|body| {
                let ids = self.body_ids(first, body);
                first = ids.last().map_or(first, |&last| self.cx.subtree_end(last));
                ids
            })
            .collect()
    }

    fn internal(&self, message: String) -> OutlineError {
        OutlineError::Internal {
            function: self.cx.function.qualified_name(),
            message,
        }
    }

    fn outline_body(&mut self, stmts: &[StmtId]) -> Result<Vec<OutlinedStmt>, OutlineError> {
        let fused = group_aggregate::find(self.cx, stmts);
        let mut partition = Partition::new(self.cx, stmts, &fused);
        partition.outline(self.cx);
        let placed = partition
            .placed()
            .ok_or_else(|| self.internal("the kernels of a body form a cycle".to_string()))?;
        let mut out = Vec::new();
        for item in placed {
            match item {
                Placed::Kernel(units, geometry) => {
                    let members = Members::new(self.cx, &units);
                    let (inputs, outputs) = self.cx.interface(&members);
                    // A kernel whose values nobody reads still runs: its statements check
                    // their arguments (lengths, counts, conditions), and the CPU reports a
                    // failed check whether or not the value is used.
                    let id = KernelId(self.kernels.len());
                    self.kernels.push(Kernel {
                        id,
                        name: format!("{}_k{}", self.prefix, id.0),
                        function: self.function,
                        statements: units,
                        geometry,
                        inputs,
                        outputs,
                        grouped: None,
                    });
                    out.push(OutlinedStmt::Launch(id));
                }
                Placed::Single(unit) => {
                    let unit = &partition.units[unit];
                    out.push(match unit.role {
                        Role::Fused(index) => {
                            let group = fused
                                .get(index)
                                .ok_or_else(|| self.internal(format!("no fused group #{index}")))?;
                            OutlinedStmt::GroupAggregate(Box::new(group.clone()))
                        }
                        _ => self.single(unit.stmt, &unit.role)?,
                    });
                }
            }
        }
        let into = GroupedKernels {
            kernels: &mut self.kernels,
            prefix: &self.prefix,
            flags: &mut self.flags,
        };
        Ok(grouped::fuse(self.cx, out, into))
    }

    fn single(&mut self, stmt: StmtId, role: &Role) -> Result<OutlinedStmt, OutlineError> {
        match role {
            Role::Library => Ok(OutlinedStmt::Library(stmt)),
            Role::Fused(_) => Err(self.internal(format!("fused group at {stmt} placed alone"))),
            Role::Host | Role::Gpu(_) => Ok(OutlinedStmt::Host(stmt)),
            Role::HostCompound => {
                let s = self
                    .cx
                    .tree
                    .stmt(stmt)
                    .ok_or_else(|| self.internal(format!("no statement {stmt}")))?;
                let mut bodies = Vec::new();
                for ids in self.nested_ids(stmt, s) {
                    bodies.push(self.outline_body(&ids)?);
                }
                let mut bodies = bodies.into_iter();
                let mut next_body = || bodies.next().unwrap_or_default();
                Ok(match &s.kind {
                    StmtKind::If { else_body, .. } => OutlinedStmt::If {
                        stmt,
                        then_body: next_body(),
                        else_body: else_body.as_ref().map(|_| next_body()),
                    },
                    StmtKind::While { .. } => OutlinedStmt::While {
                        stmt,
                        body: next_body(),
                    },
                    StmtKind::Repeat { .. } => OutlinedStmt::Repeat {
                        stmt,
                        body: next_body(),
                    },
                    _ => OutlinedStmt::Host(stmt),
                })
            }
        }
    }
}
