//! Semantic analysis: modules, imports and name resolution, builtin type rules, inference of
//! every `?`, type checking, definite assignment. Produces a [`typed::TypedProgram`].

pub mod typed;
