//! Kernel errors read late: a launch does not wait for its kernel to finish to read its status
//! word. Each launch copies its status words into the device's status log (`gpu::deferred`)
//! inside its own submission; the words come back with the next read-back the host makes
//! anyway (a count that sizes an allocation, a scalar that steers control flow, a host step's
//! input, the result), or when the query finishes. The engine keeps, per logged launch, what
//! it needs to name the error exactly as an immediate check would have: the kernel's checks,
//! and the launch's source location; for a kernel whose checks name the failing element,
//! also the inputs and scratch buffers their messages read (see `launch::Recorded`).
//!
//! A read-back that brings an error bit fails instead of returning data (see
//! `Device::download_range`), so no host step ever sees what a failed kernel wrote; the
//! engine then reports the first failed launch in program order.

use std::sync::Arc;

use super::launch::{located, report_message, Recorded};
use crate::error::{Result, RuntimeError};
use crate::gpu::deferred::KERNEL_FAILED;
use crate::gpu::Device;
use crate::interp::{position_key, SourcePath};
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
    /// Where the launching body ran (see [`SourcePath`]).
    context: SourcePath,
    /// For a kernel whose checks name the failing element: what their messages read.
    reports: Option<Recorded>,
}

impl PendingStatus {
    pub(crate) fn new(
        kernel: &Arc<KernelLaunch>,
        at: Location,
        context: &[u64],
        words: &[(ScratchId, u32)],
        reports: Option<Recorded>,
    ) -> PendingStatus {
        PendingStatus {
            kernel: Arc::clone(kernel),
            at,
            words: words.iter().map(|(id, _)| *id).collect(),
            context: context.to_vec(),
            reports,
        }
    }

    /// The [`SourcePath`] of `error`, a failure of this launch: the launching body's context,
    /// then the failing statement's position.
    fn path_of(&self, error: &RuntimeError) -> SourcePath {
        let (line, column) = error.location.unwrap_or((self.at.line, self.at.column));
        let mut path = self.context.clone();
        path.push(position_key(line, column));
        path
    }

    /// The error the launch's status words show, as the immediate check reported it: the
    /// first check (in the kernel's order) whose bit is set.
    fn failure(&self, device: &Device, words: &[u32]) -> Result<Option<RuntimeError>> {
        for check in &self.kernel.checks {
            let Some(k) = self.words.iter().position(|id| *id == check.status) else {
                continue;
            };
            let word = words.get(k).copied().unwrap_or(0);
            if word & (1 << (check.bit & 31)) != 0 {
                // A check with a report names the failing element from what the kernel
                // recorded.
                let named = match &self.reports {
                    Some(recorded) if check.report.is_some() => {
                        report_message(device, &self.kernel, check, recorded)?
                    }
                    _ => None,
                };
                let message = named.unwrap_or_else(|| check.message.clone());
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
    /// A failure a read-back already reported (as the error of the step that read), kept
    /// with its path for [`PendingChecks::first_error`].
    reported: Option<(RuntimeError, SourcePath)>,
}

impl PendingChecks {
    pub(crate) fn push(&mut self, pending: PendingStatus) {
        self.launches.push(pending);
    }

    /// Checks the launches whose status words have come back and forgets those that passed;
    /// with `read_all`, first reads back every word still on the device (one read-back), so
    /// that all are checked. A failure is the error of the statement first in execution
    /// order (see [`PendingChecks::earliest_failure`]).
    pub(crate) fn settle(&mut self, device: &Device, read_all: bool) -> Result<()> {
        if self.launches.is_empty() {
            return Ok(());
        }
        let mut read = device
            .take_status_words(read_all)
            .map_err(|e| RuntimeError::new(format!("reading kernels' status words: {e}")))?;
        self.words.append(&mut read);
        if let Some((error, path)) = self.earliest_failure(device)? {
            self.launches.clear();
            self.words.clear();
            // The words of later launches still on the device are dropped with them: read
            // later, they would be taken for the words of launches that come after.
            device.reset_status_log();
            // Of two failures read back in one run, the earlier statement's is the run's.
            if self.reported.as_ref().is_none_or(|(_, kept)| path < *kept) {
                self.reported = Some((error.clone(), path.clone()));
            }
            // The step that read reports it, but the statement ran at the launch.
            return Err(RuntimeError {
                ran_at: Some(path),
                ..error
            });
        }
        let (mut used, mut passed) = (0, 0);
        for launch in &self.launches {
            let n = launch.words.len();
            if self.words.len() < used + n {
                break;
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

    /// The failures of the launches whose words have come back, with their paths.
    fn failures(&self, device: &Device) -> Result<Vec<(RuntimeError, SourcePath)>> {
        let mut failures = Vec::new();
        let mut used = 0;
        for launch in &self.launches {
            let n = launch.words.len();
            let Some(words) = self.words.get(used..used + n) else {
                break;
            };
            if let Some(error) = launch.failure(device, words)? {
                let path = launch.path_of(&error);
                failures.push((error, path));
            }
            used += n;
        }
        Ok(failures)
    }

    /// The error the CPU, which runs statements one by one in execution order, reports: the
    /// failure whose [`SourcePath`] is smallest. The outliner fuses statements of distant
    /// places into one kernel and launches kernels in dependence order, so a kernel holding
    /// a later statement may fail before one holding an earlier statement runs.
    fn earliest_failure(&self, device: &Device) -> Result<Option<(RuntimeError, SourcePath)>> {
        Ok(earliest(self.failures(device)?))
    }

    /// The run's error when it stopped with `error`, whose path is `failure` (empty when
    /// it is not a statement's): of `error`, a failure a read-back reported and the
    /// failures of every launch still unchecked (all status words are read back now), the
    /// one first in execution order. An error that only says a read-back brought a failed
    /// kernel's bit never leads: the kernel's own failure does.
    pub(crate) fn first_error(
        &mut self,
        device: &Device,
        error: RuntimeError,
        failure: &[u64],
    ) -> RuntimeError {
        let mut candidates = match self.settle_all_failures(device) {
            Ok(failures) => failures,
            Err(e) => return e,
        };
        candidates.extend(self.reported.take());
        if !error.message.contains(KERNEL_FAILED) || candidates.is_empty() {
            let path = if failure.is_empty() {
                vec![u64::MAX]
            } else {
                failure.to_vec()
            };
            candidates.push((error, path));
        }
        earliest(candidates)
            .map(|(error, _)| error)
            .unwrap_or_else(|| RuntimeError::new("a run failed without an error"))
    }

    /// Reads every status word back and returns the failures of the launches not yet
    /// checked (with their paths).
    fn settle_all_failures(&mut self, device: &Device) -> Result<Vec<(RuntimeError, SourcePath)>> {
        if self.launches.is_empty() {
            return Ok(Vec::new());
        }
        let mut read = device
            .take_status_words(true)
            .map_err(|e| RuntimeError::new(format!("reading kernels' status words: {e}")))?;
        self.words.append(&mut read);
        let failures = self.failures(device);
        let complete = self.words.len() >= self.launches.iter().map(|l| l.words.len()).sum();
        let name = self.launches[0].kernel.name.clone();
        self.launches.clear();
        self.words.clear();
        let failures = failures?;
        if failures.is_empty() && !complete {
            return Err(RuntimeError::new(format!(
                "{name}: its status words were not read back"
            )));
        }
        Ok(failures)
    }
}

/// The failure first in execution order: the smallest path (among equals, the first given).
fn earliest(
    failures: impl IntoIterator<Item = (RuntimeError, SourcePath)>,
) -> Option<(RuntimeError, SourcePath)> {
    failures
        .into_iter()
        .enumerate()
        .min_by(|(i, (_, a)), (j, (_, b))| a.cmp(b).then(i.cmp(j)))
        .map(|(_, failure)| failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(message: &str, line: u32, column: u32) -> (RuntimeError, SourcePath) {
        let error = RuntimeError {
            message: message.to_string(),
            location: Some((line, column)),
            ran_at: None,
        };
        (error, vec![position_key(line, column)])
    }

    #[test]
    fn the_error_of_the_statement_first_in_the_source_leads() {
        let later = at("@mod: integer modulo by zero", 9, 5);
        let earlier = at("@index_a: index 7 out of range for length 5", 8, 5);
        let first = earliest([later, earlier.clone()]);
        assert_eq!(first, Some(earlier));
    }

    #[test]
    fn an_error_inside_a_call_comes_at_the_call() {
        // A failure at line 3 of a function called at line 20 comes after one at line 15 of
        // the caller, and before one at line 21.
        let (error, mut path) = at("@mod: integer modulo by zero", 3, 5);
        path.insert(0, position_key(20, 5));
        let in_call = (error, path);
        let before = at("@min: no minimum of no elements", 15, 5);
        let after = at("@lt: length mismatch (1 vs 2)", 21, 5);
        assert_eq!(earliest([in_call.clone(), before.clone()]), Some(before));
        assert_eq!(earliest([after, in_call.clone()]), Some(in_call));
    }

    #[test]
    fn an_earlier_iteration_comes_first_whatever_the_positions() {
        let loop_at = position_key(10, 5);
        let late_in_first = (
            RuntimeError::new("late statement, iteration 0"),
            vec![loop_at, 0, position_key(14, 7)],
        );
        let early_in_second = (
            RuntimeError::new("early statement, iteration 1"),
            vec![loop_at, 1, position_key(11, 7)],
        );
        assert_eq!(
            earliest([early_in_second, late_in_first.clone()]),
            Some(late_in_first)
        );
    }
}
