//! Graph algorithms on the CPU: the `--backend cpu` implementation of HorseIR's graph builtins
//! and the oracle the GPU kernels are tested against.
//!
//! - [`Csr`]: a directed graph in compressed sparse row form, the value of `@csr(src, dst, n)`.
//!   It is exactly a HorseIR `list<i64>` with one cell of neighbour indexes per vertex
//!   ([`crate::value::List::Flat`]), and converts both ways without copying.
//! - [`msbfs`]: bit-parallel multi-source BFS answering `@shortest_path_length` and
//!   `@reachable` for many (source, destination) pairs at once.
//! - [`bfs`]: plain single-source BFS, the reference the bit-parallel search is tested against.
//! - [`generate`]: a seeded, social-network-like graph generator (power-law degrees with
//!   community locality) with presets sized like LDBC SNB `person_knows_person`.

pub mod bfs;
pub mod csr;
pub mod generate;
pub mod msbfs;

pub use csr::Csr;
