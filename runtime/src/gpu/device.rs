//! Adapter selection and the logical device the GPU layer runs on.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::error::{GpuError, Result};
use super::template::{
    CPU_ITEMS_PER_THREAD, GPU_ITEMS_PER_THREAD, MAX_ITEMS_PER_THREAD, WORKGROUP_SIZE,
};

/// Environment variable that picks an adapter by a substring of its name (case-insensitive).
pub const ADAPTER_ENV: &str = "HORSEC_ADAPTER";
/// Environment variable that turns a missing adapter in tests into a failure (CI sets it).
pub const REQUIRE_GPU_ENV: &str = "HORSEC_REQUIRE_GPU";
/// Environment variable that lowers the storage binding limit (bytes) the device is opened
/// with, so that tests run the paths of inputs past one binding (10^8 edges on a GPU's
/// 2 GiB) on small inputs; wgpu then enforces the lower limit as it would the real one.
pub const BINDING_LIMIT_ENV: &str = "HORSEC_BINDING_LIMIT";

/// Native features the kernels use when the adapter has them. None is mandatory for the
/// library kernels of today; element types that need one check for it (see `GpuScalar`).
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SHADER_INT64
    .union(wgpu::Features::SHADER_F64)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX)
    .union(wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::PIPELINE_CACHE);

/// A GPU device with its queue, the features and limits it was created with, and the cache
/// of compute pipelines built on it.
pub struct Device {
    // The instance owns the driver connection; keep it alive as long as the device.
    _instance: wgpu::Instance,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    features: wgpu::Features,
    limits: wgpu::Limits,
    pub(crate) pipelines: Mutex<super::pipeline::PipelineCache>,
    /// Cap on workgroups per dispatch below the device limit; 0 means no cap.
    workgroup_cap: AtomicU32,
    /// Elements per invocation in the tiled kernels.
    items_per_thread: AtomicU32,
    /// The staging buffer of the last download, reused by the next one that fits: creating
    /// a mappable buffer of hundreds of megabytes per read-back costs more than the copy.
    pub(crate) staging: Mutex<Option<wgpu::Buffer>>,
    /// String dictionaries already on the device (packed bytes and offsets), keyed by the
    /// dictionary's address; each entry holds the dictionary, so the address stays its own.
    pub(crate) dictionaries: Mutex<Vec<CachedDictionary>>,
    /// `@sub_string`'s dictionaries and code maps per dictionary and range (see
    /// `library::sub_string_dictionary`).
    pub(crate) sub_strings: Mutex<Vec<CachedSubString>>,
    /// Bytes copied host → device and device → host over the device's life, every copy
    /// included (columns, kernel parameters, library kernels' inputs, read-backs).
    uploaded: AtomicU64,
    downloaded: AtomicU64,
    /// Pipelines compiled by this process, and the time that took (a second process finds
    /// them in the pipeline cache and takes less).
    pub(crate) pipelines_built: AtomicU32,
    pub(crate) pipeline_build_nanos: AtomicU64,
    /// Compiled pipelines across processes (see `pipeline_cache`).
    pub(crate) pipeline_cache: Option<super::pipeline_cache::DiskCache>,
    /// The most device memory the allocator held at any [`Device::sample_memory`].
    peak_memory: AtomicU64,
    /// Buffers created (`costs.buffers`) at the last [`Device::sample_memory_if_grown`]
    /// that sampled; `u32::MAX` before the first.
    memory_sampled_at: AtomicU32,
    /// Kernels' status words copied on the device, read with the next read-back (see
    /// `deferred`).
    pub(crate) status_log: super::deferred::PerThread<super::deferred::StatusLog>,
    /// GPU timestamps of submissions, read when a query finishes (see `deferred`).
    pub(crate) timestamp_log: super::deferred::PerThread<super::deferred::TimestampLog>,
    /// Host time by kind of device operation (see [`HostCosts`]).
    pub(crate) costs: super::deferred::CostCounters,
    /// Library kernels' passes get timestamps too (`--time`).
    pub(crate) profiling: std::sync::atomic::AtomicBool,
    /// Storage and uniform buffers for reuse (see `pool`).
    pub(crate) pool: Arc<super::pool::BufferPool>,
    /// Kernel parameters' uniform buffers by their bytes (see `buffer::UniformCache`).
    pub(crate) uniforms: Mutex<super::buffer::UniformCache>,
    /// Buffers holding small uploads' bytes (see `buffer::UploadSources`).
    pub(crate) upload_sources: Mutex<super::buffer::UploadSources>,
    /// Command buffers recorded and not yet submitted (see `Device::hold`), from every
    /// thread: a read on one thread must see what another recorded before handing it a
    /// value, and the order within each thread is kept.
    held: Mutex<HeldCommands>,
    /// Held work that binds or copies this many bytes goes to the queue (see
    /// [`Device::hold`]).
    submit_bytes: AtomicU64,
    wait_mode: WaitMode,
    /// Queue submissions made so far, and how many of the first of them are known to have
    /// finished (a wait saw them done): [`Device::wait_idle`] after a read-back that waited
    /// for everything submitted has nothing to wait for, and makes no poll.
    submissions: AtomicU64,
    finished: AtomicU64,
}

/// Command buffers waiting for the next submission, with their pool encoders.
#[derive(Default)]
struct HeldCommands {
    commands: Vec<wgpu::CommandBuffer>,
    /// The encoder that every [`super::Commands`] and read-back records into until the next
    /// submission, not finished yet: one command buffer per submission instead of one per
    /// library step or launch (each command buffer costs wgpu and the driver host time to
    /// create, finish, submit and reset: on the H100 machine's host, creating and finishing
    /// them was a third of a warm TPC-H q1 run's host time). Finished, its errors reported
    /// under the labels of the work recorded in it, when it goes to the queue.
    open: Option<OpenCommands>,
    /// Pool encoder numbers (see `pool`) of the `Commands` whose work is recorded and that
    /// are done recording: closed once that work has gone to the queue.
    encoders: Vec<u64>,
    /// The sum of their `work_bytes` (see `Device::hold`).
    work_bytes: u64,
}

impl HeldCommands {
    /// Command buffers held, the open one included.
    fn len(&self) -> usize {
        self.commands.len() + usize::from(self.open.is_some())
    }
}

/// The shared open encoder (see `HeldCommands::open`) and the compute pass open on it.
struct OpenCommands {
    /// Declared before `encoder`: a pass must end before its encoder is finished.
    pass: Option<OpenPass>,
    encoder: wgpu::CommandEncoder,
    /// Labels of the work recorded, for errors found when the encoder finishes.
    labels: Labels,
}

/// A compute pass on the shared encoder, and the `Commands` that began it (its id): a run of
/// one `Commands`' dispatches shares a pass (see `Commands::dispatch`), and another's
/// dispatch, or any copy, ends it.
struct OpenPass {
    pass: wgpu::ComputePass<'static>,
    owner: u64,
}

/// The distinct labels of the work in one encoder, the first few named and the rest counted.
#[derive(Default)]
struct Labels {
    named: Vec<String>,
    more: usize,
}

impl Labels {
    const NAMED: usize = 6;

    fn add(&mut self, label: &str) {
        if self.named.iter().any(|l| l == label) {
            return;
        }
        if self.named.len() < Self::NAMED {
            self.named.push(label.to_string());
        } else {
            self.more += 1;
        }
    }

    fn text(&self) -> String {
        let named = self.named.join(", ");
        match self.more {
            0 => named,
            more => format!("{named} and {more} more"),
        }
    }
}

/// Environment variable that sets [`Device::submit_bytes`] (a byte count; 0 submits every
/// command buffer at once).
pub const SUBMIT_BYTES_ENV: &str = "HORSEC_SUBMIT_BYTES";

/// Environment variable that picks how the host waits for the device: `spin` or `block`
/// (see [`WaitMode`]).
pub const WAIT_ENV: &str = "HORSEC_WAIT";

/// How the host waits for submitted work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Polls the device without blocking, yielding the thread between polls, for up to
    /// [`SPIN_LIMIT`], then blocks. A blocking wait on a GPU parks the thread in the driver,
    /// and waking it costs more than the short steps of a query take on the GPU; the
    /// default on GPUs.
    Spin,
    /// Blocks in the driver at once: the default on software adapters (lavapipe), whose
    /// worker threads need the cores a spinning host would take.
    Block,
}

/// The longest a [`WaitMode::Spin`] wait polls before it blocks: long steps lose nothing
/// by blocking, and a host thread spinning through them would only burn a core.
pub const SPIN_LIMIT: std::time::Duration = std::time::Duration::from_millis(5);

/// Default [`Device::submit_bytes`] on a GPU: a queue submission costs the host some tens
/// of microseconds, the time a GPU with 1–3 TB/s of memory bandwidth takes over 64 MiB.
const SUBMIT_BYTES_GPU: u64 = 64 << 20;
/// On a software driver (lavapipe), whose "device" shares the host's cores and memory
/// bandwidth of some 10 GB/s.
const SUBMIT_BYTES_CPU: u64 = 1 << 20;

/// Held command buffers beyond which they are submitted anyway: the buffers given back
/// meanwhile cannot be reused until then.
const MAX_HELD_COMMANDS: usize = 256;

fn poisoned_queue() -> GpuError {
    GpuError::Command {
        label: "submit".to_string(),
        message: "the held command buffers' lock was poisoned by a panic".to_string(),
    }
}

/// Bytes moved between host and device, as counted by [`Device::traffic`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub uploaded: u64,
    pub downloaded: u64,
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;
    fn sub(self, earlier: Traffic) -> Traffic {
        Traffic {
            uploaded: self.uploaded.saturating_sub(earlier.uploaded),
            downloaded: self.downloaded.saturating_sub(earlier.downloaded),
        }
    }
}

/// A string dictionary on the device: its UTF-8 bytes packed into u32 words, and the
/// `n + 1` byte offsets of its strings.
#[derive(Clone)]
pub(crate) struct CachedDictionary {
    pub dict: std::sync::Arc<crate::value::StrDict>,
    pub bytes: std::sync::Arc<super::GpuBuffer<u32>>,
    pub offsets: std::sync::Arc<super::GpuBuffer<u32>>,
}

/// `@sub_string(dict, range)`'s dictionary and the map from `dict`'s codes to its codes.
#[derive(Clone)]
pub(crate) struct CachedSubString {
    pub dict: std::sync::Arc<crate::value::StrDict>,
    pub range: (i64, i64),
    pub result: std::sync::Arc<crate::value::StrDict>,
    pub map: std::sync::Arc<super::GpuBuffer<u32>>,
}

impl Device {
    /// Opens the best adapter: a discrete GPU first, then an integrated one, then anything
    /// else, a software rasterizer (lavapipe) last. `HORSEC_ADAPTER=<substring>` overrides.
    pub fn new() -> Result<Device> {
        let wanted = std::env::var(ADAPTER_ENV).ok().filter(|s| !s.is_empty());
        Device::with_adapter_filter(wanted.as_deref())
    }

    /// Like [`Device::new`], with the adapter name filter given explicitly.
    pub fn with_adapter_filter(wanted: Option<&str>) -> Result<Device> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(|a| a.get_info()).collect();
        let order = rank_adapters(&infos, wanted)?;
        let mut refusals = Vec::new();
        for index in order {
            let Some(adapter) = adapters.get(index) else {
                continue;
            };
            match open_device(adapter) {
                Ok((device, queue, features, limits)) => {
                    let info = adapter.get_info();
                    let items_per_thread = if info.device_type == wgpu::DeviceType::Cpu {
                        CPU_ITEMS_PER_THREAD
                    } else {
                        GPU_ITEMS_PER_THREAD
                    };
                    let pipeline_cache = super::pipeline_cache::open(&device, &info, features);
                    let submit_bytes = std::env::var(SUBMIT_BYTES_ENV)
                        .ok()
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .unwrap_or(if info.device_type == wgpu::DeviceType::Cpu {
                            SUBMIT_BYTES_CPU
                        } else {
                            SUBMIT_BYTES_GPU
                        });
                    let pool = Arc::new(super::pool::BufferPool::new(
                        info.device_type == wgpu::DeviceType::Cpu,
                    ));
                    let wait_mode = match std::env::var(WAIT_ENV).as_deref().map(str::trim) {
                        Ok("spin") => WaitMode::Spin,
                        Ok("block") => WaitMode::Block,
                        _ if info.device_type == wgpu::DeviceType::Cpu => WaitMode::Block,
                        _ => WaitMode::Spin,
                    };
                    return Ok(Device {
                        _instance: instance,
                        device,
                        queue,
                        info,
                        features,
                        limits,
                        pipelines: Mutex::new(Default::default()),
                        workgroup_cap: AtomicU32::new(0),
                        items_per_thread: AtomicU32::new(items_per_thread),
                        staging: Mutex::new(None),
                        dictionaries: Mutex::new(Vec::new()),
                        sub_strings: Mutex::new(Vec::new()),
                        uploaded: AtomicU64::new(0),
                        downloaded: AtomicU64::new(0),
                        pipelines_built: AtomicU32::new(0),
                        pipeline_build_nanos: AtomicU64::new(0),
                        pipeline_cache,
                        peak_memory: AtomicU64::new(0),
                        memory_sampled_at: AtomicU32::new(u32::MAX),
                        status_log: Default::default(),
                        timestamp_log: Default::default(),
                        costs: Default::default(),
                        profiling: Default::default(),
                        pool,
                        uniforms: Default::default(),
                        upload_sources: Default::default(),
                        held: Mutex::new(HeldCommands::default()),
                        submit_bytes: AtomicU64::new(submit_bytes),
                        wait_mode,
                        submissions: AtomicU64::new(0),
                        finished: AtomicU64::new(0),
                    });
                }
                Err(why) => refusals.push(format!("{}: {why}", adapter.get_info().name)),
            }
        }
        Err(GpuError::RequestDevice(refusals.join("; ")))
    }

    /// One line for `--time` output: adapter name, kind, backend and driver.
    pub fn describe(&self) -> String {
        let info = &self.info;
        let driver = [info.driver.as_str(), info.driver_info.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "{} ({}, {:?}, driver {})",
            info.name,
            device_type_name(info.device_type),
            info.backend,
            if driver.is_empty() {
                "unknown"
            } else {
                &driver
            }
        )
    }

    /// The adapter this device runs on.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The native features enabled on this device.
    pub fn features(&self) -> wgpu::Features {
        self.features
    }

    /// The limits this device was created with (the adapter's own limits).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Whether GPU timestamps can be written (feature `TIMESTAMP_QUERY`).
    pub fn has_timestamps(&self) -> bool {
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Fails with [`GpuError::MissingFeature`] unless `feature` is enabled.
    pub fn require_feature(&self, feature: wgpu::Features, what: &str) -> Result<()> {
        if self.features.contains(feature) {
            Ok(())
        } else {
            Err(GpuError::MissingFeature {
                what: what.to_string(),
                feature: format!("{feature:?}"),
            })
        }
    }

    /// Most workgroups one dispatch uses: the device's per-dimension limit, or a lower cap.
    pub fn max_workgroups_per_dispatch(&self) -> u32 {
        let limit = self.limits.max_compute_workgroups_per_dimension;
        match self.workgroup_cap.load(Ordering::Relaxed) {
            0 => limit,
            cap => cap.min(limit),
        }
    }

    /// Caps the workgroups of every later dispatch (`None` lifts the cap). Kernels loop
    /// grid-stride, so results do not change; tests use a small cap to make the loops run
    /// many rounds on small inputs.
    pub fn set_workgroup_cap(&self, cap: Option<u32>) {
        self.workgroup_cap
            .store(cap.unwrap_or(0), Ordering::Relaxed);
    }

    /// Elements each invocation of a tiled kernel (scan, radix sort) handles: by default
    /// [`CPU_ITEMS_PER_THREAD`] on a software driver, [`GPU_ITEMS_PER_THREAD`] elsewhere.
    pub fn items_per_thread(&self) -> u32 {
        self.items_per_thread.load(Ordering::Relaxed)
    }

    /// Elements per tile of the tiled kernels.
    pub fn tile_size(&self) -> u32 {
        WORKGROUP_SIZE * self.items_per_thread()
    }

    /// Sets the elements per invocation of the tiled kernels for later calls (1 to
    /// [`MAX_ITEMS_PER_THREAD`]): a tuning knob per device, and a way for tests to get
    /// many scan levels from small inputs.
    pub fn set_items_per_thread(&self, items: u32) -> Result<()> {
        if !(1..=MAX_ITEMS_PER_THREAD).contains(&items) {
            return Err(GpuError::Command {
                label: "set_items_per_thread".to_string(),
                message: format!(
                    "{items} items per invocation; allowed: 1 to {MAX_ITEMS_PER_THREAD}"
                ),
            });
        }
        self.items_per_thread.store(items, Ordering::Relaxed);
        Ok(())
    }

    /// Every byte copied between host and device so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            uploaded: self.uploaded.load(Ordering::Relaxed),
            downloaded: self.downloaded.load(Ordering::Relaxed),
        }
    }

    /// Device memory held by live allocations now (pooled free buffers included), from the
    /// backend's allocator (Vulkan, DX12; None elsewhere); also raises the peak
    /// [`Device::peak_memory`] reports. Called at step boundaries.
    pub fn sample_memory(&self) -> Option<u64> {
        let bytes = self
            .device
            .generate_allocator_report()?
            .total_allocated_bytes;
        self.peak_memory.fetch_max(bytes, Ordering::Relaxed);
        Some(bytes)
    }

    /// [`Device::sample_memory`] when a buffer was created since the last sample taken
    /// here: memory grows only by allocations, and the allocator's report walks every
    /// allocation (a few microseconds per step of a warm run, which creates none).
    pub fn sample_memory_if_grown(&self) {
        let created = self.costs.buffers.count();
        if self.memory_sampled_at.swap(created, Ordering::Relaxed) != created {
            self.sample_memory();
        }
    }

    /// The most device memory seen by [`Device::sample_memory`] (the engine samples after
    /// every GPU step); None when the backend reports none.
    pub fn peak_memory(&self) -> Option<u64> {
        self.sample_memory()?;
        Some(self.peak_memory.load(Ordering::Relaxed))
    }

    /// How many buffers the pool handed out again, and how many were created, so far.
    pub fn pool_counts(&self) -> super::PoolCounts {
        self.pool.counts()
    }

    /// Bytes of free buffers the pool holds for reuse (part of [`Device::peak_memory`]).
    pub fn pool_free_bytes(&self) -> u64 {
        self.pool.free_bytes()
    }

    /// Runs `record` on the shared open encoder (see `HeldCommands::open`; begun, labelled
    /// `label`, when there is none) after ending the compute pass open on it: for copies,
    /// clears and query resolves, which a pass would keep from the encoder.
    pub(crate) fn record<R>(
        &self,
        label: &str,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> R,
    ) -> Result<R> {
        let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
        let open = self.open_commands(&mut held, label);
        open.pass = None;
        Ok(record(&mut open.encoder))
    }

    /// Runs `record` in the compute pass open on the shared encoder when `owner` (a
    /// `Commands`' id) began it; else ends that pass and records into a new one that `begin`
    /// begins on the encoder.
    pub(crate) fn record_in_pass<R>(
        &self,
        owner: u64,
        label: &str,
        begin: impl FnOnce(&mut wgpu::CommandEncoder) -> wgpu::ComputePass<'static>,
        record: impl FnOnce(&mut wgpu::ComputePass<'static>) -> R,
    ) -> Result<R> {
        let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
        let open = self.open_commands(&mut held, label);
        if open.pass.as_ref().is_none_or(|p| p.owner != owner) {
            open.pass = None;
            open.pass = Some(OpenPass {
                pass: begin(&mut open.encoder),
                owner,
            });
        }
        let pass = open
            .pass
            .as_mut()
            .map(|p| &mut p.pass)
            .ok_or_else(poisoned_queue)?;
        Ok(record(pass))
    }

    /// Ends the compute pass open on the shared encoder if `owner` began it.
    pub(crate) fn end_pass_of(&self, owner: u64) {
        if let Ok(mut held) = self.held.lock() {
            if let Some(open) = held.open.as_mut() {
                if open.pass.as_ref().is_some_and(|p| p.owner == owner) {
                    open.pass = None;
                }
            }
        }
    }

    /// The shared open encoder, begun when there is none, with `label` among its labels.
    fn open_commands<'h>(&self, held: &'h mut HeldCommands, label: &str) -> &'h mut OpenCommands {
        let open = held.open.get_or_insert_with(|| OpenCommands {
            pass: None,
            encoder: self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) }),
            labels: Labels::default(),
        });
        open.labels.add(label);
        open
    }

    /// Holds the work that the `Commands` with pool encoder number `encoder` recorded (see
    /// [`Device::record`]) for the next submission that cannot wait: a read-back, a wait, a
    /// host write into a buffer work may already use ([`Device::write_after_queued`]), or
    /// [`Device::flush`]. One queue submission per run of steps with no host decision costs
    /// the host far less than one per step (each `queue.submit` takes tens of microseconds
    /// on a discrete GPU).
    ///
    /// Holding is safe because everything the host does to device memory meanwhile is
    /// ordered after the held work or cannot touch it: a host write (`queue.write_buffer`)
    /// lands before the next submission's commands, but it only goes into buffers no held
    /// command uses (a buffer given back while held commands may use it stays out of the
    /// pool until they are submitted, see `pool`) or comes after a flush; the pool's pending
    /// clears are only for such buffers too, so they may run ahead of the held work.
    ///
    /// Held work goes to the queue early once the buffers it binds or copies (`work_bytes`,
    /// a bound on the memory it touches) reach [`Device::submit_bytes`]: then the device
    /// has enough to do to make up for a submission, and runs it while the host records
    /// what follows instead of after.
    pub(crate) fn hold(&self, encoder: u64, work_bytes: u64) -> Result<()> {
        let full = {
            let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
            held.encoders.push(encoder);
            held.work_bytes = held.work_bytes.saturating_add(work_bytes);
            held.encoders.len() >= MAX_HELD_COMMANDS
                || held.work_bytes >= self.submit_bytes.load(Ordering::Relaxed)
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// A `Commands` with pool encoder number `encoder` was dropped without
    /// [`Device::hold`]: what it recorded is in the shared encoder and goes to the queue
    /// with it, so its number stays open until then.
    pub(crate) fn retire_unheld(&self, encoder: u64) {
        match self.held.lock() {
            Ok(mut held) => held.encoders.push(encoder),
            Err(_) => self.pool.close_encoders(&[encoder]),
        }
    }

    /// Sends every held command buffer (see `Device::hold`) to the queue now, after the
    /// pool's pending clears. Work submitted runs asynchronously.
    pub fn flush(&self) -> Result<()> {
        self.submit_with_held(None).map(|_| ())
    }

    /// Submits `commands` now, after the held command buffers and the pool's pending
    /// clears, in one queue submission: for work the host waits on next (read-backs).
    pub(crate) fn submit(&self, commands: wgpu::CommandBuffer) {
        self.submit_indexed(commands);
    }

    /// [`Device::submit`], returning the submission's index (for a wait on it alone).
    pub(crate) fn submit_indexed(&self, commands: wgpu::CommandBuffer) -> wgpu::SubmissionIndex {
        self.submit_numbered(commands).0
    }

    /// [`Device::submit_indexed`], with the submission's number for
    /// [`Device::finished_through`].
    pub(crate) fn submit_numbered(
        &self,
        commands: wgpu::CommandBuffer,
    ) -> (wgpu::SubmissionIndex, u64) {
        match self.submit_with_held(Some(commands)) {
            Ok(Some(submitted)) => submitted,
            // Not reached: there was a command buffer to submit, and the held list's lock
            // is poisoned only by a panic elsewhere.
            Ok(None) | Err(_) => {
                let index = self.queue.submit([]);
                (index, self.count_submission())
            }
        }
    }

    /// Counts a queue submission just made; returns its number (from 1).
    fn count_submission(&self) -> u64 {
        self.submissions.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A wait saw submission `number` (see [`Device::submit_numbered`]) finished, and with
    /// it every submission before (the queue runs them in order).
    pub(crate) fn finished_through(&self, number: u64) {
        self.finished.fetch_max(number, Ordering::SeqCst);
    }

    /// Finishes the shared open encoder (see `HeldCommands::open`), its pass ended first,
    /// capturing its errors under the labels of the work in it.
    fn finish_held(&self, open: OpenCommands) -> Result<wgpu::CommandBuffer> {
        let OpenCommands {
            pass,
            encoder,
            labels,
        } = open;
        drop(pass);
        let make_error = |label, message| GpuError::Command { label, message };
        self.capture_errors(&labels.text(), make_error, || encoder.finish())
    }

    /// One queue submission of the pending clears, the held command buffers and `last`, with
    /// its number (see [`Device::submit_numbered`]); None when there was nothing to submit.
    fn submit_with_held(
        &self,
        last: Option<wgpu::CommandBuffer>,
    ) -> Result<Option<(wgpu::SubmissionIndex, u64)>> {
        // Taking the clears and the held buffers and submitting them is one step for all
        // threads: a clear taken by one thread but submitted after another thread's work
        // would wipe that work.
        let (submitted, encoders) = {
            let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
            if let Some(open) = held.open.take() {
                let finished = self.finish_held(open)?;
                held.commands.push(finished);
            }
            let clears = self.pool.take_clears();
            if clears.is_none() && held.commands.is_empty() && last.is_none() {
                return Ok(None);
            }
            let submitted = self.submit_locked(&mut held, clears, last);
            (submitted, std::mem::take(&mut held.encoders))
        };
        // Submitted: buffers given back while these were open may be reused now.
        self.pool.close_encoders(&encoders);
        Ok(Some(submitted))
    }

    /// Submits `clears`, the finished held command buffers and `last` (the held list's lock
    /// taken); the submission's index and number.
    fn submit_locked(
        &self,
        held: &mut HeldCommands,
        clears: Option<wgpu::CommandBuffer>,
        last: Option<wgpu::CommandBuffer>,
    ) -> (wgpu::SubmissionIndex, u64) {
        let count =
            usize::from(clears.is_some()) + held.commands.len() + usize::from(last.is_some());
        self.costs
            .command_buffers
            .count_n(u32::try_from(count).unwrap_or(u32::MAX));
        let buffers = clears
            .into_iter()
            .chain(held.commands.drain(..))
            .chain(last);
        let index = self.costs.submits.time(|| self.queue.submit(buffers));
        let number = self.count_submission();
        held.work_bytes = 0;
        (index, number)
    }

    /// Records work with `record` after everything held, into the held commands left open
    /// (or a new encoder labelled `label` when there are none), and submits it all now in
    /// one submission after the pool's pending clears: for a read-back's copies, which the
    /// host waits on next. Returns what `record` returned and the submission's number (see
    /// [`Device::finished_through`]).
    pub(crate) fn submit_recorded<R>(
        &self,
        label: &str,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> R,
    ) -> Result<(R, u64)> {
        let (value, number, encoders) = {
            let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
            let mut open =
                match held.open.take() {
                    Some(open) => open,
                    None => OpenCommands {
                        pass: None,
                        encoder: self.device.create_command_encoder(
                            &wgpu::CommandEncoderDescriptor { label: Some(label) },
                        ),
                        labels: Labels::default(),
                    },
                };
            open.labels.add(label);
            open.pass = None;
            let value = record(&mut open.encoder);
            let last = self.finish_held(open)?;
            // After the open commands are finished: a failure above leaves the clears for
            // the next submission.
            let clears = self.pool.take_clears();
            let (_, number) = self.submit_locked(&mut held, clears, Some(last));
            (value, number, std::mem::take(&mut held.encoders))
        };
        self.pool.close_encoders(&encoders);
        Ok((value, number))
    }

    /// Bytes of work (buffers bound or copied) held command buffers reach before they go
    /// to the queue without waiting for a read-back (see `Device::hold`).
    pub fn submit_bytes(&self) -> u64 {
        self.submit_bytes.load(Ordering::Relaxed)
    }

    /// Sets [`Device::submit_bytes`] for later work (0: every command buffer goes to the
    /// queue at once, as tests of the unbatched order want).
    pub fn set_submit_bytes(&self, bytes: u64) {
        self.submit_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Command buffers held for the next submission.
    pub fn held_commands(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
    }

    /// Writes `bytes` into `buffer` at `offset` from the host, after every command already
    /// recorded: the held command buffers go to the queue first, since a host write lands
    /// before the commands of the next submission (for a buffer rewritten in place, such as
    /// parameters between batches).
    pub(crate) fn write_after_queued(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        bytes: &[u8],
    ) -> Result<()> {
        self.flush()?;
        self.queue.write_buffer(buffer, offset, bytes);
        Ok(())
    }

    /// Submits the pool's pending clears now when one is for `buffer`. A write from the
    /// host (`queue.write_buffer`) lands before the commands of the next submission, so a
    /// clear still pending for the buffer (a zeroed buffer dropped unused and handed out
    /// again for an upload) would wipe what was written: a host write into a buffer from
    /// the pool comes after this.
    pub(crate) fn submit_clears_of(&self, buffer: &wgpu::Buffer) {
        if !self.pool.clear_pending(buffer) {
            return;
        }
        let Ok(_held) = self.held.lock() else {
            return;
        };
        // The clears may run ahead of the held work: they are for buffers it does not use.
        if let Some(clears) = self.pool.take_clears() {
            self.costs.submits.time(|| self.queue.submit([clears]));
            self.costs.command_buffers.count_n(1);
            self.count_submission();
        }
    }

    /// Counts `bytes` written from the host into device memory (every upload path calls it).
    pub(crate) fn count_upload(&self, bytes: u64) {
        self.uploaded.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` read from device memory back to the host (every read-back calls it).
    pub(crate) fn count_download(&self, bytes: u64) {
        self.downloaded.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Submits the held work and blocks until all submitted work has finished (counted as
    /// a host wait). Without a submission since a wait saw every earlier one finished (a
    /// query's last read-back, see `Device::finished_through`), there is nothing to wait
    /// for and no poll is made.
    pub fn wait_idle(&self) -> Result<()> {
        self.flush()?;
        let submitted = self.submissions.load(Ordering::SeqCst);
        if self.finished.load(Ordering::SeqCst) >= submitted {
            return Ok(());
        }
        let start = std::time::Instant::now();
        let waited = self.wait_until(None, || {
            self.device
                .poll(wgpu::PollType::Poll)
                .map(|status| status.is_queue_empty().then_some(()))
        });
        self.costs.waits.add(start.elapsed());
        waited?;
        self.finished_through(submitted);
        Ok(())
    }

    /// Blocks until a buffer mapping requested with `map_async` (whose callback sends to
    /// `receiver`) is done; `index` is the submission it waits for (None: every
    /// submission). Counted as a host wait.
    pub(crate) fn wait_for_map(
        &self,
        receiver: &std::sync::mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
        index: Option<wgpu::SubmissionIndex>,
    ) -> Result<()> {
        let start = std::time::Instant::now();
        let mapped = self.wait_until(index, || {
            self.device
                .poll(wgpu::PollType::Poll)
                .map(|_| receiver.try_recv().ok())
        });
        self.costs.waits.add(start.elapsed());
        let mapped = match mapped? {
            Some(mapped) => mapped,
            None => receiver
                .recv()
                .map_err(|e| GpuError::Readback(e.to_string()))?,
        };
        mapped.map_err(|e| GpuError::Readback(e.to_string()))
    }

    /// Waits as [`Device::wait_mode`] says: in [`WaitMode::Spin`], calls `done` (which polls
    /// the device without blocking) until it gives a value, yielding the thread between
    /// calls, for up to [`SPIN_LIMIT`]; then, or at once in [`WaitMode::Block`], blocks
    /// until submission `index` (None: every submission) has finished and its callbacks
    /// have run, and gives None. Polls never wait with a timeout: wgpu 30 asserts (and
    /// panics) when another thread's poll empties the queue during a timed wait.
    fn wait_until<T>(
        &self,
        index: Option<wgpu::SubmissionIndex>,
        mut done: impl FnMut() -> std::result::Result<Option<T>, wgpu::PollError>,
    ) -> Result<Option<T>> {
        let error = |e: wgpu::PollError| GpuError::Readback(e.to_string());
        if self.wait_mode == WaitMode::Spin {
            let start = std::time::Instant::now();
            while start.elapsed() < SPIN_LIMIT {
                if let Some(value) = done().map_err(error)? {
                    return Ok(Some(value));
                }
                std::thread::yield_now();
            }
        }
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: index,
                timeout: None,
            })
            .map_err(error)?;
        Ok(None)
    }

    /// How the host waits for the device (see [`WAIT_ENV`]).
    pub fn wait_mode(&self) -> WaitMode {
        self.wait_mode
    }

    /// Runs `body` with wgpu's validation and out-of-memory errors captured instead of
    /// reaching the default handler (which panics); a captured error becomes `make_error`.
    pub(crate) fn capture_errors<R>(
        &self,
        label: &str,
        make_error: fn(String, String) -> GpuError,
        body: impl FnOnce() -> R,
    ) -> Result<R> {
        let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = body();
        // Scopes pop innermost first.
        let validation_error = pollster::block_on(validation.pop());
        let memory_error = pollster::block_on(out_of_memory.pop());
        match validation_error.or(memory_error) {
            Some(error) => Err(make_error(label.to_string(), error.to_string())),
            None => Ok(value),
        }
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("adapter", &self.describe())
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

type OpenDevice = (wgpu::Device, wgpu::Queue, wgpu::Features, wgpu::Limits);

fn open_device(adapter: &wgpu::Adapter) -> std::result::Result<OpenDevice, String> {
    let features = adapter.features() & OPTIONAL_FEATURES;
    // Ask for the adapter's real limits: the defaults are WebGPU's portable minimums
    // (e.g. 128 MiB bindings, 8 storage buffers per stage), far below a real GPU.
    let mut limits = adapter.limits();
    if let Some(bytes) = std::env::var(BINDING_LIMIT_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        // Bindings are whole words.
        let bytes = (bytes & !3).max(4);
        limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(bytes);
    }
    let descriptor = wgpu::DeviceDescriptor {
        label: Some("horsec"),
        required_features: features,
        required_limits: limits.clone(),
        ..Default::default()
    };
    let (device, queue) =
        pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| e.to_string())?;
    Ok((device, queue, features, limits))
}

/// Preference of a device type: lower is better.
fn device_type_rank(device_type: wgpu::DeviceType) -> u8 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

fn device_type_name(device_type: wgpu::DeviceType) -> &'static str {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Other => "other",
        wgpu::DeviceType::Cpu => "CPU",
    }
}

/// Indexes of the adapters to try, best first. With `wanted`, only adapters whose name
/// contains it (case-insensitive) qualify. The GL backend is never used: it lacks the
/// 64-bit integers and storage limits the kernels assume.
pub(crate) fn rank_adapters(
    infos: &[wgpu::AdapterInfo],
    wanted: Option<&str>,
) -> Result<Vec<usize>> {
    let wanted_lower = wanted.map(str::to_lowercase);
    let mut candidates: Vec<usize> = (0..infos.len())
        .filter(|&i| infos[i].backend != wgpu::Backend::Gl)
        .filter(|&i| match &wanted_lower {
            Some(w) => infos[i].name.to_lowercase().contains(w.as_str()),
            None => true,
        })
        .collect();
    if candidates.is_empty() {
        let names: Vec<String> = infos
            .iter()
            .map(|i| format!("{} ({:?})", i.name, i.backend))
            .collect();
        return Err(GpuError::NoAdapter(match wanted {
            Some(w) => format!(
                "no adapter name contains `{w}` (--adapter or {ADAPTER_ENV}); available: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
            None if names.is_empty() => {
                "no Vulkan, Metal or DX12 adapter found (on Linux without a GPU, install \
                 Mesa's lavapipe: apt-get install mesa-vulkan-drivers libvulkan1)"
                    .to_string()
            }
            None => format!("no usable adapter among: {}", names.join(", ")),
        }));
    }
    // Stable sort keeps the driver's order within one device type.
    candidates.sort_by_key(|&i| device_type_rank(infos[i].device_type));
    Ok(candidates)
}

/// For GPU tests: the device, or `None` after printing "SKIPPED: no GPU adapter" when the
/// machine has none. With `HORSEC_REQUIRE_GPU=1` a missing adapter panics instead, so CI
/// cannot pass by skipping. Any other failure to open the device always panics: it is a bug
/// or a broken driver, not a missing GPU.
pub fn require_gpu_or_skip() -> Option<Device> {
    match Device::new() {
        Ok(device) => Some(device),
        Err(GpuError::NoAdapter(why)) => {
            if std::env::var(REQUIRE_GPU_ENV).is_ok_and(|v| v == "1") {
                panic!("{REQUIRE_GPU_ENV}=1 but there is no GPU adapter: {why}");
            }
            eprintln!("SKIPPED: no GPU adapter ({why})");
            None
        }
        Err(other) => panic!("a GPU adapter exists but could not be opened: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(
        name: &str,
        device_type: wgpu::DeviceType,
        backend: wgpu::Backend,
    ) -> wgpu::AdapterInfo {
        wgpu::AdapterInfo {
            name: name.to_string(),
            ..wgpu::AdapterInfo::new(device_type, backend)
        }
    }

    #[test]
    fn discrete_beats_integrated_beats_software() {
        let infos = [
            info(
                "llvmpipe (LLVM 15)",
                wgpu::DeviceType::Cpu,
                wgpu::Backend::Vulkan,
            ),
            info(
                "Intel UHD",
                wgpu::DeviceType::IntegratedGpu,
                wgpu::Backend::Vulkan,
            ),
            info(
                "NVIDIA H100",
                wgpu::DeviceType::DiscreteGpu,
                wgpu::Backend::Vulkan,
            ),
        ];
        assert_eq!(rank_adapters(&infos, None).ok(), Some(vec![2, 1, 0]));
    }

    #[test]
    fn env_filter_picks_by_case_insensitive_substring() {
        let infos = [
            info(
                "NVIDIA H100",
                wgpu::DeviceType::DiscreteGpu,
                wgpu::Backend::Vulkan,
            ),
            info(
                "llvmpipe (LLVM 15)",
                wgpu::DeviceType::Cpu,
                wgpu::Backend::Vulkan,
            ),
        ];
        assert_eq!(rank_adapters(&infos, Some("LLVMPIPE")).ok(), Some(vec![1]));
    }

    #[test]
    fn unmatched_filter_lists_what_exists() {
        let infos = [info(
            "llvmpipe",
            wgpu::DeviceType::Cpu,
            wgpu::Backend::Vulkan,
        )];
        let error = rank_adapters(&infos, Some("h100"))
            .err()
            .map(|e| e.to_string());
        let message = error.unwrap_or_default();
        assert!(
            message.contains("h100") && message.contains("llvmpipe"),
            "{message}"
        );
    }

    #[test]
    fn no_adapter_at_all_is_a_no_adapter_error() {
        assert!(matches!(
            rank_adapters(&[], None),
            Err(GpuError::NoAdapter(_))
        ));
    }

    #[test]
    fn gl_adapters_are_never_chosen() {
        let infos = [info(
            "Mesa GL",
            wgpu::DeviceType::IntegratedGpu,
            wgpu::Backend::Gl,
        )];
        assert!(matches!(
            rank_adapters(&infos, None),
            Err(GpuError::NoAdapter(_))
        ));
    }
}
