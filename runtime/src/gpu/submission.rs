//! Held work and queue submissions: the one open encoder that every [`super::Commands`] and
//! read-back records into, the work held until the host needs the device (a read-back, a
//! wait, a host write), and the submissions that send it to the queue.

use std::sync::atomic::Ordering;

use super::device::Device;
use super::error::{GpuError, Result};

/// Command buffers waiting for the next submission, with their pool encoders.
#[derive(Default)]
pub(super) struct HeldCommands {
    commands: Vec<wgpu::CommandBuffer>,
    /// The encoder that every [`super::Commands`] and read-back records into until the next
    /// submission, not finished yet: one command buffer per submission instead of one per
    /// library step or launch: each command buffer costs wgpu and the driver host time to
    /// begin, finish, submit and reset (TPC-H q2 at SF 1 went from 63 command buffers a warm
    /// run to 26). Finished, its errors reported under the labels of the work recorded in
    /// it, when it goes to the queue.
    open: Option<OpenCommands>,
    /// Pool encoder numbers (see `pool`) of the `Commands` whose work is recorded and that
    /// are done recording: closed once that work has gone to the queue.
    encoders: Vec<u64>,
    /// The sum of their `work_bytes` (see `Device::hold`).
    work_bytes: u64,
    /// A kernel launch's held work is large enough to go to the queue before the next
    /// dispatch is recorded or the next step begins (see `Device::hold`).
    due: bool,
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
///
/// One pass for many dispatches, not a pass each: on an H100 a dispatch in a pass of its own
/// took 8–10 µs of GPU time and 5–10 µs to record, in a shared pass 2–3 µs and 1–4 µs; a
/// library step records tens of small dispatches. wgpu still orders each dispatch after the
/// writes it reads.
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

/// Held command buffers beyond which they are submitted anyway: the buffers given back
/// meanwhile cannot be reused until then.
const MAX_HELD_COMMANDS: usize = 256;

fn poisoned_queue() -> GpuError {
    GpuError::Command {
        label: "submit".to_string(),
        message: "the held command buffers' lock was poisoned by a panic".to_string(),
    }
}

impl Device {
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
    /// begins on the encoder. Held work that is due (see [`Device::hold`]) goes to the
    /// queue first.
    pub(crate) fn record_in_pass<R>(
        &self,
        owner: u64,
        label: &str,
        begin: impl FnOnce(&mut wgpu::CommandEncoder) -> wgpu::ComputePass<'static>,
        record: impl FnOnce(&mut wgpu::ComputePass<'static>) -> R,
    ) -> Result<R> {
        self.submit_due()?;
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
    /// Held work goes to the queue early once the buffers it binds or copies
    /// (`work_bytes`, a bound on the memory it touches) reach [`Device::submit_bytes`]:
    /// then the device has enough to do to make up for a submission, and runs it while the
    /// host records what follows instead of after.
    ///
    /// A kernel launch's work (`deferred`, see `Commands::defer_submission`) becomes due
    /// instead: it goes when the next dispatch is recorded or the next step begins
    /// ([`Device::submit_due`]), so that a read-back coming first joins its submission.
    /// TPC-H q6 at SF 1 is one kernel, then the read-back of its sum: on an H200 a run took
    /// 105 µs with a submission each, 89 µs with one (the fastest of four processes each):
    /// the host's second submission, and the device's start of it, came between kernel
    /// and answer. A library step's work still goes at once: its host work between
    /// submissions (key encoding, dictionaries) would leave the device idle (q2 at SF 1
    /// took 0.5 ms longer with it held).
    pub(crate) fn hold(&self, encoder: u64, work_bytes: u64, deferred: bool) -> Result<()> {
        let full = {
            let mut held = self.held.lock().map_err(|_| poisoned_queue())?;
            held.encoders.push(encoder);
            held.work_bytes = held.work_bytes.saturating_add(work_bytes);
            let submit_bytes = self.submit_bytes.load(Ordering::Relaxed);
            let large = held.work_bytes >= submit_bytes;
            if large && deferred {
                held.due = true;
            }
            // 0 sends every command buffer at once (see `set_submit_bytes`).
            (large && !deferred) || held.encoders.len() >= MAX_HELD_COMMANDS || submit_bytes == 0
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// Makes the held work due (see [`Device::hold`]): it goes to the queue before the next
    /// dispatch is recorded or the next step begins, or with the next read-back.
    pub(crate) fn mark_due(&self) -> Result<()> {
        self.held.lock().map_err(|_| poisoned_queue())?.due = true;
        Ok(())
    }

    /// Sends the held work to the queue if it is due (see `Device::hold`): before a
    /// dispatch is recorded, and when a step begins, so that the device works meanwhile.
    pub fn submit_due(&self) -> Result<()> {
        let due = self.held.lock().map_err(|_| poisoned_queue())?.due;
        if due {
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
        self.capture_unscoped(|| labels.text(), make_error, || encoder.finish())
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
        held.due = false;
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

    /// The number of the submission after which nothing is held, none made when nothing is
    /// held (no work, no pool clears), else [`Device::submit_recorded`]'s: for a read-back
    /// that maps a buffer earlier work wrote and records nothing itself. A grouped kernel's
    /// launch goes to the queue at its dispatch, so an empty command buffer after it would
    /// only cost the host a submission.
    pub(crate) fn submit_held(&self, label: &str) -> Result<u64> {
        {
            let held = self.held.lock().map_err(|_| poisoned_queue())?;
            if held.open.is_none()
                && held.commands.is_empty()
                && held.encoders.is_empty()
                && !self.pool.has_clears()
            {
                return Ok(self.submissions.load(Ordering::SeqCst));
            }
        }
        let make_error = |label, message| GpuError::Command { label, message };
        let (_, number) = self.capture_unscoped(
            || label.to_string(),
            make_error,
            || self.submit_recorded(label, |_| ()),
        )??;
        Ok(number)
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

    /// Bytes of work held for the next submission (see [`Device::hold`]).
    pub(crate) fn held_work_bytes(&self) -> u64 {
        self.held.lock().map(|h| h.work_bytes).unwrap_or(0)
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
}
