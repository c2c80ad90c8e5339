//! Launch descriptions of generated kernels: everything the GPU engine needs to run one
//! compiled kernel module without re-deriving anything from the program.
//!
//! The compiler (`horsec::codegen`) writes one [`KernelLaunch`] per kernel: the WGSL text, the
//! buffers it binds ([`Binding`]), the words of its parameter uniform ([`ParamField`]), the
//! ordered passes to run ([`Pass`]) and, for each value it produces, how long it is
//! ([`KernelOutput`]). Values are named by their plan [`Slot`] (the lowering maps the typed
//! program's local `k` to slot `k`).
//!
//! Conventions every generated module follows:
//! - Group 0, binding 0 is the parameter uniform: one `u32` per [`ParamField`], in order,
//!   padded with zero words to a multiple of four.
//! - Every other binding is a storage buffer of [`GpuElement`]s, in the order of
//!   [`KernelLaunch::bindings`].
//! - Every entry point runs [`KERNEL_WORKGROUP_SIZE`] invocations per workgroup and loops
//!   grid-stride, so the engine may dispatch fewer workgroups than the data needs; the exact
//!   count is given by [`Dispatch::workgroups`], which reductions rely on for their partials.
//! - Data layout (DESIGN.md): bool/char as `u32` words, i8/i16/i32 and the day- or
//!   unit-counting temporal types as `i32`, i64 and `dt` as `i64`, f32/f64 native, sym/str as
//!   `u32` codes into the column's sorted dictionary. A list is a flat values buffer plus an
//!   offsets buffer of `cells + 1` `u32` (cell `c` is `values[offsets[c]..offsets[c+1]]`). An
//!   enum is its key column (`EnumKeys`) plus the i64 row positions (`EnumIndex`).

use crate::plan::{Location, Slot};
use crate::types::Type;

/// Invocations per workgroup of every generated entry point.
pub const KERNEL_WORKGROUP_SIZE: u32 = 256;
/// Most workgroups one dispatch may use in a dimension (WebGPU's minimum limit).
pub const MAX_DISPATCH_WORKGROUPS: u32 = 65_535;
/// Workgroups of a reducing pass: one partial result per workgroup, combined by the last of
/// them to finish (each of its invocations folds `MAX_REDUCTION_WORKGROUPS /
/// KERNEL_WORKGROUP_SIZE` partials in a fixed order, the same whichever workgroup is last).
///
/// About one wave of 256-invocation workgroups on a large GPU: TPC-H q6's pass at SF 1 on an
/// H200 (132 SMs) took 124 µs of GPU time with 132 workgroups, 70 with 264, 47 with 528, 42
/// with 792 and 40 with 1024; then 45 with 2048, 50 with 4096, 61 with 8192 and 112 with
/// 32768, where the last workgroup's fold of the partials grows. q1, q12, q14 and q19 did
/// not change.
pub const MAX_REDUCTION_WORKGROUPS: u32 = 1024;

/// One generated kernel, ready to launch.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLaunch {
    /// Unique within the program: `<function>_k<n>`; also the WGSL file's stem.
    pub name: String,
    /// The WGSL module, validated by naga when it was generated.
    pub wgsl: String,
    /// Device features the module needs.
    pub features: KernelFeatures,
    /// Storage buffers, in binding order (group 0, bindings 1, 2, …).
    pub bindings: Vec<Binding>,
    /// Words of the parameter uniform (group 0, binding 0), in order.
    pub params: Vec<ParamField>,
    /// Scratch buffers the engine allocates for the launch and frees after it.
    pub scratch: Vec<Scratch>,
    /// What to run, in order; each pass sees the writes of the previous ones.
    pub passes: Vec<Pass>,
    /// The values the kernel produces (the kernel's live-out locals), with their lengths.
    pub outputs: Vec<KernelOutput>,
    /// Conditions the engine must establish before the launch.
    pub requirements: Vec<LaunchRequirement>,
    /// Errors the kernel can detect (an index out of range, a minimum of no elements): the
    /// engine reads the status scratch after the launch and fails with the message of the
    /// first check whose bit is set, as the CPU backend would.
    pub checks: Vec<StatusCheck>,
    /// Argument checks the engine makes on resolved lengths and counts before it launches
    /// anything, in statement order: the same rules, and the same messages, as the CPU
    /// builtins (sizes the compiler could not prove equal).
    pub launch_checks: Vec<LaunchCheck>,
}

/// Where in the source a check belongs: the statement whose builtin it checks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckSite {
    /// Byte offset of the statement in the source (set by the code generator).
    pub offset: usize,
    /// Its line and column (set when the program is lowered, which knows the source).
    pub at: Option<Location>,
}

/// A check of one builtin's arguments made before the launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchCheck {
    /// The builtin's name without `@` (messages read `@name: …`, as the CPU's do).
    pub builtin: String,
    pub rule: LaunchRule,
    pub site: CheckSite,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LaunchRule {
    /// Element-wise binary: equal lengths, or one side of length 1
    /// (`length mismatch (n vs m)`).
    Broadcast(Length, Length),
    /// `@compress(mask, x)`: the mask as long as the data (`length mismatch (mask n vs m)`).
    MaskLength(Length, Length),
    /// The count `n` of `@vector(n, v)`: one non-negative integer whose elements of
    /// `element_bytes` fit in memory (`cannot make n elements: …`, as
    /// [`crate::sizes::checked_count`] says).
    Count { count: Slot, element_bytes: u64 },
}

/// An error condition the kernel reports through a bit of a `Status` scratch word.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusCheck {
    pub status: ScratchId,
    /// The bit (0–31) of `status[0]` the kernel sets (with `atomicOr`) on this error.
    pub bit: u32,
    pub message: String,
    pub site: CheckSite,
    /// How the engine names the first failing element as the CPU does, where it can; else
    /// the run fails with `message`.
    pub report: Option<CheckReport>,
}

/// What an error message names, and where the engine finds it after the launch.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckReport {
    /// An index checked against a length: `@index: index 7 out of range for length 5`.
    Index(IndexReport),
    /// A temporal value shifted by an integer out of its range
    /// (`@plus: 1996-01-02:date plus 9223372036854775807: the result overflows`, as
    /// [`crate::temporal::shift`] says): an invocation whose shift fails records its element
    /// position `i` in the `Status`-purpose scratch `first` (`atomicMax(first[0], ~i)`, so
    /// the first position wins) and its two operands, as i64, at `operands[2i]` (the
    /// temporal value) and `operands[2i + 1]` (the amount).
    Shift {
        /// The builtin's name without `@` (`plus`, `minus`, `datetime_add`, `datetime_sub`).
        builtin: String,
        /// The temporal type of the value and of the result.
        ty: Type,
        minus: bool,
        /// The unit of `@datetime_add`/`@datetime_sub` (`year`, `day`, …), whose message
        /// [`crate::temporal::datetime_shift`] writes; None for `@plus`/`@minus`.
        unit: Option<String>,
        first: ScratchId,
        operands: ScratchId,
    },
    /// A factorial that is not an i64 (`@fact: 21! is not an i64`, as
    /// [`crate::numeric::factorial`] says): an invocation whose argument fails records its
    /// position in `first`, as [`CheckReport::Shift`] does, and the argument, as i64, at
    /// `arguments[i]`.
    Factorial {
        first: ScratchId,
        arguments: ScratchId,
    },
}

/// The index and length an index check compares, for the CPU's message.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexReport {
    /// The builtin's name without `@`.
    pub builtin: String,
    /// Where the engine finds the first index out of range.
    pub index: IndexSource,
    /// The length the indexes must be below.
    pub length: Length,
}

/// Elements of the scratch buffers in which a kernel records the failing element of a check
/// ([`IndexSource::Device`], [`CheckReport::Shift`], [`CheckReport::Factorial`]): positions from this one on are not
/// recorded (the run then fails with the check's message, which names the vector read but not
/// the element), so a check costs at most this many elements of memory whatever the data.
pub const RECORDED_POSITIONS: u64 = 1 << 20;

/// Where the first index out of range can be read after the launch.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexSource {
    /// The index vector is an input of the kernel, read in order: the host's copy of it
    /// names the first index out of range.
    Input(Slot),
    /// The index is computed in the kernel (or a literal): an invocation whose index is out
    /// of range records its element position `i` in the `Status`-purpose scratch `first`,
    /// as `atomicMax(first[0], ~i)` (so the first position wins whatever the order the
    /// invocations ran in), and its index at `values[i]` (a scratch of the kernel's
    /// length, at most [`RECORDED_POSITIONS`], elements `element`).
    Device {
        first: ScratchId,
        values: ScratchId,
        element: GpuElement,
    },
}

/// Native features a module uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelFeatures {
    /// `i64`/`u64` (wgpu `SHADER_INT64`).
    pub int64: bool,
    /// `f64` (wgpu `SHADER_F64`).
    pub float64: bool,
}

/// The element type of a buffer as the GPU sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuElement {
    U32,
    I32,
    F32,
    I64,
    F64,
}

impl GpuElement {
    /// The storage element of a HorseIR vector type (see the module docs); `None` for types
    /// that have no GPU layout (complex, containers).
    pub fn of_type(ty: &Type) -> Option<GpuElement> {
        Some(match ty {
            Type::Bool | Type::Char | Type::Sym | Type::Str => GpuElement::U32,
            Type::I8 | Type::I16 | Type::I32 => GpuElement::I32,
            Type::Month | Type::Date | Type::Minute | Type::Second | Type::Time => GpuElement::I32,
            Type::I64 | Type::Dt => GpuElement::I64,
            Type::F32 => GpuElement::F32,
            Type::F64 => GpuElement::F64,
            _ => return None,
        })
    }

    /// The WGSL spelling.
    pub fn wgsl(self) -> &'static str {
        match self {
            GpuElement::U32 => "u32",
            GpuElement::I32 => "i32",
            GpuElement::F32 => "f32",
            GpuElement::I64 => "i64",
            GpuElement::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            GpuElement::U32 | GpuElement::I32 | GpuElement::F32 => 4,
            GpuElement::I64 | GpuElement::F64 => 8,
        }
    }
}

/// Which buffer of a value (vectors have one; lists and enums two).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValuePart {
    /// The elements of a vector.
    Elements,
    /// The flat values of a list.
    ListValues,
    /// The `cells + 1` `u32` offsets of a list.
    ListOffsets,
    /// The key column an enum refers to (its domain), whole.
    EnumKeys,
    /// The i64 row positions of an enum, one per row.
    EnumIndex,
    /// A copy of an output's elements that the kernel writes into a buffer the host maps
    /// (on a device with `MAPPABLE_PRIMARY_BUFFERS`), beside its [`ValuePart::Elements`]:
    /// the host reads a one-element result without a copy on the device (about 7 us of the
    /// round trip on an H200), while later kernels read the device's own buffer. Written
    /// only, and only for outputs of a constant capacity.
    HostReadable,
    /// A vector's elements as byte codes, bound beside its [`ValuePart::Elements`]: where the
    /// engine has coded the vector (a host vector with few distinct elements, see
    /// [`CODED_DICTIONARY`]), the kernel reads a byte per element instead of four or eight,
    /// and the engine binds this buffer in both places; elsewhere it binds the elements in
    /// both. The kernel reads whichever [`coded_override`] says.
    Coded,
}

/// Distinct elements a coded vector may hold (a code is one byte). Its buffer holds
/// [`CODED_DICTIONARY`] elements in their storage words (the dictionary; codes index it),
/// then the codes of the elements in order, four to a `u32` word, the first in the low byte.
pub const CODED_DICTIONARY: usize = 256;

/// The pipeline-overridable `bool` constant of a kernel that says whether the engine bound
/// the input of binding `coded_binding` (a [`ValuePart::Coded`] one) coded.
pub fn coded_override(coded_binding: &str) -> String {
    format!("{coded_binding}_in_use")
}

/// A scratch buffer of a launch: index into [`KernelLaunch::scratch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScratchId(pub usize);

/// A buffer the engine allocates for one launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Scratch {
    pub element: GpuElement,
    pub elements: Length,
    pub purpose: ScratchPurpose,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ScratchPurpose {
    /// One partial result per workgroup of a reducing pass
    /// ([`MAX_REDUCTION_WORKGROUPS`] elements), or per piece of a split cell: each workgroup
    /// writes its own, and the workgroup or pass folding them reads only those of the
    /// workgroups (pieces) that ran.
    Partials,
    /// One `u32` flag (0/1) per thread: is the element kept by the compaction.
    Flags,
    /// The exclusive prefix sum of a `Flags` buffer, with the total last (`n + 1` elements).
    Offsets,
    /// The cells a thread-per-cell pass left to the workgroup-per-cell pass (longer than
    /// [`THREAD_CELL_MAX`]): their count, then their indexes (`cells + 1` zeroed `u32`,
    /// bound as `array<atomic<u32>>`).
    LongCells,
    /// One zero-initialised `u32` of error bits (see [`StatusCheck`]), or the complement
    /// of the first position an index check failed at ([`IndexSource::Device`]), bound as
    /// `array<atomic<u32>>`.
    Status,
    /// The indexes an index check found out of range, at their element positions
    /// ([`IndexSource::Device`]); only those positions are written.
    BadIndexes,
    /// A grouped kernel's key slots: per accumulating workgroup, the mask of the entries of
    /// the kernel's seen slots (see [`ScratchPurpose::WorkgroupsDone`]) it wrote sums of.
    /// Each workgroup writes its own, and only the dispatched workgroups' are read.
    GroupSlots,
    /// A grouped kernel's decline flag (word 0, not 0 when it declined) and group count
    /// (word 1, 0 when it declined), both written by the workgroup that settles the groups
    /// (see [`ScratchPurpose::WorkgroupsDone`]): the count is read as a [`Length::Compacted`].
    GroupCount,
    /// A grouped kernel's sums: per accumulating workgroup, those of the slots it met, and
    /// per group their totals. Each is written before anything reads it.
    GroupSums,
    /// What the host reads after a grouped kernel, in one buffer it maps (where the device
    /// allows it: `Device::host_readable_scratch`): the `count` scratch's two words (the
    /// decline flag and the group count), then from each word offset of `outputs` that
    /// output's elements, at its capacity. The workgroup that settles the groups writes
    /// them only there, so the read-back is one mapping (no gather pass, no copy and no
    /// second submission after the kernel), and those outputs bind no buffer of their own:
    /// the launch makes them host values from these words.
    GroupResults {
        count: ScratchId,
        /// (index in [`KernelLaunch::outputs`], word offset).
        outputs: Vec<(usize, u64)>,
    },
    /// The count of a pass's workgroups done (an `atomic<u32>`): the last one to count
    /// itself finishes the pass's work (a grouped kernel's settle, a reduction's fold of the
    /// partials) and sets the count back to zero. A grouped kernel's follow: its decline
    /// flag and the slots its workgroups met (claimed as each ends), which the settle reads
    /// and sets back to zero too. So the buffer is the kernel's own, kept across its
    /// launches and zeroed once, when it is made: a clear per launch was a command to
    /// record and a fill on the device every run.
    WorkgroupsDone,
}

impl ScratchPurpose {
    /// Whether the kernel binds the buffer as `array<atomic<u32>>`: words its invocations
    /// update together (status bits, the long-cell list's count, the workgroups done).
    pub fn atomic(&self) -> bool {
        matches!(
            self,
            ScratchPurpose::Status | ScratchPurpose::LongCells | ScratchPurpose::WorkgroupsDone
        )
    }

    /// Whether the buffer is the kernel's own across launches (see
    /// [`ScratchPurpose::WorkgroupsDone`]): zeroed when it is made, then left to the kernel,
    /// which leaves it zero.
    pub fn kept(&self) -> bool {
        matches!(self, ScratchPurpose::WorkgroupsDone)
    }

    /// Whether the kernel relies on the buffer starting at zero (status words, flags,
    /// counters); the others it writes before it reads them, and their clear would only
    /// cost a command to record and a fill on the device every launch.
    pub fn zeroed(&self) -> bool {
        !matches!(
            self,
            ScratchPurpose::Partials
                | ScratchPurpose::GroupSlots
                | ScratchPurpose::GroupCount
                | ScratchPurpose::GroupSums
                | ScratchPurpose::GroupResults { .. }
        )
    }

    /// Whether the host reads the buffer whole after the launch, so that it is placed where
    /// the host maps it (see [`ScratchPurpose::GroupResults`]).
    pub fn host_read(&self) -> bool {
        matches!(self, ScratchPurpose::GroupResults { .. })
    }
}

/// What a storage binding holds.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferRef {
    /// A value the kernel reads, defined before it.
    Input {
        slot: Slot,
        part: ValuePart,
    },
    /// A value the kernel writes (see [`KernelOutput`] for its length and capacity).
    Output {
        slot: Slot,
        part: ValuePart,
    },
    Scratch(ScratchId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
}

/// One storage buffer binding (group 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub group: u32,
    pub binding: u32,
    /// The WGSL variable name (for messages and debugging).
    pub name: String,
    pub buffer: BufferRef,
    pub element: GpuElement,
    pub access: Access,
}

/// A length the engine knows (or reads back) at launch time.
#[derive(Clone, Debug, PartialEq)]
pub enum Length {
    Constant(u64),
    /// The elements of a vector input, the cells of a list input (`part: ListOffsets`, i.e.
    /// offsets minus one), the flat values of a list input (`ListValues`) or the rows of an
    /// enum input (`EnumIndex`).
    Of {
        slot: Slot,
        part: ValuePart,
    },
    /// The value of a one-element integer input (the `n` of `@vector(n, v)`).
    ValueOf(Slot),
    /// The sum of two lengths (the result of `@append`).
    Sum(Box<Length>, Box<Length>),
    /// The length of an element-wise result: the common length, or the other side's where
    /// one side has length 1 (a mismatch is refused by a [`LaunchRule::Broadcast`] check).
    Broadcast(Box<Length>, Box<Length>),
    /// The larger of two lengths: the threads of a kernel whose values the compiler could
    /// not prove equally long (each value is written and reduced only below its own length).
    Max(Box<Length>, Box<Length>),
    /// The smaller of two lengths (a scratch buffer capped at a constant).
    Min(Box<Length>, Box<Length>),
    /// The count a compaction kept: the last element of an `Offsets` scratch buffer, known
    /// once the passes before have run (read back, or used on the device).
    Compacted(ScratchId),
}

impl Length {
    /// The compactions whose counts make this length ([`Length::Compacted`], which the
    /// engine reads back after the passes before it), added to `out` once each.
    pub fn compactions(&self, out: &mut Vec<ScratchId>) {
        self.for_each_compaction(&mut |id| {
            if !out.contains(&id) {
                out.push(id);
            }
        });
    }

    /// Calls `f` with each compaction whose count makes this length, in order (repeats
    /// included).
    pub fn for_each_compaction(&self, f: &mut impl FnMut(ScratchId)) {
        match self {
            Length::Compacted(id) => f(*id),
            Length::Sum(a, b) | Length::Broadcast(a, b) | Length::Max(a, b) | Length::Min(a, b) => {
                a.for_each_compaction(f);
                b.for_each_compaction(f);
            }
            Length::Constant(_) | Length::Of { .. } | Length::ValueOf(_) => {}
        }
    }

    /// Whether a compaction's count makes this length (see [`Length::compactions`]), asked
    /// without collecting them.
    pub fn has_compaction(&self) -> bool {
        match self {
            Length::Compacted(_) => true,
            Length::Sum(a, b) | Length::Broadcast(a, b) | Length::Max(a, b) | Length::Min(a, b) => {
                a.has_compaction() || b.has_compaction()
            }
            Length::Constant(_) | Length::Of { .. } | Length::ValueOf(_) => false,
        }
    }

    /// This length with every occurrence of `from` (a whole sub-expression) replaced by `to`.
    pub fn substitute(&self, from: &Length, to: &Length) -> Length {
        if self == from {
            return to.clone();
        }
        let both = |a: &Length, b: &Length| {
            (
                Box::new(a.substitute(from, to)),
                Box::new(b.substitute(from, to)),
            )
        };
        match self {
            Length::Sum(a, b) => {
                let (a, b) = both(a, b);
                Length::Sum(a, b)
            }
            Length::Broadcast(a, b) => {
                let (a, b) = both(a, b);
                Length::Broadcast(a, b)
            }
            Length::Max(a, b) => {
                let (a, b) = both(a, b);
                Length::Max(a, b)
            }
            Length::Min(a, b) => {
                let (a, b) = both(a, b);
                Length::Min(a, b)
            }
            other => other.clone(),
        }
    }
}

/// One `u32` word of the parameter uniform.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamField {
    /// The WGSL field name.
    pub name: String,
    pub value: ParamValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A length, as `u32` (the engine refuses lengths of 2³² or more).
    Length(Length),
    /// The workgroups [`Dispatch::workgroups`] gives pass `pass` (the number of partials a
    /// reduction's first pass wrote).
    Workgroups { pass: usize },
    /// Resolved at launch: the number of strings of `slot`'s dictionary that sort strictly
    /// before `text`. With [`ParamValue::SymbolUpper`] it turns a comparison with a string
    /// literal into code comparisons: `x < s` is `code < lower`, `x <= s` is `code < upper`,
    /// `x == s` is `lower <= code < upper` (empty when `s` is not in the dictionary).
    SymbolLower { text: String, slot: Slot },
    /// Resolved at launch: the number of strings of `slot`'s dictionary that sort before or
    /// equal to `text`.
    SymbolUpper { text: String, slot: Slot },
    /// The pieces each cell is split into under [`CellStrategy::Split`] (1 otherwise), for
    /// the kernel's [`Pass::Cells`].
    CellSplits,
    /// 1 under [`CellStrategy::Thread`]: the workgroup-per-cell entry reduces only the cells
    /// the thread-per-cell entry listed in its [`ScratchPurpose::LongCells`] scratch; 0: every
    /// cell.
    LongCellsListed,
    /// Always 0, a word the shader compiler cannot know: kernels make IEEE special values by
    /// OR-ing their bits with it, so that no infinity or NaN is a constant the driver folds
    /// (see codegen's `Helper::Specials`).
    Zero,
}

/// How many workgroups a pass runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Dispatch {
    /// Threads over `length` elements, grid-stride: `workgroups()` is
    /// `clamp(ceil(length / KERNEL_WORKGROUP_SIZE), 1, max_workgroups)`.
    Elements { length: Length, max_workgroups: u32 },
    /// Exactly one workgroup.
    Single,
}

impl Dispatch {
    /// The workgroup count for the resolved length (`length` ignored for `Single`).
    pub fn workgroups(&self, length: u64) -> u32 {
        let clamp = |wanted: u64, max: u32| wanted.clamp(1, u64::from(max)) as u32;
        match self {
            Dispatch::Elements { max_workgroups, .. } => clamp(
                length.div_ceil(u64::from(KERNEL_WORKGROUP_SIZE)),
                *max_workgroups,
            ),
            Dispatch::Single => 1,
        }
    }

    /// The length the workgroup count derives from (none for `Single`).
    pub fn length(&self) -> Option<&Length> {
        match self {
            Dispatch::Elements { length, .. } => Some(length),
            Dispatch::Single => None,
        }
    }
}

/// One step of a launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Pass {
    /// An entry point of the kernel's module, with all of [`KernelLaunch::bindings`] bound.
    Entry {
        entry_point: String,
        dispatch: Dispatch,
    },
    /// The per-cell work of a list kernel, by the strategy [`CellStrategy::choose`] picks
    /// from the geometry at launch time.
    Cells(CellPasses),
    /// The runtime's library exclusive scan (`gpu::scan`): `offsets[i]` = number of non-zero
    /// `flags[j]` with `j < i`, `offsets[length]` = the total.
    ExclusiveScan {
        flags: ScratchId,
        offsets: ScratchId,
        length: Length,
    },
}

/// The entry points of a list kernel's per-cell work, one set per [`CellStrategy`]. Every
/// element is visited by exactly one of the entries a strategy runs, and every cell is
/// finished (its statements after the reductions run, its values written) by exactly one.
#[derive(Clone, Debug, PartialEq)]
pub struct CellPasses {
    pub cells: Length,
    /// The flat elements of all cells.
    pub values: Length,
    /// A workgroup per cell (grid-stride over cells), tree reductions; under
    /// [`ParamValue::LongCellsListed`] only over the cells the thread entry listed.
    pub per_workgroup: String,
    /// A thread per cell (grid-stride), folding the cell in order; it lists the cells longer
    /// than [`THREAD_CELL_MAX`] for the workgroup entry instead.
    pub per_thread: String,
    /// A workgroup per piece of a cell (`cells × splits` workgroups): each writes one partial
    /// per reduction to [`ScratchPurpose::Partials`] buffers of [`MAX_CELL_PARTIALS`].
    pub split: String,
    /// A thread per cell: folds the cell's partials in piece order and finishes the cell.
    pub combine: String,
}

/// Cells longer than this are not reduced by a single thread.
pub const THREAD_CELL_MAX: u32 = 64;
/// Mean cell length up to which cells are reduced a thread each.
pub const THREAD_CELL_MEAN: u64 = 32;
/// Elements one workgroup of the split strategy aims to reduce.
pub const SPLIT_PIECE_ELEMENTS: u64 = 4096;
/// Partials of the split strategy (`cells × splits` at most): the capacity of its scratch.
pub const MAX_CELL_PARTIALS: u32 = 4096;

/// How a list kernel reduces its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellStrategy {
    /// Many short cells: a thread per cell, then a workgroup per cell for the few cells
    /// longer than [`THREAD_CELL_MAX`].
    Thread,
    /// A workgroup per cell.
    Workgroup,
    /// Few long cells: each split into `splits` pieces reduced by a workgroup each, then the
    /// pieces' partials combined per cell in a fixed order.
    Split { splits: u32 },
}

/// The name of the environment variable that forces a strategy (`thread`, `workgroup` or
/// `split`), for tests and measurements.
pub const CELL_STRATEGY_ENV: &str = "HORSEC_CELL_STRATEGY";

/// The forced choice of [`CellStrategy::choose`]: the geometry still sets the splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForcedCells {
    Thread,
    Workgroup,
    Split,
}

impl ForcedCells {
    pub fn parse(text: &str) -> Option<ForcedCells> {
        match text {
            "thread" => Some(ForcedCells::Thread),
            "workgroup" => Some(ForcedCells::Workgroup),
            "split" => Some(ForcedCells::Split),
            _ => None,
        }
    }
}

std::thread_local! {
    static FORCED_CELLS: std::cell::Cell<Option<ForcedCells>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every list kernel launched on this thread using `forced` (tests compare the
/// strategies on one geometry; the setting is per thread so tests may run in parallel).
pub fn with_cell_strategy<R>(forced: ForcedCells, f: impl FnOnce() -> R) -> R {
    /// Puts the previous setting back, also when `f` panics.
    struct Restore(Option<ForcedCells>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED_CELLS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED_CELLS.with(|c| c.replace(Some(forced))));
    f()
}

impl CellStrategy {
    /// The strategy for `cells` cells of `values` elements in all: a thread per cell when the
    /// mean cell is short, pieces of about [`SPLIT_PIECE_ELEMENTS`] when cells are few and
    /// long, a workgroup per cell between. [`with_cell_strategy`] or [`CELL_STRATEGY_ENV`]
    /// force one.
    pub fn choose(cells: u64, values: u64) -> CellStrategy {
        let forced = FORCED_CELLS.with(|c| c.get()).or_else(|| {
            std::env::var(CELL_STRATEGY_ENV)
                .ok()
                .and_then(|v| ForcedCells::parse(v.trim()))
        });
        let cells = cells.max(1);
        let most_splits = (u64::from(MAX_CELL_PARTIALS) / cells).max(1);
        let wanted = values.div_ceil(cells).div_ceil(SPLIT_PIECE_ELEMENTS);
        match forced {
            Some(ForcedCells::Thread) => CellStrategy::Thread,
            Some(ForcedCells::Workgroup) => CellStrategy::Workgroup,
            // At least four pieces where the partials allow, so small data splits too.
            Some(ForcedCells::Split) if cells <= u64::from(MAX_CELL_PARTIALS) => {
                CellStrategy::Split {
                    splits: wanted.max(4).min(most_splits) as u32,
                }
            }
            // More cells than partials: a workgroup per cell.
            Some(ForcedCells::Split) => CellStrategy::Workgroup,
            None if values <= cells * THREAD_CELL_MEAN => CellStrategy::Thread,
            None if wanted >= 2 && most_splits >= 2 => CellStrategy::Split {
                splits: wanted.min(most_splits) as u32,
            },
            None => CellStrategy::Workgroup,
        }
    }
}

/// How a produced value is laid out and how long it is.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputLayout {
    /// A vector of `length` elements in a buffer of at least `capacity` (they differ for a
    /// compacted output, whose length is only known after the launch).
    Vector { length: Length, capacity: Length },
    /// A list whose offsets are those of the input list `offsets_of` (the kernel writes only
    /// the flat values, `values` elements of them).
    List { offsets_of: Slot, values: Length },
    /// A list of `cells` one-element cells (a per-cell result such as `@each(@sum, l)`): the
    /// kernel writes `cells` values; the offsets are `0, 1, …, cells`.
    ListOfScalars { cells: Length },
    /// A one-element bool on the host: word `word` of a two-word scratch buffer (not 0:
    /// true), whose other word is a compaction's count ([`Length::Compacted`]); the engine
    /// reads both words back at once (a grouped kernel's decline flag and group count).
    Flag { scratch: ScratchId, word: usize },
}

impl OutputLayout {
    /// The elements the kernel writes (None for a flag, which is a scratch buffer's word).
    pub fn length(&self) -> Option<&Length> {
        match self {
            OutputLayout::Vector { length, .. } => Some(length),
            OutputLayout::List { values, .. } => Some(values),
            OutputLayout::ListOfScalars { cells } => Some(cells),
            OutputLayout::Flag { .. } => None,
        }
    }
}

/// Whose dictionary the codes of a sym/str output index.
#[derive(Clone, Debug, PartialEq)]
pub enum DictionarySource {
    /// The dictionary of an input value.
    Input(Slot),
    /// A dictionary of these strings, in this (sorted) order: codes of literals.
    Literal(Vec<String>),
}

/// A value the kernel produces.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelOutput {
    pub slot: Slot,
    /// The HorseIR type of the value (`list<T>` for a list output).
    pub ty: Type,
    pub layout: OutputLayout,
    /// For sym/str outputs: the dictionary its codes refer to.
    pub dictionary: Option<DictionarySource>,
}

/// Something the engine must ensure before it launches the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchRequirement {
    /// The two sym/str inputs are compared by code: their codes must index one dictionary
    /// (re-code one or both into a merged dictionary first).
    SameDictionary(Slot, Slot),
}
