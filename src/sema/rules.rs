//! The builtin type rules. They live in the runtime crate ([`horsec_runtime::typing::rules`])
//! so that the compiler and both backends read one table: the CPU backend gives every builtin
//! result the type these rules give its arguments.

pub use horsec_runtime::typing::rules::*;
