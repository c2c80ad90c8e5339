//! horsec: a GPU query compiler for HorseIR.
//!
//! Stages, each a module with its own printer: [`syntax`] (lexer, parser, AST),
//! [`sema`] (name resolution, type inference and checking → typed program),
//! [`lower`] (typed program → runtime plan). The runtime crate executes plans.

pub mod analysis;
pub mod bench;
pub mod cli;
pub mod codegen;
pub mod datalog;
pub mod diag;
pub mod driver;
pub mod lower;
pub mod outline;
pub mod sema;
pub mod syntax;
