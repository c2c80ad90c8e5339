//! Device buffers by size class, reused across steps and runs instead of created and
//! destroyed per value (creating a buffer costs tens of microseconds of host time on a
//! discrete GPU, and a TPC-H query makes hundreds).
//!
//! A buffer comes back to the pool when its last owner drops it ([`GpuBuffer`]'s drop: a
//! value's `Arc`s are gone, so no live value can still see it — the interpreter clears a
//! slot after the value's last use, see `plan::liveness`). It can be handed out again only
//! once no command encoder that might have recorded work on it is still open: work recorded
//! before the drop but submitted after a new owner's first write would see the new
//! contents. An encoder stays open until its commands reach the queue, which may be well
//! after it finished recording (the device holds command buffers until a read-back or a
//! wait, see `Device::hold`). So a buffer given back while encoders are open waits
//! ("retired") until every encoder opened before its return is submitted or dropped;
//! encoders opened later cannot have used it.
//!
//! Free buffers stay in the pool across steps and runs, so that a warm run of a query, which
//! asks for the same sizes as the run before, finds every buffer it needs free and creates
//! none (creating one costs the host far more than taking it from the pool: on the H100 at
//! SF 10, q1's 66 creations per run took 106 ms when the pool was trimmed to what live
//! values needed at step boundaries). A class keeps as many buffers as the most of its size
//! ever live at once, so the pool holds the sum of the classes' peaks. That is bounded: free
//! buffers beyond the pool's cap on free bytes are destroyed, oldest first, and when the
//! device runs out of memory creating a buffer, every free buffer is destroyed and the
//! creation tried again ([`BufferPool::evict_all`]): memory pressure, not a step boundary,
//! is what gives memory back.
//!
//! Of the free buffers of a class, the pool hands out the one wgpu numbered first, not the
//! last one returned: the buffers a step gets then depend only on which of them are free,
//! not on the order their owners dropped them (a hash map's), so a warm run binds the same
//! buffers as the run before and finds the bind groups it made (see `Commands::dispatch`).
//!
//! A reused buffer holds its previous owner's data: [`Device::zeroed`] clears it with a
//! `clear_buffer` recorded in the pool's pending clears, which go to the queue ahead of the
//! next submission's own commands (`Commands::submit`, read-backs); uploads overwrite it.
//!
//! [`GpuBuffer`]: super::GpuBuffer
//! [`Device::zeroed`]: super::Device::zeroed

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Mutex;

/// Free buffers the pool keeps, in bytes, beyond which the oldest are destroyed. On a GPU,
/// room for the intermediates of an SF 10 TPC-H query (lineitem's 60 M rows make 480 MB per
/// 8-byte column); running out of device memory gives them back sooner (see the module).
const MAX_FREE_BYTES_GPU: u64 = 24 << 30;
const MAX_FREE_BYTES_CPU: u64 = 512 << 20;

/// Smallest size class: kernel parameters, counts and small results all share it.
const MIN_CLASS: u64 = 256;

/// Pool key: the size class in bytes and the usage bits.
type Class = (u64, u32);

#[derive(Debug)]
pub(crate) struct BufferPool {
    state: Mutex<State>,
    max_free_bytes: u64,
}

#[derive(Debug, Default)]
struct State {
    /// Free buffers by class, each with the sequence number of its return, in reverse of
    /// wgpu's order of buffers (the next to hand out last).
    free: FxHashMap<Class, Vec<(wgpu::Buffer, u64)>>,
    free_bytes: u64,
    returns: u64,
    /// Bytes of pooled buffers handed out and not given back.
    live_bytes: u64,
    /// Given back while encoders were open, with the number of the next encoder to open
    /// at the time: free once no encoder numbered below it is open.
    retired: Vec<(Class, wgpu::Buffer, u64)>,
    /// Numbers of the encoders open (recording, or finished and held unsubmitted).
    open_encoders: BTreeSet<u64>,
    next_encoder: u64,
    /// `clear_buffer`s of reused buffers that must run before the next submission's work.
    clears: Option<wgpu::CommandEncoder>,
    /// The buffers `clears` clears.
    cleared: FxHashSet<wgpu::Buffer>,
    counts: PoolCounts,
}

impl State {
    /// Frees the memory of a buffer the pool lets go of, now: a cached bind group (see
    /// `Commands::dispatch_cached`) may still hold a handle to it, and would keep it
    /// alive. wgpu destroys it once the work submitted with it is done. A buffer with a
    /// clear pending is left to its last handle: the clear would fail on a destroyed one.
    fn destroy(&self, buffer: wgpu::Buffer) {
        if !self.cleared.contains(&buffer) {
            buffer.destroy();
        }
    }

    fn hand_out(&mut self, size: u64) {
        self.live_bytes += size;
    }

    /// Destroys free buffers, oldest first, until they take at most `budget` bytes.
    fn evict_to(&mut self, budget: u64) {
        if budget == 0 {
            for (class, list) in std::mem::take(&mut self.free) {
                for (buffer, _) in list {
                    self.free_bytes -= class.0;
                    self.counts.evicted += 1;
                    self.destroy(buffer);
                }
            }
        }
        while self.free_bytes > budget {
            // A walk over the free buffers per eviction: evictions are rare (the cap on
            // free bytes, or out of memory), hand-outs and returns are not.
            let oldest = self
                .free
                .iter()
                .flat_map(|(class, list)| {
                    list.iter()
                        .enumerate()
                        .map(move |(at, (_, seq))| (*seq, *class, at))
                })
                .min();
            let Some((_, class, at)) = oldest else {
                break;
            };
            if let Some(list) = self.free.get_mut(&class) {
                let (buffer, _) = list.remove(at);
                self.free_bytes -= class.0;
                self.counts.evicted += 1;
                self.destroy(buffer);
            }
        }
    }
}

/// How often the pool had a buffer to hand out, and how often one was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounts {
    pub reused: u64,
    pub created: u64,
    /// Free buffers destroyed to stay within the pool's cap or under memory pressure.
    pub evicted: u64,
}

/// The size a buffer of `bytes` bytes is created with: rounded up to one of eight classes
/// per power of two (less than an eighth of the next power of two wasted), never past `limit` (the largest buffer the
/// device binds; a request near it keeps its exact size).
pub(crate) fn class_bytes(bytes: u64, limit: u64) -> u64 {
    if bytes <= MIN_CLASS {
        return MIN_CLASS.min(limit).max(bytes);
    }
    let step = (bytes.next_power_of_two() / 8).max(MIN_CLASS);
    let rounded = bytes.next_multiple_of(step);
    if rounded > limit {
        bytes
    } else {
        rounded
    }
}

impl BufferPool {
    pub(crate) fn new(software: bool) -> BufferPool {
        BufferPool {
            state: Mutex::new(State::default()),
            max_free_bytes: if software {
                MAX_FREE_BYTES_CPU
            } else {
                MAX_FREE_BYTES_GPU
            },
        }
    }

    /// A free buffer of exactly `size` bytes and `usage`, if the pool has one.
    pub(crate) fn take(&self, size: u64, usage: wgpu::BufferUsages) -> Option<wgpu::Buffer> {
        let mut state = self.state.lock().ok()?;
        // The first in wgpu's order (see the module).
        let (buffer, _) = state.free.get_mut(&(size, usage.bits()))?.pop()?;
        state.free_bytes -= size;
        state.counts.reused += 1;
        state.hand_out(size);
        Some(buffer)
    }

    /// A buffer of `size` bytes was created for a new owner (none of its class was free).
    pub(crate) fn created(&self, size: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.counts.created += 1;
        state.hand_out(size);
    }

    /// Destroys every free buffer (the device ran out of memory); true when there was one
    /// to destroy, so that trying again may succeed.
    pub(crate) fn evict_all(&self) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        let had = state.free_bytes > 0;
        state.evict_to(0);
        had
    }

    /// Takes back a buffer whose last owner dropped it.
    pub(crate) fn give_back(&self, buffer: wgpu::Buffer) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let class = (buffer.size(), buffer.usage().bits());
        state.live_bytes = state.live_bytes.saturating_sub(class.0);
        if !state.open_encoders.is_empty() {
            let stamp = state.next_encoder;
            state.retired.push((class, buffer, stamp));
        } else {
            self.keep(&mut state, class, buffer);
        }
    }

    fn keep(&self, state: &mut State, class: Class, buffer: wgpu::Buffer) {
        if class.0 > self.max_free_bytes {
            state.destroy(buffer);
            return;
        }
        // The oldest free buffers make room: the likeliest not to be asked for again soon
        // (another query's sizes).
        state.evict_to(self.max_free_bytes - class.0);
        state.free_bytes += class.0;
        state.returns += 1;
        let seq = state.returns;
        let list = state.free.entry(class).or_default();
        let at = list.partition_point(|(free, _)| *free > buffer);
        list.insert(at, (buffer, seq));
    }

    /// An encoder that may record work on pool buffers was created: its number, for
    /// [`BufferPool::close_encoders`].
    pub(crate) fn open_encoder(&self) -> u64 {
        let Ok(mut state) = self.state.lock() else {
            return u64::MAX;
        };
        let number = state.next_encoder;
        state.next_encoder += 1;
        state.open_encoders.insert(number);
        number
    }

    /// Encoders from [`BufferPool::open_encoder`] were submitted or dropped: the buffers
    /// no open encoder may have used are free again.
    pub(crate) fn close_encoders(&self, numbers: &[u64]) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        for number in numbers {
            state.open_encoders.remove(number);
        }
        let oldest_open = state.open_encoders.first().copied().unwrap_or(u64::MAX);
        if state
            .retired
            .iter()
            .all(|(_, _, stamp)| *stamp > oldest_open)
        {
            return;
        }
        let (free, still): (Vec<_>, Vec<_>) = std::mem::take(&mut state.retired)
            .into_iter()
            .partition(|(_, _, stamp)| *stamp <= oldest_open);
        state.retired = still;
        for (class, buffer, _) in free {
            self.keep(&mut state, class, buffer);
        }
    }

    /// Records a clear of `buffer` to run before the next submission's commands.
    pub(crate) fn clear_before_next_submit(&self, device: &wgpu::Device, buffer: &wgpu::Buffer) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state
            .clears
            .get_or_insert_with(|| {
                device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("pool clears"),
                })
            })
            .clear_buffer(buffer, 0, None);
        state.cleared.insert(buffer.clone());
    }

    /// Records a copy of `bytes` bytes from the start of `source` into `buffer`, to run
    /// before the next submission's commands as a clear does (after the clears recorded
    /// before it); false when it could not be recorded.
    pub(crate) fn copy_before_next_submit(
        &self,
        device: &wgpu::Device,
        source: &wgpu::Buffer,
        buffer: &wgpu::Buffer,
        bytes: u64,
    ) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        state
            .clears
            .get_or_insert_with(|| {
                device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("pool clears"),
                })
            })
            .copy_buffer_to_buffer(source, 0, buffer, 0, bytes);
        state.cleared.insert(buffer.clone());
        true
    }

    /// Whether a clear (or copy) into `buffer` is pending.
    pub(crate) fn clear_pending(&self, buffer: &wgpu::Buffer) -> bool {
        self.state
            .lock()
            .map(|s| s.cleared.contains(buffer))
            .unwrap_or(true)
    }

    /// Whether clears are pending for the next submission.
    pub(crate) fn has_clears(&self) -> bool {
        self.state.lock().is_ok_and(|state| state.clears.is_some())
    }

    /// The pending clears as a command buffer to submit ahead of the next work, if any.
    pub(crate) fn take_clears(&self) -> Option<wgpu::CommandBuffer> {
        let mut state = self.state.lock().ok()?;
        state.cleared.clear();
        state.clears.take().map(wgpu::CommandEncoder::finish)
    }

    pub(crate) fn counts(&self) -> PoolCounts {
        self.state.lock().map(|s| s.counts).unwrap_or_default()
    }

    /// Bytes of free buffers held for reuse.
    pub(crate) fn free_bytes(&self) -> u64 {
        self.state.lock().map(|s| s.free_bytes).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_round_up_by_less_than_an_eighth_of_a_power_of_two_and_never_pass_the_limit() {
        assert_eq!(class_bytes(8, u64::MAX), 256);
        assert_eq!(class_bytes(256, u64::MAX), 256);
        assert_eq!(class_bytes(257, u64::MAX), 512);
        assert_eq!(class_bytes(4096, u64::MAX), 4096);
        assert_eq!(class_bytes(4097, u64::MAX), 4096 + 1024);
        for bytes in [1000u64, 12_345, 1 << 20, (1 << 20) + 1, 123_456_789] {
            let class = class_bytes(bytes, u64::MAX);
            let step = (bytes.next_power_of_two() / 8).max(MIN_CLASS);
            assert!(class >= bytes && class - bytes < step, "{bytes}");
        }
        // Near the binding limit the exact size is kept.
        assert_eq!(class_bytes(1000, 1010), 1000);
        assert_eq!(class_bytes(8, 64), 64);
    }
}
