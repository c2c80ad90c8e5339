//! The GPU engine: runs a GPU plan's kernel launches and library builtins through wgpu.
//!
//! The interpreter walks the plan as for the CPU backend and hands this engine every kernel
//! launch and every library builtin (`@order`, `@group`, `@join_index`, …). Container
//! builtins (tables, columns, lists) stay on the host; any other builtin left outside a
//! kernel runs on the CPU and is recorded as a CPU compute step in the [`Profile`], so a
//! fallback is always visible in `--time`.
//!
//! Kernel outputs stay on the device ([`Value::Device`]); `location` decides where each
//! value lives and moves data, and the engine reads a device vector back only when a host
//! step needs its elements ([`Accelerator::host`]), recording the read in the profile under
//! the step that needed it.

mod device_steps;
mod encode;
mod launch;
mod location;
mod placement;
mod status;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::args::graph::{
    reach_index_arguments, reachable_arguments, search_arguments, Reachability,
};
use crate::args::{ArgValue, Args};
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::gpu::library::{each_library, each_runs_on_gpu, run_library};
use crate::gpu::Device;
use crate::graph::gpu::{GpuGraph, GpuOptions};
use crate::graph::grail_gpu::{GpuReachIndex, GrailKernels};
use crate::interp::Accelerator;
use crate::kernel::KernelLaunch;
use crate::plan::{Location, Slot};
use crate::profile::{Placement, Profile, DISPATCHES, HOST_WAITS, PIPELINE_LOOKUPS, SUBMISSIONS};
use crate::types::Type;
use crate::value::{List, Value, Vector};
use std::sync::Arc;

pub use launch::LaunchCost;
pub use placement::GpuCallSites;

/// Lists of host columns an engine keeps for later runs (see `GpuEngine::listed`).
const MAX_LISTED: usize = 64;

/// A host column in a list of `listed_columns`: the address of its elements, and its kind.
type ColumnKey = (usize, std::mem::Discriminant<Vector>);

/// Kernels whose pipelines an engine keeps (see `GpuEngine::pipelines`) before it starts
/// over: a session compiling query after query launches new kernels for good.
const MAX_KERNEL_PIPELINES: usize = 1024;

/// Status words the device's log must have room for before a launch (a launch logs one per
/// status scratch, a handful at most); with less, the log is read first.
const MIN_STATUS_ROOM: usize = 1024;

/// `value` with every element on the host (device vectors and lists read back): for callers
/// of the library kernels outside the interpreter, such as tests comparing with the CPU.
pub fn read_back(device: &Device, value: &Value) -> Result<Value> {
    location::host(device, value).map(|(v, _)| v)
}

/// Runs kernels and library builtins on one device, keeping device copies of the host
/// values it has uploaded (see `location`).
pub struct GpuEngine<'d> {
    device: &'d Device,
    location: location::Location,
    /// Launches whose status words are not checked yet (see `status`).
    pending: status::PendingChecks,
    /// `@fetch` results per enum (the addresses of its domain and index), with the enum
    /// kept so the addresses stay its own: an enum column gives the same vector every run,
    /// and keeping it keeps its device copy in `location` too (no upload per warm run).
    fetched: FxHashMap<(usize, usize), (Value, Value)>,
    /// Flat lists `@list` made of host key columns in this run, by the address of their
    /// values, with the list (so the address stays its own) and the columns (see
    /// `listed_columns`). Kept across runs: a table's columns are the same vectors every
    /// run, so a warm run finds its list here instead of concatenating the columns again.
    listed: FxHashMap<usize, (Value, Vec<Value>)>,
    /// The address of each list of `listed` by the columns it was made of.
    listed_by_columns: FxHashMap<Vec<ColumnKey>, usize>,
    /// The pipelines of the kernels launched, by the kernel's address (see
    /// `launch::KernelPipelines`).
    pipelines: FxHashMap<usize, launch::KernelPipelines>,
    /// Bytes moved, over the engine's life.
    pub uploaded_bytes: u64,
    pub downloaded_bytes: u64,
}

impl<'d> GpuEngine<'d> {
    pub fn new(device: &'d Device) -> GpuEngine<'d> {
        // Words another engine logged and never checked are not this engine's.
        device.reset_status_log();
        GpuEngine {
            device,
            location: location::Location::default(),
            pending: status::PendingChecks::default(),
            fetched: FxHashMap::default(),
            listed: FxHashMap::default(),
            listed_by_columns: FxHashMap::default(),
            pipelines: FxHashMap::default(),
            uploaded_bytes: 0,
            downloaded_bytes: 0,
        }
    }

    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// Bytes of device copies of host values the engine holds.
    pub fn resident_bytes(&self) -> u64 {
        self.location.uploaded_bytes()
    }

    /// `value` on the host, read back when it is on the device; the read is recorded under
    /// `step`, the host step that needs it.
    fn host_value(&mut self, value: &Value, step: &str, profile: &mut Profile) -> Result<Value> {
        self.read_back(step, profile, |device| location::host(device, value))
    }

    /// What `read` reads back from the device for host step `step`, recorded under it, with
    /// the status words the read brought checked.
    fn read_back<T>(
        &mut self,
        step: &str,
        profile: &mut Profile,
        read: impl FnOnce(&Device) -> Result<(T, location::Moved)>,
    ) -> Result<T> {
        let (host, moved) = match read(self.device) {
            Ok(read) => read,
            Err(e) if e.message.contains(crate::gpu::deferred::KERNEL_FAILED) => {
                // A kernel launched earlier failed: the run fails with its own message (and
                // the engine keeps it for `first_error`), and the status log starts afresh,
                // so that a step before the failing statement in the source, which the
                // interpreter may run again, reads its values (see `Interpreter::run_steps`).
                self.pending.settle(self.device, true)?;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        // The read brought the status words logged before it: check them.
        self.pending.settle(self.device, false)?;
        if moved.bytes > 0 {
            self.downloaded_bytes += moved.bytes;
            profile.read_back(step, moved.bytes, moved.time);
        }
        Ok(host)
    }
}

impl Drop for GpuEngine<'_> {
    fn drop(&mut self) {
        // Nothing this engine recorded stays held (see `gpu::Device::hold`).
        let _ = self.device.flush();
        // The logs of this thread are this engine's (see `gpu::deferred`).
        self.device.forget_thread_logs();
    }
}

/// Whether host vectors of type `ty` go to the key builtins as device copies: the numeric
/// and temporal types, whose device words are what the host keys encode to (strings and
/// symbols keep the host path, which merges their dictionaries).
fn resident_key_type(ty: &Type) -> bool {
    matches!(
        ty,
        Type::I32
            | Type::I64
            | Type::F32
            | Type::F64
            | Type::Date
            | Type::Month
            | Type::Minute
            | Type::Second
            | Type::Time
            | Type::Dt
    )
}

impl GpuEngine<'_> {
    /// For the key builtins of the library (`@join_index`, `@member`, `@index_of`, and
    /// `@order`, `@group`, `@unique` on their keys, `@group_aggregate` on its keys and value
    /// columns, `@index_a` on its positions), which read these arguments and never write
    /// them: each host key column as a device vector holding the engine's device copy
    /// (uploaded once per column, see `location`), so that warm runs do not upload the
    /// table's columns again on every call. None for an argument left as it is.
    fn resident_keys(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
        step: &str,
        profile: &mut Profile,
    ) -> Result<Vec<Option<Value>>> {
        let keys = |i: usize| match b {
            Builtin::JoinIndex | Builtin::Member | Builtin::IndexOf => true,
            Builtin::Order | Builtin::Group | Builtin::Unique => i == 0,
            // The positions assigned at (q22's order_customer_row: a host column of orders
            // uploaded on every run otherwise).
            Builtin::IndexA => i == 1,
            // The key and the value columns (not the ops): a host column summed per group
            // would otherwise be uploaded on every run (q18's l_quantity, 48 MB at SF 1).
            Builtin::GroupAggregate => i != 1,
            _ => false,
        };
        let mut resident = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            resident.push(match arg {
                // `@member` and `@index_of` take one vector per side: a list is left to
                // their own checks.
                ArgValue::Value(Value::List(List::Flat { .. }))
                    if matches!(b, Builtin::Member | Builtin::IndexOf) =>
                {
                    None
                }
                ArgValue::Value(v) if keys(i) => self.resident_key(v, step, profile)?,
                // `@like` and `@sub_string` gather per-entry results by the codes of a
                // string column: the column's resident codes, not an upload per run (q9's
                // p_name: 8 MB per run at SF 10).
                ArgValue::Value(v @ Value::Vector(x))
                    if i == 0 && matches!(b, Builtin::Like | Builtin::SubString) =>
                {
                    match x.as_strings() {
                        Some(strings) => {
                            let dict = strings.dict.clone();
                            self.resident_codes(v, dict, step, profile)?
                        }
                        None => None,
                    }
                }
                _ => None,
            });
        }
        Ok(resident)
    }

    /// A host string vector as a device vector of its codes (the engine's device copy,
    /// uploaded once per column, see `location`), with its dictionary.
    fn resident_codes(
        &mut self,
        value: &Value,
        dict: Arc<crate::value::StrDict>,
        step: &str,
        profile: &mut Profile,
    ) -> Result<Option<Value>> {
        let (buffer, moved) = self.location.buffer(
            self.device,
            value,
            crate::kernel::ValuePart::Elements,
            crate::kernel::GpuElement::U32,
        )?;
        self.record_upload(moved, step, profile);
        let ty = value.ty();
        let len = match value {
            Value::Vector(v) => v.len(),
            _ => return Ok(None),
        };
        Ok(Some(Value::Device(crate::value::DeviceVector::new(
            ty,
            len,
            Some(dict),
            buffer,
        ))))
    }

    /// Counts an upload the engine made for `step` (a host column's device copy).
    fn record_upload(&mut self, moved: location::Moved, step: &str, profile: &mut Profile) {
        if moved.bytes > 0 {
            self.uploaded_bytes += moved.bytes;
            profile.uploaded_bytes += moved.bytes;
            profile.record(
                Placement::Transfer,
                &format!("upload for {step}"),
                moved.time,
            );
        }
    }

    /// `value` (a host vector, or a list of them) with its eligible vectors as device
    /// copies; None when nothing changes.
    fn resident_key(
        &mut self,
        value: &Value,
        step: &str,
        profile: &mut Profile,
    ) -> Result<Option<Value>> {
        match value {
            Value::Vector(v) if resident_key_type(&v.ty()) => {
                let Some(element) = crate::kernel::GpuElement::of_type(&v.ty()) else {
                    return Ok(None);
                };
                let (buffer, moved) = self.location.buffer(
                    self.device,
                    value,
                    crate::kernel::ValuePart::Elements,
                    element,
                )?;
                self.record_upload(moved, step, profile);
                Ok(Some(Value::Device(crate::value::DeviceVector::new(
                    v.ty(),
                    v.len(),
                    None,
                    buffer,
                ))))
            }
            // A string column as its codes (into a sorted dictionary, so code order is string
            // order) with the dictionary: the pairing merges dictionaries per distinct string
            // as for host keys (q12's `@member` on l_shipmode uploaded the column every run).
            Value::Vector(v) => match v.as_strings() {
                Some(strings) => {
                    let dict = strings.dict.clone();
                    self.resident_codes(value, dict, step, profile)
                }
                None => Ok(None),
            },
            Value::List(List::Flat { .. }) => {
                let Some(cells) = self.listed_cells(value).map(<[Value]>::to_vec) else {
                    return Ok(None);
                };
                let mut out = Vec::with_capacity(cells.len());
                for cell in &cells {
                    match self.resident_key(cell, step, profile)? {
                        Some(v) => out.push(v),
                        None => return Ok(None),
                    }
                }
                Ok(Some(Value::List(List::Mixed(Arc::new(out)))))
            }
            Value::List(List::Mixed(cells)) => {
                let mut changed = false;
                let mut out = Vec::with_capacity(cells.len());
                for cell in cells.iter() {
                    match self.resident_key(cell, step, profile)? {
                        Some(v) => {
                            changed = true;
                            out.push(v);
                        }
                        None => out.push(cell.clone()),
                    }
                }
                Ok(changed.then(|| Value::List(List::Mixed(Arc::new(out)))))
            }
            _ => Ok(None),
        }
    }

    /// `@list` of host key columns (numeric and temporal vectors): the CPU's flat list, with
    /// its columns remembered (see `listed`), so that a key builtin taking the list binds
    /// each column's resident device copy instead of uploading the concatenation again on
    /// every run (TPC-H q9 joins on a list of four lineitem columns: 96 MB per run at SF 1).
    /// A list of the same columns made in an earlier run is that run's list: concatenating
    /// the columns is per-row host work (the conformance q9 lists four lineitem columns:
    /// 960 MB copied per run at SF 10). None for any other `@list` (the CPU's own).
    fn listed_columns(&mut self, args: &[ArgValue<'_>]) -> Option<Value> {
        let cells: Vec<Value> = args
            .iter()
            .map(|a| match a {
                ArgValue::Value(v @ Value::Vector(x)) if resident_key_type(&x.ty()) => {
                    Some((*v).clone())
                }
                _ => None,
            })
            .collect::<Option<_>>()?;
        let columns: Vec<ColumnKey> = cells
            .iter()
            .filter_map(|c| match c {
                Value::Vector(v) => Some((location::vector_address(v), std::mem::discriminant(v))),
                _ => None,
            })
            .collect();
        if let Some((list, _)) = self
            .listed_by_columns
            .get(&columns)
            .and_then(|address| self.listed.get(address))
        {
            return Some(list.clone());
        }
        let list = List::from_cells(cells.clone());
        let List::Flat { values, .. } = &list else {
            return None;
        };
        let address = location::vector_address(values);
        let list = Value::List(list.clone());
        if self.listed.len() >= MAX_LISTED {
            // Lists of per-run vectors (never asked for again) must not pile up.
            self.listed.clear();
            self.listed_by_columns.clear();
        }
        self.listed.insert(address, (list.clone(), cells));
        self.listed_by_columns.insert(columns, address);
        Some(list)
    }

    /// Drops what the engine keeps of host values that no one else holds any more (the run
    /// is over): `@fetch` results and lists of columns made from a run's own vectors, and
    /// device copies (`location`), which no later run can ask for again; they held host
    /// memory and device buffers for the engine's life. What tables hold stays. The
    /// engine's own clones (these maps hold each other's data) are not owners.
    fn forget_run_values(&mut self) {
        if self.fetched.is_empty() && self.listed.is_empty() {
            // Nothing of the maps below to count or drop (most runs): only the device copies.
            self.listed_by_columns.clear();
            self.location.sweep();
            return;
        }
        let mut own: FxHashMap<usize, usize> = FxHashMap::default();
        self.location.count_kept(&mut own);
        let mut count = |address: usize| *own.entry(address).or_default() += 1;
        for (value, fetched) in self.fetched.values() {
            if let (Value::Enum(e), Value::Vector(v)) = (value, fetched) {
                count(Arc::as_ptr(&e.index) as usize);
                count(location::vector_address(v));
            }
        }
        for (_, cells) in self.listed.values() {
            for cell in cells {
                if let Value::Vector(v) = cell {
                    count(location::vector_address(v));
                }
            }
        }
        let elsewhere = |v: &Vector| {
            location::vector_owners(v) > own.get(&location::vector_address(v)).copied().unwrap_or(0)
        };
        self.fetched.retain(|_, (value, _)| match value {
            Value::Enum(e) => {
                Arc::strong_count(&e.index)
                    > own
                        .get(&(Arc::as_ptr(&e.index) as usize))
                        .copied()
                        .unwrap_or(0)
            }
            _ => false,
        });
        // A kept `@fetch` result is as lasting as a table's column: the next run's `@fetch`
        // of the same enum gives it again, so a list of it is asked for again (q21 lists
        // l_suppkey with the fetched l_orderkey: 48 MB concatenated per run at SF 1).
        let fetched: FxHashSet<usize> = self
            .fetched
            .values()
            .filter_map(|(_, fetched)| match fetched {
                Value::Vector(v) => Some(location::vector_address(v)),
                _ => None,
            })
            .collect();
        self.listed.retain(|_, (_, cells)| {
            cells.iter().all(|c| match c {
                Value::Vector(v) => elsewhere(v) || fetched.contains(&location::vector_address(v)),
                _ => false,
            })
        });
        let listed = &self.listed;
        self.listed_by_columns
            .retain(|_, address| listed.contains_key(address));
        // Last: the entries dropped above held clones of what `location` keeps.
        self.location.sweep();
    }

    /// The columns a flat list of [`GpuEngine::listed_columns`] was made of.
    fn listed_cells(&self, value: &Value) -> Option<&[Value]> {
        let Value::List(List::Flat { values, .. }) = value else {
            return None;
        };
        self.listed
            .get(&location::vector_address(values))
            .map(|(_, cells)| cells.as_slice())
    }

    /// `@shortest_path_length` / `@reachable` with the IBFS library kernel; `@reach_index`
    /// and `@reachable` on an index with the GRAIL kernels (`graph::grail_gpu`).
    fn graph_search(&mut self, b: Builtin, args: &[ArgValue<'_>]) -> Result<Value> {
        let name = b.step_name();
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
            .and_then(|g| g.search(name, &sources, &destinations, options))
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
    fn builtin(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
        profile: &mut Profile,
    ) -> Option<Result<(Value, Placement)>> {
        if let (Builtin::Fetch, [ArgValue::Value(value @ Value::Enum(e))]) = (b, args) {
            // The CPU's own @fetch, once per enum (see `fetched`).
            let key = (
                location::vector_address(&e.domain),
                Arc::as_ptr(&e.index) as usize,
            );
            if let Some((_, fetched)) = self.fetched.get(&key) {
                return Some(Ok((fetched.clone(), Placement::Host)));
            }
            let fetched = match crate::args::as_vector(value) {
                Ok(v) => Value::Vector(v.into_owned()),
                Err(e) => return Some(Err(e)),
            };
            self.fetched
                .insert(key, ((*value).clone(), fetched.clone()));
            return Some(Ok((fetched, Placement::Host)));
        }
        if b == Builtin::List {
            if let Some(list) = self.listed_columns(args) {
                return Some(Ok((list, Placement::Host)));
            }
        }
        if let Some(value) = device_steps::container_on_device(b, args) {
            return Some(Ok((value, Placement::Host)));
        }
        if let Some(sliced) = self.slice_on_device(b, args, profile) {
            return Some(sliced);
        }
        if let Some(elements) = self.index_device_vector(b, args) {
            return Some(elements);
        }
        if let Some(list) = self.tolist_on_device(b, args) {
            return Some(list);
        }
        let gpu = placement::runs_on_gpu(b) || (b == Builtin::Each && each_runs_on_gpu(args));
        // A step that computes comes, on the CPU or in a library kernel whose host work
        // (argument checks, key encoding, dictionaries) comes before its dispatches: the
        // device runs the work due meanwhile. Not for a step that only builds a container,
        // which takes no time: a read-back after it still joins the due work.
        if !crate::profile::is_host_builtin(b) {
            if let Err(e) = self.device.submit_due() {
                return Some(Err(RuntimeError::new(format!("{}: {e}", b.step_name()))));
            }
        }
        if !gpu {
            return None;
        }
        // The sorting, grouping, membership and join kernels encode device key columns where
        // they are; the others take host arguments (read back here, recorded under the
        // builtin).
        let takes_device = |i: usize, v: &Value| match b {
            Builtin::Order | Builtin::Group | Builtin::Unique => {
                i == 0 && matches!(v, Value::Device(_) | Value::List(_))
            }
            // The key as `@group`'s; the value columns where they are (not the ops).
            Builtin::GroupAggregate => {
                (i == 0 && matches!(v, Value::Device(_) | Value::List(_)))
                    || (i > 1 && matches!(v, Value::Device(_)))
            }
            Builtin::Member | Builtin::IndexOf | Builtin::IndexA => matches!(v, Value::Device(_)),
            // `@each(@unique, l)` of a list a kernel made (see `each_runs_on_gpu`).
            Builtin::Each => i == 1 && matches!(v, Value::DeviceList(_)),
            // Their string codes are gathered on the device; the dictionary is on the host.
            Builtin::Like | Builtin::SubString => i == 0 && matches!(v, Value::Device(_)),
            Builtin::JoinIndex => matches!(v, Value::Device(_) | Value::List(_)),
            // Relations stay on the device across a semi-naive loop (`gpu/relation.rs`).
            Builtin::TupleUnique
            | Builtin::TupleDiff
            | Builtin::TupleMerge
            | Builtin::SortedJoin => matches!(v, Value::Device(_) | Value::List(_)),
            // Not the key count and the picks (host numbers).
            Builtin::JoinUnique => {
                matches!(i, 0 | 1 | 4) && matches!(v, Value::Device(_) | Value::List(_))
            }
            // The relations of a multiway join are indexed where they are (not the spec).
            Builtin::MultiwayJoin | Builtin::MultiwayCount => {
                i > 0 && matches!(v, Value::Device(_) | Value::List(_))
            }
            _ => false,
        };
        let step = b.step_name();
        let mut hosted = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            hosted.push(match arg {
                ArgValue::Value(v) if v.on_device() && !takes_device(i, v) => {
                    match self.host_value(v, step, profile) {
                        Ok(h) => Some(h),
                        Err(e) => return Some(Err(e)),
                    }
                }
                _ => None,
            });
        }
        let args: Vec<ArgValue<'_>> = args
            .iter()
            .zip(&hosted)
            .map(|(a, h)| match h {
                Some(v) => ArgValue::Value(v),
                None => *a,
            })
            .collect();
        // Host key columns go in as the engine's device copies (see `resident_keys`).
        let resident = match self.resident_keys(b, &args, step, profile) {
            Ok(resident) => resident,
            Err(e) => return Some(Err(e)),
        };
        let args: Vec<ArgValue<'_>> = args
            .iter()
            .zip(&resident)
            .map(|(a, r)| match r {
                Some(v) => ArgValue::Value(v),
                None => *a,
            })
            .collect();
        let args = args.as_slice();
        let before = self.device.traffic();
        let costs_before = self.device.host_costs();
        let result = if matches!(
            b,
            Builtin::ShortestPathLength | Builtin::Reachable | Builtin::ReachIndex
        ) {
            self.graph_search(b, args)
        } else if b == Builtin::Each && each_runs_on_gpu(args) {
            each_library(self.device, args)
        } else {
            run_library(self.device, b, args)
        };
        profile.step_read(step, (self.device.traffic() - before).downloaded);
        // What the step cost the host in device operations (`bench --time` lists them).
        let costs = self.device.host_costs() - costs_before;
        for (what, (n, _)) in [
            (HOST_WAITS, costs.waits),
            (DISPATCHES, costs.encodes),
            (SUBMISSIONS, costs.submits),
            (PIPELINE_LOOKUPS, costs.pipelines),
        ] {
            profile.tally(step, what, u64::from(n));
        }
        if b == Builtin::JoinUnique {
            // Pairs and batches of the batched join.
            for (what, n) in crate::gpu::relation::take_join_stats().fields() {
                profile.tally(step, what, n);
            }
        }
        if matches!(b, Builtin::MultiwayJoin | Builtin::MultiwayCount) {
            // Trie builds and reuses, rounds, waits and submissions of the join itself.
            for (what, n) in crate::gpu::multiway::take_stats().fields() {
                profile.tally(step, what, n);
            }
        }
        self.device.sample_memory_if_grown();
        let result = match result {
            Ok(value) => self.pending.settle(self.device, false).map(|()| value),
            // A read the library made brought an earlier launch's failure: taken as in
            // `host_value`, so that the call can run again (`Interpreter::run_again`) and a
            // later launch holding an earlier statement can report its own error.
            Err(e) if e.message.contains(crate::gpu::deferred::KERNEL_FAILED) => {
                self.pending.settle(self.device, true).and(Err(e))
            }
            Err(e) => Err(e),
        };
        Some(result.map(|v| (v, Placement::GpuLibrary)))
    }

    fn launch(
        &mut self,
        kernel: &Arc<KernelLaunch>,
        inputs: &FxHashMap<Slot, Value>,
        at: Location,
        context: &[u64],
        profile: &mut Profile,
    ) -> Result<Vec<(Slot, Value)>> {
        if self.device.status_room() < MIN_STATUS_ROOM {
            self.pending.settle(self.device, true)?;
        }
        let mut cost = LaunchCost::default();
        let before = self.device.traffic();
        let mut logged = Vec::new();
        let mut reports = None;
        let address = Arc::as_ptr(kernel) as usize;
        if self.pipelines.len() >= MAX_KERNEL_PIPELINES && !self.pipelines.contains_key(&address) {
            self.pipelines.clear();
        }
        let pipelines = self
            .pipelines
            .entry(address)
            .or_insert_with(|| launch::KernelPipelines::new(kernel));
        let launched = launch::launch(
            self.device,
            &mut self.location,
            kernel,
            pipelines,
            inputs,
            &mut cost,
            &mut logged,
            &mut reports,
        );
        if !logged.is_empty() {
            self.pending.push(status::PendingStatus::new(
                kernel, at, context, &logged, reports,
            ));
        }
        let outputs = match launched {
            Ok(outputs) => outputs,
            // A read the launch made (a count its checks need) brought an earlier launch's
            // failure: taken as in `host_value`, so that the launch can run again.
            Err(e) if e.message.contains(crate::gpu::deferred::KERNEL_FAILED) => {
                self.pending.settle(self.device, true)?;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        // Status words a read inside the launch brought back are checked now.
        self.pending.settle(self.device, false)?;
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
        profile.step_read(&kernel.name, (self.device.traffic() - before).downloaded);
        self.device.sample_memory_if_grown();
        Ok(outputs)
    }

    fn finish(
        &mut self,
        outcome: Result<Vec<Value>>,
        failure: &[u64],
        profile: &mut Profile,
    ) -> Result<Vec<Value>> {
        self.forget_run_values();
        // Every status word still on the device is read (one read-back) and checked: a
        // kernel that failed fails the run with its own message, whatever came after it.
        let outcome = match outcome {
            Ok(values) => self.pending.settle(self.device, true).map(|()| values),
            Err(e) => Err(self.pending.first_error(self.device, e, failure)),
        };
        if outcome.is_err() {
            // A failed run leaves nothing to the next: status words of launches it never
            // checked would be read as the next run's, and a failure the last settle found
            // (kept for `first_error`) would be reported as the next failing run's error.
            self.device.reset_status_log();
            self.pending = status::PendingChecks::default();
        }
        // The run's last held work goes to the queue (the timestamps' read below would
        // send it too, but a run with nothing to read must not leave it behind), and the run
        // returns once the device has done it: a failed run stops with work in flight, and a
        // process that exits then has the driver torn down under it (lavapipe's queue thread
        // crashed compiling a shader while the fuzzer's test binary exited). After a read of
        // the results this is one poll.
        if let Err(e) = self.device.wait_idle() {
            if outcome.is_ok() {
                return Err(RuntimeError::new(format!("submitting: {e}")));
            }
        }
        // GPU time by timestamps, logged by every timed submission of the run.
        match self.device.drain_gpu_time() {
            Ok(time) => {
                profile.gpu_busy += time.kernels;
                profile.gpu_busy_library += time.library;
            }
            Err(e) if outcome.is_ok() => {
                return Err(RuntimeError::new(format!("reading GPU timestamps: {e}")))
            }
            Err(_) => {}
        }
        outcome
    }

    fn host(&mut self, value: &Value, step: &str, profile: &mut Profile) -> Result<Value> {
        self.host_value(value, step, profile)
    }

    fn host_all(
        &mut self,
        values: &[&Value],
        step: &str,
        profile: &mut Profile,
    ) -> Result<Vec<Value>> {
        match location::prefetch(self.device, values) {
            Ok(moved) if moved.bytes > 0 => {
                self.downloaded_bytes += moved.bytes;
                profile.read_back(step, moved.bytes, moved.time);
            }
            Ok(_) => {}
            // A failed kernel's error (or another) is reported by the reads below, as
            // without the prefetch.
            Err(_) => {}
        }
        values
            .iter()
            .map(|v| self.host_value(v, step, profile))
            .collect()
    }
}
