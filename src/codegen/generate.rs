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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use horsec_runtime::builtin::Builtin;
use horsec_runtime::kernel::{
    Access, Binding, BufferRef, DictionarySource, Dispatch, GpuElement, KernelFeatures,
    KernelLaunch, KernelOutput, LaunchRequirement, Length, OutputLayout, ParamField, ParamValue,
    Pass, Scratch, ScratchId, ScratchPurpose, StatusCheck, ValuePart, KERNEL_WORKGROUP_SIZE,
    MAX_DISPATCH_WORKGROUPS, MAX_REDUCTION_WORKGROUPS,
};
use horsec_runtime::plan::Slot;
use horsec_runtime::types::Type;

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
    /// Whether a count runs beside it (for `@avg`, and for the empty check of `@min`/`@max`
    /// of types without an identity).
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

pub(crate) struct Generator<'a> {
    program: &'a TypedProgram,
    function: &'a Function,
    analysis: &'a FunctionAnalysis,
    kernel: &'a Kernel,
    tree: StatementTree<'a>,
    layout: Layout,
    names: HashMap<LocalId, String>,
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
    requirements: Vec<LaunchRequirement>,
    checks: Vec<StatusCheck>,
    status: Option<ScratchId>,
    features: KernelFeatures,
    symbol_params: HashMap<(String, usize), (String, String)>,
    current: StmtId,
}

impl<'a> Generator<'a> {
    pub(crate) fn new(
        program: &'a TypedProgram,
        analysis: &'a FunctionAnalysis,
        kernel: &'a Kernel,
    ) -> Result<Generator<'a>, CodegenError> {
        let function = program.functions.get(kernel.function.0).ok_or_else(|| {
            CodegenError::malformed(&kernel.name, "the kernel's function does not exist")
        })?;
        let tree = StatementTree::new(function);
        let first =
            kernel.statements.first().copied().ok_or_else(|| {
                CodegenError::malformed(&kernel.name, "the kernel has no statements")
            })?;
        let names = local_names(function);
        let mut generator = Generator {
            program,
            function,
            analysis,
            kernel,
            tree,
            layout: Layout::Vector {
                size: Size::Constant(1),
                length: Length::Constant(1),
            },
            names,
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
            requirements: Vec::new(),
            checks: Vec::new(),
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

    /// A status bit for an error the kernel detects; returns the bit.
    fn status_bit(&mut self, message: String) -> Result<u32, CodegenError> {
        if let Some(check) = self.checks.iter().find(|c| c.message == message) {
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
        self.checks.push(StatusCheck {
            status,
            bit,
            message,
        });
        Ok(bit)
    }

    // ----- operands ------------------------------------------------------------------------

    fn literal_val(&self, literal: &Literal) -> Result<Val, CodegenError> {
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
        Ok(Val::scalar(expr, ty))
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
            (Layout::Vector { size, .. }, Shape::Vector(s))
                if s == size || (!s.is_scalar() && !matches!(s, Size::Compressed(..))) =>
            {
                let name = self.input_binding(local, ValuePart::Elements, element);
                Ok(make(format!("{name}[i]"), Level::Element, false))
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
        let result_ty = self.local_type(target);
        match expr_call(expr) {
            None => match &expr.kind {
                ExprKind::Operand(operand) => {
                    let val = self.operand(operand)?;
                    self.define(target, val, Vec::new())
                }
                _ => Err(self.error(None, "an expression that cannot run in a kernel")),
            },
            Some((Callee::Function(_), _)) => {
                Err(self.error(None, "a call of a user function inside a kernel"))
            }
            Some((Callee::Builtin(builtin), args)) => self.call(target, builtin, args, &result_ty),
        }
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
                let index = self.operand(index)?;
                let (val, prelude) = self.gather(builtin, source, &index)?;
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

    /// `source[index]` for a vector input `source`; returns the value and the lines that
    /// check the index.
    fn gather(
        &mut self,
        builtin: Builtin,
        source: &Operand,
        index: &Val,
    ) -> Result<(Val, Vec<String>), CodegenError> {
        let Operand::Local(local, _) = source else {
            return Err(self.error(Some(builtin), "gathering from a literal"));
        };
        if self.values.contains_key(local) {
            return Err(self.error(
                Some(builtin),
                format!(
                    "gathering from {}, a value of this kernel (needs a grid-wide barrier)",
                    self.name(*local)
                ),
            ));
        }
        let ty = self.local_type(*local);
        let Some(element) = GpuElement::of_type(&ty) else {
            return Err(self.error(Some(builtin), format!("gathering from a {ty} value")));
        };
        if !index.ty.is_integer() || index.ty == Type::Bool {
            return Err(self.error(Some(builtin), format!("an index of type {}", index.ty)));
        }
        let buffer = self.input_binding(*local, ValuePart::Elements, element);
        let length = self.length_param(*local, ValuePart::Elements);
        let source_name = self.name(*local);
        let (val, prelude) = self.checked_gather(&buffer, &length, &ty, index, &source_name)?;
        let dictionary = matches!(ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(*local)));
        Ok((Val { dictionary, ..val }, prelude))
    }

    /// Reads `buffer[index]` after checking `0 <= index < length`; an index out of range
    /// sets a status bit (the read itself stays in bounds).
    fn checked_gather(
        &mut self,
        buffer: &str,
        length: &str,
        ty: &Type,
        index: &Val,
        source_name: &str,
    ) -> Result<(Val, Vec<String>), CodegenError> {
        let bit = self.status_bit(format!("index out of range reading {source_name}"))?;
        let wide = index.ty == Type::I64;
        let (index_ty, len_expr) = if wide {
            self.use_type("i64");
            ("i64", format!("i64({length})"))
        } else {
            ("i32", format!("i32({length})"))
        };
        let position = wgsl::convert(
            &index.expr,
            &index.ty,
            if wide { &Type::I64 } else { &Type::I32 },
        )
        .unwrap_or_else(|| index.expr.clone());
        let zero = wgsl::zero(index_ty);
        let j = format!("j{}", self.element_lines.len() + self.cell_lines.len());
        let prelude = vec![
            format!("let {j}: {index_ty} = {position};"),
            format!(
                "if {j} < {zero} || {j} >= {len_expr} {{ atomicOr(&status[0], {}u); }}",
                1u32 << bit
            ),
        ];
        let expr = wgsl::load(&format!("{buffer}[u32({j})]"), ty);
        Ok((
            Val {
                expr,
                ty: ty.clone(),
                level: index.level,
                active: index.active.clone(),
                dictionary: None,
                text: None,
                list: index.list,
            },
            prelude,
        ))
    }

    /// `@append(x, y)` of two vector inputs: `x[i]` for `i < len(x)`, else `y[i - len(x)]`,
    /// both converted to the result type (numeric promotion).
    fn append(
        &mut self,
        target: LocalId,
        first: &Operand,
        second: &Operand,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        if !matches!(self.layout, Layout::Vector { .. }) {
            return Err(self.error(Some(Builtin::Append), "@append inside a list kernel"));
        }
        let mut reads = Vec::new();
        let mut dictionaries = Vec::new();
        for operand in [first, second] {
            let Operand::Local(local, _) = operand else {
                return Err(self.error(Some(Builtin::Append), "@append of a literal"));
            };
            if self.values.contains_key(local) {
                return Err(self.error(
                    Some(Builtin::Append),
                    "@append of a value made in this kernel",
                ));
            }
            let ty = self.local_type(*local);
            let Some(element) = GpuElement::of_type(&ty) else {
                return Err(self.error(Some(Builtin::Append), format!("@append of {ty}")));
            };
            let buffer = self.input_binding(*local, ValuePart::Elements, element);
            let length = self.length_param(*local, ValuePart::Elements);
            if matches!(ty, Type::Sym | Type::Str) {
                dictionaries.push(Self::slot(*local));
            }
            reads.push((buffer, length, ty));
        }
        let [(a, len_a, ta), (b, _, tb)] = reads.as_slice() else {
            return Err(self.error(Some(Builtin::Append), "expects two arguments"));
        };
        // Both reads stay in bounds whichever side the position falls on.
        let x = wgsl::convert(
            &wgsl::load(&format!("{a}[min(i, max({len_a}, 1u) - 1u)]"), ta),
            ta,
            result_ty,
        );
        let y = wgsl::convert(
            &wgsl::load(&format!("{b}[i - min(i, {len_a})]"), tb),
            tb,
            result_ty,
        );
        let (Some(x), Some(y)) = (x, y) else {
            return Err(self.error(Some(Builtin::Append), format!("@append of {ta} and {tb}")));
        };
        let dictionary = match dictionaries.as_slice() {
            [one] => Some(DictionarySource::Input(*one)),
            [p, q] => {
                if p != q {
                    self.requirements
                        .push(LaunchRequirement::SameDictionary(*p, *q));
                }
                Some(DictionarySource::Input(*p))
            }
            _ => None,
        };
        let reg = wgsl::register_type(result_ty).unwrap_or("u32");
        let var = format!("v_{}", self.name(target));
        self.element_lines.push(format!("var {var}: {reg};"));
        self.element_lines.push(format!(
            "if i < {len_a} {{ {var} = {x}; }} else {{ {var} = {y}; }}"
        ));
        self.values.insert(
            target,
            Val {
                expr: var,
                ty: result_ty.clone(),
                level: Level::Element,
                active: Vec::new(),
                dictionary,
                text: None,
                list: false,
            },
        );
        Ok(())
    }

    /// `@vector(n, v)` with `v` an input of any length: `v` repeated cyclically, as the CPU's
    /// `cycle_to` (an empty `v` is an error).
    fn cyclic_fill(&mut self, target: LocalId, local: LocalId) -> Result<(), CodegenError> {
        if !matches!(self.layout, Layout::Vector { .. }) {
            return Err(self.error(Some(Builtin::Vector), "@vector inside a list kernel"));
        }
        let ty = self.local_type(local);
        let Some(element) = GpuElement::of_type(&ty) else {
            return Err(self.error(Some(Builtin::Vector), format!("@vector of {ty}")));
        };
        let name = self.name(local);
        let buffer = self.input_binding(local, ValuePart::Elements, element);
        let length = self.length_param(local, ValuePart::Elements);
        let bit = self.status_bit(format!("@vector: cannot fill from the empty {name}"))?;
        let prelude = vec![format!(
            "if {length} == 0u {{ atomicOr(&status[0], {}u); }}",
            1u32 << bit
        )];
        let val = Val {
            expr: wgsl::load(&format!("{buffer}[i % max({length}, 1u)]"), &ty),
            ty: ty.clone(),
            level: Level::Element,
            active: Vec::new(),
            dictionary: matches!(ty, Type::Sym | Type::Str)
                .then_some(DictionarySource::Input(Self::slot(local))),
            text: None,
            list: false,
        };
        self.define_with(target, val, Vec::new(), prelude)
    }

    /// `@fetch(e)`: the referenced key of each row of an enum input.
    fn fetch(
        &mut self,
        target: LocalId,
        local: LocalId,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        if self.values.contains_key(&local) {
            return Err(self.error(
                Some(Builtin::Fetch),
                "@fetch of an enum made in this kernel",
            ));
        }
        let Type::Enum(key_ty) = self.local_type(local) else {
            return Err(self.error(
                Some(Builtin::Fetch),
                "@fetch of a value that is not an enum",
            ));
        };
        let Some(element) = GpuElement::of_type(&key_ty) else {
            return Err(self.error(Some(Builtin::Fetch), format!("an enum of {key_ty} keys")));
        };
        let Layout::Vector { size, .. } = &self.layout else {
            return Err(self.error(Some(Builtin::Fetch), "@fetch inside a list kernel"));
        };
        let rows_match = matches!(
            self.analysis.shapes.before.get(self.current.0).and_then(|f| f.get(&local)),
            Some(Shape::Enumeration { values, .. }) if values == size
        );
        if !rows_match {
            return Err(self.error(
                Some(Builtin::Fetch),
                "the enum's rows are not the kernel's geometry",
            ));
        }
        let index_buffer = self.input_binding(local, ValuePart::EnumIndex, GpuElement::I64);
        let keys = self.input_binding(local, ValuePart::EnumKeys, element);
        let length = self.length_param(local, ValuePart::EnumKeys);
        let index = Val {
            expr: format!("{index_buffer}[i]"),
            ty: Type::I64,
            level: Level::Element,
            active: Vec::new(),
            dictionary: None,
            text: None,
            list: false,
        };
        let name = self.name(local);
        let (mut val, prelude) = self.checked_gather(&keys, &length, &key_ty, &index, &name)?;
        val.ty = result_ty.clone();
        val.dictionary = matches!(*key_ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        self.define_with(target, val, Vec::new(), prelude)
    }

    fn reduction(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        value: Val,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let op = match builtin {
            Builtin::Sum => ReduceOp::Sum,
            Builtin::Min => ReduceOp::Min,
            Builtin::Max => ReduceOp::Max,
            Builtin::Avg => ReduceOp::Avg,
            _ => ReduceOp::Count,
        };
        let ty = value.ty.clone();
        let (acc, identity, folded, counted) = match op {
            ReduceOp::Count => ("u32", "0u".to_string(), "1u".to_string(), false),
            ReduceOp::Sum | ReduceOp::Avg => {
                let sum_ty = if ty.is_float() {
                    Type::F64
                } else if ty.is_integer() {
                    Type::I64
                } else {
                    return Err(self.error(Some(builtin), format!("cannot sum {ty}")));
                };
                let acc = if sum_ty == Type::F64 { "f64" } else { "i64" };
                let folded = wgsl::convert(&value.expr, &ty, &sum_ty).unwrap_or_default();
                (
                    acc,
                    wgsl::zero(acc).to_string(),
                    folded,
                    op == ReduceOp::Avg,
                )
            }
            ReduceOp::Min | ReduceOp::Max => {
                let max = op == ReduceOp::Max;
                let (acc, identity) = extreme_identity(&ty, max).ok_or_else(|| {
                    self.error(Some(builtin), format!("no GPU minimum or maximum of {ty}"))
                })?;
                let folded = if ty == Type::Bool {
                    format!("select(0u, 1u, {})", value.expr)
                } else {
                    value.expr.clone()
                };
                (acc, identity, folded, !has_identity(&ty))
            }
        };
        self.use_type(acc);
        if matches!(self.layout, Layout::List { .. }) {
            // Per-cell results are values of the cell-level statements that follow.
            let name = self.name(target);
            self.values.insert(
                target,
                Val {
                    expr: format!("v_{name}"),
                    ty: result_ty.clone(),
                    level: Level::Cell,
                    active: Vec::new(),
                    dictionary: value.dictionary.clone(),
                    text: None,
                    list: true,
                },
            );
        }
        let empty_bit = if counted && op != ReduceOp::Avg {
            Some(self.status_bit(format!("@{builtin} of no elements ({})", self.name(target)))?)
        } else {
            None
        };
        self.reductions.push(Reduction {
            op,
            target,
            acc,
            identity,
            value: folded,
            active: value.active.clone(),
            counted,
            empty_bit,
            result: result_ty.clone(),
            dictionary: value.dictionary.clone(),
        });
        Ok(())
    }

    fn each(
        &mut self,
        target: LocalId,
        builtin: Builtin,
        args: &[Arg],
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        let Some(Arg::Function(Callee::Builtin(f), _)) = args.first() else {
            return Err(self.error(Some(builtin), "@each of a user function inside a kernel"));
        };
        let f = *f;
        let rest = self.operand_args(builtin, &args[1..])?;
        let cell_ty = match result_ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        if !matches!(self.layout, Layout::List { .. }) {
            return Err(self.error(Some(builtin), "@each inside a vector kernel"));
        }
        match (builtin, f, rest.as_slice()) {
            (Builtin::Each, Builtin::Len | Builtin::Count, [list]) => {
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "@each(@len, …) of a value that is not a list of cells",
                    ));
                }
                let val = Val {
                    expr: "i64(cell_end - cell_start)".to_string(),
                    ty: Type::I64,
                    level: Level::Cell,
                    active: Vec::new(),
                    dictionary: None,
                    text: None,
                    list: true,
                };
                self.use_type("i64");
                self.define(target, val, Vec::new())
            }
            (Builtin::Each, Builtin::Sum | Builtin::Avg | Builtin::Min | Builtin::Max, [list]) => {
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "a per-cell reduction of a value that is not a list of cells",
                    ));
                }
                self.reduction(target, f, list, &cell_ty)
            }
            (Builtin::EachRight, Builtin::Index, [source, list]) => {
                let list = self.operand(list)?;
                if !list.list || list.level != Level::Element {
                    return Err(self.error(
                        Some(f),
                        "@each_right(@index, x, l) with l not a list of cells",
                    ));
                }
                let (mut val, prelude) = self.gather(f, source, &list)?;
                val.list = true;
                self.define_with(target, val, Vec::new(), prelude)
            }
            (Builtin::Each, f, [list]) if is_elementwise(f) => {
                let list = self.operand(list)?;
                let mut val = self.map(f, &[list], &cell_ty)?;
                val.list = true;
                self.define(target, val, Vec::new())
            }
            (Builtin::EachRight | Builtin::EachLeft | Builtin::EachItem, f, [a, b])
                if is_elementwise(f) =>
            {
                let (a, b) = (self.operand(a)?, self.operand(b)?);
                let fixed_ok = match builtin {
                    Builtin::EachRight => a.level == Level::Scalar,
                    Builtin::EachLeft => b.level == Level::Scalar,
                    _ => true,
                };
                if !fixed_ok {
                    return Err(self.error(
                        Some(builtin),
                        "the fixed argument of @each_left/@each_right is not one element",
                    ));
                }
                let mut val = self.map(f, &[a, b], &cell_ty)?;
                val.list = true;
                self.define(target, val, Vec::new())
            }
            _ => Err(self.error(
                Some(builtin),
                format!("@{builtin} of @{f} is not generated yet"),
            )),
        }
    }

    // ----- element-wise builtins -----------------------------------------------------------

    fn elementwise(
        &mut self,
        b: Builtin,
        vals: &[Val],
        result: &Type,
    ) -> Result<String, CodegenError> {
        use Builtin as B;
        let arg = |k: usize| vals.get(k).cloned();
        let unsupported = |g: &Self, why: &str| g.error(Some(b), why.to_string());
        match b {
            B::Plus | B::Minus | B::Mul => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty.is_temporal() || y.ty.is_temporal() {
                    return self.temporal_arithmetic(b, &x, &y, result);
                }
                let op = match b {
                    B::Plus => "+",
                    B::Minus => "-",
                    _ => "*",
                };
                let (cx, cy) = (self.conv(&x, result)?, self.conv(&y, result)?);
                Ok(wgsl::wrap_narrow(format!("({cx} {op} {cy})"), result))
            }
            B::Div => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                let (cx, cy) = (self.conv(&x, result)?, self.conv(&y, result)?);
                Ok(format!("({cx} / {cy})"))
            }
            B::Lt | B::Leq | B::Gt | B::Geq | B::Eq | B::Neq => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                self.compare(b, &x, &y)
            }
            B::And | B::Or | B::Nand | B::Nor | B::Xor => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty != Type::Bool || y.ty != Type::Bool {
                    return Err(unsupported(self, "logic on values that are not bool"));
                }
                let (p, q) = (&x.expr, &y.expr);
                Ok(match b {
                    B::And => format!("({p} && {q})"),
                    B::Or => format!("({p} || {q})"),
                    B::Nand => format!("!({p} && {q})"),
                    B::Nor => format!("!({p} || {q})"),
                    _ => format!("({p} != {q})"),
                })
            }
            B::Not => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                if x.ty != Type::Bool {
                    return Err(unsupported(self, "@not of a value that is not bool"));
                }
                Ok(format!("!{}", x.expr))
            }
            B::Neg | B::Abs | B::Signum | B::Ceil | B::Floor | B::Round | B::Conj => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                self.numeric_unary(b, &x, result)
            }
            B::Sqrt
            | B::Recip
            | B::Pi
            | B::Exp
            | B::Log
            | B::Log2
            | B::Log10
            | B::Sin
            | B::Cos
            | B::Tan
            | B::Asin
            | B::Acos
            | B::Atan
            | B::Sinh
            | B::Cosh
            | B::Tanh
            | B::Asinh
            | B::Acosh
            | B::Atanh => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                let cx = self.conv(&x, result)?;
                let one = if *result == Type::F32 {
                    "1.0f"
                } else {
                    "1.0lf"
                };
                match b {
                    B::Sqrt => Ok(format!("sqrt({cx})")),
                    B::Recip => Ok(format!("({one} / {cx})")),
                    B::Pi => Ok(format!(
                        "({cx} * {})",
                        wgsl::float_literal(std::f64::consts::PI, *result == Type::F32)
                    )),
                    B::Log10 => Err(unsupported(self, "WGSL has no log10 matching the CPU's")),
                    _ if *result == Type::F32 => Ok(format!("{b}({cx})")),
                    _ => Err(unsupported(
                        self,
                        "f64 transcendental functions have no GPU instruction (only sqrt is exact in f64)",
                    )),
                }
            }
            B::DateYear | B::DateMonth | B::DateDay => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                self.date_part(b, &x, result)
            }
            B::Date => {
                let Some(x) = arg(0) else {
                    return Err(unsupported(self, "expects one argument"));
                };
                if x.ty != Type::Dt {
                    return Err(unsupported(self, "@date of a value that is not a dt"));
                }
                self.helper(Helper::DaysOfDt);
                Ok(format!("days_of_dt({})", x.expr))
            }
            B::DatetimeDiff => {
                let (Some(x), Some(y)) = (arg(0), arg(1)) else {
                    return Err(unsupported(self, "expects two arguments"));
                };
                if x.ty != y.ty || !x.ty.is_temporal() {
                    return Err(unsupported(self, "operands of different temporal types"));
                }
                let (cx, cy) = (self.conv_raw(&x, result)?, self.conv_raw(&y, result)?);
                Ok(format!("({cy} - {cx})"))
            }
            _ => Err(unsupported(
                self,
                "this builtin is not generated on the GPU yet",
            )),
        }
    }

    /// Converts a value to a real type's register type (bool counts as its 0/1 integer).
    fn conv(&self, val: &Val, to: &Type) -> Result<String, CodegenError> {
        if !(val.ty.is_real() && to.is_real()) {
            return Err(self.error(None, format!("arithmetic between {} and {to}", val.ty)));
        }
        wgsl::convert(&val.expr, &val.ty, to)
            .ok_or_else(|| self.error(None, format!("no conversion from {} to {to}", val.ty)))
    }

    /// Converts the integer encoding of any value type to `to`'s register type.
    fn conv_raw(&self, val: &Val, to: &Type) -> Result<String, CodegenError> {
        wgsl::convert(&val.expr, &val.ty, to)
            .ok_or_else(|| self.error(None, format!("no conversion from {} to {to}", val.ty)))
    }

    fn temporal_arithmetic(
        &mut self,
        b: Builtin,
        x: &Val,
        y: &Val,
        result: &Type,
    ) -> Result<String, CodegenError> {
        let reg = wgsl::register_type(result).unwrap_or("i32");
        let as_result = |v: &Val| -> String {
            let own = wgsl::register_type(&v.ty).unwrap_or("i32");
            if own == reg {
                v.expr.clone()
            } else {
                format!("{reg}({})", v.expr)
            }
        };
        match (b, x.ty.is_temporal(), y.ty.is_temporal()) {
            (Builtin::Plus, true, false) if y.ty.is_integer() => {
                Ok(format!("({} + {})", as_result(x), as_result(y)))
            }
            (Builtin::Plus, false, true) if x.ty.is_integer() => {
                Ok(format!("({} + {})", as_result(x), as_result(y)))
            }
            (Builtin::Minus, true, false) if y.ty.is_integer() => {
                Ok(format!("({} - {})", as_result(x), as_result(y)))
            }
            (Builtin::Minus, true, true) if x.ty == y.ty => {
                Ok(format!("({} - {})", as_result(x), as_result(y)))
            }
            _ => Err(self.error(Some(b), format!("@{b} of {} and {}", x.ty, y.ty))),
        }
    }

    fn compare(&mut self, b: Builtin, x: &Val, y: &Val) -> Result<String, CodegenError> {
        let op = match b {
            Builtin::Lt => "<",
            Builtin::Leq => "<=",
            Builtin::Gt => ">",
            Builtin::Geq => ">=",
            Builtin::Eq => "==",
            _ => "!=",
        };
        let strings = |t: &Type| matches!(t, Type::Sym | Type::Str);
        if strings(&x.ty) && strings(&y.ty) {
            return match (&x.text, &y.text) {
                (None, Some(text)) => self.compare_with_text(op, x, text),
                (Some(text), None) => self.compare_with_text(flip(op), y, text),
                (Some(_), Some(_)) => {
                    Err(self.error(Some(b), "a comparison of two string literals"))
                }
                (None, None) => {
                    match (&x.dictionary, &y.dictionary) {
                        (Some(DictionarySource::Input(a)), Some(DictionarySource::Input(c))) => {
                            if a != c {
                                let requirement = LaunchRequirement::SameDictionary(*a, *c);
                                if !self.requirements.contains(&requirement) {
                                    self.requirements.push(requirement);
                                }
                            }
                        }
                        _ => {
                            return Err(self.error(
                                Some(b),
                                "a comparison of strings whose dictionaries are not known",
                            ))
                        }
                    }
                    Ok(format!("({} {op} {})", x.expr, y.expr))
                }
            };
        }
        if x.ty.is_real() && y.ty.is_real() {
            let common = Type::promote(&x.ty, &y.ty).unwrap_or(Type::F64);
            // Bools compare as 0/1 words (WGSL orders no bools).
            let common = if common == Type::Bool {
                Type::Char
            } else {
                common
            };
            let (cx, cy) = (self.conv_raw(x, &common)?, self.conv_raw(y, &common)?);
            return Ok(format!("({cx} {op} {cy})"));
        }
        if x.ty == y.ty && (x.ty.is_temporal() || x.ty == Type::Char) {
            return Ok(format!("({} {op} {})", x.expr, y.expr));
        }
        Err(self.error(Some(b), format!("a comparison of {} with {}", x.ty, y.ty)))
    }

    /// `column op "text"` through the launch-resolved bounds of the text in the column's
    /// dictionary (see `ParamValue::SymbolLower`).
    fn compare_with_text(
        &mut self,
        op: &str,
        column: &Val,
        text: &str,
    ) -> Result<String, CodegenError> {
        let Some(DictionarySource::Input(slot)) = column.dictionary.clone() else {
            return Err(self.error(
                None,
                "a string literal compared with a value of unknown dictionary",
            ));
        };
        let key = (text.to_string(), slot.0);
        let (lower, upper) = match self.symbol_params.get(&key) {
            Some(names) => names.clone(),
            None => {
                let k = self.symbol_params.len();
                let lower = self.param(
                    format!("sym{k}_lower"),
                    ParamValue::SymbolLower {
                        text: text.to_string(),
                        slot,
                    },
                );
                let upper = self.param(
                    format!("sym{k}_upper"),
                    ParamValue::SymbolUpper {
                        text: text.to_string(),
                        slot,
                    },
                );
                self.symbol_params
                    .insert(key, (lower.clone(), upper.clone()));
                (lower, upper)
            }
        };
        let code = &column.expr;
        Ok(match op {
            "<" => format!("({code} < {lower})"),
            "<=" => format!("({code} < {upper})"),
            ">" => format!("({code} >= {upper})"),
            ">=" => format!("({code} >= {lower})"),
            "==" => format!("(({code} >= {lower}) && ({code} < {upper}))"),
            _ => format!("(({code} < {lower}) || ({code} >= {upper}))"),
        })
    }

    fn numeric_unary(
        &mut self,
        b: Builtin,
        x: &Val,
        result: &Type,
    ) -> Result<String, CodegenError> {
        use Builtin as B;
        if !x.ty.is_real() {
            return Err(self.error(Some(b), format!("@{b} of {}", x.ty)));
        }
        let cx = self.conv(x, result)?;
        let float = result.is_float();
        let zero = wgsl::zero(wgsl::register_type(result).unwrap_or("i32"));
        Ok(match b {
            B::Neg => wgsl::wrap_narrow(format!("(-{cx})"), result),
            B::Abs if *result == Type::Bool => cx,
            B::Abs => wgsl::wrap_narrow(format!("abs({cx})"), result),
            B::Signum if *result == Type::Bool => cx,
            B::Signum => {
                let (one, minus) = match wgsl::register_type(result) {
                    Some("f32") => ("1.0f", "-1.0f"),
                    Some("f64") => ("1.0lf", "-1.0lf"),
                    Some("i64") => ("1li", "-1li"),
                    _ => ("1i", "-1i"),
                };
                let keep = if float { cx.clone() } else { zero.to_string() };
                format!("select(select({keep}, {minus}, {cx} < {zero}), {one}, {cx} > {zero})")
            }
            B::Ceil | B::Floor | B::Round | B::Conj if !float => cx,
            B::Conj => cx,
            B::Ceil => format!("ceil({cx})"),
            B::Floor => format!("floor({cx})"),
            _ => {
                self.helper(Helper::Round);
                let suffix = if *result == Type::F32 { "f32" } else { "f64" };
                format!("round_{suffix}({cx})")
            }
        })
    }

    fn date_part(&mut self, b: Builtin, x: &Val, result: &Type) -> Result<String, CodegenError> {
        let part = match b {
            Builtin::DateYear => "x",
            Builtin::DateMonth => "y",
            _ => "z",
        };
        let raw = match x.ty {
            Type::Date => {
                self.helper(Helper::CivilFromDays);
                format!("civil_from_days({}).{part}", x.expr)
            }
            Type::Dt => {
                self.helper(Helper::CivilFromDays);
                self.helper(Helper::DaysOfDt);
                format!("civil_from_days(days_of_dt({})).{part}", x.expr)
            }
            Type::Month if b != Builtin::DateDay => {
                self.helper(Helper::FloorDiv);
                if b == Builtin::DateYear {
                    format!("floor_div_i32({}, 12i)", x.expr)
                } else {
                    format!("(floor_mod_i32({}, 12i) + 1i)", x.expr)
                }
            }
            _ => return Err(self.error(Some(b), format!("@{b} of {}", x.ty))),
        };
        let part_val = Val::scalar(raw, Type::I32);
        self.conv_raw(&part_val, result)
    }

    fn helper(&mut self, helper: Helper) {
        for &required in helper.requires() {
            self.helpers.insert(required);
        }
        self.helpers.insert(helper);
    }

    // ----- assembly ------------------------------------------------------------------------

    fn assemble(self) -> Result<KernelLaunch, CodegenError> {
        match &self.layout {
            Layout::Vector { .. } => self.assemble_vector(),
            Layout::List { .. } => self.assemble_list(),
        }
    }

    fn output_element(&self, local: LocalId, ty: &Type) -> Result<GpuElement, CodegenError> {
        let cell = match ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        GpuElement::of_type(&cell).ok_or_else(|| {
            self.error(
                None,
                format!("output {} of type {ty} has no GPU layout", self.name(local)),
            )
        })
    }

    fn assemble_vector(mut self) -> Result<KernelLaunch, CodegenError> {
        let Layout::Vector { length, .. } = &self.layout else {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "not a vector kernel",
            ));
        };
        let length = length.clone();
        let n = self.param("n".to_string(), ParamValue::Length(length.clone()));
        // Outputs: full ones written at i, compressed ones grouped by activity and compacted.
        let mut outputs = Vec::new();
        let mut full_writes = Vec::new();
        let mut groups: BTreeMap<String, Vec<(LocalId, Val)>> = BTreeMap::new();
        let mut reduced = Vec::new();
        for &local in &self.kernel.outputs.clone() {
            let ty = self.local_type(local);
            if let Some(k) = self.reductions.iter().position(|r| r.target == local) {
                reduced.push((local, k));
                continue;
            }
            let Some(val) = self.values.get(&local).cloned() else {
                return Err(CodegenError::malformed(
                    &self.kernel.name,
                    &format!("output {} is not defined by the kernel", self.name(local)),
                ));
            };
            if val.level != Level::Element {
                self.current = *self.kernel.statements.last().unwrap_or(&self.current);
                return Err(self.error(
                    None,
                    format!(
                        "output {} is one element computed per thread of a wider kernel",
                        self.name(local)
                    ),
                ));
            }
            let element = self.output_element(local, &ty)?;
            if val.active.is_empty() {
                let buffer = self.output_binding(local, ValuePart::Elements, element);
                full_writes.push(format!(
                    "{buffer}[i] = {};",
                    wgsl::store(&val.expr, &val.ty)
                ));
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: length.clone(),
                        capacity: length.clone(),
                    },
                    dictionary: val.dictionary.clone(),
                });
            } else {
                groups
                    .entry(val.active.join(" && "))
                    .or_default()
                    .push((local, val));
            }
        }
        let mut passes = Vec::new();
        let mut flag_writes = Vec::new();
        let mut compact_writes = Vec::new();
        for (g, (condition, members)) in groups.iter().enumerate() {
            let (flags, flags_name) = self.scratch_binding(
                Scratch {
                    element: GpuElement::U32,
                    elements: length.clone(),
                    purpose: ScratchPurpose::Flags,
                },
                format!("flags{g}"),
            );
            let offsets_length = match &length {
                Length::Constant(k) => Length::Constant(k + 1),
                other => other.clone(),
            };
            let (offsets, offsets_name) = self.scratch_binding(
                Scratch {
                    element: GpuElement::U32,
                    elements: offsets_length,
                    purpose: ScratchPurpose::Offsets,
                },
                format!("offsets{g}"),
            );
            flag_writes.push(format!("{flags_name}[i] = select(0u, 1u, {condition});"));
            passes.push(Pass::ExclusiveScan {
                flags,
                offsets,
                length: length.clone(),
            });
            let mut stores = Vec::new();
            for (local, val) in members {
                let ty = self.local_type(*local);
                let element = self.output_element(*local, &ty)?;
                let buffer = self.output_binding(*local, ValuePart::Elements, element);
                stores.push(format!(
                    "    {buffer}[{offsets_name}[i]] = {};",
                    wgsl::store(&val.expr, &val.ty)
                ));
                outputs.push(KernelOutput {
                    slot: Self::slot(*local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: Length::Compacted(offsets),
                        capacity: length.clone(),
                    },
                    dictionary: val.dictionary.clone(),
                });
            }
            compact_writes.push(format!("if {condition} {{"));
            compact_writes.extend(stores);
            compact_writes.push("}".to_string());
        }
        // Reductions: partials per workgroup, then one workgroup folds them.
        let mut partial_names = Vec::new();
        for k in 0..self.reductions.len() {
            let acc = self.reductions[k].acc;
            let element = gpu_element(acc);
            let (_, sum_name) = self.scratch_binding(
                Scratch {
                    element,
                    elements: Length::Constant(u64::from(MAX_REDUCTION_WORKGROUPS)),
                    purpose: ScratchPurpose::Partials,
                },
                format!("partials{k}"),
            );
            let count_name = if self.reductions[k].counted {
                Some(
                    self.scratch_binding(
                        Scratch {
                            element: GpuElement::U32,
                            elements: Length::Constant(u64::from(MAX_REDUCTION_WORKGROUPS)),
                            purpose: ScratchPurpose::Partials,
                        },
                        format!("partial_counts{k}"),
                    )
                    .1,
                )
            } else {
                None
            };
            partial_names.push((sum_name, count_name));
        }
        let mut reduction_outputs = Vec::new();
        for (local, k) in &reduced {
            let reduction = self.reductions[*k].clone();
            let element = self.output_element(*local, &reduction.result)?;
            let buffer = self.output_binding(*local, ValuePart::Elements, element);
            reduction_outputs.push((*k, buffer));
            outputs.push(KernelOutput {
                slot: Self::slot(*local),
                ty: reduction.result.clone(),
                layout: OutputLayout::Vector {
                    length: Length::Constant(1),
                    capacity: Length::Constant(1),
                },
                dictionary: reduction.dictionary.clone(),
            });
        }
        let has_reductions = !self.reductions.is_empty();
        let main_pass_index = passes.len() + usize::from(!groups.is_empty());
        let partials_param = if has_reductions {
            Some(self.param(
                "partials".to_string(),
                ParamValue::Workgroups {
                    pass: main_pass_index,
                },
            ))
        } else {
            None
        };

        // Text.
        let mut entries = String::new();
        let body = indent(&self.element_lines, 2);
        if !groups.is_empty() {
            let mut text = entry_header("flags_pass");
            text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
            let _ = writeln!(
                text,
                "    for (var i = global_id.x; i < {n}; i = i + stride) {{"
            );
            text += &body;
            text += &indent(&flag_writes, 2);
            text += "    }\n}\n";
            entries += &text;
            entries += "\n";
            // The scans come after the flags pass.
            let scans = std::mem::take(&mut passes);
            passes.push(Pass::Entry {
                entry_point: "flags_pass".to_string(),
                dispatch: Dispatch::Elements {
                    length: length.clone(),
                    max_workgroups: MAX_DISPATCH_WORKGROUPS,
                },
            });
            passes.extend(scans);
        }
        let mut text = entry_header("main_pass");
        text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
        for (k, r) in self.reductions.iter().enumerate() {
            let _ = writeln!(text, "    var acc{k}: {} = {};", r.acc, r.identity);
            if r.counted {
                let _ = writeln!(text, "    var count{k}: u32 = 0u;");
            }
        }
        let _ = writeln!(
            text,
            "    for (var i = global_id.x; i < {n}; i = i + stride) {{"
        );
        text += &body;
        text += &indent(&accumulate_lines(&self.reductions), 2);
        text += &indent(&full_writes, 2);
        text += &indent(&compact_writes, 2);
        text += "    }\n";
        for (k, r) in self.reductions.iter().enumerate() {
            let (sum_name, count_name) = &partial_names[k];
            let _ = writeln!(
                text,
                "    let total{k} = workgroup_{}_{}(local_id.x, acc{k});",
                combine_name(r.op),
                r.acc
            );
            let _ = writeln!(
                text,
                "    if local_id.x == 0u {{ {sum_name}[workgroup_id.x] = total{k}; }}"
            );
            if let Some(count_name) = count_name {
                let _ = writeln!(
                    text,
                    "    let total_count{k} = workgroup_sum_u32(local_id.x, count{k});"
                );
                let _ = writeln!(
                    text,
                    "    if local_id.x == 0u {{ {count_name}[workgroup_id.x] = total_count{k}; }}"
                );
            }
        }
        text += "}\n";
        entries += &text;
        passes.push(Pass::Entry {
            entry_point: "main_pass".to_string(),
            dispatch: Dispatch::Elements {
                length: length.clone(),
                max_workgroups: if has_reductions {
                    MAX_REDUCTION_WORKGROUPS
                } else {
                    MAX_DISPATCH_WORKGROUPS
                },
            },
        });
        if let Some(partials) = partials_param {
            let mut text = entry_header("finish_pass");
            for (k, r) in self.reductions.iter().enumerate() {
                let (sum_name, count_name) = &partial_names[k];
                let _ = writeln!(text, "    var acc{k}: {} = {};", r.acc, r.identity);
                let _ = writeln!(text, "    var count{k}: u32 = 0u;");
                // Each invocation folds the partials local_id, local_id + 256, … in order.
                let _ = writeln!(
                    text,
                    "    for (var p = local_id.x; p < {partials}; p = p + WORKGROUP_SIZE) {{"
                );
                let _ = writeln!(
                    text,
                    "        acc{k} = {};",
                    combine(r.op, &format!("acc{k}"), &format!("{sum_name}[p]"))
                );
                if let Some(count_name) = count_name {
                    let _ = writeln!(text, "        count{k} = count{k} + {count_name}[p];");
                }
                text += "    }\n";
                let _ = writeln!(
                    text,
                    "    let total{k} = workgroup_{}_{}(local_id.x, acc{k});",
                    combine_name(r.op),
                    r.acc
                );
                if r.counted {
                    let _ = writeln!(
                        text,
                        "    let total_count{k} = workgroup_sum_u32(local_id.x, count{k});"
                    );
                }
            }
            text += "    if local_id.x == 0u {\n";
            for (k, buffer) in &reduction_outputs {
                let r = &self.reductions[*k];
                let _ = writeln!(text, "        {buffer}[0] = {};", finish_value(r, *k));
            }
            for (k, r) in self.reductions.iter().enumerate() {
                if let Some(bit) = r.empty_bit {
                    let _ = writeln!(
                        text,
                        "        if total_count{k} == 0u {{ atomicOr(&status[0], {}u); }}",
                        1u32 << bit
                    );
                }
            }
            text += "    }\n}\n";
            entries += "\n";
            entries += &text;
            passes.push(Pass::Entry {
                entry_point: "finish_pass".to_string(),
                dispatch: Dispatch::Single,
            });
        }
        self.finish(entries, passes, outputs)
    }

    fn assemble_list(mut self) -> Result<KernelLaunch, CodegenError> {
        let Layout::List { offsets_of, .. } = &self.layout else {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "not a list kernel",
            ));
        };
        let offsets_of = *offsets_of;
        let cells_length = Length::Of {
            slot: Self::slot(offsets_of),
            part: ValuePart::ListOffsets,
        };
        let values_length = Length::Of {
            slot: Self::slot(offsets_of),
            part: ValuePart::ListValues,
        };
        let cells = self.param(
            "cells".to_string(),
            ParamValue::Length(cells_length.clone()),
        );
        let offsets = self.input_binding(offsets_of, ValuePart::ListOffsets, GpuElement::U32);
        let mut outputs = Vec::new();
        let mut element_writes = Vec::new();
        let mut cell_writes = Vec::new();
        for &local in &self.kernel.outputs.clone() {
            let ty = self.local_type(local);
            let element = self.output_element(local, &ty)?;
            let is_list = matches!(ty, Type::List(_));
            if let Some(k) = self.reductions.iter().position(|r| r.target == local) {
                let r = self.reductions[k].clone();
                let part = if is_list {
                    ValuePart::ListValues
                } else {
                    ValuePart::Elements
                };
                let buffer = self.output_binding(local, part, element);
                cell_writes.push(format!("{buffer}[c] = {};", finish_value(&r, k)));
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: if is_list {
                        OutputLayout::ListOfScalars {
                            cells: cells_length.clone(),
                        }
                    } else {
                        OutputLayout::Vector {
                            length: cells_length.clone(),
                            capacity: cells_length.clone(),
                        }
                    },
                    dictionary: r.dictionary.clone(),
                });
                continue;
            }
            let Some(val) = self.values.get(&local).cloned() else {
                return Err(CodegenError::malformed(
                    &self.kernel.name,
                    &format!("output {} is not defined by the kernel", self.name(local)),
                ));
            };
            let part = if is_list {
                ValuePart::ListValues
            } else {
                ValuePart::Elements
            };
            let buffer = self.output_binding(local, part, element);
            let stored = wgsl::store(&val.expr, &val.ty);
            let layout = match (val.level, is_list) {
                (Level::Element, true) => {
                    element_writes.push(format!("{buffer}[e] = {stored};"));
                    OutputLayout::List {
                        offsets_of: Self::slot(offsets_of),
                        values: values_length.clone(),
                    }
                }
                (Level::Element, false) => {
                    element_writes.push(format!("{buffer}[e] = {stored};"));
                    OutputLayout::Vector {
                        length: values_length.clone(),
                        capacity: values_length.clone(),
                    }
                }
                (Level::Cell, true) => {
                    cell_writes.push(format!("{buffer}[c] = {stored};"));
                    OutputLayout::ListOfScalars {
                        cells: cells_length.clone(),
                    }
                }
                (Level::Cell, false) => {
                    cell_writes.push(format!("{buffer}[c] = {stored};"));
                    OutputLayout::Vector {
                        length: cells_length.clone(),
                        capacity: cells_length.clone(),
                    }
                }
                (Level::Scalar, _) => {
                    return Err(self.error(
                        None,
                        format!(
                            "output {} is one element inside a list kernel",
                            self.name(local)
                        ),
                    ))
                }
            };
            outputs.push(KernelOutput {
                slot: Self::slot(local),
                ty,
                layout,
                dictionary: val.dictionary.clone(),
            });
        }
        if self.values.values().any(|v| !v.active.is_empty())
            || self.reductions.iter().any(|r| !r.active.is_empty())
        {
            return Err(self.error(
                None,
                "compressed values inside a list kernel are not generated yet",
            ));
        }
        let mut text = entry_header("cells_pass");
        let _ = writeln!(
            text,
            "    for (var c = workgroup_id.x; c < {cells}; c = c + num_workgroups.x) {{"
        );
        let _ = writeln!(text, "        let cell_start = {offsets}[c];");
        let _ = writeln!(text, "        let cell_end = {offsets}[c + 1u];");
        for (k, r) in self.reductions.iter().enumerate() {
            let _ = writeln!(text, "        var acc{k}: {} = {};", r.acc, r.identity);
            if r.counted {
                let _ = writeln!(text, "        var count{k}: u32 = 0u;");
            }
        }
        text += "        for (var e = cell_start + local_id.x; e < cell_end; e = e + WORKGROUP_SIZE) {\n";
        text += &indent(&self.element_lines, 3);
        text += &indent(&accumulate_lines(&self.reductions), 3);
        text += &indent(&element_writes, 3);
        text += "        }\n";
        for (k, r) in self.reductions.iter().enumerate() {
            let _ = writeln!(
                text,
                "        let total{k} = workgroup_{}_{}(local_id.x, acc{k});",
                combine_name(r.op),
                r.acc
            );
            if r.counted {
                let _ = writeln!(
                    text,
                    "        let total_count{k} = workgroup_sum_u32(local_id.x, count{k});"
                );
            }
        }
        // Cell-level statements read the cell's reductions by their locals' names.
        let mut reduced_lines = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            let name = self.name(r.target);
            let ty = wgsl::register_type(&r.result).unwrap_or("f64");
            reduced_lines.push(format!("let v_{name}: {ty} = {};", finish_value(r, k)));
        }
        text += &indent(&reduced_lines, 2);
        text += &indent(&self.cell_lines, 2);
        text += "        if local_id.x == 0u {\n";
        text += &indent(&cell_writes, 3);
        for (k, r) in self.reductions.iter().enumerate() {
            if let Some(bit) = r.empty_bit {
                let _ = writeln!(
                    text,
                    "            if total_count{k} == 0u {{ atomicOr(&status[0], {}u); }}",
                    1u32 << bit
                );
            }
        }
        text += "        }\n    }\n}\n";
        let passes = vec![Pass::Entry {
            entry_point: "cells_pass".to_string(),
            dispatch: Dispatch::Cells {
                cells: cells_length,
                max_workgroups: MAX_DISPATCH_WORKGROUPS,
            },
        }];
        self.finish(text, passes, outputs)
    }

    fn finish(
        self,
        entries: String,
        passes: Vec<Pass>,
        outputs: Vec<KernelOutput>,
    ) -> Result<KernelLaunch, CodegenError> {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "// Kernel {} of {}: statements {}.",
            self.kernel.name,
            self.function.qualified_name(),
            self.kernel
                .statements
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        text += "// Generated by horsec; the launch description says how to bind and run it.\n\n";
        let _ = writeln!(
            text,
            "const WORKGROUP_SIZE: u32 = {KERNEL_WORKGROUP_SIZE}u;\n"
        );
        // Params: one u32 per field, padded to a multiple of four words.
        text += "struct Params {\n";
        for field in &self.params {
            let _ = writeln!(text, "    {}: u32,", field.name);
        }
        let padding = (4 - self.params.len() % 4) % 4;
        for k in 0..padding {
            let _ = writeln!(text, "    padding{k}: u32,");
        }
        text += "}\n\n";
        text += "@group(0) @binding(0) var<uniform> params: Params;\n";
        for binding in &self.bindings {
            let access = match binding.access {
                Access::Read => "read",
                Access::ReadWrite => "read_write",
            };
            let element = if binding.name == "status" {
                "atomic<u32>".to_string()
            } else {
                binding.element.wgsl().to_string()
            };
            let _ = writeln!(
                text,
                "@group({}) @binding({}) var<storage, {access}> {}: array<{element}>;",
                binding.group, binding.binding, binding.name
            );
        }
        text += "\n";
        // Workgroup reductions, one per (operation, type) used.
        let mut combiners: BTreeSet<(&'static str, &'static str)> = BTreeSet::new();
        for r in &self.reductions {
            combiners.insert((combine_name(r.op), r.acc));
            if r.counted {
                combiners.insert(("sum", "u32"));
            }
        }
        let types: BTreeSet<&str> = combiners.iter().map(|(_, t)| *t).collect();
        for ty in &types {
            let _ = writeln!(
                text,
                "var<workgroup> shared_{ty}: array<{ty}, WORKGROUP_SIZE>;"
            );
        }
        if !types.is_empty() {
            text += "\n";
        }
        for (op, ty) in &combiners {
            text += &workgroup_reduce(op, ty);
            text += "\n";
        }
        for helper in &self.helpers {
            text += helper.source();
            text += "\n";
        }
        text += &entries;
        let launch = KernelLaunch {
            name: self.kernel.name.clone(),
            wgsl: text,
            features: self.features,
            bindings: self.bindings,
            params: self.params,
            scratch: self.scratch,
            passes,
            outputs,
            requirements: self.requirements,
            checks: self.checks,
        };
        Ok(launch)
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
            combine(r.op, &format!("acc{k}"), &r.value)
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

/// Folds `value` into `acc`. Min and max pick by comparison, so a NaN never replaces a number.
fn combine(op: ReduceOp, acc: &str, value: &str) -> String {
    match op {
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
    let step = match op {
        "min" => "select(a, b, b < a)",
        "max" => "select(a, b, b > a)",
        _ => "a + b",
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

/// Whether `@min`/`@max` of `ty` have a value for no elements (the CPU's identities).
fn has_identity(ty: &Type) -> bool {
    ty.is_real()
}

/// The accumulator type and starting value of `@min` (`max` false) or `@max` of `ty`: the
/// CPU's identity where it has one, else the register type's extreme (the kernel then also
/// counts, and reports no elements as an error).
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
        Type::F32 => (
            "f32",
            wgsl::float_literal(
                if max {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
                true,
            ),
        ),
        Type::F64 => (
            "f64",
            wgsl::float_literal(
                if max {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
                false,
            ),
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

fn is_elementwise(b: Builtin) -> bool {
    use Builtin as B;
    matches!(
        b,
        B::Plus
            | B::Minus
            | B::Mul
            | B::Div
            | B::Lt
            | B::Leq
            | B::Gt
            | B::Geq
            | B::Eq
            | B::Neq
            | B::And
            | B::Or
            | B::Nand
            | B::Nor
            | B::Xor
            | B::Not
            | B::Neg
            | B::Abs
            | B::Signum
            | B::Ceil
            | B::Floor
            | B::Round
            | B::Conj
            | B::Sqrt
            | B::Recip
            | B::Pi
            | B::DateYear
            | B::DateMonth
            | B::DateDay
            | B::Date
            | B::DatetimeDiff
    )
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
