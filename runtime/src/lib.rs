//! horsec's runtime: values, the data registry, the CPU implementation of every builtin,
//! and the interpreter that executes a [`plan::Plan`].

pub mod builtin;
pub mod plan;
pub mod temporal;
pub mod types;
pub mod value;
pub mod cpu;
pub mod error;
