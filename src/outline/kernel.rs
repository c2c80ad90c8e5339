//! The unit the outliner hands to code generation: one kernel, i.e. statements of one function
//! fused into a single GPU launch (or a short fixed sequence of launches for reductions).
//!
//! This type is the boundary between `outline` (which decides what is fused) and `codegen`
//! (which writes WGSL for it); neither reaches into the other's internals.

use crate::analysis::{Geometry, StmtId};
use crate::sema::typed::{FunctionId, LocalId};

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
    /// outside the kernel or returned), in definition order.
    pub outputs: Vec<LocalId>,
}
