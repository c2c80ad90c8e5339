//! The GPU engine: runs a GPU plan's kernel launches and library builtins through wgpu.
//!
//! The interpreter walks the plan as for the CPU backend and hands this engine every kernel
//! launch and every library builtin (`@order`, `@group`, `@join_index`, …). Container
//! builtins (tables, columns, lists) stay on the host; any other builtin left outside a
//! kernel runs on the CPU and is recorded as a CPU compute step in the [`Profile`], so a
//! fallback is always visible in `--time`.

mod encode;
mod launch;
mod residency;

use std::collections::HashMap;

use crate::builtin::Builtin;
use crate::cpu::graph::{
    reach_index_arguments, reachable_arguments, search_arguments, Reachability,
};
use crate::cpu::{ArgValue, Args};
use crate::error::{Result, RuntimeError};
use crate::gpu::library::{each_library, each_runs_on_gpu, run_library, LIBRARY_BUILTINS};
use crate::gpu::Device;
use crate::graph::gpu::{GpuGraph, GpuOptions};
use crate::graph::grail_gpu::{GpuReachIndex, GrailKernels};
use crate::interp::Accelerator;
use crate::kernel::KernelLaunch;
use crate::plan::Slot;
use crate::profile::{Placement, Profile};
use crate::value::{Value, Vector};

pub use launch::LaunchCost;

/// Runs kernels and library builtins on one device, keeping device copies of the values it
/// has seen (see `residency`).
pub struct GpuEngine<'d> {
    device: &'d Device,
    residency: residency::Residency,
    /// Bytes moved, over the engine's life.
    pub uploaded_bytes: u64,
    pub downloaded_bytes: u64,
}

impl<'d> GpuEngine<'d> {
    pub fn new(device: &'d Device) -> GpuEngine<'d> {
        GpuEngine {
            device,
            residency: residency::Residency::default(),
            uploaded_bytes: 0,
            downloaded_bytes: 0,
        }
    }

    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// Bytes of device copies the engine holds.
    pub fn resident_bytes(&self) -> u64 {
        self.residency.resident_bytes()
    }
}

impl GpuEngine<'_> {
    /// `@shortest_path_length` / `@reachable` with the IBFS library kernel; `@reach_index`
    /// and `@reachable` on an index with the GRAIL kernels (`graph::grail_gpu`).
    fn graph_search(&mut self, b: Builtin, args: &[ArgValue<'_>]) -> Result<Value> {
        let name = format!("@{}", b.name());
        let named = |e: RuntimeError| {
            if e.message.starts_with('@') {
                e
            } else {
                RuntimeError::new(format!("{name}: {}", e.message))
            }
        };
        let args = Args { list: args };
        if b == Builtin::ReachIndex {
            // Built on the GPU, downloaded as the index value.
            let (graph, labels) = reach_index_arguments(&args).map_err(named)?;
            let kernels = GrailKernels::new(self.device).map_err(named)?;
            let index = GpuReachIndex::build(self.device, &kernels, &graph, labels)
                .and_then(|index| index.download())
                .map_err(named)?;
            return Ok(index.to_value());
        }
        if b == Builtin::Reachable {
            if let Reachability::Index(index, sources, destinations) =
                reachable_arguments(&args).map_err(named)?
            {
                let (reached, _) = GpuReachIndex::upload(self.device, &index)
                    .and_then(|index| {
                        index.reachable(&sources, &destinations, GpuOptions::default())
                    })
                    .map_err(named)?;
                return Ok(Value::Vector(Vector::from_bools(reached)));
            }
        }
        let (graph, sources, destinations) = search_arguments(&args).map_err(named)?;
        let options = GpuOptions::default();
        let lengths = GpuGraph::upload(self.device, &graph)
            .and_then(|g| g.search(&name, &sources, &destinations, options))
            .map_err(named)?
            .0;
        Ok(Value::Vector(if b == Builtin::Reachable {
            Vector::from_bools(lengths.into_iter().map(|l| l >= 0).collect())
        } else {
            Vector::from_i64s(lengths)
        }))
    }
}

impl Accelerator for GpuEngine<'_> {
    fn builtin(&mut self, b: Builtin, args: &[ArgValue<'_>]) -> Option<Result<(Value, Placement)>> {
        if matches!(
            b,
            Builtin::ShortestPathLength | Builtin::Reachable | Builtin::ReachIndex
        ) {
            return Some(
                self.graph_search(b, args)
                    .map(|v| (v, Placement::GpuLibrary)),
            );
        }
        if b == Builtin::Each && each_runs_on_gpu(args) {
            return Some(each_library(self.device, args).map(|v| (v, Placement::GpuLibrary)));
        }
        if !LIBRARY_BUILTINS.contains(&b) {
            return None;
        }
        Some(run_library(self.device, b, args).map(|v| (v, Placement::GpuLibrary)))
    }

    fn launch(
        &mut self,
        kernel: &KernelLaunch,
        inputs: &HashMap<Slot, Value>,
        profile: &mut Profile,
    ) -> Result<Vec<(Slot, Value)>> {
        let mut cost = LaunchCost::default();
        let outputs = launch::launch(self.device, &mut self.residency, kernel, inputs, &mut cost)?;
        self.uploaded_bytes += cost.upload_bytes;
        self.downloaded_bytes += cost.download_bytes;
        // The launch's time is recorded by the interpreter; the bytes it moved go here.
        profile.uploaded_bytes += cost.upload_bytes;
        profile.downloaded_bytes += cost.download_bytes;
        if cost.upload_bytes > 0 {
            profile.record(Placement::Transfer, "upload", cost.upload_time);
        }
        profile.record(Placement::Transfer, "download", cost.download_time);
        profile.gpu_busy += cost.device_time;
        Ok(outputs)
    }
}
