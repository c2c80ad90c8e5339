//! Last uses of variable slots: after which step of a function each slot's value is dead.
//!
//! The interpreter clears a slot right after the step that used it last, so the value's
//! device buffers go back to the pool (`gpu::pool`) while the rest of the query runs instead
//! of living until the frame ends. The analysis is the classic backward liveness over the
//! plan's structured control flow:
//!
//! - a slot is live after a step when a later step may read it before writing it;
//! - a loop's head is live with what the body reads before writing it, the loop's exit set,
//!   and the condition, iterated to a fixed point, so a value carried from one iteration to
//!   the next (or read on every iteration from before the loop) is never cleared inside it;
//! - `break` continues with what is live after the loop, `continue` with the loop's head;
//!   `return` reads its values and ends the frame.
//!
//! A step's drops are the slots it reads or writes (anywhere inside it, for `if` and loops)
//! that are not live after it. Clearing a slot only drops that reference: a value held
//! elsewhere too (another slot, a list, a caller's frame) stays alive through its `Arc`s.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

use super::{Arg, Expr, Operand, PlanFunction, Slot, Step};

type Live = BTreeSet<usize>;

/// The slots to clear after each step of one function, found by [`last_uses`].
#[derive(Debug, Default)]
pub struct LastUses {
    /// Keyed by the step's address inside the function's (immutable) body.
    drops: FxHashMap<usize, Vec<Slot>>,
}

impl LastUses {
    /// The slots whose values are dead once `step` has run (and control went on to the
    /// next step).
    pub fn after(&self, step: &Step) -> &[Slot] {
        self.drops
            .get(&(step as *const Step as usize))
            .map_or(&[], Vec::as_slice)
    }
}

/// The [`LastUses`] of a plan's functions, each found on the function's first call and kept
/// with the plan: the analysis walks the body with a set of live slots per step, which cost
/// a warm run of TPC-H q1 on the GPU some 45 us of host time when it was redone per run.
///
/// A function's entry remembers where its body was and how long it was, and is found again
/// only for the same body (the drops are keyed by the steps' addresses). A clone of the plan
/// starts empty: its steps are elsewhere.
#[derive(Default)]
pub struct LastUsesCache {
    /// Per function index: the body's address and length, and its last uses.
    functions: Mutex<Vec<Option<CachedLastUses>>>,
}

/// A function body's address and length, and its last uses.
type CachedLastUses = (usize, usize, Arc<LastUses>);

impl LastUsesCache {
    /// The last uses of `function`, function `index` of the plan holding this cache.
    pub fn of(&self, index: usize, function: &PlanFunction) -> Arc<LastUses> {
        let body = (function.body.as_ptr() as usize, function.body.len());
        let Ok(mut functions) = self.functions.lock() else {
            // Poisoned by a panic elsewhere: found afresh, as without the cache.
            return Arc::new(last_uses(function));
        };
        if let Some(Some((at, len, found))) = functions.get(index) {
            if (*at, *len) == body {
                return Arc::clone(found);
            }
        }
        let found = Arc::new(last_uses(function));
        if functions.len() <= index {
            functions.resize(index + 1, None);
        }
        functions[index] = Some((body.0, body.1, Arc::clone(&found)));
        found
    }
}

impl Clone for LastUsesCache {
    fn clone(&self) -> LastUsesCache {
        LastUsesCache::default()
    }
}

impl std::fmt::Debug for LastUsesCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LastUsesCache")
    }
}

/// Where each slot of `function` is used for the last time.
pub fn last_uses(function: &PlanFunction) -> LastUses {
    let mut analysis = Analysis {
        drops: FxHashMap::default(),
    };
    analysis.body(&function.body, &Live::new(), None);
    LastUses {
        drops: analysis.drops,
    }
}

/// The live sets a `break` and a `continue` continue with.
struct Loop<'a> {
    exit: &'a Live,
    head: &'a Live,
}

struct Analysis {
    drops: FxHashMap<usize, Vec<Slot>>,
}

impl Analysis {
    /// The slots live before `steps` when `live_out` is live after them; records the drops
    /// of every step on the way (a loop body's last visit is the one at the fixed point).
    fn body(&mut self, steps: &[Step], live_out: &Live, enclosing: Option<&Loop<'_>>) -> Live {
        let mut live = live_out.clone();
        for step in steps.iter().rev() {
            let after = live;
            let (live_in, touched) = self.step(step, &after, enclosing);
            let dead: Vec<Slot> = touched.difference(&after).map(|&s| Slot(s)).collect();
            let key = step as *const Step as usize;
            if dead.is_empty() {
                self.drops.remove(&key);
            } else {
                self.drops.insert(key, dead);
            }
            live = live_in;
        }
        live
    }

    /// The slots live before `step`, and the slots it reads or writes.
    fn step(&mut self, step: &Step, after: &Live, enclosing: Option<&Loop<'_>>) -> (Live, Live) {
        match step {
            Step::Assign { targets, expr, .. } => {
                let mut reads = Live::new();
                expr_reads(expr, &mut reads);
                let writes: Live = targets.iter().flatten().map(|s| s.0).collect();
                straight_line(after, reads, writes)
            }
            Step::Launch { kernel, inputs, .. } => {
                let reads: Live = inputs.iter().map(|s| s.0).collect();
                let writes: Live = kernel.outputs.iter().map(|o| o.slot.0).collect();
                straight_line(after, reads, writes)
            }
            Step::Return { values, .. } => {
                let mut reads = Live::new();
                for op in values {
                    operand_reads(op, &mut reads);
                }
                // The frame ends: nothing to clear.
                (reads, Live::new())
            }
            Step::Break => (
                enclosing.map_or_else(Live::new, |l| l.exit.clone()),
                Live::new(),
            ),
            Step::Continue => (
                enclosing.map_or_else(Live::new, |l| l.head.clone()),
                Live::new(),
            ),
            Step::If {
                cond,
                then_body,
                else_body,
                ..
            } => {
                let mut live = self.body(then_body, after, enclosing);
                live.extend(self.body(else_body, after, enclosing));
                operand_reads(cond, &mut live);
                let touched = touched_inside(step, &live);
                (live, touched)
            }
            Step::While { cond, body, .. } => {
                // Live at the condition: what the exit needs, or what the body needs.
                let mut head = after.clone();
                operand_reads(cond, &mut head);
                loop {
                    let enclosing = Loop {
                        exit: after,
                        head: &head,
                    };
                    let mut next = self.body(body, &head, Some(&enclosing));
                    next.extend(head.iter().copied());
                    if next == head {
                        break;
                    }
                    head = next;
                }
                let touched = touched_inside(step, &head);
                (head, touched)
            }
            Step::Repeat { count, body, .. } => {
                // Live at the start of each iteration (the count is read once, before).
                let mut head = after.clone();
                loop {
                    let enclosing = Loop {
                        exit: after,
                        head: &head,
                    };
                    let mut next = self.body(body, &head, Some(&enclosing));
                    next.extend(head.iter().copied());
                    if next == head {
                        break;
                    }
                    head = next;
                }
                let mut live = head;
                operand_reads(count, &mut live);
                let touched = touched_inside(step, &live);
                (live, touched)
            }
        }
    }
}

/// Liveness across a step without inner control flow.
fn straight_line(after: &Live, reads: Live, writes: Live) -> (Live, Live) {
    let mut live: Live = after.difference(&writes).copied().collect();
    live.extend(reads.iter().copied());
    let mut touched = reads;
    touched.extend(writes);
    (live, touched)
}

/// What a compound step touches: the slots live into it, and every slot written inside.
fn touched_inside(step: &Step, live_in: &Live) -> Live {
    let mut touched = live_in.clone();
    writes_inside(std::slice::from_ref(step), &mut touched);
    touched
}

fn writes_inside(steps: &[Step], into: &mut Live) {
    for step in steps {
        match step {
            Step::Assign { targets, .. } => into.extend(targets.iter().flatten().map(|s| s.0)),
            Step::Launch { kernel, .. } => into.extend(kernel.outputs.iter().map(|o| o.slot.0)),
            Step::If {
                then_body,
                else_body,
                ..
            } => {
                writes_inside(then_body, into);
                writes_inside(else_body, into);
            }
            Step::While { body, .. } | Step::Repeat { body, .. } => writes_inside(body, into),
            Step::Return { .. } | Step::Break | Step::Continue => {}
        }
    }
}

/// The slots a step reads and writes anywhere inside it (its condition or count, and its
/// bodies, for `if` and loops).
pub fn slots_inside(step: &Step) -> (Vec<Slot>, Vec<Slot>) {
    let (mut reads, mut writes) = (Live::new(), Live::new());
    reads_inside(std::slice::from_ref(step), &mut reads);
    writes_inside(std::slice::from_ref(step), &mut writes);
    (
        reads.into_iter().map(Slot).collect(),
        writes.into_iter().map(Slot).collect(),
    )
}

fn reads_inside(steps: &[Step], into: &mut Live) {
    for step in steps {
        match step {
            Step::Assign { expr, .. } => expr_reads(expr, into),
            Step::Launch { inputs, .. } => into.extend(inputs.iter().map(|s| s.0)),
            Step::Return { values, .. } => {
                for op in values {
                    operand_reads(op, into);
                }
            }
            Step::If {
                cond,
                then_body,
                else_body,
                ..
            } => {
                operand_reads(cond, into);
                reads_inside(then_body, into);
                reads_inside(else_body, into);
            }
            Step::While { cond, body, .. } => {
                operand_reads(cond, into);
                reads_inside(body, into);
            }
            Step::Repeat { count, body, .. } => {
                operand_reads(count, into);
                reads_inside(body, into);
            }
            Step::Break | Step::Continue => {}
        }
    }
}

fn expr_reads(expr: &Expr, into: &mut Live) {
    match expr {
        Expr::Operand(op) => operand_reads(op, into),
        Expr::CheckCast { expr, .. } | Expr::Convert { expr, .. } => expr_reads(expr, into),
        Expr::Call { args, .. } => {
            for arg in args {
                if let Arg::Operand(op) = arg {
                    operand_reads(op, into);
                }
            }
        }
    }
}

fn operand_reads(op: &Operand, into: &mut Live) {
    if let Operand::Slot(s) = op {
        into.insert(s.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Callee, Location, SlotInfo};
    use crate::types::Type;
    use crate::value::{Value, Vector};

    fn read(slots: &[usize]) -> Expr {
        Expr::Call {
            callee: Callee::Builtin(crate::builtin::Builtin::List),
            args: slots
                .iter()
                .map(|&s| Arg::Operand(Operand::Slot(Slot(s))))
                .collect(),
        }
    }

    fn assign(target: usize, reads: &[usize]) -> Step {
        Step::Assign {
            targets: vec![Some(Slot(target))],
            expr: read(reads),
            at: Location::default(),
        }
    }

    fn constant(target: usize) -> Step {
        Step::Assign {
            targets: vec![Some(Slot(target))],
            expr: Expr::Operand(Operand::Const(Value::Vector(Vector::from_bools(vec![
                true,
            ])))),
            at: Location::default(),
        }
    }

    fn function(body: Vec<Step>, slots: usize) -> PlanFunction {
        PlanFunction {
            name: "test.f".to_string(),
            params: Vec::new(),
            returns: Vec::new(),
            slots: (0..slots)
                .map(|i| SlotInfo {
                    name: format!("s{i}"),
                    ty: Type::Bool,
                })
                .collect(),
            body,
        }
    }

    fn dropped(uses: &LastUses, step: &Step) -> Vec<usize> {
        uses.after(step).iter().map(|s| s.0).collect()
    }

    #[test]
    fn a_value_is_dropped_after_its_last_read_and_a_dead_write_at_once() {
        let f = function(
            vec![
                constant(0),
                constant(1),
                assign(2, &[0]),
                assign(3, &[0, 2]),
                Step::Return {
                    values: vec![Operand::Slot(Slot(3))],
                    at: Location::default(),
                },
            ],
            4,
        );
        let uses = last_uses(&f);
        assert_eq!(dropped(&uses, &f.body[0]), Vec::<usize>::new());
        // s1 is never read.
        assert_eq!(dropped(&uses, &f.body[1]), vec![1]);
        assert_eq!(dropped(&uses, &f.body[2]), Vec::<usize>::new());
        assert_eq!(dropped(&uses, &f.body[3]), vec![0, 2]);
        assert_eq!(dropped(&uses, &f.body[4]), Vec::<usize>::new());
    }

    #[test]
    fn values_read_in_a_loop_live_through_it_and_carried_values_are_never_dropped_inside() {
        // s0 = c; s1 = c; while s1 { s2 = list(s0, s1); s1 = list(s2) }; s3 = list(s1)
        let f = function(
            vec![
                constant(0),
                constant(1),
                Step::While {
                    cond: Operand::Slot(Slot(1)),
                    body: vec![assign(2, &[0, 1]), assign(1, &[2])],
                    at: Location::default(),
                },
                assign(3, &[1]),
                Step::Return {
                    values: vec![Operand::Slot(Slot(3))],
                    at: Location::default(),
                },
            ],
            4,
        );
        let uses = last_uses(&f);
        let Step::While { body, .. } = &f.body[2] else {
            unreachable!()
        };
        // s0 is read on every iteration: not dropped in the loop, dropped after it. The old
        // s1 is dead once read here: the next step writes a new one.
        assert_eq!(dropped(&uses, &body[0]), vec![1]);
        // s2 is dead once s1 is rebuilt from it; s1 is carried to the condition.
        assert_eq!(dropped(&uses, &body[1]), vec![2]);
        assert_eq!(dropped(&uses, &f.body[2]), vec![0, 2]);
        assert_eq!(dropped(&uses, &f.body[3]), vec![1]);
    }

    #[test]
    fn break_keeps_what_the_loop_exit_needs_and_continue_what_the_head_needs() {
        // s0 = c; s1 = c; repeat s0 { if s1 { s2 = list(s1); break } else { continue } };
        // s3 = list(s2)
        let f = function(
            vec![
                constant(0),
                constant(1),
                Step::Repeat {
                    count: Operand::Slot(Slot(0)),
                    body: vec![Step::If {
                        cond: Operand::Slot(Slot(1)),
                        then_body: vec![assign(2, &[1]), Step::Break],
                        else_body: vec![Step::Continue],
                        at: Location::default(),
                    }],
                    at: Location::default(),
                },
                assign(3, &[2]),
                Step::Return {
                    values: vec![Operand::Slot(Slot(3))],
                    at: Location::default(),
                },
            ],
            4,
        );
        let uses = last_uses(&f);
        let Step::Repeat { body, .. } = &f.body[2] else {
            unreachable!()
        };
        let Step::If { then_body, .. } = &body[0] else {
            unreachable!()
        };
        // s2 is read after the loop (the break's exit): kept; s1 is dead on that path.
        assert_eq!(dropped(&uses, &then_body[0]), vec![1]);
        // s1 is the condition of every iteration (continue goes back to the head).
        assert_eq!(dropped(&uses, &body[0]), Vec::<usize>::new());
        // The count is read once, before the loop; s1 is dead after it.
        assert_eq!(dropped(&uses, &f.body[2]), vec![0, 1]);
        assert_eq!(dropped(&uses, &f.body[3]), vec![2]);
    }
}
