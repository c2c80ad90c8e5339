//! Prints a typed program as HorseIR with every type explicit: each declaration shows its
//! inferred type (`t17:bool = @geq(t11, 1994-01-01:date);`), functions are grouped back into
//! their modules in source order, and calls of user functions are written qualified
//! (`@m.f`) so the text parses and analyzes again without the imports.

use std::collections::HashSet;

use horsec_runtime::types::Type;

use super::typed::{
    Arg, Callee, Expr, ExprKind, Function, Operand, Stmt, StmtKind, Target, TypedProgram,
};
use crate::syntax::ast::FunctionKind;
use crate::syntax::printer::print_literal;

/// The typed program as HorseIR source text.
pub fn print_typed(program: &TypedProgram) -> String {
    let mut modules: Vec<&str> = Vec::new();
    let names = program
        .globals
        .iter()
        .map(|g| g.module.as_str())
        .chain(program.functions.iter().map(|f| f.module.as_str()));
    for name in names {
        if !modules.contains(&name) {
            modules.push(name);
        }
    }
    // Keep modules in the order their functions appear (globals may come later in a module).
    modules.sort_by_key(|m| {
        program
            .functions
            .iter()
            .position(|f| f.module == *m)
            .unwrap_or(usize::MAX)
    });
    let mut printer = Printer {
        program,
        out: String::new(),
        depth: 0,
        module_functions: HashSet::new(),
    };
    for (index, module) in modules.iter().enumerate() {
        if index > 0 {
            printer.out.push('\n');
        }
        printer.module(module);
    }
    printer.out
}

/// Statements of `function` printed as [`print_typed`] prints them, `depth` levels deep: for
/// the printers of later stages that show parts of a function (the outliner's kernels).
pub(crate) fn print_statements(
    program: &TypedProgram,
    function: &Function,
    stmts: &[Stmt],
    depth: usize,
) -> String {
    let mut printer = Printer {
        program,
        out: String::new(),
        depth,
        module_functions: program
            .functions
            .iter()
            .filter(|f| f.module == function.module)
            .map(|f| f.name.as_str())
            .collect(),
    };
    for stmt in stmts {
        printer.stmt(function, stmt);
    }
    printer.out
}

/// An operand of `function` as [`print_typed`] prints it.
pub(crate) fn print_operand(
    program: &TypedProgram,
    function: &Function,
    operand: &Operand,
) -> String {
    let printer = Printer {
        program,
        out: String::new(),
        depth: 0,
        module_functions: HashSet::new(),
    };
    printer.operand(function, operand)
}

struct Printer<'a> {
    program: &'a TypedProgram,
    out: String,
    depth: usize,
    /// Names of the functions of the module being printed: a builtin of the same name must
    /// be written `@Builtin.name`.
    module_functions: HashSet<&'a str>,
}

impl<'a> Printer<'a> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn module(&mut self, module: &str) {
        self.module_functions = self
            .program
            .functions
            .iter()
            .filter(|f| f.module == module)
            .map(|f| f.name.as_str())
            .collect();
        self.line(&format!("module {module} {{"));
        self.depth += 1;
        for global in self.program.globals.iter().filter(|g| g.module == module) {
            self.line(&format!(
                "global {}:{} = {};",
                global.name,
                global.ty,
                print_literal(&global.value)
            ));
        }
        for function in self.program.functions.iter().filter(|f| f.module == module) {
            self.function(function);
        }
        self.depth -= 1;
        self.line("}");
    }

    fn function(&mut self, function: &'a Function) {
        let kind = match function.kind {
            FunctionKind::Def => "def",
            FunctionKind::Kernel => "kernel",
        };
        let params: Vec<String> = function
            .params
            .iter()
            .filter_map(|id| function.locals.get(id.0))
            .map(|local| format!("{}:{}", local.name, local.ty))
            .collect();
        let returns = if function.returns.is_empty() {
            String::new()
        } else {
            let types: Vec<String> = function.returns.iter().map(Type::to_string).collect();
            format!(" : {}", types.join(", "))
        };
        self.line(&format!(
            "{kind} {}({}){returns} {{",
            function.name,
            params.join(", ")
        ));
        self.body(function, &function.body);
        self.line("}");
    }

    fn body(&mut self, function: &Function, stmts: &[Stmt]) {
        self.depth += 1;
        for stmt in stmts {
            self.stmt(function, stmt);
        }
        self.depth -= 1;
    }

    fn stmt(&mut self, function: &Function, stmt: &Stmt) {
        let local = |id: usize| function.locals.get(id);
        match &stmt.kind {
            StmtKind::Declare(ids) => {
                // One `var` per run of locals of the same type.
                let mut runs: Vec<(Vec<&str>, &Type)> = Vec::new();
                for l in ids.iter().filter_map(|id| local(id.0)) {
                    match runs.last_mut() {
                        Some((names, ty)) if **ty == l.ty => names.push(&l.name),
                        _ => runs.push((vec![&l.name], &l.ty)),
                    }
                }
                for (names, ty) in runs {
                    self.line(&format!("var {}:{ty};", names.join(", ")));
                }
            }
            StmtKind::Assign {
                targets,
                declares,
                expr,
            } => {
                let targets: Vec<String> = targets
                    .iter()
                    .zip(declares.iter().chain(std::iter::repeat(&false)))
                    .map(|(target, &declares)| match target {
                        Target::Discard => "_".to_string(),
                        Target::Local(id) => match local(id.0) {
                            Some(l) if declares => format!("{}:{}", l.name, l.ty),
                            Some(l) => l.name.clone(),
                            None => "_".to_string(),
                        },
                    })
                    .collect();
                let expr = self.expr(function, expr);
                self.line(&format!("{} = {expr};", targets.join(", ")));
            }
            StmtKind::Expr(expr) => {
                let expr = self.expr(function, expr);
                self.line(&format!("{expr};"));
            }
            StmtKind::Return(operands) if operands.is_empty() => self.line("return;"),
            StmtKind::Return(operands) => {
                let operands: Vec<String> =
                    operands.iter().map(|o| self.operand(function, o)).collect();
                self.line(&format!("return {};", operands.join(", ")));
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let cond = self.operand(function, cond);
                self.line(&format!("if ({cond}) {{"));
                self.body(function, then_body);
                if let Some(else_body) = else_body {
                    self.line("}");
                    self.line("else {");
                    self.body(function, else_body);
                }
                self.line("}");
            }
            StmtKind::While { cond, body } => {
                let cond = self.operand(function, cond);
                self.line(&format!("while ({cond}) {{"));
                self.body(function, body);
                self.line("}");
            }
            StmtKind::Repeat { count, body } => {
                let count = self.operand(function, count);
                self.line(&format!("repeat ({count}) {{"));
                self.body(function, body);
                self.line("}");
            }
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
        }
    }

    fn expr(&self, function: &Function, expr: &Expr) -> String {
        match &expr.kind {
            ExprKind::Call { callee, args } => {
                let args: Vec<String> = args
                    .iter()
                    .map(|arg| match arg {
                        Arg::Operand(o) => self.operand(function, o),
                        Arg::Function(f, _) => self.callee(*f),
                    })
                    .collect();
                format!("{}({})", self.callee(*callee), args.join(", "))
            }
            ExprKind::CheckCast { expr, ty } => {
                format!("check_cast({}, {ty})", self.expr(function, expr))
            }
            ExprKind::Operand(o) => self.operand(function, o),
        }
    }

    fn callee(&self, callee: Callee) -> String {
        match callee {
            Callee::Builtin(b) if self.module_functions.contains(b.name()) => {
                format!("@Builtin.{b}")
            }
            Callee::Builtin(b) => format!("@{b}"),
            Callee::Function(id) => match self.program.functions.get(id.0) {
                Some(f) => format!("@{}", f.qualified_name()),
                None => format!("@<function {}>", id.0),
            },
        }
    }

    fn operand(&self, function: &Function, operand: &Operand) -> String {
        match operand {
            Operand::Local(id, _) => function
                .locals
                .get(id.0)
                .map_or_else(|| format!("<local {}>", id.0), |l| l.name.clone()),
            Operand::Global(id, _) => self
                .program
                .globals
                .get(id.0)
                .map_or_else(|| format!("<global {}>", id.0), |g| g.name.clone()),
            Operand::Literal(literal) => print_literal(literal),
        }
    }
}
