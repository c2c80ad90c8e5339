//! Semantic analysis: modules, imports and name resolution, builtin type rules, inference of
//! every `?`, type checking, definite assignment. Produces a [`typed::TypedProgram`].
//!
//! [`analyze`] is the entry point; [`printer::print_typed`] prints its result as HorseIR with
//! every type explicit.

mod assigned;
mod check;
pub mod compat;
pub mod printer;
pub mod rules;
pub mod typed;

pub use check::analyze;
pub use printer::print_typed;

#[cfg(test)]
mod tests;
