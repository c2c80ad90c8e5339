//! The analysis proper: collects modules, functions and globals, resolves every name, types
//! every expression by the builtin rules, infers each `?`, checks assignments, returns and
//! conditions, and builds the typed program.
//!
//! Errors do not stop the analysis: a statement in error still declares its targets (with the
//! types it can tell, `?` otherwise) and an undeclared name is reported once and then stands
//! for a local of unknown type, so one mistake gives one message.

use rustc_hash::{FxHashMap, FxHashSet};

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use super::assigned;
use super::compat::{compatibility, infer, Compat};
use super::rules::{self, ArgType, FunctionType, RuleError};
use super::typed::{self, Callee, FunctionId, GlobalId, LocalId, TypedProgram};
use crate::diag::{has_errors, Diagnostic};
use crate::syntax::ast::{self, ImportNames, Span};

/// The module that holds the builtins: `@Builtin.plus`, `import Builtin.*;`.
const BUILTIN_MODULE: &str = "Builtin";

/// Analyzes a parsed program: the typed program when there is no error (warnings may come
/// with it), and every diagnostic.
pub fn analyze(program: &ast::Program) -> (Option<TypedProgram>, Vec<Diagnostic>) {
    let mut analyzer = Analyzer::collect(program);
    let mut functions = Vec::with_capacity(analyzer.functions.len());
    for index in 0..analyzer.functions.len() {
        functions.push(analyzer.function(FunctionId(index)));
    }
    let entry = analyzer
        .functions
        .iter()
        .position(|f| f.ast.name.name == "main")
        .map(FunctionId);
    if entry.is_none() {
        analyzer.diags.push(Diagnostic::error(
            Span::new(0, 0),
            "no `main` function: a program needs one as its entry point",
        ));
    }
    let mut diags = analyzer.diags;
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    match entry {
        Some(entry) if !has_errors(&diags) => (
            Some(TypedProgram {
                functions,
                globals: analyzer.globals,
                entry,
            }),
            diags,
        ),
        _ => (None, diags),
    }
}

struct ModuleInfo<'a> {
    name: String,
    functions: FxHashMap<String, FunctionId>,
    globals: FxHashMap<String, GlobalId>,
    imports: Vec<&'a ast::Import>,
}

struct FunctionInfo<'a> {
    module: usize,
    ast: &'a ast::Function,
    params: Vec<Type>,
    /// Declared return types, with `?` replaced once the body has told them.
    returns: Vec<Type>,
}

struct Analyzer<'a> {
    modules: Vec<ModuleInfo<'a>>,
    module_index: FxHashMap<String, usize>,
    functions: Vec<FunctionInfo<'a>>,
    globals: Vec<typed::Global>,
    diags: Vec<Diagnostic>,
}

impl<'a> Analyzer<'a> {
    /// Collects every module's functions, globals and imports, reporting duplicates and imports
    /// that name nothing.
    fn collect(program: &'a ast::Program) -> Analyzer<'a> {
        let mut analyzer = Analyzer {
            modules: Vec::new(),
            module_index: FxHashMap::default(),
            functions: Vec::new(),
            globals: Vec::new(),
            diags: Vec::new(),
        };
        for module in &program.modules {
            let name = module.name.name.clone();
            if analyzer.module_index.contains_key(&name) || name == BUILTIN_MODULE {
                analyzer.diags.push(Diagnostic::error(
                    module.name.span,
                    format!("module `{name}` is defined twice"),
                ));
                continue;
            }
            let index = analyzer.modules.len();
            analyzer.module_index.insert(name.clone(), index);
            analyzer.modules.push(ModuleInfo {
                name,
                functions: FxHashMap::default(),
                globals: FxHashMap::default(),
                imports: Vec::new(),
            });
            for item in &module.items {
                match item {
                    ast::Item::Import(import) => analyzer.modules[index].imports.push(import),
                    ast::Item::Global(global) => analyzer.global(index, global),
                    ast::Item::Function(function) => analyzer.declare_function(index, function),
                }
            }
        }
        analyzer.check_imports();
        analyzer
    }

    fn declare_function(&mut self, module: usize, function: &'a ast::Function) {
        let id = FunctionId(self.functions.len());
        let name = &function.name.name;
        if self.modules[module].functions.contains_key(name) {
            self.diags.push(Diagnostic::error(
                function.name.span,
                format!(
                    "function `{name}` is defined twice in module `{}`",
                    self.modules[module].name
                ),
            ));
        } else {
            self.modules[module].functions.insert(name.clone(), id);
        }
        self.functions.push(FunctionInfo {
            module,
            ast: function,
            params: function.params.iter().map(|p| p.ty.ty.clone()).collect(),
            returns: function.returns.iter().map(|t| t.ty.clone()).collect(),
        });
    }

    fn global(&mut self, module: usize, global: &ast::Global) {
        let name = &global.name.name;
        if self.modules[module].globals.contains_key(name) {
            self.diags.push(Diagnostic::error(
                global.name.span,
                format!("global `{name}` is defined twice"),
            ));
            return;
        }
        let ast::Operand::Literal(value) = &global.value else {
            self.diags.push(Diagnostic::error(
                global.value.span(),
                format!("the value of global `{name}` must be a literal"),
            ));
            return;
        };
        let declared = &global.ty.ty;
        let ty = infer(declared, &value.ty.ty);
        match compatibility(&ty, &value.ty.ty) {
            Compat::Exact => {}
            Compat::Convertible => self.diags.push(Diagnostic::warning(
                value.span,
                format!(
                    "global `{name}` is {ty}; its {} value is converted",
                    value.ty.ty
                ),
            )),
            Compat::Incompatible => self.diags.push(Diagnostic::error(
                value.span,
                format!("global `{name}` is {ty}, but its value is {}", value.ty.ty),
            )),
        }
        let id = GlobalId(self.globals.len());
        self.modules[module].globals.insert(name.clone(), id);
        self.globals.push(typed::Global {
            module: self.modules[module].name.clone(),
            name: name.clone(),
            ty,
            value: value.clone(),
            span: global.span,
        });
    }

    /// An import of a module that does not exist is only a warning (HorsePower pass/t5 imports
    /// modules it never defines); so is a name the module does not have.
    fn check_imports(&mut self) {
        let mut warnings = Vec::new();
        for module in &self.modules {
            for import in &module.imports {
                let target = &import.module.name;
                if target == BUILTIN_MODULE {
                    if let ImportNames::Some(names) = &import.names {
                        for name in names {
                            if Builtin::from_name(&name.name).is_none() {
                                warnings.push(Diagnostic::warning(
                                    name.span,
                                    format!("there is no builtin `{}`", name.name),
                                ));
                            }
                        }
                    }
                    continue;
                }
                let Some(&index) = self.module_index.get(target) else {
                    warnings.push(Diagnostic::warning(
                        import.module.span,
                        format!("module `{target}` is not defined; the import has no effect"),
                    ));
                    continue;
                };
                if let ImportNames::Some(names) = &import.names {
                    for name in names {
                        if !self.modules[index].functions.contains_key(&name.name) {
                            warnings.push(Diagnostic::warning(
                                name.span,
                                format!("module `{target}` has no function `{}`", name.name),
                            ));
                        }
                    }
                }
            }
        }
        self.diags.extend(warnings);
    }

    /// What `@name` means inside `module`: a function of the module, else of the last import
    /// that provides it, else a builtin (`add` being an old name of `plus`).
    fn resolve_function(
        &self,
        module: usize,
        name: &ast::QualifiedName,
    ) -> Result<Callee, Diagnostic> {
        let wanted = &name.name.name;
        if let Some(qualifier) = &name.module {
            if qualifier.name == BUILTIN_MODULE {
                return Builtin::from_name(wanted)
                    .map(Callee::Builtin)
                    .ok_or_else(|| {
                        Diagnostic::error(name.span, format!("there is no builtin `{wanted}`"))
                    });
            }
            let Some(&index) = self.module_index.get(&qualifier.name) else {
                return Err(Diagnostic::error(
                    qualifier.span,
                    format!(
                        "unknown module `{}` in `@{}.{wanted}`",
                        qualifier.name, qualifier.name
                    ),
                ));
            };
            return self.modules[index]
                .functions
                .get(wanted)
                .map(|&id| Callee::Function(id))
                .ok_or_else(|| {
                    Diagnostic::error(
                        name.span,
                        format!("module `{}` has no function `{wanted}`", qualifier.name),
                    )
                });
        }
        let own = &self.modules[module];
        if let Some(&id) = own.functions.get(wanted) {
            return Ok(Callee::Function(id));
        }
        for import in own.imports.iter().rev() {
            let provides = match &import.names {
                ImportNames::All => true,
                ImportNames::Some(names) => names.iter().any(|n| &n.name == wanted),
            };
            if !provides {
                continue;
            }
            if import.module.name == BUILTIN_MODULE {
                if let Some(builtin) = Builtin::from_name(wanted) {
                    return Ok(Callee::Builtin(builtin));
                }
            } else if let Some(&id) = self
                .module_index
                .get(&import.module.name)
                .and_then(|&index| self.modules[index].functions.get(wanted))
            {
                return Ok(Callee::Function(id));
            }
        }
        if let Some(builtin) = Builtin::from_name(wanted) {
            return Ok(Callee::Builtin(builtin));
        }
        if wanted == "add" {
            return Ok(Callee::Builtin(Builtin::Plus));
        }
        Err(Diagnostic::error(
            name.span,
            format!("unknown function `@{wanted}`"),
        ))
    }

    fn callee_name(&self, callee: Callee) -> String {
        match callee {
            Callee::Builtin(b) => format!("@{b}"),
            Callee::Function(id) => format!("@{}", self.qualified_name(id)),
        }
    }

    fn qualified_name(&self, id: FunctionId) -> String {
        let f = &self.functions[id.0];
        format!("{}.{}", self.modules[f.module].name, f.ast.name.name)
    }

    fn function_type(&self, callee: Callee) -> FunctionType {
        match callee {
            Callee::Builtin(b) => FunctionType::Builtin(b),
            Callee::Function(id) => FunctionType::User {
                name: self.qualified_name(id),
                params: self.functions[id.0].params.clone(),
                returns: self.functions[id.0].returns.clone(),
            },
        }
    }

    /// Analyzes one function's body and builds its typed form; `?` return types the returns
    /// agree on are inferred for the callers analyzed after it.
    fn function(&mut self, id: FunctionId) -> typed::Function {
        let info = &self.functions[id.0];
        let ast = info.ast;
        let module = info.module;
        let mut body = Body {
            analyzer: self,
            module,
            function: id,
            // Most statements of a body declare one local: sized once rather than grown by
            // doubling (each growth copies the locals into fresh, page-faulting memory).
            locals: Vec::with_capacity(ast.params.len() + ast.body.stmts.len()),
            undeclared: FxHashMap::default(),
            poisoned: FxHashSet::default(),
            scopes: vec![FxHashMap::default()],
            loops: 0,
            returned: Vec::new(),
            arg_types: Vec::new(),
            diags: Vec::new(),
        };
        let mut params = Vec::with_capacity(ast.params.len());
        for param in &ast.params {
            if body.scopes[0].contains_key(param.name.name.as_str()) {
                body.diags.push(Diagnostic::error(
                    param.name.span,
                    format!("parameter `{}` is declared twice", param.name.name),
                ));
            }
            params.push(body.declare(&param.name, param.ty.ty.clone()));
        }
        let stmts = body.block(&ast.body);
        let Body {
            locals,
            poisoned,
            returned,
            diags,
            ..
        } = body;
        self.diags.extend(diags);

        let declared = self.functions[id.0].returns.clone();
        let returns: Vec<Type> = declared
            .iter()
            .enumerate()
            .map(|(index, ty)| {
                let seen: Vec<&Type> = returned.iter().filter_map(|r| r.get(index)).collect();
                match seen.split_first() {
                    Some((first, rest)) if ty.has_wildcard() && rest.iter().all(|t| t == first) => {
                        infer(ty, first)
                    }
                    _ => ty.clone(),
                }
            })
            .collect();
        self.functions[id.0].returns = returns.clone();

        let mut function = typed::Function {
            module: self.modules[module].name.clone(),
            name: ast.name.name.clone(),
            kind: ast.kind,
            params,
            returns,
            locals,
            body: stmts,
            span: ast.span,
        };
        // Types may have been refined after an earlier expression recorded them.
        refresh_expr_types(&mut function);
        self.diags.extend(assigned::check(&function, &poisoned));
        function
    }
}

/// An analyzed expression: its typed form (None when a function it calls does not exist: the
/// statement is left out, the program being in error anyway), the types it produces, and
/// whether those are known (false after an error, so that follow-up checks stay quiet).
struct Analyzed {
    expr: Option<typed::Expr>,
    /// The types produced when there is no typed expression to hold them (one Vec per
    /// expression instead of a second copy of its types).
    types_without_expr: Vec<Type>,
    known: bool,
}

impl Analyzed {
    /// The types the expression produces.
    fn types(&self) -> &[Type] {
        match &self.expr {
            Some(expr) => &expr.types,
            None => &self.types_without_expr,
        }
    }
}

struct Body<'s, 'a> {
    analyzer: &'s Analyzer<'a>,
    module: usize,
    function: FunctionId,
    locals: Vec<typed::Local>,
    /// Names used without a declaration, each reported once and then bound to a local of
    /// unknown type.
    undeclared: FxHashMap<&'a str, LocalId>,
    poisoned: FxHashSet<LocalId>,
    /// Innermost last; the first holds the parameters, so the body may shadow them. Keyed
    /// with Fx, not SipHash: every declaration and every read of a name hashes it, and
    /// names come from the program being compiled, not from an adversary of a server.
    /// The names are borrowed from the AST (a copy of each allocated per declaration).
    scopes: Vec<FxHashMap<&'a str, LocalId>>,
    loops: usize,
    /// The operand types of each `return`, for inferring `?` return types.
    returned: Vec<Vec<Type>>,
    /// The argument types of the call being checked (kept to be reused by the next).
    arg_types: Vec<ArgType>,
    diags: Vec<Diagnostic>,
}

impl<'a> Body<'_, 'a> {
    fn declare(&mut self, name: &'a ast::Ident, ty: Type) -> LocalId {
        let id = LocalId(self.locals.len());
        self.locals.push(typed::Local {
            name: name.name.clone(),
            ty,
            span: name.span,
        });
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.as_str(), id);
        }
        id
    }

    /// Declares `name` in the current block, reporting a second declaration in the same block.
    fn declare_checked(&mut self, name: &'a ast::Ident, ty: Type) -> LocalId {
        let innermost = self.scopes.len() - 1;
        // The first scope holds only the parameters: a local may shadow a parameter.
        if innermost > 0 && self.scopes[innermost].contains_key(name.name.as_str()) {
            self.diags.push(Diagnostic::error(
                name.span,
                format!(
                    "`{}` is already declared in this block: a block declares a name once",
                    name.name
                ),
            ));
        }
        self.declare(name, ty)
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).copied())
    }

    fn poison(&mut self, name: &'a ast::Ident) -> LocalId {
        if let Some(&id) = self.undeclared.get(name.name.as_str()) {
            return id;
        }
        let id = LocalId(self.locals.len());
        self.locals.push(typed::Local {
            name: name.name.clone(),
            ty: Type::Wildcard,
            span: name.span,
        });
        self.undeclared.insert(name.name.as_str(), id);
        self.poisoned.insert(id);
        id
    }

    fn block(&mut self, block: &'a ast::Block) -> Vec<typed::Stmt> {
        // Sized for the block up front (most statements declare one name): a function body
        // holds a hundred statements or more, and growing there by doubling copies them.
        let statements = block.stmts.len();
        self.scopes.push(FxHashMap::with_capacity_and_hasher(
            statements,
            Default::default(),
        ));
        let mut stmts = Vec::with_capacity(statements);
        stmts.extend(block.stmts.iter().filter_map(|stmt| self.stmt(stmt)));
        self.scopes.pop();
        stmts
    }

    fn stmt(&mut self, stmt: &'a ast::Stmt) -> Option<typed::Stmt> {
        let kind = match &stmt.kind {
            ast::StmtKind::Var { names, ty } => {
                let ids = names
                    .iter()
                    .map(|name| self.declare_checked(name, ty.ty.clone()))
                    .collect();
                typed::StmtKind::Declare(ids)
            }
            ast::StmtKind::Assign { targets, expr } => self.assign(targets, expr)?,
            ast::StmtKind::Expr(expr) => typed::StmtKind::Expr(self.expr(expr).expr?),
            ast::StmtKind::Return(operands) => self.return_stmt(stmt.span, operands),
            ast::StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let cond = self.condition(cond, "if");
                typed::StmtKind::If {
                    cond,
                    then_body: self.block(then_block),
                    else_body: else_block.as_ref().map(|b| self.block(b)),
                }
            }
            ast::StmtKind::While { cond, body } => {
                let cond = self.condition(cond, "while");
                self.loops += 1;
                let body = self.block(body);
                self.loops -= 1;
                typed::StmtKind::While { cond, body }
            }
            ast::StmtKind::Repeat { count, body } => {
                let (count_operand, ty) = self.operand(count);
                if !(ty.is_integer() || ty == Type::Wildcard) {
                    self.diags.push(Diagnostic::error(
                        count.span(),
                        format!("the `repeat` count must be an integer, found {ty}"),
                    ));
                }
                self.loops += 1;
                let body = self.block(body);
                self.loops -= 1;
                typed::StmtKind::Repeat {
                    count: count_operand,
                    body,
                }
            }
            ast::StmtKind::Break | ast::StmtKind::Continue => {
                let is_break = matches!(stmt.kind, ast::StmtKind::Break);
                if self.loops == 0 {
                    let word = if is_break { "break" } else { "continue" };
                    self.diags.push(Diagnostic::error(
                        stmt.span,
                        format!("`{word}` outside of a `while` or `repeat` loop"),
                    ));
                    return None;
                }
                if is_break {
                    typed::StmtKind::Break
                } else {
                    typed::StmtKind::Continue
                }
            }
        };
        Some(typed::Stmt {
            kind,
            span: stmt.span,
        })
    }

    /// An `if`/`while` condition: bool; an integer is accepted with a warning (nonzero is
    /// true, as HorsePower's interpreter reads it).
    fn condition(&mut self, cond: &'a ast::Operand, keyword: &str) -> typed::Operand {
        let (operand, ty) = self.operand(cond);
        if ty == Type::Bool || ty == Type::Wildcard {
        } else if ty.is_integer() {
            self.diags.push(Diagnostic::warning(
                cond.span(),
                format!("the `{keyword}` condition is {ty}, not bool: nonzero counts as true"),
            ));
        } else {
            self.diags.push(Diagnostic::error(
                cond.span(),
                format!("the `{keyword}` condition must be bool, found {ty}"),
            ));
        }
        operand
    }

    fn assign(
        &mut self,
        targets: &'a [ast::Target],
        expr: &'a ast::Expr,
    ) -> Option<typed::StmtKind> {
        let analyzed = self.expr(expr);
        let produced = analyzed.types();
        // Only error and warning messages name the expression: built when one is reported.
        let described = |body: &Self| {
            analyzed
                .expr
                .as_ref()
                .map_or_else(String::new, |e| body.describe_expr(e))
        };
        // Where the targets' value types come from: the expression's types, a spread
        // `@group_aggregate`'s, or nowhere (unknown) when they do not match the targets.
        let mut spread_types: Option<Vec<Type>> = None;
        let mut produced_fit = false;
        if analyzed.known {
            if produced.is_empty() && targets.len() == 1 {
                // HorsePower pass/t12 assigns the call of a function that declares no result.
                self.diags.push(Diagnostic::warning(
                    expr.span,
                    format!("{} declares no result to assign", described(self)),
                ));
            } else if let Some(spread) = analyzed
                .expr
                .as_ref()
                .filter(|_| targets.len() > 1)
                .and_then(|e| spread_group_aggregate(e, |op| self.operand_type(op)))
            {
                // `first, r1, … = @group_aggregate(k, ops, x…)`: one target per cell of the
                // result list (the outliner's fused group aggregation prints so).
                if spread.len() == targets.len() {
                    spread_types = Some(spread);
                } else {
                    self.diags.push(Diagnostic::error(
                        expr.span,
                        format!(
                            "{} targets but {} gives {} values",
                            targets.len(),
                            described(self),
                            spread.len()
                        ),
                    ));
                }
            } else if produced.len() != targets.len() {
                self.diags.push(Diagnostic::error(
                    expr.span,
                    format!(
                        "{} target{} but {} gives {} value{}",
                        targets.len(),
                        if targets.len() == 1 { "" } else { "s" },
                        described(self),
                        produced.len(),
                        if produced.len() == 1 { "" } else { "s" }
                    ),
                ));
            } else {
                produced_fit = true;
            }
        }
        let mut typed_targets = Vec::with_capacity(targets.len());
        let mut declares = Vec::with_capacity(targets.len());
        for (index, target) in targets.iter().enumerate() {
            let value = match &spread_types {
                Some(spread) => spread.get(index).cloned(),
                None if produced_fit => produced.get(index).cloned(),
                None => None,
            };
            let (typed_target, declared) = self.target(target, value);
            typed_targets.push(typed_target);
            declares.push(declared);
        }
        Some(typed::StmtKind::Assign {
            targets: typed_targets,
            declares,
            expr: analyzed.expr?,
        })
    }

    /// One target of an assignment receiving a value of type `value` (None: unknown).
    fn target(&mut self, target: &'a ast::Target, value: Option<Type>) -> (typed::Target, bool) {
        match target {
            ast::Target::Discard { ty: Some(ty), .. } => {
                self.diags.push(Diagnostic::error(
                    ty.span,
                    "`_` discards a value and cannot be declared with a type: write `_` alone",
                ));
                (typed::Target::Discard, false)
            }
            ast::Target::Discard { ty: None, .. } => (typed::Target::Discard, false),
            ast::Target::Name { name, ty: Some(ty) } => {
                let inferred = match &value {
                    Some(value) => infer(&ty.ty, value),
                    None => ty.ty.clone(),
                };
                if let Some(value) = &value {
                    self.check_fits(name, &inferred, value, name.span.to(ty.span));
                }
                let id = self.declare_checked(name, inferred);
                (typed::Target::Local(id), true)
            }
            ast::Target::Name { name, ty: None } => {
                let id = match self.lookup(&name.name) {
                    Some(id) => id,
                    None => {
                        let message = if self.global(&name.name).is_some() {
                            format!("cannot assign to the global `{}`", name.name)
                        } else {
                            format!(
                                "`{0}` is not declared: declare it with `{0}:type = …` or `var {0}:type;`",
                                name.name
                            )
                        };
                        if !self.undeclared.contains_key(name.name.as_str()) {
                            self.diags.push(Diagnostic::error(name.span, message));
                        }
                        self.poison(name)
                    }
                };
                if let Some(value) = &value {
                    let declared = self.locals[id.0].ty.clone();
                    if declared.has_wildcard() {
                        self.locals[id.0].ty = infer(&declared, value);
                    }
                    let current = self.locals[id.0].ty.clone();
                    if !self.poisoned.contains(&id) {
                        self.check_fits(name, &current, value, name.span);
                    }
                }
                (typed::Target::Local(id), false)
            }
        }
    }

    /// A value of type `value` stored into `name` of type `declared`.
    fn check_fits(&mut self, name: &ast::Ident, declared: &Type, value: &Type, span: Span) {
        match compatibility(declared, value) {
            Compat::Exact => {}
            Compat::Convertible => self.diags.push(Diagnostic::warning(
                span,
                format!(
                    "`{}` is {declared} but the value is {value}: it is converted",
                    name.name
                ),
            )),
            Compat::Incompatible => self.diags.push(Diagnostic::error(
                span,
                format!(
                    "cannot assign a value of type {value} to `{}` of type {declared}",
                    name.name
                ),
            )),
        }
    }

    fn return_stmt(&mut self, span: Span, operands: &'a [ast::Operand]) -> typed::StmtKind {
        let typed_operands: Vec<(typed::Operand, Type)> =
            operands.iter().map(|o| self.operand(o)).collect();
        let info = &self.analyzer.functions[self.function.0];
        let name = info.ast.name.name.clone();
        let declared = info.returns.clone();
        if declared.is_empty() && !operands.is_empty() {
            self.diags.push(Diagnostic::error(
                span,
                format!(
                    "function `{name}` declares no return type, but this returns {} value{}",
                    operands.len(),
                    if operands.len() == 1 { "" } else { "s" }
                ),
            ));
        } else if declared.len() != operands.len() {
            self.diags.push(Diagnostic::error(
                span,
                format!(
                    "function `{name}` returns {} value{}, but this returns {}",
                    declared.len(),
                    if declared.len() == 1 { "" } else { "s" },
                    operands.len()
                ),
            ));
        } else {
            for ((operand, (_, ty)), expected) in
                operands.iter().zip(&typed_operands).zip(&declared)
            {
                match compatibility(expected, ty) {
                    Compat::Exact => {}
                    Compat::Convertible => self.diags.push(Diagnostic::warning(
                        operand.span(),
                        format!(
                            "function `{name}` returns {expected}; this {ty} value is converted"
                        ),
                    )),
                    Compat::Incompatible => self.diags.push(Diagnostic::error(
                        operand.span(),
                        format!("function `{name}` returns {expected}, but this value is {ty}"),
                    )),
                }
            }
            self.returned
                .push(typed_operands.iter().map(|(_, t)| t.clone()).collect());
        }
        typed::StmtKind::Return(typed_operands.into_iter().map(|(o, _)| o).collect())
    }

    fn global(&self, name: &str) -> Option<GlobalId> {
        self.analyzer.modules[self.module]
            .globals
            .get(name)
            .copied()
    }

    /// A variable or literal, with its type (`?` when it is not declared).
    fn operand(&mut self, operand: &'a ast::Operand) -> (typed::Operand, Type) {
        match operand {
            ast::Operand::Literal(literal) => (
                typed::Operand::Literal(literal.clone()),
                literal.ty.ty.clone(),
            ),
            ast::Operand::Name(name) => {
                if name.name == "_" {
                    self.diags.push(Diagnostic::error(
                        name.span,
                        "`_` is not a value: it only discards a result on the left of `=`",
                    ));
                    let id = self.poison(name);
                    return (typed::Operand::Local(id, name.span), Type::Wildcard);
                }
                if let Some(id) = self.lookup(&name.name) {
                    let ty = self.locals[id.0].ty.clone();
                    return (typed::Operand::Local(id, name.span), ty);
                }
                if let Some(id) = self.global(&name.name) {
                    let ty = self.analyzer.globals[id.0].ty.clone();
                    return (typed::Operand::Global(id, name.span), ty);
                }
                if !self.undeclared.contains_key(name.name.as_str()) {
                    self.diags.push(Diagnostic::error(
                        name.span,
                        format!("`{}` is not declared before this use", name.name),
                    ));
                }
                let id = self.poison(name);
                (typed::Operand::Local(id, name.span), Type::Wildcard)
            }
        }
    }

    /// The type of an operand already checked.
    fn operand_type(&self, operand: &typed::Operand) -> Type {
        match operand {
            typed::Operand::Literal(literal) => literal.ty.ty.clone(),
            typed::Operand::Local(id, _) => self
                .locals
                .get(id.0)
                .map_or(Type::Wildcard, |l| l.ty.clone()),
            typed::Operand::Global(id, _) => self
                .analyzer
                .globals
                .get(id.0)
                .map_or(Type::Wildcard, |g| g.ty.clone()),
        }
    }

    fn describe_expr(&self, expr: &typed::Expr) -> String {
        match &expr.kind {
            typed::ExprKind::Call { callee, .. } => {
                format!("`{}`", self.analyzer.callee_name(*callee))
            }
            typed::ExprKind::CheckCast { .. } => "`check_cast`".to_string(),
            typed::ExprKind::Operand(_) => "the operand".to_string(),
        }
    }

    fn expr(&mut self, expr: &'a ast::Expr) -> Analyzed {
        match &expr.kind {
            ast::ExprKind::Operand(operand) => {
                let (operand, ty) = self.operand(operand);
                Analyzed {
                    expr: Some(typed::Expr {
                        kind: typed::ExprKind::Operand(operand),
                        types: vec![ty],
                        span: expr.span,
                    }),
                    types_without_expr: Vec::new(),
                    known: true,
                }
            }
            ast::ExprKind::CheckCast(inner, ty) => {
                let inner = self.expr(inner);
                let target = ty.ty.clone();
                if inner.known {
                    match inner.types() {
                        [value] => {
                            if compatibility(&target, value) != Compat::Exact {
                                self.diags.push(Diagnostic::error(
                                    ty.span,
                                    format!(
                                        "check_cast to {target} of a value of type {value} always fails"
                                    ),
                                ));
                            }
                        }
                        types => self.diags.push(Diagnostic::error(
                            expr.span,
                            format!(
                                "check_cast needs exactly one value, but {} gives {}",
                                inner
                                    .expr
                                    .as_ref()
                                    .map_or_else(String::new, |e| self.describe_expr(e)),
                                types.len()
                            ),
                        )),
                    }
                }
                let types_without_expr = if inner.expr.is_some() {
                    Vec::new()
                } else {
                    vec![target.clone()]
                };
                Analyzed {
                    expr: inner.expr.map(|inner| typed::Expr {
                        kind: typed::ExprKind::CheckCast {
                            expr: Box::new(inner),
                            ty: target.clone(),
                        },
                        types: vec![target],
                        span: expr.span,
                    }),
                    types_without_expr,
                    known: true,
                }
            }
            ast::ExprKind::Call(call) => self.call(call, expr.span),
        }
    }

    fn call(&mut self, call: &'a ast::Call, span: Span) -> Analyzed {
        let callee = match self.analyzer.resolve_function(self.module, &call.callee) {
            Ok(callee) => Some(callee),
            Err(diag) => {
                self.diags.push(diag);
                None
            }
        };
        let mut args = Vec::with_capacity(call.args.len());
        // The argument types only live for the rule's check: one list reused for every call.
        let mut arg_types = std::mem::take(&mut self.arg_types);
        arg_types.clear();
        let mut args_known = true;
        for arg in &call.args {
            match arg {
                ast::Arg::Operand(operand) => {
                    let (typed_operand, ty) = self.operand(operand);
                    args.push(typed::Arg::Operand(typed_operand));
                    arg_types.push(ArgType::Value(ty));
                }
                ast::Arg::Function(name) => {
                    match self.analyzer.resolve_function(self.module, name) {
                        Ok(function) => {
                            args.push(typed::Arg::Function(function, name.span));
                            arg_types
                                .push(ArgType::Function(self.analyzer.function_type(function)));
                        }
                        Err(diag) => {
                            self.diags.push(diag);
                            args_known = false;
                        }
                    }
                }
            }
        }
        let Some(callee) = callee.filter(|_| args_known) else {
            self.arg_types = arg_types;
            return Analyzed {
                expr: None,
                types_without_expr: vec![Type::Wildcard],
                known: false,
            };
        };
        let result = rules::apply(&self.analyzer.function_type(callee), &arg_types);
        let (types, known) = match result {
            Ok(types) => {
                if let Callee::Function(id) = callee {
                    self.warn_conversions(id, &arg_types, &call.args);
                }
                (types, true)
            }
            Err(RuleError { arg, message }) => {
                let at = arg
                    .and_then(|i| call.args.get(i))
                    .map_or(call.span, arg_span);
                self.diags.push(Diagnostic::error(at, message));
                (vec![Type::Wildcard], false)
            }
        };
        self.arg_types = arg_types;
        Analyzed {
            expr: Some(typed::Expr {
                kind: typed::ExprKind::Call { callee, args },
                types,
                span,
            }),
            types_without_expr: Vec::new(),
            known,
        }
    }

    /// Arguments of a user function accepted by conversion (an `i64` for an `i32` parameter).
    fn warn_conversions(&mut self, id: FunctionId, args: &[ArgType], written: &[ast::Arg]) {
        let params = &self.analyzer.functions[id.0].params;
        let name = self.analyzer.qualified_name(id);
        for ((param, arg), span) in params.iter().zip(args).zip(written.iter().map(arg_span)) {
            if let ArgType::Value(ty) = arg {
                if compatibility(param, ty) == Compat::Convertible {
                    self.diags.push(Diagnostic::warning(
                        span,
                        format!("`@{name}` takes {param}; this {ty} argument is converted"),
                    ));
                }
            }
        }
    }
}

/// Where an argument is written: its operand, or the function it names.
fn arg_span(arg: &ast::Arg) -> Span {
    match arg {
        ast::Arg::Operand(operand) => operand.span(),
        ast::Arg::Function(name) => name.span,
    }
}

/// Recomputes the operand types recorded in each operand expression from the final local
/// types (a `var x:?;` is refined by its first assignment, after earlier reads were typed).
fn refresh_expr_types(function: &mut typed::Function) {
    fn stmts(body: &mut [typed::Stmt], locals: &[typed::Local]) {
        for stmt in body {
            match &mut stmt.kind {
                typed::StmtKind::Assign { expr, .. } | typed::StmtKind::Expr(expr) => {
                    refresh(expr, locals)
                }
                typed::StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    stmts(then_body, locals);
                    if let Some(else_body) = else_body {
                        stmts(else_body, locals);
                    }
                }
                typed::StmtKind::While { body, .. } | typed::StmtKind::Repeat { body, .. } => {
                    stmts(body, locals)
                }
                _ => {}
            }
        }
    }
    fn refresh(expr: &mut typed::Expr, locals: &[typed::Local]) {
        match &mut expr.kind {
            typed::ExprKind::Operand(typed::Operand::Local(id, _)) => {
                // Most types stand as recorded: replaced only where they changed.
                if let Some(local) = locals.get(id.0) {
                    if expr.types.as_slice() != std::slice::from_ref(&local.ty) {
                        expr.types = vec![local.ty.clone()];
                    }
                }
            }
            typed::ExprKind::CheckCast { expr: inner, .. } => refresh(inner, locals),
            _ => {}
        }
    }
    // The body and the locals borrowed apart (a copy of every local's name and type cost
    // as much as the walk).
    let typed::Function { body, locals, .. } = function;
    stmts(body, locals);
}

/// The result types of a `@group_aggregate` call whose reductions are a sym literal, spread
/// one per target (see `horsec_runtime::args::group::spread_result_types`).
fn spread_group_aggregate(
    expr: &typed::Expr,
    type_of: impl Fn(&typed::Operand) -> Type,
) -> Option<Vec<Type>> {
    let typed::ExprKind::Call {
        callee: typed::Callee::Builtin(Builtin::GroupAggregate),
        args,
    } = &expr.kind
    else {
        return None;
    };
    let Some(typed::Arg::Operand(typed::Operand::Literal(ops))) = args.get(1) else {
        return None;
    };
    let names: Vec<&str> = ops
        .values
        .iter()
        .map(|v| match v {
            crate::syntax::ast::LiteralValue::Text(s) => Some(s.as_str()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let values: Vec<Type> = args
        .iter()
        .skip(2)
        .map(|a| match a {
            typed::Arg::Operand(op) => Some(type_of(op)),
            typed::Arg::Function(..) => None,
        })
        .collect::<Option<_>>()?;
    horsec_runtime::args::group::spread_result_types(&names, &values)
}
