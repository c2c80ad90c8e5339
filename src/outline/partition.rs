//! Compatibility analysis of one body (a function body, or the body of a compound statement
//! that stays on the host): groups its statements into kernels in rNdN's three greedy steps.
//!
//! The *units* of a body are its top-level statements; a compound statement whose whole
//! subtree can run in one kernel is a single GPU unit (see [`Context::compound_geometry`]).
//! Edges between units are the function's data dependences lifted to the units that contain
//! their endpoints; edges that point backward (loop-carried, inside a host loop) only order
//! one iteration's launches after the previous one's and are ignored, as in rNdN.
//!
//! 1. **Pipeline** (reverse program order): a GPU unit joins the kernel of its data successors
//!    when they all sit in one kernel, no edge to it is synchronized, and the geometries are
//!    equal (scalars fuse with anything).
//! 2. **Siblings**: two kernels of equal geometry that are both successors of one group (they
//!    read the same data) merge when no path joins them.
//! 3. **Parent into child**: a kernel merges into the successor it shares the most values
//!    with, allowing the successor to run masked over a compressed geometry.
//!
//! 4. Beyond rNdN: kernels of equal geometry that no path joins merge even when they read
//!    no common data (one launch instead of two).
//!
//! Every merge keeps the graph of groups acyclic: two groups never merge when a path between
//! them passes through a third group (the case of Figure 4.13 in the rNdN thesis), and a
//! merged kernel never runs a masked statement over a compacted input (see
//! [`Context::masked_reads_are_inside`]). Steps 2 and 3 repeat until nothing merges, then
//! step 4 runs, and the whole repeats until nothing merges.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use crate::analysis::defuse::{DefSite, Definition};
use crate::analysis::dependence::DependenceKind;
use crate::analysis::device::{statement_sync, Context as DeviceContext, Device};
use crate::analysis::statements::{definitions, uses, StatementTree};
use crate::analysis::{FunctionAnalysis, Geometry, StmtId};
use crate::sema::typed::{Function, LocalId, StmtKind, TypedProgram};

use super::compatibility::{merge_geometry, runs_masked, Fusion};
use super::group_aggregate::FusedGroup;

/// Storage buffers one kernel may bind. wgpu devices differ (lavapipe allows 32, NVIDIA far
/// more), and the program is compiled before a device is chosen, so kernels are sized for the
/// smallest limit of the devices we run on: a fused kernel of a wide query (TPC-H q10 gathers
/// eight columns, each with its index check) is split rather than refused by the device.
pub const MAX_STORAGE_BINDINGS: usize = 32;

/// What a function's outlining needs to look up about its statements.
pub(crate) struct Context<'p> {
    pub program: &'p TypedProgram,
    pub function: &'p Function,
    pub tree: StatementTree<'p>,
    pub analysis: &'p FunctionAnalysis,
}

impl<'p> Context<'p> {
    pub fn new(
        program: &'p TypedProgram,
        function: &'p Function,
        analysis: &'p FunctionAnalysis,
    ) -> Context<'p> {
        Context {
            program,
            function,
            tree: StatementTree::new(function),
            analysis,
        }
    }

    fn device_context(&self) -> DeviceContext<'p> {
        DeviceContext {
            program: self.program,
            function: self.function,
        }
    }

    /// One past the last statement of `stmt`'s subtree.
    pub fn subtree_end(&self, stmt: StmtId) -> usize {
        self.tree.get(stmt).map_or(stmt.0 + 1, |e| e.subtree_end)
    }

    /// The geometry of a simple statement that can be fused into a generated kernel.
    pub fn gpu_geometry(&self, stmt: StmtId) -> Option<Geometry> {
        if self.analysis.dependence.device(stmt) != Some(Device::Gpu) {
            return None;
        }
        match self.analysis.geometry.get(stmt)? {
            geometry @ (Geometry::Vector(_) | Geometry::List { .. }) => Some(geometry.clone()),
            Geometry::Library | Geometry::Cpu => None,
        }
    }

    /// The geometry of a compound statement whose whole subtree can run inside one kernel:
    /// every statement that does work is a GPU statement, all geometries are equal, no
    /// dependence inside needs a synchronization (loop-carried ones included), and every
    /// `break`/`continue` leaves a loop that is itself inside the subtree. `None` otherwise.
    pub fn compound_geometry(&self, compound: StmtId) -> Option<Geometry> {
        let end = self.subtree_end(compound);
        let mut geometry: Option<Geometry> = None;
        for id in compound.0 + 1..end {
            let stmt = self.tree.stmt(StmtId(id))?;
            match &stmt.kind {
                StmtKind::Declare(_)
                | StmtKind::If { .. }
                | StmtKind::While { .. }
                | StmtKind::Repeat { .. } => {}
                StmtKind::Break | StmtKind::Continue => {
                    if !self.in_loop_within(StmtId(id), compound) {
                        return None;
                    }
                }
                StmtKind::Return(_) => return None,
                StmtKind::Assign { .. } | StmtKind::Expr(_) => {
                    let own = self.gpu_geometry(StmtId(id))?;
                    geometry = Some(match geometry {
                        None => own,
                        Some(kernel) => merge_geometry(&kernel, &own, Fusion::Identical)?,
                    });
                }
            }
        }
        let inside = |s: StmtId| s.0 >= compound.0 && s.0 < end;
        let graph = &self.analysis.dependence;
        for edge in graph.graph.edge_references() {
            let (Some(from), Some(to)) = (graph.stmt(edge.source()), graph.stmt(edge.target()))
            else {
                continue;
            };
            if inside(from) && inside(to) && self.needs_barrier(from, edge.weight()) {
                return None;
            }
        }
        geometry
    }

    /// True when a `while`/`repeat` encloses `stmt` at or below `outer`.
    fn in_loop_within(&self, stmt: StmtId, outer: StmtId) -> bool {
        let mut current = self.tree.get(stmt).and_then(|e| e.parent);
        while let Some(parent) = current {
            if matches!(
                self.tree.stmt(parent).map(|s| &s.kind),
                Some(StmtKind::While { .. } | StmtKind::Repeat { .. })
            ) {
                return true;
            }
            if parent == outer {
                return false;
            }
            current = self.tree.get(parent).and_then(|e| e.parent);
        }
        false
    }

    /// Whether a dependence from `from` forbids both ends sharing a kernel: a synchronized
    /// true dependence, or an anti dependence whose reader gathers the value (another thread
    /// could overwrite an element before this one reads it).
    fn needs_barrier(
        &self,
        from: StmtId,
        edge: &crate::analysis::dependence::DependenceEdge,
    ) -> bool {
        match edge.kind {
            DependenceKind::True => edge.sync.is_synchronized(),
            DependenceKind::Anti => self.tree.stmt(from).is_some_and(|reader| {
                uses(reader)
                    .iter()
                    .filter(|u| u.local == edge.local)
                    .any(|u| statement_sync(self.device_context(), reader, u.argument).reads)
            }),
            DependenceKind::Output => false,
        }
    }

    /// True for statements the host must keep in place: returns, loop exits, and host calls
    /// that may have effects (`@print`, user functions, any call whose value is unused).
    fn is_barrier(&self, stmt: StmtId) -> bool {
        let Some(s) = self.tree.stmt(stmt) else {
            return true;
        };
        match &s.kind {
            StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue => true,
            StmtKind::If { .. } | StmtKind::While { .. } | StmtKind::Repeat { .. } => {
                (stmt.0 + 1..self.subtree_end(stmt)).any(|id| {
                    matches!(
                        self.tree.stmt(StmtId(id)).map(|s| &s.kind),
                        Some(StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue)
                    ) || self.is_effect(StmtId(id))
                })
            }
            _ => self.is_effect(stmt),
        }
    }

    fn is_effect(&self, stmt: StmtId) -> bool {
        let Some(s) = self.tree.stmt(stmt) else {
            return false;
        };
        let host = self.analysis.dependence.device(stmt) == Some(Device::Cpu);
        let calls_user_function = matches!(
            crate::analysis::statements::statement_call(s),
            Some((crate::sema::typed::Callee::Function(_), _))
        );
        host && (matches!(s.kind, StmtKind::Expr(_)) || calls_user_function)
    }

    /// True when the definitions reaching `local` at `stmt` all lie inside `members`.
    fn defined_inside(
        &self,
        stmt: StmtId,
        local: crate::sema::typed::LocalId,
        members: &Members,
    ) -> bool {
        match self.analysis.chains.defs_of(stmt, local) {
            Some(sites) if !sites.is_empty() => sites.iter().all(|site| match site {
                DefSite::Entry => false,
                DefSite::Stmt(def) => members.contains(*def),
            }),
            _ => false,
        }
    }

    /// A statement that runs masked inside a kernel computes on the uncompressed positions,
    /// so the compressed values it reads must be computed (lazily, as masked values) in the
    /// same kernel: a compressed input comes compacted from elsewhere and no longer lines up
    /// with the threads.
    /// True unless a scalar statement that may refuse its arguments would run in a kernel
    /// of a vector geometry. The CPU evaluates every statement, dead or not, so a refusal
    /// (`@index(v, 4)` of a shorter `v`) must be reported whatever the kernel's length; a
    /// scalar statement fused into a vector kernel runs once per thread, and a kernel whose
    /// geometry turns out empty runs no thread, so its check would never run.
    fn refusing_scalars_stay_scalar(&self, members: &Members, kernel: &Geometry) -> bool {
        if super::compatibility::is_scalar(kernel) {
            return true;
        }
        members.statements().all(|id| {
            let scalar = self
                .gpu_geometry(id)
                .is_some_and(|own| super::compatibility::is_scalar(&own));
            !(scalar && self.may_refuse(id))
        })
    }

    /// True unless a scalar statement's value would leave a kernel of a vector geometry. Fused
    /// there, the statement runs once per thread: fine for values the kernel uses itself, but
    /// an output is written per element, and a scalar has one (a loop counter's test fused
    /// into the kernel before the loop made that kernel fail to generate and run on the CPU).
    /// Reductions are outputs of their own kind and are not scalar statements here.
    fn scalar_outputs_stay_scalar(&self, members: &Members, kernel: &Geometry) -> bool {
        if super::compatibility::is_scalar(kernel) {
            return true;
        }
        let (_, outputs) = self.interface(members);
        members.statements().all(|id| {
            let scalar = self
                .gpu_geometry(id)
                .is_some_and(|own| super::compatibility::is_scalar(&own));
            !scalar
                || self.tree.stmt(id).is_none_or(|stmt| {
                    definitions(stmt)
                        .iter()
                        .all(|local| !outputs.contains(local))
                })
        })
    }

    /// True unless a statement of `members` that may fail as a whole kernel fails would hide
    /// the error of a statement before it in the source. Two kinds fail so: a launch check
    /// the shape analysis cannot prove to pass ([`Context::unproven_launch_check`]), which
    /// stops the kernel before it runs, and an empty `@min`, `@max` or `@avg`, found after
    /// it ran. Either way none of the kernel's outputs exist, while the CPU stops at the
    /// first failing statement in the source. So a statement of `members` before such a
    /// failing one
    /// - may not fail in the kernel itself when the failing check is a launch check (its
    ///   check would never run), and
    /// - may not give a value that a statement outside reads before the failing one, when a
    ///   statement outside before it may fail (a refusing builtin, an unproven launch
    ///   check, a condition or count): that reader waits for the kernel and would never run.
    ///
    /// (Other checks made in a kernel, of indexes, are not counted as failing ones: gathers
    /// of join and group positions, which never fail, would split TPC-H kernels for
    /// nothing.)
    fn failures_hide_no_earlier_error(&self, members: &Members) -> bool {
        let failing: Vec<(StmtId, bool)> = members
            .statements()
            .filter_map(|id| {
                let before_run = self.unproven_launch_check(id);
                (before_run || self.reduces_maybe_nothing(id)).then_some((id, before_run))
            })
            .collect();
        let Some(&(last, _)) = failing.last() else {
            return true;
        };
        // Whether a statement outside before the last failing one may fail: looked at only
        // when an early reader is found (most merges have none).
        let earlier_may_fail = || {
            (0..last.0).map(StmtId).any(|id| {
                !members.contains(id)
                    && (self.may_fail_in_the_kernel(id)
                        || self.unproven_launch_check(id)
                        || matches!(
                            self.tree.stmt(id).map(|s| &s.kind),
                            Some(
                                StmtKind::If { .. }
                                    | StmtKind::While { .. }
                                    | StmtKind::Repeat { .. }
                            )
                        ))
            })
        };
        let mut early_reader = false;
        for id in members.statements() {
            let later: Vec<(StmtId, bool)> =
                failing.iter().copied().filter(|&(f, _)| id < f).collect();
            if later.is_empty() {
                continue;
            }
            let stopped_before_running = later.iter().any(|&(_, before_run)| before_run);
            // (Launch checks of one kernel are all made before it runs, the first in the
            // source leading.)
            if stopped_before_running && self.may_fail_in_the_kernel(id) {
                return false;
            }
            if early_reader {
                continue;
            }
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            for local in definitions(stmt) {
                let definition = Definition {
                    local,
                    site: DefSite::Stmt(id),
                };
                if let Some(readers) = self.analysis.chains.def_uses.get(&definition) {
                    early_reader |= readers.iter().any(|&reader| {
                        !members.contains(reader) && later.iter().any(|&(f, _)| reader < f)
                    });
                }
            }
        }
        !(early_reader && earlier_may_fail())
    }

    /// True for `@min`, `@max` and `@avg` (of what may be no elements: they fail then).
    fn reduces_maybe_nothing(&self, id: StmtId) -> bool {
        use horsec_runtime::builtin::Builtin as B;
        self.tree.stmt(id).is_some_and(|stmt| {
            matches!(
                crate::analysis::statements::statement_call(stmt),
                Some((
                    crate::sema::typed::Callee::Builtin(B::Min | B::Max | B::Avg),
                    _
                ))
            )
        })
    }

    /// True when the statement may fail in its kernel: a builtin that refuses some arguments
    /// ([`Context::may_refuse`]), or `@min`, `@max`, `@avg` of what may be no elements.
    fn may_fail_in_the_kernel(&self, id: StmtId) -> bool {
        self.reduces_maybe_nothing(id) || self.may_refuse(id)
    }

    /// True when the statement's builtin makes a launch check (the engine's argument check
    /// before the kernel runs, as the CPU builtin checks them) that the shape analysis does
    /// not prove to pass: a `@compress` whose mask and data sizes are not the same size, an
    /// element-wise call of two operands of different sizes, neither of them one element (a
    /// table's rows against a group count), a `@vector` whose count is not a literal.
    fn unproven_launch_check(&self, id: StmtId) -> bool {
        use crate::sema::typed::{Arg, Callee, Operand};
        use horsec_runtime::builtin::Builtin as B;
        let Some(stmt) = self.tree.stmt(id) else {
            return false;
        };
        let Some((Callee::Builtin(builtin), args)) =
            crate::analysis::statements::statement_call(stmt)
        else {
            return false;
        };
        let size = |k: usize| match args.get(k) {
            Some(Arg::Operand(operand)) => self
                .analysis
                .shapes
                .operand_shape(self.program, id, operand)
                .vector_size()
                .cloned(),
            _ => None,
        };
        match builtin {
            B::Compress => match (size(0), size(1)) {
                (Some(mask), Some(data)) => mask != data,
                _ => true,
            },
            B::Vector => !matches!(args.first(), Some(Arg::Operand(Operand::Literal(_)))),
            b if b.is_binary_elementwise() => match (size(0), size(1)) {
                (Some(a), Some(b)) => a != b && !a.is_scalar() && !b.is_scalar(),
                _ => false,
            },
            _ => false,
        }
    }

    /// True when the index argument (the second) of `@index`/`@index_a` is a kernel input.
    fn index_is_input(&self, args: &[crate::sema::typed::Arg], inputs: &[LocalId]) -> bool {
        matches!(
            args.get(1),
            Some(crate::sema::typed::Arg::Operand(crate::sema::typed::Operand::Local(local, _)))
                if inputs.contains(local)
        )
    }

    /// True when an argument is a date or time (`@plus`/`@minus` then shift it, checked).
    fn temporal_operand(&self, args: &[crate::sema::typed::Arg]) -> bool {
        args.iter().any(|arg| match arg {
            crate::sema::typed::Arg::Operand(operand) => {
                crate::analysis::statements::operand_type(self.program, self.function, operand)
                    .is_temporal()
            }
            crate::sema::typed::Arg::Function(..) => false,
        })
    }

    /// True when `@index(x, literal)` reads only positions the shape analysis proves inside
    /// `x` (a constant size: `@index(pairs, 0:i64)` of a join's two index vectors).
    fn index_in_range(&self, id: StmtId, args: &[crate::sema::typed::Arg]) -> bool {
        use crate::analysis::shape::{Shape, Size};
        use crate::sema::typed::{Arg, Operand};
        use crate::syntax::ast::LiteralValue;
        let [Arg::Operand(source), Arg::Operand(Operand::Literal(literal))] = args else {
            return false;
        };
        let size = match self.analysis.shapes.operand_shape(self.program, id, source) {
            Shape::Vector(Size::Constant(n)) | Shape::List(Size::Constant(n), _) => n,
            _ => return false,
        };
        !literal.values.is_empty()
            && literal
                .values
                .iter()
                .all(|value| matches!(value, LiteralValue::Int(i) if *i >= 0 && (*i as u64) < size))
    }

    /// True when the statement calls a builtin that refuses some well-typed arguments at
    /// run time: indexes out of range, a negative or unfillable count, an integer modulo by
    /// zero, a date shifted out of range, a bad substring range, a factorial beyond i64.
    fn may_refuse(&self, id: StmtId) -> bool {
        use horsec_runtime::builtin::Builtin as B;
        let Some(stmt) = self.tree.stmt(id) else {
            return false;
        };
        let (StmtKind::Assign { expr, .. } | StmtKind::Expr(expr)) = &stmt.kind else {
            return false;
        };
        let Some((crate::sema::typed::Callee::Builtin(builtin), args)) =
            crate::analysis::statements::expr_call(expr)
        else {
            return false;
        };
        if builtin == B::Index && self.index_in_range(id, args) {
            return false;
        }
        matches!(builtin, B::Plus | B::Minus) && self.temporal_operand(args)
            || matches!(
                builtin,
                B::Index
                    | B::IndexA
                    | B::Vector
                    | B::Mod
                    | B::DatetimeAdd
                    | B::DatetimeSub
                    | B::SubString
                    | B::Fact
            )
    }

    /// The kernel's inputs (locals read inside whose value may come from outside, in
    /// first-use order) and outputs (locals defined inside whose value may be read outside,
    /// in definition order).
    pub fn interface(&self, members: &Members) -> (Vec<LocalId>, Vec<LocalId>) {
        let cx = self;
        let chains = &cx.analysis.chains;
        let mut inputs: Vec<LocalId> = Vec::new();
        let mut outputs: Vec<LocalId> = Vec::new();
        for id in members.statements() {
            let Some(stmt) = cx.tree.stmt(id) else {
                continue;
            };
            for read in uses(stmt) {
                let from_outside = match chains.defs_of(id, read.local) {
                    Some(sites) if !sites.is_empty() => sites.iter().any(|site| match site {
                        DefSite::Entry => true,
                        DefSite::Stmt(def) => !members.contains(*def),
                    }),
                    // Read before any assignment reaches it: whatever the host holds.
                    _ => true,
                };
                if from_outside && !inputs.contains(&read.local) {
                    inputs.push(read.local);
                }
            }
            for local in definitions(stmt) {
                let definition = Definition {
                    local,
                    site: DefSite::Stmt(id),
                };
                let readers = chains.def_uses.get(&definition);
                let live_out = readers.is_some_and(|readers| {
                    readers.iter().any(|&reader| {
                        !members.contains(reader)
                            || (reader <= id && !self.loop_inside_kernel(members, reader, id))
                    })
                });
                if live_out && !outputs.contains(&local) {
                    outputs.push(local);
                }
            }
        }
        (inputs, outputs)
    }

    /// True when a loop of the kernel itself carries the value from `def` back to `reader`
    /// (otherwise it is carried by a host loop, from one launch to the next).
    fn loop_inside_kernel(&self, members: &Members, reader: StmtId, def: StmtId) -> bool {
        let mut current = self.tree.get(def).and_then(|e| e.parent);
        while let Some(parent) = current {
            if !members.contains(parent) {
                return false;
            }
            let is_loop = matches!(
                self.tree.stmt(parent).map(|s| &s.kind),
                Some(StmtKind::While { .. } | StmtKind::Repeat { .. })
            );
            if is_loop && (reader == parent || self.tree.is_inside(reader, parent)) {
                return true;
            }
            current = self.tree.get(parent).and_then(|e| e.parent);
        }
        false
    }

    /// An upper bound of the storage buffers a kernel of `members` binds: a buffer per
    /// input and output (two for a list or an enum: offsets or index, and elements), the
    /// status word, and per statement the scratch its code may need (a recorded failing
    /// index or operand, a reduction's partials and count, a compaction's flags and
    /// offsets). Merges that would exceed [`MAX_STORAGE_BINDINGS`] are not made.
    pub fn storage_bindings(&self, members: &Members) -> usize {
        use horsec_runtime::builtin::Builtin as B;
        let (inputs, outputs) = self.interface(members);
        let buffers = |local: &LocalId| match self.function.locals.get(local.0).map(|l| &l.ty) {
            Some(horsec_runtime::types::Type::List(_) | horsec_runtime::types::Type::Enum(_)) => 2,
            _ => 1,
        };
        let mut total = 1
            + inputs.iter().map(buffers).sum::<usize>()
            + outputs.iter().map(buffers).sum::<usize>();
        for id in members.statements() {
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            let (StmtKind::Assign { expr, .. } | StmtKind::Expr(expr)) = &stmt.kind else {
                continue;
            };
            let Some((crate::sema::typed::Callee::Builtin(builtin), args)) =
                crate::analysis::statements::expr_call(expr)
            else {
                continue;
            };
            total += match builtin {
                B::Plus | B::Minus if self.temporal_operand(args) => 2,
                // An index read from an input is named from the host's copy; one computed
                // in the kernel (or a literal) is recorded.
                B::Index | B::IndexA if self.index_is_input(args, &inputs) => 0,
                B::Index
                | B::IndexA
                | B::DatetimeAdd
                | B::DatetimeSub
                | B::Sum
                | B::Avg
                | B::Min
                | B::Max
                | B::Count
                | B::Len
                | B::Compress
                | B::Where => 2,
                _ => 0,
            };
        }
        total
    }

    fn masked_reads_are_inside(&self, members: &Members, kernel: &Geometry) -> bool {
        for id in members.statements() {
            let Some(own) = self.gpu_geometry(id) else {
                continue;
            };
            if !runs_masked(&own, kernel) {
                continue;
            }
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            for read in uses(stmt) {
                let shape = self.analysis.shapes.operand_shape(
                    self.program,
                    id,
                    &crate::sema::typed::Operand::Local(read.local, Default::default()),
                );
                let compressed = shape
                    .vector_size()
                    .is_some_and(|size| matches!(size, crate::analysis::Size::Compressed(..)));
                if compressed && !self.defined_inside(id, read.local, members) {
                    return false;
                }
            }
        }
        true
    }
}

/// The statements of a set of units: each unit's statement and its whole subtree.
pub(crate) struct Members {
    /// `(first, end)` statement ranges, sorted.
    ranges: Vec<(usize, usize)>,
}

impl Members {
    pub fn new(cx: &Context<'_>, units: &[StmtId]) -> Members {
        let mut ranges: Vec<(usize, usize)> =
            units.iter().map(|&u| (u.0, cx.subtree_end(u))).collect();
        ranges.sort();
        Members { ranges }
    }

    pub fn contains(&self, stmt: StmtId) -> bool {
        // The ranges are subtrees of distinct units: disjoint, so the last one starting at
        // or before `stmt` is the only one that can hold it.
        let after = self.ranges.partition_point(|&(first, _)| first <= stmt.0);
        after
            .checked_sub(1)
            .is_some_and(|k| stmt.0 < self.ranges[k].1)
    }

    pub fn statements(&self) -> impl Iterator<Item = StmtId> + '_ {
        self.ranges
            .iter()
            .flat_map(|&(first, end)| (first..end).map(StmtId))
    }
}

/// What a unit is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Role {
    /// Fusable into a generated kernel, with its geometry.
    Gpu(Geometry),
    /// A library kernel of its own.
    Library,
    /// A simple host statement.
    Host,
    /// A compound statement whose bodies are outlined separately.
    HostCompound,
    /// A fused group aggregation (index into the body's fused groups): one library call in
    /// place of its statements, which form this one unit.
    Fused(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct Unit {
    pub stmt: StmtId,
    pub role: Role,
}

/// Dependences between two units (or groups), all pointing the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Link {
    /// How many values (true dependences) flow along it.
    values: usize,
    /// Some dependence needs a barrier between the two ends.
    barrier: bool,
}

impl Link {
    fn add(&mut self, other: Link) {
        self.values += other.values;
        self.barrier |= other.barrier;
    }
}

/// A group of units: a kernel (with its launch geometry) or one host/library unit.
#[derive(Clone, Debug)]
struct Group {
    units: Vec<usize>,
    kernel: Option<Geometry>,
}

/// The groups of one body, from which the builder emits launches and host statements.
#[derive(Clone, Debug)]
pub(crate) struct Partition {
    pub units: Vec<Unit>,
    links: BTreeMap<(usize, usize), Link>,
    group_of: Vec<usize>,
    groups: Vec<Option<Group>>,
    /// The links between groups, kept up to date by every merge (rebuilding it from the
    /// unit links after each merge made the outliner quadratic in a body's size).
    graph: GroupGraph,
    /// Per group, how many merges changed it: the key under which refusals are remembered.
    versions: Vec<u32>,
    /// Pairs [`Partition::merged`] refused, with the versions of both groups then. A refusal
    /// stands while neither group changes: other merges only contract the graph, so a path
    /// between the two through a third group stays one, and every other condition depends
    /// on the two groups alone. Each step rescans all pairs after a merge; without this the
    /// same refusals were worked out again each time.
    refused: RefCell<HashSet<u128, BuildHasherDefault<PairHasher>>>,
}

/// The hash of a packed refusal key: the steps look up every pair again after each merge, and
/// SipHash made the lookups a visible part of compile time.
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u128(&mut self, key: u128) {
        let mixed = (key as u64) ^ ((key >> 64) as u64).rotate_left(32);
        self.0 = (mixed ^ (mixed >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
}

/// The refusal key of groups `a` and `b` at their versions: exact below 2^32 groups and 2^31
/// merges into one group (a collision beyond could only cost a fusion, never correctness).
fn refusal_key(a: usize, version_a: u32, b: usize, version_b: u32, fusion: Fusion) -> u128 {
    let fusion = match fusion {
        Fusion::Identical => 0u128,
        Fusion::Masked => 1,
    };
    ((a as u128) << 96)
        | (u128::from(version_a) << 64)
        | ((b as u128) << 32)
        | (u128::from(version_b) << 1)
        | fusion
}

/// A merge a step chose: `(into, from, geometry of the merged kernel)`.
type Merge = (usize, usize, Geometry);

/// One group of the final partition, in launch order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Placed {
    /// A kernel: its unit statements in program order and its geometry.
    Kernel(Vec<StmtId>, Geometry),
    /// A unit that stays outside kernels.
    Single(usize),
}

/// The group graph at one moment: links between live groups and each group's successors.
#[derive(Clone, Debug)]
struct GroupGraph {
    links: BTreeMap<(usize, usize), Link>,
    /// Each group's successors, in ascending order (ties in step 3 go to the first).
    successors: Vec<BTreeSet<usize>>,
    predecessors: Vec<BTreeSet<usize>>,
}

impl GroupGraph {
    /// The graph of one group per unit.
    fn of_units(units: usize, links: &BTreeMap<(usize, usize), Link>) -> GroupGraph {
        let mut successors = vec![BTreeSet::new(); units];
        let mut predecessors = vec![BTreeSet::new(); units];
        for &(a, b) in links.keys() {
            successors[a].insert(b);
            predecessors[b].insert(a);
        }
        GroupGraph {
            links: links.clone(),
            successors,
            predecessors,
        }
    }

    /// Moves every link of group `from` to group `into`, dropping those between the two.
    fn absorb(&mut self, into: usize, from: usize) {
        for next in std::mem::take(&mut self.successors[from]) {
            self.predecessors[next].remove(&from);
            let link = self.links.remove(&(from, next)).unwrap_or_default();
            if next != into {
                self.links.entry((into, next)).or_default().add(link);
                self.successors[into].insert(next);
                self.predecessors[next].insert(into);
            }
        }
        for previous in std::mem::take(&mut self.predecessors[from]) {
            self.successors[previous].remove(&from);
            let link = self.links.remove(&(previous, from)).unwrap_or_default();
            if previous != into {
                self.links.entry((previous, into)).or_default().add(link);
                self.predecessors[into].insert(previous);
                self.successors[previous].insert(into);
            }
        }
    }

    fn link(&self, from: usize, to: usize) -> Link {
        self.links.get(&(from, to)).copied().unwrap_or_default()
    }

    /// True when a path from `from` to `to` passes through some third group.
    fn indirect_path(&self, from: usize, to: usize) -> bool {
        let mut seen = vec![false; self.successors.len()];
        let mut stack: Vec<usize> = self
            .successors
            .get(from)
            .map(|s| s.iter().copied().filter(|&g| g != to).collect())
            .unwrap_or_default();
        while let Some(group) = stack.pop() {
            if group == to {
                return true;
            }
            if std::mem::replace(&mut seen[group], true) {
                continue;
            }
            if let Some(next) = self.successors.get(group) {
                stack.extend(next.iter().copied());
            }
        }
        false
    }
}

impl Partition {
    /// The units of a body (its top-level statements `stmts`) and the links between them.
    /// The statements of each of `fused` form one unit at the place of its anchor.
    pub fn new(cx: &Context<'_>, stmts: &[StmtId], fused: &[FusedGroup]) -> Partition {
        let mut absorbed: HashMap<StmtId, usize> = HashMap::new();
        for (index, group) in fused.iter().enumerate() {
            for &stmt in &group.absorbed {
                absorbed.insert(stmt, index);
            }
        }
        let units: Vec<Unit> = stmts
            .iter()
            .filter_map(|&stmt| match absorbed.get(&stmt) {
                Some(&index) if fused[index].anchor == stmt => Some(Unit {
                    stmt,
                    role: Role::Fused(index),
                }),
                Some(_) => None,
                None => Some(Unit {
                    stmt,
                    role: unit_role(cx, stmt),
                }),
            })
            .collect();
        let unit_of = |stmt: StmtId| -> Option<usize> {
            if let Some(&index) = absorbed.get(&stmt) {
                let anchor = fused[index].anchor;
                return units.iter().position(|u| u.stmt == anchor);
            }
            let index = units.partition_point(|u| u.stmt <= stmt).checked_sub(1)?;
            let unit = &units[index];
            (stmt.0 < cx.subtree_end(unit.stmt)).then_some(index)
        };
        let mut links: BTreeMap<(usize, usize), Link> = BTreeMap::new();
        let graph = &cx.analysis.dependence;
        for edge in graph.graph.edge_references() {
            let (Some(from), Some(to)) = (graph.stmt(edge.source()), graph.stmt(edge.target()))
            else {
                continue;
            };
            let (Some(a), Some(b)) = (unit_of(from), unit_of(to)) else {
                continue;
            };
            // Same unit: internal. Backward: carried to the next iteration of a host loop.
            if a >= b {
                continue;
            }
            let weight = edge.weight();
            links.entry((a, b)).or_default().add(Link {
                values: usize::from(weight.kind == DependenceKind::True),
                barrier: cx.needs_barrier(from, weight),
            });
        }
        // Effects and exits stay in place: everything before runs before, everything after
        // runs after.
        for (index, unit) in units.iter().enumerate() {
            if cx.is_barrier(unit.stmt) {
                for other in 0..units.len() {
                    let key = match other.cmp(&index) {
                        std::cmp::Ordering::Less => (other, index),
                        std::cmp::Ordering::Greater => (index, other),
                        std::cmp::Ordering::Equal => continue,
                    };
                    links.entry(key).or_default();
                }
            }
        }
        let groups = units
            .iter()
            .enumerate()
            .map(|(index, unit)| {
                Some(Group {
                    units: vec![index],
                    kernel: match &unit.role {
                        Role::Gpu(geometry) => Some(geometry.clone()),
                        _ => None,
                    },
                })
            })
            .collect();
        Partition {
            group_of: (0..units.len()).collect(),
            graph: GroupGraph::of_units(units.len(), &links),
            versions: vec![0; units.len()],
            refused: RefCell::new(HashSet::default()),
            units,
            links,
            groups,
        }
    }

    /// Runs the three steps.
    pub fn outline(&mut self, cx: &Context<'_>) {
        self.pipeline(cx);
        loop {
            loop {
                let merged_siblings = self.merge_while(cx, Partition::sibling_merge);
                let merged_parent = self.merge_while(cx, Partition::parent_merge);
                if !merged_siblings && !merged_parent {
                    break;
                }
            }
            if !self.merge_while(cx, Partition::independent_merge) {
                break;
            }
        }
    }

    fn kernel_geometry(&self, group: usize) -> Option<&Geometry> {
        self.groups.get(group)?.as_ref()?.kernel.as_ref()
    }

    fn unit_statements(&self, groups: &[usize]) -> Vec<StmtId> {
        groups
            .iter()
            .filter_map(|&g| self.groups.get(g)?.as_ref())
            .flat_map(|group| group.units.iter().map(|&u| self.units[u].stmt))
            .collect()
    }

    /// The geometry of kernels `a` and `b` merged, or `None` when they must stay apart.
    fn merged(
        &self,
        cx: &Context<'_>,
        graph: &GroupGraph,
        a: usize,
        b: usize,
        fusion: Fusion,
    ) -> Option<Geometry> {
        if a == b {
            return None;
        }
        let key = refusal_key(a, self.versions[a], b, self.versions[b], fusion);
        if self.refused.borrow().contains(&key) {
            return None;
        }
        let merged = self.merged_uncached(cx, graph, a, b, fusion);
        if merged.is_none() {
            self.refused.borrow_mut().insert(key);
        }
        merged
    }

    fn merged_uncached(
        &self,
        cx: &Context<'_>,
        graph: &GroupGraph,
        a: usize,
        b: usize,
        fusion: Fusion,
    ) -> Option<Geometry> {
        let geometry = merge_geometry(self.kernel_geometry(a)?, self.kernel_geometry(b)?, fusion)?;
        if graph.link(a, b).barrier || graph.link(b, a).barrier {
            return None;
        }
        if graph.indirect_path(a, b) || graph.indirect_path(b, a) {
            return None;
        }
        let members = Members::new(cx, &self.unit_statements(&[a, b]));
        (cx.masked_reads_are_inside(&members, &geometry)
            && cx.refusing_scalars_stay_scalar(&members, &geometry)
            && cx.scalar_outputs_stay_scalar(&members, &geometry)
            && cx.failures_hide_no_earlier_error(&members)
            && cx.storage_bindings(&members) <= MAX_STORAGE_BINDINGS)
            .then_some(geometry)
    }

    fn merge(&mut self, into: usize, from: usize, geometry: Geometry) {
        let Some(moved) = self.groups.get_mut(from).and_then(Option::take) else {
            return;
        };
        for &unit in &moved.units {
            self.group_of[unit] = into;
        }
        if let Some(Some(target)) = self.groups.get_mut(into) {
            target.units.extend(moved.units);
            target.units.sort_unstable();
            target.kernel = Some(geometry);
        }
        self.graph.absorb(into, from);
        self.versions[into] += 1;
        self.versions[from] += 1;
    }

    /// Step 1, in reverse program order: a GPU unit joins the kernel holding all of its data
    /// successors when the geometries are equal and nothing needs a barrier.
    fn pipeline(&mut self, cx: &Context<'_>) {
        for unit in (0..self.units.len()).rev() {
            if !matches!(self.units[unit].role, Role::Gpu(_)) {
                continue;
            }
            let successors: BTreeSet<usize> = self
                .links
                .range((unit, 0)..(unit + 1, 0))
                .filter(|(_, link)| link.values > 0)
                .map(|(&(_, to), _)| self.group_of[to])
                .collect();
            let [kernel] = successors.into_iter().collect::<Vec<_>>()[..] else {
                continue;
            };
            let own = self.group_of[unit];
            if let Some(geometry) = self.merged(cx, &self.graph, own, kernel, Fusion::Identical) {
                self.merge(kernel, own, geometry);
            }
        }
    }

    /// Makes the merges `find` names, one at a time, until it names none (each merge changes
    /// the graph the next is looked for in). `find` gives `(into, from, geometry)`. Returns
    /// whether anything merged.
    fn merge_while(
        &mut self,
        cx: &Context<'_>,
        find: fn(&Partition, &Context<'_>) -> Option<Merge>,
    ) -> bool {
        let mut merged_any = false;
        while let Some((into, from, geometry)) = find(self, cx) {
            self.merge(into, from, geometry);
            merged_any = true;
        }
        merged_any
    }

    /// Step 2: kernels of equal geometry that read the output of one group merge when no
    /// path joins them: the first such pair, in group order.
    fn sibling_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        for parent in 0..self.groups.len() {
            let children: Vec<usize> = graph.successors[parent]
                .iter()
                .copied()
                .filter(|&c| graph.link(parent, c).values > 0 && self.kernel_geometry(c).is_some())
                .collect();
            for (i, &first) in children.iter().enumerate() {
                for &second in &children[i + 1..] {
                    if let Some(geometry) = self.merged(cx, graph, first, second, Fusion::Identical)
                    {
                        return Some((first, second, geometry));
                    }
                }
            }
        }
        None
    }

    /// Step 3, in program order of the parents: a kernel merges into the successor kernel it
    /// passes the most values to, which may run masked over a compressed geometry: the
    /// first such parent, with the child it merges into.
    fn parent_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        for parent in self.order(graph) {
            if self.kernel_geometry(parent).is_none() {
                continue;
            }
            let mut best: Option<(usize, usize, Geometry)> = None;
            for &child in &graph.successors[parent] {
                let values = graph.link(parent, child).values;
                if values == 0 || best.as_ref().is_some_and(|(v, _, _)| *v >= values) {
                    continue;
                }
                if let Some(geometry) = self.merged(cx, graph, parent, child, Fusion::Masked) {
                    best = Some((values, child, geometry));
                }
            }
            if let Some((_, child, geometry)) = best {
                return Some((child, parent, geometry));
            }
        }
        None
    }

    /// Beyond rNdN, once steps 2 and 3 are done: two kernels of equal geometry that no path
    /// joins merge even when they share no input, saving a launch: the first such pair, in
    /// launch order.
    fn independent_merge(&self, cx: &Context<'_>) -> Option<Merge> {
        let graph = &self.graph;
        let kernels: Vec<usize> = self
            .order(graph)
            .into_iter()
            .filter(|&g| self.kernel_geometry(g).is_some())
            .collect();
        for (i, &first) in kernels.iter().enumerate() {
            for &second in &kernels[i + 1..] {
                if let Some(geometry) = self.merged(cx, graph, first, second, Fusion::Identical) {
                    return Some((first, second, geometry));
                }
            }
        }
        None
    }

    /// The live groups in a topological order of the group graph that keeps program order
    /// wherever the dependences allow (ties go to the group whose first unit comes first).
    /// `None` if the graph has a cycle (a bug: every merge keeps it acyclic).
    fn topological(&self, graph: &GroupGraph) -> Option<Vec<usize>> {
        let mut indegree = vec![0usize; self.groups.len()];
        for &(_, to) in graph.links.keys() {
            indegree[to] += 1;
        }
        let first_unit = |g: usize| {
            self.groups[g]
                .as_ref()
                .and_then(|group| group.units.first().copied())
                .unwrap_or(usize::MAX)
        };
        let mut ready: BinaryHeap<Reverse<(usize, usize)>> = (0..self.groups.len())
            .filter(|&g| self.groups[g].is_some() && indegree[g] == 0)
            .map(|g| Reverse((first_unit(g), g)))
            .collect();
        let mut order = Vec::new();
        while let Some(Reverse((_, group))) = ready.pop() {
            order.push(group);
            for &next in &graph.successors[group] {
                indegree[next] -= 1;
                if indegree[next] == 0 {
                    ready.push(Reverse((first_unit(next), next)));
                }
            }
        }
        let live = self.groups.iter().filter(|g| g.is_some()).count();
        (order.len() == live).then_some(order)
    }

    /// Live groups in topological order, or in first-unit order if (by a bug) there is none.
    fn order(&self, graph: &GroupGraph) -> Vec<usize> {
        self.topological(graph).unwrap_or_else(|| {
            (0..self.groups.len())
                .filter(|&g| self.groups[g].is_some())
                .collect()
        })
    }

    /// The final groups in launch order; `None` if the group graph has a cycle.
    pub fn placed(&self) -> Option<Vec<Placed>> {
        let order = self.topological(&self.graph)?;
        Some(
            order
                .into_iter()
                .filter_map(|g| {
                    let group = self.groups[g].as_ref()?;
                    Some(match &group.kernel {
                        Some(geometry) => Placed::Kernel(
                            group.units.iter().map(|&u| self.units[u].stmt).collect(),
                            geometry.clone(),
                        ),
                        None => Placed::Single(*group.units.first()?),
                    })
                })
                .collect(),
        )
    }
}

fn unit_role(cx: &Context<'_>, stmt: StmtId) -> Role {
    let Some(s) = cx.tree.stmt(stmt) else {
        return Role::Host;
    };
    match &s.kind {
        StmtKind::If { .. } | StmtKind::While { .. } | StmtKind::Repeat { .. } => {
            match cx.compound_geometry(stmt) {
                Some(geometry) => Role::Gpu(geometry),
                None => Role::HostCompound,
            }
        }
        _ => match cx.gpu_geometry(stmt) {
            Some(geometry) => Role::Gpu(geometry),
            None if cx.analysis.dependence.device(stmt) == Some(Device::Library) => Role::Library,
            None => Role::Host,
        },
    }
}
