//! Printers of the outlined program: HorseIR text with `kernel` definitions (`--emit
//! outline`), the dependence graph with kernels as clusters (`--emit dot`), and the shapes of
//! every function (`--emit shapes`).

use std::collections::HashSet;
use std::fmt::Write as _;

use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use horsec_runtime::types::Type;

use crate::analysis::dependence::{statement_label, DependenceKind};
use crate::analysis::device::Device;
use crate::analysis::statements::{local_name, StatementTree};
use crate::analysis::{print_shapes, StmtId};
use crate::sema::printer::{print_operand, print_statements};
use crate::sema::typed::{Function, LocalId, Stmt, StmtKind, Target, TypedProgram};
use crate::syntax::ast::FunctionKind;
use crate::syntax::printer::print_literal;

use super::kernel::{Kernel, KernelId};
use super::{OutlinedFunction, OutlinedProgram, OutlinedStmt};

/// The outlined program as HorseIR: per module, each function's kernels as `kernel`
/// definitions (parameters = inputs, returns = outputs), then the host function, in which a
/// launch is a call of the kernel and library calls are marked `// library`.
pub fn print_outline(program: &TypedProgram, outlined: &OutlinedProgram) -> String {
    let mut out = String::new();
    for (index, module) in modules(program).iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "module {module} {{");
        for global in program.globals.iter().filter(|g| g.module == *module) {
            let _ = writeln!(
                out,
                "    global {}:{} = {};",
                global.name,
                global.ty,
                print_literal(&global.value)
            );
        }
        for of in &outlined.functions {
            let Some(function) = program.functions.get(of.function.0) else {
                continue;
            };
            if function.module != *module {
                continue;
            }
            for kernel in &of.kernels {
                print_kernel(&mut out, program, function, kernel);
            }
            print_host(&mut out, program, function, of);
        }
        out.push_str("}\n");
    }
    out
}

/// Module names in the order their functions appear.
fn modules(program: &TypedProgram) -> Vec<&str> {
    let mut modules: Vec<&str> = Vec::new();
    for name in program
        .functions
        .iter()
        .map(|f| f.module.as_str())
        .chain(program.globals.iter().map(|g| g.module.as_str()))
    {
        if !modules.contains(&name) {
            modules.push(name);
        }
    }
    modules
}

fn typed_name(function: &Function, local: LocalId) -> String {
    match function.locals.get(local.0) {
        Some(l) => format!("{}:{}", l.name, l.ty),
        None => format!("<local {}>", local.0),
    }
}

fn local_type(function: &Function, local: LocalId) -> Type {
    function
        .locals
        .get(local.0)
        .map_or(Type::Wildcard, |l| l.ty.clone())
}

fn print_kernel(out: &mut String, program: &TypedProgram, function: &Function, kernel: &Kernel) {
    let params: Vec<String> = kernel
        .inputs
        .iter()
        .map(|&l| typed_name(function, l))
        .collect();
    let returns: Vec<String> = kernel
        .outputs
        .iter()
        .map(|&l| local_type(function, l).to_string())
        .collect();
    let returns = if returns.is_empty() {
        String::new()
    } else {
        format!(" : {}", returns.join(", "))
    };
    let _ = writeln!(
        out,
        "    kernel {}({}){returns} {{",
        kernel.name,
        params.join(", ")
    );
    let _ = writeln!(
        out,
        "        // geometry: {}",
        kernel.geometry.display(function)
    );
    let tree = StatementTree::new(function);
    let mut declared: HashSet<LocalId> = kernel.inputs.iter().copied().collect();
    // A grouped kernel prints its aggregation as the statements it stands for, then its
    // epilogue: the same values, run as HorseIR.
    let aggregation = kernel.grouped.iter().flat_map(|g| g.statements.iter());
    let stmts: Vec<Stmt> = kernel
        .statements
        .iter()
        .chain(aggregation)
        .filter_map(|&id| tree.stmt(id))
        .map(|stmt| with_declarations(stmt, &mut declared))
        .collect();
    out.push_str(&print_statements(program, function, &stmts, 2));
    if let Some(grouped) = &kernel.grouped {
        let name = |l: &LocalId| local_name(function, *l).to_string();
        let keys: Vec<String> = grouped.keys.iter().map(name).collect();
        let aggregates: Vec<String> = grouped
            .results
            .iter()
            .map(|r| match &r.value {
                Some(value) => format!(
                    "`{} {}",
                    r.reduction.name(),
                    print_operand(program, function, value)
                ),
                None => format!("`{}", r.reduction.name()),
            })
            .collect();
        let _ = writeln!(
            out,
            "        // grouped by ({}) over the kept rows: {}",
            keys.join(", "),
            aggregates.join(", ")
        );
        if !grouped.epilogue.is_empty() {
            out.push_str("        // then per group, in the same launch:\n");
            let stmts: Vec<Stmt> = grouped
                .epilogue
                .iter()
                .filter_map(|&id| tree.stmt(id))
                .map(|stmt| with_declarations(stmt, &mut declared))
                .collect();
            out.push_str(&print_statements(program, function, &stmts, 2));
        }
    }
    if kernel.outputs.is_empty() {
        out.push_str("        return;\n");
    } else {
        let names: Vec<&str> = kernel
            .outputs
            .iter()
            .map(|&l| local_name(function, l))
            .collect();
        let _ = writeln!(out, "        return {};", names.join(", "));
    }
    out.push_str("    }\n");
}

fn print_host(
    out: &mut String,
    program: &TypedProgram,
    function: &Function,
    outlined: &OutlinedFunction,
) {
    let kind = match function.kind {
        FunctionKind::Def => "def",
        FunctionKind::Kernel => "kernel",
    };
    let params: Vec<String> = function
        .params
        .iter()
        .map(|&l| typed_name(function, l))
        .collect();
    let returns = if function.returns.is_empty() {
        String::new()
    } else {
        let types: Vec<String> = function.returns.iter().map(Type::to_string).collect();
        format!(" : {}", types.join(", "))
    };
    let _ = writeln!(
        out,
        "    {kind} {}({}){returns} {{",
        function.name,
        params.join(", ")
    );
    let mut host = HostPrinter {
        program,
        function,
        outlined,
        tree: StatementTree::new(function),
        declared: function.params.iter().copied().collect(),
        out,
    };
    host.body(&outlined.body, 2);
    host.out.push_str("    }\n");
}

struct HostPrinter<'a, 'p> {
    program: &'p TypedProgram,
    function: &'p Function,
    outlined: &'a OutlinedFunction,
    tree: StatementTree<'p>,
    /// Locals already declared in the printed text: the first assignment declares the rest.
    declared: HashSet<LocalId>,
    out: &'a mut String,
}

impl HostPrinter<'_, '_> {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn statement(&mut self, id: StmtId, depth: usize, note: &str) {
        let Some(stmt) = self.tree.stmt(id) else {
            return;
        };
        let stmt = with_declarations(stmt, &mut self.declared);
        let text = print_statements(self.program, self.function, &[stmt], depth);
        if note.is_empty() {
            self.out.push_str(&text);
        } else {
            self.out.push_str(text.trim_end_matches('\n'));
            self.out.push_str(note);
            self.out.push('\n');
        }
    }

    fn condition(&self, id: StmtId) -> String {
        let operand = match self.tree.stmt(id).map(|s| &s.kind) {
            Some(StmtKind::If { cond, .. } | StmtKind::While { cond, .. }) => cond,
            Some(StmtKind::Repeat { count, .. }) => count,
            _ => return "?".to_string(),
        };
        print_operand(self.program, self.function, operand)
    }

    /// An assignment's target: declared (`name:type`) the first time it is printed.
    fn target(&mut self, local: LocalId) -> String {
        if self.declared.insert(local) {
            typed_name(self.function, local)
        } else {
            local_name(self.function, local).to_string()
        }
    }

    /// `targets = @kernel(inputs);` for a launch, with `note` after it.
    fn launch(&mut self, kernel: KernelId, depth: usize, note: &str) {
        let Some(kernel) = self.outlined.kernel(kernel) else {
            return;
        };
        let args: Vec<&str> = kernel
            .inputs
            .iter()
            .map(|&l| local_name(self.function, l))
            .collect();
        let call = format!("@{}({})", kernel.name, args.join(", "));
        if kernel.outputs.is_empty() {
            self.line(depth, &format!("{call};{note}"));
        } else {
            let targets: Vec<String> = kernel.outputs.iter().map(|&l| self.target(l)).collect();
            self.line(depth, &format!("{} = {call};{note}", targets.join(", ")));
        }
    }

    fn body(&mut self, body: &[OutlinedStmt], depth: usize) {
        for step in body {
            match step {
                OutlinedStmt::Host(id) => self.statement(*id, depth, ""),
                OutlinedStmt::Library(id) => self.statement(*id, depth, "  // library"),
                OutlinedStmt::GroupAggregate(fused) => {
                    let targets: Vec<String> = fused
                        .first
                        .iter()
                        .chain(fused.results.iter().map(|r| &r.target))
                        .map(|&l| self.target(l))
                        .collect();
                    let targets = match fused.first {
                        Some(_) => targets.join(", "),
                        None => format!("_, {}", targets.join(", ")),
                    };
                    let ops: Vec<String> = fused
                        .results
                        .iter()
                        .map(|r| format!("`{}", r.reduction.name()))
                        .collect();
                    let mut args = vec![
                        print_operand(self.program, self.function, &fused.key),
                        format!("({}):sym", ops.join(", ")),
                    ];
                    args.extend(
                        fused
                            .results
                            .iter()
                            .filter_map(|r| r.value.as_ref())
                            .map(|v| print_operand(self.program, self.function, v)),
                    );
                    self.line(
                        depth,
                        &format!(
                            "{targets} = @group_aggregate({});  // library, fused from {} statements",
                            args.join(", "),
                            fused.absorbed.len()
                        ),
                    );
                }
                OutlinedStmt::Launch(kernel) => self.launch(*kernel, depth, ""),
                OutlinedStmt::Grouped { kernel, fallback } => {
                    let name = self
                        .outlined
                        .kernel(*kernel)
                        .map_or("?", |k| k.name.as_str());
                    let note = format!("  // grouped; if {name} declines, instead:");
                    self.launch(*kernel, depth, &note);
                    // The fallback, commented out: it runs only when the kernel declines.
                    let start = self.out.len();
                    self.body(fallback, depth + 1);
                    let printed = self.out.split_off(start);
                    for line in printed.lines() {
                        let code = line.trim_start();
                        let pad = &line[..line.len() - code.len()];
                        self.out.push_str(pad);
                        self.out.push_str("// ");
                        self.out.push_str(code);
                        self.out.push('\n');
                    }
                }
                OutlinedStmt::If {
                    stmt,
                    then_body,
                    else_body,
                } => {
                    let cond = self.condition(*stmt);
                    self.line(depth, &format!("if ({cond}) {{"));
                    self.body(then_body, depth + 1);
                    if let Some(else_body) = else_body {
                        self.line(depth, "}");
                        self.line(depth, "else {");
                        self.body(else_body, depth + 1);
                    }
                    self.line(depth, "}");
                }
                OutlinedStmt::While { stmt, body } => {
                    let cond = self.condition(*stmt);
                    self.line(depth, &format!("while ({cond}) {{"));
                    self.body(body, depth + 1);
                    self.line(depth, "}");
                }
                OutlinedStmt::Repeat { stmt, body } => {
                    let count = self.condition(*stmt);
                    self.line(depth, &format!("repeat ({count}) {{"));
                    self.body(body, depth + 1);
                    self.line(depth, "}");
                }
            }
        }
    }
}

/// A copy of `stmt` whose assignments declare (`x:T = …`) exactly the locals not declared
/// before in the printed text, so each printed function declares every local once.
fn with_declarations(stmt: &Stmt, declared: &mut HashSet<LocalId>) -> Stmt {
    let mut copy = stmt.clone();
    mark_declarations(&mut copy, declared);
    copy
}

fn mark_declarations(stmt: &mut Stmt, declared: &mut HashSet<LocalId>) {
    match &mut stmt.kind {
        StmtKind::Declare(locals) => declared.extend(locals.iter().copied()),
        StmtKind::Assign {
            targets, declares, ..
        } => {
            *declares = targets
                .iter()
                .map(|target| match target {
                    Target::Local(local) => declared.insert(*local),
                    Target::Discard => false,
                })
                .collect();
        }
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            for s in then_body.iter_mut() {
                mark_declarations(s, declared);
            }
            for s in else_body.iter_mut().flatten() {
                mark_declarations(s, declared);
            }
        }
        StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => {
            for s in body.iter_mut() {
                mark_declarations(s, declared);
            }
        }
        StmtKind::Expr(_) | StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue => {}
    }
}

/// The dependence graph of every function in Graphviz dot, one cluster per function and,
/// inside it, one cluster per kernel (`cluster_<kernel name>`). Boxes are coloured by device;
/// synchronized edges are red, anti edges dashed, output edges dotted.
pub fn print_dot(program: &TypedProgram, outlined: &OutlinedProgram) -> String {
    let mut out = String::from(
        "digraph outline {\n    compound = true;\n    node [shape = box, style = filled];\n",
    );
    for of in &outlined.functions {
        let Some(function) = program.functions.get(of.function.0) else {
            continue;
        };
        let tree = StatementTree::new(function);
        let graph = &of.analysis.dependence;
        let node_id = |stmt: StmtId| format!("\"f{}_s{}\"", of.function.0, stmt.0);
        let node_line = |stmt: StmtId| -> Option<String> {
            let node = graph.graph.node_weight(graph.node(stmt)?)?;
            let fill = match node.device {
                Device::Gpu => "palegreen",
                Device::Library => "lightblue",
                Device::Cpu => "lightgrey",
            };
            Some(format!(
                "{} [label = \"{}: {}\", fillcolor = {fill}];",
                node_id(stmt),
                stmt,
                escape(&statement_label(program, function, &tree, stmt))
            ))
        };
        let _ = writeln!(
            out,
            "    subgraph \"cluster_f{}\" {{\n        label = \"{}\";",
            of.function.0,
            escape(&function.qualified_name())
        );
        let mut in_kernel = vec![false; tree.len()];
        // A grouped kernel holds the statements of the kernel it replaces (its fallback):
        // a statement is drawn once, in that kernel's cluster.
        for kernel in of.kernels.iter().filter(|k| k.grouped.is_none()) {
            let _ = writeln!(
                out,
                "        subgraph \"cluster_{}\" {{\n            label = \"{}: {}\";\n            style = rounded;",
                kernel.name,
                kernel.name,
                escape(&kernel.geometry.display(function).to_string())
            );
            for &unit in &kernel.statements {
                let end = tree.get(unit).map_or(unit.0 + 1, |e| e.subtree_end);
                for id in unit.0..end {
                    if let Some(flag) = in_kernel.get_mut(id) {
                        *flag = true;
                    }
                    if let Some(line) = node_line(StmtId(id)) {
                        let _ = writeln!(out, "            {line}");
                    }
                }
            }
            out.push_str("        }\n");
        }
        for (id, _) in tree.iter() {
            if in_kernel.get(id.0).copied().unwrap_or(false) {
                continue;
            }
            if let Some(line) = node_line(id) {
                let _ = writeln!(out, "        {line}");
            }
        }
        let mut edges: Vec<(StmtId, StmtId, String)> = Vec::new();
        for edge in graph.graph.edge_references() {
            let (Some(from), Some(to)) = (graph.stmt(edge.source()), graph.stmt(edge.target()))
            else {
                continue;
            };
            let e = edge.weight();
            let mut attributes = format!(
                "label = \"{}\"",
                escape(&format!("{} {}", e.kind, local_name(function, e.local)))
            );
            match e.kind {
                DependenceKind::True => {}
                DependenceKind::Anti => attributes.push_str(", style = dashed"),
                DependenceKind::Output => attributes.push_str(", style = dotted"),
            }
            if e.sync.is_synchronized() {
                attributes.push_str(", color = red, penwidth = 2");
            }
            edges.push((from, to, attributes));
        }
        edges.sort();
        for (from, to, attributes) in edges {
            let _ = writeln!(
                out,
                "        {} -> {} [{attributes}];",
                node_id(from),
                node_id(to)
            );
        }
        out.push_str("    }\n");
    }
    out.push_str("}\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The shapes of every function (see [`print_shapes`]), each under its qualified name.
pub fn print_all_shapes(program: &TypedProgram, outlined: &OutlinedProgram) -> String {
    let mut out = String::new();
    for of in &outlined.functions {
        let Some(function) = program.functions.get(of.function.0) else {
            continue;
        };
        let _ = writeln!(out, "{}:", function.qualified_name());
        for line in print_shapes(program, &of.analysis.shapes).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}
