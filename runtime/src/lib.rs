//! horsec's runtime: values, the data registry, the CPU implementation of every builtin,
//! and the interpreter that executes a [`plan::Plan`].

pub mod args;
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
pub(crate) mod keys;
pub mod multiway;
pub mod numeric;
pub mod plan;
pub mod profile;
pub mod relation;
pub mod sizes;
pub mod temporal;
pub mod types;
pub mod typing;
pub mod value;
pub mod value_ops;

/// Where the backend a plan targets runs each builtin call, for printing the plan
/// (`plan.display(call_sites(plan.target))`).
pub fn call_sites(target: plan::Target) -> &'static dyn plan::CallSites {
    match target {
        plan::Target::Cpu => &cpu::CpuCallSites,
        plan::Target::Gpu => &engine::GpuCallSites,
    }
}
