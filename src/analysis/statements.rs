//! Statement numbering and the facts every analysis needs about one statement: which locals it
//! reads, which it writes, and a short label for printers.
//!
//! Statements are numbered in pre-order over the function's nested bodies, so the statements
//! inside a compound statement (if/while/repeat) are exactly the ids `id+1 .. end` of that
//! statement. Analyses key their results by [`StmtId`].

use std::fmt;

use horsec_runtime::types::Type;

use crate::sema::typed::{
    Arg, Callee, Expr, ExprKind, Function, LocalId, Operand, Stmt, StmtKind, Target, TypedProgram,
};
use crate::syntax::ast::{Literal, LiteralValue};

/// A statement of one function, numbered in pre-order (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtId(pub usize);

impl fmt::Display for StmtId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// One numbered statement with its place in the nesting.
#[derive(Clone, Copy, Debug)]
pub struct StmtEntry<'p> {
    pub stmt: &'p Stmt,
    /// The innermost compound statement containing this one.
    pub parent: Option<StmtId>,
    /// Nesting depth: 0 for statements of the function body.
    pub depth: usize,
    /// One past the last statement nested inside this one (`id+1` for simple statements).
    pub subtree_end: usize,
}

/// Every statement of a function, in pre-order.
#[derive(Clone, Debug)]
pub struct StatementTree<'p> {
    entries: Vec<StmtEntry<'p>>,
}

impl<'p> StatementTree<'p> {
    pub fn new(function: &'p Function) -> StatementTree<'p> {
        let mut tree = StatementTree {
            // Exact for straight-line bodies (the usual case), a start otherwise.
            entries: Vec::with_capacity(function.body.len()),
        };
        tree.number_body(&function.body, None, 0);
        tree
    }

    fn number_body(&mut self, body: &'p [Stmt], parent: Option<StmtId>, depth: usize) {
        for stmt in body {
            let id = self.entries.len();
            self.entries.push(StmtEntry {
                stmt,
                parent,
                depth,
                subtree_end: id + 1,
            });
            // The bodies `nested_bodies` lists, in its order, without collecting them: every
            // analysis numbers the function's statements again.
            match &stmt.kind {
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    self.number_body(then_body, Some(StmtId(id)), depth + 1);
                    if let Some(else_body) = else_body {
                        self.number_body(else_body, Some(StmtId(id)), depth + 1);
                    }
                }
                StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => {
                    self.number_body(body, Some(StmtId(id)), depth + 1);
                }
                _ => {}
            }
            let end = self.entries.len();
            if let Some(entry) = self.entries.get_mut(id) {
                entry.subtree_end = end;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of `id`; ids come from this tree, so a miss is a caller bug reported as `None`.
    pub fn get(&self, id: StmtId) -> Option<&StmtEntry<'p>> {
        self.entries.get(id.0)
    }

    pub fn stmt(&self, id: StmtId) -> Option<&'p Stmt> {
        self.entries.get(id.0).map(|e| e.stmt)
    }

    /// All statements in pre-order.
    pub fn iter(&self) -> impl Iterator<Item = (StmtId, &StmtEntry<'p>)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, entry)| (StmtId(i), entry))
    }

    /// True when `inner` is nested (at any depth) inside the compound statement `outer`.
    pub fn is_inside(&self, inner: StmtId, outer: StmtId) -> bool {
        self.get(outer)
            .is_some_and(|entry| inner.0 > outer.0 && inner.0 < entry.subtree_end)
    }
}

/// The bodies nested directly in `stmt`, in source order.
pub fn nested_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match &stmt.kind {
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            let mut bodies = vec![then_body.as_slice()];
            if let Some(else_body) = else_body {
                bodies.push(else_body.as_slice());
            }
            bodies
        }
        StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => vec![body.as_slice()],
        _ => Vec::new(),
    }
}

/// One read of a local: which local, and at which argument position of the call it is read
/// (`None` when it is not a call argument: a copy, a return, a condition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalUse {
    pub local: LocalId,
    pub argument: Option<usize>,
}

/// The locals `stmt` itself reads (for compound statements: only its condition or count).
pub fn uses(stmt: &Stmt) -> Vec<LocalUse> {
    let mut out = Vec::new();
    for_each_use(stmt, |read| out.push(read));
    out
}

/// Calls `visit` on each read [`uses`] lists, in the same order, without collecting them:
/// the analyses ask this of every statement several times.
pub fn for_each_use(stmt: &Stmt, mut visit: impl FnMut(LocalUse)) {
    match &stmt.kind {
        StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => expr_uses(expr, &mut visit),
        StmtKind::Return(operands) => {
            for operand in operands {
                operand_use(operand, None, &mut visit);
            }
        }
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => {
            operand_use(cond, None, &mut visit)
        }
        StmtKind::Repeat { count, .. } => operand_use(count, None, &mut visit),
        StmtKind::Declare(_) | StmtKind::Break | StmtKind::Continue => {}
    }
}

fn expr_uses(expr: &Expr, visit: &mut impl FnMut(LocalUse)) {
    match &expr.kind {
        ExprKind::Call { args, .. } => {
            for (position, arg) in args.iter().enumerate() {
                if let Arg::Operand(operand) = arg {
                    operand_use(operand, Some(position), visit);
                }
            }
        }
        ExprKind::CheckCast { expr, .. } => expr_uses(expr, visit),
        ExprKind::Operand(operand) => operand_use(operand, None, visit),
    }
}

fn operand_use(operand: &Operand, argument: Option<usize>, visit: &mut impl FnMut(LocalUse)) {
    if let Operand::Local(local, _) = operand {
        visit(LocalUse {
            local: *local,
            argument,
        });
    }
}

/// The locals `stmt` assigns (declarations without a value assign nothing).
pub fn definitions(stmt: &Stmt) -> Vec<LocalId> {
    defined_locals(stmt).collect()
}

/// The locals [`definitions`] lists, in the same order, without collecting them.
pub fn defined_locals(stmt: &Stmt) -> impl Iterator<Item = LocalId> + '_ {
    let targets: &[Target] = match &stmt.kind {
        StmtKind::Assign { targets, .. } => targets,
        _ => &[],
    };
    targets.iter().filter_map(|target| match target {
        Target::Local(local) => Some(*local),
        Target::Discard => None,
    })
}

/// The call an assignment or expression statement makes, looking through `check_cast`.
pub fn statement_call(stmt: &Stmt) -> Option<(Callee, &[Arg])> {
    match &stmt.kind {
        StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => expr_call(expr),
        _ => None,
    }
}

/// The call `expr` makes, looking through `check_cast`.
pub fn expr_call(expr: &Expr) -> Option<(Callee, &[Arg])> {
    match &expr.kind {
        ExprKind::Call { callee, args } => Some((*callee, args.as_slice())),
        ExprKind::CheckCast { expr, .. } => expr_call(expr),
        ExprKind::Operand(_) => None,
    }
}

/// The static type of an operand.
pub fn operand_type(program: &TypedProgram, function: &Function, operand: &Operand) -> Type {
    operand_type_ref(program, function, operand).clone()
}

/// [`operand_type`] borrowed: the device analysis types the arguments of every call, and
/// a copy of a nested type allocates.
pub fn operand_type_ref<'p>(
    program: &'p TypedProgram,
    function: &'p Function,
    operand: &'p Operand,
) -> &'p Type {
    static WILDCARD: Type = Type::Wildcard;
    match operand {
        Operand::Local(local, _) => function.locals.get(local.0).map_or(&WILDCARD, |l| &l.ty),
        Operand::Global(global, _) => program.globals.get(global.0).map_or(&WILDCARD, |g| &g.ty),
        Operand::Literal(literal) => &literal.ty.ty,
    }
}

/// The source name of a local (`?` for an id the function does not have).
pub fn local_name(function: &Function, local: LocalId) -> &str {
    function
        .locals
        .get(local.0)
        .map(|l| l.name.as_str())
        .unwrap_or("?")
}

/// A one-line summary of a statement for printers: `t17 = @geq`, `return t46`, `if t3`.
pub fn label(program: &TypedProgram, function: &Function, stmt: &Stmt) -> String {
    let operand_text = |operand: &Operand| match operand {
        Operand::Local(local, _) => local_name(function, *local).to_string(),
        Operand::Global(global, _) => program
            .globals
            .get(global.0)
            .map(|g| g.name.clone())
            .unwrap_or_else(|| "?".to_string()),
        Operand::Literal(literal) => literal_text(literal),
    };
    let expr_text = |expr: &Expr| -> String {
        match expr_call(expr) {
            Some((callee, args)) => {
                let args: Vec<String> = args
                    .iter()
                    .map(|arg| match arg {
                        Arg::Operand(operand) => operand_text(operand),
                        Arg::Function(callee, _) => callee_name(program, *callee),
                    })
                    .collect();
                format!("{}({})", callee_name(program, callee), args.join(","))
            }
            None => match &expr.kind {
                ExprKind::Operand(operand) => operand_text(operand),
                _ => "?".to_string(),
            },
        }
    };
    match &stmt.kind {
        StmtKind::Declare(locals) => {
            let names: Vec<&str> = locals.iter().map(|l| local_name(function, *l)).collect();
            format!("var {}", names.join(","))
        }
        StmtKind::Assign { targets, expr, .. } => {
            format!("{} = {}", target_names(function, targets), expr_text(expr))
        }
        StmtKind::Expr(expr) => expr_text(expr),
        StmtKind::Return(operands) => {
            let names: Vec<String> = operands.iter().map(operand_text).collect();
            format!("return {}", names.join(","))
        }
        StmtKind::If { cond, .. } => format!("if {}", operand_text(cond)),
        StmtKind::While { cond, .. } => format!("while {}", operand_text(cond)),
        StmtKind::Repeat { count, .. } => format!("repeat {}", operand_text(count)),
        StmtKind::Break => "break".to_string(),
        StmtKind::Continue => "continue".to_string(),
    }
}

/// A short form of a literal for labels: `24:f64`, `` `lineitem ``, `date[2]`.
fn literal_text(literal: &Literal) -> String {
    let ty = &literal.ty.ty;
    match literal.values.as_slice() {
        [LiteralValue::Int(v)] => format!("{v}:{ty}"),
        [LiteralValue::Float(v)] => format!("{v}:{ty}"),
        [LiteralValue::Bool(v)] => format!("{}:bool", u8::from(*v)),
        [LiteralValue::Text(text)] if *ty == Type::Sym => format!("`{text}"),
        [LiteralValue::Text(text)] => format!("{text:?}"),
        [_] => format!("literal:{ty}"),
        values => format!("{ty}[{}]", values.len()),
    }
}

/// `a,b` for assignment targets, `_` for a discard.
pub fn target_names(function: &Function, targets: &[Target]) -> String {
    let names: Vec<&str> = targets
        .iter()
        .map(|target| match target {
            Target::Local(local) => local_name(function, *local),
            Target::Discard => "_",
        })
        .collect();
    names.join(",")
}

/// `@name` of a builtin, `@module.name` of a user function.
pub fn callee_name(program: &TypedProgram, callee: Callee) -> String {
    match callee {
        Callee::Builtin(builtin) => format!("@{builtin}"),
        Callee::Function(id) => program
            .functions
            .get(id.0)
            .map(|f| format!("@{}", f.qualified_name()))
            .unwrap_or_else(|| "@?".to_string()),
    }
}
