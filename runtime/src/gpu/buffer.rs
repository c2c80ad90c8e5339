//! Typed device buffers: upload from slices, download into vectors.

use rustc_hash::FxHashMap;
use std::marker::PhantomData;

use std::sync::{Arc, Mutex};

use super::deferred::StatusRead;
use super::device::Device;
use super::error::{GpuError, Result};
use super::gather::ReadRange;
use super::pool::{class_bytes, BufferPool};

/// Largest element count a kernel indexes: indexes are WGSL `u32`, and grid-stride loops add
/// up to 65 535 × 256 to an index, which must not wrap.
pub const MAX_ELEMENTS: usize = (u32::MAX / 2) as usize;

/// Usage of every storage buffer: bindable, and copyable both ways (upload, download).
const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Usage of a storage buffer the host maps (see [`Device::host_readable_scratch`]).
const HOST_READABLE_USAGE: wgpu::BufferUsages = STORAGE_USAGE.union(wgpu::BufferUsages::MAP_READ);

/// Largest buffer [`Device::host_readable_scratch`] places where the host maps it: it is
/// for results of a few elements (on a discrete GPU the memory is the host's, which a
/// kernel writes over the bus).
const MAX_HOST_READABLE_BYTES: u64 = 4096;

/// A device buffer holding `len` elements of `T`. An empty buffer still owns a few bytes,
/// because wgpu cannot bind a zero-sized buffer. A buffer from [`Device::upload`] or
/// [`Device::zeroed`] goes back to the device's pool when dropped (see `pool`); it may be
/// larger than its elements (its size class).
#[derive(Debug)]
pub struct GpuBuffer<T> {
    buffer: wgpu::Buffer,
    len: usize,
    /// Where the buffer goes when dropped; None for a view made by [`GpuBuffer::wrap`].
    pool: Option<Arc<BufferPool>>,
    /// The buffer a view made by [`GpuBuffer::view`] sees, kept alive (and out of the
    /// pool) as long as the view.
    owner: Option<Arc<GpuBuffer<u32>>>,
    element: PhantomData<T>,
}

impl<T: bytemuck::Pod> GpuBuffer<T> {
    /// A typed view of a buffer this crate created holding `len` elements of `T`. The view
    /// does not own the buffer for the pool: whoever made the buffer keeps it alive at
    /// least as long as the view.
    pub(crate) fn wrap(buffer: wgpu::Buffer, len: usize) -> GpuBuffer<T> {
        GpuBuffer {
            buffer,
            len,
            pool: None,
            owner: None,
            element: PhantomData,
        }
    }

    /// The first `len` elements of `owner`'s buffer as `T`s, holding `owner` alive.
    pub(crate) fn view(owner: &Arc<GpuBuffer<u32>>, len: usize) -> GpuBuffer<T> {
        GpuBuffer {
            buffer: owner.buffer.clone(),
            len,
            pool: None,
            owner: Some(owner.clone()),
            element: PhantomData,
        }
    }

    /// The same buffer (and its place in the pool) seen as `len` elements of `U`.
    pub(crate) fn retyped<U>(mut self, len: usize) -> GpuBuffer<U> {
        GpuBuffer {
            buffer: self.buffer.clone(),
            len,
            pool: self.pool.take(),
            owner: self.owner.take(),
            element: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the elements take (not counting the padding of an empty buffer).
    pub fn byte_len(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// The underlying wgpu buffer, for binding it to a kernel.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl<T> Drop for GpuBuffer<T> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give_back(self.buffer.clone());
        }
    }
}

/// A uniform buffer of kernel parameters. Its contents never change once written: the
/// device hands out the same buffer for the same parameter bytes (see `UniformCache`), and
/// it goes back to the pool when neither the cache nor a caller holds it.
#[derive(Clone, Debug)]
pub struct Uniform {
    shared: Arc<PooledUniform>,
}

/// The buffer behind [`Uniform`]s of the same bytes.
#[derive(Debug)]
struct PooledUniform {
    buffer: wgpu::Buffer,
    pool: Arc<BufferPool>,
}

impl std::ops::Deref for Uniform {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        &self.shared.buffer
    }
}

impl Drop for PooledUniform {
    fn drop(&mut self) {
        self.pool.give_back(self.buffer.clone());
    }
}

/// Uniform buffers by the parameter bytes they hold. A warm run of a query passes its kernels
/// the parameters of the run before (the same lengths): finding their buffer saves a pool
/// look-up and a `write_buffer` per dispatch, whose staging buffer wgpu allocates, copies
/// and frees with the submission. The buffers stay bound to the same kernels, so cached bind
/// groups (see `pipeline`) find them too.
#[derive(Default)]
pub(crate) struct UniformCache {
    by_bytes: FxHashMap<Box<[u8]>, Uniform>,
}

/// Buffers holding the bytes of small uploads, by those bytes (see [`Device::upload`]).
#[derive(Default)]
pub(crate) struct UploadSources {
    by_bytes: FxHashMap<Box<[u8]>, wgpu::Buffer>,
}

/// Uploads of at most this many bytes are copied on the device from a buffer that holds
/// the same bytes (made once, see [`UploadSources`]) instead of written from the host: a
/// `write_buffer` makes wgpu create, map and free a staging buffer, tens of microseconds
/// per small upload (a literal, the start values of a reduction) on every warm run.
const SMALL_UPLOAD_BYTES: usize = 4096;

/// Upload sources the cache holds (up to [`SMALL_UPLOAD_BYTES`] each) before it starts
/// over.
const MAX_UPLOAD_SOURCES: usize = 1024;

/// Parameter buffers the cache holds (256 bytes each) before it starts over: texts of
/// parameters come and go with the data (a library step's sizes), and a full cache is emptied
/// (its buffers go back to the pool once no one binds them).
const MAX_CACHED_UNIFORMS: usize = 1024;

/// Usage of uniform buffers: bindable as uniforms, written from the host.
const UNIFORM_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);

/// A buffer's label, made only when a buffer is created or an error names it: a warm run
/// takes its buffers from the pool, and formatting a label per buffer showed in its host time.
type Label<'a> = &'a dyn Fn() -> String;

fn checked_bytes<T>(device: &Device, label: Label<'_>, len: usize) -> Result<u64> {
    let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
    let limit = device.limits().max_buffer_size;
    if len > MAX_ELEMENTS || bytes > limit {
        return Err(GpuError::BufferTooLarge {
            label: label(),
            bytes,
            limit: limit.min((MAX_ELEMENTS * std::mem::size_of::<T>()) as u64),
        });
    }
    // Room for one element even when empty; copies and bindings need non-zero, 4-aligned
    // sizes, and a kernel binding of 8-byte elements (i64, f64) needs 8 bytes even when the
    // buffer holds none (an empty library result bound as i64 was 4 bytes: a validation
    // error where the CPU answers).
    Ok(bytes.max(std::mem::size_of::<T>().max(8) as u64))
}

impl Device {
    /// Copies `data` into a storage buffer (from the pool when it has one of the size).
    pub fn upload<T: bytemuck::Pod>(&self, label: &str, data: &[T]) -> Result<GpuBuffer<T>> {
        if data.is_empty() {
            // Nothing to write: zeros, as a new buffer would hold.
            return self.zeroed(label, 0);
        }
        let name = || label.to_string();
        let bytes = checked_bytes::<T>(self, &name, data.len())?;
        let buffer = self.storage_buffer(&name, bytes)?;
        let raw: &[u8] = bytemuck::cast_slice(data);
        if raw.len() <= SMALL_UPLOAD_BYTES {
            // After a clear of the buffer still pending, if any: same encoder, in order.
            let source = self.upload_source(raw)?;
            let words = (raw.len() as u64).next_multiple_of(4);
            if self
                .pool
                .copy_before_next_submit(&self.device, &source, buffer.raw(), words)
            {
                return Ok(buffer.retyped(data.len()));
            }
        }
        self.count_upload(std::mem::size_of_val(data) as u64);
        self.submit_clears_of(buffer.raw());
        {
            // Queue-ordered: lands before the next submission's commands, after all work
            // submitted before. No command held for that submission uses the buffer: a
            // pooled buffer's earlier uses are all submitted (see `pool`).
            if raw.len().is_multiple_of(4) {
                self.queue.write_buffer(buffer.raw(), 0, raw);
            } else {
                // Writes are whole words.
                let mut padded = raw.to_vec();
                padded.resize(raw.len().next_multiple_of(4), 0);
                self.queue.write_buffer(buffer.raw(), 0, &padded);
            }
        }
        Ok(buffer.retyped(data.len()))
    }

    /// A device buffer holding `raw` (padded to whole words), made once per distinct bytes
    /// and never written again: the source of small uploads' copies.
    fn upload_source(&self, raw: &[u8]) -> Result<wgpu::Buffer> {
        if let Some(source) = self
            .upload_sources
            .lock()
            .ok()
            .and_then(|cache| cache.by_bytes.get(raw).cloned())
        {
            return Ok(source);
        }
        self.count_upload(raw.len() as u64);
        let make_error = |label, message| GpuError::Command { label, message };
        let source = self
            .costs
            .buffers
            .time(|| {
                self.capture_errors("upload source", make_error, || {
                    let source = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("upload source"),
                        size: (raw.len() as u64).next_multiple_of(4).max(4),
                        usage: wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: true,
                    });
                    let written = source.get_mapped_range_mut(..).map(|mut view| {
                        // The whole mapping, padding included (zeros).
                        let mut padded = raw.to_vec();
                        padded.resize(view.len(), 0);
                        view.copy_from_slice(&padded);
                    });
                    source.unmap();
                    written.map(|()| source)
                })
            })?
            .map_err(|e| GpuError::Command {
                label: "upload source".to_string(),
                message: e.to_string(),
            })?;
        if let Ok(mut cache) = self.upload_sources.lock() {
            if cache.by_bytes.len() >= MAX_UPLOAD_SOURCES {
                cache.by_bytes.clear();
            }
            cache.by_bytes.insert(raw.into(), source.clone());
        }
        Ok(source)
    }

    /// A storage buffer of `len` zeros: a new one (wgpu zero-initialises every buffer), or
    /// a pooled one cleared ahead of the next submission's work.
    pub fn zeroed<T: bytemuck::Pod>(&self, label: &str, len: usize) -> Result<GpuBuffer<T>> {
        self.zeroed_named(&|| label.to_string(), len)
    }

    /// [`Device::zeroed`] with a label made only when a buffer is created or an error
    /// names it.
    pub fn zeroed_named<T: bytemuck::Pod>(
        &self,
        label: &dyn Fn() -> String,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        self.zeroed_by(label, len, |buffer| {
            self.pool.clear_before_next_submit(&self.device, buffer);
            Ok(())
        })
    }

    /// A storage buffer of `len` zeros: a new one, or a pooled one given to `clear`.
    fn zeroed_by<T: bytemuck::Pod>(
        &self,
        label: &dyn Fn() -> String,
        len: usize,
        clear: impl FnOnce(&wgpu::Buffer) -> Result<()>,
    ) -> Result<GpuBuffer<T>> {
        let bytes = checked_bytes::<T>(self, label, len)?;
        let (buffer, reused) = self.storage_buffer_reused(label, bytes)?;
        if reused {
            clear(buffer.raw())?;
        }
        Ok(buffer.retyped(len))
    }

    /// [`Device::zeroed_named`] for work recorded in `commands`: a reused buffer's clear is
    /// recorded there, ahead of the commands recorded after it, instead of in the pool's
    /// pending clears. The buffer is new to its owner, so no earlier command uses it, and
    /// it stays out of the pool (and undestroyed) until `commands` reach the queue (see
    /// `pool`). A launch then sends one command buffer less per submission (each costs wgpu
    /// and the driver some microseconds to create, finish, submit and reset).
    pub(crate) fn zeroed_in<T: bytemuck::Pod>(
        &self,
        commands: &mut super::Commands<'_>,
        label: &dyn Fn() -> String,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        self.zeroed_by(label, len, |buffer| commands.clear(buffer))
    }

    /// A storage buffer of `len` elements whose contents are undefined (a pooled buffer
    /// keeps its last owner's data): for outputs a kernel writes in full, which a clear
    /// would only cost a pass over (the relation kernels' merged `full`, gathered rows).
    pub(crate) fn scratch<T: bytemuck::Pod>(
        &self,
        label: &str,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        self.scratch_named(&|| label.to_string(), len)
    }

    /// [`Device::scratch`] with its label made only when a buffer is created or an error
    /// names it.
    pub(crate) fn scratch_named<T: bytemuck::Pod>(
        &self,
        label: Label<'_>,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        let bytes = checked_bytes::<T>(self, label, len)?;
        Ok(self.storage_buffer(label, bytes)?.retyped(len))
    }

    /// A storage buffer of `len` elements, contents undefined, that a kernel writes and the
    /// host maps without a copy on the device, where the device can map storage
    /// (`MAPPABLE_PRIMARY_BUFFERS`) and the buffer is small; elsewhere a buffer like
    /// [`Device::scratch_named`]'s (whether it is mappable shows in its usage).
    pub(crate) fn host_readable_scratch<T: bytemuck::Pod>(
        &self,
        label: Label<'_>,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        let bytes = checked_bytes::<T>(self, label, len)?;
        if !self.maps_storage() || bytes > MAX_HOST_READABLE_BYTES {
            return self.scratch_named(label, len);
        }
        let size = class_bytes(bytes.next_multiple_of(4), MAX_HOST_READABLE_BYTES);
        let (buffer, _) = self.pooled(label, size, HOST_READABLE_USAGE)?;
        Ok(buffer.retyped(len))
    }

    /// A storage buffer of at least `bytes` bytes (its size class), contents undefined.
    fn storage_buffer(&self, label: Label<'_>, bytes: u64) -> Result<GpuBuffer<u8>> {
        self.storage_buffer_reused(label, bytes).map(|(b, _)| b)
    }

    fn storage_buffer_reused(&self, label: Label<'_>, bytes: u64) -> Result<(GpuBuffer<u8>, bool)> {
        let limit = self
            .limits()
            .max_buffer_size
            .min(self.limits().max_storage_buffer_binding_size.max(bytes));
        let size = class_bytes(
            bytes.next_multiple_of(4),
            limit.max(bytes.next_multiple_of(4)),
        );
        self.pooled(label, size, STORAGE_USAGE)
    }

    /// A buffer of exactly `size` bytes and `usage` from the pool, or a new one for it; and
    /// whether it was reused.
    fn pooled(
        &self,
        label: Label<'_>,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<(GpuBuffer<u8>, bool)> {
        let wrap = |buffer: wgpu::Buffer| GpuBuffer {
            buffer,
            len: size as usize,
            pool: Some(self.pool.clone()),
            owner: None,
            element: PhantomData,
        };
        if let Some(buffer) = self.pool.take(size, usage) {
            return Ok((wrap(buffer), true));
        }
        let buffer = self.create_pooled(&label(), size, usage)?;
        Ok((wrap(buffer), false))
    }

    /// A new buffer for the pool (none of its class was free). When the device is out of
    /// memory, the pool's free buffers are destroyed and the creation tried once more: the
    /// pool keeps free buffers across runs only while the memory is not needed.
    fn create_pooled(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer> {
        let make_error = |label, message| GpuError::Command { label, message };
        let _timer = self.costs.buffers.timer();
        let create = || {
            self.capture_errors(label, make_error, || {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            })
        };
        let buffer = match create() {
            Ok(buffer) => buffer,
            Err(_) if self.pool.evict_all() => create()?,
            Err(e) => return Err(e),
        };
        self.pool.created(size);
        Ok(buffer)
    }

    /// A small uniform buffer holding `value` (kernel parameters), from the pool.
    pub fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> Result<Uniform> {
        self.uniform_bytes(label, bytemuck::bytes_of(value))
    }

    /// A uniform buffer holding `bytes` (a multiple of 4): the one already holding them
    /// (see [`UniformCache`]), or one from the pool written now.
    pub(crate) fn uniform_bytes(&self, label: &str, bytes: &[u8]) -> Result<Uniform> {
        if let Some(uniform) = self
            .uniforms
            .lock()
            .ok()
            .and_then(|cache| cache.by_bytes.get(bytes).cloned())
        {
            return Ok(uniform);
        }
        self.count_upload(bytes.len() as u64);
        let size = class_bytes((bytes.len() as u64).next_multiple_of(16), u64::MAX);
        let buffer = match self.pool.take(size, UNIFORM_USAGE) {
            Some(buffer) => buffer,
            None => self.create_pooled(label, size, UNIFORM_USAGE)?,
        };
        // No pending clear can be for this buffer (only storage buffers are cleared), so
        // the write need not wait for them: one submission less per dispatch. Nothing
        // recorded uses the buffer: it came from the pool (see `pool`).
        self.queue.write_buffer(&buffer, 0, bytes);
        let uniform = Uniform {
            shared: Arc::new(PooledUniform {
                buffer,
                pool: self.pool.clone(),
            }),
        };
        if let Ok(mut cache) = self.uniforms.lock() {
            if cache.by_bytes.len() >= MAX_CACHED_UNIFORMS {
                cache.by_bytes.clear();
            }
            cache.by_bytes.insert(bytes.into(), uniform.clone());
        }
        Ok(uniform)
    }

    /// Copies the buffer back to the host, waiting for all work submitted before.
    pub fn download<T: bytemuck::Pod>(&self, source: &GpuBuffer<T>) -> Result<Vec<T>> {
        self.download_range(source, 0, source.len())
    }

    /// Copies `count` elements from `start` back to the host (e.g. only the total at the end
    /// of a scan). The kernels' status words logged since the last read come along in the
    /// same copy (see `deferred`); when one shows an error, the read fails with
    /// [`super::deferred::KERNEL_FAILED`] instead of returning what a failed kernel wrote.
    pub fn download_range<T: bytemuck::Pod>(
        &self,
        source: &GpuBuffer<T>,
        start: usize,
        count: usize,
    ) -> Result<Vec<T>> {
        self.read_range(Some((source, start, count)))
    }

    /// Reads back only the status words logged so far (see `deferred`).
    pub(crate) fn read_status_log(&self) -> Result<()> {
        self.read_range::<u32>(None).map(|_| ())
    }

    fn read_range<T: bytemuck::Pod>(
        &self,
        source: Option<(&GpuBuffer<T>, usize, usize)>,
    ) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>() as u64;
        let mut ranges = Vec::with_capacity(1);
        if let Some((source, start, count)) = source {
            let end = start.checked_add(count).filter(|&end| end <= source.len());
            if end.is_none() {
                return Err(GpuError::Readback(format!(
                    "range {start}..{start}+{count} is outside a buffer of {} elements",
                    source.len()
                )));
            }
            ranges.push((source.raw(), start as u64 * size, count as u64 * size));
        }
        let bytes = self.read_bytes(&ranges)?;
        // The mapping's alignment is not guaranteed to suit `T`: copy, don't cast.
        Ok(bytes
            .first()
            .map(|b| bytemuck::pod_collect_to_vec::<u8, T>(b))
            .unwrap_or_default())
    }

    /// Copies byte ranges `(buffer, offset, bytes)` of device buffers back to the host in one
    /// submission and one wait: a host step reading several device values (the result
    /// columns of `@table`) waits once, not once per value. Offsets and sizes are multiples
    /// of 4. The status words come along as for [`Device::download_range`].
    pub(crate) fn download_ranges(
        &self,
        ranges: &[(&wgpu::Buffer, u64, u64)],
    ) -> Result<Vec<Vec<u8>>> {
        if let Some(&(buffer, offset, bytes)) = ranges
            .iter()
            .find(|(b, o, n)| o + n > b.size() || o % 4 != 0 || n % 4 != 0)
        {
            return Err(GpuError::Readback(format!(
                "bytes {offset}..{offset}+{bytes} are outside a buffer of {} bytes or unaligned",
                buffer.size()
            )));
        }
        self.read_bytes(ranges)
    }

    fn read_bytes(&self, ranges: &[(&wgpu::Buffer, u64, u64)]) -> Result<Vec<Vec<u8>>> {
        let bytes: u64 = ranges.iter().map(|r| r.2.next_multiple_of(4)).sum();
        let status_bytes = self.status_copy_bytes();
        if bytes == 0 && status_bytes == 0 {
            if self.status_failed() {
                return Err(GpuError::Readback(
                    super::deferred::KERNEL_FAILED.to_string(),
                ));
            }
            return Ok(ranges.iter().map(|_| Vec::new()).collect());
        }
        self.count_download(
            ranges.iter().map(|r| r.2).sum::<u64>() + status_bytes.saturating_sub(4),
        );
        if let [(buffer, offset, count)] = ranges {
            if status_bytes == 0
                && buffer.usage().contains(wgpu::BufferUsages::MAP_READ)
                && offset % wgpu::MAP_ALIGNMENT == 0
            {
                return self.read_mapped(buffer, *offset, *count).map(|b| vec![b]);
            }
        }
        let total = bytes + status_bytes;
        let make_error = |label, message| GpuError::Command { label, message };
        // At the end of the held work (see `Device::hold`), in one submission.
        let recorded = self.capture_errors("download", make_error, || {
            self.submit_recorded("download", |encoder| {
                let status = self.take_status_read(bytes)?;
                let mut reads = Vec::with_capacity(ranges.len() + 1);
                let mut at = 0;
                for &(buffer, offset, bytes) in ranges {
                    reads.push(ReadRange {
                        buffer,
                        offset,
                        bytes,
                        at,
                    });
                    at += bytes.next_multiple_of(4);
                }
                if let Some(StatusRead {
                    source: Some((buffer, bytes)),
                    offset,
                    ..
                }) = &status
                {
                    reads.push(ReadRange {
                        buffer,
                        offset: 0,
                        bytes: *bytes,
                        at: *offset,
                    });
                }
                let target = self.record_read_ranges(encoder, &reads, total)?;
                Ok((status.map(|s| (s.offset, s.masks)), target))
            })
        })?;
        let (recorded, submission) = recorded?;
        let (status, target) = recorded?;
        let (values, words) = self.map_read(&target.buffer, 0..total, submission, |view| {
            let mut values = Vec::with_capacity(ranges.len());
            let mut at = 0usize;
            for &(_, _, count) in ranges {
                values.push(view[at..at + count as usize].to_vec());
                at += count.next_multiple_of(4) as usize;
            }
            let words = status.as_ref().map(|(offset, masks)| {
                let at = *offset as usize;
                bytemuck::pod_collect_to_vec::<u8, u32>(&view[at..at + masks.len() * 4])
            });
            (values, words)
        })?;
        self.keep_read_target(target);
        if let (Some((_, masks)), Some(words)) = (&status, &words) {
            self.status_read(words, masks)?;
        } else if self.status_failed() {
            return Err(GpuError::Readback(
                super::deferred::KERNEL_FAILED.to_string(),
            ));
        }
        Ok(values)
    }
}

impl Device {
    /// Reads `bytes` bytes at `offset` of `buffer`, a buffer the host maps that a kernel
    /// wrote (see [`Device::host_readable_scratch`]), by mapping it: the held work goes to
    /// the queue with no copy after it. With no status words to read (they need a copy).
    fn read_mapped(&self, buffer: &wgpu::Buffer, offset: u64, bytes: u64) -> Result<Vec<u8>> {
        let submission = self.submit_held("download")?;
        let mapped = bytes.next_multiple_of(4).max(4);
        let values = self.map_read(buffer, offset..offset + mapped, submission, |view| {
            view[..bytes as usize].to_vec()
        })?;
        if self.status_failed() {
            return Err(GpuError::Readback(
                super::deferred::KERNEL_FAILED.to_string(),
            ));
        }
        Ok(values)
    }

    /// Maps `range` of `buffer` once `submission` (which wrote it) is done, gives the
    /// mapped bytes to `read`, and unmaps: both read-backs, through a staging copy and
    /// straight from a buffer the host maps, end here.
    pub(super) fn map_read<R>(
        &self,
        buffer: &wgpu::Buffer,
        range: std::ops::Range<u64>,
        submission: u64,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let slice = buffer.slice(range);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            // The receiver outlives the poll below; a failed send cannot happen.
            let _ = sender.send(result);
        });
        self.flush()?;
        self.wait_for_map(&receiver, None)?;
        // The read-back's submission is done, and every one before it.
        self.finished_through(submission);
        let read = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            read(&view)
        };
        buffer.unmap();
        Ok(read)
    }
}

/// The buffer of the last read-back of its kind (staging, gathered), for the next one that
/// fits: creating a buffer of hundreds of megabytes per read-back costs more than the copy.
#[derive(Debug, Default)]
pub(crate) struct ReusedBuffer(Mutex<Option<wgpu::Buffer>>);

impl ReusedBuffer {
    /// The kept buffer if it holds `bytes`, taken out (so that a read-back on another thread
    /// meanwhile makes its own).
    pub(crate) fn take(&self, bytes: u64) -> Option<wgpu::Buffer> {
        self.0
            .lock()
            .ok()
            .and_then(|mut slot| slot.take())
            .filter(|b| b.size() >= bytes)
    }

    /// Keeps `buffer` for the next read-back, or the one kept if that is larger.
    pub(crate) fn keep(&self, buffer: wgpu::Buffer) {
        if let Ok(mut slot) = self.0.lock() {
            if slot.as_ref().is_none_or(|b| b.size() < buffer.size()) {
                *slot = Some(buffer);
            }
        }
    }
}

impl Device {
    /// A buffer of at least `bytes` for a read-back: the one `kept` if it is large enough,
    /// else a new one, rounded up so that slightly larger read-backs reuse it too.
    pub(crate) fn read_back_buffer(
        &self,
        kept: &ReusedBuffer,
        label: &str,
        bytes: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        if let Some(buffer) = kept.take(bytes) {
            return buffer;
        }
        self.costs.buffers.time(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.next_power_of_two().max(4096),
                usage,
                mapped_at_creation: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::require_gpu_or_skip;

    #[test]
    fn a_small_result_where_the_host_maps_it_is_read_without_a_copy() {
        let Some(device) = require_gpu_or_skip() else {
            return;
        };
        let buffer = device
            .host_readable_scratch::<u32>(&|| "result".to_string(), 2)
            .expect("made");
        let mapped = buffer.raw().usage().contains(wgpu::BufferUsages::MAP_READ);
        // Where the device maps storage, the buffer is mappable; elsewhere a plain one.
        assert_eq!(mapped, device.maps_storage());
        device
            .queue
            .write_buffer(buffer.raw(), 0, bytemuck::cast_slice(&[7u32, 9]));
        // Read twice: a mapping is given back (unmapped) after each read. With nothing held
        // there is nothing to submit, and the write before is seen all the same.
        let submitted = device.submissions.load(std::sync::atomic::Ordering::SeqCst);
        for _ in 0..2 {
            assert_eq!(device.download(&buffer).expect("read"), [7, 9]);
        }
        if mapped {
            let now = device.submissions.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(now, submitted, "a submission for a read with nothing held");
        }
        assert_eq!(device.download_range(&buffer, 1, 1).expect("read"), [9]);
        // A larger buffer is never placed in host memory.
        let large = device
            .host_readable_scratch::<u32>(&|| "large".to_string(), 1 << 20)
            .expect("made");
        assert!(!large.raw().usage().contains(wgpu::BufferUsages::MAP_READ));
    }
}
