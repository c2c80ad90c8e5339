//! The argument checks of the graph builtins (`@csr`, `@shortest_path_length`, `@reachable`,
//! `@reach_index`), shared by the CPU builtins and the GPU engine, which runs the searches
//! itself.

use std::borrow::Cow;

use crate::args::Args;
use crate::bail;
use crate::error::Result;
use crate::graph::grail::{label_count, ReachIndex};
use crate::graph::Csr;
use crate::value::Value;

/// The graph and label count of `@reach_index` .
pub(crate) fn reach_index_arguments(args: &Args<'_, '_>) -> Result<(Csr, usize)> {
    args.exactly(2)?;
    let graph = graph_argument(args)?;
    let d = match vertices(args, 1)?.as_ref() {
        [d] => label_count(*d)?,
        other => bail!(
            "argument 2 must be one label count, got {} values",
            other.len()
        ),
    };
    Ok((graph, d))
}

/// The arguments of `@reachable`: a graph or an index, then sources and destinations.
pub(crate) enum Reachability<'v> {
    Graph(Csr, Cow<'v, [i64]>, Cow<'v, [i64]>),
    Index(ReachIndex, Cow<'v, [i64]>, Cow<'v, [i64]>),
}

/// The arguments of `@reachable` .
pub(crate) fn reachable_arguments<'v>(args: &Args<'_, 'v>) -> Result<Reachability<'v>> {
    args.exactly(3)?;
    if let Value::Dict(_) = args.value(0)? {
        let index = ReachIndex::from_value(args.value(0)?)?;
        return Ok(Reachability::Index(
            index,
            vertices(args, 1)?,
            vertices(args, 2)?,
        ));
    }
    let (graph, sources, destinations) = search_arguments(args)?;
    Ok(Reachability::Graph(graph, sources, destinations))
}

pub(crate) type SearchArguments<'v> = (Csr, Cow<'v, [i64]>, Cow<'v, [i64]>);

/// The graph, sources and destinations of `@shortest_path_length`/`@reachable`.
pub(crate) fn search_arguments<'v>(args: &Args<'_, 'v>) -> Result<SearchArguments<'v>> {
    args.exactly(3)?;
    Ok((
        graph_argument(args)?,
        vertices(args, 1)?,
        vertices(args, 2)?,
    ))
}

/// Argument 1 as a graph.
fn graph_argument(args: &Args<'_, '_>) -> Result<Csr> {
    match args.value(0)? {
        Value::List(list) => Csr::from_list(list),
        other => bail!(
            "argument 1 must be a graph (a list<i64> from @csr), got a {}",
            other.ty()
        ),
    }
}

/// Argument `i` as vertex indexes: an integer vector widened to i64, or an enum's row
/// indexes into its table.
pub(crate) fn vertices<'v>(args: &Args<'_, 'v>, i: usize) -> Result<Cow<'v, [i64]>> {
    match args.value(i)? {
        Value::Enum(e) => Ok(Cow::Borrowed(e.index.as_slice())),
        Value::Vector(v) => match v.to_i64s() {
            Some(values) => Ok(values),
            None => bail!(
                "argument {} must be integer vertex indexes or an enum, got a {}",
                i + 1,
                v.ty()
            ),
        },
        other => bail!(
            "argument {} must be integer vertex indexes or an enum, got a {}",
            i + 1,
            other.ty()
        ),
    }
}

/// Argument `i` as the vertex count: one non-negative integer.
pub(crate) fn vertex_count(args: &Args<'_, '_>, i: usize) -> Result<usize> {
    let values = vertices(args, i)?;
    match values.as_ref() {
        // The graph keeps one offset per vertex.
        [n] => crate::sizes::checked_count(*n, 8)
            .map_err(|e| crate::error::RuntimeError::new(format!("the vertex count {n}: {e}"))),
        other => bail!(
            "argument {} must be one vertex count, got {} values",
            i + 1,
            other.len()
        ),
    }
}
