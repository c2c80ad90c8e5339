//! Kernel errors read late: a launch does not wait for its kernel to finish to read its status
//! word. Each launch copies its status words into the device's status log (`gpu::deferred`)
//! inside its own submission; the words come back with the next read-back the host makes
//! anyway (a count that sizes an allocation, a scalar that steers control flow, a host step's
//! input, the result), or when the query finishes. The engine keeps, per logged launch, what
//! it needs to name the error exactly as an immediate check would have: the kernel's checks,
//! and the launch's source location. (A kernel whose checks name the failing element is
//! checked at launch instead: see `launch`.)
//!
//! A read-back that brings an error bit fails instead of returning data (see
//! `Device::download_range`), so no host step ever sees what a failed kernel wrote; the
//! engine then reports the first failed launch in program order.

use std::sync::Arc;

use super::launch::located;
use crate::error::{Result, RuntimeError};
use crate::gpu::Device;
use crate::kernel::{KernelLaunch, ScratchId};
use crate::plan::Location;

/// The status words a launch of `kernel` logs: each status scratch once, with the bits its
/// checks set (the other bits of the word are not errors).
pub(crate) fn status_words(kernel: &KernelLaunch) -> Vec<(ScratchId, u32)> {
    let mut words: Vec<(ScratchId, u32)> = Vec::new();
    for check in &kernel.checks {
        let bit = 1u32 << (check.bit & 31);
        match words.iter_mut().find(|(id, _)| *id == check.status) {
            Some((_, mask)) => *mask |= bit,
            None => words.push((check.status, bit)),
        }
    }
    words
}

/// One launch whose status words are in the log and not yet checked.
pub(crate) struct PendingStatus {
    kernel: Arc<KernelLaunch>,
    /// The launch statement, for errors whose check has no location of its own.
    at: Location,
    /// The status scratches logged, in logging order.
    words: Vec<ScratchId>,
}

impl PendingStatus {
    pub(crate) fn new(
        kernel: &Arc<KernelLaunch>,
        at: Location,
        words: &[(ScratchId, u32)],
    ) -> PendingStatus {
        PendingStatus {
            kernel: Arc::clone(kernel),
            at,
            words: words.iter().map(|(id, _)| *id).collect(),
        }
    }

    /// The error the launch's status words show, as the immediate check reported it: the
    /// first check (in the kernel's order) whose bit is set.
    fn failure(&self, words: &[u32]) -> Result<Option<RuntimeError>> {
        for check in &self.kernel.checks {
            let Some(k) = self.words.iter().position(|id| *id == check.status) else {
                continue;
            };
            let word = words.get(k).copied().unwrap_or(0);
            if word & (1 << (check.bit & 31)) != 0 {
                // Kernels whose checks carry a report are checked at launch (see
                // `launch`), so a deferred check's message is its own.
                let message = check.message.clone();
                let mut error = located(RuntimeError::new(message), &check.site);
                if error.location.is_none() {
                    error.location = Some((self.at.line, self.at.column));
                }
                return Ok(Some(error));
            }
        }
        Ok(None)
    }
}

/// The launches logged and not yet checked, in program order, and status words read back
/// for them.
#[derive(Default)]
pub(crate) struct PendingChecks {
    launches: Vec<PendingStatus>,
    words: Vec<u32>,
}

impl PendingChecks {
    pub(crate) fn push(&mut self, pending: PendingStatus) {
        self.launches.push(pending);
    }

    /// Checks the launches whose status words have come back, in program order, and
    /// forgets those that passed; with `read_all`, first reads back every word still on the
    /// device (one read-back), so that all are checked. The first failed launch's error.
    pub(crate) fn settle(&mut self, device: &Device, read_all: bool) -> Result<()> {
        if self.launches.is_empty() {
            return Ok(());
        }
        let mut read = device
            .take_status_words(read_all)
            .map_err(|e| RuntimeError::new(format!("reading kernels' status words: {e}")))?;
        self.words.append(&mut read);
        let (mut used, mut passed) = (0, 0);
        for launch in &self.launches {
            let n = launch.words.len();
            let Some(words) = self.words.get(used..used + n) else {
                break;
            };
            if let Some(error) = launch.failure(words)? {
                self.launches.clear();
                self.words.clear();
                return Err(error);
            }
            used += n;
            passed += 1;
        }
        self.launches.drain(..passed);
        self.words.drain(..used);
        if read_all && !self.launches.is_empty() {
            let name = self.launches[0].kernel.name.clone();
            self.launches.clear();
            self.words.clear();
            return Err(RuntimeError::new(format!(
                "{name}: its status words were not read back"
            )));
        }
        Ok(())
    }

    /// `error`, unless a launch logged before it failed: that launch's error comes first
    /// (what followed it may have read what the failed kernel wrote).
    pub(crate) fn first_error(&mut self, device: &Device, error: RuntimeError) -> RuntimeError {
        match self.settle(device, true) {
            Ok(()) => error,
            Err(earlier) => earlier,
        }
    }
}
