//! The GPU layer of the runtime: device selection ([`Device`]), typed buffers
//! ([`GpuBuffer`]), a pipeline cache with grid-stride dispatch ([`Commands`]), and the
//! library kernels (WGSL in `shaders/`): prefix sum, stream compaction, radix sort, OR
//! reduction, key encoding, multi-key `@order`, hash `@group`/`@unique`/`@member`, hash
//! `@join_index`, `@index_a`, `@like`/`@sub_string` on dictionaries. [`library::run_library`]
//! is the value-level entry point the GPU engine calls.
//!
//! Everything here runs on the GPU adapter and reads results back; there is no CPU fallback.
//! The CPU backend (`crate::cpu`) is the oracle tests compare against.

pub mod bandwidth;
mod buffer;
pub mod compact;
pub mod deferred;
pub mod dense_group;
mod device;
mod error;
mod gather;
pub mod group_aggregate;
pub mod hash;
pub mod join;
pub mod keys;
pub mod library;
pub mod multiway;
pub mod order;
mod pipeline;
mod pipeline_cache;
mod pool;
pub mod reduce;
pub mod relation;
pub mod scan;
pub mod slice;
pub mod sort;
mod submission;
pub mod template;

pub use buffer::{GpuBuffer, Uniform, MAX_ELEMENTS};
pub use deferred::{GpuTime, HostCosts, TimedWork};
pub use device::{
    require_gpu_or_skip, Device, Traffic, WaitMode, ADAPTER_ENV, BINDING_LIMIT_ENV,
    OPTIONAL_FEATURES, REQUIRE_GPU_ENV, SPIN_LIMIT, WAIT_ENV,
};
pub use error::{GpuError, Result};
pub(crate) use pipeline::whole_buffer_entries;
pub use pipeline::{BindingKind, Commands, KernelSpec, Pipeline};
pub use pipeline_cache::{cache_dir, CACHE_DIR_ENV};
pub use pool::PoolCounts;
pub use wgpu;
