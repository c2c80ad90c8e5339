//! Graph algorithms: the `--backend cpu` implementation of HorseIR's graph builtins (the
//! oracle the GPU kernels are tested against) and the GPU library kernel.
//!
//! - [`Csr`]: a directed graph in compressed sparse row form, the value of `@csr(src, dst, n)`.
//!   It is exactly a HorseIR `list<i64>` with one cell of neighbour indexes per vertex
//!   ([`crate::value::List::Flat`]), and converts both ways without copying.
//! - [`msbfs`]: bit-parallel multi-source BFS answering `@shortest_path_length` and
//!   `@reachable` for many (source, destination) pairs at once.
//! - [`gpu`]: the same searches on the GPU (IBFS, `shaders/ibfs.wgsl`), with the graph
//!   resident on the device ([`gpu::GpuGraph`]).
//! - [`bfs`]: plain single-source BFS, the reference the bit-parallel search is tested against.
//! - [`grail`]: the GRAIL reachability index of `@reach_index` (components, condensed DAG,
//!   interval labels) and its CPU build and queries; [`grail_gpu`] builds and queries it on
//!   the GPU.
//! - [`reach_generate`]: seeded random DAGs, citation-like DAGs and clustered graphs with
//!   large components, for the index's tests and benchmark.
//! - [`generate`]: a seeded, social-network-like graph generator (power-law degrees with
//!   community locality) with presets sized like LDBC SNB `person_knows_person`.

pub mod bench;
pub mod bfs;
pub mod csr;
pub mod facts;
pub mod generate;
pub mod gpu;
pub mod grail;
pub mod grail_gpu;
pub mod msbfs;
pub mod reach_bench;
pub mod reach_generate;

pub use csr::Csr;
