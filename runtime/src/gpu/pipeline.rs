//! Compute pipelines (cached by WGSL text and entry point) and the recording of dispatches.

use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::buffer::GpuBuffer;
use super::deferred::TimedWork;
use super::device::Device;
use super::error::{GpuError, Result};

/// How a kernel sees one binding of bind group 0. Bindings are numbered in list order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    StorageRead,
    /// `var<storage, read_write>`.
    StorageReadWrite,
}

/// A compute kernel: its WGSL (already specialised), entry point, and the kinds of its
/// bindings in group 0, in binding order.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec<'a> {
    pub label: &'a str,
    pub source: &'a str,
    pub entry_point: &'a str,
    /// Values of the module's pipeline-overridable constants, by name (unset ones keep their
    /// defaults); a pipeline is compiled per set of values.
    pub constants: &'a [(&'a str, f64)],
    pub bindings: &'a [BindingKind],
}

/// A compiled compute pipeline with its explicit bind group layout.
#[derive(Debug)]
pub struct Pipeline {
    label: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: Vec<BindingKind>,
    /// Bind groups of earlier dispatches (see [`Commands::dispatch`]), most recently used
    /// first.
    bind_groups: Mutex<Vec<CachedBindGroup>>,
}

/// A bind group with the buffers it binds, in binding order.
#[derive(Debug)]
struct CachedBindGroup {
    buffers: Vec<wgpu::Buffer>,
    group: wgpu::BindGroup,
}

/// Bind groups a pipeline keeps: a warm run binds the buffers of the run before (resident
/// columns, the same parameters' uniform, outputs and scratch of the same sizes from the
/// pool), though the pool may hand out its free buffers of one size in another order.
const CACHED_BIND_GROUPS: usize = 8;

impl Pipeline {
    /// The compiled pipeline.
    pub(crate) fn compute(&self) -> &wgpu::ComputePipeline {
        &self.pipeline
    }

    /// A bind group binding `args` whole, in binding order: the one of an earlier call over
    /// the same buffers, or a new one, kept once it validated.
    pub(crate) fn bind_group(&self, device: &Device, args: &[Arg<'_>]) -> Result<wgpu::BindGroup> {
        if let Some(group) = self.cached_bind_group(args) {
            return Ok(group);
        }
        let make_error = |label, message| GpuError::Command { label, message };
        let group = device.capture_errors(&self.label, make_error, || {
            let entries = whole_buffer_entries(args);
            device.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&self.label),
                layout: &self.layout,
                entries: &entries,
            })
        })?;
        self.cache_bind_group(args, &group);
        Ok(group)
    }

    /// The cached bind group of exactly `args`, moved to the front.
    fn cached_bind_group(&self, args: &[Arg<'_>]) -> Option<wgpu::BindGroup> {
        let mut cached = self.bind_groups.lock().ok()?;
        let found = cached.iter().position(|c| {
            c.buffers.len() == args.len() && c.buffers.iter().zip(args).all(|(a, b)| a == *b)
        })?;
        cached[..=found].rotate_right(1);
        Some(cached[0].group.clone())
    }

    /// Remembers `group` as the bind group of `args`, forgetting the least recently used
    /// beyond [`CACHED_BIND_GROUPS`].
    fn cache_bind_group(&self, args: &[Arg<'_>], group: &wgpu::BindGroup) {
        if let Ok(mut cached) = self.bind_groups.lock() {
            cached.truncate(CACHED_BIND_GROUPS - 1);
            cached.insert(
                0,
                CachedBindGroup {
                    buffers: args.iter().map(|b| (*b).clone()).collect(),
                    group: group.clone(),
                },
            );
        }
    }
}

/// A cached pipeline with the WGSL text and entry point it was compiled from.
struct CachedPipeline {
    source: Box<str>,
    entry_point: Box<str>,
    constants: Vec<(Box<str>, f64)>,
    pipeline: Arc<Pipeline>,
}

impl CachedPipeline {
    fn is_for(&self, spec: &KernelSpec<'_>) -> bool {
        self.same_entry(spec) && *self.source == *spec.source
    }

    /// The same entry point, with the same constants.
    fn same_entry(&self, spec: &KernelSpec<'_>) -> bool {
        *self.entry_point == *spec.entry_point
            && self.constants.len() == spec.constants.len()
            && self
                .constants
                .iter()
                .zip(spec.constants)
                .all(|((a, x), (b, y))| **a == **b && x == y)
    }
}

/// Compiled pipelines by WGSL text and entry point. A look-up happens per dispatch, so it
/// neither copies nor hashes the text when it can help it: a text seen before at the same
/// address is found by its address and confirmed by one comparison of the text (none for
/// library modules, rendered once and never freed, see `template::rendered`); otherwise a
/// fast hash of the text picks the bucket, again confirmed by comparing the text.
#[derive(Default)]
pub(crate) struct PipelineCache {
    by_text: FxHashMap<u64, Vec<Arc<CachedPipeline>>>,
    /// With each address, whether the text there is one `template::rendered` made (never
    /// freed, so found at its address without comparing: a library kernel's look-up
    /// compared a text of kilobytes per dispatch).
    by_address: FxHashMap<(usize, usize, u64), (Arc<CachedPipeline>, bool)>,
}

/// Addresses remembered at most: texts of generated kernels come and go, so the map is
/// emptied when it grows past this (the texts stay in `by_text`).
const MAX_ADDRESSES: usize = 4096;

impl PipelineCache {
    fn get(&mut self, spec: &KernelSpec<'_>) -> Option<Arc<Pipeline>> {
        let entry_hash = entry_hash(spec);
        let address = (spec.source.as_ptr() as usize, spec.source.len(), entry_hash);
        if let Some((cached, _)) = self.by_address.get(&address).filter(|(c, rendered)| {
            if *rendered {
                c.same_entry(spec)
            } else {
                c.is_for(spec)
            }
        }) {
            return Some(Arc::clone(&cached.pipeline));
        }
        let text_hash = fast_hash(spec.source.as_bytes(), entry_hash);
        let cached = self
            .by_text
            .get(&text_hash)?
            .iter()
            .find(|c| c.is_for(spec))
            .cloned()?;
        self.remember_address(address, &cached, spec.source);
        Some(Arc::clone(&cached.pipeline))
    }

    /// Adds `pipeline` for `spec` unless one is there already; returns the cached one.
    fn insert(&mut self, spec: &KernelSpec<'_>, pipeline: Arc<Pipeline>) -> Arc<Pipeline> {
        if let Some(existing) = self.get(spec) {
            return existing;
        }
        let entry_hash = entry_hash(spec);
        let address = (spec.source.as_ptr() as usize, spec.source.len(), entry_hash);
        let cached = Arc::new(CachedPipeline {
            source: spec.source.into(),
            entry_point: spec.entry_point.into(),
            constants: spec
                .constants
                .iter()
                .map(|(n, v)| ((*n).into(), *v))
                .collect(),
            pipeline,
        });
        self.by_text
            .entry(fast_hash(spec.source.as_bytes(), entry_hash))
            .or_default()
            .push(Arc::clone(&cached));
        self.remember_address(address, &cached, spec.source);
        Arc::clone(&cached.pipeline)
    }

    fn remember_address(
        &mut self,
        address: (usize, usize, u64),
        cached: &Arc<CachedPipeline>,
        text: &str,
    ) {
        if self.by_address.len() >= MAX_ADDRESSES {
            self.by_address.clear();
        }
        let rendered = super::template::is_rendered(text);
        self.by_address
            .insert(address, (Arc::clone(cached), rendered));
    }

    fn len(&self) -> usize {
        self.by_text.values().map(Vec::len).sum()
    }
}

/// The hash of a spec's entry point and constants, which with its text's address or hash
/// keys the cache.
fn entry_hash(spec: &KernelSpec<'_>) -> u64 {
    spec.constants.iter().fold(
        fast_hash(spec.entry_point.as_bytes(), 0),
        |hash, (name, value)| fast_hash(name.as_bytes(), hash ^ value.to_bits()),
    )
}

/// A fast, non-cryptographic hash of `bytes` (FxHash's multiply-rotate over 8-byte words):
/// a bucket index only, every hit is confirmed by comparing the text.
fn fast_hash(bytes: &[u8], seed: u64) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let mut hash = step(seed, bytes.len() as u64);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        hash = step(hash, u64::from_le_bytes(eight));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    step(hash, u64::from_le_bytes(last))
}

/// The runtime checks naga adds to horsec's shaders: none beyond what the driver enforces.
///
/// Every shader horsec compiles is its own, generated by its code generator or kept in
/// `shaders/`, never text a user wrote, and both keep to rules that make naga's checks
/// redundant (`shaders/README.md`, `codegen::generate`):
/// - **Loops end.** Each is bounded by a length, a count or a constant, and no workgroup
///   waits on another; naga's counter on every loop (`force_loop_bounding`) guards against
///   loops that do not, and kept the shader compiler from unrolling loops of constant trip
///   count.
/// - **Indices stay in range** of the arrays they index, by construction. Storage buffers
///   stay bounded anyway: wgpu turns on the device's robust buffer access, which Vulkan
///   requires of every device, so the driver bounds them. (Where the device has
///   `robustBufferAccess2`, as NVIDIA's does, naga adds no clamps to buffer accesses even
///   when asked: only the clamps of workgroup and private arrays go.)
///
/// Integer division keeps its guards: WGSL defines `x / 0` and `i32::MIN / -1`, and
/// kernels divide by values from the data.
///
/// TPC-H q1 at SF 1 on an H200 (GPU time of its one kernel, three processes each): 94 us
/// checked, 90-91 without the loop counters, 94 without the clamps, 88 without both; the
/// other 21 programs' kernels took 2-10 % less, with byte-identical answers.
fn trusted_runtime_checks() -> wgpu::ShaderRuntimeChecks {
    let mut checks = wgpu::ShaderRuntimeChecks::checked();
    checks.bounds_checks = false;
    checks.force_loop_bounding = false;
    checks
}

impl Device {
    /// Compiles one of horsec's own WGSL modules (see [`trusted_runtime_checks`]).
    pub(crate) fn shader_module(&self, label: &str, source: &str) -> wgpu::ShaderModule {
        let descriptor = wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        // SAFETY: the checks left out are those `trusted_runtime_checks` says every shader
        // of horsec's makes redundant; `source` is one of them, never a user's text.
        unsafe {
            self.device
                .create_shader_module_trusted(descriptor, trusted_runtime_checks())
        }
    }

    /// The pipeline for `spec`, compiled on first use and cached afterwards (keyed by the
    /// WGSL text and entry point, see `PipelineCache`). A shader that naga or the driver
    /// rejects is an error.
    pub fn pipeline(&self, spec: &KernelSpec<'_>) -> Result<Arc<Pipeline>> {
        let _timer = self.costs.pipelines.timer();
        {
            let mut cache = self.pipelines.lock().map_err(|_| poisoned(spec.label))?;
            if let Some(pipeline) = cache.get(spec) {
                return Ok(pipeline);
            }
        }
        // Compile outside the lock: compiling can take a while on a software driver.
        let start = std::time::Instant::now();
        let pipeline = Arc::new(self.compile(spec)?);
        self.pipelines_built.fetch_add(1, Ordering::Relaxed);
        self.pipeline_build_nanos.fetch_add(
            u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let mut cache = self.pipelines.lock().map_err(|_| poisoned(spec.label))?;
        Ok(cache.insert(spec, pipeline))
    }

    /// Pipelines this process compiled, and the time that took.
    pub fn pipelines_built(&self) -> (u32, std::time::Duration) {
        (
            self.pipelines_built.load(Ordering::Relaxed),
            std::time::Duration::from_nanos(self.pipeline_build_nanos.load(Ordering::Relaxed)),
        )
    }

    /// Number of cached pipelines.
    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.lock().map(|c| c.len()).unwrap_or(0)
    }

    fn compile(&self, spec: &KernelSpec<'_>) -> Result<Pipeline> {
        let make_error = |label, message| GpuError::Shader { label, message };
        self.capture_errors(spec.label, make_error, || {
            let module = self.shader_module(spec.label, spec.source);
            let entries: Vec<wgpu::BindGroupLayoutEntry> = spec
                .bindings
                .iter()
                .enumerate()
                .map(|(binding, kind)| wgpu::BindGroupLayoutEntry {
                    binding: binding as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: match kind {
                            BindingKind::Uniform => wgpu::BufferBindingType::Uniform,
                            BindingKind::StorageRead => {
                                wgpu::BufferBindingType::Storage { read_only: true }
                            }
                            BindingKind::StorageReadWrite => {
                                wgpu::BufferBindingType::Storage { read_only: false }
                            }
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(spec.label),
                    entries: &entries,
                });
            let pipeline_layout =
                self.device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(spec.label),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(spec.label),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some(spec.entry_point),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: spec.constants,
                        ..Default::default()
                    },
                    cache: self.wgpu_pipeline_cache(),
                });
            Pipeline {
                label: spec.label.to_string(),
                pipeline,
                layout,
                bindings: spec.bindings.to_vec(),
                bind_groups: Mutex::new(Vec::new()),
            }
        })
    }
}

fn poisoned(label: &str) -> GpuError {
    GpuError::Shader {
        label: label.to_string(),
        message: "the pipeline cache lock was poisoned by a panic".to_string(),
    }
}

/// Compute passes per library submission that get timestamps while profiling.
const LIBRARY_TIMED_PASSES: u32 = 32;

impl Timestamps {
    fn new(device: &Device, label: &str, passes: u32, work: TimedWork) -> Option<Timestamps> {
        if !device.has_timestamps() || passes == 0 {
            return None;
        }
        let set = device.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some(label),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * passes,
        });
        Some(Timestamps {
            set,
            work,
            capacity: passes,
            used: 0,
        })
    }
}

/// One argument of a dispatch: a whole buffer, bound at the kernel's next binding.
pub type Arg<'a> = &'a wgpu::Buffer;

/// Records dispatches, copies and clears for the queue; [`Commands::submit`] hands them to
/// the device, which sends them with its next submission. Dispatches run in recording order,
/// each seeing the writes of the ones before.
///
/// Every `Commands` records into the device's one open encoder (see `Device::record`), so
/// the work of several library steps and launches between two host waits is one command
/// buffer, in the order the host recorded it (a `Commands` created while another records
/// interleaves with it in program order).
pub struct Commands<'d> {
    device: &'d Device,
    label: String,
    /// With [`Commands::timed`] (or while the device profiles): a timestamp pair per
    /// compute pass, up to the set's capacity.
    timestamps: Option<Timestamps>,
    /// Keeps buffers given back while this is open from being reused (see `pool`); its
    /// number also names this `Commands`' compute passes on the shared encoder.
    open: OpenEncoder<'d>,
    /// Bytes of the buffers the recorded work binds or copies: a bound on the memory it
    /// touches, which says how long the device will take over it (see `Device::hold`).
    /// Counted from the last submission this `Commands` made itself (see
    /// [`Commands::dispatch`]).
    work_bytes: u64,
    /// Whether a large dispatch makes the work held so far due for the queue (see
    /// [`Commands::submit_at_first_large_dispatch`]).
    early_submission: bool,
    /// Whether a dispatch of this `Commands` already did: at most once, so that a library
    /// step of many large passes (a sort) is not one submission per pass.
    made_due: bool,
    /// Whether its work, once large, waits for the next step to go to the queue (see
    /// [`Commands::defer_submission`]).
    deferred: bool,
}

/// Counts a `Commands` as open in the buffer pool until its work goes to the queue: handed
/// to the device ([`OpenEncoder::into_held`]) or dropped unsubmitted (what it recorded is
/// in the shared encoder all the same), the device closes it after the next submission.
struct OpenEncoder<'d> {
    device: &'d Device,
    number: Option<u64>,
}

impl<'d> OpenEncoder<'d> {
    fn new(device: &'d Device) -> OpenEncoder<'d> {
        OpenEncoder {
            device,
            number: Some(device.pool.open_encoder()),
        }
    }

    fn id(&self) -> u64 {
        self.number.unwrap_or(u64::MAX)
    }

    /// The pool's number of this encoder, now the device's to close.
    fn into_held(mut self) -> u64 {
        self.number.take().unwrap_or(u64::MAX)
    }
}

impl Drop for OpenEncoder<'_> {
    fn drop(&mut self) {
        if let Some(number) = self.number.take() {
            self.device.end_pass_of(number);
            self.device.retire_unheld(number);
        }
    }
}

/// Timestamp queries around each compute pass of one command buffer.
struct Timestamps {
    set: wgpu::QuerySet,
    work: TimedWork,
    /// Pairs the set holds.
    capacity: u32,
    /// Pairs written so far.
    used: u32,
}

impl<'d> Commands<'d> {
    /// Commands for library kernels; while the device profiles (`--time`), their passes
    /// get timestamps too (as library work).
    pub fn new(device: &'d Device, label: &str) -> Commands<'d> {
        let timestamps = if device.profiling() {
            Timestamps::new(device, label, LIBRARY_TIMED_PASSES, TimedWork::Library)
        } else {
            None
        };
        Commands::with_timestamps(device, label, timestamps)
    }

    fn with_timestamps(
        device: &'d Device,
        label: &str,
        timestamps: Option<Timestamps>,
    ) -> Commands<'d> {
        Commands {
            device,
            label: label.to_string(),
            timestamps,
            open: OpenEncoder::new(device),
            work_bytes: 0,
            early_submission: false,
            made_due: false,
            deferred: false,
        }
    }

    /// Like [`Commands::new`], but while the device profiles the first `passes` compute
    /// passes write GPU timestamps at their start and end (as generated-kernel work), read
    /// when the query finishes ([`Device::drain_gpu_time`]). Without the device feature
    /// `TIMESTAMP_QUERY` this is `new`.
    pub fn timed(device: &'d Device, label: &str, passes: u32) -> Commands<'d> {
        // Only while profiling: reading the timestamps back is one more wait per run, a
        // fifth of q6's time at TPC-H SF 1 on an H100.
        let timestamps = if device.profiling() {
            Timestamps::new(device, label, passes, TimedWork::Kernel)
        } else {
            None
        };
        Commands::with_timestamps(device, label, timestamps)
    }

    /// Records a copy of word 0 of `status` into the device's status log, read with the
    /// next read-back (see `deferred`); the bits of `mask` are errors.
    pub fn log_status(&mut self, status: &wgpu::Buffer, mask: u32) -> Result<()> {
        self.device.record(&self.label, |encoder| {
            self.device.log_status(encoder, status, mask)
        })?
    }

    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// Records one dispatch of `pipeline` over `workgroups` workgroups (in x). Kernels loop
    /// grid-stride over their work, so the count is clamped to
    /// [`Device::max_workgroups_per_dispatch`] (65 535 on most devices) without losing work;
    /// 0 records nothing.
    ///
    /// The bind group of an earlier dispatch of `pipeline` over the same buffers is used
    /// again (creating one costs the host a descriptor set per dispatch; a warm run binds
    /// the buffers of the run before). Every buffer a kernel binds is the device pool's
    /// (values, scratch and parameters, or views of them): a cached bind group keeps its
    /// buffers alive, and the pool destroys the buffers it lets go of, so a cached group
    /// holds no memory the pool does not.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        workgroups: u64,
    ) -> Result<()> {
        if args.len() != pipeline.bindings.len() {
            return Err(GpuError::Command {
                label: pipeline.label.clone(),
                message: format!(
                    "kernel has {} bindings, dispatch passed {} buffers",
                    pipeline.bindings.len(),
                    args.len()
                ),
            });
        }
        let limits = self.device.limits();
        for (buffer, kind) in args.iter().zip(&pipeline.bindings) {
            let limit = match kind {
                BindingKind::Uniform => limits.max_uniform_buffer_binding_size,
                _ => limits.max_storage_buffer_binding_size,
            };
            if buffer.size() > limit {
                return Err(GpuError::BindingTooLarge {
                    label: pipeline.label.clone(),
                    bytes: buffer.size(),
                    limit,
                });
            }
        }
        if workgroups == 0 {
            return Ok(());
        }
        self.work_bytes += args.iter().map(|b| b.size()).sum::<u64>();
        let timer = self.device.costs.encodes.timer();
        let clamped = workgroups.min(u64::from(self.device.max_workgroups_per_dispatch())) as u32;
        let timestamps = &mut self.timestamps;
        let label = &self.label;
        // Only the bind group's creation is checked here: the pass and its commands report
        // their errors when the encoder finishes (wgpu 30 validates recorded commands then,
        // and only a pass begun on a finished encoder errs at once; the shared one is open
        // until the next submission), which the submission checks. A warm run's dispatch,
        // whose bind group is cached, pushes and pops no error scope (some microseconds of
        // host time each).
        let bind_group = pipeline.bind_group(self.device, args)?;
        let begin = |encoder: &mut wgpu::CommandEncoder| {
            let timestamp_writes = match timestamps {
                Some(t) if t.used < t.capacity => {
                    t.used += 1;
                    Some(wgpu::ComputePassTimestampWrites {
                        query_set: &t.set,
                        beginning_of_pass_write_index: Some(2 * (t.used - 1)),
                        end_of_pass_write_index: Some(2 * (t.used - 1) + 1),
                    })
                }
                _ => None,
            };
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(label),
                    timestamp_writes,
                })
                .forget_lifetime()
        };
        self.device
            .record_in_pass(self.open.id(), label, begin, |pass| {
                pass.set_pipeline(&pipeline.pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(clamped, 1, 1);
            })?;
        // The submission below is not encoding.
        drop(timer);
        self.submit_early_when_large()
    }

    /// From now on, the first dispatch that brings the held work to
    /// [`Device::submit_bytes`] makes it due (see `Device::hold`): it goes to the queue
    /// when the next dispatch is recorded, not with the rest of this `Commands` (see
    /// [`Commands::submit`]), so the device starts the large pass while the host records
    /// the small ones after it. wgpu encodes a pass's dispatches when its encoder finishes
    /// (12–17 µs per command buffer on the H100 host), so TPC-H q1's grouped kernel, then
    /// one large pass and three small ones, reached the device only after all four were
    /// encoded. When the read-back of the counts comes next instead (q1's fused kernel is
    /// one pass), its copies join the same submission.
    ///
    /// Only for work whose next submission follows at once (a launch that reads its counts
    /// back right after its passes): the passes after the large one go to the queue with
    /// it. Work whose next submission waits for later host steps keeps its passes
    /// together: a submission reaching an idle device costs more than the encoding saved
    /// (q6 at SF 1 on the H100, a 0.05 ms pass then a small one: 0.11 ms a run with its
    /// passes together, 0.12–0.13 split).
    pub fn submit_at_first_large_dispatch(&mut self) {
        self.early_submission = true;
    }

    /// Its work, once large enough to go to the queue early, becomes due instead (see
    /// `Device::hold`): for a kernel launch, whose next step (often the read-back of its
    /// result) comes at once.
    pub fn defer_submission(&mut self) {
        self.deferred = true;
    }

    fn submit_early_when_large(&mut self) -> Result<()> {
        if !self.early_submission
            || self.made_due
            || self
                .device
                .held_work_bytes()
                .saturating_add(self.work_bytes)
                < self.device.submit_bytes()
        {
            return Ok(());
        }
        self.device.mark_due()?;
        self.made_due = true;
        self.work_bytes = 0;
        Ok(())
    }

    /// Records a clear of the whole of `buffer` (to zeros).
    pub(crate) fn clear(&mut self, buffer: &wgpu::Buffer) -> Result<()> {
        self.work_bytes += buffer.size();
        self.device
            .record(&self.label, |encoder| encoder.clear_buffer(buffer, 0, None))
    }

    /// Records a copy of the whole of `source` into the start of `destination`.
    pub fn copy<T: bytemuck::Pod>(
        &mut self,
        source: &GpuBuffer<T>,
        destination: &wgpu::Buffer,
    ) -> Result<()> {
        self.copy_bytes(source.raw(), 0, destination, 0, source.byte_len())
    }

    /// Copies `bytes` bytes of `source` from byte `from` into `destination` at byte `to`
    /// (offsets and size multiples of 4).
    pub fn copy_bytes(
        &mut self,
        source: &wgpu::Buffer,
        from: u64,
        destination: &wgpu::Buffer,
        to: u64,
        bytes: u64,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.work_bytes += 2 * bytes;
        self.device.record(&self.label, |encoder| {
            encoder.copy_buffer_to_buffer(source, from, destination, to, bytes)
        })
    }

    /// Copies all of `source` into `destination` from byte `offset` on.
    pub fn copy_to_offset<T: bytemuck::Pod>(
        &mut self,
        source: &GpuBuffer<T>,
        destination: &wgpu::Buffer,
        offset: u64,
    ) -> Result<()> {
        self.copy_bytes(source.raw(), 0, destination, offset, source.byte_len())
    }

    /// Hands the recorded work to the device, which sends it to the queue with the next
    /// submission the host needs (`Device::hold`: a read-back, a wait, a flush). It runs
    /// asynchronously; a later download (or [`Device::wait_idle`]) waits for it.
    /// Timestamps go to the device's timestamp log.
    pub fn submit(self) -> Result<()> {
        let Commands {
            device,
            label,
            timestamps,
            open,
            work_bytes,
            early_submission: _,
            made_due,
            deferred,
        } = self;
        device.end_pass_of(open.id());
        if let Some(t) = timestamps.filter(|t| t.used > 0) {
            device.record(&label, |encoder| {
                device.log_timestamps(encoder, &t.set, t.used, t.work)
            })?;
        }
        // Recorded in the shared encoder: errors are reported when it finishes. Once the
        // work was made due, the rest goes to the queue with it or after: its passes bind
        // the large buffers too (a kernel's bindings are the same in every pass), but do
        // little.
        let work_bytes = if made_due { 0 } else { work_bytes };
        device.hold(open.into_held(), work_bytes, deferred)
    }

    /// Submits without waiting: the timestamps are resolved into the device's log and read
    /// when the query finishes ([`Device::drain_gpu_time`]), so this returns None.
    pub fn submit_timed(self) -> Result<Option<std::time::Duration>> {
        self.submit().map(|()| None)
    }
}

/// Bind group entries binding each buffer whole, at bindings 0, 1, … in order.
pub(crate) fn whole_buffer_entries<'b>(
    buffers: &[&'b wgpu::Buffer],
) -> Vec<wgpu::BindGroupEntry<'b>> {
    buffers
        .iter()
        .enumerate()
        .map(|(binding, buffer)| wgpu::BindGroupEntry {
            binding: binding as u32,
            resource: buffer.as_entire_binding(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_shaders_drop_loop_counters_and_clamps_but_keep_the_guards_of_integer_division() {
        let checks = trusted_runtime_checks();
        assert!(!checks.force_loop_bounding);
        assert!(!checks.bounds_checks);
        // Kernels divide by values from the data; WGSL defines those quotients.
        assert!(checks.int_div_checks);
    }
}
