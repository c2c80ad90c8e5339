//! Lowering: the typed program becomes a runtime [`Plan`].
//!
//! Locals become frame slots one to one, literals become constant values in the runtime's
//! encodings, globals (always literal-initialised) are inlined as constants, and every
//! statement keeps the source location of its span for runtime errors.

use std::sync::Arc;

use horsec_runtime::builtin::Builtin;
use horsec_runtime::plan::{
    self, Arg, Callee, Expr, FunctionId, Location, Operand, Plan, PlanFunction, Slot, SlotInfo,
    Step,
};
use horsec_runtime::types::Type;
use horsec_runtime::typing::compat::converts_at_assignment;
use horsec_runtime::value::{Complex, Strings, Value, Vector};

use horsec_runtime::kernel::KernelLaunch;

use crate::analysis::statements::StatementTree;
use crate::analysis::StmtId;
use crate::diag::SourceFile;
use crate::outline::{KernelId, OutlinedFunction, OutlinedProgram, OutlinedStmt};
use crate::sema::typed::{self, TypedProgram};
use crate::syntax::ast::{Literal, LiteralValue, Span};

/// Lowers a typed program to a plan. `source` locates statements for runtime errors.
pub fn lower(program: &TypedProgram, source: &SourceFile) -> Plan {
    let lowering = Lowering { program, source };
    Plan {
        functions: program
            .functions
            .iter()
            .map(|f| lowering.function(f))
            .collect(),
        entry: FunctionId(program.entry.0),
        target: plan::Target::Cpu,
        last_uses: Default::default(),
    }
}

/// Lowers an outlined program to a GPU plan: host and library statements become steps as in
/// [`lower`], each kernel becomes a [`Step::Launch`] of its generated module.
/// `modules[f][k]` is the module of kernel `k` of `outlined.functions[f]`; a kernel without
/// one (code generation does not cover it) becomes its statements, run on the CPU.
pub fn lower_gpu(
    program: &TypedProgram,
    outlined: &OutlinedProgram,
    modules: &[Vec<Option<Arc<KernelLaunch>>>],
    source: &SourceFile,
) -> Result<Plan, String> {
    let lowering = Lowering { program, source };
    // An outlined function's body is lowered from its outline below: lowering its statements
    // for the CPU first only made steps to drop.
    let mut is_outlined = vec![false; program.functions.len()];
    for f in &outlined.functions {
        if let Some(flag) = is_outlined.get_mut(f.function.0) {
            *flag = true;
        }
    }
    let mut functions: Vec<PlanFunction> = program
        .functions
        .iter()
        .zip(&is_outlined)
        .map(|(f, &outlined)| {
            if outlined {
                lowering.function_header(f)
            } else {
                lowering.function(f)
            }
        })
        .collect();
    for (index, outlined_function) in outlined.functions.iter().enumerate() {
        let id = outlined_function.function;
        let function = program
            .functions
            .get(id.0)
            .ok_or_else(|| format!("outlined function #{} is not in the program", id.0))?;
        let tree = StatementTree::new(function);
        let kernels = modules
            .get(index)
            .ok_or_else(|| format!("no kernel modules for {}", function.qualified_name()))?;
        let gpu = GpuLowering {
            lowering: &lowering,
            function,
            tree: &tree,
            outlined: outlined_function,
            kernels,
        };
        functions[id.0].body = gpu.body(&outlined_function.body)?;
        // The decline flags of grouped kernels: slots past the function's locals.
        let mut flags: Vec<(usize, String)> = outlined_function
            .kernels
            .iter()
            .filter_map(|k| Some((k.grouped.as_ref()?.declined.0, k.name.clone())))
            .collect();
        flags.sort();
        let slots = &mut functions[id.0].slots;
        for (slot, kernel) in flags {
            if slot != slots.len() {
                return Err(format!(
                    "the decline flag of {kernel} is slot {slot}, not the next one ({})",
                    slots.len()
                ));
            }
            slots.push(SlotInfo {
                name: format!("{kernel}_declined"),
                ty: Type::Bool,
            });
        }
    }
    Ok(Plan {
        functions,
        entry: FunctionId(program.entry.0),
        target: plan::Target::Gpu,
        last_uses: Default::default(),
    })
}

/// Sets the line and column of each check site of `launch` from its offset in `source`, so
/// that the kernel's errors are located as the CPU's are. The driver does this to each
/// kernel as it generates it, before sharing it: located in the lowering, every kernel with
/// a check was copied whole (its WGSL text with it) to be located.
pub(crate) fn locate_check_sites(launch: &mut KernelLaunch, source: &SourceFile) {
    let sites = launch
        .checks
        .iter_mut()
        .map(|c| &mut c.site)
        .chain(launch.launch_checks.iter_mut().map(|c| &mut c.site));
    for site in sites {
        site.at = Some(location_at(source, site.offset));
    }
}

/// The line and column of byte `offset` of `source`.
fn location_at(source: &SourceFile, offset: usize) -> Location {
    let (line, column) = source.line_col(offset);
    Location {
        line: line as u32,
        column: column as u32,
    }
}

struct GpuLowering<'a> {
    lowering: &'a Lowering<'a>,
    function: &'a typed::Function,
    tree: &'a StatementTree<'a>,
    outlined: &'a OutlinedFunction,
    kernels: &'a [Option<Arc<KernelLaunch>>],
}

impl GpuLowering<'_> {
    fn body(&self, stmts: &[OutlinedStmt]) -> Result<Vec<Step>, String> {
        let mut steps = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            match stmt {
                OutlinedStmt::Launch(k) if matches!(self.kernels.get(k.0), Some(None)) => {
                    steps.extend(self.kernel_on_host(*k)?);
                }
                OutlinedStmt::Grouped { kernel, fallback } => {
                    steps.extend(self.grouped(*kernel, fallback)?);
                }
                _ => steps.extend(self.stmt(stmt)?),
            }
        }
        Ok(steps)
    }

    /// The statements of a kernel that has no GPU module, as host steps in program order
    /// (a compound statement brings its body, so statements nested in one are skipped).
    fn kernel_on_host(&self, k: KernelId) -> Result<Vec<Step>, String> {
        let kernel = self
            .outlined
            .kernel(k)
            .ok_or_else(|| format!("kernel #{} is not in the function", k.0))?;
        let listed: std::collections::HashSet<StmtId> = kernel.statements.iter().copied().collect();
        let mut steps = Vec::new();
        for id in &kernel.statements {
            let mut parent = self.tree.get(*id).and_then(|e| e.parent);
            let mut nested = false;
            while let Some(p) = parent {
                if listed.contains(&p) {
                    nested = true;
                    break;
                }
                parent = self.tree.get(p).and_then(|e| e.parent);
            }
            if !nested {
                steps.extend(self.lowering.stmt(self.function, self.typed(*id)?));
            }
        }
        Ok(steps)
    }

    /// A grouped kernel's launch, then its fallback under its decline flag; only the
    /// fallback where code generation does not cover the grouped kernel.
    fn grouped(&self, k: KernelId, fallback: &[OutlinedStmt]) -> Result<Vec<Step>, String> {
        let kernel = self
            .outlined
            .kernel(k)
            .ok_or_else(|| format!("kernel #{} is not in the function", k.0))?;
        let grouped = kernel
            .grouped
            .as_ref()
            .ok_or_else(|| format!("kernel {} is not grouped", kernel.name))?;
        if !matches!(self.kernels.get(k.0), Some(Some(_))) {
            return self.body(fallback);
        }
        let Some(launch) = self.stmt(&OutlinedStmt::Launch(k))? else {
            return Err(format!("kernel {} gave no launch", kernel.name));
        };
        let at = match &launch {
            Step::Launch { at, .. } => *at,
            _ => Location::default(),
        };
        Ok(vec![
            launch,
            Step::If {
                cond: Operand::Slot(Slot(grouped.declined.0)),
                then_body: self.body(fallback)?,
                else_body: Vec::new(),
                at,
            },
        ])
    }

    fn typed(&self, id: StmtId) -> Result<&typed::Stmt, String> {
        self.tree
            .get(id)
            .map(|entry| entry.stmt)
            .ok_or_else(|| format!("statement {id} is not in the function"))
    }

    /// The kernel with the line and column of each of its checks' statements, so that its
    /// errors are located as the CPU's are.
    /// (The driver locates them as it generates each kernel, see [`locate_check_sites`]; a
    /// kernel with a site not located is copied and located here.)
    fn locate_checks(&self, module: &Arc<KernelLaunch>) -> Arc<KernelLaunch> {
        let located = module.checks.iter().all(|c| c.site.at.is_some())
            && module.launch_checks.iter().all(|c| c.site.at.is_some());
        if located {
            return module.clone();
        }
        let mut located = (**module).clone();
        locate_check_sites(&mut located, self.lowering.source);
        Arc::new(located)
    }

    fn stmt(&self, stmt: &OutlinedStmt) -> Result<Option<Step>, String> {
        Ok(match stmt {
            OutlinedStmt::Host(id) | OutlinedStmt::Library(id) => {
                self.lowering.stmt(self.function, self.typed(*id)?)
            }
            OutlinedStmt::GroupAggregate(fused) => {
                let ops: Vec<String> = fused
                    .results
                    .iter()
                    .map(|r| r.reduction.name().to_string())
                    .collect();
                let mut args = vec![
                    Arg::Operand(self.lowering.operand(&fused.key)),
                    Arg::Operand(Operand::Const(Value::Vector(Vector::Sym(
                        Strings::from_strs(&ops),
                    )))),
                ];
                args.extend(
                    fused
                        .results
                        .iter()
                        .filter_map(|r| r.value.as_ref())
                        .map(|v| Arg::Operand(self.lowering.operand(v))),
                );
                // The groups' first rows, then one result per reduction (the interpreter
                // spreads the call's list over these targets).
                let targets = std::iter::once(fused.first.map(|l| Slot(l.0)))
                    .chain(fused.results.iter().map(|r| Some(Slot(r.target.0))))
                    .collect();
                Some(Step::Assign {
                    targets,
                    expr: Expr::Call {
                        callee: Callee::Builtin(Builtin::GroupAggregate),
                        args,
                    },
                    at: self.lowering.location(self.typed(fused.anchor)?.span),
                })
            }
            OutlinedStmt::Grouped { .. } => {
                return Err("a grouped kernel lowered as one step".to_string())
            }
            OutlinedStmt::Launch(k) => {
                let kernel = self
                    .outlined
                    .kernel(*k)
                    .ok_or_else(|| format!("kernel #{} is not in the function", k.0))?;
                let module = self
                    .kernels
                    .get(k.0)
                    .ok_or_else(|| format!("kernel {} has no module", kernel.name))?
                    .as_ref()
                    .ok_or_else(|| format!("kernel {} has no module", kernel.name))?;
                let first = kernel
                    .statements
                    .first()
                    .ok_or_else(|| format!("kernel {} has no statements", kernel.name))?;
                Some(Step::Launch {
                    kernel: self.locate_checks(module),
                    inputs: kernel.inputs.iter().map(|l| Slot(l.0)).collect(),
                    at: self.lowering.location(self.typed(*first)?.span),
                })
            }
            OutlinedStmt::If {
                stmt,
                then_body,
                else_body,
            } => {
                let typed = self.typed(*stmt)?;
                let typed::StmtKind::If { cond, .. } = &typed.kind else {
                    return Err(format!("statement {stmt} is not an if"));
                };
                Some(Step::If {
                    cond: self.lowering.operand(cond),
                    then_body: self.body(then_body)?,
                    else_body: match else_body {
                        Some(b) => self.body(b)?,
                        None => Vec::new(),
                    },
                    at: self.lowering.location(typed.span),
                })
            }
            OutlinedStmt::While { stmt, body } => {
                let typed = self.typed(*stmt)?;
                let typed::StmtKind::While { cond, .. } = &typed.kind else {
                    return Err(format!("statement {stmt} is not a while"));
                };
                Some(Step::While {
                    cond: self.lowering.operand(cond),
                    body: self.body(body)?,
                    at: self.lowering.location(typed.span),
                })
            }
            OutlinedStmt::Repeat { stmt, body } => {
                let typed = self.typed(*stmt)?;
                let typed::StmtKind::Repeat { count, .. } = &typed.kind else {
                    return Err(format!("statement {stmt} is not a repeat"));
                };
                Some(Step::Repeat {
                    count: self.lowering.operand(count),
                    body: self.body(body)?,
                    at: self.lowering.location(typed.span),
                })
            }
        })
    }
}

struct Lowering<'a> {
    program: &'a TypedProgram,
    source: &'a SourceFile,
}

impl Lowering<'_> {
    fn function(&self, f: &typed::Function) -> PlanFunction {
        PlanFunction {
            body: self.block(f, &f.body),
            ..self.function_header(f)
        }
    }

    /// [`Lowering::function`] without the body (left empty).
    fn function_header(&self, f: &typed::Function) -> PlanFunction {
        PlanFunction {
            name: f.qualified_name(),
            params: f.params.iter().map(|l| Slot(l.0)).collect(),
            returns: f.returns.clone(),
            slots: f
                .locals
                .iter()
                .map(|l| SlotInfo {
                    name: l.name.clone(),
                    ty: l.ty.clone(),
                })
                .collect(),
            body: Vec::new(),
        }
    }

    fn block(&self, function: &typed::Function, stmts: &[typed::Stmt]) -> Vec<Step> {
        stmts
            .iter()
            .filter_map(|s| self.stmt(function, s))
            .collect()
    }

    fn location(&self, span: Span) -> Location {
        self.location_at(span.start)
    }

    fn location_at(&self, offset: usize) -> Location {
        location_at(self.source, offset)
    }

    /// The step of `stmt`, a statement of `function`.
    fn stmt(&self, function: &typed::Function, stmt: &typed::Stmt) -> Option<Step> {
        let at = self.location(stmt.span);
        Some(match &stmt.kind {
            // A declaration without a value has nothing to execute.
            typed::StmtKind::Declare(_) => return None,
            typed::StmtKind::Assign { targets, expr, .. } => Step::Assign {
                targets: targets
                    .iter()
                    .map(|t| match t {
                        typed::Target::Local(l) => Some(Slot(l.0)),
                        typed::Target::Discard => None,
                    })
                    .collect(),
                expr: self.assigned(function, targets, expr),
                at,
            },
            typed::StmtKind::Expr(expr) => Step::Assign {
                targets: Vec::new(),
                expr: self.expr(expr),
                at,
            },
            typed::StmtKind::Return(values) => Step::Return {
                values: values.iter().map(|v| self.operand(v)).collect(),
                at,
            },
            typed::StmtKind::If {
                cond,
                then_body,
                else_body,
            } => Step::If {
                cond: self.operand(cond),
                then_body: self.block(function, then_body),
                else_body: else_body
                    .as_deref()
                    .map_or_else(Vec::new, |b| self.block(function, b)),
                at,
            },
            typed::StmtKind::While { cond, body } => Step::While {
                cond: self.operand(cond),
                body: self.block(function, body),
                at,
            },
            typed::StmtKind::Repeat { count, body } => Step::Repeat {
                count: self.operand(count),
                body: self.block(function, body),
                at,
            },
            typed::StmtKind::Break => Step::Break,
            typed::StmtKind::Continue => Step::Continue,
        })
    }

    /// The expression assigned to `targets`, converted to the declared type of a single
    /// target where the declaration converts a numeric value
    /// ([`converts_at_assignment`]; the GPU's kernels convert the same way).
    fn assigned(
        &self,
        function: &typed::Function,
        targets: &[typed::Target],
        expr: &typed::Expr,
    ) -> Expr {
        let lowered = self.expr(expr);
        let ([typed::Target::Local(local)], [value]) = (targets, expr.types.as_slice()) else {
            return lowered;
        };
        match function.locals.get(local.0) {
            Some(declared) if converts_at_assignment(&declared.ty, value) => Expr::Convert {
                expr: Box::new(lowered),
                ty: declared.ty.clone(),
            },
            _ => lowered,
        }
    }

    fn expr(&self, expr: &typed::Expr) -> Expr {
        match &expr.kind {
            typed::ExprKind::Operand(op) => Expr::Operand(self.operand(op)),
            typed::ExprKind::CheckCast { expr, ty } => Expr::CheckCast {
                expr: Box::new(self.expr(expr)),
                ty: ty.clone(),
            },
            typed::ExprKind::Call { callee, args } => Expr::Call {
                callee: lower_callee(*callee),
                args: args
                    .iter()
                    .map(|a| match a {
                        typed::Arg::Operand(op) => Arg::Operand(self.operand(op)),
                        typed::Arg::Function(f, _) => Arg::Function(lower_callee(*f)),
                    })
                    .collect(),
            },
        }
    }

    fn operand(&self, op: &typed::Operand) -> Operand {
        match op {
            typed::Operand::Local(l, _) => Operand::Slot(Slot(l.0)),
            typed::Operand::Global(g, _) => {
                Operand::Const(literal_value(&self.program.globals[g.0].value))
            }
            typed::Operand::Literal(lit) => Operand::Const(literal_value(lit)),
        }
    }
}

fn lower_callee(callee: typed::Callee) -> Callee {
    match callee {
        typed::Callee::Builtin(b) => Callee::Builtin(b),
        typed::Callee::Function(f) => Callee::Function(plan::FunctionId(f.0)),
    }
}

/// The runtime value of a literal, in the encoding of its type. The parser has already
/// checked every element against the type, so a mismatch here cannot happen; an element of
/// another kind is converted as closely as the type allows.
pub fn literal_value(lit: &Literal) -> Value {
    let values = &lit.values;
    // Each element converted straight into the vector of its type (not collected as i64 or
    // f64 first and copied again).
    fn ints<T>(values: &[LiteralValue], convert: impl Fn(i64) -> T) -> Arc<Vec<T>> {
        Arc::new(values.iter().map(|v| convert(int_of(v))).collect())
    }
    let vector = match &lit.ty.ty {
        Type::Bool => Vector::Bool(ints(values, |v| v != 0)),
        Type::Char => Vector::Char(ints(values, |v| v as u8)),
        Type::I8 => Vector::I8(ints(values, |v| v as i8)),
        Type::I16 => Vector::I16(ints(values, |v| v as i16)),
        Type::I32 => Vector::I32(ints(values, |v| v as i32)),
        Type::F32 => Vector::F32(Arc::new(
            values.iter().map(|v| float_of(v) as f32).collect(),
        )),
        Type::F64 => Vector::F64(Arc::new(values.iter().map(float_of).collect())),
        Type::Complex => Vector::Complex(Arc::new(
            values
                .iter()
                .map(|v| match v {
                    LiteralValue::Complex { re, im } => Complex { re: *re, im: *im },
                    other => Complex {
                        re: float_of(other),
                        im: 0.0,
                    },
                })
                .collect(),
        )),
        Type::Sym => Vector::Sym(Strings::from_strs(&texts(values))),
        Type::Str => Vector::Str(Strings::from_strs(&texts(values))),
        Type::Month => Vector::Month(ints(values, |v| v as i32)),
        Type::Date => Vector::Date(ints(values, |v| v as i32)),
        Type::Minute => Vector::Minute(ints(values, |v| v as i32)),
        Type::Second => Vector::Second(ints(values, |v| v as i32)),
        Type::Time => Vector::Time(ints(values, |v| v as i32)),
        Type::Dt => Vector::Dt(ints(values, |v| v)),
        // i64, and any non-vector suffix the checker let through, as the widest integer.
        _ => Vector::I64(ints(values, |v| v)),
    };
    Value::Vector(vector)
}

fn int_of(v: &LiteralValue) -> i64 {
    match v {
        LiteralValue::Bool(b) => i64::from(*b),
        LiteralValue::Char(c) => i64::from(*c),
        LiteralValue::Int(i) => *i,
        LiteralValue::Float(f) => *f as i64,
        LiteralValue::Complex { re, .. } => *re as i64,
        LiteralValue::Text(_) => 0,
        LiteralValue::Date(d)
        | LiteralValue::Month(d)
        | LiteralValue::Minute(d)
        | LiteralValue::Second(d)
        | LiteralValue::Time(d) => i64::from(*d),
        LiteralValue::Dt(d) => *d,
    }
}

fn float_of(v: &LiteralValue) -> f64 {
    match v {
        LiteralValue::Float(f) => *f,
        LiteralValue::Complex { re, .. } => *re,
        other => int_of(other) as f64,
    }
}

/// The literal's elements as text, borrowed where they are text already (a plan holds
/// every literal of the program; a copy of each string cost a visible part of lowering).
fn texts(values: &[LiteralValue]) -> Vec<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    values
        .iter()
        .map(|v| match v {
            LiteralValue::Text(s) => Cow::Borrowed(s.as_str()),
            LiteralValue::Char(c) => Cow::Owned(char::from(*c).to_string()),
            other => Cow::Owned(int_of(other).to_string()),
        })
        .collect()
}
