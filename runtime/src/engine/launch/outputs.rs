//! A launch's outputs as values, once its passes are recorded: the compaction counts that
//! size them are read back in one wait (with the small outputs they size, and a grouped
//! kernel's results from the one buffer it writes them to); vectors stay on the device,
//! lists and the results the host maps become host values.

use std::borrow::Cow;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{input, LaunchCost, Run, SMALL_SCRATCH_WORDS};
use crate::engine::encode::{dictionary_of, vector_from_download, Downloaded};
use crate::engine::location::{self, Location};
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuBuffer};
use crate::kernel::{
    DictionarySource, KernelLaunch, Length, OutputLayout, ScratchId, ScratchPurpose, ValuePart,
};
use crate::plan::Slot;
use crate::types::Type;
use crate::value::{DeviceList, DeviceVector, List, StrDict, Value, Vector};

/// The values of the kernel's outputs, by slot, from the buffers bound as `outputs`; the
/// reads they take are counted in `cost`.
pub(super) fn read(
    run: &mut Run<'_>,
    outputs: &FxHashMap<(Slot, ValuePart), Arc<GpuBuffer<u32>>>,
    values: &FxHashMap<Slot, Value>,
    location: &mut Location,
    cost: &mut LaunchCost,
) -> Result<Vec<(Slot, Value)>> {
    let (kernel, device) = (run.kernel, run.device);
    // A grouped kernel's count and outputs, from the one buffer its settle copied them to.
    // Each output's bytes read back with a count: a grouped kernel's are ranges of the one
    // buffer read (not copied out of it), a compaction's small outputs come whole.
    let group = run.read_group_results()?;
    let mut read_with_counts: Vec<Option<Cow<'_, [u8]>>> = vec![None; kernel.outputs.len()];
    for (slot, range) in read_with_counts.iter_mut().zip(group.ranges) {
        *slot = range
            .and_then(|range| group.bytes.get(range))
            .map(Cow::Borrowed);
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
            *slot = Some(Cow::Owned(bytes));
        }
    }

    // Outputs as values: vectors stay on the device, lists are read back.
    let mut produced = Vec::with_capacity(kernel.outputs.len());
    for (k, output) in kernel.outputs.iter().enumerate() {
        let dict: Option<Arc<StrDict>> = match &output.dictionary {
            None => None,
            Some(DictionarySource::Input(slot)) => dictionary_of(input(values, *slot, kernel)?),
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
            } if matches!(input(values, *offsets_of, kernel)?, Value::DeviceList(_)) => {
                // Cells shaped as a device list's: the new values with its offsets, on the
                // device.
                let Value::DeviceList(shape) = input(values, *offsets_of, kernel)? else {
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
                let (n, offsets) = list_output_shape(&output.layout, values, kernel, run)?;
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

/// A grouped kernel's results buffer as read back: its bytes, and by output index the range
/// of each output's elements in them (None: not a grouped output).
struct GroupResults {
    bytes: Vec<u8>,
    ranges: Vec<Option<std::ops::Range<usize>>>,
}

impl Run<'_> {
    /// Reads back, in one wait, the counts of the compactions that `lengths` name and that
    /// are not known yet (a small scratch buffer whole, as [`Run::small_scratch`] does, else
    /// its last word), so that resolving the lengths reads nothing more.
    /// `with` are further ranges read in the same wait (their bytes are returned, in order)
    /// when a count is read; none are read when every count is known already.
    pub(super) fn read_counts<'l>(
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
    fn read_group_results(&mut self) -> Result<GroupResults> {
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
            return Ok(GroupResults {
                bytes: Vec::new(),
                ranges,
            });
        };
        if self.compacted.contains_key(&count) {
            return Ok(GroupResults {
                bytes: Vec::new(),
                ranges,
            });
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
        Ok(GroupResults { bytes, ranges })
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
}
