//! Work the host reads later instead of waiting for it now: kernels' status words and GPU
//! timestamps are copied into device-side logs inside the submissions that produce them, and
//! read back together with the next read-back the host makes anyway (a count that sizes an
//! allocation, a scalar that steers control flow, the result), or when a query finishes.
//! Also the host-time counters of device operations that `bench --time` reports.

use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

use std::time::{Duration, Instant};

use super::device::Device;
use super::error::{GpuError, Result};

/// Status words the log holds between two reads. A query's launches log one word per
/// status scratch; the engine settles the log before it fills (see [`Device::status_room`]).
pub const STATUS_LOG_WORDS: usize = 1 << 16;

/// Bytes of a thread's timestamp log: 4 Ki regions of 256 bytes (one resolve each, one per
/// submission; a submission beyond them goes untimed).
const TIMESTAMP_LOG_BYTES: u64 = 1 << 20;
/// `resolve_query_set` writes at offsets that are multiples of this.
const RESOLVE_ALIGNMENT: u64 = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;

/// One `T` per thread: every engine runs its queries on one thread, and several engines may
/// share a device (tests run in parallel), so each thread's logs are its own.
pub(crate) struct PerThread<T> {
    by_thread: Mutex<FxHashMap<ThreadId, T>>,
}

impl<T> Default for PerThread<T> {
    fn default() -> Self {
        PerThread {
            by_thread: Mutex::new(FxHashMap::default()),
        }
    }
}

impl<T: Default> PerThread<T> {
    /// Runs `body` on this thread's `T`.
    pub(crate) fn with<R>(&self, body: impl FnOnce(&mut T) -> R) -> Result<R> {
        let mut map = self
            .by_thread
            .lock()
            .map_err(|_| GpuError::Readback("a device log lock was poisoned".to_string()))?;
        Ok(body(map.entry(this_thread()).or_default()))
    }

    /// Drops this thread's `T`.
    fn remove(&self) -> Result<()> {
        let mut map = self
            .by_thread
            .lock()
            .map_err(|_| GpuError::Readback("a device log lock was poisoned".to_string()))?;
        map.remove(&this_thread());
        Ok(())
    }
}

/// The calling thread's id, kept per thread: `std::thread::current()` clones the thread's
/// handle on every call, and the logs are looked up several times per launch and read-back.
fn this_thread() -> ThreadId {
    thread_local! {
        static ID: ThreadId = std::thread::current().id();
    }
    ID.with(|id| *id)
}

/// Kernels' status words on their way to the host: `masks[k]` says which bits of the k-th
/// logged word are errors; `read` holds the words already read back and not yet taken.
#[derive(Default)]
pub(crate) struct StatusLog {
    buffer: Option<wgpu::Buffer>,
    masks: Vec<u32>,
    read: Vec<u32>,
    /// True when a word already read has an error bit set: every later read fails until
    /// the engine takes the words (the data it would return may be a failed kernel's).
    failed: bool,
}

/// The status words a read-back brings after its data (see `Device::take_status_read`).
pub(crate) struct StatusRead {
    /// The buffer holding them and their bytes (None while none is on the device).
    pub source: Option<(wgpu::Buffer, u64)>,
    /// Their offset in the staging buffer.
    pub offset: u64,
    /// Their masks, to check them against once read.
    pub masks: Vec<u32>,
}

/// Which steps a timestamp pair belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimedWork {
    /// Generated kernels.
    Kernel,
    /// Library kernels (sort, group, join, …), timed only while profiling.
    Library,
}

/// GPU timestamps of submissions: per resolve, its region's offset, pairs and kind.
#[derive(Default)]
pub(crate) struct TimestampLog {
    buffer: Option<wgpu::Buffer>,
    /// Where each resolved region is copied in the same submission, for the host to map
    /// when the query finishes: reading the timestamps is then one mapping of work already
    /// done, not a copy submitted and waited for after the query's last read-back (38 us
    /// of q1's time at TPC-H SF 1 on an H200 under `--time`, listed as outside steps).
    readable: Option<wgpu::Buffer>,
    regions: Vec<(u64, u32, TimedWork)>,
    used_bytes: u64,
}

/// GPU time by timestamps, per kind of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuTime {
    pub kernels: Duration,
    pub library: Duration,
}

/// A count and a total time.
#[derive(Default)]
pub(crate) struct Counter {
    count: AtomicU32,
    nanos: AtomicU64,
}

impl Counter {
    /// Counts `n` operations that take no time of their own.
    pub(crate) fn count_n(&self, n: u32) {
        self.count.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, time: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(
            u64::try_from(time.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// A guard that adds the time until it drops.
    pub(crate) fn timer(&self) -> CounterTimer<'_> {
        CounterTimer {
            counter: self,
            start: Instant::now(),
        }
    }

    /// Times `body` into this counter.
    pub(crate) fn time<R>(&self, body: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let value = body();
        self.add(start.elapsed());
        value
    }

    /// Operations counted so far.
    pub(crate) fn count(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    fn get(&self) -> (u32, Duration) {
        (
            self.count.load(Ordering::Relaxed),
            Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
        )
    }
}

/// Adds the time from its creation to its drop to a [`Counter`].
pub(crate) struct CounterTimer<'c> {
    counter: &'c Counter,
    start: Instant,
}

impl Drop for CounterTimer<'_> {
    fn drop(&mut self) {
        self.counter.add(self.start.elapsed());
    }
}

/// Host time of device operations, over the device's life.
#[derive(Default)]
pub(crate) struct CostCounters {
    /// Blocking waits for the device (read-backs, `wait_idle`).
    pub waits: Counter,
    /// Buffers created (storage, uniform, staging).
    pub buffers: Counter,
    /// Dispatches recorded (bind group and pass).
    pub encodes: Counter,
    /// Queue submissions.
    pub submits: Counter,
    /// Command buffers submitted (each costs wgpu and the driver host time to create,
    /// finish, submit and reset once done); no time.
    pub command_buffers: Counter,
    /// Pipeline look-ups in the cache (and compilations on a miss).
    pub pipelines: Counter,
}

/// A snapshot of the host-time counters: (operations, time) per kind. Differences of two
/// snapshots give one run's costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCosts {
    pub waits: (u32, Duration),
    pub buffers: (u32, Duration),
    pub encodes: (u32, Duration),
    pub submits: (u32, Duration),
    pub pipelines: (u32, Duration),
    /// Command buffers submitted (no time).
    pub command_buffers: u32,
}

impl std::ops::Sub for HostCosts {
    type Output = HostCosts;
    fn sub(self, earlier: HostCosts) -> HostCosts {
        let d = |a: (u32, Duration), b: (u32, Duration)| {
            (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1))
        };
        HostCosts {
            waits: d(self.waits, earlier.waits),
            buffers: d(self.buffers, earlier.buffers),
            encodes: d(self.encodes, earlier.encodes),
            submits: d(self.submits, earlier.submits),
            pipelines: d(self.pipelines, earlier.pipelines),
            command_buffers: self.command_buffers.saturating_sub(earlier.command_buffers),
        }
    }
}

/// The error a read-back returns when a status word read with it shows a kernel error: the
/// engine replaces it with that kernel's own message (`engine::status`).
pub const KERNEL_FAILED: &str = "a kernel submitted earlier reported an error";

impl Device {
    /// Host-time counters so far.
    pub fn host_costs(&self) -> HostCosts {
        let c = &self.costs;
        HostCosts {
            waits: c.waits.get(),
            buffers: c.buffers.get(),
            encodes: c.encodes.get(),
            submits: c.submits.get(),
            pipelines: c.pipelines.get(),
            command_buffers: c.command_buffers.count(),
        }
    }

    /// Turns timestamps around library kernels' passes on or off (`--time`): they cost a
    /// query set per submission, so plain runs go without.
    pub fn set_profiling(&self, on: bool) {
        self.profiling
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn profiling(&self) -> bool {
        self.profiling.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records, into `encoder`, a copy of word 0 of `status` into this thread's status
    /// log; the bits of `mask` are errors. Fails when the log is full (see
    /// [`Device::status_room`]).
    pub(crate) fn log_status(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        status: &wgpu::Buffer,
        mask: u32,
    ) -> Result<()> {
        self.status_log.with(|log| {
            if log.masks.len() >= STATUS_LOG_WORDS {
                return Err(GpuError::Readback(
                    "the status log is full: read it back first".to_string(),
                ));
            }
            let buffer = log.buffer.get_or_insert_with(|| {
                self.costs.buffers.time(|| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("status log"),
                        size: (STATUS_LOG_WORDS * 4) as u64,
                        usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })
            });
            let at = (log.masks.len() * 4) as u64;
            encoder.copy_buffer_to_buffer(status, 0, buffer, at, 4);
            log.masks.push(mask);
            Ok(())
        })?
    }

    /// Status words this thread's log can still take before it must be read.
    pub fn status_room(&self) -> usize {
        self.status_log
            .with(|log| STATUS_LOG_WORDS - log.masks.len())
            .unwrap_or(0)
    }

    /// The status words read back since the last call, in logging order, and clears the
    /// failure mark; with `read_all`, first reads back the ones still on the device. Never
    /// fails because of a word's error bits: the caller interprets them.
    pub fn take_status_words(&self, read_all: bool) -> Result<Vec<u32>> {
        let on_device = self.status_log.with(|log| log.masks.len())?;
        if read_all && on_device > 0 {
            // Error bits are the caller's to interpret; a read that failed outright leaves
            // fewer words than the caller logged, which it reports.
            let _ = self.read_status_log();
        }
        self.status_log.with(|log| {
            log.failed = false;
            std::mem::take(&mut log.read)
        })
    }

    /// Forgets every status word this thread logged or read (a new engine starts clean).
    pub fn reset_status_log(&self) {
        let _ = self.status_log.with(|log| {
            log.masks.clear();
            log.read.clear();
            log.failed = false;
        });
    }

    /// Drops this thread's logs and their buffers (an engine that is done).
    pub fn forget_thread_logs(&self) {
        let _ = self.status_log.remove();
        let _ = self.timestamp_log.remove();
    }

    /// For a read-back of `bytes`: takes this thread's logged status words, to be read
    /// after the data. The staging buffer must hold `status_copy_bytes` more.
    pub(crate) fn take_status_read(&self, bytes: u64) -> Result<Option<StatusRead>> {
        self.status_log.with(|log| {
            if log.masks.is_empty() {
                return None;
            }
            let words = log.masks.len() as u64;
            Some(StatusRead {
                source: log.buffer.clone().map(|buffer| (buffer, words * 4)),
                offset: bytes.next_multiple_of(4),
                masks: std::mem::take(&mut log.masks),
            })
        })
    }

    /// Bytes the status copy of the next read-back adds (with alignment).
    pub(crate) fn status_copy_bytes(&self) -> u64 {
        self.status_log
            .with(|log| {
                if log.masks.is_empty() {
                    0
                } else {
                    4 + (log.masks.len() * 4) as u64
                }
            })
            .unwrap_or(0)
    }

    /// Takes the status words a read-back brought (`words`, checked against `masks`); an
    /// error bit makes this and every later read fail until [`Device::take_status_words`].
    pub(crate) fn status_read(&self, words: &[u32], masks: &[u32]) -> Result<()> {
        let failed = self.status_log.with(|log| {
            log.read.extend_from_slice(words);
            if words.iter().zip(masks).any(|(w, m)| w & m != 0) {
                log.failed = true;
            }
            log.failed
        })?;
        if failed {
            return Err(GpuError::Readback(KERNEL_FAILED.to_string()));
        }
        Ok(())
    }

    /// True while a status word read shows an error the engine has not taken.
    pub(crate) fn status_failed(&self) -> bool {
        self.status_log.with(|log| log.failed).unwrap_or(true)
    }

    /// Resolves `pairs` timestamp pairs of `set` into this thread's timestamp log, recorded
    /// in `encoder` (no wait); false when the log has no room (the submission goes untimed).
    pub(crate) fn log_timestamps(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        set: &wgpu::QuerySet,
        pairs: u32,
        work: TimedWork,
    ) -> bool {
        self.timestamp_log
            .with(|log| {
                let bytes = (u64::from(pairs) * 16).next_multiple_of(RESOLVE_ALIGNMENT);
                if log.used_bytes + bytes > TIMESTAMP_LOG_BYTES {
                    return false;
                }
                let make = |label: &str, usage: wgpu::BufferUsages| {
                    self.costs.buffers.time(|| {
                        self.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some(label),
                            size: TIMESTAMP_LOG_BYTES,
                            usage,
                            mapped_at_creation: false,
                        })
                    })
                };
                let buffer = log.buffer.get_or_insert_with(|| {
                    make(
                        "timestamp log",
                        wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    )
                });
                let readable = log.readable.get_or_insert_with(|| {
                    make(
                        "timestamp log, host-readable",
                        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    )
                });
                let at = log.used_bytes;
                encoder.resolve_query_set(set, 0..2 * pairs, buffer, at);
                encoder.copy_buffer_to_buffer(buffer, at, readable, at, bytes);
                log.regions.push((at, pairs, work));
                log.used_bytes += bytes;
                true
            })
            .unwrap_or(false)
    }

    /// The GPU time of every timed submission since the last call (one read-back), by kind.
    pub fn drain_gpu_time(&self) -> Result<GpuTime> {
        let (readable, regions, used) = self.timestamp_log.with(|log| {
            let used = std::mem::take(&mut log.used_bytes);
            (log.readable.clone(), std::mem::take(&mut log.regions), used)
        })?;
        let Some(readable) = readable.filter(|_| !regions.is_empty() && used > 0) else {
            return Ok(GpuTime::default());
        };
        // Held work (a run leaves none: it waits for the device before this) goes first.
        let submission = self.submit_held("timestamps")?;
        // The mapping's alignment is not guaranteed to suit u64: copy, don't cast.
        let ticks: Vec<u64> = self.map_read(&readable, 0..used, submission, |view| {
            bytemuck::pod_collect_to_vec(view)
        })?;
        let period_ns = f64::from(self.queue.get_timestamp_period());
        let mut time = GpuTime::default();
        for (at, pairs, work) in regions {
            let first = (at / 8) as usize;
            let nanos: f64 = ticks
                .get(first..first + 2 * pairs as usize)
                .unwrap_or(&[])
                .chunks_exact(2)
                .map(|pair| pair[1].saturating_sub(pair[0]) as f64 * period_ns)
                .sum();
            let d = Duration::from_nanos(nanos as u64);
            match work {
                TimedWork::Kernel => time.kernels += d,
                TimedWork::Library => time.library += d,
            }
        }
        Ok(time)
    }
}
