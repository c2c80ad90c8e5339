//! The unit the outliner hands to code generation: one kernel, i.e. statements of one function
//! fused into a single GPU launch (or a short fixed sequence of launches for reductions).
//!
//! This type is the boundary between `outline` (which decides what is fused) and `codegen`
//! (which writes WGSL for it); neither reaches into the other's internals.

use crate::analysis::{Geometry, StmtId};
use crate::sema::typed::{FunctionId, LocalId};

use super::group_aggregate::FusedResult;

/// Index of a kernel in an outlined function's kernel list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(pub usize);

/// One fused GPU kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub id: KernelId,
    /// Unique within the program, a valid WGSL/HorseIR identifier: `<function>_k<n>`.
    pub name: String,
    /// The function whose statements it holds.
    pub function: FunctionId,
    /// The fused statements in program order (pre-order [`StmtId`]s of `function`). A
    /// compound statement (`if`/`while`/`repeat`) listed here brings its whole body with it.
    pub statements: Vec<StmtId>,
    /// The launch geometry: the largest operating geometry of its statements; statements
    /// over a compressed size run masked inside it.
    pub geometry: Geometry,
    /// Locals read by the kernel and defined outside it (parameters, earlier statements),
    /// in first-use order. Globals and literals are not listed: they are constants.
    pub inputs: Vec<LocalId>,
    /// Locals defined inside the kernel that are live after it (read by a later statement
    /// outside the kernel or returned), in definition order. A grouped kernel's are its
    /// aggregation's: `first`, the key outputs, then the results.
    pub outputs: Vec<LocalId>,
    /// A group aggregation the kernel does over its own rows, instead of writing them (see
    /// [`GroupedAggregation`]).
    pub grouped: Option<GroupedAggregation>,
}

/// A fused group aggregation (`@group_aggregate`) over values a kernel computes, done inside
/// the kernel: each row the kernel's masks keep is added to its group's accumulators, and
/// the compacted key and value columns are never written (see `outline::grouped`).
///
/// Every key column is a bool, char, i8 or i16, so a key is a slot in a small domain: each
/// workgroup adds its kept rows up per slot in registers, and the slots met are ranked in
/// key order afterwards (see `codegen::generate::grouped`). When there are more groups than
/// its registers hold the kernel *declines*: it sets the flag `declined` and writes
/// nothing, and the unfused statements run instead.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedAggregation {
    /// The key columns, most significant first: values of the kernel, as long as its kept
    /// rows.
    pub keys: Vec<LocalId>,
    /// The target of `@keys(groups)`. The kernel writes the group numbers `0, 1, …` there:
    /// every key column it writes holds one key per group, so `@index(key, first)` reads
    /// each group's key as before.
    pub first: Option<LocalId>,
    /// The key columns read later (only through `@index(key, first)`), written with one
    /// element per group.
    pub key_outputs: Vec<LocalId>,
    /// The reductions, each with its value column (a value of the kernel) and its target.
    pub results: Vec<FusedResult>,
    /// The statements the aggregation stands for (the key's list, the `@group` and the
    /// reductions over its lists), ascending: a printed kernel runs them after its own.
    pub statements: Vec<StmtId>,
    /// The statements of an element-wise kernel over the groups that followed the
    /// aggregation (q1's averages, `@div` of a sum by a count, and its `@index(key, first)`
    /// key lookups), run per group after it in the same launch, ascending. The results of
    /// a grouped kernel are a handful of rows read back with the group count: as a launch
    /// of its own, that kernel cost the query a second wait on the device. Its launch is
    /// the fallback's last step.
    pub epilogue: Vec<StmtId>,
    /// The one-element bool the kernel sets when it declined. Not a local of the function:
    /// the lowering gives it a plan slot of its own past the function's locals, numbered
    /// by this id.
    pub declined: LocalId,
}
