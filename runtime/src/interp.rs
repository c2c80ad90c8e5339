//! The interpreter: executes a [`Plan`] step by step, with builtins on the CPU.
//!
//! Each function call gets a frame of variable slots; control flow follows the plan's
//! structure (`if`, `while`, `repeat`, `break`, `continue`, `return`). Runtime errors carry
//! the location of the statement that failed.

use std::io::Write;
use std::sync::Arc;

// FxHash, not std's SipHash: these maps are keyed by slots, ids and addresses and built on
// every launch, where SipHash was about a tenth of a warm run's host instructions.
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

use crate::builtin::Builtin;
use crate::cpu::{self, ArgValue, Env};
use crate::error::{Result, RuntimeError};
use crate::kernel::KernelLaunch;
use crate::plan::liveness::{slots_inside, LastUses};
use crate::plan::{Arg, Callee, Expr, FunctionId, Location, Operand, Plan, Slot, Step};
use crate::profile::{is_host_builtin, Placement, Profile};
use crate::types::Type;
use crate::value::{Table, Value, Vector};

/// Where a statement runs in the run's execution order: from the entry function down, the
/// position of each call statement, and for each loop the loop's position and the
/// iteration, then the statement's own position (`line << 32 | column`). The CPU runs
/// statements one at a time, so of two errors it reports the one whose path is smaller
/// (compared element by element); the GPU backend, which runs statements out of order
/// (fused kernels, errors checked late), orders its errors by these paths to report the
/// same one.
pub type SourcePath = Vec<u64>;

/// A source position as an element of a [`SourcePath`].
pub fn position_key(line: u32, column: u32) -> u64 {
    (u64::from(line) << 32) | u64::from(column)
}

/// Where `@load_table` finds tables.
pub trait Catalog {
    fn table(&self, name: &str) -> Result<Arc<Table>>;
}

/// Deepest user-function recursion allowed: a runaway recursion becomes an error, not a
/// stack overflow. Callers run the interpreter on a thread with a large stack (see the CLI).
pub const MAX_CALL_DEPTH: usize = 2_000;

/// A backend that runs some builtins itself (the GPU engine); the rest run on the CPU.
pub trait Accelerator {
    /// Runs `b` on `args` and says where it ran, or None to leave it to the CPU.
    fn builtin(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
        profile: &mut Profile,
    ) -> Option<Result<(Value, Placement)>>;

    /// `value` with its elements on the host, for `step` (a host step, a condition, the
    /// result): a device vector is read back (recorded in `profile`), anything else is
    /// returned as it is.
    fn host(&mut self, value: &Value, step: &str, profile: &mut Profile) -> Result<Value>;

    /// Each of `values` on the host for `step`, as [`Accelerator::host`] gives them; a
    /// backend may read them back together (one wait for all).
    fn host_all(
        &mut self,
        values: &[&Value],
        step: &str,
        profile: &mut Profile,
    ) -> Result<Vec<Value>> {
        values.iter().map(|v| self.host(v, step, profile)).collect()
    }

    /// Runs a generated kernel on `inputs`; returns the values of its output slots. `at` is
    /// the launch statement, for errors the kernel reports after the launch returned;
    /// `context` is where the launching body runs (see [`SourcePath`]), so that such an
    /// error can be ordered against the others of the run.
    fn launch(
        &mut self,
        kernel: &Arc<KernelLaunch>,
        inputs: &FxHashMap<Slot, Value>,
        at: Location,
        context: &[u64],
        profile: &mut Profile,
    ) -> Result<Vec<(Slot, Value)>>;

    /// Ends a run whose outcome is `outcome`: a backend that checks its steps' errors late
    /// (kernels' status words) does so here, and the error the CPU would report, the one
    /// first in execution order, is the run's error. `failure` is the [`SourcePath`] of the
    /// outcome's error.
    fn finish(
        &mut self,
        outcome: Result<Vec<Value>>,
        _failure: &[u64],
        _profile: &mut Profile,
    ) -> Result<Vec<Value>> {
        outcome
    }
}

/// The CPU backend: accelerates nothing.
pub struct CpuOnly;

impl Accelerator for CpuOnly {
    fn builtin(
        &mut self,
        _: Builtin,
        _: &[ArgValue<'_>],
        _: &mut Profile,
    ) -> Option<Result<(Value, Placement)>> {
        None
    }

    fn host(&mut self, value: &Value, _: &str, _: &mut Profile) -> Result<Value> {
        match value {
            Value::Device(_) => Err(RuntimeError::new(
                "a device value reached the CPU backend (it runs no GPU step)",
            )),
            other => Ok(other.clone()),
        }
    }

    fn launch(
        &mut self,
        kernel: &Arc<KernelLaunch>,
        _: &FxHashMap<Slot, Value>,
        _: Location,
        _: &[u64],
        _: &mut Profile,
    ) -> Result<Vec<(Slot, Value)>> {
        Err(RuntimeError::new(format!(
            "kernel {} needs the GPU backend (this plan was compiled for the GPU)",
            kernel.name
        )))
    }
}

/// Runs `plan`'s entry function with no arguments on the CPU; returns the values it returns.
pub fn run(plan: &Plan, catalog: &dyn Catalog, out: &mut dyn Write) -> Result<Vec<Value>> {
    run_with(plan, catalog, out, &mut CpuOnly, &mut Profile::new())
}

/// Runs `plan` with `accelerator` taking the builtins it can, recording every top-level
/// builtin call in `profile`.
pub fn run_with(
    plan: &Plan,
    catalog: &dyn Catalog,
    out: &mut dyn Write,
    accelerator: &mut dyn Accelerator,
    profile: &mut Profile,
) -> Result<Vec<Value>> {
    let mut interpreter = Interpreter {
        plan,
        catalog,
        out,
        depth: 0,
        accelerator,
        profile,
        context: SourcePath::new(),
        failure_path: SourcePath::new(),
        failed_iteration: None,
    };
    // The query's result is the one value that always comes to the host.
    let outcome = interpreter
        .call_function(plan.entry, Vec::new())
        .and_then(|values| {
            values
                .iter()
                .map(|v| interpreter.host(v, "result"))
                .collect()
        });
    let failure = std::mem::take(&mut interpreter.failure_path);
    let Interpreter {
        accelerator,
        profile,
        ..
    } = interpreter;
    accelerator.finish(outcome, &failure, profile)
}

struct Interpreter<'a> {
    plan: &'a Plan,
    catalog: &'a dyn Catalog,
    out: &'a mut dyn Write,
    depth: usize,
    accelerator: &'a mut dyn Accelerator,
    profile: &'a mut Profile,
    /// Where the running statement is (calls and loop iterations; see [`SourcePath`]).
    context: SourcePath,
    /// Set by a body that failed: the path, from that body down, of the statement whose
    /// error it reports (see `first_failure_in_source_order`).
    failure_path: SourcePath,
    /// Set by a loop whose body failed: the iteration (from 0).
    failed_iteration: Option<u64>,
}

/// How a sequence of steps ended.
enum Flow {
    Next,
    Break,
    Continue,
    Return(Vec<Value>),
}

struct Frame {
    slots: Vec<Option<Value>>,
    function: FunctionId,
    /// Slots cleared after each step: a value's device buffers go back to the pool after
    /// its last use, not when the frame ends.
    last_uses: Arc<LastUses>,
}

impl Interpreter<'_> {
    fn call_function(&mut self, id: FunctionId, args: Vec<Value>) -> Result<Vec<Value>> {
        let function = self
            .plan
            .functions
            .get(id.0)
            .ok_or_else(|| RuntimeError::new(format!("no function #{} in the plan", id.0)))?;
        if args.len() != function.params.len() {
            return Err(RuntimeError::new(format!(
                "{} takes {} argument(s), got {}",
                function.name,
                function.params.len(),
                args.len()
            )));
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(RuntimeError::new(format!(
                "call depth exceeds {MAX_CALL_DEPTH} in {} (runaway recursion?)",
                function.name
            )));
        }
        let last_uses = self.plan.last_uses.of(id.0, function);
        // Filled in place: `vec![None; n]` clones the first `None` into every slot, some
        // 1,600 host instructions for TPC-H q1's 90 slots on every run.
        let mut slots = Vec::with_capacity(function.slots.len());
        slots.resize_with(function.slots.len(), || None);
        let mut frame = Frame {
            slots,
            function: id,
            last_uses,
        };
        for (slot, value) in function.params.iter().zip(args) {
            frame.slots[slot.0] = Some(value);
        }
        self.depth += 1;
        let flow = self.run_steps(&function.body, &mut frame);
        self.depth -= 1;
        match flow? {
            Flow::Return(values) => Ok(values),
            Flow::Next => Ok(Vec::new()),
            Flow::Break | Flow::Continue => Err(RuntimeError::new(format!(
                "`break` or `continue` outside a loop in {}",
                function.name
            ))),
        }
    }

    fn run_steps(&mut self, steps: &[Step], frame: &mut Frame) -> Result<Flow> {
        for (i, step) in steps.iter().enumerate() {
            let flow = match self.run_step_tracked(step, frame) {
                Ok(flow) => flow,
                Err(error) => {
                    let error = locate(error, step_location(step));
                    let path = self.failure_path_of(step, &error);
                    let (error, path, written) = self.run_again((error, path), step, frame);
                    let (error, path) = self.first_failure_in_source_order(
                        (error, path),
                        (step, written),
                        &steps[i + 1..],
                        frame,
                    );
                    self.failure_path = path;
                    return Err(error);
                }
            };
            if !matches!(flow, Flow::Next) {
                return Ok(flow);
            }
            for slot in frame.last_uses.after(step) {
                if let Some(value) = frame.slots.get_mut(slot.0) {
                    *value = None;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Runs `step`, with the context of a call (the call's position) while it runs.
    fn run_step_tracked(&mut self, step: &Step, frame: &mut Frame) -> Result<Flow> {
        self.failure_path.clear();
        self.failed_iteration = None;
        let call = matches!(step, Step::Assign { expr, .. } if calls_a_function(expr));
        if call {
            self.context.push(step_key(step));
        }
        let flow = self.run_step(step, frame);
        if call {
            self.context.pop();
        }
        flow
    }

    /// The [`SourcePath`], from this body down, of `error`, which `step` failed with: the
    /// failing statement's position; for a call, the call's then the callee's path; for an
    /// `if`, the path its branch found; for a loop, its position, the iteration and the path
    /// its body found (or its own position alone when the condition or count failed).
    fn failure_path_of(&mut self, step: &Step, error: &RuntimeError) -> SourcePath {
        let nested = std::mem::take(&mut self.failure_path);
        // A kernel's failure a read-back brought ran where its launch was: from this body
        // down, when that is inside it (a launch of an earlier loop iteration, or outside
        // this body, is placed by the body that holds it).
        if let Some(ran_at) = &error.ran_at {
            if let Some(inside) = ran_at.strip_prefix(self.context.as_slice()) {
                self.failed_iteration = None;
                return inside.to_vec();
            }
        }
        let own = || match error.location {
            Some((line, column)) => position_key(line, column),
            None => step_key(step),
        };
        match step {
            Step::Assign { expr, .. } if calls_a_function(expr) => {
                let mut path = vec![step_key(step)];
                path.extend(nested);
                path
            }
            Step::If { .. } if !nested.is_empty() => nested,
            Step::While { .. } | Step::Repeat { .. } => match self.failed_iteration.take() {
                Some(iteration) => {
                    let mut path = vec![step_key(step), iteration];
                    path.extend(nested);
                    path
                }
                None => vec![step_key(step)],
            },
            _ => vec![own()],
        }
    }

    /// The error the CPU reports when step `failed` of a body fails with `error`. The CPU
    /// runs statements one at a time in source order and stops at the first that fails; a
    /// plan's steps are in dependence order, and the outliner may place a step holding an
    /// earlier statement after one holding a later one (a fused kernel, a dead statement
    /// sunk past a loop). So the rest of the body still runs where it may hold an earlier
    /// statement and does not read what a failed or skipped step would have written, and
    /// the failure that comes first is reported with its path. (Kernels that check their
    /// statements late are ordered by the same paths when the run ends: see the engine's
    /// `status`.) `failed_wrote` says whether `failed` has written its values after all (it
    /// failed with another statement's error and ran again: see [`Interpreter::run_again`]).
    fn first_failure_in_source_order(
        &mut self,
        (error, path): (RuntimeError, SourcePath),
        (failed, failed_wrote): (&Step, bool),
        rest: &[Step],
        frame: &mut Frame,
    ) -> (RuntimeError, SourcePath) {
        let (mut first, mut first_path) = (error, path);
        let mut unwritten: FxHashSet<Slot> = FxHashSet::default();
        if !failed_wrote {
            unwritten.extend(slots_inside(failed).1);
        }
        for step in rest {
            if matches!(step, Step::Return { .. } | Step::Break | Step::Continue) {
                break;
            }
            let (reads, writes) = slots_inside(step);
            // A step after the first failure would not have run on the CPU: it is skipped
            // when running it could be seen (a print, a loop, a call that may loop). A pure
            // builtin call still runs, as a later launch may read it and hold an earlier
            // statement too (the outliner fuses across positions); its own errors come
            // after the first failure.
            let after_first = first_path.first().is_some_and(|&p| step_key(step) >= p)
                && !is_pure_statement(step);
            if after_first {
                unwritten.extend(writes);
                continue;
            }
            if reads.iter().any(|s| unwritten.contains(s)) {
                // A body reads what a failed step would have written, but the condition (or
                // count), which the CPU checks first, may fail on its own.
                if let Some(Err(error)) = self.check_condition(step, frame, &unwritten) {
                    let error = locate(error, step_location(step));
                    let path = vec![step_key(step)];
                    if path < first_path {
                        (first, first_path) = (error, path);
                    }
                }
                unwritten.extend(writes);
                continue;
            }
            if let Err(error) = self.run_step_tracked(step, frame) {
                let error = locate(error, step_location(step));
                let path = self.failure_path_of(step, &error);
                unwritten.extend(writes);
                if path < first_path {
                    (first, first_path) = (error, path);
                }
            }
        }
        (first, first_path)
    }

    /// The error of `step` when it failed with `error`, and whether it has written its
    /// values after all. A read-back the step needed may have brought the failure of a kernel
    /// launched earlier, which holds another statement, before or after this one in the
    /// source: the step itself has not run. A pure step runs again (the accelerator has taken
    /// the failure, so its reads succeed):
    /// - before the failure in the source, the CPU would have run it first: its own error, if
    ///   it fails, comes first;
    /// - after it, the CPU would not have run it, but a later step may read its values and
    ///   hold a statement earlier than the failure (the outliner fuses across positions, and
    ///   a kernel may be launched after a library call that reads this step's value), so
    ///   that step can still run and report its error (see
    ///   [`Interpreter::first_failure_in_source_order`]).
    ///
    /// A step that failed with its own error fails again the same way.
    fn run_again(
        &mut self,
        (error, path): (RuntimeError, SourcePath),
        step: &Step,
        frame: &mut Frame,
    ) -> (RuntimeError, SourcePath, bool) {
        if !is_pure_statement(step) {
            return (error, path, false);
        }
        match self.run_step_tracked(step, frame) {
            Ok(_) => (error, path, true),
            // A read that still brings a failure names no statement of its own.
            Err(again) if !again.message.contains(crate::gpu::deferred::KERNEL_FAILED) => {
                let again = locate(again, step_location(step));
                let again_path = self.failure_path_of(step, &again);
                if again_path < path {
                    (again, again_path, false)
                } else {
                    (error, path, false)
                }
            }
            Err(_) => (error, path, false),
        }
    }

    /// Checks the condition of an `if` or `while`, or the count of a `repeat`, as running
    /// the step would first; None when `step` has none or it reads an `unwritten` slot.
    fn check_condition(
        &mut self,
        step: &Step,
        frame: &Frame,
        unwritten: &FxHashSet<Slot>,
    ) -> Option<Result<()>> {
        let (operand, _) = control_operand(step)?;
        if matches!(operand, Operand::Slot(s) if unwritten.contains(s)) {
            return None;
        }
        Some(self.decide(step, frame).map(|_| ()))
    }

    /// What a control step decides before its body runs (once per iteration for `while`):
    /// the truth of an `if`/`while` condition, the count of a `repeat`, checked as the CPU
    /// checks them. [`Decision::None`] for other steps.
    fn decide(&mut self, step: &Step, frame: &Frame) -> Result<Decision> {
        let Some((operand, what)) = control_operand(step) else {
            return Ok(Decision::None);
        };
        let value = self.host(self.operand(operand, frame)?, what)?;
        Ok(match step {
            Step::Repeat { .. } => Decision::Count(count_of(&value)?),
            _ => Decision::Truth(truth(&value, what)?),
        })
    }

    /// Runs iteration `iteration` of loop `looping`'s body, in the loop's context; a failure
    /// records the iteration for [`Interpreter::failure_path_of`].
    fn run_iteration(
        &mut self,
        looping: &Step,
        iteration: u64,
        body: &[Step],
        frame: &mut Frame,
    ) -> Result<Flow> {
        self.context.extend([step_key(looping), iteration]);
        let flow = self.run_steps(body, frame);
        self.context.truncate(self.context.len() - 2);
        if flow.is_err() {
            self.failed_iteration = Some(iteration);
        }
        flow
    }

    fn run_step(&mut self, step: &Step, frame: &mut Frame) -> Result<Flow> {
        match step {
            Step::Assign { targets, expr, .. } => {
                let values = spread_results(expr, targets.len(), self.eval(expr, frame)?)?;
                if !targets.is_empty() && values.len() != targets.len() {
                    return Err(RuntimeError::new(format!(
                        "expected {} value(s), the expression produced {}",
                        targets.len(),
                        values.len()
                    )));
                }
                for (target, value) in targets.iter().zip(values) {
                    if let Some(slot) = target {
                        frame.slots[slot.0] = Some(value);
                    }
                }
                Ok(Flow::Next)
            }
            Step::Return { values, .. } => {
                let values = values
                    .iter()
                    .map(|op| self.operand(op, frame).cloned())
                    .collect::<Result<Vec<_>>>()?;
                Ok(Flow::Return(values))
            }
            Step::If {
                then_body,
                else_body,
                ..
            } => {
                if self.decide(step, frame)?.taken() {
                    self.run_steps(then_body, frame)
                } else {
                    self.run_steps(else_body, frame)
                }
            }
            Step::While { body, .. } => {
                let mut iteration = 0;
                while self.decide(step, frame)?.taken() {
                    match self.run_iteration(step, iteration, body, frame)? {
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                        ret @ Flow::Return(_) => return Ok(ret),
                    }
                    iteration += 1;
                }
                Ok(Flow::Next)
            }
            Step::Repeat { body, .. } => {
                let n = self.decide(step, frame)?.count();
                for iteration in 0..n {
                    match self.run_iteration(step, iteration, body, frame)? {
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                        ret @ Flow::Return(_) => return Ok(ret),
                    }
                }
                Ok(Flow::Next)
            }
            Step::Launch { kernel, inputs, at } => {
                let mut values =
                    FxHashMap::with_capacity_and_hasher(inputs.len(), Default::default());
                for slot in inputs {
                    values.insert(*slot, self.operand(&Operand::Slot(*slot), frame)?.clone());
                }
                let start = Instant::now();
                let transfers = self.profile.total(Placement::Transfer);
                let outputs =
                    self.accelerator
                        .launch(kernel, &values, *at, &self.context, self.profile)?;
                // The launch's transfers are recorded as such; the rest is the kernel's.
                let moved = self.profile.total(Placement::Transfer) - transfers;
                self.profile.record(
                    Placement::GpuKernel,
                    &kernel.name,
                    start.elapsed().saturating_sub(moved),
                );
                for (slot, value) in outputs {
                    let cell = frame.slots.get_mut(slot.0).ok_or_else(|| {
                        RuntimeError::new(format!(
                            "{} writes slot {} outside the frame",
                            kernel.name, slot.0
                        ))
                    })?;
                    *cell = Some(value);
                }
                Ok(Flow::Next)
            }
            Step::Break => Ok(Flow::Break),
            Step::Continue => Ok(Flow::Continue),
        }
    }

    fn operand<'f>(&self, op: &'f Operand, frame: &'f Frame) -> Result<&'f Value> {
        match op {
            Operand::Const(v) => Ok(v),
            Operand::Slot(slot) => frame
                .slots
                .get(slot.0)
                .and_then(Option::as_ref)
                .ok_or_else(|| self.unassigned(*slot, frame)),
        }
    }

    fn unassigned(&self, slot: Slot, frame: &Frame) -> RuntimeError {
        let name = self
            .plan
            .functions
            .get(frame.function.0)
            .and_then(|f| f.slots.get(slot.0))
            .map_or("?", |s| s.name.as_str());
        RuntimeError::new(format!(
            "variable `{name}` is read before any value was assigned"
        ))
    }

    fn eval(&mut self, expr: &Expr, frame: &Frame) -> Result<Vec<Value>> {
        match expr {
            Expr::Operand(op) => Ok(vec![self.operand(op, frame)?.clone()]),
            Expr::CheckCast { expr, ty } => {
                let values = self.eval(expr, frame)?;
                for value in &values {
                    check_cast(value, ty)?;
                }
                Ok(values)
            }
            Expr::Convert { expr, ty } => {
                let values = self.eval(expr, frame)?;
                values
                    .into_iter()
                    .map(|value| self.convert(value, ty))
                    .collect()
            }
            Expr::Call { callee, args } => {
                let mut arg_values = Vec::with_capacity(args.len());
                for arg in args {
                    arg_values.push(match arg {
                        Arg::Operand(op) => ArgValue::Value(self.operand(op, frame)?),
                        Arg::Function(f) => ArgValue::Function(*f),
                    });
                }
                match callee {
                    Callee::Builtin(b) => Ok(vec![self.builtin(*b, &arg_values)?]),
                    Callee::Function(id) => {
                        let values = arg_values
                            .iter()
                            .map(|a| match a {
                                ArgValue::Value(v) => Ok((*v).clone()),
                                ArgValue::Function(_) => Err(RuntimeError::new(
                                    "a function literal cannot be passed to a user function",
                                )),
                            })
                            .collect::<Result<Vec<_>>>()?;
                        self.call_function(*id, values)
                    }
                }
            }
        }
    }
}

impl Interpreter<'_> {
    /// `value` converted to the real type `ty` ([`Expr::Convert`]), as Rust's `as` converts
    /// (floats to integers truncate and saturate). A device value is read back and converted
    /// on the host (recorded as the read of a step "converting assignment"): the GPU backend
    /// converts in its kernels, and library results meet a converting declaration rarely.
    /// Values that are not real vectors are kept.
    fn convert(&mut self, value: Value, ty: &Type) -> Result<Value> {
        let value = if value.on_device() {
            self.host(&value, "converting assignment")?
        } else {
            value
        };
        match value {
            Value::Vector(v) if v.ty().is_real() && ty.is_real() => {
                Ok(Value::Vector(v.cast_real(ty)?))
            }
            other => Ok(other),
        }
    }

    /// `value` on the host for `step` (see [`Accelerator::host`]).
    fn host(&mut self, value: &Value, step: &str) -> Result<Value> {
        if value.on_device() {
            self.accelerator.host(value, step, self.profile)
        } else {
            Ok(value.clone())
        }
    }

    /// A builtin call of the program: on the accelerator when it takes it, else on the CPU.
    fn builtin(&mut self, b: Builtin, args: &[ArgValue<'_>]) -> Result<Value> {
        let start = Instant::now();
        let (value, placement) = match self.accelerator.builtin(b, args, self.profile) {
            Some(result) => result?,
            None => {
                // A CPU step: device arguments are read back (recorded under the step).
                let step = b.step_name();
                let on_device: Vec<&Value> = args
                    .iter()
                    .filter_map(|arg| match arg {
                        ArgValue::Value(v) if v.on_device() => Some(*v),
                        _ => None,
                    })
                    .collect();
                let hosted_args: Vec<ArgValue<'_>>;
                let hosted: Vec<Option<Value>>;
                // Host arguments alone (the table and column look-ups of every query) go as
                // they are, with no read-back to ask for.
                let args = if on_device.is_empty() {
                    args
                } else {
                    let mut read = self
                        .accelerator
                        .host_all(&on_device, step, self.profile)?
                        .into_iter();
                    hosted = args
                        .iter()
                        .map(|arg| match arg {
                            ArgValue::Value(v) if v.on_device() => read.next(),
                            _ => None,
                        })
                        .collect();
                    hosted_args = args
                        .iter()
                        .zip(&hosted)
                        .map(|(a, h)| h.as_ref().map_or(*a, ArgValue::Value))
                        .collect();
                    hosted_args.as_slice()
                };
                let value = cpu::call_builtin(b, args, self)?;
                // Taking a cell of a list (`@index(list, k)`) picks a container apart.
                let list_cell = b == Builtin::Index
                    && matches!(args.first(), Some(ArgValue::Value(Value::List(_))));
                let placement = if is_host_builtin(b) || list_cell {
                    Placement::Host
                } else {
                    Placement::Cpu
                };
                (value, placement)
            }
        };
        self.profile
            .record_static(placement, b.step_name(), start.elapsed());
        Ok(value)
    }
}

impl Env for Interpreter<'_> {
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>> {
        self.catalog.table(name)
    }

    fn invoke(&mut self, f: Callee, args: &[Value]) -> Result<Vec<Value>> {
        match f {
            Callee::Builtin(b) => {
                let args: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
                Ok(vec![cpu::call_builtin(b, &args, self)?])
            }
            Callee::Function(id) => {
                // A builtin on the CPU called this function: it needs host values back.
                let step = self
                    .plan
                    .functions
                    .get(id.0)
                    .map_or_else(|| "a function".to_string(), |f| f.name.clone());
                let values = self.call_function(id, args.to_vec())?;
                values.iter().map(|v| self.host(v, &step)).collect()
            }
        }
    }

    fn print(&mut self, value: &Value) -> Result<()> {
        crate::format::write_value(value, crate::format::OutputFormat::Table, self.out)
            .map_err(|e| RuntimeError::new(format!("@print: {e}")))
    }
}

fn step_location(step: &Step) -> Option<Location> {
    match step {
        Step::Assign { at, .. }
        | Step::Return { at, .. }
        | Step::If { at, .. }
        | Step::While { at, .. }
        | Step::Repeat { at, .. }
        | Step::Launch { at, .. } => Some(*at),
        Step::Break | Step::Continue => None,
    }
}

/// A step's own position as a [`SourcePath`] element (`break` and `continue` have none and
/// never fail).
fn step_key(step: &Step) -> u64 {
    step_location(step).map_or(0, |l| position_key(l.line, l.column))
}

/// Whether running `step` has no effect but its values: a launch, or an assignment of a
/// builtin call other than `@print` (a user function may print or loop).
fn is_pure_statement(step: &Step) -> bool {
    match step {
        Step::Launch { .. } => true,
        Step::Assign { expr, .. } => !calls_a_function(expr) && !prints(expr),
        _ => false,
    }
}

fn prints(expr: &Expr) -> bool {
    match expr {
        Expr::Call { callee, .. } => matches!(callee, Callee::Builtin(Builtin::Print)),
        Expr::CheckCast { expr, .. } | Expr::Convert { expr, .. } => prints(expr),
        Expr::Operand(_) => false,
    }
}

/// Whether `expr` calls a user function, directly or passed to a builtin (`@each(@f, l)`):
/// its errors are positioned in the callee.
fn calls_a_function(expr: &Expr) -> bool {
    match expr {
        Expr::Call { callee, args } => {
            matches!(callee, Callee::Function(_))
                || args
                    .iter()
                    .any(|a| matches!(a, Arg::Function(Callee::Function(_))))
        }
        Expr::CheckCast { expr, .. } | Expr::Convert { expr, .. } => calls_a_function(expr),
        Expr::Operand(_) => false,
    }
}

/// Attaches the innermost statement's location to an error that has none yet.
fn locate(mut error: RuntimeError, at: Option<Location>) -> RuntimeError {
    if error.location.is_none() {
        error.location = at.map(|l| (l.line, l.column));
    }
    error
}

/// What [`Interpreter::decide`] found.
enum Decision {
    /// An `if` or `while` condition.
    Truth(bool),
    /// A `repeat` count.
    Count(u64),
    /// The step decides nothing.
    None,
}

impl Decision {
    /// Whether the branch is taken (the loop goes on).
    fn taken(&self) -> bool {
        matches!(self, Decision::Truth(true))
    }

    /// The iterations of a `repeat`.
    fn count(&self) -> u64 {
        match self {
            Decision::Count(n) => *n,
            _ => 0,
        }
    }
}

/// The operand a control step decides on and the step's keyword (for messages).
fn control_operand(step: &Step) -> Option<(&Operand, &'static str)> {
    match step {
        Step::If { cond, .. } => Some((cond, "if")),
        Step::While { cond, .. } => Some((cond, "while")),
        Step::Repeat { count, .. } => Some((count, "repeat")),
        _ => None,
    }
}

/// The truth of a condition: a length-1 bool (or integer, non-zero is true).
fn truth(value: &Value, what: &str) -> Result<bool> {
    match value {
        Value::Vector(v) if v.len() == 1 => match v {
            Vector::Bool(b) => Ok(b[0]),
            Vector::I8(x) => Ok(x[0] != 0),
            Vector::I16(x) => Ok(x[0] != 0),
            Vector::I32(x) => Ok(x[0] != 0),
            Vector::I64(x) => Ok(x[0] != 0),
            other => Err(RuntimeError::new(format!(
                "`{what}` condition must be a bool, found {}",
                other.ty()
            ))),
        },
        other => Err(RuntimeError::new(format!(
            "`{what}` condition must be one bool, found a {} of length {}",
            other.ty(),
            other.len()
        ))),
    }
}

/// The iteration count of `repeat`: one non-negative integer.
fn count_of(value: &Value) -> Result<u64> {
    let n = match value {
        Value::Vector(v) if v.len() == 1 => match v {
            Vector::Bool(x) => i64::from(x[0]),
            Vector::I8(x) => i64::from(x[0]),
            Vector::I16(x) => i64::from(x[0]),
            Vector::I32(x) => i64::from(x[0]),
            Vector::I64(x) => x[0],
            other => {
                return Err(RuntimeError::new(format!(
                    "`repeat` count must be an integer, found {}",
                    other.ty()
                )))
            }
        },
        other => {
            return Err(RuntimeError::new(format!(
                "`repeat` count must be one integer, found a {} of length {}",
                other.ty(),
                other.len()
            )))
        }
    };
    u64::try_from(n).map_err(|_| RuntimeError::new(format!("`repeat` count is negative ({n})")))
}

/// `check_cast(v, T)`: succeeds when the value's type matches `T` (`?` matches anything).
fn check_cast(value: &Value, ty: &Type) -> Result<()> {
    if type_matches(&value.ty(), ty) {
        Ok(())
    } else {
        Err(RuntimeError::new(format!(
            "check_cast failed: value has type {}, expected {ty}",
            value.ty()
        )))
    }
}

fn type_matches(actual: &Type, expected: &Type) -> bool {
    match (actual, expected) {
        (_, Type::Wildcard) | (Type::Wildcard, _) => true,
        (Type::List(a), Type::List(e)) | (Type::Enum(a), Type::Enum(e)) => type_matches(a, e),
        (Type::Dict(ak, av), Type::Dict(ek, ev)) => type_matches(ak, ek) && type_matches(av, ev),
        _ => actual == expected,
    }
}

impl Catalog for crate::data::Database {
    fn table(&self, name: &str) -> Result<Arc<Table>> {
        crate::data::Database::table(self, name)
    }
}

/// The values a step assigns: a `@group_aggregate` call with several targets (the outliner's
/// fused group aggregation) gives each target one cell of its result list — the groups'
/// first rows, then one vector per reduction. Anything else as it is.
fn spread_results(expr: &Expr, targets: usize, values: Vec<Value>) -> Result<Vec<Value>> {
    let fused = matches!(
        expr,
        Expr::Call {
            callee: Callee::Builtin(Builtin::GroupAggregate),
            ..
        }
    );
    if !fused || targets <= 1 {
        return Ok(values);
    }
    match values.as_slice() {
        [Value::List(crate::value::List::Mixed(cells))] => Ok(cells.to_vec()),
        _ => Err(RuntimeError::new(
            "@group_aggregate gave no list of results to spread over its targets",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_cast_accepts_wildcards_inside_compound_types() {
        let list_of_i64 = Type::List(Box::new(Type::I64));
        assert!(type_matches(
            &list_of_i64,
            &Type::List(Box::new(Type::Wildcard))
        ));
        assert!(!type_matches(&Type::I32, &Type::I64));
    }
}
