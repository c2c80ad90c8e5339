//! Grouped kernels: a fused group aggregation whose key and value columns a kernel
//! computes, moved into that kernel, so that the kernel adds up its kept rows per group
//! instead of compacting them into columns that `@group_aggregate` reads back.
//!
//! The pattern, in the outlined steps of one body:
//!
//! ```text
//! t22, t26, t27, … = @main_k0(…);                   // a vector kernel
//! t40 = @list(t26, t27);                            // the key (or one column, unlisted)
//! first, r… = @group_aggregate(t40, ops, t22, …);   // a fused group aggregation
//! ```
//!
//! becomes one launch of a grouped kernel (see [`GroupedAggregation`]): the kernel's
//! statements, then the aggregation over the rows its masks keep. It applies when
//! - every key column and every value column is an output of the kernel, and every key
//!   column is a bool, char, i8 or i16 (a small key domain);
//! - nothing else reads the kernel's outputs: the list, the aggregation's own statements,
//!   and, for a key column, `@index(key, first)` (the key of each group) are all;
//! - nothing reads `first` but such `@index` statements.
//!
//! The steps it replaces are kept as the fallback: they run when the kernel declines (more
//! groups than its registers hold).

use rustc_hash::FxHashSet as HashSet;

use crate::analysis::{Geometry, StmtId};
use crate::sema::typed::{Arg, Callee, ExprKind, LocalId, Operand, StmtKind, Target};
use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use super::group_aggregate::{call, local_arg, FusedGroup, Sites};
use super::kernel::{GroupedAggregation, Kernel, KernelId};
use super::partition::Context;
use super::OutlinedStmt;

/// Where new grouped kernels go: the function's kernel list, the prefix of their names, and
/// how many decline flags the function has given out.
pub(crate) struct GroupedKernels<'k> {
    pub kernels: &'k mut Vec<Kernel>,
    pub prefix: &'k str,
    pub flags: &'k mut usize,
}

/// The outlined steps of one body, each fused group aggregation that matches the pattern
/// replaced by a grouped kernel's launch with its fallback.
pub(crate) fn fuse(
    cx: &Context<'_>,
    steps: Vec<OutlinedStmt>,
    into: GroupedKernels<'_>,
) -> Vec<OutlinedStmt> {
    if !steps
        .iter()
        .any(|s| matches!(s, OutlinedStmt::GroupAggregate(_)))
    {
        return steps;
    }
    let sites = Sites::of(cx);
    let mut out: Vec<OutlinedStmt> = Vec::with_capacity(steps.len());
    for step in steps {
        if let OutlinedStmt::GroupAggregate(fused) = &step {
            let declined = LocalId(cx.function.locals.len() + *into.flags);
            if let Some(found) = match_tail(cx, &sites, &out, fused, into.kernels, declined) {
                let start = out.len() - found.steps;
                let mut fallback: Vec<OutlinedStmt> = out.drain(start..).collect();
                fallback.push(step);
                let source = &into.kernels[found.source.0];
                let id = KernelId(into.kernels.len());
                let grouped = found.grouped;
                let outputs = grouped
                    .first
                    .iter()
                    .chain(&grouped.key_outputs)
                    .copied()
                    .chain(grouped.results.iter().map(|r| r.target))
                    .collect();
                let kernel = Kernel {
                    id,
                    name: format!("{}_k{}", into.prefix, id.0),
                    function: source.function,
                    statements: source.statements.clone(),
                    geometry: source.geometry.clone(),
                    inputs: source.inputs.clone(),
                    outputs,
                    grouped: Some(grouped),
                };
                into.kernels.push(kernel);
                *into.flags += 1;
                out.push(OutlinedStmt::Grouped {
                    kernel: id,
                    fallback,
                });
                continue;
            }
        }
        if let OutlinedStmt::Launch(candidate) = &step {
            if let Some(OutlinedStmt::Grouped { kernel, fallback }) = out.last_mut() {
                if absorb_epilogue(cx, &sites, into.kernels, *kernel, *candidate) {
                    fallback.push(step);
                    continue;
                }
            }
        }
        out.push(step);
    }
    out
}

/// Moves the statements of `candidate`, the launch right after grouped kernel `grouped`,
/// into that kernel as its epilogue (see [`GroupedAggregation::epilogue`]) when they are
/// element-wise work over its groups: every input of `candidate` is an output of the grouped
/// kernel, and every statement is a copy, an element-wise call on numbers (of those values
/// and one-element literals) or `@index(key, first)`. The grouped kernel then writes the
/// epilogue's outputs, and its own only where something besides the epilogue reads them.
fn absorb_epilogue(
    cx: &Context<'_>,
    sites: &Sites,
    kernels: &mut [Kernel],
    grouped: KernelId,
    candidate: KernelId,
) -> bool {
    let (Some(source), Some(epilogue)) = (kernels.get(grouped.0), kernels.get(candidate.0)) else {
        return false;
    };
    let Some(aggregation) = &source.grouped else {
        return false;
    };
    if epilogue.grouped.is_some()
        || !matches!(epilogue.geometry, Geometry::Vector(_))
        || epilogue.inputs.is_empty()
        || !epilogue.inputs.iter().all(|i| source.outputs.contains(i))
        || !epilogue
            .statements
            .iter()
            .all(|&id| per_group(cx, id, aggregation))
    {
        return false;
    }
    // The grouped kernel's values that something besides the epilogue reads (the grouped
    // kernel's own statements and its aggregation read its columns, which it never writes).
    let own: HashSet<StmtId> = epilogue
        .statements
        .iter()
        .chain(&source.statements)
        .chain(&aggregation.statements)
        .copied()
        .collect();
    let mut outputs: Vec<LocalId> = source
        .outputs
        .iter()
        .copied()
        .filter(|&o| sites.readers(o).iter().any(|r| !own.contains(r)))
        .collect();
    outputs.extend(epilogue.outputs.iter().copied());
    let statements = epilogue.statements.clone();
    let Some(Kernel {
        outputs: kernel_outputs,
        grouped: Some(aggregation),
        ..
    }) = kernels.get_mut(grouped.0)
    else {
        return false;
    };
    aggregation.epilogue = statements;
    *kernel_outputs = outputs;
    true
}

/// Whether statement `id` computes one value per group from the grouped values: a copy of
/// a local or of a one-element number, an element-wise call on such operands, or
/// `@index(key, first)`, its value a number, bool or char.
fn per_group(cx: &Context<'_>, id: StmtId, aggregation: &GroupedAggregation) -> bool {
    let Some(StmtKind::Assign { targets, expr, .. }) = cx.tree.stmt(id).map(|s| &s.kind) else {
        return false;
    };
    let [Target::Local(target)] = targets.as_slice() else {
        return false;
    };
    let plain = |ty: &Type| {
        matches!(
            ty,
            Type::Bool
                | Type::Char
                | Type::I8
                | Type::I16
                | Type::I32
                | Type::I64
                | Type::F32
                | Type::F64
        )
    };
    if !cx
        .function
        .locals
        .get(target.0)
        .is_some_and(|l| plain(&l.ty))
        || !expr.types.iter().all(plain)
    {
        return false;
    }
    let operand = |op: &Operand| match op {
        Operand::Local(..) => true,
        Operand::Literal(literal) => literal.values.len() == 1 && plain(&literal.ty.ty),
        Operand::Global(..) => false,
    };
    match &expr.kind {
        ExprKind::Operand(op) => operand(op),
        ExprKind::Call {
            callee: Callee::Builtin(Builtin::Index),
            args,
        } => match args.as_slice() {
            [key, first] => {
                local_arg(first).is_some_and(|f| aggregation.first == Some(f))
                    && local_arg(key).is_some_and(|k| aggregation.key_outputs.contains(&k))
            }
            _ => false,
        },
        ExprKind::Call {
            callee: Callee::Builtin(builtin),
            args,
        } => {
            builtin.is_elementwise()
                && args
                    .iter()
                    .all(|arg| matches!(arg, Arg::Operand(op) if operand(op)))
        }
        _ => false,
    }
}

/// A match: the kernel whose statements the grouped kernel takes, how many steps before
/// the aggregation the fallback takes (the launch, and the list if there is one).
struct Found {
    source: KernelId,
    steps: usize,
    grouped: GroupedAggregation,
}

/// The pattern ending with `fused`, the steps before it being `out`.
fn match_tail(
    cx: &Context<'_>,
    sites: &Sites,
    out: &[OutlinedStmt],
    fused: &FusedGroup,
    kernels: &[Kernel],
    declined: LocalId,
) -> Option<Found> {
    let Operand::Local(key, _) = &fused.key else {
        return None;
    };
    // The key: `key = @list(c1, …)` in the step before, or one column.
    let listed = match out.last()? {
        OutlinedStmt::Host(id) => match call(cx, *id) {
            Some((target, Builtin::List, args)) if target == *key => {
                let columns = args.iter().map(local_arg).collect::<Option<Vec<_>>>()?;
                Some((*id, columns))
            }
            _ => None,
        },
        _ => None,
    };
    let (list, keys) = match listed {
        Some((id, columns)) => (Some(id), columns),
        None => (None, vec![*key]),
    };
    let steps = 1 + usize::from(list.is_some());
    let OutlinedStmt::Launch(source) = out.get(out.len().checked_sub(steps)?)? else {
        return None;
    };
    let kernel = kernels.get(source.0)?;
    if kernel.grouped.is_some() || !matches!(kernel.geometry, Geometry::Vector(_)) {
        return None;
    }
    if let Some(list) = list {
        // The list is the aggregation's alone.
        if sites.single_definition(cx, *key) != Some(list) || sites.readers(*key) != [fused.anchor]
        {
            return None;
        }
    }
    let produced: HashSet<LocalId> = kernel.outputs.iter().copied().collect();
    let small_domain = |local: &LocalId| {
        cx.function
            .locals
            .get(local.0)
            .is_some_and(|l| matches!(l.ty, Type::Bool | Type::Char | Type::I8 | Type::I16))
    };
    if keys.is_empty() || !keys.iter().all(|k| produced.contains(k) && small_domain(k)) {
        return None;
    }
    for result in &fused.results {
        match &result.value {
            None => {}
            Some(Operand::Local(value, _)) if produced.contains(value) => {}
            Some(_) => return None,
        }
    }
    // Every output of the kernel is read by the kernel and the aggregation only (or, for a
    // key column, through `@index(key, first)`), and assigned once, by the kernel.
    let own: HashSet<StmtId> = fused.absorbed.iter().copied().chain(list).collect();
    let in_kernel: HashSet<StmtId> = kernel.statements.iter().copied().collect();
    let mut key_outputs = Vec::new();
    for &output in &kernel.outputs {
        if !sites
            .single_definition(cx, output)
            .is_some_and(|d| in_kernel.contains(&d))
        {
            return None;
        }
        let mut indexed = false;
        for &reader in sites.readers(output) {
            if own.contains(&reader) || in_kernel.contains(&reader) {
                continue;
            }
            if keys.contains(&output) && indexes_by_first(cx, reader, output, fused.first) {
                indexed = true;
                continue;
            }
            return None;
        }
        if indexed {
            key_outputs.push(output);
        }
    }
    if let Some(first) = fused.first {
        let reads_a_key = |reader: &StmtId| {
            keys.iter()
                .any(|&k| indexes_by_first(cx, *reader, k, Some(first)))
        };
        if !sites.readers(first).iter().all(reads_a_key) {
            return None;
        }
    }
    Some(Found {
        source: *source,
        steps,
        grouped: GroupedAggregation {
            keys,
            first: fused.first,
            key_outputs,
            results: fused.results.clone(),
            statements: {
                let mut statements: Vec<StmtId> = own.into_iter().collect();
                statements.sort();
                statements
            },
            epilogue: Vec::new(),
            declined,
        },
    })
}

/// Whether `reader` is `y = @index(column, first)`, at the top of its body or nested (a
/// reader inside a compound statement is a statement too).
fn indexes_by_first(
    cx: &Context<'_>,
    reader: StmtId,
    column: LocalId,
    first: Option<LocalId>,
) -> bool {
    let Some(first) = first else {
        return false;
    };
    if !matches!(
        cx.tree.stmt(reader).map(|s| &s.kind),
        Some(StmtKind::Assign { .. })
    ) {
        return false;
    }
    match call(cx, reader) {
        Some((_, Builtin::Index, [x, i])) => {
            local_arg(x) == Some(column) && local_arg(i) == Some(first)
        }
        _ => false,
    }
}
