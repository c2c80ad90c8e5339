//! Directed graphs in compressed sparse row (CSR) form.
//!
//! A CSR graph over `n` vertices stores, for each vertex `v`, its out-neighbours in
//! `neighbours[offsets[v]..offsets[v + 1]]`. That is exactly how the runtime stores a HorseIR
//! `list<i64>` with one cell per vertex ([`List::Flat`]), so `@csr` returns an ordinary list
//! value and the graph builtins accept any list that satisfies the CSR invariants.
//!
//! Both buffers sit behind `Arc`, as in [`List::Flat`], so converting between a list value and
//! a [`Csr`] never copies the graph: a query that builds a graph once and searches it several
//! times pays for validation only.

use std::sync::Arc;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::value::{List, Vector};

/// A directed graph in CSR form. Duplicate edges and self-loops are allowed.
///
/// Invariants (checked by every constructor, relied on by the searches):
/// `offsets` has `n + 1` entries, starts at 0, never decreases and ends at
/// `neighbours.len()`; every neighbour is a vertex index in `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    offsets: Arc<Vec<usize>>,
    neighbours: Arc<Vec<i64>>,
}

/// `value` as a vertex index of a graph with `vertex_count` vertices, if it is one.
pub fn vertex_index(value: i64, vertex_count: usize) -> Option<usize> {
    usize::try_from(value).ok().filter(|&v| v < vertex_count)
}

impl Csr {
    /// A graph of `vertex_count` vertices and no edges.
    pub fn empty(vertex_count: usize) -> Csr {
        Csr {
            offsets: Arc::new(vec![0; vertex_count + 1]),
            neighbours: Arc::new(Vec::new()),
        }
    }

    /// The graph with an edge `src[i] -> dst[i]` for every position `i`, over the vertices
    /// `0..vertex_count` (the semantics of `@csr(src, dst, n)`).
    ///
    /// A vertex's neighbours keep the order of its edges in the input (a stable counting sort
    /// by source, O(n + m)). An index outside `0..vertex_count` is an error naming the edge's
    /// position and the offending value.
    pub fn from_edges(src: &[i64], dst: &[i64], vertex_count: usize) -> Result<Csr> {
        if src.len() != dst.len() {
            bail!(
                "@csr: {} edge sources but {} edge destinations",
                src.len(),
                dst.len()
            );
        }
        let mut offsets = vec![0usize; vertex_count + 1];
        for (position, (&from, &to)) in src.iter().zip(dst).enumerate() {
            let Some(from) = vertex_index(from, vertex_count) else {
                bail!(
                    "@csr: edge {position} has source {from}, outside the vertices 0..{vertex_count}"
                );
            };
            if vertex_index(to, vertex_count).is_none() {
                bail!(
                    "@csr: edge {position} has destination {to}, outside the vertices 0..{vertex_count}"
                );
            }
            offsets[from + 1] += 1;
        }
        for v in 0..vertex_count {
            offsets[v + 1] += offsets[v];
        }
        // `cursor[v]` is where the next neighbour of `v` goes.
        let mut cursor = offsets[..vertex_count].to_vec();
        let mut neighbours = vec![0i64; src.len()];
        for (&from, &to) in src.iter().zip(dst) {
            // Both were validated above.
            let slot = &mut cursor[from as usize];
            neighbours[*slot] = to;
            *slot += 1;
        }
        Ok(Csr {
            offsets: Arc::new(offsets),
            neighbours: Arc::new(neighbours),
        })
    }

    /// A graph from CSR buffers, after checking the invariants listed on [`Csr`].
    pub fn from_parts(offsets: Arc<Vec<usize>>, neighbours: Arc<Vec<i64>>) -> Result<Csr> {
        let Some((&first, _)) = offsets.split_first() else {
            bail!("CSR graph: the offsets are empty (a graph of n vertices has n + 1 offsets)");
        };
        if first != 0 {
            bail!("CSR graph: the offsets start at {first}, not 0");
        }
        let vertex_count = offsets.len() - 1;
        for (vertex, pair) in offsets.windows(2).enumerate() {
            let (start, end) = (pair[0], pair[1]);
            if end < start {
                bail!("CSR graph: offsets decrease at vertex {vertex} ({start} then {end})");
            }
            let Some(cell) = neighbours.get(start..end) else {
                bail!(
                    "CSR graph: vertex {vertex} ends at offset {end}, past the {} neighbours",
                    neighbours.len()
                );
            };
            if let Some(&bad) = cell
                .iter()
                .find(|&&u| vertex_index(u, vertex_count).is_none())
            {
                bail!(
                    "CSR graph: vertex {vertex} has neighbour {bad}, outside the vertices 0..{vertex_count}"
                );
            }
        }
        if offsets[vertex_count] != neighbours.len() {
            bail!(
                "CSR graph: the offsets end at {} but there are {} neighbours",
                offsets[vertex_count],
                neighbours.len()
            );
        }
        Ok(Csr {
            offsets,
            neighbours,
        })
    }

    /// The graph a HorseIR list value holds: one `i64` cell of neighbour indexes per vertex.
    pub fn from_list(list: &List) -> Result<Csr> {
        match list {
            List::Flat {
                values: Vector::I64(neighbours),
                offsets,
            } => Csr::from_parts(offsets.clone(), neighbours.clone()),
            List::Flat { values, .. } => bail!(
                "CSR graph: expected a list of i64 neighbour indexes, got cells of type {}",
                values.ty()
            ),
            List::Mixed(_) => {
                bail!("CSR graph: expected a list of i64 neighbour indexes, got a mixed list")
            }
        }
    }

    /// This graph as a HorseIR list value: cell `v` holds the out-neighbours of vertex `v`.
    pub fn to_list(&self) -> List {
        List::Flat {
            values: Vector::I64(self.neighbours.clone()),
            offsets: self.offsets.clone(),
        }
    }

    /// The number of vertices `n`.
    pub fn vertex_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The number of (directed) edges `m`, duplicates and self-loops included.
    pub fn edge_count(&self) -> usize {
        self.neighbours.len()
    }

    /// The out-neighbours of `vertex`, or `None` if it is not a vertex of this graph.
    pub fn neighbours(&self, vertex: usize) -> Option<&[i64]> {
        let start = *self.offsets.get(vertex)?;
        let end = *self.offsets.get(vertex + 1)?;
        self.neighbours.get(start..end)
    }

    /// The out-neighbours of `vertex`, which the caller knows is in `0..n`.
    #[inline]
    pub(crate) fn adjacent(&self, vertex: usize) -> &[i64] {
        &self.neighbours[self.offsets[vertex]..self.offsets[vertex + 1]]
    }

    /// The offsets buffer (`n + 1` entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// All neighbour indexes, vertex after vertex.
    pub fn neighbour_values(&self) -> &[i64] {
        &self.neighbours
    }

    /// The reverse graph: an edge `u -> v` for every edge `v -> u`. Cell `u` lists the
    /// in-neighbours of `u` in increasing order (with repeats for duplicate edges).
    pub fn transpose(&self) -> Csr {
        let n = self.vertex_count();
        let mut offsets = vec![0usize; n + 1];
        for &u in self.neighbours.iter() {
            offsets[u as usize + 1] += 1;
        }
        for v in 0..n {
            offsets[v + 1] += offsets[v];
        }
        let mut cursor = offsets[..n].to_vec();
        let mut neighbours = vec![0i64; self.neighbours.len()];
        for v in 0..n {
            for &u in self.adjacent(v) {
                let slot = &mut cursor[u as usize];
                neighbours[*slot] = v as i64;
                *slot += 1;
            }
        }
        Csr {
            offsets: Arc::new(offsets),
            neighbours: Arc::new(neighbours),
        }
    }
}

impl TryFrom<&List> for Csr {
    type Error = RuntimeError;

    fn try_from(list: &List) -> Result<Csr> {
        Csr::from_list(list)
    }
}

impl From<Csr> for List {
    fn from(graph: Csr) -> List {
        List::Flat {
            values: Vector::I64(graph.neighbours),
            offsets: graph.offsets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(graph: &Csr) -> Vec<Vec<i64>> {
        (0..graph.vertex_count())
            .map(|v| graph.neighbours(v).unwrap_or_default().to_vec())
            .collect()
    }

    #[test]
    fn from_edges_groups_neighbours_by_source_in_edge_order() {
        let graph = Csr::from_edges(&[2, 0, 2, 0, 3], &[1, 3, 0, 3, 3], 5).unwrap();
        assert_eq!(graph.vertex_count(), 5);
        assert_eq!(graph.edge_count(), 5);
        assert_eq!(graph.offsets(), &[0, 2, 2, 4, 5, 5]);
        // Duplicate edge 0 -> 3 and self-loop 3 -> 3 are kept.
        assert_eq!(
            cells(&graph),
            vec![vec![3, 3], vec![], vec![1, 0], vec![3], vec![]]
        );
    }

    #[test]
    fn from_edges_of_no_edges_has_empty_cells() {
        assert_eq!(Csr::from_edges(&[], &[], 0).unwrap(), Csr::empty(0));
        let graph = Csr::from_edges(&[], &[], 3).unwrap();
        assert_eq!(graph, Csr::empty(3));
        assert_eq!(cells(&graph), vec![Vec::<i64>::new(); 3]);
    }

    #[test]
    fn from_edges_names_the_first_out_of_range_edge() {
        let err = Csr::from_edges(&[0, 1, 4], &[1, 2, 0], 4).unwrap_err();
        assert_eq!(
            err.message,
            "@csr: edge 2 has source 4, outside the vertices 0..4"
        );
        let err = Csr::from_edges(&[0, 1], &[1, -1], 4).unwrap_err();
        assert_eq!(
            err.message,
            "@csr: edge 1 has destination -1, outside the vertices 0..4"
        );
        let err = Csr::from_edges(&[0], &[0], 0).unwrap_err();
        assert!(
            err.message.contains("edge 0 has source 0"),
            "{}",
            err.message
        );
    }

    #[test]
    fn from_edges_rejects_columns_of_different_lengths() {
        let err = Csr::from_edges(&[0, 1], &[1], 2).unwrap_err();
        assert_eq!(err.message, "@csr: 2 edge sources but 1 edge destinations");
    }

    #[test]
    fn converts_to_a_flat_i64_list_and_back_without_copying() {
        let graph = Csr::from_edges(&[0, 1, 1], &[1, 0, 2], 3).unwrap();
        let list = graph.to_list();
        let List::Flat {
            values: Vector::I64(values),
            offsets,
        } = &list
        else {
            panic!("expected a flat i64 list, got {list:?}");
        };
        assert_eq!(values.as_slice(), &[1, 0, 2]);
        assert_eq!(offsets.as_slice(), &[0, 1, 3, 3]);
        let back = Csr::try_from(&list).unwrap();
        assert_eq!(back, graph);
        assert!(std::ptr::eq(
            back.neighbour_values().as_ptr(),
            graph.neighbour_values().as_ptr()
        ));
        assert_eq!(List::from(back), list);
    }

    #[test]
    fn from_list_checks_the_csr_invariants() {
        let list = |values: Vec<i64>, offsets: Vec<usize>| List::Flat {
            values: Vector::I64(Arc::new(values)),
            offsets: Arc::new(offsets),
        };
        let message = |l: List| Csr::from_list(&l).unwrap_err().message;
        assert!(message(list(vec![], vec![])).contains("offsets are empty"));
        assert!(message(list(vec![0], vec![1, 1])).contains("start at 1"));
        assert!(message(list(vec![0, 0], vec![0, 2, 1])).contains("decrease at vertex 1"));
        assert!(message(list(vec![0], vec![0, 2])).contains("past the 1 neighbours"));
        assert!(message(list(vec![0, 1], vec![0, 1])).contains("end at 1 but there are 2"));
        assert_eq!(
            message(list(vec![1, 5], vec![0, 1, 2])),
            "CSR graph: vertex 1 has neighbour 5, outside the vertices 0..2"
        );
        let floats = List::Flat {
            values: Vector::F64(Arc::new(vec![0.0])),
            offsets: Arc::new(vec![0, 1]),
        };
        assert!(message(floats).contains("got cells of type"));
        assert!(message(List::Mixed(Arc::new(vec![]))).contains("mixed list"));
        assert_eq!(
            Csr::from_list(&list(vec![], vec![0])).unwrap(),
            Csr::empty(0)
        );
    }

    #[test]
    fn neighbours_of_a_non_vertex_is_none() {
        let graph = Csr::from_edges(&[0], &[1], 2).unwrap();
        assert_eq!(graph.neighbours(1), Some(&[][..]));
        assert_eq!(graph.neighbours(2), None);
    }

    #[test]
    fn transpose_reverses_every_edge() {
        let graph = Csr::from_edges(&[2, 0, 2, 0, 3], &[1, 3, 0, 3, 3], 5).unwrap();
        let reverse = graph.transpose();
        assert_eq!(
            cells(&reverse),
            vec![vec![2], vec![2], vec![], vec![0, 0, 3], vec![]]
        );
        // Reversing twice gives the graph back, each cell sorted.
        assert_eq!(
            cells(&reverse.transpose()),
            vec![vec![3, 3], vec![], vec![0, 1], vec![3], vec![]]
        );
        assert_eq!(Csr::empty(0).transpose(), Csr::empty(0));
    }

    #[test]
    fn vertex_index_accepts_exactly_zero_to_n() {
        assert_eq!(vertex_index(0, 3), Some(0));
        assert_eq!(vertex_index(2, 3), Some(2));
        assert_eq!(vertex_index(3, 3), None);
        assert_eq!(vertex_index(-1, 3), None);
        assert_eq!(vertex_index(i64::MIN, 3), None);
    }
}
