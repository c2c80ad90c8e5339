//! The questions the partition asks about a function's statements: their geometries, the
//! barriers and effects that keep them apart, whether a set of them may form one kernel (the
//! legality rules every merge checks), and a kernel's interface (its inputs and outputs).

use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use crate::analysis::defuse::{DefSite, Definition};
use crate::analysis::dependence::DependenceKind;
use crate::analysis::device::{statement_sync, Context as DeviceContext, Device};
use crate::analysis::statements::{defined_locals, for_each_use, StatementTree};
use crate::analysis::{FunctionAnalysis, Geometry, StmtId};
use crate::outline::compatibility::{merge_geometry, runs_masked, Fusion};
use crate::sema::typed::{Function, LocalId, StmtKind, TypedProgram};

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

    pub(super) fn device_context(&self) -> DeviceContext<'p> {
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
        self.gpu_geometry_ref(stmt).cloned()
    }

    /// [`Context::gpu_geometry`] borrowed: the legality checks of every merge tried ask for
    /// the geometry of each member statement, and a copy of a compressed size allocates.
    pub fn gpu_geometry_ref(&self, stmt: StmtId) -> Option<&'p Geometry> {
        if self.analysis.dependence.device(stmt) != Some(Device::Gpu) {
            return None;
        }
        match self.analysis.geometry.get(stmt)? {
            geometry @ (Geometry::Vector(_) | Geometry::List { .. }) => Some(geometry),
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
    pub(super) fn in_loop_within(&self, stmt: StmtId, outer: StmtId) -> bool {
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
    pub(super) fn needs_barrier(
        &self,
        from: StmtId,
        edge: &crate::analysis::dependence::DependenceEdge,
    ) -> bool {
        match edge.kind {
            DependenceKind::True => edge.sync.is_synchronized(),
            DependenceKind::Anti => self.tree.stmt(from).is_some_and(|reader| {
                let mut gathers = false;
                for_each_use(reader, |u| {
                    gathers = gathers
                        || (u.local == edge.local
                            && statement_sync(self.device_context(), reader, u.argument).reads);
                });
                gathers
            }),
            DependenceKind::Output => false,
        }
    }

    /// True for statements the host must keep in place: returns, loop exits, and host calls
    /// that may have effects (`@print`, user functions, any call whose value is unused).
    pub(super) fn is_barrier(&self, stmt: StmtId) -> bool {
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

    pub(super) fn is_effect(&self, stmt: StmtId) -> bool {
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
    pub(super) fn defined_inside(
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
    pub(super) fn refusing_scalars_stay_scalar(
        &self,
        members: &Members,
        kernel: &Geometry,
    ) -> bool {
        if crate::outline::compatibility::is_scalar(kernel) {
            return true;
        }
        members.statements().all(|id| {
            let scalar = self
                .gpu_geometry_ref(id)
                .is_some_and(crate::outline::compatibility::is_scalar);
            !(scalar && self.may_refuse(id))
        })
    }

    /// True unless a scalar statement's value would leave a kernel of a vector geometry. Fused
    /// there, the statement runs once per thread: fine for values the kernel uses itself, but
    /// an output is written per element, and a scalar has one (a loop counter's test fused
    /// into the kernel before the loop made that kernel fail to generate and run on the CPU).
    /// Reductions are outputs of their own kind and are not scalar statements here.
    pub(super) fn scalar_outputs_stay_scalar(
        &self,
        members: &Members,
        kernel: &Geometry,
        outputs: &[LocalId],
    ) -> bool {
        if crate::outline::compatibility::is_scalar(kernel) {
            return true;
        }
        members.statements().all(|id| {
            let scalar = self
                .gpu_geometry_ref(id)
                .is_some_and(crate::outline::compatibility::is_scalar);
            !scalar
                || self
                    .tree
                    .stmt(id)
                    .is_none_or(|stmt| defined_locals(stmt).all(|local| !outputs.contains(&local)))
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
    pub(super) fn failures_hide_no_earlier_error(&self, members: &Members) -> bool {
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
            for local in defined_locals(stmt) {
                let definition = Definition {
                    local,
                    site: DefSite::Stmt(id),
                };
                if let Some(readers) = self.analysis.chains.readers_of(&definition) {
                    early_reader |= readers.iter().any(|&reader| {
                        !members.contains(reader) && later.iter().any(|&(f, _)| reader < f)
                    });
                }
            }
        }
        !(early_reader && earlier_may_fail())
    }

    /// True unless a statement of `members` whose check in the kernel may fail (an integer
    /// `@mod`, a date shift, `@fact`: not index gathers, as in
    /// [`Context::failures_hide_no_earlier_error`]) would run ahead of a statement outside,
    /// between the kernel's first statement and it in the source, that may fail or refuse
    /// (nested in a condition or loop too): the kernel reports its error where the CPU
    /// reports the earlier one (an `@mod` by zero fused with the mask an `if` body's
    /// mismatched `@gt` reads; fuzzer seed 6500882910517104441).
    pub(super) fn checks_run_after_earlier_refusals(&self, members: &Members) -> bool {
        let Some(first) = members.statements().next() else {
            return true;
        };
        members.statements().all(|id| {
            if self.gathers_by_position(id) || !self.may_refuse(id) {
                return true;
            }
            (first.0 + 1..id.0).map(StmtId).all(|between| {
                members.contains(between)
                    || !(self.may_fail_in_the_kernel(between)
                        || self.unproven_launch_check(between))
            })
        })
    }

    /// True for an `@index`/`@index_a` statement whose positions are computed (join and
    /// group positions, which never fail), not a literal (which may name a position out of
    /// range: `@index(v, (-1, 7))`; fuzzer seed 18329231544978676971).
    fn gathers_by_position(&self, id: StmtId) -> bool {
        use crate::sema::typed::{Arg, Callee, Operand};
        use horsec_runtime::builtin::Builtin as B;
        self.tree.stmt(id).is_some_and(|stmt| {
            matches!(
                crate::analysis::statements::statement_call(stmt),
                Some((Callee::Builtin(B::Index | B::IndexA), args))
                    if !matches!(args.get(1), Some(Arg::Operand(Operand::Literal(_))))
            )
        })
    }

    /// True unless a statement of `members` whose check may fail would wait for a value that
    /// a statement after it in the source computes outside and may refuse: the kernel is
    /// launched after that statement, so its refusal would be reported where the CPU reports
    /// the earlier check's (a `@compress` of mismatched lengths fused with a reader of a
    /// later scalar `@mod` by zero, which refusing scalars keep out of vector kernels).
    pub(super) fn checks_wait_for_no_later_refusal(&self, members: &Members) -> bool {
        let Some(first_check) = members
            .statements()
            .find(|&id| self.unproven_launch_check(id) || self.may_fail_in_the_kernel(id))
        else {
            return true;
        };
        let chains = &self.analysis.chains;
        members.statements().all(|id| {
            let Some(stmt) = self.tree.stmt(id) else {
                return true;
            };
            let mut all = true;
            for_each_use(stmt, |read| {
                all = all
                    && chains.defs_of(id, read.local).is_none_or(|sites| {
                        sites.iter().all(|site| match site {
                            DefSite::Stmt(def) if !members.contains(*def) && *def > first_check => {
                                // (Gathers by computed positions are not counted, as in
                                // `failures_hide_no_earlier_error`: gathers of join and group
                                // positions never fail, and counting them splits TPC-H kernels.)
                                let gather = self.gathers_by_position(*def);
                                gather
                                    || !(self.may_fail_in_the_kernel(*def)
                                        || self.unproven_launch_check(*def))
                            }
                            _ => true,
                        })
                    });
            });
            all
        })
    }

    /// True unless the kernel would wait for a value defined outside it, after its first
    /// statement in the source, with two statements outside between them that may fail: the
    /// kernel runs after the later one (it waits for it, perhaps through others), and so
    /// does a reader of the kernel's earlier values, which may be the earlier one, whose
    /// error the CPU reports first (fuzzer seed 18335463397914618871: group keys indexed by
    /// a literal, then a scalar `@mod` by zero that a loop carried into a `@compress` fused
    /// with the keys' own kernel).
    pub(super) fn waits_for_no_later_failure(&self, members: &Members) -> bool {
        let Some(first) = members.statements().next() else {
            return true;
        };
        let chains = &self.analysis.chains;
        let mut latest: Option<StmtId> = None;
        for id in members.statements() {
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            for_each_use(stmt, |read| {
                for site in chains.defs_of(id, read.local).into_iter().flatten() {
                    if let DefSite::Stmt(def) = site {
                        if !members.contains(*def) && *def > first {
                            latest = latest.max(Some(*def));
                        }
                    }
                }
            });
        }
        let Some(latest) = latest else {
            return true;
        };
        // (Gathers by computed positions never fail, as in
        // `failures_hide_no_earlier_error`.)
        let failing = (first.0 + 1..=latest.0)
            .map(StmtId)
            .filter(|&id| {
                !members.contains(id)
                    && !self.gathers_by_position(id)
                    && (self.may_fail_in_the_kernel(id) || self.unproven_launch_check(id))
            })
            .take(2)
            .count();
        failing < 2
    }

    /// True for `@min`, `@max` and `@avg` (of what may be no elements: they fail then).
    pub(super) fn reduces_maybe_nothing(&self, id: StmtId) -> bool {
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
    pub(super) fn may_fail_in_the_kernel(&self, id: StmtId) -> bool {
        self.reduces_maybe_nothing(id) || self.may_refuse(id)
    }

    /// True when the statement's builtin makes a launch check (the engine's argument check
    /// before the kernel runs, as the CPU builtin checks them) that the shape analysis does
    /// not prove to pass: a `@compress` whose mask and data sizes are not the same size, an
    /// element-wise call of two operands of different sizes, neither of them one element (a
    /// table's rows against a group count), a `@vector` whose count is not a literal.
    pub(super) fn unproven_launch_check(&self, id: StmtId) -> bool {
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
        let shapes = &self.analysis.shapes;
        let shape = |k: usize| match args.get(k) {
            Some(Arg::Operand(operand)) => {
                Some(shapes.operand_shape_ref(self.program, id, operand))
            }
            _ => None,
        };
        fn size<'s>(
            shape: &'s Option<std::borrow::Cow<'_, crate::analysis::Shape>>,
        ) -> Option<&'s crate::analysis::Size> {
            shape.as_deref().and_then(|shape| shape.vector_size())
        }
        match builtin {
            B::Compress => {
                let (mask, data) = (shape(0), shape(1));
                match (size(&mask), size(&data)) {
                    (Some(mask), Some(data)) => mask != data,
                    _ => true,
                }
            }
            B::Vector => !matches!(args.first(), Some(Arg::Operand(Operand::Literal(_)))),
            b if b.is_binary_elementwise() => {
                let (first, second) = (shape(0), shape(1));
                match (size(&first), size(&second)) {
                    (Some(a), Some(b)) => a != b && !a.is_scalar() && !b.is_scalar(),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// True when the index argument (the second) of `@index`/`@index_a` is a kernel input.
    pub(super) fn index_is_input(
        &self,
        args: &[crate::sema::typed::Arg],
        inputs: &[LocalId],
    ) -> bool {
        matches!(
            args.get(1),
            Some(crate::sema::typed::Arg::Operand(crate::sema::typed::Operand::Local(local, _)))
                if inputs.contains(local)
        )
    }

    /// True when an argument is a date or time (`@plus`/`@minus` then shift it, checked).
    pub(super) fn temporal_operand(&self, args: &[crate::sema::typed::Arg]) -> bool {
        args.iter().any(|arg| match arg {
            crate::sema::typed::Arg::Operand(operand) => {
                crate::analysis::statements::operand_type_ref(self.program, self.function, operand)
                    .is_temporal()
            }
            crate::sema::typed::Arg::Function(..) => false,
        })
    }

    /// True when `@index(x, literal)` reads only positions the shape analysis proves inside
    /// `x` (a constant size: `@index(pairs, 0:i64)` of a join's two index vectors).
    pub(super) fn index_in_range(&self, id: StmtId, args: &[crate::sema::typed::Arg]) -> bool {
        use crate::analysis::shape::{Shape, Size};
        use crate::sema::typed::{Arg, Operand};
        use crate::syntax::ast::LiteralValue;
        let [Arg::Operand(source), Arg::Operand(Operand::Literal(literal))] = args else {
            return false;
        };
        let size = match *self
            .analysis
            .shapes
            .operand_shape_ref(self.program, id, source)
        {
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
    pub(super) fn may_refuse(&self, id: StmtId) -> bool {
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
        // Which locals each list holds already: a wide kernel reads and defines many, and
        // the merge steps ask for interfaces of every pair they try.
        let locals = cx.function.locals.len();
        let (mut is_input, mut is_output) = (vec![false; locals], vec![false; locals]);
        for id in members.statements() {
            let Some(stmt) = cx.tree.stmt(id) else {
                continue;
            };
            for_each_use(stmt, |read| {
                let from_outside = match chains.defs_of(id, read.local) {
                    Some(sites) if !sites.is_empty() => sites.iter().any(|site| match site {
                        DefSite::Entry => true,
                        DefSite::Stmt(def) => !members.contains(*def),
                    }),
                    // Read before any assignment reaches it: whatever the host holds.
                    _ => true,
                };
                if from_outside {
                    push_once(&mut inputs, &mut is_input, read.local);
                }
            });
            for local in defined_locals(stmt) {
                let definition = Definition {
                    local,
                    site: DefSite::Stmt(id),
                };
                let readers = chains.readers_of(&definition);
                let live_out = readers.is_some_and(|readers| {
                    readers.iter().any(|&reader| {
                        !members.contains(reader)
                            || (reader <= id && !self.loop_inside_kernel(members, reader, id))
                    })
                });
                if live_out {
                    push_once(&mut outputs, &mut is_output, local);
                }
            }
        }
        (inputs, outputs)
    }

    /// True when a loop of the kernel itself carries the value from `def` back to `reader`
    /// (otherwise it is carried by a host loop, from one launch to the next).
    pub(super) fn loop_inside_kernel(
        &self,
        members: &Members,
        reader: StmtId,
        def: StmtId,
    ) -> bool {
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
    pub fn storage_bindings(
        &self,
        members: &Members,
        inputs: &[LocalId],
        outputs: &[LocalId],
    ) -> usize {
        use horsec_runtime::builtin::Builtin as B;
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
                B::Index | B::IndexA if self.index_is_input(args, inputs) => 0,
                B::Index
                | B::IndexA
                | B::DatetimeAdd
                | B::DatetimeSub
                | B::Fact
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

    pub(super) fn masked_reads_are_inside(&self, members: &Members, kernel: &Geometry) -> bool {
        for id in members.statements() {
            let Some(own) = self.gpu_geometry_ref(id) else {
                continue;
            };
            if !runs_masked(own, kernel) {
                continue;
            }
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            let mut outside = false;
            for_each_use(stmt, |read| {
                if outside {
                    return;
                }
                let shape = self.analysis.shapes.operand_shape_ref(
                    self.program,
                    id,
                    &crate::sema::typed::Operand::Local(read.local, Default::default()),
                );
                let compressed = shape
                    .vector_size()
                    .is_some_and(|size| matches!(size, crate::analysis::Size::Compressed(..)));
                outside = compressed && !self.defined_inside(id, read.local, members);
            });
            if outside {
                return false;
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

/// Appends `local` to `list` unless it is there already, `seen` marking the locals `list` holds.
fn push_once(list: &mut Vec<LocalId>, seen: &mut [bool], local: LocalId) {
    let new = match seen.get_mut(local.0) {
        Some(flag) => !std::mem::replace(flag, true),
        None => !list.contains(&local),
    };
    if new {
        list.push(local);
    }
}
