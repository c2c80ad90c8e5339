//! horsec's runtime: values, the data registry, the CPU implementation of every builtin,
//! and the interpreter that executes a [`plan::Plan`].

pub mod builtin;
pub mod cpu;
pub mod data;
pub mod engine;
pub mod error;
pub mod format;
pub mod gpu;
pub mod graph;
pub mod interp;
pub mod kernel;
pub mod multiway;
pub mod plan;
pub mod profile;
pub mod relation;
pub mod sizes;
pub mod temporal;
pub mod types;
pub mod typing;
pub mod value;
pub mod value_ops;
