//! Read-backs of several small ranges through one gather pass (`shaders/gather.wgsl`).
//!
//! A read-back copies each range it reads into the staging buffer, and wgpu records every
//! copy command with a pipeline barrier of its own (the source leaves its storage state, and
//! each write to the staging buffer waits for the one before). Gathered, the ranges are
//! read by one pass, whose bindings get their barriers together, and the staging buffer gets
//! one copy. On an H100 at SF 1, alternating the two within one process (400 warm runs):
//! TPC-H q1 (eleven ranges) 215-225 us a run against 217-227 with copies, q3 12-17 us less
//! (about 5.1 ms), q10 0-25 us less, q6 and q18 the same.
//!
//! Where the device can map a storage buffer (`MAPPABLE_PRIMARY_BUFFERS`), the pass writes
//! into the buffer the host maps, and there is no copy at all. The copy after the pass is a
//! step of its own on the device: on the H100, a one-workgroup pass then the host's map
//! took 35 us from recording to the mapped bytes when the pass wrote the mapped buffer,
//! against 45 us through a device buffer and a copy (medians of 2,000). Alternating the
//! two run by run within one process at SF 1 (200 runs each, two processes): q1 252 and
//! 254 us against 257 and 259, q3 10-18 us less, q10 20-50 us less, the others within
//! their noise.

use super::buffer::Uniform;
use super::device::Device;
use super::error::Result;
use super::pipeline::{Arg, BindingKind, KernelSpec, Pipeline};
use super::template::{rendered, workgroup_size_text, GATHER_WGSL};
use std::sync::Arc;

/// Fewest ranges a read-back gathers: for one or two, the copies cost less than a pass.
const MIN_GATHERED: usize = 3;
/// Most ranges one gather pass binds; a read-back of more copies them one by one.
pub(crate) const MAX_GATHERED: usize = 16;
/// Most bytes a read-back gathers: a larger one takes its time moving bytes, whatever
/// the barriers cost.
const MAX_GATHERED_BYTES: u64 = 1 << 20;
/// Largest buffer a gather pass binds (whole). Its bind group is cached, as kernels' are,
/// and a cached group keeps its buffers alive: bounded so, the cache never holds on to a
/// large buffer (a resident column, a big offsets buffer of which one word is read) that
/// its owner has let go of. A range of a larger buffer is copied.
const MAX_GATHERED_SOURCE_BYTES: u64 = 16 << 20;
/// Workgroups of a gather pass at most (its invocations loop over the words).
const MAX_GATHER_WORKGROUPS: u64 = 64;

/// A range of a read-back: `bytes` bytes of `buffer` from `offset`, going to `at` in the
/// staging buffer (all multiples of 4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadRange<'b> {
    pub buffer: &'b wgpu::Buffer,
    pub offset: u64,
    pub bytes: u64,
    pub at: u64,
}

/// The buffer a read-back maps, and which of the device's kept buffers it goes back to.
pub(crate) struct ReadTarget {
    pub buffer: wgpu::Buffer,
    /// Kept as the device's mapped gather buffer rather than its staging buffer.
    mapped_gather: bool,
    /// The ranges' table a gather pass binds, kept until the commands are submitted (the
    /// uniform cache may let go of it meanwhile).
    _table: Option<Uniform>,
}

impl Device {
    /// Records the copy of `ranges` (`total` bytes in all, each at its `at`) into a buffer
    /// the host maps next, in `encoder`: through one gather pass where they are several,
    /// small and bindable, else a copy per range into the staging buffer.
    pub(crate) fn record_read_ranges(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ranges: &[ReadRange<'_>],
        total: u64,
    ) -> Result<ReadTarget> {
        let ranges: Vec<ReadRange<'_>> = ranges.iter().copied().filter(|r| r.bytes > 0).collect();
        let gathers = self.gathers(&ranges);
        if gathers && self.maps_storage() {
            let buffer = self.read_back_buffer(
                &self.mapped_gather,
                "gathered read-back",
                total,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::MAP_READ,
            );
            let table = self.record_gather(encoder, &ranges, &buffer)?;
            return Ok(ReadTarget {
                buffer,
                mapped_gather: true,
                _table: Some(table),
            });
        }
        let staging = self.read_back_buffer(
            &self.staging,
            "download staging",
            total,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut table = None;
        if gathers {
            let end = ranges.iter().map(|r| r.at + r.bytes).max().unwrap_or(0);
            let gathered = self.read_back_buffer(
                &self.gathered,
                "gathered read-back",
                end,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            );
            table = Some(self.record_gather(encoder, &ranges, &gathered)?);
            encoder.copy_buffer_to_buffer(&gathered, 0, &staging, 0, end);
            // Recorded: a later read-back's pass into it comes after these commands.
            self.gathered.keep(gathered);
        } else {
            for r in &ranges {
                encoder.copy_buffer_to_buffer(r.buffer, r.offset, &staging, r.at, r.bytes);
            }
        }
        Ok(ReadTarget {
            buffer: staging,
            mapped_gather: false,
            _table: table,
        })
    }

    /// Gives back the buffer of a read-back whose bytes have been read (unmapped), for the
    /// next read-back.
    pub(crate) fn keep_read_target(&self, target: ReadTarget) {
        if target.mapped_gather {
            self.mapped_gather.keep(target.buffer);
        } else {
            self.staging.keep(target.buffer);
        }
    }

    /// Whether a gather pass may write straight into a buffer the host maps: wgpu allows a
    /// mappable storage buffer only with `MAPPABLE_PRIMARY_BUFFERS`. On a discrete GPU that
    /// buffer lives in host memory, which suits a read-back (the copy went there too).
    pub(crate) fn maps_storage(&self) -> bool {
        self.gathers_into_mapped
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether one gather pass reads `ranges`: enough of them, few and small enough, each
    /// source a small storage buffer, at word offsets.
    fn gathers(&self, ranges: &[ReadRange<'_>]) -> bool {
        let limits = self.device.limits();
        let end = ranges.iter().map(|r| r.at + r.bytes).max().unwrap_or(0);
        (MIN_GATHERED..=MAX_GATHERED).contains(&ranges.len())
            && end <= MAX_GATHERED_BYTES
            && ranges.len() < limits.max_storage_buffers_per_shader_stage as usize
            && ranges.iter().all(|r| {
                r.buffer.usage().contains(wgpu::BufferUsages::STORAGE)
                    && r.buffer.size()
                        <= MAX_GATHERED_SOURCE_BYTES.min(limits.max_storage_buffer_binding_size)
                    && r.offset % 4 == 0
                    && r.bytes % 4 == 0
                    && r.at % 4 == 0
            })
    }

    /// Records one pass that writes `ranges` into `into` (each at its `at`); returns the
    /// ranges' table it binds.
    fn record_gather(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ranges: &[ReadRange<'_>],
        into: &wgpu::Buffer,
    ) -> Result<Uniform> {
        let end = ranges.iter().map(|r| r.at + r.bytes).max().unwrap_or(0);
        let pipeline = gather_pipeline(self, ranges.len())?;
        // Word offsets fit u32: every source is at most MAX_GATHERED_SOURCE_BYTES.
        let table: Vec<u32> = ranges
            .iter()
            .flat_map(|r| {
                [
                    (r.offset / 4) as u32,
                    (r.bytes / 4) as u32,
                    (r.at / 4) as u32,
                    0,
                ]
            })
            .collect();
        // A warm run reads the same ranges: the table's uniform is the run before's.
        let table = self.uniform_bytes("gather ranges", bytemuck::cast_slice(&table))?;
        let mut args: Vec<Arg<'_>> = vec![&table, into];
        args.extend(ranges.iter().map(|r| r.buffer));
        let group = pipeline.bind_group(self, &args)?;
        let words = end / 4;
        let workgroups = words
            .div_ceil(u64::from(super::template::WORKGROUP_SIZE))
            .clamp(1, MAX_GATHER_WORKGROUPS) as u32;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("gather"),
                timestamp_writes: None,
            });
            pass.set_pipeline(pipeline.compute());
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
        }
        Ok(table)
    }
}

/// The gather pipeline for `n` ranges.
fn gather_pipeline(device: &Device, n: usize) -> Result<Arc<Pipeline>> {
    let mut bindings = vec![BindingKind::Uniform, BindingKind::StorageReadWrite];
    bindings.extend(std::iter::repeat_n(BindingKind::StorageRead, n));
    device.pipeline(&KernelSpec {
        label: "gather",
        source: gather_source(n)?,
        entry_point: "gather",
        constants: &[],
        bindings: &bindings,
    })
}

/// The gather module for `n` ranges, rendered once per count (a read-back looks it up).
fn gather_source(n: usize) -> Result<&'static str> {
    static SOURCES: [std::sync::OnceLock<&'static str>; MAX_GATHERED + 1] =
        [const { std::sync::OnceLock::new() }; MAX_GATHERED + 1];
    if let Some(source) = SOURCES.get(n).and_then(|s| s.get()) {
        return Ok(source);
    }
    let mut sources = String::new();
    let mut copies = String::new();
    for k in 0..n {
        sources += &format!(
            "@group(0) @binding({}) var<storage, read> source{k}: array<u32>;\n",
            k + 2
        );
        copies += &format!(
            "    for (var i = global_id.x; i < ranges[{k}].words; i = i + stride) {{
        gathered[ranges[{k}].at + i] = source{k}[ranges[{k}].source + i];
    }}
"
        );
    }
    let source = rendered(
        "gather.wgsl",
        GATHER_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("RANGES", &n.to_string()),
            ("SOURCES", &sources),
            ("COPIES", &copies),
        ],
    )?;
    if let Some(slot) = SOURCES.get(n) {
        let _ = slot.set(source);
    }
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::require_gpu_or_skip;
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    #[test]
    fn the_gather_module_validates_for_every_range_count() {
        for n in 1..=MAX_GATHERED {
            let source = gather_source(n).expect("rendered");
            let module = naga::front::wgsl::parse_str(source)
                .unwrap_or_else(|e| panic!("{n} ranges:\n{}", e.emit_to_string(source)));
            Validator::new(ValidationFlags::all(), Capabilities::all())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{n} ranges:\n{}", e.emit_to_string(source)));
        }
    }

    /// Ranges `(buffer index, first word, words)` of `buffers`, read back in one read.
    fn read_back(
        device: &Device,
        buffers: &[Vec<u32>],
        ranges: &[(usize, u64, u64)],
    ) -> Vec<Vec<u32>> {
        let uploaded: Vec<_> = buffers
            .iter()
            .map(|words| device.upload("gather test", words).expect("upload"))
            .collect();
        let raw: Vec<(&wgpu::Buffer, u64, u64)> = ranges
            .iter()
            .map(|&(b, first, words)| (uploaded[b].raw(), first * 4, words * 4))
            .collect();
        device
            .download_ranges(&raw)
            .expect("read back")
            .iter()
            .map(|bytes| bytemuck::pod_collect_to_vec(bytes))
            .collect()
    }

    #[test]
    fn a_read_back_of_many_ranges_brings_each_range_whole_and_in_place() {
        let Some(device) = require_gpu_or_skip() else {
            return;
        };
        let buffers: Vec<Vec<u32>> = (0..5u32)
            .map(|b| (0..1000 + 37 * b).map(|i| b * 1_000_000 + i).collect())
            .collect();
        // Several ranges of one buffer, empty ones, one range past the most one pass binds,
        // ranges of one word and of thousands.
        let mut ranges = vec![
            (0, 0, 1000),
            (1, 5, 0),
            (1, 999, 1),
            (2, 17, 3),
            (0, 500, 2),
        ];
        for k in 0..MAX_GATHERED {
            ranges.push((k % 5, (k * 13) as u64, (k + 1) as u64));
        }
        // The gather writes into the mapped buffer where the device allows it; then again
        // through a device buffer and a copy.
        let into_mapped = device.maps_storage();
        for mapped in [into_mapped, false] {
            device
                .gathers_into_mapped
                .store(mapped, std::sync::atomic::Ordering::Relaxed);
            for count in [1, 2, 3, 4, MAX_GATHERED, MAX_GATHERED + 1, ranges.len()] {
                let ranges = &ranges[..count.min(ranges.len())];
                let read = read_back(&device, &buffers, ranges);
                for (&(b, first, words), got) in ranges.iter().zip(&read) {
                    let want = &buffers[b][first as usize..(first + words) as usize];
                    assert_eq!(
                        got.as_slice(),
                        want,
                        "{count} ranges (gathered into the mapped buffer: {mapped}): \
                         buffer {b} from word {first}"
                    );
                }
            }
        }
    }
}
