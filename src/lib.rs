//! horsec: a GPU query compiler for HorseIR.
//!
//! Stages, each a module with its own printer: [`syntax`] (lexer, parser, AST),
//! [`sema`] (name resolution, type inference and checking → typed program),
//! [`simplify`] (rewrites of the typed program for the GPU pipeline),
//! [`lower`] (typed program → runtime plan). The runtime crate executes plans.
//!
//! To embed horsec, start at [`api`]: compile once, run many times on tables given as Arrow
//! record batches (or files), take results as record batches.

pub mod allocator;
pub mod analysis;
pub mod api;
pub mod bench;
pub mod cli;
pub mod codegen;
pub mod datalog;
pub mod diag;
pub mod driver;
pub mod lower;
pub mod outline;
pub mod sema;
pub mod simplify;
pub mod syntax;

/// The Arrow crates of the API's record batches, so that embedders use the same versions.
pub use arrow_array;
pub use arrow_schema;
/// The runtime: values, tables ([`horsec_runtime::data::Database`]), backends.
pub use horsec_runtime;
