//! Plain single-source breadth-first search: the reference the bit-parallel multi-source
//! search ([`super::msbfs`]) is tested against. Kept deliberately simple.

use std::collections::VecDeque;

use crate::bail;
use crate::error::Result;
use crate::graph::csr::{vertex_index, Csr};

/// The number of edges on a shortest path from `source` to every vertex: 0 for `source`
/// itself, -1 for vertices it cannot reach. An out-of-range `source` is an error.
pub fn single_source(graph: &Csr, source: i64) -> Result<Vec<i64>> {
    let n = graph.vertex_count();
    let Some(source) = vertex_index(source, n) else {
        bail!("BFS: source {source} is outside the vertices 0..{n}");
    };
    let mut distance = vec![-1i64; n];
    distance[source] = 0;
    let mut queue = VecDeque::from([source]);
    while let Some(v) = queue.pop_front() {
        let next = distance[v] + 1;
        for &u in graph.adjacent(v) {
            let u = u as usize;
            if distance[u] < 0 {
                distance[u] = next;
                queue.push_back(u);
            }
        }
    }
    Ok(distance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_follow_edge_direction() {
        // 0 -> 1 -> 2 -> 3, plus a shortcut 0 -> 2 and a back edge 3 -> 1.
        let graph = Csr::from_edges(&[0, 1, 2, 0, 3], &[1, 2, 3, 2, 1], 5).unwrap();
        assert_eq!(single_source(&graph, 0).unwrap(), vec![0, 1, 1, 2, -1]);
        assert_eq!(single_source(&graph, 3).unwrap(), vec![-1, 1, 2, 0, -1]);
        assert_eq!(single_source(&graph, 4).unwrap(), vec![-1, -1, -1, -1, 0]);
    }

    #[test]
    fn self_loops_and_duplicates_change_nothing() {
        let graph = Csr::from_edges(&[0, 0, 0, 1], &[0, 1, 1, 1], 2).unwrap();
        assert_eq!(single_source(&graph, 0).unwrap(), vec![0, 1]);
    }

    #[test]
    fn an_out_of_range_source_is_an_error() {
        let graph = Csr::empty(2);
        let err = single_source(&graph, 2).unwrap_err();
        assert_eq!(err.message, "BFS: source 2 is outside the vertices 0..2");
        assert!(single_source(&Csr::empty(0), 0).is_err());
    }
}
