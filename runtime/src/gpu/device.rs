//! Adapter selection and the logical device the GPU layer runs on.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::error::{GpuError, Result};
use super::submission::HeldCommands;
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

/// Native features the kernels and read-backs use when the adapter has them. None is
/// mandatory for the library kernels of today; element types that need one check for it
/// (see `GpuScalar`), and a read-back without `MAPPABLE_PRIMARY_BUFFERS` copies its gather
/// into a staging buffer (see `gather`).
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SHADER_INT64
    .union(wgpu::Features::SHADER_F64)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX)
    .union(wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::PIPELINE_CACHE)
    .union(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);

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
    /// The staging buffer of the last download, for the next one that fits.
    pub(crate) staging: super::buffer::ReusedBuffer,
    /// The device buffer of the last gathered read-back (see `gather`), likewise.
    pub(crate) gathered: super::buffer::ReusedBuffer,
    /// The mappable buffer the last gathered read-back's pass wrote into, likewise (on a
    /// device with `MAPPABLE_PRIMARY_BUFFERS`, see `gather`).
    pub(crate) mapped_gather: super::buffer::ReusedBuffer,
    /// Whether a gather pass writes straight into the buffer the host maps: with
    /// `MAPPABLE_PRIMARY_BUFFERS` (a test turns it off to run the path with a copy).
    pub(crate) gathers_into_mapped: std::sync::atomic::AtomicBool,
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
    pub(super) held: Mutex<HeldCommands>,
    /// Held work that binds or copies this many bytes goes to the queue (see
    /// [`Device::hold`]).
    pub(super) submit_bytes: AtomicU64,
    wait_mode: WaitMode,
    /// Queue submissions made so far, and how many of the first of them are known to have
    /// finished (a wait saw them done): [`Device::wait_idle`] after a read-back that waited
    /// for everything submitted has nothing to wait for, and makes no poll.
    pub(super) submissions: AtomicU64,
    pub(super) finished: AtomicU64,
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
    /// default on GPUs. (A spin-loop hint instead of the yield measured the same on an
    /// H200: TPC-H q6 at SF 1 0.074–0.088 ms against 0.075–0.093 over six processes each.)
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
                        staging: Default::default(),
                        gathered: Default::default(),
                        mapped_gather: Default::default(),
                        gathers_into_mapped: std::sync::atomic::AtomicBool::new(
                            features.contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
                        ),
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
        // Inside the scopes `body`'s errors reach them; an unscoped call's error before
        // this one, not yet taken, is reported here rather than lost.
        let value = self.capture_unscoped(|| label.to_string(), make_error, body);
        // Scopes pop innermost first.
        let validation_error = pollster::block_on(validation.pop());
        let memory_error = pollster::block_on(out_of_memory.pop());
        match validation_error.or(memory_error) {
            Some(error) => Err(make_error(label.to_string(), error.to_string())),
            None => value,
        }
    }

    /// [`Device::capture_errors`] without error scopes: `body`'s errors reach the handler
    /// installed with the device, which keeps the thread's first, and are taken after it
    /// (named by `label`, made only then). For the calls of every warm run (finishing and
    /// submitting the held commands), where pushing and popping two scopes cost some 2,000
    /// host instructions (TPC-H q1 at SF 0.01 on lavapipe, of 100,000 a run); the same
    /// errors are caught either way.
    pub(crate) fn capture_unscoped<R>(
        &self,
        label: impl FnOnce() -> String,
        make_error: fn(String, String) -> GpuError,
        body: impl FnOnce() -> R,
    ) -> Result<R> {
        let value = body();
        match take_uncaptured() {
            Some(message) => Err(make_error(label(), message)),
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
    // wgpu opens the device on queue family 0 (graphics and compute). Measured and rejected:
    // opening it through wgpu-hal on NVIDIA's compute-only family; a dispatch's round trip
    // with its result mapped took 31.6-32.3 µs against 32.8-33.3 (H200, medians of 3,000).
    let (device, queue) =
        pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| e.to_string())?;
    // wgpu calls the handler on the thread whose call erred, for errors outside every error
    // scope of that thread; its default panics.
    device.on_uncaptured_error(std::sync::Arc::new(|error: wgpu::Error| {
        UNCAPTURED.with(|slot| {
            slot.borrow_mut().get_or_insert_with(|| error.to_string());
        });
    }));
    Ok((device, queue, features, limits))
}

thread_local! {
    /// The first wgpu error this thread raised outside an error scope and no check has
    /// taken yet (see [`Device::capture_unscoped`]).
    static UNCAPTURED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Takes this thread's error raised outside error scopes, if any.
fn take_uncaptured() -> Option<String> {
    UNCAPTURED.with(|slot| slot.borrow_mut().take())
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

    #[test]
    fn an_error_outside_error_scopes_is_returned_once_not_a_panic() {
        let Some(device) = require_gpu_or_skip() else {
            return;
        };
        let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffer = |label| {
            device.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        let (from, to) = (buffer("from"), buffer("to"));
        let mut encoder = device
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        // Copies are whole words: 3 bytes is a validation error, reported at `finish`.
        encoder.copy_buffer_to_buffer(&from, 0, &to, 0, 3);
        let make_error = |label, message| GpuError::Command { label, message };
        let finished = device.capture_unscoped(
            || "unaligned copy".to_string(),
            make_error,
            || encoder.finish(),
        );
        match finished {
            Err(GpuError::Command { label, message }) => {
                assert_eq!(label, "unaligned copy");
                assert!(!message.is_empty());
            }
            other => panic!("expected the copy's validation error, got {other:?}"),
        }
        // Taken: the next call on this thread starts clean.
        let next = device.capture_unscoped(|| "nothing".to_string(), make_error, || ());
        assert!(next.is_ok(), "{next:?}");
    }

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
