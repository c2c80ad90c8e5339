//! A generic data-flow framework over HorseIR's structured control flow.
//!
//! An analysis supplies the lattice (a fact type, its `join`, the boundary fact and the
//! "unreachable" identity of `join`) and a transfer function per statement; [`solve`] walks the
//! function's statement lists, `if`/`else`, `while`, `repeat`, `break`, `continue` and `return`
//! in the analysis's [`Direction`], iterating each loop until its head fact stops changing.
//!
//! Because control flow is structured there is no CFG: every join happens at a known place
//! ([`JoinPoint`]), which analyses may use (shape analysis names the fresh sizes it makes at a
//! join after the join point, so that re-joining in a loop gives the same name and converges).

use std::fmt;

use crate::sema::typed::{Function, Stmt, StmtKind};

use super::statements::{StatementTree, StmtId};

/// Which way facts flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

/// Where two or more flows of control meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JoinPoint {
    /// After an `if`: the branches (and, without `else`, the skipped path) meet.
    /// Backward: before the `if`, where the branches' facts meet.
    IfMerge(StmtId),
    /// The head of a loop, reached from before the loop and from the end of the body or a
    /// `continue` (backward: the head's successors, the body and the loop exit).
    LoopHead(StmtId),
    /// After a loop: the exit through the condition (or the count) and every `break`.
    LoopExit(StmtId),
    /// The end of the function: falling off the body and every `return`.
    FunctionExit,
}

/// A data-flow analysis: the lattice and the transfer functions.
pub trait DataFlowAnalysis {
    type Fact: Clone + PartialEq + fmt::Debug;
    /// What [`FlowResults::before`] keeps of the fact before a statement (see
    /// [`Self::record_before`]).
    type Record: Clone + fmt::Debug;

    fn direction(&self) -> Direction;

    /// The fact at the function entry (forward) or exit (backward).
    fn boundary(&mut self) -> Self::Fact;

    /// The fact of a point no execution reaches: the identity of [`Self::join`].
    fn unreachable(&mut self) -> Self::Fact;

    /// Folds `other` into `into` at `point`.
    fn join(&mut self, point: JoinPoint, into: &mut Self::Fact, other: &Self::Fact);

    /// The effect of the statement `id`. For `if`/`while`/`repeat` this is only the effect of
    /// evaluating the condition or count (the framework walks the bodies); for `break` and
    /// `continue` it is normally the identity.
    fn transfer(&mut self, id: StmtId, stmt: &Stmt, fact: &Self::Fact) -> Self::Fact;

    /// [`Self::transfer`] applied to `fact` itself. Analyses whose facts map every local
    /// override it: a copy of the whole fact per statement is quadratic in the function's size.
    fn transfer_in_place(&mut self, id: StmtId, stmt: &Stmt, fact: &mut Self::Fact) {
        *fact = self.transfer(id, stmt, fact);
    }

    /// Whether [`FlowResults::after`] is wanted. An analysis whose users read only the facts
    /// before statements says no: each recorded fact is a copy of the whole fact, so for
    /// facts that map every local, recording both sides doubles a cost quadratic in the
    /// function's size.
    fn records_after(&self) -> bool {
        true
    }

    /// The record of a statement the walk never reaches.
    fn unrecorded(&mut self) -> Self::Record;

    /// Writes into `into` what [`FlowResults::before`] keeps of `fact`, the fact before
    /// `stmt`: all of it, unless the analysis's users read only part of it there (each
    /// recorded fact is a copy, so keeping whole facts that map every local costs time
    /// quadratic in the function's size).
    fn record_before(&self, stmt: &Stmt, fact: &Self::Fact, into: &mut Self::Record);
}

/// The facts around every statement, in program order whatever the direction: `F` the
/// analysis's facts, `R` what it records of them before statements.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResults<F, R = F> {
    /// Before each statement (what the analysis records of it). For a `while` this is the
    /// loop head (reached from before the loop and from the back edges), where its condition
    /// is read.
    pub before: Vec<R>,
    /// After each statement; after a compound statement, once its flows have met. Empty
    /// when the analysis does not record them (see [`DataFlowAnalysis::records_after`]).
    pub after: Vec<F>,
    /// At the function exit (forward) or entry (backward).
    pub boundary_out: F,
}

impl<F, R> FlowResults<F, R> {
    pub fn before(&self, id: StmtId) -> Option<&R> {
        self.before.get(id.0)
    }

    pub fn after(&self, id: StmtId) -> Option<&F> {
        self.after.get(id.0)
    }
}

/// A loop whose head fact did not settle: the lattice has infinite ascending chains or the
/// join is not monotone. An analysis bug, reported rather than looping forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoFixedPoint {
    pub loop_stmt: StmtId,
    pub iterations: usize,
}

impl fmt::Display for NoFixedPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "data-flow analysis did not reach a fixed point for the loop at {} after {} iterations",
            self.loop_stmt, self.iterations
        )
    }
}

impl std::error::Error for NoFixedPoint {}

/// How many times a loop body is re-analysed before giving up. Lattices of this crate settle
/// in two or three rounds per nesting level.
pub const MAX_LOOP_ITERATIONS: usize = 1000;

/// Runs `analysis` over `function` to a fixed point.
pub fn solve<A: DataFlowAnalysis>(
    analysis: &mut A,
    function: &Function,
) -> Result<FlowResults<A::Fact, A::Record>, NoFixedPoint> {
    let tree = StatementTree::new(function);
    let unreachable = analysis.unreachable();
    let unrecorded = analysis.unrecorded();
    let records_after = analysis.records_after();
    let mut solver = Solver {
        analysis,
        before: vec![unrecorded; tree.len()],
        after: if records_after {
            vec![unreachable.clone(); tree.len()]
        } else {
            Vec::new()
        },
        loops: Vec::new(),
        exits: Vec::new(),
        next_id: 0,
    };
    let boundary = solver.analysis.boundary();
    let boundary_out = match solver.analysis.direction() {
        Direction::Forward => {
            let end = solver.forward_body(&function.body, boundary)?;
            let mut returns = std::mem::take(&mut solver.exits).into_iter();
            // A body that ends in its only `return` (the usual case) does not fall off its
            // end: the unreachable end is join's identity, so the exit is the returned fact,
            // taken as it is rather than copied into the identity.
            let mut exit = match returns.next() {
                Some(first) if end == unreachable => first,
                Some(first) => {
                    let mut exit = end;
                    solver
                        .analysis
                        .join(JoinPoint::FunctionExit, &mut exit, &first);
                    exit
                }
                None => end,
            };
            for returned in returns {
                solver
                    .analysis
                    .join(JoinPoint::FunctionExit, &mut exit, &returned);
            }
            exit
        }
        Direction::Backward => {
            solver.next_id = 0;
            let exit = boundary;
            solver.backward_body(&function.body, &exit, &exit)?
        }
    };
    Ok(FlowResults {
        before: solver.before,
        after: solver.after,
        boundary_out,
    })
}

/// Facts collected for the innermost loop while walking its body.
struct LoopFrame<F> {
    /// Forward: facts at `break`s (flow to the exit) and `continue`s (flow to the head).
    /// Backward: the fact after the loop and at the head, which `break`/`continue` start from.
    breaks: Vec<F>,
    continues: Vec<F>,
    exit_fact: Option<F>,
    head_fact: Option<F>,
}

struct Solver<'a, A: DataFlowAnalysis> {
    analysis: &'a mut A,
    before: Vec<A::Record>,
    after: Vec<A::Fact>,
    loops: Vec<LoopFrame<A::Fact>>,
    /// Forward: facts at `return`s.
    exits: Vec<A::Fact>,
    /// Pre-order id of the next statement the walk meets.
    next_id: usize,
}

impl<A: DataFlowAnalysis> Solver<'_, A> {
    fn record(&mut self, id: StmtId, stmt: &Stmt, before: &A::Fact, after: &A::Fact) {
        if let Some(slot) = self.before.get_mut(id.0) {
            self.analysis.record_before(stmt, before, slot);
        }
        if let Some(slot) = self.after.get_mut(id.0) {
            slot.clone_from(after);
        }
    }

    fn take_id(&mut self) -> StmtId {
        let id = StmtId(self.next_id);
        self.next_id += 1;
        id
    }

    // ----- forward -----

    fn forward_body(&mut self, body: &[Stmt], entry: A::Fact) -> Result<A::Fact, NoFixedPoint> {
        let mut fact = entry;
        for stmt in body {
            fact = self.forward_stmt(stmt, fact)?;
        }
        Ok(fact)
    }

    fn forward_stmt(&mut self, stmt: &Stmt, entry: A::Fact) -> Result<A::Fact, NoFixedPoint> {
        let id = self.take_id();
        match &stmt.kind {
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                let header = self.analysis.transfer(id, stmt, &entry);
                let mut merged = self.forward_body(then_body, header.clone())?;
                let other = match else_body {
                    Some(else_body) => self.forward_body(else_body, header)?,
                    None => header,
                };
                self.analysis
                    .join(JoinPoint::IfMerge(id), &mut merged, &other);
                self.record(id, stmt, &entry, &merged);
                Ok(merged)
            }
            StmtKind::While { body, .. } => {
                let body_start = self.next_id;
                let mut head = entry.clone();
                for _ in 0..MAX_LOOP_ITERATIONS {
                    self.next_id = body_start;
                    let condition = self.analysis.transfer(id, stmt, &head);
                    self.loops.push(LoopFrame {
                        breaks: Vec::new(),
                        continues: Vec::new(),
                        exit_fact: None,
                        head_fact: None,
                    });
                    let end = self.forward_body(body, condition.clone())?;
                    let frame = self.pop_loop();
                    let mut next_head = entry.clone();
                    self.analysis
                        .join(JoinPoint::LoopHead(id), &mut next_head, &end);
                    for continued in &frame.continues {
                        self.analysis
                            .join(JoinPoint::LoopHead(id), &mut next_head, continued);
                    }
                    if next_head == head {
                        let mut exit = condition;
                        for broken in &frame.breaks {
                            self.analysis
                                .join(JoinPoint::LoopExit(id), &mut exit, broken);
                        }
                        self.record(id, stmt, &head, &exit);
                        return Ok(exit);
                    }
                    head = next_head;
                }
                Err(NoFixedPoint {
                    loop_stmt: id,
                    iterations: MAX_LOOP_ITERATIONS,
                })
            }
            StmtKind::Repeat { body, .. } => {
                // The count is read once; then each iteration starts at the head.
                let counted = self.analysis.transfer(id, stmt, &entry);
                let body_start = self.next_id;
                let mut head = counted.clone();
                for _ in 0..MAX_LOOP_ITERATIONS {
                    self.next_id = body_start;
                    self.loops.push(LoopFrame {
                        breaks: Vec::new(),
                        continues: Vec::new(),
                        exit_fact: None,
                        head_fact: None,
                    });
                    let end = self.forward_body(body, head.clone())?;
                    let frame = self.pop_loop();
                    let mut next_head = counted.clone();
                    self.analysis
                        .join(JoinPoint::LoopHead(id), &mut next_head, &end);
                    for continued in &frame.continues {
                        self.analysis
                            .join(JoinPoint::LoopHead(id), &mut next_head, continued);
                    }
                    if next_head == head {
                        let mut exit = head.clone();
                        for broken in &frame.breaks {
                            self.analysis
                                .join(JoinPoint::LoopExit(id), &mut exit, broken);
                        }
                        self.record(id, stmt, &entry, &exit);
                        return Ok(exit);
                    }
                    head = next_head;
                }
                Err(NoFixedPoint {
                    loop_stmt: id,
                    iterations: MAX_LOOP_ITERATIONS,
                })
            }
            StmtKind::Break | StmtKind::Continue => {
                let fact = self.analysis.transfer(id, stmt, &entry);
                if let Some(frame) = self.loops.last_mut() {
                    if matches!(stmt.kind, StmtKind::Break) {
                        frame.breaks.push(fact);
                    } else {
                        frame.continues.push(fact);
                    }
                }
                // Outside a loop (rejected by the front end) control simply stops here.
                let dead = self.analysis.unreachable();
                self.record(id, stmt, &entry, &dead);
                Ok(dead)
            }
            StmtKind::Return(_) => {
                // Control leaves here, so the fact moves to the exit rather than being copied
                // (recorded first, so that it can change in place).
                if let Some(slot) = self.before.get_mut(id.0) {
                    self.analysis.record_before(stmt, &entry, slot);
                }
                let mut fact = entry;
                self.analysis.transfer_in_place(id, stmt, &mut fact);
                self.exits.push(fact);
                let dead = self.analysis.unreachable();
                if let Some(slot) = self.after.get_mut(id.0) {
                    slot.clone_from(&dead);
                }
                Ok(dead)
            }
            StmtKind::Declare(_) | StmtKind::Assign { .. } | StmtKind::Expr(_) => {
                // Recorded before the transfer so that the fact can change in place.
                if let Some(slot) = self.before.get_mut(id.0) {
                    self.analysis.record_before(stmt, &entry, slot);
                }
                let mut fact = entry;
                self.analysis.transfer_in_place(id, stmt, &mut fact);
                if let Some(slot) = self.after.get_mut(id.0) {
                    slot.clone_from(&fact);
                }
                Ok(fact)
            }
        }
    }

    fn pop_loop(&mut self) -> LoopFrame<A::Fact> {
        self.loops.pop().unwrap_or(LoopFrame {
            breaks: Vec::new(),
            continues: Vec::new(),
            exit_fact: None,
            head_fact: None,
        })
    }

    // ----- backward -----

    /// Walks `body` backward from `exit` (the fact after the body); `function_exit` is where a
    /// `return` starts from. Returns the fact before the body.
    fn backward_body(
        &mut self,
        body: &[Stmt],
        exit: &A::Fact,
        function_exit: &A::Fact,
    ) -> Result<A::Fact, NoFixedPoint> {
        // Ids are pre-order, so find each statement's id before walking them in reverse.
        let mut ids = Vec::with_capacity(body.len());
        for stmt in body {
            ids.push(self.next_id);
            self.next_id += count_statements(stmt);
        }
        let end_id = self.next_id;
        let mut fact = exit.clone();
        for (stmt, first) in body.iter().zip(ids).rev() {
            self.next_id = first;
            fact = self.backward_stmt(stmt, fact, function_exit)?;
        }
        self.next_id = end_id;
        Ok(fact)
    }

    fn backward_stmt(
        &mut self,
        stmt: &Stmt,
        after: A::Fact,
        function_exit: &A::Fact,
    ) -> Result<A::Fact, NoFixedPoint> {
        let id = self.take_id();
        match &stmt.kind {
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                let mut merged = self.backward_body(then_body, &after, function_exit)?;
                let other = match else_body {
                    Some(else_body) => self.backward_body(else_body, &after, function_exit)?,
                    None => after.clone(),
                };
                self.analysis
                    .join(JoinPoint::IfMerge(id), &mut merged, &other);
                let before = self.analysis.transfer(id, stmt, &merged);
                self.record(id, stmt, &before, &after);
                Ok(before)
            }
            StmtKind::While { body, .. } => {
                let body_start = self.next_id;
                // The head evaluates the condition, then either leaves or runs the body.
                let mut head = self.analysis.transfer(id, stmt, &after);
                for _ in 0..MAX_LOOP_ITERATIONS {
                    self.next_id = body_start;
                    self.loops.push(LoopFrame {
                        breaks: Vec::new(),
                        continues: Vec::new(),
                        exit_fact: Some(after.clone()),
                        head_fact: Some(head.clone()),
                    });
                    let body_before = self.backward_body(body, &head, function_exit)?;
                    self.pop_loop();
                    let mut next_successors = after.clone();
                    self.analysis
                        .join(JoinPoint::LoopHead(id), &mut next_successors, &body_before);
                    let next_head = self.analysis.transfer(id, stmt, &next_successors);
                    if next_head == head {
                        self.record(id, stmt, &head, &after);
                        return Ok(head);
                    }
                    head = next_head;
                }
                Err(NoFixedPoint {
                    loop_stmt: id,
                    iterations: MAX_LOOP_ITERATIONS,
                })
            }
            StmtKind::Repeat { body, .. } => {
                let body_start = self.next_id;
                let mut head = after.clone();
                for _ in 0..MAX_LOOP_ITERATIONS {
                    self.next_id = body_start;
                    self.loops.push(LoopFrame {
                        breaks: Vec::new(),
                        continues: Vec::new(),
                        exit_fact: Some(after.clone()),
                        head_fact: Some(head.clone()),
                    });
                    let body_before = self.backward_body(body, &head, function_exit)?;
                    self.pop_loop();
                    let mut next_head = after.clone();
                    self.analysis
                        .join(JoinPoint::LoopHead(id), &mut next_head, &body_before);
                    if next_head == head {
                        let before = self.analysis.transfer(id, stmt, &head);
                        self.record(id, stmt, &before, &after);
                        return Ok(before);
                    }
                    head = next_head;
                }
                Err(NoFixedPoint {
                    loop_stmt: id,
                    iterations: MAX_LOOP_ITERATIONS,
                })
            }
            StmtKind::Break | StmtKind::Continue => {
                let target = self.loops.last().and_then(|frame| {
                    if matches!(stmt.kind, StmtKind::Break) {
                        frame.exit_fact.clone()
                    } else {
                        frame.head_fact.clone()
                    }
                });
                let from = target.unwrap_or_else(|| self.analysis.unreachable());
                let before = self.analysis.transfer(id, stmt, &from);
                self.record(id, stmt, &before, &from);
                Ok(before)
            }
            StmtKind::Return(_) => {
                let before = self.analysis.transfer(id, stmt, function_exit);
                self.record(id, stmt, &before, function_exit);
                Ok(before)
            }
            StmtKind::Declare(_) | StmtKind::Assign { .. } | StmtKind::Expr(_) => {
                let before = self.analysis.transfer(id, stmt, &after);
                self.record(id, stmt, &before, &after);
                Ok(before)
            }
        }
    }
}

/// The number of statements `stmt` numbers: itself and everything nested in it.
fn count_statements(stmt: &Stmt) -> usize {
    1 + super::statements::nested_bodies(stmt)
        .into_iter()
        .flatten()
        .map(count_statements)
        .sum::<usize>()
}
