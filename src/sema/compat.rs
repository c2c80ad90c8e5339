//! Assignment compatibility: the one rule lives in the runtime crate ([`horsec_runtime::typing`]),
//! shared with the CPU backend.

pub use horsec_runtime::typing::compat::*;
