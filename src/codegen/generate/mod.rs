//! Writes the WGSL module and launch description of one kernel.
//!
//! A kernel runs in one of two layouts, chosen by its geometry:
//!
//! - **Vector** geometry of `n` elements: invocations loop grid-stride over `i < n`; every
//!   statement is evaluated at `i`. A statement of compressed geometry runs under an
//!   *activity* condition — the conjunction of the masks that compressed its operands (lazy
//!   compression: nothing is moved until a value must be written). Reductions accumulate per
//!   invocation, reduce per workgroup into partials, and a single-workgroup pass folds the
//!   partials in a fixed order. Live-out values of compressed geometry are compacted: a flags
//!   pass writes each activity condition, the runtime's exclusive scan turns the flags into
//!   positions, and the main pass scatters to them (reduce-then-scan; no look-back).
//! - **List** geometry of `cells` cells: one workgroup per cell (grid-stride over cells), its
//!   invocations striding over the cell's elements. Element-level statements (`@each` of an
//!   element-wise function, `@each_right(@index, x, l)`) run per element; `@each` of a
//!   reduction reduces the cell in the workgroup, and cell-level statements (`@raze`, `@each
//!   (@len, l)`, element-wise work on per-cell values) run once per cell, written by the
//!   workgroup's first invocation: `@raze` writes each cell's result in place.
//!
//! Every loop a kernel has ends (a bound from a length, a count or a constant) and every
//! index of a workgroup or private array is in range by construction: the runtime compiles
//! kernels without naga's loop counters and clamps (`trusted_runtime_checks` in the
//! runtime's `gpu::pipeline`).

/// Appends string pieces (anything that is `AsRef<str>`) to a `String`: the generator
/// writes most of its text from names and fixed pieces, and `write!`/`format!` spent more
/// time walking their format arguments than copying the text.
macro_rules! push {
    ($text:expr, $($piece:expr),+ $(,)?) => {{
        let text: &mut String = $text;
        $(text.push_str(AsRef::<str>::as_ref(&$piece));)+
    }};
}

/// The concatenation of string pieces, allocated once at its length (see [`push!`]).
macro_rules! cat {
    // (A match keeps the pieces' temporaries alive while they are copied.)
    ($($piece:expr),+ $(,)?) => {
        match [$(AsRef::<str>::as_ref(&$piece)),+] {
            pieces => {
                let mut text =
                    String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
                for piece in pieces {
                    text.push_str(piece);
                }
                text
            }
        }
    };
}

/// `n` in decimal, appended to `text` (without the formatting machinery, see [`push!`]).
fn push_decimal(text: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
}

mod access;
mod assemble;
mod cells;
mod checked;
mod coded;
use coded::InputReads;
mod constants;
mod elementwise;
mod exact;
mod grouped;
mod interface;
mod lengths;
mod reduce;
mod statements;

use std::collections::{BTreeMap, BTreeSet};

// Fx, not SipHash: the generator looks names, values and expressions up many times per
// statement, nothing iterates these maps in an order that reaches the output, and the keys
// come from the compiler, not from an adversary.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt::Write as _;

use horsec_runtime::builtin::Builtin;
use horsec_runtime::kernel::{
    Access, Binding, BufferRef, CheckReport, CheckSite, DictionarySource, Dispatch, GpuElement,
    IndexReport, IndexSource, KernelFeatures, KernelLaunch, KernelOutput, LaunchCheck,
    LaunchRequirement, LaunchRule, Length, OutputLayout, ParamField, ParamValue, Pass, Scratch,
    ScratchId, ScratchPurpose, StatusCheck, ValuePart, KERNEL_WORKGROUP_SIZE,
    MAX_DISPATCH_WORKGROUPS, MAX_REDUCTION_WORKGROUPS, RECORDED_POSITIONS,
};
use horsec_runtime::plan::Slot;
use horsec_runtime::types::Type;
use horsec_runtime::typing::compat::{assigned_type, converts_at_assignment};

use super::wgsl::{self, Helper};
use super::CodegenError;
use crate::analysis::statements::{label, StatementTree};
use crate::analysis::{FunctionAnalysis, Geometry, Shape, Size, StmtId};
use crate::outline::kernel::Kernel;
use crate::sema::typed::{
    Arg, Callee, Expr, ExprKind, Function, LocalId, Operand, StmtKind, Target, TypedProgram,
};
use crate::syntax::ast::{Literal, LiteralValue};

/// Where in the kernel a value exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Level {
    /// One value for every invocation (a literal, a one-element input).
    Scalar,
    /// One value per element: per `i` of a vector kernel, per list element of a list kernel.
    Element,
    /// One value per cell of a list kernel.
    Cell,
}

/// A value as the generated code sees it.
#[derive(Clone, Debug)]
struct Val {
    /// A WGSL expression in the value's register type.
    expr: String,
    /// The HorseIR type of one element (the cell type for a list).
    ty: Type,
    level: Level,
    /// Conjuncts under which the value exists (lazy compression); empty: everywhere.
    active: Vec<String>,
    /// For sym/str values: whose dictionary the codes index.
    dictionary: Option<DictionarySource>,
    /// A sym/str literal, compared through launch-resolved bounds.
    text: Option<String>,
    /// True when the value is a list (of elements or of per-cell scalars).
    list: bool,
}

impl Val {
    fn scalar(expr: String, ty: Type) -> Val {
        Val {
            expr,
            ty,
            level: Level::Scalar,
            active: Vec::new(),
            dictionary: None,
            text: None,
            list: false,
        }
    }

    /// One element per thread, everywhere, with the dictionary its codes index (sym/str).
    fn element(expr: String, ty: Type, dictionary: Option<DictionarySource>) -> Val {
        Val {
            expr,
            ty,
            level: Level::Element,
            active: Vec::new(),
            dictionary,
            text: None,
            list: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReduceOp {
    Sum,
    Min,
    Max,
    Count,
    Avg,
}

/// A reduction of the kernel: per launch (vector kernels) or per cell (list kernels).
#[derive(Clone, Debug)]
struct Reduction {
    op: ReduceOp,
    target: LocalId,
    /// The accumulator's WGSL type (`u32` for counts).
    acc: &'static str,
    /// The identity the accumulator starts from.
    identity: String,
    /// The value folded in, converted to the accumulator type, and when it counts.
    value: String,
    active: Vec<String>,
    /// Whether a count runs beside it (for `@avg`, and for the empty check of `@min`/`@max`).
    counted: bool,
    /// The status bit set when the reduced value has no elements.
    empty_bit: Option<u32>,
    /// HorseIR type of the result.
    result: Type,
    dictionary: Option<DictionarySource>,
}

enum Layout {
    Vector {
        size: Size,
        length: Length,
    },
    List {
        cells: Size,
        offsets_of: LocalId,
        shape: Shape,
    },
}

/// What every kernel of one function needs from the function, computed once for all of
/// them (per kernel it made code generation quadratic in the function's size).
pub(crate) struct FunctionCode<'a> {
    program: &'a TypedProgram,
    function: &'a Function,
    analysis: &'a FunctionAnalysis,
    tree: StatementTree<'a>,
    /// Each local's WGSL name, indexed by local.
    names: Vec<String>,
    /// The type of the values each local holds, as the typed program gives the expressions
    /// assigned to it, converted where the declaration converts a numeric value
    /// ([`converts_at_assignment`]: both backends convert it at the assignment); a list
    /// where a vector is declared keeps its own type.
    /// (Indexed by local; `None` where the declared type stands.)
    value_types: Vec<Option<Type>>,
}

impl<'a> FunctionCode<'a> {
    pub(crate) fn new(
        program: &'a TypedProgram,
        analysis: &'a FunctionAnalysis,
    ) -> Result<FunctionCode<'a>, CodegenError> {
        let function = program.functions.get(analysis.function.0).ok_or_else(|| {
            CodegenError::malformed(
                &format!("(function {})", analysis.function.0),
                "its function does not exist",
            )
        })?;
        let tree = StatementTree::new(function);
        let names = local_names(function);
        let value_types = value_types(function, &tree);
        Ok(FunctionCode {
            program,
            function,
            analysis,
            tree,
            names,
            value_types,
        })
    }
}

pub(crate) struct Generator<'a> {
    program: &'a TypedProgram,
    function: &'a Function,
    analysis: &'a FunctionAnalysis,
    kernel: &'a Kernel,
    tree: &'a StatementTree<'a>,
    layout: Layout,
    names: &'a [String],
    /// The type of the values each local holds (see [`FunctionCode`]).
    value_types: &'a [Option<Type>],
    values: HashMap<LocalId, Val>,
    bindings: Vec<Binding>,
    binding_names: HashMap<(LocalId, ValuePart, bool), String>,
    params: Vec<ParamField>,
    param_names: HashMap<String, ()>,
    scratch: Vec<Scratch>,
    element_lines: Vec<String>,
    /// Expressions that read an input at the current row, in bounds wherever the row is,
    /// with their register types.
    row_reads: BTreeMap<String, &'static str>,
    /// The variable already holding each (level, type, condition, expression) computed:
    /// a statement that repeats an earlier one reads its variable (see `define_checked`).
    computed: HashMap<(Level, &'static str, Vec<String>, String), String>,
    /// The leaves of each variable's value (see `exact`); None: not known.
    variable_leaves: HashMap<String, Option<BTreeSet<String>>>,
    /// Variables whose value may be a product (see `exact`).
    product_variables: HashSet<String>,
    /// Variables whose value may be the result of arithmetic (see `exact`).
    arithmetic_variables: HashSet<String>,
    cell_lines: Vec<String>,
    reductions: Vec<Reduction>,
    helpers: BTreeSet<Helper>,
    /// Module-scope `var<private>` holding the kernel's numeric literals: name, WGSL type
    /// and constant (see [`Generator::literal_val`]).
    constants: Vec<(String, &'static str, String)>,
    /// The value of each i64 integer literal's variable in `constants`, by its name.
    i64_constants: HashMap<String, i64>,
    requirements: Vec<LaunchRequirement>,
    checks: Vec<StatusCheck>,
    /// Argument checks the engine makes before the launch (lengths the compiler could not
    /// prove equal, counts).
    launch_checks: Vec<LaunchCheck>,
    /// The run-time length of each value the kernel defines (vector layout).
    lengths: HashMap<LocalId, Length>,
    /// The length of the value each reduction folds.
    reduced_lengths: HashMap<LocalId, Length>,
    /// Lengths of inputs read at the kernel's positions whose sizes the shape analysis
    /// could not prove equal to the geometry's: the launch covers the longest, and each
    /// read is clamped to its own buffer (a length-1 input is broadcast).
    unproven: Vec<Length>,
    /// Lengths a launch check proves equal to the geometry's (the data of a `@compress` by
    /// a mask of the geometry): they do not widen the launch.
    checked_equal: Vec<Length>,
    status: Option<ScratchId>,
    features: KernelFeatures,
    symbol_params: HashMap<(String, usize), (String, String)>,
    current: StmtId,
    /// True while a grouped kernel's epilogue is generated: its values are one per group,
    /// at group `i` of the loop over the groups (see `grouped_epilogue`).
    in_epilogue: bool,
}

impl<'a> Generator<'a> {
    pub(crate) fn new(
        code: &'a FunctionCode<'a>,
        kernel: &'a Kernel,
    ) -> Result<Generator<'a>, CodegenError> {
        if code.analysis.function != kernel.function {
            return Err(CodegenError::malformed(
                &kernel.name,
                "the analysis given is of another function",
            ));
        }
        let first =
            kernel.statements.first().copied().ok_or_else(|| {
                CodegenError::malformed(&kernel.name, "the kernel has no statements")
            })?;
        let statements = kernel.statements.len();
        let mut generator = Generator {
            program: code.program,
            function: code.function,
            analysis: code.analysis,
            kernel,
            tree: &code.tree,
            layout: Layout::Vector {
                size: Size::Constant(1),
                length: Length::Constant(1),
            },
            names: &code.names,
            value_types: &code.value_types,
            // The maps filled per statement start at the kernel's size (grown by rehashing,
            // they were a visible part of code generation).
            values: HashMap::with_capacity_and_hasher(statements, Default::default()),
            bindings: Vec::new(),
            binding_names: HashMap::with_capacity_and_hasher(statements, Default::default()),
            params: Vec::new(),
            param_names: HashMap::default(),
            scratch: Vec::new(),
            element_lines: Vec::new(),
            row_reads: BTreeMap::new(),
            computed: HashMap::with_capacity_and_hasher(statements, Default::default()),
            variable_leaves: HashMap::with_capacity_and_hasher(statements, Default::default()),
            product_variables: HashSet::default(),
            arithmetic_variables: HashSet::default(),
            cell_lines: Vec::new(),
            reductions: Vec::new(),
            helpers: BTreeSet::new(),
            constants: Vec::new(),
            i64_constants: HashMap::default(),
            requirements: Vec::new(),
            checks: Vec::new(),
            launch_checks: Vec::new(),
            lengths: HashMap::default(),
            reduced_lengths: HashMap::default(),
            unproven: Vec::new(),
            checked_equal: Vec::new(),
            status: None,
            features: KernelFeatures::default(),
            symbol_params: HashMap::default(),
            current: first,
            in_epilogue: false,
        };
        generator.layout = generator.choose_layout()?;
        Ok(generator)
    }

    fn error(&self, builtin: Option<Builtin>, reason: impl Into<String>) -> CodegenError {
        let statement = self
            .tree
            .stmt(self.current)
            .map(|stmt| label(self.program, self.function, stmt))
            .unwrap_or_else(|| format!("{}", self.current));
        // An error while the kernel's outputs are assembled names the statement that
        // defines the output (see `assemble`), so it is one of the kernel's too.
        let stmt = self
            .kernel
            .statements
            .contains(&self.current)
            .then_some(self.current);
        CodegenError::unsupported(&self.kernel.name, statement, builtin, reason.into(), stmt)
    }

    /// The kernel's last statement that assigns `local`.
    fn statement_defining(&self, local: LocalId) -> Option<StmtId> {
        self.kernel.statements.iter().rev().copied().find(|&id| {
            self.tree.stmt(id).is_some_and(|stmt| match &stmt.kind {
                StmtKind::Assign { targets, .. } => targets.contains(&Target::Local(local)),
                _ => false,
            })
        })
    }

    fn slot(local: LocalId) -> Slot {
        Slot(local.0)
    }

    fn local_type(&self, local: LocalId) -> Type {
        if let Some(Some(ty)) = self.value_types.get(local.0) {
            return ty.clone();
        }
        self.function
            .locals
            .get(local.0)
            .map(|l| l.ty.clone())
            .unwrap_or(Type::Wildcard)
    }

    fn name(&self, local: LocalId) -> String {
        self.names
            .get(local.0)
            .cloned()
            .unwrap_or_else(|| format!("local{}", local.0))
    }

    /// The shape of an input of the kernel, as the first kernel statement that sees it sees
    /// it (the outliner may fuse a statement that precedes the input's definition).
    fn shape_before_kernel(&self, local: LocalId) -> Option<&Shape> {
        self.kernel
            .statements
            .iter()
            .find_map(|id| self.analysis.shapes.before.get(id.0)?.get(&local))
    }

    fn choose_layout(&self) -> Result<Layout, CodegenError> {
        match &self.kernel.geometry {
            Geometry::Vector(size) => {
                let length = self.length_of_size(size)?;
                Ok(Layout::Vector {
                    size: size.clone(),
                    length,
                })
            }
            Geometry::List { cells, .. } => {
                for &input in &self.kernel.inputs {
                    if let Some(shape @ Shape::List(c, _)) = self.shape_before_kernel(input) {
                        if c == cells {
                            return Ok(Layout::List {
                                cells: cells.clone(),
                                offsets_of: input,
                                shape: shape.clone(),
                            });
                        }
                    }
                }
                Err(CodegenError::unsupported(
                    &self.kernel.name,
                    "kernel".to_string(),
                    None,
                    "no input list gives the cells of its list geometry".to_string(),
                    None,
                ))
            }
            other => Err(CodegenError::malformed(
                &self.kernel.name,
                &format!("a kernel cannot have geometry {other:?}"),
            )),
        }
    }

    fn use_type(&mut self, wgsl: &str) {
        match wgsl {
            "i64" | "u64" => self.features.int64 = true,
            "f64" => self.features.float64 = true,
            _ => {}
        }
    }

    /// The value of an operand read by the current statement element-wise (or per cell).
    fn operand(&mut self, operand: &Operand) -> Result<Val, CodegenError> {
        match operand {
            Operand::Literal(literal) => self.literal_val(literal),
            Operand::Global(global, _) => {
                let global = self
                    .program
                    .globals
                    .get(global.0)
                    .ok_or_else(|| self.error(None, "an unknown global"))?;
                let mut literal = global.value.clone();
                literal.ty.ty = global.ty.clone();
                self.literal_val(&literal)
            }
            Operand::Local(local, _) => {
                if let Some(val) = self.values.get(local) {
                    return Ok(val.clone());
                }
                if self.reductions.iter().any(|r| r.target == *local) {
                    return Err(self.error(
                        None,
                        format!(
                            "{} is a reduction of this kernel; it cannot be read in the same launch",
                            self.name(*local)
                        ),
                    ));
                }
                self.input_val(*local)
            }
        }
    }

    /// An input local read at the current element.
    fn input_val(&mut self, local: LocalId) -> Result<Val, CodegenError> {
        let ty = self.local_type(local);
        // Read where it is recorded (the analysis outlives the generator), not copied.
        let analysis = self.analysis;
        let shape = analysis
            .shapes
            .before
            .get(self.current.0)
            .and_then(|fact| fact.get(&local))
            .unwrap_or(&Shape::Wildcard);
        let element_of = |ty: &Type| match ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        let cell_ty = element_of(&ty);
        // A list's strings index its values' dictionary (`dictionary_of` of the list).
        let dictionary = matches!(cell_ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        let Some(element) = GpuElement::of_type(&cell_ty) else {
            return Err(self.error(
                None,
                format!("{} of type {ty} has no GPU layout", self.name(local)),
            ));
        };
        let make = |expr: String, level: Level, list: bool| Val {
            expr: wgsl::load(&expr, &cell_ty),
            ty: cell_ty.clone(),
            level,
            active: Vec::new(),
            dictionary: dictionary.clone(),
            text: None,
            list,
        };
        match (&self.layout, &shape) {
            // Sizes the shape analysis could not prove equal (two dynamic sizes, a symbol and
            // a dynamic one) are equal at run time when the outliner fused the statements;
            // only a compacted value (a compressed size other than the kernel's) cannot be
            // read at the kernel's positions.
            (Layout::Vector { size, .. }, Shape::Vector(s)) if s == size => {
                let name = self.input_binding(local, ValuePart::Elements, element);
                let val = make(cat!(name, "[i]"), Level::Element, false);
                if let Some(reg) = wgsl::register_type(&cell_ty) {
                    self.row_reads.insert(val.expr.clone(), reg);
                }
                Ok(val)
            }
            // A size the shape analysis could not relate to the geometry (a parameter of a
            // user function, the result of a call on such sizes): its length is known at
            // launch. The read is clamped to the buffer, which broadcasts a length-1 input;
            // launch checks refuse other mismatches as the CPU does.
            (Layout::Vector { .. }, Shape::Vector(s))
                if !s.is_scalar() && !matches!(s, Size::Compressed(..)) =>
            {
                let name = self.input_binding(local, ValuePart::Elements, element);
                let length = self.length_param(local, ValuePart::Elements);
                let own = Length::Of {
                    slot: Self::slot(local),
                    part: ValuePart::Elements,
                };
                if !self.unproven.contains(&own) {
                    self.unproven.push(own);
                }
                Ok(make(
                    cat!(name, "[min(i, max(", length, ", 1u) - 1u)]"),
                    Level::Element,
                    false,
                ))
            }
            (_, Shape::Vector(Size::Constant(1))) => {
                let name = self.input_binding(local, ValuePart::Elements, element);
                Ok(make(cat!(name, "[0]"), Level::Scalar, false))
            }
            (Layout::List { cells, .. }, Shape::Vector(s)) if s == cells => {
                let name = self.input_binding(local, ValuePart::Elements, element);
                Ok(make(cat!(name, "[c]"), Level::Cell, false))
            }
            (
                Layout::List {
                    shape: geometry, ..
                },
                Shape::List(..),
            ) if geometry == shape => {
                let name = self.input_binding(local, ValuePart::ListValues, element);
                Ok(make(format!("{name}[e]"), Level::Element, true))
            }
            _ => Err(self.error(
                None,
                format!(
                    "input {} ({}) does not match the kernel's geometry (a compacted value read in a wider geometry, or a list with other cells)",
                    self.name(local),
                    crate::analysis::shape::ShapeDisplay {
                        shape,
                        function: self.function
                    }
                ),
            )),
        }
    }

    // ----- statements ----------------------------------------------------------------------

    pub(crate) fn generate(mut self) -> Result<KernelLaunch, CodegenError> {
        let statements = self.kernel.statements.clone();
        for id in statements {
            self.current = id;
            self.statement(id)?;
        }
        if self.kernel.grouped.is_some() {
            return self.assemble_grouped();
        }
        self.assemble()
    }
}

fn indent(lines: &[String], depth: usize) -> String {
    const PADS: &str = "                ";
    let repeated;
    let pad = match PADS.get(..4 * depth) {
        Some(pad) => pad,
        None => {
            repeated = "    ".repeat(depth);
            repeated.as_str()
        }
    };
    let size: usize = lines.iter().map(|line| pad.len() + line.len() + 1).sum();
    let mut out = String::with_capacity(size);
    for line in lines {
        out += pad;
        out += line;
        out += "\n";
    }
    out
}

fn accumulate_lines(reductions: &[Reduction]) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, r) in reductions.iter().enumerate() {
        let mut body = vec![format!(
            "acc{k} = {};",
            combine(r.op, r.acc, &format!("acc{k}"), &r.value)
        )];
        if r.counted {
            body.push(format!("count{k} = count{k} + 1u;"));
        }
        if r.active.is_empty() {
            lines.extend(body);
        } else {
            lines.push(format!("if {} {{", r.active.join(" && ")));
            lines.extend(body.into_iter().map(|l| format!("    {l}")));
            lines.push("}".to_string());
        }
    }
    lines
}

fn combine_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Min => "min",
        ReduceOp::Max => "max",
        _ => "sum",
    }
}

/// Folds `value` into `acc`, an accumulator of WGSL type `ty`. Min and max of floats order
/// NaN after every number (`min_f64`, `max_f64`: the order of keys, see `Helper::IeeeF64`),
/// so the minimum skips NaN and is NaN only for a cell of NaNs, and the maximum is NaN when
/// any element is; of other types they pick by comparison.
fn combine(op: ReduceOp, ty: &str, acc: &str, value: &str) -> String {
    match op {
        ReduceOp::Min | ReduceOp::Max if matches!(ty, "f32" | "f64") => {
            format!("{}_{ty}({acc}, {value})", combine_name(op))
        }
        ReduceOp::Min => format!("select({acc}, {value}, {value} < {acc})"),
        ReduceOp::Max => format!("select({acc}, {value}, {value} > {acc})"),
        ReduceOp::Count => format!("{acc} + {value}"),
        ReduceOp::Sum | ReduceOp::Avg => format!("{acc} + {value}"),
    }
}

/// The result of reduction `k` from `total{k}` (and `total_count{k}`).
fn finish_value(r: &Reduction, k: usize) -> String {
    match r.op {
        ReduceOp::Count => wgsl::u32_to_i64(&format!("total{k}")),
        ReduceOp::Avg => format!("(f64(total{k}) / f64(total_count{k}))"),
        ReduceOp::Sum => format!("total{k}"),
        ReduceOp::Min | ReduceOp::Max => {
            if r.result == Type::Bool {
                format!("total{k}")
            } else {
                let reg = wgsl::register_type(&r.result).unwrap_or(r.acc);
                if reg == r.acc {
                    format!("total{k}")
                } else {
                    format!("{reg}(total{k})")
                }
            }
        }
    }
}

/// The fixed-order tree reduction of one value per invocation over the workgroup. Every
/// invocation calls it (uniform control flow) and gets the total.
fn workgroup_reduce(op: &str, ty: &str) -> String {
    let float = matches!(ty, "f32" | "f64");
    let step = match op {
        "min" | "max" if float => format!("{op}_{ty}(a, b)"),
        "min" => "select(a, b, b < a)".to_string(),
        "max" => "select(a, b, b > a)".to_string(),
        _ => "a + b".to_string(),
    };
    format!(
        "fn workgroup_{op}_{ty}(local: u32, value: {ty}) -> {ty} {{
    shared_{ty}[local] = value;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {{
        if local < half {{
            let a = shared_{ty}[local];
            let b = shared_{ty}[local + half];
            shared_{ty}[local] = {step};
        }}
        workgroupBarrier();
    }}
    let total = shared_{ty}[0];
    workgroupBarrier();
    return total;
}}
"
    )
}

fn gpu_element(wgsl: &str) -> GpuElement {
    match wgsl {
        "i32" => GpuElement::I32,
        "f32" => GpuElement::F32,
        "i64" => GpuElement::I64,
        "f64" => GpuElement::F64,
        _ => GpuElement::U32,
    }
}

/// The accumulator type and starting value of `@min` (`max` false) or `@max` of `ty`: the
/// register type's extreme (the kernel also counts, and reports no elements as an error).
fn extreme_identity(ty: &Type, max: bool) -> Option<(&'static str, String)> {
    let pick = |lo: i64, hi: i64| if max { lo } else { hi };
    Some(match ty {
        Type::Bool => ("u32", if max { "0u" } else { "1u" }.to_string()),
        Type::I8 => (
            "i32",
            wgsl::i32_literal(pick(i64::from(i8::MIN), i64::from(i8::MAX))),
        ),
        Type::I16 => (
            "i32",
            wgsl::i32_literal(pick(i64::from(i16::MIN), i64::from(i16::MAX))),
        ),
        Type::I32 | Type::Month | Type::Date | Type::Minute | Type::Second | Type::Time => (
            "i32",
            wgsl::i32_literal(pick(i64::from(i32::MIN), i64::from(i32::MAX))),
        ),
        Type::I64 | Type::Dt => ("i64", wgsl::i64_literal(pick(i64::MIN, i64::MAX))),
        // NaN is the greatest float (`combine`): the minimum starts from it.
        Type::F32 => (
            "f32",
            wgsl::float_literal(if max { f64::NEG_INFINITY } else { f64::NAN }, true),
        ),
        Type::F64 => (
            "f64",
            wgsl::float_literal(if max { f64::NEG_INFINITY } else { f64::NAN }, false),
        ),
        Type::Char | Type::Sym | Type::Str => {
            ("u32", if max { "0u" } else { "4294967295u" }.to_string())
        }
        _ => return None,
    })
}

fn flip(op: &str) -> &'static str {
    match op {
        "<" => ">",
        "<=" => ">=",
        ">" => "<",
        ">=" => "<=",
        "==" => "==",
        _ => "!=",
    }
}

/// Conjuncts of several values, in first-seen order, without repeats.
fn union(parts: &[&[String]]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        for item in part.iter() {
            if !out.contains(item) {
                out.push(item.clone());
            }
        }
    }
    out
}

/// Element-wise builtins: the catalogue's one list (`Builtin::is_elementwise`), shared with
/// the shape analysis.
fn is_elementwise(b: Builtin) -> bool {
    b.is_elementwise()
}

/// The call an expression makes, looking through `check_cast` (a type assertion the
/// statement's static type already guarantees on the GPU).
fn expr_call(expr: &Expr) -> Option<(Callee, &[Arg])> {
    crate::analysis::statements::expr_call(expr)
}

/// WGSL identifiers for the function's locals: the source name, with the local's number
/// added where two locals share a name.
fn local_names(function: &Function) -> Vec<String> {
    let mut counts: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(function.locals.len(), Default::default());
    for local in &function.locals {
        *counts.entry(local.name.as_str()).or_default() += 1;
    }
    function
        .locals
        .iter()
        .enumerate()
        .map(|(k, local)| {
            let clean: String = if local.name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                local.name.clone()
            } else {
                local
                    .name
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect()
            };
            if counts.get(local.name.as_str()).copied().unwrap_or(0) > 1 {
                format!("{clean}_{k}")
            } else {
                clean
            }
        })
        .collect()
}

/// The type of every local that all its assignments give one type, from the expressions'
/// types; locals assigned values of several types keep their declared type.
fn value_types(function: &Function, tree: &StatementTree<'_>) -> Vec<Option<Type>> {
    // Per local: not assigned yet, one type so far, or several (or a wildcard).
    enum Assigned {
        Not,
        One(Type),
        Several,
    }
    let mut types: Vec<Assigned> = Vec::with_capacity(function.locals.len());
    types.resize_with(function.locals.len(), || Assigned::Not);
    for (_, entry) in tree.iter() {
        let StmtKind::Assign { targets, expr, .. } = &entry.stmt.kind else {
            continue;
        };
        for (target, ty) in targets.iter().zip(&expr.types) {
            let Target::Local(local) = target else {
                continue;
            };
            if local.0 >= types.len() {
                types.resize_with(local.0 + 1, || Assigned::Not);
            }
            let slot = &mut types[local.0];
            if ty.has_wildcard() {
                *slot = Assigned::Several;
                continue;
            }
            let ty = match function.locals.get(local.0) {
                Some(declared) => assigned_type(&declared.ty, ty),
                None => ty.clone(),
            };
            *slot = match std::mem::replace(slot, Assigned::Several) {
                Assigned::Not => Assigned::One(ty),
                Assigned::One(known) if known == ty => Assigned::One(known),
                _ => Assigned::Several,
            };
        }
    }
    types
        .into_iter()
        .map(|assigned| match assigned {
            Assigned::One(ty) => Some(ty),
            Assigned::Not | Assigned::Several => None,
        })
        .collect()
}
