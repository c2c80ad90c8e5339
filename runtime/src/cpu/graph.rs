//! The graph builtins on the CPU: `@csr`, `@shortest_path_length`, `@reachable` (on a graph
//! or on a reachability index) and `@reach_index`.
//!
//! Vertex arguments are integer vectors of vertex indexes, or enums into a vertex table: an
//! enum stands for its row indexes into the referenced table (not for its key values), so
//! `@csr(knows_src, knows_dst, @len(persons))` works directly on foreign keys.

use crate::args::graph::{
    reach_index_arguments, reachable_arguments, search_arguments, vertex_count, vertices,
    Reachability,
};
use crate::cpu::Args;
use crate::error::Result;
use crate::graph::grail::ReachIndex;
use crate::graph::{msbfs, Csr};
use crate::value::{Value, Vector};

/// `@csr(src, dst, n)`: the graph with an edge `src[i] -> dst[i]` for every `i`, over the
/// vertices `0..n`, as a list with one cell of neighbour indexes per vertex.
pub(crate) fn csr(args: &Args<'_, '_>) -> Result<Value> {
    args.exactly(3)?;
    let src = vertices(args, 0)?;
    let dst = vertices(args, 1)?;
    let n = vertex_count(args, 2)?;
    let graph = Csr::from_edges(&src, &dst, n)?;
    Ok(Value::List(graph.to_list()))
}

/// `@shortest_path_length(g, sources, destinations)`: edges on a shortest path per pair,
/// 0 when source = destination, -1 when unreachable.
pub(crate) fn shortest_path_length(args: &Args<'_, '_>) -> Result<Value> {
    let (graph, sources, destinations) = search_arguments(args)?;
    let lengths = msbfs::shortest_path_lengths(&graph, &sources, &destinations)?;
    Ok(Value::Vector(Vector::from_i64s(lengths)))
}

/// `@reachable(g, sources, destinations)`: whether each destination can be reached. `g` is
/// a graph, or an index from `@reach_index` (answered through its labels).
pub(crate) fn reachable(args: &Args<'_, '_>) -> Result<Value> {
    let reached = match reachable_arguments(args)? {
        Reachability::Graph(graph, sources, destinations) => {
            msbfs::reachable(&graph, &sources, &destinations)?
        }
        Reachability::Index(index, sources, destinations) => {
            index.reachable(&sources, &destinations)?
        }
    };
    Ok(Value::Vector(Vector::from_bools(reached)))
}

/// `@reach_index(g, d)`: the GRAIL index of graph `g` with `d` labels (0 for the default).
pub(crate) fn reach_index(args: &Args<'_, '_>) -> Result<Value> {
    let (graph, d) = reach_index_arguments(args)?;
    Ok(ReachIndex::build(&graph, d)?.to_value())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::cpu::ArgValue;
    use crate::value::{Enumeration, List};

    use super::*;

    fn ints(values: &[i64]) -> Value {
        Value::from_i64s(values.to_vec())
    }

    fn call(f: fn(&Args<'_, '_>) -> Result<Value>, values: &[Value]) -> Result<Value> {
        let list: Vec<ArgValue<'_>> = values.iter().map(ArgValue::Value).collect();
        f(&Args { list: &list })
    }

    #[test]
    fn csr_then_lengths_and_reachability() {
        let graph = call(csr, &[ints(&[0, 1, 2]), ints(&[1, 2, 0]), ints(&[4])]).unwrap();
        let Value::List(List::Flat { offsets, .. }) = &graph else {
            panic!("expected a flat list, got {graph:?}");
        };
        assert_eq!(offsets.as_slice(), &[0, 1, 2, 3, 3]);
        let sources = ints(&[0, 0, 3, 2]);
        let destinations = ints(&[2, 0, 0, 1]);
        let lengths = call(
            shortest_path_length,
            &[graph.clone(), sources.clone(), destinations.clone()],
        )
        .unwrap();
        assert_eq!(lengths, ints(&[2, 0, -1, 2]));
        let reach = call(reachable, &[graph, sources, destinations]).unwrap();
        assert_eq!(reach, Value::from_bools(vec![true, true, false, true]));
    }

    #[test]
    fn enums_stand_for_their_row_indexes() {
        // Keys 10, 20, 30 at rows 0, 1, 2; the edges reference keys 30 -> 10.
        let domain = Vector::from_i64s(vec![10, 20, 30]);
        let edge_end = |rows: Vec<i64>| {
            Value::Enum(Enumeration {
                domain: domain.clone(),
                index: Arc::new(rows),
            })
        };
        let graph = call(csr, &[edge_end(vec![2]), edge_end(vec![0]), ints(&[3])]).unwrap();
        let lengths = call(
            shortest_path_length,
            &[graph, edge_end(vec![2]), ints(&[0])],
        )
        .unwrap();
        assert_eq!(lengths, ints(&[1]));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let e = call(csr, &[ints(&[0]), ints(&[5]), ints(&[2])]).unwrap_err();
        assert!(e.message.contains("destination 5"), "{}", e.message);
        let e = call(csr, &[ints(&[0]), ints(&[1]), ints(&[-1])]).unwrap_err();
        assert!(e.message.contains("negative"), "{}", e.message);
        let e = call(csr, &[ints(&[0]), ints(&[1]), ints(&[2, 3])]).unwrap_err();
        assert!(e.message.contains("one vertex count"), "{}", e.message);
        let floats = Value::Vector(Vector::from_f64s(vec![0.0]));
        let e = call(csr, &[floats, ints(&[1]), ints(&[2])]).unwrap_err();
        assert!(
            e.message.contains("integer vertex indexes"),
            "{}",
            e.message
        );
        let graph = call(csr, &[ints(&[0]), ints(&[1]), ints(&[2])]).unwrap();
        let e = call(
            shortest_path_length,
            &[graph.clone(), ints(&[2]), ints(&[0])],
        )
        .unwrap_err();
        assert!(e.message.contains("source 2"), "{}", e.message);
        let e = call(reachable, &[ints(&[0]), ints(&[0]), ints(&[0])]).unwrap_err();
        assert!(e.message.contains("must be a graph"), "{}", e.message);
    }
}
