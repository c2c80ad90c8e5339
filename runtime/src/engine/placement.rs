//! Which builtin calls of a GPU plan run on the GPU: in a library kernel, or in one of the
//! graph engines. The engine dispatches by this decision, and the plan printer shows it
//! through [`GpuCallSites`], so `--emit plan` and `--time` agree on what runs where.

use crate::builtin::Builtin;
use crate::gpu::library::{EACH_LIBRARY_BUILTINS, LIBRARY_BUILTINS};
use crate::plan::{CallPlacement, CallSites};
use crate::profile::is_host_builtin;

/// Whether builtin `b` runs on the GPU as a library or graph kernel (given suitable
/// arguments: `@each` also needs [`each_function_runs_on_gpu`]).
pub(crate) fn runs_on_gpu(b: Builtin) -> bool {
    matches!(
        b,
        Builtin::ShortestPathLength | Builtin::Reachable | Builtin::ReachIndex
    ) || LIBRARY_BUILTINS.contains(&b)
}

/// Whether `@each(f, l)` runs on the GPU for function literal `f` (when `l` is a flat list).
pub(crate) fn each_function_runs_on_gpu(f: Builtin) -> bool {
    EACH_LIBRARY_BUILTINS.contains(&f)
}

/// Where the GPU backend runs each builtin call, for the printed plan.
pub struct GpuCallSites;

impl CallSites for GpuCallSites {
    fn placement(&self, builtin: Builtin, function_arg: Option<Builtin>) -> CallPlacement {
        // `@tolist` of a device vector: its offsets made on the device
        // (`GpuEngine::tolist_on_device`; of a host vector the list is built on the host).
        if builtin == Builtin::ToList {
            CallPlacement::GpuLibrary
        } else if is_host_builtin(builtin) {
            CallPlacement::Host
        } else if runs_on_gpu(builtin)
            // `@each(@unique, l)`: a library kernel when `l` is a flat list (the usual case;
            // other lists run on the CPU and show in `--time`).
            || (builtin == Builtin::Each && function_arg.is_some_and(each_function_runs_on_gpu))
            // A slice of a device vector, on the device (`GpuEngine::slice_on_device`; of a
            // host value or a list the CPU slices, listed in `--time`).
            || matches!(builtin, Builtin::Take | Builtin::Drop)
            // Outside a kernel, elements of a device vector at host positions: sliced or
            // gathered on the device (`GpuEngine::index_device_vector`; host vectors the CPU
            // indexes, listed in `--time`).
            || builtin == Builtin::Index
        {
            CallPlacement::GpuLibrary
        } else {
            CallPlacement::CpuFallback
        }
    }
}
