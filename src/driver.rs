//! The compiler driver: runs the stages in order on one source file and keeps what each
//! produced, with its time, so the CLI and tests can print any stage.

use std::time::{Duration, Instant};

use std::sync::Arc;

use horsec_runtime::kernel::KernelLaunch;
use horsec_runtime::plan::Plan;
pub use horsec_runtime::plan::Target;

use crate::diag::{has_errors, Diagnostic, SourceFile};
use crate::outline::{outline_program, OutlinedProgram};
use crate::sema::{
    self,
    typed::{FunctionId, TypedProgram},
};
use crate::syntax::{self, ast::Program};

/// Everything the compiler produced for one file, up to the first stage that failed.
pub struct Compilation {
    pub file: SourceFile,
    /// Errors and warnings of every stage that ran.
    pub diagnostics: Vec<Diagnostic>,
    pub ast: Option<Program>,
    pub typed: Option<TypedProgram>,
    /// Kernels, library calls and host statements of every function. For a GPU plan, as
    /// code generation left it: a statement the generator could not translate is a host
    /// statement, and its function outlined again without it (`--emit outline` prints the
    /// outliner's own view).
    pub outlined: Option<OutlinedProgram>,
    /// Generated kernels: `kernels[f][k]` is kernel `k` of `outlined.functions[f]`, None
    /// where code generation does not cover a builtin yet (those statements run on the CPU).
    pub kernels: Option<Vec<Vec<Option<Arc<KernelLaunch>>>>>,
    pub plan: Option<Plan>,
    /// For a Datalog file: the HorseIR it lowered to and the relations it reads; the stages
    /// after it (and their diagnostics) are those of the generated HorseIR.
    pub datalog: Option<crate::datalog::Lowered>,
    /// Wall time of each stage that ran, in order.
    pub stage_times: Vec<(&'static str, Duration)>,
}

impl Compilation {
    /// True when a stage reported an error (the later stages did not run).
    pub fn failed(&self) -> bool {
        has_errors(&self.diagnostics)
    }

    /// All diagnostics rendered as `file:line:col: severity: message` with source snippets.
    pub fn render_diagnostics(&self) -> String {
        self.file.render_all(&self.diagnostics)
    }
}

/// How far to take the compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Parse,
    Analyze,
    /// Shape and geometry analysis and the kernel outliner.
    Outline,
    Plan,
}

/// Compiles `text` (named `name` in diagnostics) up to and including `until`, for the CPU
/// backend: `Stage::Plan` gives a plan of builtin calls only (no outlining).
pub fn compile(name: &str, text: &str, until: Stage) -> Compilation {
    compile_for(name, text, until, Target::Cpu)
}

/// Compiles `text` up to and including `until` for `target`. For the GPU, `Stage::Plan`
/// outlines kernels, generates and validates their WGSL, and lowers to a plan that launches
/// them.
pub fn compile_for(name: &str, text: &str, until: Stage, target: Target) -> Compilation {
    if crate::datalog::is_datalog(name) {
        return compile_datalog(name, text, until, target, Default::default());
    }
    compile_horseir(name, text, until, target)
}

/// Compiles a Datalog program: its front end, then the generated HorseIR up to `until`.
/// Errors in the Datalog source are located in it; the later stages' in the generated text
/// (named `NAME (generated HorseIR)`), which would be a bug of the lowering.
pub fn compile_datalog(
    name: &str,
    text: &str,
    until: Stage,
    target: Target,
    options: crate::datalog::LowerOptions,
) -> Compilation {
    let start = Instant::now();
    let (lowered, diags) = crate::datalog::compile(text, options);
    let elapsed = start.elapsed();
    let Some(lowered) = lowered.filter(|_| !has_errors(&diags)) else {
        let mut c = empty_compilation(name, text);
        c.diagnostics = diags;
        c.stage_times.push(("datalog", elapsed));
        return c;
    };
    let mut c = compile_horseir(
        &format!("{name} (generated HorseIR)"),
        &lowered.hir,
        until,
        target,
    );
    c.stage_times.insert(0, ("datalog", elapsed));
    c.diagnostics.extend(diags);
    c.datalog = Some(lowered);
    c
}

fn empty_compilation(name: &str, text: &str) -> Compilation {
    Compilation {
        file: SourceFile::new(name, text),
        diagnostics: Vec::new(),
        ast: None,
        typed: None,
        outlined: None,
        kernels: None,
        plan: None,
        datalog: None,
        stage_times: Vec::new(),
    }
}

/// Compiles HorseIR text up to `until` for `target`.
fn compile_horseir(name: &str, text: &str, until: Stage, target: Target) -> Compilation {
    let mut c = Compilation {
        file: SourceFile::new(name, text),
        diagnostics: Vec::new(),
        ast: None,
        typed: None,
        outlined: None,
        kernels: None,
        plan: None,
        datalog: None,
        stage_times: Vec::new(),
    };

    let start = Instant::now();
    let (ast, diags) = syntax::parse(text);
    c.stage_times.push(("parse", start.elapsed()));
    c.diagnostics.extend(diags);
    c.ast = ast;
    let Some(ast) = c.ast.as_ref().filter(|_| !c.failed()) else {
        return c;
    };
    if until < Stage::Analyze {
        return c;
    }

    let start = Instant::now();
    let (mut typed, diags) = sema::analyze(ast);
    // The GPU pipeline (everything that outlines) runs the simplified program; the CPU
    // reference path and `--emit typed` keep the program as written, so the differential
    // tests check each rewrite. Timed as part of the analysis.
    let outlines = until >= Stage::Outline && !(until == Stage::Plan && target == Target::Cpu);
    if let Some(typed) = typed.as_mut().filter(|_| outlines && !has_errors(&diags)) {
        crate::simplify::simplify_program(typed);
    }
    c.stage_times.push(("analyze", start.elapsed()));
    c.diagnostics.extend(diags);
    c.typed = typed;
    let Some(typed) = c.typed.as_ref().filter(|_| !has_errors(&c.diagnostics)) else {
        return c;
    };
    // The mismatch check is shared by both backends, so both refuse a provable mismatch
    // alike (timed as part of the analysis). A program that will be outlined is analysed
    // here once, for the check and for the outliner.
    let start = Instant::now();
    let analyses = if outlines {
        let analyses = crate::analysis::analyze_program(typed);
        for (index, analysis) in analyses.iter().enumerate() {
            c.diagnostics.extend(match analysis {
                Ok(analysis) => crate::analysis::mismatch::mismatches_in(typed, &analysis.shapes),
                // The outliner reports the failed analysis; the check still runs where
                // shape analysis alone succeeds.
                Err(_) => crate::analysis::shape::analyze(typed, FunctionId(index))
                    .map(|shapes| crate::analysis::mismatch::mismatches_in(typed, &shapes))
                    .unwrap_or_default(),
            });
        }
        Some(analyses)
    } else {
        c.diagnostics
            .extend(crate::analysis::mismatch::provable_mismatches(typed));
        None
    };
    if let Some((_, time)) = c.stage_times.last_mut() {
        *time += start.elapsed();
    }
    if c.failed() || until < Stage::Outline {
        return c;
    }
    if until == Stage::Plan && target == Target::Cpu {
        let start = Instant::now();
        let plan = crate::lower::lower(typed, &c.file);
        c.stage_times.push(("lower", start.elapsed()));
        c.plan = Some(plan);
        return c;
    }

    let start = Instant::now();
    let outlined = match analyses {
        Some(analyses) => crate::outline::outline_analyzed(typed, analyses),
        None => outline_program(typed),
    };
    c.stage_times.push(("outline", start.elapsed()));
    match outlined {
        Ok(outlined) => c.outlined = Some(outlined),
        Err(e) => {
            c.diagnostics
                .push(Diagnostic::error(Default::default(), e.to_string()));
            return c;
        }
    }
    if until < Stage::Plan {
        return c;
    }

    if target == Target::Cpu {
        let start = Instant::now();
        let plan = crate::lower::lower(typed, &c.file);
        c.stage_times.push(("lower", start.elapsed()));
        c.plan = Some(plan);
        return c;
    }
    let start = Instant::now();
    let Some(mut outlined) = c.outlined.take() else {
        return c;
    };
    let mut kernels = Vec::with_capacity(outlined.functions.len());
    for function in &mut outlined.functions {
        kernels.push(generate_function(
            typed,
            function,
            &c.file,
            &mut c.diagnostics,
        ));
    }
    c.outlined = Some(outlined);
    let Some(outlined) = c.outlined.as_ref() else {
        return c;
    };
    c.stage_times.push(("codegen", start.elapsed()));
    if c.failed() {
        return c;
    }

    let start = Instant::now();
    match crate::lower::lower_gpu(typed, outlined, &kernels, &c.file) {
        Ok(plan) => c.plan = Some(plan),
        Err(message) => c.diagnostics.push(Diagnostic::error(
            Default::default(),
            format!("internal compiler error (a bug in horsec): lowering the GPU plan: {message}"),
        )),
    }
    c.stage_times.push(("lower", start.elapsed()));
    c.kernels = Some(kernels);
    c
}

/// Generates the kernels of `function`. A statement the generator cannot translate (a
/// builtin without GPU code, or a value the kernel cannot write) runs on the host instead:
/// the function is outlined again with that statement placed on the host, so the rest of its
/// kernel stays on the GPU, and a warning located at the statement says so. Each round
/// places at least one more statement on the host, so the rounds end. Returns the kernels,
/// None where one still cannot be generated (its statements run on the CPU).
fn generate_function(
    typed: &TypedProgram,
    function: &mut crate::outline::OutlinedFunction,
    file: &SourceFile,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Option<Arc<KernelLaunch>>> {
    let mut placed_on_host = Vec::new();
    let results = loop {
        let codegen = crate::codegen::FunctionCodegen::new(typed, &function.analysis);
        let results: Vec<_> = function
            .kernels
            .iter()
            .map(|kernel| match &codegen {
                Ok(codegen) => codegen.kernel_for_device(kernel),
                Err(e) => Err(e.clone()),
            })
            .collect();
        // A grouped kernel has a fallback of its own (below).
        let untranslated: Vec<_> = function
            .kernels
            .iter()
            .zip(&results)
            .filter_map(|(kernel, result)| match result {
                Err(e) if kernel.grouped.is_none() && !e.is_compiler_bug() => {
                    e.unsupported_statement().map(|stmt| (stmt, e))
                }
                _ => None,
            })
            .collect();
        if untranslated.is_empty() {
            break results;
        }
        let mut analysis = function.analysis.clone();
        let mut moved = Vec::new();
        for (stmt, e) in untranslated {
            if analysis.dependence.run_on_host(stmt) {
                moved.push((stmt, e.statement_message()));
            }
        }
        if moved.is_empty() {
            break results;
        }
        match crate::outline::outline_function(typed, function.function, analysis) {
            Ok(outlined) => {
                *function = outlined;
                placed_on_host.extend(moved);
            }
            Err(e) => {
                diagnostics.push(Diagnostic::error(Default::default(), e.to_string()));
                break results;
            }
        }
    };
    for (stmt, message) in placed_on_host {
        diagnostics.push(Diagnostic::warning(
            statement_span(typed, function.function, stmt),
            format!(
                "{message}; this statement runs as a step of its own (`--emit plan` says where)"
            ),
        ));
    }
    let mut modules = Vec::with_capacity(results.len());
    for (kernel, module) in function.kernels.iter().zip(results) {
        match module {
            Ok(mut module) => {
                crate::lower::locate_check_sites(&mut module, file);
                modules.push(Some(Arc::new(module)));
            }
            // A grouped kernel the generator does not cover leaves its fallback, the
            // unfused kernel and library call, to run as they would have.
            Err(e) if kernel.grouped.is_some() && !e.is_compiler_bug() => modules.push(None),
            // Not one statement (the kernel's geometry has no length the generator can
            // name): the kernel's statements run on the CPU, said here and listed again by
            // `--time` as CPU compute steps.
            Err(e) if !e.is_compiler_bug() => {
                let span = kernel_span(typed, function, kernel);
                diagnostics.push(Diagnostic::warning(
                    span,
                    format!("{e}; kernel {} runs on the CPU", kernel.name),
                ));
                modules.push(None);
            }
            Err(e) => {
                let span = kernel_span(typed, function, kernel);
                diagnostics.push(Diagnostic::error(span, e.to_string()));
            }
        }
    }
    modules
}

/// The span of statement `stmt` of function `id`.
fn statement_span(
    typed: &TypedProgram,
    id: FunctionId,
    stmt: crate::analysis::StmtId,
) -> crate::syntax::ast::Span {
    let Some(f) = typed.functions.get(id.0) else {
        return Default::default();
    };
    crate::analysis::statements::StatementTree::new(f)
        .get(stmt)
        .map(|entry| entry.stmt.span)
        .unwrap_or_default()
}

/// The span of a kernel's first statement, to locate a code generation error.
fn kernel_span(
    typed: &TypedProgram,
    function: &crate::outline::OutlinedFunction,
    kernel: &crate::outline::Kernel,
) -> crate::syntax::ast::Span {
    let Some(f) = typed.functions.get(function.function.0) else {
        return Default::default();
    };
    let tree = crate::analysis::statements::StatementTree::new(f);
    kernel
        .statements
        .first()
        .and_then(|id| tree.get(*id))
        .map(|entry| entry.stmt.span)
        .unwrap_or_default()
}

/// The names of the tables `program` loads, when every `@load_table` names its table with a
/// literal (`@load_table(`lineitem:sym)`); `None` when one names it with a variable, so any
/// table may be loaded. The CLI generates or reads only these tables.
pub fn loaded_tables(program: &sema::typed::TypedProgram) -> Option<Vec<String>> {
    use crate::syntax::ast::LiteralValue;
    use horsec_runtime::builtin::Builtin;
    use sema::typed::{Arg, Callee, ExprKind, Operand, Stmt, StmtKind};

    fn visit(body: &[Stmt], names: &mut Vec<String>) -> Option<()> {
        for stmt in body {
            match &stmt.kind {
                StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => {
                    let mut expr = expr;
                    while let ExprKind::CheckCast { expr: inner, .. } = &expr.kind {
                        expr = inner;
                    }
                    if let ExprKind::Call {
                        callee: Callee::Builtin(Builtin::LoadTable),
                        args,
                    } = &expr.kind
                    {
                        let [Arg::Operand(Operand::Literal(literal))] = args.as_slice() else {
                            return None;
                        };
                        for value in &literal.values {
                            let LiteralValue::Text(name) = value else {
                                return None;
                            };
                            if !names.contains(name) {
                                names.push(name.clone());
                            }
                        }
                    }
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    visit(then_body, names)?;
                    if let Some(else_body) = else_body {
                        visit(else_body, names)?;
                    }
                }
                StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => {
                    visit(body, names)?;
                }
                _ => {}
            }
        }
        Some(())
    }

    let mut names = Vec::new();
    for function in &program.functions {
        visit(&function.body, &mut names)?;
    }
    Some(names)
}

/// The columns `program` reads from each table it loads, by table name, when every loaded
/// table is named by a literal and used only through `@column_value(table, `name)` with a
/// literal column name. `None` when a table is used any other way (passed on, returned,
/// its keys listed, a column named by a variable): then every column may be read. The CLI
/// reads only these columns, and checks that `--table` files have them.
pub fn used_columns(
    program: &sema::typed::TypedProgram,
) -> Option<std::collections::BTreeMap<String, Vec<String>>> {
    use crate::syntax::ast::LiteralValue;
    use horsec_runtime::builtin::Builtin;
    use sema::typed::{Arg, Callee, Expr, ExprKind, LocalId, Operand, Stmt, StmtKind};
    use std::collections::{BTreeMap, HashMap};

    type Tables = HashMap<LocalId, String>;

    /// The expression under any `check_cast`s.
    fn uncast(mut expr: &Expr) -> &Expr {
        while let ExprKind::CheckCast { expr: inner, .. } = &expr.kind {
            expr = inner;
        }
        expr
    }

    fn table_of<'t>(tables: &'t Tables, operand: &Operand) -> Option<&'t String> {
        match operand {
            Operand::Local(local, _) => tables.get(local),
            _ => None,
        }
    }

    fn uses_table(tables: &Tables, args: &[Arg]) -> bool {
        args.iter()
            .any(|a| matches!(a, Arg::Operand(o) if table_of(tables, o).is_some()))
    }

    /// Locals assigned a table loaded by literal name anywhere in `body`; `None` when a
    /// table is loaded by a name that is not a single literal.
    fn table_locals(body: &[Stmt], tables: &mut Tables) -> Option<()> {
        for stmt in body {
            match &stmt.kind {
                StmtKind::Assign { targets, expr, .. } => {
                    if let ExprKind::Call {
                        callee: Callee::Builtin(Builtin::LoadTable),
                        args,
                    } = &uncast(expr).kind
                    {
                        let [Arg::Operand(Operand::Literal(literal))] = args.as_slice() else {
                            return None;
                        };
                        let [LiteralValue::Text(name)] = literal.values.as_slice() else {
                            return None;
                        };
                        for target in targets {
                            if let sema::typed::Target::Local(local) = target {
                                tables.insert(*local, name.clone());
                            }
                        }
                    }
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    table_locals(then_body, tables)?;
                    table_locals(else_body.as_deref().unwrap_or_default(), tables)?;
                }
                StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => {
                    table_locals(body, tables)?
                }
                _ => {}
            }
        }
        Some(())
    }

    /// Records the columns read; `None` at the first other use of a table local.
    fn visit(
        body: &[Stmt],
        tables: &Tables,
        columns: &mut BTreeMap<String, Vec<String>>,
    ) -> Option<()> {
        for stmt in body {
            match &stmt.kind {
                StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => match &uncast(expr).kind {
                    ExprKind::Call {
                        callee: Callee::Builtin(Builtin::ColumnValue),
                        args,
                    } => {
                        let [Arg::Operand(table), Arg::Operand(Operand::Literal(name))] =
                            args.as_slice()
                        else {
                            return (!uses_table(tables, args)).then_some(());
                        };
                        let Some(table) = table_of(tables, table) else {
                            continue;
                        };
                        let read = columns.entry(table.clone()).or_default();
                        for value in &name.values {
                            let LiteralValue::Text(name) = value else {
                                return None;
                            };
                            if !read.contains(name) {
                                read.push(name.clone());
                            }
                        }
                    }
                    ExprKind::Call { args, .. } if uses_table(tables, args) => return None,
                    ExprKind::Operand(operand) if table_of(tables, operand).is_some() => {
                        return None
                    }
                    _ => {}
                },
                StmtKind::Return(operands)
                    if operands.iter().any(|o| table_of(tables, o).is_some()) =>
                {
                    return None
                }
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    if table_of(tables, cond).is_some() {
                        return None;
                    }
                    visit(then_body, tables, columns)?;
                    visit(else_body.as_deref().unwrap_or_default(), tables, columns)?;
                }
                StmtKind::While { cond: test, body } | StmtKind::Repeat { count: test, body } => {
                    if table_of(tables, test).is_some() {
                        return None;
                    }
                    visit(body, tables, columns)?;
                }
                _ => {}
            }
        }
        Some(())
    }

    let mut columns = BTreeMap::new();
    for function in &program.functions {
        let mut tables = Tables::new();
        table_locals(&function.body, &mut tables)?;
        for name in tables.values() {
            columns.entry(name.clone()).or_default();
        }
        visit(&function.body, &tables, &mut columns)?;
    }
    Some(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns_of(source: &str) -> Option<Vec<(String, Vec<String>)>> {
        let c = compile("p.hir", source, Stage::Analyze);
        assert!(!c.failed(), "{}", c.render_diagnostics());
        used_columns(c.typed.as_ref()?).map(|m| m.into_iter().collect())
    }

    #[test]
    fn the_columns_read_by_literal_name_are_the_columns_used() {
        let used = columns_of(
            "module m { import Builtin.*; def main() : f64 {
                t:table = @load_table(`lineitem:sym);
                p:f64 = check_cast(@column_value(t, `l_extendedprice:sym), f64);
                d:f64 = check_cast(@column_value(t, `l_discount:sym), f64);
                s:f64 = @sum(p);
                n:table = @load_table(`nation:sym);
                return s; } }",
        );
        assert_eq!(
            used,
            Some(vec![
                (
                    "lineitem".to_string(),
                    vec!["l_extendedprice".to_string(), "l_discount".to_string()]
                ),
                ("nation".to_string(), vec![]),
            ])
        );
    }

    #[test]
    fn a_table_used_whole_may_have_any_column_read() {
        let keys = columns_of(
            "module m { import Builtin.*; def main() : sym {
                t:table = @load_table(`region:sym);
                k:sym = @keys(t);
                return k; } }",
        );
        assert_eq!(keys, None);
        let returned = columns_of(
            "module m { import Builtin.*; def main() : table {
                t:table = @load_table(`region:sym);
                return t; } }",
        );
        assert_eq!(returned, None);
    }
}
