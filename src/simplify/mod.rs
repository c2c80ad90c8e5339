//! Rewrites of the typed program that the GPU pipeline makes before its analyses: each
//! replaces a computation with a cheaper one that gives the same values on every input.
//!
//! The one rewrite so far drops the sort that follows a grouping by the same keys, the shape
//! of SQL's `group by a, b order by a, b`:
//!
//! ```text
//! g = @group(@list(a, b));   ks = @keys(g);
//! ka = @index(a, ks);        kb = @index(b, ks);
//! p = @order(@list(ka, kb), (1,1):bool);
//! out = @index(x, p);        // x: one element per group
//! ```
//!
//! `@group` numbers its groups in ascending key order (both backends; LANGUAGE.md leaves the
//! order open, horsec defines it so), so an ascending, stable sort by a prefix of the group's
//! key columns, read at the groups' first rows, is the identity permutation, and `@index(x, p)`
//! is `x` wherever `x` has one element per group. On the GPU that saves the sort's dispatches
//! and the wait for the group count that sizing it costs (TPC-H q1, q4, q7, q8, q12, q22).
//!
//! The rewrite is purely syntactic and conservative: every local on the way is assigned once,
//! at the top level of the function; `x` is one element per group by construction (a gather
//! at the groups' first rows, a reduction per group, or an element-wise function of those and
//! scalar literals); floating-point keys are left alone, as their order has corner cases
//! (`-0.0`, NaN) that the sort and the grouping need not share. The CPU reference path
//! runs the program as written, so the differential tests compare the two.

use std::collections::HashSet;

use horsec_runtime::builtin::Builtin;

use crate::analysis::statements::{defined_locals, for_each_use, nested_bodies};
use crate::sema::typed::{
    Arg, Callee, Expr, ExprKind, Function, LocalId, Operand, Stmt, StmtKind, Target, TypedProgram,
};
use crate::syntax::ast::LiteralValue;

#[cfg(test)]
mod tests;

/// Applies every rewrite to every function; returns how many sorts it dropped.
pub fn simplify_program(program: &mut TypedProgram) -> usize {
    program
        .functions
        .iter_mut()
        .map(drop_sorts_of_grouped_keys)
        .sum()
}

/// Drops each `@order` that sorts groups into the order `@group` already gave them (see the
/// module docs), turning its `@index` uses into copies; returns how many it dropped.
pub fn drop_sorts_of_grouped_keys(function: &mut Function) -> usize {
    // Most functions sort nothing at their top level: they cost one scan.
    let sorts = |stmt: &Stmt| match &stmt.kind {
        StmtKind::Assign { expr, .. } => builtin_args(expr, Builtin::Order).is_some(),
        _ => false,
    };
    if !function.body.iter().any(sorts) {
        return 0;
    }
    let mut dropped = 0;
    // One sort at a time: each rewrite changes the uses the next one is checked against.
    // A function holds a handful of sorts, so re-reading it per sort costs nothing.
    while let Some(rewrite) = Rewriter::new(function).find() {
        rewrite.apply(function);
        dropped += 1;
    }
    dropped
}

/// One sort to drop: the statements that go and the `@index` statements that become copies.
struct Rewrite {
    /// Top-level statement indices to delete: the `@order`, and its key list if nothing
    /// else reads it.
    delete: Vec<usize>,
    /// Top-level statement index of each `y = @index(x, p)`, with its `x`.
    copies: Vec<(usize, Operand)>,
}

impl Rewrite {
    fn apply(self, function: &mut Function) {
        for (index, source) in self.copies {
            if let StmtKind::Assign { expr, .. } = &mut function.body[index].kind {
                expr.kind = ExprKind::Operand(source);
            }
        }
        let delete: HashSet<usize> = self.delete.into_iter().collect();
        let mut index = 0;
        function.body.retain(|_| {
            index += 1;
            !delete.contains(&(index - 1))
        });
    }
}

/// What one function says about its locals: how often and where each is assigned.
struct Rewriter<'f> {
    function: &'f Function,
    /// Assignments of each local, counted over nested bodies too.
    assignments: Vec<u32>,
    /// The top-level statement that assigns each local, where that is its only assignment
    /// and the statement assigns nothing else.
    definition: Vec<Option<usize>>,
}

impl<'f> Rewriter<'f> {
    fn new(function: &'f Function) -> Rewriter<'f> {
        let locals = function.locals.len();
        let mut assignments = vec![0; locals];
        count_assignments(&function.body, &mut assignments);
        let mut definition = vec![None; locals];
        for (index, stmt) in function.body.iter().enumerate() {
            if let StmtKind::Assign { targets, .. } = &stmt.kind {
                if let [Target::Local(local)] = targets.as_slice() {
                    if assignments.get(local.0) == Some(&1) {
                        definition[local.0] = Some(index);
                    }
                }
            }
        }
        Rewriter {
            function,
            assignments,
            definition,
        }
    }

    /// Every read of `local`: the top-level statement it is in (`None` inside a nested
    /// body) and its argument position. Asked only of a candidate sort's locals, so it
    /// walks the function on demand rather than indexing every local's reads up front.
    fn reads(&self, local: LocalId) -> Vec<(Option<usize>, Option<usize>)> {
        fn nested(body: &[Stmt], local: LocalId, out: &mut Vec<(Option<usize>, Option<usize>)>) {
            for stmt in body {
                for_each_use(stmt, |read| {
                    if read.local == local {
                        out.push((None, read.argument));
                    }
                });
                for inner in nested_bodies(stmt) {
                    nested(inner, local, out);
                }
            }
        }
        let mut out = Vec::new();
        for (index, stmt) in self.function.body.iter().enumerate() {
            for_each_use(stmt, |read| {
                if read.local == local {
                    out.push((Some(index), read.argument));
                }
            });
            for inner in nested_bodies(stmt) {
                nested(inner, local, &mut out);
            }
        }
        out
    }

    /// The first sort of the function that can go.
    fn find(&self) -> Option<Rewrite> {
        (0..self.function.body.len()).find_map(|index| self.sort_to_drop(index))
    }

    /// The rewrite of top-level statement `index`, if it is `p = @order(…)` of a grouping's
    /// keys whose every use the rewrite covers.
    fn sort_to_drop(&self, index: usize) -> Option<Rewrite> {
        let stmt = &self.function.body[index];
        let StmtKind::Assign { targets, expr, .. } = &stmt.kind else {
            return None;
        };
        let [Target::Local(permutation)] = targets.as_slice() else {
            return None;
        };
        if self.definition.get(permutation.0)? != &Some(index) {
            return None;
        }
        let [Arg::Operand(sort_keys), Arg::Operand(Operand::Literal(directions))] =
            builtin_args(expr, Builtin::Order)?
        else {
            return None;
        };
        if directions.values.is_empty()
            || !directions
                .values
                .iter()
                .all(|v| matches!(v, LiteralValue::Bool(true)))
        {
            return None;
        }
        let (sort_columns, sort_list) = self.columns(sort_keys)?;
        if directions.values.len() != 1 && directions.values.len() != sort_columns.len() {
            return None;
        }
        let (first_rows, group) = self.sorts_group_keys(&sort_columns)?;

        let mut copies = Vec::new();
        for (at, argument) in self.reads(*permutation) {
            let at = at?;
            if argument != Some(1) {
                return None;
            }
            let (_, expr) = self.assignment_at(at)?;
            let [Arg::Operand(source), Arg::Operand(Operand::Local(..))] =
                builtin_args(expr, Builtin::Index)?
            else {
                return None;
            };
            // A vector: gathering any other kind of value (a list, a table, an enumeration)
            // by the identity is not certain to be the value itself.
            if !self.is_vector(source) || !self.one_per_group(source, group, first_rows, 0) {
                return None;
            }
            copies.push((at, source.clone()));
        }
        let mut delete = vec![index];
        if let Some(list) = sort_list {
            if self.reads(list).len() == 1 {
                delete.push(self.definition[list.0]?);
            }
        }
        Some(Rewrite { delete, copies })
    }

    /// `(first_rows, group)` when `columns` are, in order, the first key columns of a
    /// `group = @group(…)`, each read at `first_rows = @keys(group)`, of key types whose
    /// order the grouping and the sort share.
    fn sorts_group_keys(&self, columns: &[LocalId]) -> Option<(LocalId, LocalId)> {
        let mut first_rows = None;
        let mut key_columns = Vec::with_capacity(columns.len());
        for column in columns {
            let [Arg::Operand(Operand::Local(key_column, _)), Arg::Operand(Operand::Local(rows, _))] =
                builtin_args(self.defining_expr(*column)?, Builtin::Index)?
            else {
                return None;
            };
            if *first_rows.get_or_insert(*rows) != *rows {
                return None;
            }
            key_columns.push(*key_column);
        }
        let first_rows = first_rows?;
        let [Arg::Operand(Operand::Local(group, _))] =
            builtin_args(self.defining_expr(first_rows)?, Builtin::Keys)?
        else {
            return None;
        };
        let [Arg::Operand(group_keys)] = builtin_args(self.defining_expr(*group)?, Builtin::Group)?
        else {
            return None;
        };
        let (group_columns, _) = self.columns(group_keys)?;
        if group_columns.len() < key_columns.len()
            || group_columns[..key_columns.len()] != key_columns[..]
        {
            return None;
        }
        let stable = |column: &LocalId| {
            let assignments = self.assignments[column.0];
            let is_param = self.function.params.contains(column);
            (assignments == 0 && is_param)
                || (assignments == 1 && !is_param && self.definition[column.0].is_some())
        };
        // Keys whose order the grouping and the sort share exactly (floats are left alone),
        // held in vectors when the program runs.
        let ordered_alike = |column: &LocalId| {
            let ty = &self.function.locals[column.0].ty;
            (ty.is_integer() || ty.is_string() || ty.is_temporal())
                && self.surely_vector(*column, 0)
        };
        if !group_columns.iter().all(|c| stable(c) && ordered_alike(c)) {
            return None;
        }
        Some((first_rows, *group))
    }

    /// True when `operand` provably has one element per group of `group`: the group keys'
    /// rows of any column, a reduction per group, or an element-wise function of such values
    /// and scalar literals. `depth` bounds the walk through element-wise chains.
    fn one_per_group(
        &self,
        operand: &Operand,
        group: LocalId,
        first_rows: LocalId,
        depth: usize,
    ) -> bool {
        const MAX_DEPTH: usize = 16;
        let Operand::Local(local, _) = operand else {
            return false;
        };
        let Some((builtin, args)) = self.defining_expr(*local).and_then(builtin_call) else {
            return false;
        };
        match (builtin, args) {
            (Builtin::Index, [Arg::Operand(column), Arg::Operand(Operand::Local(rows, _))]) => {
                *rows == first_rows && self.is_vector(column)
            }
            (Builtin::Raze, [Arg::Operand(Operand::Local(cells, _))]) => {
                self.reduction_per_group(*cells, group)
            }
            (builtin, args) if builtin.is_elementwise() && depth < MAX_DEPTH => {
                let mut any_per_group = false;
                let all = args.iter().all(|arg| match arg {
                    Arg::Operand(Operand::Literal(literal)) => literal.values.len() == 1,
                    Arg::Operand(operand) => {
                        let per_group = self.one_per_group(operand, group, first_rows, depth + 1);
                        any_per_group |= per_group;
                        per_group
                    }
                    Arg::Function(..) => false,
                });
                all && any_per_group
            }
            _ => false,
        }
    }

    /// True when `cells = @each(r, rows)` with `r` a reduction to one scalar and `rows` the
    /// groups' rows, or those rows of a column (`@each_right(@index, x, @values(group))`).
    fn reduction_per_group(&self, cells: LocalId, group: LocalId) -> bool {
        let Some(expr) = self.defining_expr(cells) else {
            return false;
        };
        let Some(
            [Arg::Function(Callee::Builtin(reduction), _), Arg::Operand(Operand::Local(rows, _))],
        ) = builtin_args(expr, Builtin::Each)
        else {
            return false;
        };
        if !matches!(
            reduction,
            Builtin::Sum | Builtin::Avg | Builtin::Min | Builtin::Max | Builtin::Len
        ) {
            return false;
        }
        let is_group_rows = |local: LocalId| {
            self.defining_expr(local)
                .and_then(|expr| builtin_args(expr, Builtin::Values))
                .is_some_and(
                    |args| matches!(args, [Arg::Operand(Operand::Local(g, _))] if *g == group),
                )
        };
        if is_group_rows(*rows) {
            return true;
        }
        let Some(expr) = self.defining_expr(*rows) else {
            return false;
        };
        matches!(
            builtin_args(expr, Builtin::EachRight),
            Some([
                Arg::Function(Callee::Builtin(Builtin::Index), _),
                Arg::Operand(column),
                Arg::Operand(Operand::Local(group_rows, _)),
            ]) if is_group_rows(*group_rows) && self.is_vector(column)
        )
    }

    /// True when `operand` is surely a vector when the program runs: a local of a vector
    /// type that no gather from a list produced. Sema types `@index(list, i)` as the cells'
    /// type, but one index takes a whole cell and several a list of cells, and gathering
    /// such a value by the identity is not the value itself (one group: `@index(v, 0)` is
    /// `v`'s first element, not `v`).
    fn is_vector(&self, operand: &Operand) -> bool {
        matches!(operand, Operand::Local(local, _) if self.surely_vector(*local, 0))
    }

    fn surely_vector(&self, local: LocalId, depth: usize) -> bool {
        const MAX_DEPTH: usize = 16;
        let basic = self
            .function
            .locals
            .get(local.0)
            .is_some_and(|l| l.ty.is_basic());
        if !basic || depth >= MAX_DEPTH {
            return false;
        }
        let Some(expr) = self.defining_expr(local) else {
            // A parameter, or a local assigned more than once: its type is all there is.
            return self.function.params.contains(&local);
        };
        let source_is_vector = |source: &Operand| matches!(source, Operand::Local(source, _) if self.surely_vector(*source, depth + 1));
        match &expr.kind {
            ExprKind::Operand(source) => source_is_vector(source),
            ExprKind::Call {
                callee: Callee::Builtin(Builtin::Index),
                args,
            } => matches!(args.as_slice(), [Arg::Operand(source), _] if source_is_vector(source)),
            ExprKind::Call { .. } | ExprKind::CheckCast { .. } => true,
        }
    }

    /// The columns of a sort or group key: a single vector local, or the locals of an
    /// `@list(…)` assigned once (with that list's local).
    fn columns(&self, keys: &Operand) -> Option<(Vec<LocalId>, Option<LocalId>)> {
        let Operand::Local(local, _) = keys else {
            return None;
        };
        let Some(expr) = self.defining_expr(*local) else {
            // A parameter or a local of several assignments: left alone.
            return None;
        };
        match builtin_args(expr, Builtin::List) {
            Some(args) => {
                let columns = args
                    .iter()
                    .map(|arg| match arg {
                        Arg::Operand(Operand::Local(column, _)) => Some(*column),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                (!columns.is_empty()).then_some((columns, Some(*local)))
            }
            None => matches!(expr.kind, ExprKind::Call { .. })
                .then_some((vec![*local], None))
                .filter(|_| self.function.locals[local.0].ty.is_basic()),
        }
    }

    /// The expression of a local's single, top-level assignment.
    fn defining_expr(&self, local: LocalId) -> Option<&'f Expr> {
        let index = (*self.definition.get(local.0)?)?;
        self.assignment_at(index).map(|(_, expr)| expr)
    }

    /// The single target and expression of top-level statement `index`, if it assigns one.
    fn assignment_at(&self, index: usize) -> Option<(LocalId, &'f Expr)> {
        let stmt: &'f Stmt = self.function.body.get(index)?;
        match &stmt.kind {
            StmtKind::Assign { targets, expr, .. } => match targets.as_slice() {
                [Target::Local(local)] => Some((*local, expr)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The builtin `expr` calls directly, with its arguments.
fn builtin_call(expr: &Expr) -> Option<(Builtin, &[Arg])> {
    match &expr.kind {
        ExprKind::Call {
            callee: Callee::Builtin(builtin),
            args,
        } => Some((*builtin, args)),
        _ => None,
    }
}

/// The arguments of `expr` if it calls `builtin` directly.
fn builtin_args(expr: &Expr, builtin: Builtin) -> Option<&[Arg]> {
    builtin_call(expr).and_then(|(b, args)| (b == builtin).then_some(args))
}

/// Adds each local's assignments in `body`, nested bodies included, to `counts`.
fn count_assignments(body: &[Stmt], counts: &mut [u32]) {
    for stmt in body {
        for local in defined_locals(stmt) {
            if let Some(count) = counts.get_mut(local.0) {
                *count += 1;
            }
        }
        for inner in nested_bodies(stmt) {
            count_assignments(inner, counts);
        }
    }
}
