//! Fused group aggregation: the outliner's rewrite of `@group` followed by per-group
//! reductions into one `@group_aggregate` library call that never builds the groups' lists.
//!
//! The shape recognised, all in one body, after `groups = @group(k)`:
//!
//! ```text
//! first = @keys(groups);                        // at most one
//! rows = @values(groups);                       // exactly one
//! cells = @each_right(@index, x, rows);         // any number, each read only by:
//! r = @each(@sum | @avg | @len, cells);         //   reductions, each read only by
//! out = @raze(r);                               //   one raze
//! n = @each(@len, rows); count = @raze(n);      // row counts, also any number
//! ```
//!
//! The statements become one unit at the place of the `@group`:
//! `first, out… = @group_aggregate(k, ops, x…)`. It applies only when nothing else reads the
//! dictionary, the lists, the cells or the per-cell results; every local involved is assigned
//! once; each value column `x` is a numeric local assigned only before the `@group` and
//! as long as the key (shape analysis), so moving the reductions there changes nothing and
//! no `@index` can fail. Anything else keeps the unfused statements.

use std::collections::BTreeSet;

use crate::analysis::statements::{defined_locals, for_each_use};
use crate::analysis::{Shape, StmtId};
use crate::sema::typed::{Arg, Callee, ExprKind, LocalId, Operand, Stmt, StmtKind, Target};
use horsec_runtime::args::group::Reduction;
use horsec_runtime::builtin::Builtin;

use super::partition::Context;

/// One fused group aggregation of a body.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedGroup {
    /// The `@group` statement; the fused call runs in its place.
    pub anchor: StmtId,
    /// Every statement the call replaces, the anchor included, ascending.
    pub absorbed: Vec<StmtId>,
    /// The key (`@group`'s argument).
    pub key: Operand,
    /// The target of `@keys(groups)`, when there is one.
    pub first: Option<LocalId>,
    pub results: Vec<FusedResult>,
}

/// One reduction of a [`FusedGroup`]: what it reduces and the local its raze assigned.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedResult {
    pub reduction: Reduction,
    /// The value column (`None` for a row count).
    pub value: Option<Operand>,
    pub target: LocalId,
}

/// Where each local is assigned and read, over the whole function, indexed by local.
///
/// Each kind of site is one flat list in statement order, grouped by local, with each
/// local's range in it (a Vec per local cost two allocations per local of the function).
pub(crate) struct Sites {
    definitions: LocalSites,
    uses: LocalSites,
}

/// The statements of each local, flat: those of local `l` are
/// `sites[starts[l]..starts[l + 1]]`, in statement order.
struct LocalSites {
    starts: Vec<usize>,
    sites: Vec<StmtId>,
}

impl LocalSites {
    /// From each local's count of sites, the ranges, with nothing placed yet (`starts[l]`
    /// is where local `l`'s next site goes until [`LocalSites::place`] fills them).
    fn with_counts(counts: &[usize]) -> LocalSites {
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut total = 0;
        for &count in counts {
            starts.push(total);
            total += count;
        }
        starts.push(total);
        LocalSites {
            starts,
            sites: vec![StmtId(0); total],
        }
    }

    /// Fills the ranges from `(local, statement)` pairs in statement order, the same pairs
    /// the counts were taken from.
    fn place(&mut self, sites: impl Iterator<Item = (LocalId, StmtId)>) {
        let mut next: Vec<usize> = self.starts.clone();
        for (local, stmt) in sites {
            if let Some(at) = next.get_mut(local.0) {
                self.sites[*at] = stmt;
                *at += 1;
            }
        }
    }

    fn of(&self, local: LocalId) -> &[StmtId] {
        match (self.starts.get(local.0), self.starts.get(local.0 + 1)) {
            (Some(&start), Some(&end)) => &self.sites[start..end],
            _ => &[],
        }
    }
}

impl Sites {
    pub(crate) fn of(cx: &Context<'_>) -> Sites {
        // (Locals are dense: a local beyond the function's list would be a sema bug, and is
        // given its own slot rather than a panic.)
        fn count(counts: &mut Vec<usize>, local: LocalId) {
            if local.0 >= counts.len() {
                counts.resize(local.0 + 1, 0);
            }
            counts[local.0] += 1;
        }
        let locals = cx.function.locals.len();
        let (mut defined, mut read) = (vec![0usize; locals], vec![0usize; locals]);
        for (_, entry) in cx.tree.iter() {
            for local in defined_locals(entry.stmt) {
                count(&mut defined, local);
            }
            for_each_use(entry.stmt, |u| count(&mut read, u.local));
        }
        let mut definitions = LocalSites::with_counts(&defined);
        let mut uses = LocalSites::with_counts(&read);
        definitions.place(
            cx.tree
                .iter()
                .flat_map(|(id, entry)| defined_locals(entry.stmt).map(move |local| (local, id))),
        );
        let mut reads = Vec::with_capacity(uses.sites.len());
        for (id, entry) in cx.tree.iter() {
            for_each_use(entry.stmt, |u| reads.push((u.local, id)));
        }
        uses.place(reads.into_iter());
        Sites { definitions, uses }
    }

    /// The one statement that assigns `local` (none for a parameter).
    pub(crate) fn single_definition(&self, cx: &Context<'_>, local: LocalId) -> Option<StmtId> {
        if cx.function.params.contains(&local) {
            return None;
        }
        match self.definitions.of(local) {
            [only] => Some(*only),
            _ => None,
        }
    }

    pub(crate) fn readers(&self, local: LocalId) -> &[StmtId] {
        self.uses.of(local)
    }
}

/// The fused group aggregations among the top-level statements `stmts` of one body.
pub(crate) fn find(cx: &Context<'_>, stmts: &[StmtId]) -> Vec<FusedGroup> {
    let in_body: BTreeSet<StmtId> = stmts.iter().copied().collect();
    let mut sites = None;
    let mut found = Vec::new();
    for &id in stmts {
        let Some((target, Builtin::Group, args)) = call(cx, id) else {
            continue;
        };
        let sites = sites.get_or_insert_with(|| Sites::of(cx));
        if let Some(fused) = match_group(cx, sites, &in_body, id, target, args) {
            found.push(fused);
        }
    }
    found
}

/// `target = @b(args)` with one local target.
pub(crate) fn call<'p>(cx: &Context<'p>, id: StmtId) -> Option<(LocalId, Builtin, &'p [Arg])> {
    let stmt: &'p Stmt = cx.tree.stmt(id)?;
    let StmtKind::Assign { targets, expr, .. } = &stmt.kind else {
        return None;
    };
    let [Target::Local(target)] = targets.as_slice() else {
        return None;
    };
    let ExprKind::Call {
        callee: Callee::Builtin(b),
        args,
    } = &expr.kind
    else {
        return None;
    };
    Some((*target, *b, args.as_slice()))
}

pub(crate) fn local_arg(arg: &Arg) -> Option<LocalId> {
    match arg {
        Arg::Operand(Operand::Local(l, _)) => Some(*l),
        _ => None,
    }
}

fn function_arg(arg: &Arg) -> Option<Builtin> {
    match arg {
        Arg::Function(Callee::Builtin(b), _) => Some(*b),
        _ => None,
    }
}

/// A statement `target = @b(args)` reading a local: (statement, target, b, args).
type Reader<'p> = (StmtId, LocalId, Builtin, &'p [Arg]);

/// The single reader of `local` as `target = @b(args)`, when it is one in this body after
/// `after`, assigning a local assigned nowhere else.
fn sole_readers<'p>(
    cx: &Context<'p>,
    sites: &Sites,
    in_body: &BTreeSet<StmtId>,
    local: LocalId,
    after: StmtId,
) -> Option<Vec<Reader<'p>>> {
    let mut out: Vec<Reader<'p>> = Vec::new();
    for &reader in sites.readers(local) {
        if reader <= after || !in_body.contains(&reader) {
            return None;
        }
        let (target, b, args) = call(cx, reader)?;
        if sites.single_definition(cx, target) != Some(reader) {
            return None;
        }
        // Read once per statement (`@f(x, x)` is no pattern).
        if out.iter().any(|(s, ..)| *s == reader) {
            return None;
        }
        out.push((reader, target, b, args));
    }
    Some(out)
}

fn match_group(
    cx: &Context<'_>,
    sites: &Sites,
    in_body: &BTreeSet<StmtId>,
    anchor: StmtId,
    groups: LocalId,
    args: &[Arg],
) -> Option<FusedGroup> {
    let [Arg::Operand(key)] = args else {
        return None;
    };
    if sites.single_definition(cx, groups) != Some(anchor) {
        return None;
    }
    let key_rows = key_rows(cx, anchor, key)?;
    let mut absorbed = vec![anchor];
    let mut first = None;
    let mut rows = None;
    for (reader, target, b, args) in sole_readers(cx, sites, in_body, groups, anchor)? {
        match (b, args) {
            (Builtin::Keys, [_]) if first.is_none() => first = Some(target),
            (Builtin::Values, [_]) if rows.is_none() => rows = Some((reader, target)),
            _ => return None,
        }
        absorbed.push(reader);
    }
    let (rows_stmt, rows) = rows?;
    let mut results = Vec::new();
    for (reader, target, b, args) in sole_readers(cx, sites, in_body, rows, rows_stmt)? {
        absorbed.push(reader);
        match (b, args) {
            // A row count: `@raze(@each(@len, rows))`.
            (Builtin::Each, [f, _]) if function_arg(f) == Some(Builtin::Len) => {
                let (raze, out) = raze_of(cx, sites, in_body, target, reader)?;
                absorbed.push(raze);
                results.push(FusedResult {
                    reduction: Reduction::Len,
                    value: None,
                    target: out,
                });
            }
            (Builtin::EachRight, [f, x, cells_of])
                if function_arg(f) == Some(Builtin::Index) && local_arg(cells_of) == Some(rows) =>
            {
                let x_local = local_arg(x)?;
                let Arg::Operand(x) = x else {
                    return None;
                };
                if !value_column(cx, sites, anchor, reader, x_local, x, &key_rows) {
                    return None;
                }
                for (each, r, b, args) in sole_readers(cx, sites, in_body, target, reader)? {
                    let [f, _] = args else {
                        return None;
                    };
                    let reduction = match (b, function_arg(f)) {
                        (Builtin::Each, Some(Builtin::Sum)) => Reduction::Sum,
                        (Builtin::Each, Some(Builtin::Avg)) => Reduction::Avg,
                        (Builtin::Each, Some(Builtin::Len)) => Reduction::Len,
                        _ => return None,
                    };
                    let (raze, out) = raze_of(cx, sites, in_body, r, each)?;
                    absorbed.extend([each, raze]);
                    results.push(FusedResult {
                        reduction,
                        value: (reduction != Reduction::Len).then(|| x.clone()),
                        target: out,
                    });
                }
            }
            _ => return None,
        }
    }
    if results.is_empty() {
        return None;
    }
    absorbed.sort();
    Some(FusedGroup {
        anchor,
        absorbed,
        key: key.clone(),
        first,
        results,
    })
}

/// `out = @raze(r)`, the only reader of `r`.
fn raze_of(
    cx: &Context<'_>,
    sites: &Sites,
    in_body: &BTreeSet<StmtId>,
    r: LocalId,
    def: StmtId,
) -> Option<(StmtId, LocalId)> {
    match sole_readers(cx, sites, in_body, r, def)?.as_slice() {
        [(raze, out, Builtin::Raze, [_])] => Some((*raze, *out)),
        _ => None,
    }
}

/// The shape of the key's rows where the `@group` reads it: a vector's, or the one shape of
/// a list's columns.
fn key_rows(cx: &Context<'_>, anchor: StmtId, key: &Operand) -> Option<Shape> {
    match cx.analysis.shapes.operand_shape(cx.program, anchor, key) {
        vector @ Shape::Vector(_) => Some(vector),
        Shape::List(_, cell) if matches!(*cell, Shape::Vector(_)) => Some(*cell),
        _ => None,
    }
}

/// Whether `x`, read by `reader`, can move to the `@group` at `anchor`: a numeric local
/// assigned only before it (or a parameter never assigned), as long as the key.
fn value_column(
    cx: &Context<'_>,
    sites: &Sites,
    anchor: StmtId,
    reader: StmtId,
    local: LocalId,
    x: &Operand,
    key_rows: &Shape,
) -> bool {
    let assigned_before = sites
        .definitions
        .of(local)
        .iter()
        .all(|&d| cx.subtree_end(d) <= anchor.0);
    let numeric = cx
        .function
        .locals
        .get(local.0)
        .is_some_and(|l| l.ty.is_real());
    let shape = cx.analysis.shapes.operand_shape_ref(cx.program, reader, x);
    assigned_before && numeric && *shape == *key_rows
}
