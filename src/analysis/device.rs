//! Where each statement can run, and which data dependences force a synchronization.
//!
//! The rules follow rNdN's GPU analysis, adapted to this design (strings are dictionary codes,
//! so comparisons and sorts on them are integer work; string functions run on the dictionary
//! as library kernels):
//!
//! - **Gpu**: element-wise builtins, `@compress`/`@where`, gathers (`@index` on a vector),
//!   reductions, `@each*` of a GPU builtin, `@raze`, `@vector`, `@append` of vectors, copies.
//! - **Library**: whole-operation kernels from the runtime's library: `@order`, `@group`,
//!   `@join_index`, `@unique`, `@member`, `@index_of`, `@like`, `@sub_string`, `@index_a`
//!   (scatter), `@take`/`@drop` (a slice), and the graph builtins `@csr`,
//!   `@shortest_path_length`, `@reachable`.
//! - **Cpu**: tables, columns, lists and dictionaries as containers (`@load_table`,
//!   `@column_value`, `@list`, `@table`, `@keys`, `@values`, `@fetch`…), `@print`, calls of
//!   user functions, and control statements.
//!
//! A data dependence from a parent to a child is *synchronized* (needs a grid-wide barrier, so
//! both cannot share a kernel) when the parent writes through a scatter or a reduction (write
//! synchronization) or the child reads the value at arbitrary positions, as a gather does (read
//! synchronization). Two exceptions: `@compress` is applied lazily as a mask, so it is not a
//! synchronization; and a reduction (`@sum`, `@each(@sum, …)`) followed by `@raze` writes each
//! cell's result in place, so that edge is not synchronized either.

use std::fmt;

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use crate::sema::typed::{
    Arg, Callee, Expr, ExprKind, Function, Operand, Stmt, StmtKind, TypedProgram,
};

use super::statements::operand_type_ref;

/// Where a statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// Can be fused into a generated kernel.
    Gpu,
    /// A library kernel of its own (sort, group, join, …).
    Library,
    /// Runs on the host.
    Cpu,
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Device::Gpu => "gpu",
            Device::Library => "library",
            Device::Cpu => "cpu",
        })
    }
}

/// How a call synchronizes, seen from one of its arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallSync {
    /// Its result is written through a scatter or a reduction.
    pub writes: bool,
    /// The argument in question is read at arbitrary positions (a gather).
    pub reads: bool,
    /// It is a reduction (for the reduction-then-raze exception).
    pub reduction: bool,
    /// It is a `@raze`.
    pub raze: bool,
}

/// The synchronization a data dependence needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Synchronization {
    /// The parent scatters or reduces.
    pub write: bool,
    /// The child gathers from the value.
    pub read: bool,
}

impl Synchronization {
    pub fn is_synchronized(self) -> bool {
        self.write || self.read
    }
}

impl fmt::Display for Synchronization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.write, self.read) {
            (false, false) => f.write_str("none"),
            (true, false) => f.write_str("write"),
            (false, true) => f.write_str("read"),
            (true, true) => f.write_str("write+read"),
        }
    }
}

/// Static facts about the function a statement sits in, for typing operands.
#[derive(Clone, Copy)]
pub struct Context<'p> {
    pub program: &'p TypedProgram,
    pub function: &'p Function,
}

impl<'p> Context<'p> {
    fn type_of<'a>(&self, arg: &'a Arg) -> Option<&'a Type>
    where
        'p: 'a,
    {
        match arg {
            Arg::Operand(operand) => Some(operand_type_ref(self.program, self.function, operand)),
            Arg::Function(..) => None,
        }
    }
}

/// The device of a statement.
pub fn statement_device(cx: Context<'_>, stmt: &Stmt) -> Device {
    match &stmt.kind {
        StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => expr_properties(cx, expr, None).0,
        // Control stays on the host; a declaration does no work.
        _ => Device::Cpu,
    }
}

/// The synchronization behaviour of a statement, as seen from the argument at `position`
/// (`None`: the statement as a whole, for its outgoing edges).
pub fn statement_sync(cx: Context<'_>, stmt: &Stmt, position: Option<usize>) -> CallSync {
    match &stmt.kind {
        StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => {
            expr_properties(cx, expr, position).1
        }
        _ => CallSync::default(),
    }
}

/// The synchronization of the dependence `parent → child` through a value that `child` reads
/// at the argument positions `positions` (`None` entries: not a call argument).
pub fn edge_synchronization(
    cx: Context<'_>,
    parent: &Stmt,
    child: &Stmt,
    positions: &[Option<usize>],
) -> Synchronization {
    let source = statement_sync(cx, parent, None);
    let mut destination = CallSync::default();
    for &position in positions {
        let at = statement_sync(cx, child, position);
        destination.reads |= at.reads;
        destination.raze |= at.raze;
    }
    if source.reduction && destination.raze {
        return Synchronization::default();
    }
    Synchronization {
        write: source.writes,
        read: destination.reads,
    }
}

fn expr_properties(cx: Context<'_>, expr: &Expr, position: Option<usize>) -> (Device, CallSync) {
    match &expr.kind {
        ExprKind::Call { callee, args } => call_properties(cx, *callee, args, position),
        ExprKind::CheckCast { expr, .. } => expr_properties(cx, expr, position),
        // A copy of a local can live in a kernel; materializing a literal is host work.
        ExprKind::Operand(Operand::Local(..)) => (Device::Gpu, CallSync::default()),
        ExprKind::Operand(_) => (Device::Cpu, CallSync::default()),
    }
}

/// Device and synchronization of a call, seen from the argument at `position`.
pub fn call_properties(
    cx: Context<'_>,
    callee: Callee,
    args: &[Arg],
    position: Option<usize>,
) -> (Device, CallSync) {
    let builtin = match callee {
        Callee::Builtin(builtin) => builtin,
        // No interprocedural analysis yet: a user function is an opaque host call.
        Callee::Function(_) => return (Device::Cpu, CallSync::default()),
    };
    let none = CallSync::default();
    let reads_at = |gathered: usize| CallSync {
        reads: position == Some(gathered),
        ..CallSync::default()
    };
    let first_is_list = || {
        args.first()
            .and_then(|a| cx.type_of(a))
            .is_some_and(|t| matches!(t, Type::List(_)))
    };
    use Builtin as B;
    match builtin {
        // Element-wise, unary and binary, on any basic type (strings are dictionary codes).
        B::Abs
        | B::Neg
        | B::Ceil
        | B::Floor
        | B::Round
        | B::Conj
        | B::Recip
        | B::Signum
        | B::Pi
        | B::Not
        | B::Log
        | B::Exp
        | B::Log2
        | B::Log10
        | B::Sqrt
        | B::Cos
        | B::Sin
        | B::Tan
        | B::Acos
        | B::Asin
        | B::Atan
        | B::Cosh
        | B::Sinh
        | B::Tanh
        | B::Acosh
        | B::Asinh
        | B::Atanh
        | B::Date
        | B::DateYear
        | B::DateMonth
        | B::DateDay
        | B::Time
        | B::TimeHour
        | B::TimeMinute
        | B::TimeSecond
        | B::TimeMill
        | B::DatetimeAdd
        | B::DatetimeSub
        | B::DatetimeDiff
        | B::Lt
        | B::Gt
        | B::Leq
        | B::Geq
        | B::Eq
        | B::Neq
        | B::Plus
        | B::Minus
        | B::Mul
        | B::Div
        | B::Power
        | B::Logb
        | B::Mod
        | B::And
        | B::Or
        | B::Nand
        | B::Nor
        | B::Xor
        | B::Range
        | B::Fact
        | B::Randk
        | B::Vector => (Device::Gpu, none),
        // A contiguous run of their argument: sliced where the value is, a device vector on
        // the device (runtime `gpu/slice.rs`), never fused.
        B::Take | B::Drop => (Device::Library, none),
        // Compression geometry: the mask is applied lazily, no barrier.
        B::Compress | B::Where => (Device::Gpu, none),
        // Reads its input back to front.
        B::Reverse => (Device::Gpu, reads_at(0)),
        // A hash table on the first argument, probed by the second: a library kernel.
        B::IndexOf => (Device::Library, none),
        B::Index => {
            if first_is_list() {
                // Taking a cell of a list is bookkeeping on the host.
                (Device::Cpu, none)
            } else {
                (Device::Gpu, reads_at(0))
            }
        }
        B::Append => {
            if first_is_list() {
                (Device::Cpu, none)
            } else {
                (Device::Gpu, reads_at(0))
            }
        }
        // A list of one-element cells: a step of its own (the engine builds a device vector's
        // list on the device), whose cells give the geometry of the list kernels after it.
        // Fused, it left its kernel without an input list for its cells, on the CPU.
        B::ToList => (Device::Library, none),
        B::Len | B::Count | B::Sum | B::Avg | B::Min | B::Max => (
            Device::Gpu,
            CallSync {
                writes: true,
                reduction: true,
                ..CallSync::default()
            },
        ),
        B::Raze => (
            Device::Gpu,
            CallSync {
                writes: true,
                raze: true,
                ..CallSync::default()
            },
        ),
        B::Each | B::EachItem | B::EachLeft | B::EachRight => {
            // The properties of the function applied to each cell, with the argument
            // positions shifted past the function literal.
            let (Some(Arg::Function(nested, _)), Some(cells)) = (args.first(), args.get(1..))
            else {
                return (Device::Cpu, none);
            };
            let nested_position = match position {
                Some(0) => return (call_properties(cx, *nested, cells, None).0, none),
                Some(p) => Some(p - 1),
                None => None,
            };
            call_properties(cx, *nested, cells, nested_position)
        }
        B::IndexA => (
            Device::Library,
            CallSync {
                writes: true,
                reads: position == Some(0),
                ..CallSync::default()
            },
        ),
        B::Unique | B::Group | B::Order | B::JoinIndex | B::Member | B::Like | B::SubString => {
            (Device::Library, none)
        }
        // Graph builtins are whole-operation library kernels: `@csr` a counting sort of the
        // edges, the searches the IBFS kernel (runtime `graph::gpu`).
        B::Csr | B::ShortestPathLength | B::Reachable | B::ReachIndex => (Device::Library, none),
        // Relation builtins (Datalog) are whole-operation library kernels (`gpu/relation.rs`).
        B::TupleUnique
        | B::TupleDiff
        | B::TupleMerge
        | B::SortedJoin
        | B::JoinUnique
        | B::MultiwayJoin
        | B::MultiwayCount => (Device::Library, none),
        // The fused `@group` and reductions (`gpu/group_aggregate.rs`).
        B::GroupAggregate => (Device::Library, none),
        B::Str
        | B::Rand
        | B::Seed
        | B::Flip
        | B::List
        | B::Enlist
        | B::Match
        | B::Enum
        | B::Dict
        | B::Table
        | B::KTable
        | B::Keys
        | B::Values
        | B::Meta
        | B::ColumnValue
        | B::LoadTable
        | B::Fetch
        | B::LoadCsv
        | B::Print
        | B::Format => (Device::Cpu, none),
    }
}
