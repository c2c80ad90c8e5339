//! Runs one generated kernel from its launch description ([`KernelLaunch`]): resolves lengths
//! and parameters, binds inputs (device vectors as they are, host values through `location`),
//! outputs and scratch buffers, records the passes into as few submissions as the data
//! allows, and checks the status word. Vector outputs stay on the device as
//! [`Value::Device`]; list outputs (per-group results, a few elements per group) are read
//! back. The checks a launch makes on the host, and the messages of those its kernel makes,
//! are in [`checks`].

// FxHash, not std's SipHash: these maps are keyed by slots, ids and addresses and built on
// every launch, where SipHash was about a tenth of a warm run's host instructions.
use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::encode::{dictionary_of, part_len, recode, vector_from_download, Downloaded};
use super::location::{self, Location};
use crate::error::{Result, RuntimeError};
use crate::gpu::scan::{record_scan, SUM_VALUES};
use crate::gpu::{BindingKind, Commands, Device, GpuBuffer, KernelSpec};
use crate::kernel::{
    Access, BufferRef, CellPasses, CellStrategy, CheckReport, DictionarySource, IndexReport,
    IndexSource, KernelLaunch, LaunchRequirement, Length, OutputLayout, ParamValue, Pass,
    ScratchId, ScratchPurpose, ValuePart, KERNEL_WORKGROUP_SIZE, MAX_DISPATCH_WORKGROUPS,
    THREAD_CELL_MAX,
};
use crate::plan::Slot;
use crate::types::Type;
use crate::value::{DeviceList, DeviceVector, List, StrDict, Value, Vector};

mod checks;
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
    by_entry: Vec<(Box<str>, Arc<crate::gpu::Pipeline>)>,
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
        scratch: FxHashMap::default(),
        compacted: FxHashMap::default(),
        small_scratch: FxHashMap::default(),
        pipelines,
        commands: None,
        device_time: std::time::Duration::ZERO,
        cell_strategy: None,
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

    // Inputs: device vectors bound as they are, host values uploaded once (see `location`).
    let mut input_buffers: Vec<Arc<GpuBuffer<u32>>> = Vec::new();
    let mut input_index: FxHashMap<(Slot, ValuePart), usize> = FxHashMap::default();
    for binding in &kernel.bindings {
        if let BufferRef::Input { slot, part } = &binding.buffer {
            if input_index.contains_key(&(*slot, *part)) {
                continue;
            }
            let value = input(&values, *slot, kernel)?;
            let (buffer, moved) = location.buffer(device, value, *part, binding.element)?;
            cost.upload_bytes += moved.bytes;
            cost.upload_time += moved.time;
            input_index.insert((*slot, *part), input_buffers.len());
            input_buffers.push(buffer);
        }
    }

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
        input_index: &input_index,
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

    // A grouped kernel's count and outputs, from the one buffer its settle copied them to.
    // Each output's bytes read back with a count: a grouped kernel's are ranges of the one
    // buffer read (not copied out of it), a compaction's small outputs come whole.
    let (group_bytes, group_ranges) = run.read_group_results()?;
    let mut read_with_counts: Vec<Option<std::borrow::Cow<'_, [u8]>>> =
        vec![None; kernel.outputs.len()];
    for (slot, range) in read_with_counts.iter_mut().zip(group_ranges) {
        *slot = range
            .and_then(|range| group_bytes.get(range))
            .map(std::borrow::Cow::Borrowed);
    }

    // The compactions' counts that size the outputs, read back together: one wait for the
    // launch instead of one per compacted output (TPC-H q7's first kernel compacts four).
    // Small outputs those counts size come in the same read (`location::read_with_count`).
    let mut with_count = Vec::new();
    for (k, output) in kernel.outputs.iter().enumerate() {
        let OutputLayout::Vector {
            length,
            capacity: Length::Constant(capacity),
        } = &output.layout
        else {
            continue;
        };
        let Some(element) = crate::kernel::GpuElement::of_type(&output.ty) else {
            continue;
        };
        if !location::read_with_count(*capacity, element) {
            continue;
        }
        if !length.has_compaction() {
            continue;
        }
        if let Some(buffer) = outputs.get(&(output.slot, ValuePart::Elements)) {
            let bytes = (capacity * element.size()).min(buffer.byte_len());
            with_count.push((k, buffer.clone(), bytes));
        }
    }
    let ranges: Vec<_> = with_count
        .iter()
        .map(|(_, buffer, bytes)| (buffer.raw(), 0, *bytes))
        .collect();
    let read = run.read_counts(
        kernel.outputs.iter().filter_map(|o| o.layout.length()),
        &ranges,
    )?;
    for ((k, ..), bytes) in with_count.iter().zip(read) {
        if let Some(slot) = read_with_counts.get_mut(*k) {
            *slot = Some(std::borrow::Cow::Owned(bytes));
        }
    }

    // Outputs as values: vectors stay on the device, lists are read back.
    let mut produced = Vec::with_capacity(kernel.outputs.len());
    for (k, output) in kernel.outputs.iter().enumerate() {
        let dict: Option<Arc<StrDict>> = match &output.dictionary {
            None => None,
            Some(DictionarySource::Input(slot)) => dictionary_of(input(&values, *slot, kernel)?),
            Some(DictionarySource::Literal(strings)) => Some(Arc::new(StrDict {
                strings: strings
                    .iter()
                    .map(|s| Arc::<str>::from(s.as_str()))
                    .collect(),
            })),
        };
        let buffer_of = |part: ValuePart| {
            outputs.get(&(output.slot, part)).ok_or_else(|| {
                RuntimeError::new(format!(
                    "{}: output slot {} has no {part:?} binding",
                    kernel.name, output.slot.0
                ))
            })
        };
        let value = match &output.layout {
            // Written only where the host maps them (a grouped kernel's outputs): a host
            // value, from the bytes read back with its count.
            OutputLayout::Vector { length, .. }
                if !outputs.contains_key(&(output.slot, ValuePart::Elements)) =>
            {
                let n = run.resolve(length)? as usize;
                let bytes = read_with_counts
                    .get_mut(k)
                    .and_then(Option::take)
                    .ok_or_else(|| {
                        RuntimeError::new(format!(
                            "{}: output slot {} has neither a buffer nor values read back",
                            kernel.name, output.slot.0
                        ))
                    })?;
                Value::Vector(location::vector_from_bytes(&output.ty, n, dict, &bytes)?)
            }
            OutputLayout::Vector { length, .. } => {
                let n = run.resolve(length)? as usize;
                let buffer = buffer_of(ValuePart::Elements)?;
                if crate::kernel::GpuElement::of_type(&output.ty).is_none() {
                    return Err(RuntimeError::new(format!(
                        "{}: {} values have no GPU layout",
                        kernel.name, output.ty
                    )));
                }
                if matches!(output.ty, Type::Sym | Type::Str) && dict.is_none() {
                    return Err(RuntimeError::new(format!(
                        "{}: a {} output has no dictionary",
                        kernel.name, output.ty
                    )));
                }
                let mut vector = DeviceVector::new(output.ty.clone(), n, dict, buffer.clone());
                if let Some(host) = outputs
                    .get(&(output.slot, ValuePart::HostReadable))
                    .filter(|b| b.raw().usage().contains(wgpu::BufferUsages::MAP_READ))
                {
                    vector = vector.with_host_readable(Arc::clone(host));
                }
                if let Some(bytes) = read_with_counts.get_mut(k).and_then(Option::take) {
                    location::keep_host_copy(&vector, &bytes)?;
                }
                Value::Device(vector)
            }
            OutputLayout::List {
                offsets_of,
                values: n,
            } if matches!(input(&values, *offsets_of, kernel)?, Value::DeviceList(_)) => {
                // Cells shaped as a device list's: the new values with its offsets, on the
                // device.
                let Value::DeviceList(shape) = input(&values, *offsets_of, kernel)? else {
                    unreachable!("matched above");
                };
                let offsets = shape.offsets.clone();
                let cells = shape.cells;
                let n = run.resolve(n)? as usize;
                let cell_type = list_cell_type(&output.ty);
                Value::DeviceList(DeviceList {
                    values: DeviceVector::new(
                        cell_type,
                        n,
                        dict,
                        buffer_of(ValuePart::ListValues)?.clone(),
                    ),
                    offsets,
                    cells,
                })
            }
            OutputLayout::Flag { scratch, word } => {
                let words = run.small_scratch(*scratch)?;
                let set = words.get(*word).copied().ok_or_else(|| {
                    RuntimeError::new(format!(
                        "{}: scratch {} has no word {word}",
                        kernel.name, scratch.0
                    ))
                })?;
                Value::Vector(Vector::Bool(Arc::new(vec![set != 0])))
            }
            OutputLayout::List { .. } | OutputLayout::ListOfScalars { .. } => {
                // A list kernel writes only the flat values; the offsets are an input's, or
                // one per cell.
                let (n, offsets) = list_output_shape(&output.layout, &values, kernel, &mut run)?;
                let cell_type = list_cell_type(&output.ty);
                let buffer = buffer_of(ValuePart::ListValues)?;
                let flat = download_vector(device, buffer, &cell_type, n, dict, cost)?;
                Value::List(List::Flat {
                    values: flat,
                    offsets,
                })
            }
        };
        location.computed(&value);
        produced.push((output.slot, value));
    }
    Ok(produced)
}

/// The flat value count and the offsets of a list output.
fn list_output_shape(
    layout: &OutputLayout,
    values: &FxHashMap<Slot, Value>,
    kernel: &KernelLaunch,
    run: &mut Run<'_>,
) -> Result<(usize, Arc<Vec<usize>>)> {
    match layout {
        OutputLayout::List {
            offsets_of,
            values: n,
        } => {
            let Value::List(List::Flat { offsets, .. }) = input(values, *offsets_of, kernel)?
            else {
                return Err(RuntimeError::new(format!(
                    "{}: slot {} is not a flat list",
                    kernel.name, offsets_of.0
                )));
            };
            Ok((run.resolve(n)? as usize, offsets.clone()))
        }
        OutputLayout::ListOfScalars { cells } => {
            let n = run.resolve(cells)? as usize;
            Ok((n, Arc::new((0..=n).collect())))
        }
        OutputLayout::Vector { .. } | OutputLayout::Flag { .. } => Err(RuntimeError::new(format!(
            "{}: a vector output laid out as a list",
            kernel.name
        ))),
    }
}

fn list_cell_type(ty: &Type) -> Type {
    match ty {
        Type::List(inner) => (**inner).clone(),
        other => other.clone(),
    }
}

fn download_vector(
    device: &Device,
    buffer: &GpuBuffer<u32>,
    ty: &Type,
    n: usize,
    dict: Option<Arc<StrDict>>,
    cost: &mut LaunchCost,
) -> Result<crate::value::Vector> {
    let element = crate::kernel::GpuElement::of_type(ty)
        .ok_or_else(|| RuntimeError::new(format!("{ty} values have no GPU layout")))?;
    let start = std::time::Instant::now();
    let data = if element.size() == 8 {
        // The same device buffer seen as 8-byte words: one copy from the staging memory
        // straight into the column's allocation.
        let wide = GpuBuffer::<u64>::wrap(buffer.raw().clone(), buffer.len() / 2);
        Downloaded::Wide(
            device
                .download_range(&wide, 0, n)
                .map_err(|e| RuntimeError::new(e.to_string()))?,
        )
    } else {
        Downloaded::Words(
            device
                .download_range(buffer, 0, n)
                .map_err(|e| RuntimeError::new(e.to_string()))?,
        )
    };
    cost.download_bytes += n as u64 * element.size();
    cost.download_time += start.elapsed();
    vector_from_download(ty, data, dict)
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
    scratch: FxHashMap<ScratchId, GpuBuffer<u32>>,
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
}

/// The buffers every entry point of a launch binds, besides its uniform and scratch.
struct Bound<'b> {
    kinds: &'b [BindingKind],
    inputs: &'b [Arc<GpuBuffer<u32>>],
    input_index: &'b FxHashMap<(Slot, ValuePart), usize>,
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
                BufferRef::Input { slot, part } => bound.inputs[bound.input_index[&(*slot, *part)]]
                    .raw()
                    .clone(),
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
            if let Some((_, pipeline)) = self
                .pipelines
                .by_entry
                .iter()
                .find(|(entry, _)| **entry == *entry_point)
            {
                return Ok(Arc::clone(pipeline));
            }
        }
        let pipeline = device
            .pipeline(&KernelSpec {
                label: &kernel.name,
                source: &kernel.wgsl,
                entry_point,
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
            .push((entry_point.into(), Arc::clone(&pipeline)));
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

    /// Reads back, in one wait, the counts of the compactions that `lengths` name and that
    /// are not known yet (a small scratch buffer whole, as [`Run::small_scratch`] does, else
    /// its last word), so that resolving the lengths reads nothing more.
    /// `with` are further ranges read in the same wait (their bytes are returned, in order)
    /// when a count is read; none are read when every count is known already.
    fn read_counts<'l>(
        &mut self,
        lengths: impl Iterator<Item = &'l Length>,
        with: &[(&wgpu::Buffer, u64, u64)],
    ) -> Result<Vec<Vec<u8>>> {
        // Counts known already (every output of a grouped kernel is sized by its group
        // count, read with its results) are not collected: this runs per output.
        let mut ids: Vec<ScratchId> = Vec::new();
        let compacted = &self.compacted;
        for length in lengths {
            length.for_each_compaction(&mut |id| {
                if !compacted.contains_key(&id) && !ids.contains(&id) {
                    ids.push(id);
                }
            });
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.flush()?;
        let kernel = self.kernel;
        let mut ranges = Vec::with_capacity(ids.len());
        for id in &ids {
            let buffer = self.scratch_buffer(*id)?;
            let words = buffer.len();
            let last = words.checked_sub(1).ok_or_else(|| {
                RuntimeError::new(format!("{}: an empty offsets buffer", kernel.name))
            })?;
            ranges.push(if words <= SMALL_SCRATCH_WORDS {
                (buffer.raw(), 0, 4 * words as u64)
            } else {
                (buffer.raw(), 4 * last as u64, 4)
            });
        }
        ranges.extend_from_slice(with);
        let mut read = self
            .device
            .download_ranges(&ranges)
            .map_err(|e| RuntimeError::new(format!("{}: {e}", kernel.name)))?;
        let extra = read.split_off(ids.len());
        for (id, bytes) in ids.into_iter().zip(read) {
            let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
            let n = u64::from(words.last().copied().unwrap_or(0));
            if self.scratch_buffer(id)?.len() <= SMALL_SCRATCH_WORDS {
                self.small_scratch.insert(id, words);
            }
            self.compacted.insert(id, n);
        }
        Ok(extra)
    }

    /// The words of a [`ScratchPurpose::GroupResults`] buffer, read back in one range after
    /// the work so far: its group count is recorded as [`Run::read_counts`] records one
    /// (with the decline flag beside it); returned are the bytes read and, by output index,
    /// the range of each output's elements in them.
    #[allow(clippy::type_complexity)]
    fn read_group_results(&mut self) -> Result<(Vec<u8>, Vec<Option<std::ops::Range<usize>>>)> {
        let kernel = self.kernel;
        let mut ranges = vec![None; kernel.outputs.len()];
        let Some((id, count, outputs)) =
            kernel
                .scratch
                .iter()
                .enumerate()
                .find_map(|(i, scratch)| match &scratch.purpose {
                    ScratchPurpose::GroupResults { count, outputs } => {
                        Some((ScratchId(i), *count, outputs))
                    }
                    _ => None,
                })
        else {
            return Ok((Vec::new(), ranges));
        };
        if self.compacted.contains_key(&count) {
            return Ok((Vec::new(), ranges));
        }
        self.flush()?;
        let buffer = self.scratch_buffer(id)?;
        let bytes = 4 * buffer.len() as u64;
        let read = self
            .device
            .download_ranges(&[(buffer.raw(), 0, bytes)])
            .map_err(|e| RuntimeError::new(format!("{}: {e}", kernel.name)))?;
        let bytes = read.into_iter().next().unwrap_or_default();
        // The decline flag and the group count lead the buffer.
        let word = |at: usize| {
            bytes
                .get(4 * at..4 * at + 4)
                .map(bytemuck::pod_read_unaligned::<u32>)
        };
        let (Some(flag), Some(groups)) = (word(0), word(1)) else {
            return Err(RuntimeError::new(format!(
                "{}: a group results buffer of {} bytes",
                kernel.name,
                bytes.len()
            )));
        };
        self.small_scratch.insert(count, vec![flag, groups]);
        self.compacted.insert(count, u64::from(groups));
        for &(k, offset) in outputs {
            let output = kernel.outputs.get(k).ok_or_else(|| {
                RuntimeError::new(format!("{}: group results of no output {k}", kernel.name))
            })?;
            let size = crate::kernel::GpuElement::of_type(&output.ty)
                .map(|e| e.size())
                .ok_or_else(|| {
                    RuntimeError::new(format!("{}: {} has no GPU layout", kernel.name, output.ty))
                })?;
            let start = 4 * offset as usize;
            let end = start.saturating_add(u64::from(groups).saturating_mul(size) as usize);
            if end > bytes.len() {
                return Err(RuntimeError::new(format!(
                    "{}: {groups} groups past the group results buffer",
                    kernel.name
                )));
            }
            if let Some(range) = ranges.get_mut(k) {
                *range = Some(start..end);
            }
        }
        Ok((bytes, ranges))
    }

    /// The words of a small scratch buffer, read back (once) after the work so far.
    fn small_scratch(&mut self, id: ScratchId) -> Result<Vec<u32>> {
        if let Some(words) = self.small_scratch.get(&id) {
            return Ok(words.clone());
        }
        self.flush()?;
        let kernel = self.kernel;
        let buffer = self.scratch_buffer(id)?;
        let words = self
            .device
            .download_range(buffer, 0, buffer.len())
            .map_err(|e| RuntimeError::new(format!("{}: {e}", kernel.name)))?;
        self.small_scratch.insert(id, words.clone());
        Ok(words)
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
