//! Runs one generated kernel from its launch description ([`KernelLaunch`]): resolves lengths
//! and parameters, binds inputs (device vectors as they are, host values through `location`),
//! outputs and scratch buffers, records the passes into as few submissions as the data
//! allows, and checks the status word. Its outputs become values in [`outputs`]: vectors
//! stay on the device as [`Value::Device`]; list outputs (per-group results, a few elements
//! per group) are read back. The checks a launch makes on the host, and the messages of
//! those its kernel makes, are in [`checks`].

// FxHash, not std's SipHash: these maps are keyed by slots, ids and addresses and built on
// every launch, where SipHash was about a tenth of a warm run's host instructions.
use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::encode::{dictionary_of, part_len, recode};
use super::location::{self, Location};
use crate::error::{Result, RuntimeError};
use crate::gpu::scan::{record_scan, SUM_VALUES};
use crate::gpu::{BindingKind, Commands, Device, GpuBuffer, KernelSpec};
use crate::kernel::{
    coded_override, Access, BufferRef, CellPasses, CellStrategy, CheckReport, IndexReport,
    IndexSource, KernelLaunch, LaunchRequirement, Length, OutputLayout, ParamValue, Pass,
    ScratchId, ValuePart, KERNEL_WORKGROUP_SIZE, MAX_DISPATCH_WORKGROUPS, THREAD_CELL_MAX,
};
use crate::plan::Slot;
use crate::value::{StrDict, Value};

mod checks;
mod outputs;
use checks::{check_arguments, hosted_check_inputs};
pub(crate) use checks::{located, report_message, Recorded};

/// What one launch cost, for the profile.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaunchCost {
    pub upload_bytes: u64,
    pub download_bytes: u64,
    /// Host time spent uploading inputs and downloading outputs (waits for the GPU
    /// included: a download waits for the kernel that writes it).
    pub upload_time: std::time::Duration,
    pub download_time: std::time::Duration,
    /// GPU time of the kernel's passes by timestamp queries (zero without the feature).
    pub device_time: std::time::Duration,
}

/// The compiled pipelines of one kernel's entry points, kept by the engine per kernel across
/// runs. The device's cache finds a generated kernel's pipeline by its WGSL text, which it
/// compares in full on every look-up (tens of kilobytes per dispatch: some 15 us of host
/// time per warm run of TPC-H q1); this one is found by the kernel's address, which the
/// kernel held here keeps its own.
///
/// It also keeps the kernel's scratch buffers that outlive a launch
/// ([`ScratchPurpose::kept`](crate::kernel::ScratchPurpose::kept)): zeroed when made, and
/// left zero by every launch.
pub(crate) struct KernelPipelines {
    _kernel: Arc<KernelLaunch>,
    /// By entry point and which of the kernel's coded inputs are bound coded (see
    /// [`CodedInput`]).
    by_entry: Vec<(Box<str>, CodedMask, Arc<crate::gpu::Pipeline>)>,
    kept_scratch: FxHashMap<ScratchId, Arc<GpuBuffer<u32>>>,
}

impl KernelPipelines {
    pub(crate) fn new(kernel: &Arc<KernelLaunch>) -> KernelPipelines {
        KernelPipelines {
            _kernel: Arc::clone(kernel),
            by_entry: Vec::new(),
            kept_scratch: FxHashMap::default(),
        }
    }
}

/// Scratch buffers this small are read back whole when one word is needed.
const SMALL_SCRATCH_WORDS: usize = 4;

/// Runs `kernel` on `inputs` (every slot the description names); returns its outputs.
/// `pipelines` are the kernel's own (see [`KernelPipelines`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    device: &Device,
    location: &mut Location,
    kernel: &KernelLaunch,
    pipelines: &mut KernelPipelines,
    inputs: &FxHashMap<Slot, Value>,
    cost: &mut LaunchCost,
    logged: &mut Vec<(ScratchId, u32)>,
    reports: &mut Option<Recorded>,
) -> Result<Vec<(Slot, Value)>> {
    let gpu_error = |e: crate::gpu::GpuError| RuntimeError::new(format!("{}: {e}", kernel.name));
    if kernel.features.int64 && !device.features().contains(wgpu::Features::SHADER_INT64) {
        return Err(RuntimeError::new(format!(
            "{}: the GPU lacks 64-bit integers (SHADER_INT64)",
            kernel.name
        )));
    }
    if kernel.features.float64 && !device.features().contains(wgpu::Features::SHADER_F64) {
        return Err(RuntimeError::new(format!(
            "{}: the GPU lacks f64 (SHADER_F64)",
            kernel.name
        )));
    }

    // Argument checks on lengths and counts, before anything is allocated or read. A count
    // or length the checks read as a value may have been computed on the device: it is read
    // back here (one element), counted like every other download.
    let checked = hosted_check_inputs(device, location, kernel, inputs, cost)?;
    // A kernel may fuse statements that fail on their own: the CPU stops at the first in
    // the source, so the check of that statement leads, whatever the checks' order.
    let failed = kernel
        .launch_checks
        .iter()
        .filter_map(|check| check_arguments(kernel, check, &checked).err())
        .min_by_key(|e| (e.location.is_none(), e.location));
    if let Some(error) = failed {
        return Err(error);
    }

    // Requirements first: they may replace input values (re-coded strings). The slots
    // compared by code form groups (a slot compared with two others links all three), and
    // each group is re-coded into one merged dictionary: merging pair by pair would re-code
    // a slot for one comparison and leave its partner in another with the old codes.
    // The inputs as they are unless a slot is re-coded: copying the map per launch showed
    // in a warm run's host time.
    let mut values: std::borrow::Cow<'_, FxHashMap<Slot, Value>> =
        std::borrow::Cow::Borrowed(inputs);
    let same = |a: &Arc<StrDict>, b: &Arc<StrDict>| Arc::ptr_eq(a, b) || **a == **b;
    for group in same_dictionary_groups(&kernel.requirements) {
        let mut dictionaries: Vec<Arc<StrDict>> = Vec::new();
        for slot in &group {
            if let Some(dictionary) = dictionary_of(input(&values, *slot, kernel)?) {
                if !dictionaries.iter().any(|d| same(d, &dictionary)) {
                    dictionaries.push(dictionary);
                }
            }
        }
        if dictionaries.len() < 2 {
            continue;
        }
        let merge = StrDict::merge(&dictionaries.iter().collect::<Vec<_>>());
        for slot in &group {
            let value = input(&values, *slot, kernel)?;
            let Some(dictionary) = dictionary_of(value) else {
                continue;
            };
            let Some(k) = dictionaries.iter().position(|d| same(d, &dictionary)) else {
                continue;
            };
            // Re-coding is per row: on the host (a device vector is read back, which
            // `--time` counts).
            let (value, moved) = location::host(device, value)?;
            cost.download_bytes += moved.bytes;
            cost.download_time += moved.time;
            let recoded = recode(&value, &merge, k)?;
            values.to_mut().insert(*slot, recoded);
        }
    }

    let mut run = Run {
        device,
        kernel,
        values: &values,
        scratch: ScratchBuffers(Vec::with_capacity(kernel.scratch.len())),
        compacted: FxHashMap::default(),
        small_scratch: FxHashMap::default(),
        pipelines,
        commands: None,
        device_time: std::time::Duration::ZERO,
        cell_strategy: None,
        coded_mask: 0,
    };

    // Scratch buffers, zeroed where the kernel relies on it (status words, flags), cleared in
    // the launch's own commands.
    for (i, scratch) in kernel.scratch.iter().enumerate() {
        let n = run.resolve(&scratch.elements)?;
        // At least 8 bytes: a binding of 8-byte elements needs one even when empty.
        let words = (n as usize * (scratch.element.size() as usize / 4)).max(2);
        let label = || format!("{} scratch {i}", kernel.name);
        if scratch.purpose.kept() {
            let kept = match run.pipelines.kept_scratch.get(&ScratchId(i)) {
                Some(kept) if kept.len() >= words => Arc::clone(kept),
                _ => {
                    let made = device
                        .zeroed_in::<u32>(run.commands(), &label, words)
                        .map_err(gpu_error)?;
                    let made = Arc::new(made);
                    run.pipelines
                        .kept_scratch
                        .insert(ScratchId(i), Arc::clone(&made));
                    made
                }
            };
            run.scratch
                .insert(ScratchId(i), GpuBuffer::view(&kept, kept.len()));
            continue;
        }
        let buffer = if scratch.purpose.zeroed() {
            device.zeroed_in::<u32>(run.commands(), &label, words)
        } else if scratch.purpose.host_read() {
            device.host_readable_scratch::<u32>(&label, words)
        } else {
            device.scratch_named::<u32>(&label, words)
        }
        .map_err(gpu_error)?;
        run.scratch.insert(ScratchId(i), buffer);
    }

    // Outputs, at their capacity.
    let mut outputs: FxHashMap<(Slot, ValuePart), Arc<GpuBuffer<u32>>> = FxHashMap::default();
    for binding in &kernel.bindings {
        if let BufferRef::Output { slot, part } = &binding.buffer {
            let output = kernel
                .outputs
                .iter()
                .find(|o| o.slot == *slot)
                .ok_or_else(|| {
                    RuntimeError::new(format!(
                        "{}: binding `{}` writes slot {} that is not an output",
                        kernel.name, binding.name, slot.0
                    ))
                })?;
            let elements = match &output.layout {
                OutputLayout::Vector { capacity, .. } => run.resolve(capacity)?,
                OutputLayout::List { values, .. } => run.resolve(values)?,
                OutputLayout::ListOfScalars { cells } => run.resolve(cells)?,
                OutputLayout::Flag { .. } => {
                    return Err(RuntimeError::new(format!(
                        "{}: binding `{}` writes a flag read from a scratch buffer",
                        kernel.name, binding.name
                    )))
                }
            };
            let words = (elements as usize * (binding.element.size() as usize / 4)).max(2);
            // Not cleared: a generated kernel only writes its outputs (never reads them),
            // every element below the output's length (a compaction's below its count), and
            // nothing reads a value past its length. A clear per output was a command to
            // record and encode and a fill on the device every run: TPC-H q1 clears 24
            // outputs, and a compaction's outputs are cleared at their capacity (its input's
            // length).
            let label = || format!("{}.{}", kernel.name, binding.name);
            let buffer = if *part == ValuePart::HostReadable {
                device.host_readable_scratch::<u32>(&label, words)
            } else {
                device.scratch_named::<u32>(&label, words)
            }
            .map_err(gpu_error)?;
            outputs.insert((*slot, *part), Arc::new(buffer));
        }
    }

    // Inputs the kernel can read coded (`ValuePart::Coded`): coded where `location` has or
    // can make the codes, and then bound coded in both of the input's bindings, so that its
    // elements are never uploaded; the kernel learns which through its constants.
    let mut coded_inputs: Vec<CodedInput> = Vec::new();
    for binding in &kernel.bindings {
        if let BufferRef::Input {
            slot,
            part: ValuePart::Coded,
        } = &binding.buffer
        {
            let element = kernel
                .bindings
                .iter()
                .find_map(|b| match b.buffer {
                    BufferRef::Input {
                        slot: s,
                        part: ValuePart::Elements,
                    } if s == *slot => Some(b.element),
                    _ => None,
                })
                .ok_or_else(|| {
                    RuntimeError::new(format!(
                        "{}: binding `{}` codes slot {} whose elements no binding reads",
                        kernel.name, binding.name, slot.0
                    ))
                })?;
            let value = input(&values, *slot, kernel)?;
            // One bit of the mask each (a kernel has far fewer: see `CodedMask`).
            let (coded, moved) = if coded_inputs.len() < CodedMask::BITS as usize {
                location.coded(device, value, element)?
            } else {
                (None, location::Moved::default())
            };
            cost.upload_bytes += moved.bytes;
            cost.upload_time += moved.time;
            coded_inputs.push(CodedInput {
                slot: *slot,
                element,
                coded,
            });
        }
    }

    // Inputs: device vectors bound as they are, host values uploaded once (see `location`).
    // Found by a walk: a kernel binds a handful, and a map per launch showed in its host time.
    let mut input_buffers: Vec<BoundInput> = Vec::with_capacity(kernel.bindings.len());
    for binding in &kernel.bindings {
        if let BufferRef::Input { slot, part } = &binding.buffer {
            if input_buffers.iter().any(|(key, _)| *key == (*slot, *part)) {
                continue;
            }
            let coded = coded_inputs.iter().find(|c| c.slot == *slot);
            let elements = input_buffers
                .iter()
                .find(|(key, _)| *key == (*slot, ValuePart::Elements))
                .map(|(_, buffer)| buffer);
            let codes = coded.and_then(|c| c.coded.as_ref());
            let (buffer, moved) = match (part, codes, elements) {
                (ValuePart::Elements | ValuePart::Coded, Some(codes), _) => {
                    (Arc::clone(codes), location::Moved::default())
                }
                // Not coded: its elements, bound already (the kernel reads only them).
                (ValuePart::Coded, None, Some(elements)) => {
                    (Arc::clone(elements), location::Moved::default())
                }
                (ValuePart::Coded, None, None) => {
                    let value = input(&values, *slot, kernel)?;
                    let element = coded.map_or(binding.element, |c| c.element);
                    location.buffer(device, value, ValuePart::Elements, element)?
                }
                _ => {
                    let value = input(&values, *slot, kernel)?;
                    location.buffer(device, value, *part, binding.element)?
                }
            };
            cost.upload_bytes += moved.bytes;
            cost.upload_time += moved.time;
            input_buffers.push(((*slot, *part), buffer));
        }
    }
    run.coded_mask = coded_inputs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.coded.is_some())
        .fold(0, |mask, (k, _)| mask | 1 << k);

    let mut binding_kinds = vec![BindingKind::Uniform];
    binding_kinds.extend(kernel.bindings.iter().map(|b| match b.access {
        Access::Read => BindingKind::StorageRead,
        Access::ReadWrite => BindingKind::StorageReadWrite,
    }));

    // Workgroups of each pass, for `ParamValue::Workgroups` (resolved before recording, so a
    // compacted length read back mid-launch is known by then).
    let mut pass_workgroups = Vec::with_capacity(kernel.passes.len());
    for pass in &kernel.passes {
        pass_workgroups.push(match pass {
            Pass::Entry { dispatch, .. } => {
                let length = match dispatch.length() {
                    Some(l) => run.resolve_deferred(l)?,
                    None => Some(0),
                };
                length.map(|n| dispatch.workgroups(n))
            }
            Pass::Cells(_) | Pass::ExclusiveScan { .. } => Some(0),
        });
    }

    let bound = Bound {
        kinds: &binding_kinds,
        inputs: &input_buffers,
        outputs: &outputs,
    };
    for (index, pass) in kernel.passes.iter().enumerate() {
        match pass {
            Pass::Entry {
                entry_point,
                dispatch,
            } => {
                let workgroups = match pass_workgroups[index] {
                    Some(w) => w,
                    None => {
                        // The length is a compaction's count: read it back now.
                        let n = run.resolve(dispatch.length().ok_or_else(|| {
                            RuntimeError::new(format!("{}: a pass without a length", kernel.name))
                        })?)?;
                        let w = dispatch.workgroups(n);
                        pass_workgroups[index] = Some(w);
                        w
                    }
                };
                let params = run.params(&pass_workgroups)?;
                run.record_entry(&bound, entry_point, workgroups, &params)?;
            }
            Pass::Cells(cells) => {
                let (n, values) = (run.resolve(&cells.cells)?, run.resolve(&cells.values)?);
                let strategy = CellStrategy::choose(n, values);
                run.cell_strategy = Some(strategy);
                let params = run.params(&pass_workgroups)?;
                for (entry_point, workgroups) in cell_dispatches(cells, strategy, n, values) {
                    run.record_entry(&bound, entry_point, workgroups, &params)?;
                }
            }
            Pass::ExclusiveScan {
                flags,
                offsets,
                length,
            } => {
                let n = run.resolve(length)? as usize;
                let flags_buffer = run.scratch_buffer(*flags)?.raw().clone();
                let commands = run.commands();
                let scanned =
                    record_scan(commands, &flags_buffer, n, SUM_VALUES).map_err(gpu_error)?;
                run.scratch.insert(*offsets, scanned);
                run.compacted.remove(offsets);
            }
        }
    }
    // Errors the kernel detects are checked later (see `status`): its status words are
    // copied into the device's status log in this submission, read with the next read-back.
    // A kernel whose checks name the failing element (an index, a date shift) keeps what
    // its message needs (the scratch buffers where it recorded positions and operands, and
    // its inputs) with its pending check, read only when the check fails.
    let words = super::status::status_words(kernel);
    for (id, mask) in &words {
        let status = run.scratch_buffer(*id)?.raw().clone();
        run.commands()
            .log_status(&status, *mask)
            .map_err(gpu_error)?;
        logged.push((*id, *mask));
    }
    run.flush()?;
    cost.device_time += run.device_time;
    let mut reported_scratch = FxHashMap::default();
    for check in &kernel.checks {
        let recorded: &[ScratchId] = match &check.report {
            Some(CheckReport::Index(IndexReport {
                index: IndexSource::Device { first, values, .. },
                ..
            })) => &[*first, *values],
            Some(CheckReport::Shift {
                first, operands, ..
            }) => &[*first, *operands],
            Some(CheckReport::Factorial { first, arguments }) => &[*first, *arguments],
            Some(CheckReport::Index(_)) | None => &[],
        };
        for id in recorded {
            if let Some(buffer) = run.scratch.remove(id) {
                reported_scratch.insert(*id, buffer);
            }
        }
    }
    if kernel.checks.iter().any(|c| c.report.is_some()) {
        *reports = Some(Recorded {
            values: values.clone().into_owned(),
            scratch: reported_scratch,
        });
    }

    outputs::read(&mut run, &outputs, &values, location, cost)
}

pub(super) fn input<'v>(
    values: &'v FxHashMap<Slot, Value>,
    slot: Slot,
    kernel: &KernelLaunch,
) -> Result<&'v Value> {
    values.get(&slot).ok_or_else(|| {
        RuntimeError::new(format!(
            "{}: input slot {} was not passed to the launch",
            kernel.name, slot.0
        ))
    })
}

/// The state of one launch in progress.
struct Run<'a> {
    device: &'a Device,
    kernel: &'a KernelLaunch,
    values: &'a FxHashMap<Slot, Value>,
    scratch: ScratchBuffers,
    /// Counts of compactions already read back.
    compacted: FxHashMap<ScratchId, u64>,
    /// Scratch buffers of at most [`SMALL_SCRATCH_WORDS`] words read back whole (a
    /// compaction's count with the flag beside it).
    small_scratch: FxHashMap<ScratchId, Vec<u32>>,
    /// The kernel's pipelines compiled so far.
    pipelines: &'a mut KernelPipelines,
    /// Recorded work not yet submitted.
    commands: Option<Commands<'a>>,
    /// GPU time of the submissions so far, by timestamps.
    device_time: std::time::Duration,
    /// The strategy of the kernel's `Pass::Cells`, once chosen.
    cell_strategy: Option<CellStrategy>,
    /// Which of the kernel's coded inputs (its `ValuePart::Coded` bindings, in order) are
    /// bound coded: bit k for the k-th.
    coded_mask: CodedMask,
}

/// A launch's scratch buffers by id: a vector the id indexes, not a map (a launch makes a
/// handful on every run).
struct ScratchBuffers(Vec<Option<GpuBuffer<u32>>>);

impl ScratchBuffers {
    fn insert(&mut self, id: ScratchId, buffer: GpuBuffer<u32>) {
        if self.0.len() <= id.0 {
            self.0.resize_with(id.0 + 1, || None);
        }
        if let Some(entry) = self.0.get_mut(id.0) {
            *entry = Some(buffer);
        }
    }

    fn get(&self, id: &ScratchId) -> Option<&GpuBuffer<u32>> {
        self.0.get(id.0).and_then(Option::as_ref)
    }

    fn remove(&mut self, id: &ScratchId) -> Option<GpuBuffer<u32>> {
        self.0.get_mut(id.0).and_then(Option::take)
    }
}

/// An input's part and the buffer bound for it.
type BoundInput = ((Slot, ValuePart), Arc<GpuBuffer<u32>>);

/// Bit k: the k-th coded input of a kernel is bound coded. The code generator gives a kernel
/// at most `MAX_STORAGE_BINDINGS` (32) bindings, so fewer coded inputs than this has bits.
type CodedMask = u64;

/// Whether `mask` has bit `k`.
fn mask_has(mask: CodedMask, k: usize) -> bool {
    k < CodedMask::BITS as usize && mask >> k & 1 == 1
}

/// An input of a launch with a [`ValuePart::Coded`] binding.
struct CodedInput {
    slot: Slot,
    /// The storage element of its elements.
    element: crate::kernel::GpuElement,
    /// Its codes, where it has them.
    coded: Option<Arc<GpuBuffer<u32>>>,
}

/// The buffers every entry point of a launch binds, besides its uniform and scratch.
struct Bound<'b> {
    kinds: &'b [BindingKind],
    inputs: &'b [BoundInput],
    outputs: &'b FxHashMap<(Slot, ValuePart), Arc<GpuBuffer<u32>>>,
}

/// The entry points a list kernel's strategy runs, in order, with their workgroups.
fn cell_dispatches(
    cells: &CellPasses,
    strategy: CellStrategy,
    n: u64,
    values: u64,
) -> Vec<(&str, u32)> {
    let clamp = |wanted: u64| wanted.clamp(1, u64::from(MAX_DISPATCH_WORKGROUPS)) as u32;
    let per_thread = clamp(n.div_ceil(u64::from(KERNEL_WORKGROUP_SIZE)));
    match strategy {
        // The short cells a thread each, then the long ones a workgroup each: there are at
        // most values / (THREAD_CELL_MAX + 1) of those.
        CellStrategy::Thread => vec![
            (cells.per_thread.as_str(), per_thread),
            (
                cells.per_workgroup.as_str(),
                clamp(n.min(values / u64::from(THREAD_CELL_MAX + 1))),
            ),
        ],
        CellStrategy::Workgroup => vec![(cells.per_workgroup.as_str(), clamp(n))],
        CellStrategy::Split { splits } => vec![
            (cells.split.as_str(), clamp(n * u64::from(splits))),
            (cells.combine.as_str(), per_thread),
        ],
    }
}

/// Compute passes per submission that get timestamps (a launch's dispatches share one pass
/// until a copy ends it).
const TIMED_PASSES: u32 = 64;

impl<'a> Run<'a> {
    fn commands(&mut self) -> &mut Commands<'a> {
        let (device, kernel) = (self.device, self.kernel);
        // Timestamps around every compute pass: the kernel's passes and its scans share them.
        self.commands.get_or_insert_with(|| {
            let mut commands = Commands::timed(device, &kernel.name, TIMED_PASSES);
            commands.defer_submission();
            // Its counts are read back right after its passes (see `read_counts`): that
            // submission follows at once.
            if kernel
                .outputs
                .iter()
                .filter_map(|o| o.layout.length())
                .any(Length::has_compaction)
            {
                commands.submit_at_first_large_dispatch();
            }
            commands
        })
    }

    fn flush(&mut self) -> Result<()> {
        if let Some(commands) = self.commands.take() {
            let timed = commands
                .submit_timed()
                .map_err(|e| RuntimeError::new(format!("{}: {e}", self.kernel.name)))?;
            self.device_time += timed.unwrap_or_default();
        }
        Ok(())
    }

    /// Records one dispatch of `entry_point` with every binding of the kernel.
    fn record_entry(
        &mut self,
        bound: &Bound<'_>,
        entry_point: &str,
        workgroups: u32,
        params: &[u32],
    ) -> Result<()> {
        let (device, kernel) = (self.device, self.kernel);
        let gpu_error =
            |e: crate::gpu::GpuError| RuntimeError::new(format!("{}: {e}", kernel.name));
        // Pooled; counted as uploaded by the device.
        let uniform = device
            .uniform_bytes(&kernel.name, bytemuck::cast_slice(params))
            .map_err(gpu_error)?;
        let pipeline = self.pipeline(bound.kinds, entry_point)?;
        let mut buffers: Vec<wgpu::Buffer> = Vec::with_capacity(1 + kernel.bindings.len());
        buffers.push((*uniform).clone());
        for binding in &kernel.bindings {
            buffers.push(match &binding.buffer {
                BufferRef::Input { slot, part } => bound
                    .inputs
                    .iter()
                    .find(|(key, _)| *key == (*slot, *part))
                    .map(|(_, buffer)| buffer.raw().clone())
                    .ok_or_else(|| {
                        RuntimeError::new(format!(
                            "{}: binding `{}` reads slot {} that was not bound",
                            kernel.name, binding.name, slot.0
                        ))
                    })?,
                BufferRef::Output { slot, part } => bound.outputs[&(*slot, *part)].raw().clone(),
                BufferRef::Scratch(id) => self.scratch_buffer(*id)?.raw().clone(),
            });
        }
        let args: Vec<&wgpu::Buffer> = buffers.iter().collect();
        self.commands()
            .dispatch(&pipeline, &args, u64::from(workgroups))
            .map_err(gpu_error)
    }

    /// The pipeline of `entry_point`: the kernel's own (see [`KernelPipelines`]), or the
    /// device's, compiled on its first use (a look-up either way).
    fn pipeline(
        &mut self,
        kinds: &[BindingKind],
        entry_point: &str,
    ) -> Result<Arc<crate::gpu::Pipeline>> {
        let (device, kernel) = (self.device, self.kernel);
        {
            let _timer = device.costs.pipelines.timer();
            let mask = self.coded_mask;
            if let Some((_, _, pipeline)) = self
                .pipelines
                .by_entry
                .iter()
                .find(|(entry, coded, _)| **entry == *entry_point && *coded == mask)
            {
                return Ok(Arc::clone(pipeline));
            }
        }
        // The kernel's constants: for its k-th coded input, whether bit k is set.
        let names: Vec<String> = kernel
            .bindings
            .iter()
            .filter(|b| {
                matches!(
                    b.buffer,
                    BufferRef::Input {
                        part: ValuePart::Coded,
                        ..
                    }
                )
            })
            .map(|b| coded_override(&b.name))
            .collect();
        let constants: Vec<(&str, f64)> = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                (
                    name.as_str(),
                    f64::from(u8::from(mask_has(self.coded_mask, k))),
                )
            })
            .collect();
        let pipeline = device
            .pipeline(&KernelSpec {
                label: &kernel.name,
                source: &kernel.wgsl,
                entry_point,
                constants: &constants,
                bindings: kinds,
            })
            .map_err(|e| match e {
                // The compiler leaves naga's validation of generated modules to the shader
                // module's creation (see `horsec::codegen::generate_kernel_for_device`).
                crate::gpu::GpuError::Shader { message, .. } => RuntimeError::new(format!(
                    "internal compiler error: the WGSL generated for kernel {} does not \
                     validate (a bug in horsec's code generator):\n{message}",
                    kernel.name
                )),
                e => RuntimeError::new(format!("{}: {e}", kernel.name)),
            })?;
        self.pipelines
            .by_entry
            .push((entry_point.into(), self.coded_mask, Arc::clone(&pipeline)));
        Ok(pipeline)
    }

    fn scratch_buffer(&self, id: ScratchId) -> Result<&GpuBuffer<u32>> {
        self.scratch.get(&id).ok_or_else(|| {
            RuntimeError::new(format!("{}: no scratch buffer {}", self.kernel.name, id.0))
        })
    }

    /// A length known without reading anything back, or None for a pending compaction.
    fn resolve_deferred(&mut self, length: &Length) -> Result<Option<u64>> {
        match length {
            Length::Compacted(id) if !self.compacted.contains_key(id) => Ok(None),
            Length::Sum(a, b) => Ok(
                match (self.resolve_deferred(a)?, self.resolve_deferred(b)?) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    _ => None,
                },
            ),
            other => self.resolve(other).map(Some),
        }
    }

    /// A length, reading a compaction's count back when needed.
    fn resolve(&mut self, length: &Length) -> Result<u64> {
        let kernel = self.kernel;
        Ok(match length {
            Length::Constant(n) => *n,
            Length::Sum(a, b) => {
                let (a, b) = (self.resolve(a)?, self.resolve(b)?);
                a.checked_add(b)
                    .ok_or_else(|| RuntimeError::new("a length overflows"))?
            }
            Length::Of { slot, part } => part_len(input(self.values, *slot, kernel)?, *part)?,
            Length::Broadcast(a, b) => match (self.resolve(a)?, self.resolve(b)?) {
                (1, m) => m,
                (n, 1) => n,
                // Equal, or a mismatch a launch check has refused already.
                (n, m) => n.max(m),
            },
            Length::Max(a, b) => self.resolve(a)?.max(self.resolve(b)?),
            Length::Min(a, b) => self.resolve(a)?.min(self.resolve(b)?),
            Length::ValueOf(slot) => {
                // A scalar computed on the device is read back (one element).
                let (value, _) = location::host(self.device, input(self.values, *slot, kernel)?)?;
                let n = match &value {
                    Value::Vector(v) if v.len() == 1 => v.integer_at(0),
                    _ => None,
                };
                let n = n.ok_or_else(|| {
                    RuntimeError::new(format!(
                        "{}: slot {} must hold one integer (a length)",
                        kernel.name, slot.0
                    ))
                })?;
                u64::try_from(n).map_err(|_| {
                    RuntimeError::new(format!("a length must not be negative, got {n}"))
                })?
            }
            Length::Compacted(id) => {
                if let Some(&n) = self.compacted.get(id) {
                    return Ok(n);
                }
                self.read_counts(std::iter::once(length), &[])?;
                self.compacted.get(id).copied().ok_or_else(|| {
                    RuntimeError::new(format!("{}: compaction {} has no count", kernel.name, id.0))
                })?
            }
        })
    }

    /// The parameter words, padded to a multiple of four.
    fn params(&mut self, pass_workgroups: &[Option<u32>]) -> Result<Vec<u32>> {
        let kernel = self.kernel;
        let mut words = Vec::with_capacity(kernel.params.len().next_multiple_of(4).max(4));
        for field in &kernel.params {
            let word = match &field.value {
                ParamValue::Length(length) => {
                    let n = self.resolve(length)?;
                    u32::try_from(n).map_err(|_| {
                        RuntimeError::new(format!(
                            "{}: length {n} of `{}` does not fit the GPU's 32-bit indexes",
                            kernel.name, field.name
                        ))
                    })?
                }
                ParamValue::Workgroups { pass } => {
                    pass_workgroups.get(*pass).copied().flatten().unwrap_or(1)
                }
                ParamValue::SymbolLower { text, slot } => {
                    rank(input(self.values, *slot, kernel)?, text, false, kernel)?
                }
                ParamValue::SymbolUpper { text, slot } => {
                    rank(input(self.values, *slot, kernel)?, text, true, kernel)?
                }
                ParamValue::CellSplits => match self.cell_strategy {
                    Some(CellStrategy::Split { splits }) => splits,
                    _ => 1,
                },
                ParamValue::LongCellsListed => {
                    u32::from(self.cell_strategy == Some(CellStrategy::Thread))
                }
                ParamValue::Zero => 0,
            };
            words.push(word);
        }
        while words.len() % 4 != 0 || words.is_empty() {
            words.push(0);
        }
        Ok(words)
    }
}

/// Strings of `value`'s dictionary before `text` (and equal to it, with `inclusive`).
fn rank(value: &Value, text: &str, inclusive: bool, kernel: &KernelLaunch) -> Result<u32> {
    let dict = dictionary_of(value).ok_or_else(|| {
        RuntimeError::new(format!(
            "{}: a string literal compared with a {} value",
            kernel.name,
            value.ty()
        ))
    })?;
    let n = dict.strings.partition_point(|s| {
        if inclusive {
            s.as_ref() <= text
        } else {
            s.as_ref() < text
        }
    });
    Ok(n as u32)
}

/// The slots that [`LaunchRequirement::SameDictionary`] links, directly or through other
/// slots, in groups of two or more, each in first-mention order.
fn same_dictionary_groups(requirements: &[LaunchRequirement]) -> Vec<Vec<Slot>> {
    let mut groups: Vec<Vec<Slot>> = Vec::new();
    for requirement in requirements {
        let LaunchRequirement::SameDictionary(a, b) = requirement;
        let found: Vec<usize> = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.contains(a) || g.contains(b))
            .map(|(k, _)| k)
            .collect();
        let mut merged: Vec<Slot> = Vec::new();
        for &k in found.iter().rev() {
            let mut group = groups.remove(k);
            group.append(&mut merged);
            merged = group;
        }
        for slot in [*a, *b] {
            if !merged.contains(&slot) {
                merged.push(slot);
            }
        }
        groups.push(merged);
    }
    groups
}
