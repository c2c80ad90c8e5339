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

mod access;
mod assemble;
mod cells;
mod elementwise;
mod reduce;

use std::collections::{BTreeMap, BTreeSet, HashMap};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
    names: HashMap<LocalId, String>,
    /// The type of the values each local holds, as the typed program gives the expressions
    /// assigned to it, converted where the declaration converts a numeric value
    /// ([`converts_at_assignment`]: both backends convert it at the assignment); a list
    /// where a vector is declared keeps its own type.
    value_types: HashMap<LocalId, Type>,
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
    names: &'a HashMap<LocalId, String>,
    /// The type of the values each local holds (see [`FunctionCode`]).
    value_types: &'a HashMap<LocalId, Type>,
    values: HashMap<LocalId, Val>,
    bindings: Vec<Binding>,
    binding_names: HashMap<(LocalId, ValuePart, bool), String>,
    params: Vec<ParamField>,
    param_names: HashMap<String, ()>,
    scratch: Vec<Scratch>,
    element_lines: Vec<String>,
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
            values: HashMap::new(),
            bindings: Vec::new(),
            binding_names: HashMap::new(),
            params: Vec::new(),
            param_names: HashMap::new(),
            scratch: Vec::new(),
            element_lines: Vec::new(),
            cell_lines: Vec::new(),
            reductions: Vec::new(),
            helpers: BTreeSet::new(),
            constants: Vec::new(),
            i64_constants: HashMap::new(),
            requirements: Vec::new(),
            checks: Vec::new(),
            launch_checks: Vec::new(),
            lengths: HashMap::new(),
            reduced_lengths: HashMap::new(),
            unproven: Vec::new(),
            checked_equal: Vec::new(),
            status: None,
            features: KernelFeatures::default(),
            symbol_params: HashMap::new(),
            current: first,
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
        CodegenError::unsupported(&self.kernel.name, statement, builtin, reason.into())
    }

    fn slot(local: LocalId) -> Slot {
        Slot(local.0)
    }

    fn local_type(&self, local: LocalId) -> Type {
        if let Some(ty) = self.value_types.get(&local) {
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
            .get(&local)
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
                ))
            }
            other => Err(CodegenError::malformed(
                &self.kernel.name,
                &format!("a kernel cannot have geometry {other:?}"),
            )),
        }
    }

    /// A length the engine can resolve for `size`: a constant, or the length of an input.
    fn length_of_size(&self, size: &Size) -> Result<Length, CodegenError> {
        if let Size::Constant(k) = size {
            return Ok(Length::Constant(*k));
        }
        for &input in &self.kernel.inputs {
            match self.shape_before_kernel(input) {
                Some(Shape::Vector(s)) if s == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::Elements,
                    })
                }
                Some(Shape::Enumeration { values, .. }) if values == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::EnumIndex,
                    })
                }
                Some(Shape::List(cells, _)) if cells == size => {
                    return Ok(Length::Of {
                        slot: Self::slot(input),
                        part: ValuePart::ListOffsets,
                    })
                }
                _ => {}
            }
        }
        // `@vector(n, v)` makes its size from `n`, `@append(x, y)` from both lengths.
        let mut produced_elementwise = false;
        for &id in &self.kernel.statements {
            let Some(stmt) = self.tree.stmt(id) else {
                continue;
            };
            let StmtKind::Assign { expr, .. } = &stmt.kind else {
                continue;
            };
            let Some((Callee::Builtin(builtin), args)) = expr_call(expr) else {
                continue;
            };
            let produced = self
                .analysis
                .shapes
                .values
                .get(id.0)
                .and_then(|v| v.first());
            if produced.and_then(Shape::vector_size) != Some(size) {
                continue;
            }
            if is_elementwise(builtin) {
                produced_elementwise = true;
            }
            if builtin == Builtin::Append {
                let part = |arg: Option<&Arg>| match arg {
                    Some(Arg::Operand(Operand::Local(local, _))) => Some(Length::Of {
                        slot: Self::slot(*local),
                        part: ValuePart::Elements,
                    }),
                    Some(Arg::Operand(Operand::Literal(literal))) => {
                        Some(Length::Constant(literal.values.len() as u64))
                    }
                    _ => None,
                };
                if let (Some(a), Some(b)) = (part(args.first()), part(args.get(1))) {
                    return Ok(Length::Sum(Box::new(a), Box::new(b)));
                }
            }
            if builtin != Builtin::Vector {
                continue;
            }
            match args.first() {
                Some(Arg::Operand(Operand::Local(n, _))) if self.kernel.inputs.contains(n) => {
                    return Ok(Length::ValueOf(Self::slot(*n)))
                }
                Some(Arg::Operand(Operand::Literal(literal))) => {
                    if let [LiteralValue::Int(n)] = literal.values.as_slice() {
                        return Ok(Length::Constant((*n).max(0) as u64));
                    }
                }
                _ => {}
            }
        }
        // A size the shape analysis could not prove equal to an input's (the result of an
        // element-wise call on inputs of dynamic sizes): any full-length vector input has it.
        if produced_elementwise && !matches!(size, Size::Compressed(..)) {
            for &input in &self.kernel.inputs {
                if let Some(Shape::Vector(s)) = self.shape_before_kernel(input) {
                    if !s.is_scalar() && !matches!(s, Size::Compressed(..)) {
                        return Ok(Length::Of {
                            slot: Self::slot(input),
                            part: ValuePart::Elements,
                        });
                    }
                }
            }
        }
        Err(CodegenError::unsupported(
            &self.kernel.name,
            "kernel".to_string(),
            None,
            "no input or literal gives the length of its geometry".to_string(),
        ))
    }

    // ----- bindings, params, scratch -------------------------------------------------------

    fn use_type(&mut self, wgsl: &str) {
        match wgsl {
            "i64" | "u64" => self.features.int64 = true,
            "f64" => self.features.float64 = true,
            _ => {}
        }
    }

    fn input_binding(&mut self, local: LocalId, part: ValuePart, element: GpuElement) -> String {
        if let Some(name) = self.binding_names.get(&(local, part, false)) {
            return name.clone();
        }
        let suffix = match part {
            ValuePart::Elements => "",
            ValuePart::ListValues => "_values",
            ValuePart::ListOffsets => "_offsets",
            ValuePart::EnumKeys => "_keys",
            ValuePart::EnumIndex => "_index",
        };
        let name = format!("in_{}{suffix}", self.name(local));
        self.use_type(element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Input {
                slot: Self::slot(local),
                part,
            },
            element,
            access: Access::Read,
        });
        self.binding_names
            .insert((local, part, false), name.clone());
        name
    }

    fn output_binding(&mut self, local: LocalId, part: ValuePart, element: GpuElement) -> String {
        let suffix = if part == ValuePart::ListValues {
            "_values"
        } else {
            ""
        };
        let name = format!("out_{}{suffix}", self.name(local));
        self.use_type(element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Output {
                slot: Self::slot(local),
                part,
            },
            element,
            access: Access::ReadWrite,
        });
        self.binding_names.insert((local, part, true), name.clone());
        name
    }

    fn scratch_binding(&mut self, scratch: Scratch, name: String) -> (ScratchId, String) {
        let id = ScratchId(self.scratch.len());
        self.use_type(scratch.element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Scratch(id),
            element: scratch.element,
            access: Access::ReadWrite,
        });
        self.scratch.push(scratch);
        (id, name)
    }

    /// A param word, once per name; returns `params.<name>`.
    fn param(&mut self, name: String, value: ParamValue) -> String {
        if !self.param_names.contains_key(&name) {
            self.param_names.insert(name.clone(), ());
            self.params.push(ParamField {
                name: name.clone(),
                value,
            });
        }
        format!("params.{name}")
    }

    fn length_param(&mut self, local: LocalId, part: ValuePart) -> String {
        let suffix = match part {
            ValuePart::EnumKeys => "_keys",
            ValuePart::ListValues => "_values",
            ValuePart::ListOffsets => "_cells",
            _ => "",
        };
        let name = format!("len_{}{suffix}", self.name(local));
        self.param(
            name,
            ParamValue::Length(Length::Of {
                slot: Self::slot(local),
                part,
            }),
        )
    }

    /// Where the current statement is, for the errors its checks report.
    fn site(&self) -> CheckSite {
        CheckSite {
            offset: self
                .tree
                .stmt(self.current)
                .map_or(0, |stmt| stmt.span.start),
            at: None,
        }
    }

    /// The geometry's length (vector layout), before unproven inputs widen the launch.
    fn geometry_length(&self) -> Option<Length> {
        match &self.layout {
            Layout::Vector { length, .. } => Some(length.clone()),
            Layout::List { .. } => None,
        }
    }

    /// The number of threads of a vector launch: the geometry's length, widened to every
    /// input whose size the compiler could not relate to it.
    fn launch_length(&self) -> Option<Length> {
        let mut length = self.geometry_length()?;
        let mut seen = vec![length.clone()];
        for other in &self.unproven {
            if !seen.contains(other) && !self.checked_equal.contains(other) {
                seen.push(other.clone());
                length = Length::Max(Box::new(length), Box::new(other.clone()));
            }
        }
        Some(length)
    }

    /// The run-time length of an operand of the current statement (vector layout only).
    fn operand_length(&self, operand: &Operand) -> Option<Length> {
        let geometry = self.geometry_length()?;
        Some(match operand {
            Operand::Literal(literal) => Length::Constant(literal.values.len() as u64),
            Operand::Global(global, _) => Length::Constant(
                self.program
                    .globals
                    .get(global.0)
                    .map_or(1, |g| g.value.values.len() as u64),
            ),
            Operand::Local(local, _) => {
                if let Some(length) = self.lengths.get(local) {
                    return Some(length.clone());
                }
                let Layout::Vector { size, .. } = &self.layout else {
                    return None;
                };
                match self
                    .analysis
                    .shapes
                    .before
                    .get(self.current.0)
                    .and_then(|fact| fact.get(local))
                {
                    Some(Shape::Vector(s)) if s == size => geometry,
                    Some(Shape::Vector(Size::Constant(k))) => Length::Constant(*k),
                    Some(Shape::Vector(Size::Compressed(..))) => geometry,
                    Some(Shape::Vector(_)) => Length::Of {
                        slot: Self::slot(*local),
                        part: ValuePart::Elements,
                    },
                    _ => geometry,
                }
            }
        })
    }

    /// The length of an element-wise result of operands of lengths `a` and `b`, with the
    /// launch check of their agreement where the compiler cannot see it.
    fn broadcast_length(&mut self, builtin: Builtin, a: Length, b: Length) -> Length {
        if a == b || b == Length::Constant(1) {
            return a;
        }
        if a == Length::Constant(1) {
            return b;
        }
        let site = self.site();
        self.launch_checks.push(LaunchCheck {
            builtin: builtin.name().to_string(),
            rule: LaunchRule::Broadcast(a.clone(), b.clone()),
            site,
        });
        Length::Broadcast(Box::new(a), Box::new(b))
    }

    /// The run-time length of the value `builtin` makes from `args` (vector layout), with
    /// the launch checks its arguments need.
    fn result_length(
        &mut self,
        builtin: Builtin,
        args: &[Arg],
    ) -> Result<Option<Length>, CodegenError> {
        use Builtin as B;
        let Some(geometry) = self.geometry_length() else {
            return Ok(None);
        };
        let operands: Vec<&Operand> = args
            .iter()
            .filter_map(|arg| match arg {
                Arg::Operand(operand) => Some(operand),
                Arg::Function(..) => None,
            })
            .collect();
        let length_of = |g: &Self, k: usize| {
            operands
                .get(k)
                .and_then(|op| g.operand_length(op))
                .unwrap_or_else(|| geometry.clone())
        };
        Ok(Some(match builtin {
            B::Compress => {
                let (mask, data) = (length_of(self, 0), length_of(self, 1));
                if mask != data {
                    // Once the check has passed both lengths are one.
                    if mask == geometry {
                        self.checked_equal.push(data.clone());
                    }
                    let site = self.site();
                    self.launch_checks.push(LaunchCheck {
                        builtin: builtin.name().to_string(),
                        rule: LaunchRule::MaskLength(mask.clone(), data),
                        site,
                    });
                }
                mask
            }
            B::Where => length_of(self, 0),
            B::Index => length_of(self, 1),
            B::Vector => {
                let filled = operands.get(1).map(|op| {
                    crate::analysis::statements::operand_type(self.program, self.function, op)
                });
                let element_bytes = filled
                    .as_ref()
                    .map_or(8, horsec_runtime::sizes::element_bytes);
                match operands.first() {
                    Some(Operand::Local(count, _)) if self.kernel.inputs.contains(count) => {
                        let site = self.site();
                        self.launch_checks.push(LaunchCheck {
                            builtin: builtin.name().to_string(),
                            rule: LaunchRule::Count {
                                count: Self::slot(*count),
                                element_bytes,
                            },
                            site,
                        });
                    }
                    Some(Operand::Literal(literal)) => match literal.values.as_slice() {
                        // Its own length: a one-element `@vector` fuses, as a scalar, into
                        // kernels of any geometry, and must stay one element.
                        [LiteralValue::Int(n)] if *n >= 0 => {
                            return Ok(Some(Length::Constant(*n as u64)))
                        }
                        // The CPU's refusal, with its message, is the answer.
                        _ => {
                            return Err(self.error(
                                Some(builtin),
                                "a count that is not one non-negative integer",
                            ))
                        }
                    },
                    _ => {}
                }
                geometry
            }
            B::Sum | B::Min | B::Max | B::Len | B::Count | B::Avg => Length::Constant(1),
            B::Each | B::EachLeft | B::EachRight | B::EachItem | B::Raze => return Ok(None),
            _ if is_elementwise(builtin) => match operands.len() {
                0 => geometry,
                1 => length_of(self, 0),
                _ => {
                    let (a, b) = (length_of(self, 0), length_of(self, 1));
                    self.broadcast_length(builtin, a, b)
                }
            },
            _ => geometry,
        }))
    }

    /// A status bit for an error the kernel detects; returns the bit.
    fn status_bit(
        &mut self,
        message: String,
        report: Option<CheckReport>,
    ) -> Result<u32, CodegenError> {
        if let Some(check) = self
            .checks
            .iter()
            .find(|c| c.message == message && c.report == report)
        {
            return Ok(check.bit);
        }
        let status = match self.status {
            Some(id) => id,
            None => {
                let (id, _) = self.scratch_binding(
                    Scratch {
                        element: GpuElement::U32,
                        elements: Length::Constant(1),
                        purpose: ScratchPurpose::Status,
                    },
                    "status".to_string(),
                );
                self.status = Some(id);
                id
            }
        };
        let bit = self.checks.len() as u32;
        if bit >= 32 {
            return Err(self.error(None, "more than 32 error checks in one kernel"));
        }
        let site = self.site();
        self.checks.push(StatusCheck {
            status,
            bit,
            message,
            site,
            report,
        });
        Ok(bit)
    }

    // ----- operands ------------------------------------------------------------------------

    fn literal_val(&mut self, literal: &Literal) -> Result<Val, CodegenError> {
        let ty = literal.ty.ty.clone();
        let [value] = literal.values.as_slice() else {
            return Err(self.error(
                None,
                format!(
                    "a literal of {} elements inside a kernel (only one-element literals are generated)",
                    literal.values.len()
                ),
            ));
        };
        if let LiteralValue::Text(text) = value {
            let mut val = Val::scalar("0u".to_string(), ty);
            val.text = Some(text.clone());
            val.dictionary = Some(DictionarySource::Literal(vec![text.clone()]));
            return Ok(val);
        }
        let expr = wgsl::literal(value, &ty)
            .ok_or_else(|| self.error(None, format!("a {ty} literal has no GPU form")))?;
        let expr = self.constant(expr, &ty);
        if let (LiteralValue::Int(v), Type::I64) = (value, &ty) {
            self.i64_constants.insert(expr.clone(), *v);
        }
        Ok(Val::scalar(expr, ty))
    }

    /// A literal as the kernel reads it. WGSL evaluates every expression of constants when
    /// the shader is created, and naga refuses many that a run-time value accepts: it cannot
    /// convert an i64 or f64 constant to another type (`f64(8li)`) nor apply a math function
    /// to an f64 one (`ceil(332.25lf)`), and a constant out of a function's domain
    /// (`sqrt(-3.0f)`), an overflow (`-(-2147483648i)`) or a division by zero is an error.
    /// So numeric and bool literals are module-scope private variables, which make the expressions
    /// reading them run-time ones with the CPU's semantics (the shader compiler still
    /// folds them).
    pub(super) fn constant(&mut self, expr: String, ty: &Type) -> String {
        let wgsl = match wgsl::register_type(ty) {
            Some(reg @ ("bool" | "i32" | "u32" | "f32" | "i64" | "f64")) => reg,
            _ => return expr,
        };
        if let Some((name, _, _)) = self
            .constants
            .iter()
            .find(|(_, t, value)| *t == wgsl && *value == expr)
        {
            return name.clone();
        }
        let name = format!("constant{}", self.constants.len());
        self.constants.push((name.clone(), wgsl, expr));
        name
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
        let shape = self
            .analysis
            .shapes
            .before
            .get(self.current.0)
            .and_then(|fact| fact.get(&local))
            .cloned()
            .unwrap_or(Shape::Wildcard);
        let dictionary = matches!(ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        let element_of = |ty: &Type| match ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        let cell_ty = element_of(&ty);
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
                Ok(make(format!("{name}[i]"), Level::Element, false))
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
                    format!("{name}[min(i, max({length}, 1u) - 1u)]"),
                    Level::Element,
                    false,
                ))
            }
            (_, Shape::Vector(Size::Constant(1))) => {
                let name = self.input_binding(local, ValuePart::Elements, element);
                Ok(make(format!("{name}[0]"), Level::Scalar, false))
            }
            (Layout::List { cells, .. }, Shape::Vector(s)) if s == cells => {
                let name = self.input_binding(local, ValuePart::Elements, element);
                Ok(make(format!("{name}[c]"), Level::Cell, false))
            }
            (
                Layout::List {
                    shape: geometry, ..
                },
                Shape::List(..),
            ) if *geometry == shape => {
                let name = self.input_binding(local, ValuePart::ListValues, element);
                Ok(make(format!("{name}[e]"), Level::Element, true))
            }
            _ => Err(self.error(
                None,
                format!(
                    "input {} ({}) does not match the kernel's geometry (a compacted value read in a wider geometry, or a list with other cells)",
                    self.name(local),
                    crate::analysis::shape::ShapeDisplay {
                        shape: &shape,
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
        self.assemble()
    }

    fn statement(&mut self, id: StmtId) -> Result<(), CodegenError> {
        let stmt = self
            .tree
            .stmt(id)
            .ok_or_else(|| CodegenError::malformed(&self.kernel.name, "unknown statement id"))?;
        let (target, expr) = match &stmt.kind {
            StmtKind::Assign { targets, expr, .. } => match targets.as_slice() {
                [Target::Local(local)] => (Some(*local), expr),
                [Target::Discard] => (None, expr),
                _ => return Err(self.error(None, "several assignment targets in a kernel")),
            },
            StmtKind::Expr(expr) => (None, expr),
            StmtKind::Declare(_) => return Ok(()),
            StmtKind::If { .. } | StmtKind::While { .. } | StmtKind::Repeat { .. } => {
                return Err(self.error(None, "control flow inside a kernel is not generated yet"))
            }
            _ => return Err(self.error(None, "this statement cannot run in a kernel")),
        };
        let Some(target) = target else {
            // A discarded pure value does nothing.
            return Ok(());
        };
        // A declaration of another numeric type converts the expression's value, computed in
        // its own type.
        let converted_to = match (self.function.locals.get(target.0), expr.types.as_slice()) {
            (Some(declared), [value]) if converts_at_assignment(&declared.ty, value) => {
                Some((declared.ty.clone(), value.clone()))
            }
            _ => None,
        };
        let result_ty = match &converted_to {
            Some((_, value)) => value.clone(),
            None => self.local_type(target),
        };
        self.assign(target, expr, &result_ty)?;
        match converted_to {
            Some((declared, _)) => self.convert_assigned(target, &declared),
            None => Ok(()),
        }
    }

    /// Defines `target` as the value of `expr`, of type `result_ty`.
    fn assign(
        &mut self,
        target: LocalId,
        expr: &Expr,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        match expr_call(expr) {
            None => match &expr.kind {
                ExprKind::Operand(operand) => {
                    if let Some(length) = self.operand_length(operand) {
                        self.lengths.insert(target, length);
                    }
                    let val = self.operand(operand)?;
                    self.define(target, val, Vec::new())
                }
                _ => Err(self.error(None, "an expression that cannot run in a kernel")),
            },
            Some((Callee::Function(_), _)) => {
                Err(self.error(None, "a call of a user function inside a kernel"))
            }
            Some((Callee::Builtin(builtin), args)) => self.call(target, builtin, args, result_ty),
        }
    }

    /// Converts the value just defined for `target` to `declared`, its variable's numeric
    /// type, as the CPU converts at the assignment (Rust's `as`). Conversions WGSL makes
    /// differently (a float to an integer: NaN and saturation at i8/i16), and reductions,
    /// whose value is made after the loop, are left to the CPU.
    fn convert_assigned(&mut self, target: LocalId, declared: &Type) -> Result<(), CodegenError> {
        let unsupported = |g: &Self, why: &str| {
            g.error(
                None,
                format!("{why} assigned to a variable declared {declared} (converted on the CPU)"),
            )
        };
        if self.reductions.iter().any(|r| r.target == target) {
            return Err(unsupported(self, "a reduction"));
        }
        let Some(val) = self.values.get(&target).cloned() else {
            return Err(unsupported(self, "a value made outside the element loop"));
        };
        if val.ty == *declared {
            return Ok(());
        }
        if val.list {
            return Err(unsupported(self, "a list"));
        }
        if val.ty.is_float() && declared.is_integer() {
            return Err(unsupported(self, "a float"));
        }
        let converted = wgsl::wrap_narrow(self.conv(&val, declared)?, declared);
        let wgsl_ty = wgsl::register_type(declared).ok_or_else(|| {
            self.error(
                None,
                format!("a value of type {declared} has no GPU layout"),
            )
        })?;
        self.use_type(wgsl_ty);
        let var = format!("v_{}_as_{declared}", self.name(target));
        let lines = match val.level {
            Level::Cell => &mut self.cell_lines,
            _ => &mut self.element_lines,
        };
        lines.push(format!("let {var}: {wgsl_ty} = {converted};"));
        self.values.insert(
            target,
            Val {
                expr: var,
                ty: declared.clone(),
                ..val
            },
        );
        Ok(())
    }

    fn operand_args(&self, builtin: Builtin, args: &[Arg]) -> Result<Vec<Operand>, CodegenError> {
        args.iter()
            .map(|arg| match arg {
                Arg::Operand(operand) => Ok(operand.clone()),
                Arg::Function(..) => {
                    Err(self.error(Some(builtin), "an unexpected function argument"))
                }
            })
            .collect()
    }

    fn call(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let length = self.result_length(builtin, args)?;
        if let Some(length) = &length {
            if matches!(
                builtin,
                Builtin::Sum
                    | Builtin::Min
                    | Builtin::Max
                    | Builtin::Len
                    | Builtin::Count
                    | Builtin::Avg
            ) {
                if let Some(Arg::Operand(operand)) = args.first() {
                    if let Some(folded) = self.operand_length(operand) {
                        self.reduced_lengths.insert(target, folded);
                    }
                }
            }
            self.lengths.insert(target, length.clone());
        }
        self.generate_call(target, builtin, args, result_ty)
    }

    fn generate_call(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        use Builtin as B;
        match builtin {
            B::Compress => {
                let ops = self.operand_args(builtin, args)?;
                let [mask, value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                let (mask, value) = (self.operand(mask)?, self.operand(value)?);
                if mask.level != Level::Element || value.level != Level::Element {
                    return Err(self.error(
                        Some(builtin),
                        "compression of a one-element or per-cell value",
                    ));
                }
                // Compacted vectors pair by position after compaction, not by row: a mask and
                // data compacted by different masks (or one of them only) are of different
                // lengths (the run's error) or pair other rows than this kernel's threads.
                let conditions = |v: &Val| {
                    let mut c = v.active.clone();
                    c.sort();
                    c.dedup();
                    c
                };
                if conditions(&mask) != conditions(&value) {
                    return Err(self.error(
                        Some(builtin),
                        "a mask and data compacted by different masks (they pair by position \
                         after compaction)",
                    ));
                }
                let mut val = value.clone();
                val.active = union(&[
                    mask.active.as_slice(),
                    value.active.as_slice(),
                    std::slice::from_ref(&mask.expr),
                ]);
                let active = val.active.clone();
                val.active = Vec::new();
                self.define(target, val, active)
            }
            B::Where => {
                let ops = self.operand_args(builtin, args)?;
                let [mask] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let mask = self.operand(mask)?;
                if !matches!(self.layout, Layout::Vector { .. })
                    || mask.level != Level::Element
                    || !mask.active.is_empty()
                {
                    return Err(self.error(
                        Some(builtin),
                        "@where of a mask that is not over the kernel's full geometry (positions would need a scan)",
                    ));
                }
                let val = Val {
                    expr: "i64(i)".to_string(),
                    ty: Type::I64,
                    level: Level::Element,
                    active: Vec::new(),
                    dictionary: None,
                    text: None,
                    list: false,
                };
                self.use_type("i64");
                self.define(target, val, vec![mask.expr])
            }
            B::Index => {
                let ops = self.operand_args(builtin, args)?;
                let [source, index] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                // An index read straight from an input: the engine names the first one out of
                // range from the host's copy, as the CPU does.
                let index_input = match index {
                    Operand::Local(local, _) if !self.values.contains_key(local) => Some(*local),
                    _ => None,
                };
                let index = self.operand(index)?;
                let index_input = index_input.filter(|_| index.active.is_empty());
                let (val, prelude) = self.gather(builtin, source, &index, index_input)?;
                self.define_with(target, val, index.active.clone(), prelude)
            }
            B::Fetch => {
                let ops = self.operand_args(builtin, args)?;
                let [Operand::Local(local, _)] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one enum local"));
                };
                self.fetch(target, *local, result_ty)
            }
            B::Vector => {
                let ops = self.operand_args(builtin, args)?;
                let [_, value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                if let Operand::Local(local, _) = value {
                    let cyclic = !self.values.contains_key(local)
                        && !matches!(
                            self.analysis
                                .shapes
                                .before
                                .get(self.current.0)
                                .and_then(|f| f.get(local)),
                            Some(Shape::Vector(Size::Constant(1)))
                        );
                    if cyclic {
                        return self.cyclic_fill(target, *local);
                    }
                }
                let value = self.operand(value)?;
                if value.level != Level::Scalar {
                    return Err(self.error(
                        Some(builtin),
                        "@vector of a longer vector made in this kernel",
                    ));
                }
                let mut val = value;
                val.level = Level::Element;
                val.text = None;
                self.define(target, val, Vec::new())
            }
            B::Sum | B::Min | B::Max | B::Len | B::Count | B::Avg => {
                let ops = self.operand_args(builtin, args)?;
                let [value] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let value = self.operand(value)?;
                if !matches!(self.layout, Layout::Vector { .. }) {
                    return Err(self.error(
                        Some(builtin),
                        "a whole-vector reduction inside a list kernel",
                    ));
                }
                if value.level != Level::Element {
                    return Err(self.error(
                        Some(builtin),
                        "a reduction of a one-element value inside a kernel",
                    ));
                }
                self.reduction(target, builtin, value, result_ty)
            }
            B::Append => {
                let ops = self.operand_args(builtin, args)?;
                let [first, second] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects two arguments"));
                };
                self.append(target, first, second, result_ty)
            }
            B::Each | B::EachLeft | B::EachRight | B::EachItem => {
                self.each(target, builtin, args, result_ty)
            }
            B::Raze => {
                let ops = self.operand_args(builtin, args)?;
                let [list] = ops.as_slice() else {
                    return Err(self.error(Some(builtin), "expects one argument"));
                };
                let mut val = self.operand(list)?;
                if !val.list {
                    return Err(self.error(Some(builtin), "@raze of a value that is not a list"));
                }
                val.list = false;
                self.define(target, val, Vec::new())
            }
            _ => {
                let ops = self.operand_args(builtin, args)?;
                let vals = ops
                    .iter()
                    .map(|op| self.operand(op))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(shift) = elementwise::TemporalShift::of(builtin, &vals) {
                    return self.temporal_shift(target, builtin, shift, &vals, result_ty);
                }
                let val = self.map(builtin, &vals, result_ty)?;
                self.define(target, val, Vec::new())
            }
        }
    }

    /// An element-wise builtin applied to `vals` (already at one level).
    fn map(
        &mut self,
        builtin: Builtin,
        vals: &[Val],
        result_ty: &Type,
    ) -> Result<Val, CodegenError> {
        let level = vals.iter().map(|v| v.level).max().unwrap_or(Level::Scalar);
        if vals
            .iter()
            .any(|v| v.level != Level::Scalar && v.level != level)
        {
            return Err(self.error(
                Some(builtin),
                "operands of one element-wise call at different levels (per element and per cell)",
            ));
        }
        let actives: Vec<&[String]> = vals.iter().map(|v| v.active.as_slice()).collect();
        let active = union(&actives);
        let expr = self.elementwise(builtin, vals, result_ty)?;
        if let Some(wgsl) = wgsl::register_type(result_ty) {
            self.use_type(wgsl);
        }
        Ok(Val {
            expr,
            ty: result_ty.clone(),
            level,
            active,
            dictionary: None,
            text: None,
            list: vals.iter().any(|v| v.list),
        })
    }

    /// Binds `target` to `val`, evaluated under `extra` conjuncts besides its own.
    fn define(
        &mut self,
        target: LocalId,
        val: Val,
        extra: Vec<String>,
    ) -> Result<(), CodegenError> {
        self.define_with(target, val, extra, Vec::new())
    }

    fn define_with(
        &mut self,
        target: LocalId,
        mut val: Val,
        extra: Vec<String>,
        prelude: Vec<String>,
    ) -> Result<(), CodegenError> {
        let active = union(&[val.active.as_slice(), extra.as_slice()]);
        let wgsl_ty = wgsl::register_type(&val.ty).ok_or_else(|| {
            self.error(
                None,
                format!("a value of type {} has no GPU layout", val.ty),
            )
        })?;
        self.use_type(wgsl_ty);
        let var = format!("v_{}", self.name(target));
        let lines = match val.level {
            Level::Cell => &mut self.cell_lines,
            _ => &mut self.element_lines,
        };
        if active.is_empty() {
            lines.extend(prelude);
            lines.push(format!("let {var}: {wgsl_ty} = {};", val.expr));
        } else {
            lines.push(format!("var {var}: {wgsl_ty};"));
            lines.push(format!("if {} {{", active.join(" && ")));
            lines.extend(prelude.into_iter().map(|l| format!("    {l}")));
            lines.push(format!("    {var} = {};", val.expr));
            lines.push("}".to_string());
        }
        val.expr = var;
        val.active = active;
        val.text = None;
        self.values.insert(target, val);
        Ok(())
    }
}

fn entry_header(name: &str) -> String {
    format!(
        "@compute @workgroup_size(WORKGROUP_SIZE)
fn {name}(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {{
"
    )
}

fn indent(lines: &[String], depth: usize) -> String {
    let pad = "    ".repeat(depth);
    let mut out = String::new();
    for line in lines {
        out += &pad;
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
        ReduceOp::Count => format!("i64(total{k})"),
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
fn local_names(function: &Function) -> HashMap<LocalId, String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for local in &function.locals {
        *counts.entry(local.name.as_str()).or_default() += 1;
    }
    function
        .locals
        .iter()
        .enumerate()
        .map(|(k, local)| {
            let clean: String = local
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let name = if counts.get(local.name.as_str()).copied().unwrap_or(0) > 1 {
                format!("{clean}_{k}")
            } else {
                clean
            };
            (LocalId(k), name)
        })
        .collect()
}

/// The type of every local that all its assignments give one type, from the expressions'
/// types; locals assigned values of several types keep their declared type.
fn value_types(function: &Function, tree: &StatementTree<'_>) -> HashMap<LocalId, Type> {
    let mut types: HashMap<LocalId, Option<Type>> = HashMap::new();
    for (_, entry) in tree.iter() {
        let StmtKind::Assign { targets, expr, .. } = &entry.stmt.kind else {
            continue;
        };
        for (target, ty) in targets.iter().zip(&expr.types) {
            let Target::Local(local) = target else {
                continue;
            };
            if ty.has_wildcard() {
                types.insert(*local, None);
                continue;
            }
            let ty = &match function.locals.get(local.0) {
                Some(declared) => assigned_type(&declared.ty, ty),
                None => ty.clone(),
            };
            types
                .entry(*local)
                .and_modify(|known| {
                    if known.as_ref() != Some(ty) {
                        *known = None;
                    }
                })
                .or_insert_with(|| Some(ty.clone()));
        }
    }
    types
        .into_iter()
        .filter_map(|(local, ty)| Some((local, ty?)))
        .collect()
}
