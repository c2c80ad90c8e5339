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
use crate::gpu::deferred::KERNEL_FAILED;
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
    /// device (one read-back), so that all are checked. The error of the first failing
    /// statement in program order (see [`PendingChecks::earliest_failure`]).
    pub(crate) fn settle(&mut self, device: &Device, read_all: bool) -> Result<()> {
        if self.launches.is_empty() {
            return Ok(());
        }
        let mut read = device
            .take_status_words(read_all)
            .map_err(|e| RuntimeError::new(format!("reading kernels' status words: {e}")))?;
        self.words.append(&mut read);
        if let Some(error) = self.earliest_failure()? {
            self.launches.clear();
            self.words.clear();
            return Err(error);
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

    /// The failures of the launches whose words have come back, in logging order: the
    /// launch's position, the function its kernel belongs to, the error.
    fn failures(&self) -> Result<Vec<(usize, &str, RuntimeError)>> {
        let mut failures = Vec::new();
        let mut used = 0;
        for (k, launch) in self.launches.iter().enumerate() {
            let n = launch.words.len();
            let Some(words) = self.words.get(used..used + n) else {
                break;
            };
            if let Some(error) = launch.failure(words)? {
                failures.push((k, function_of(&launch.kernel.name), error));
            }
            used += n;
        }
        Ok(failures)
    }

    /// The error the CPU, which runs statements one by one in program order, reports: the
    /// failure of the statement that comes first. The outliner fuses statements of distant
    /// places into one kernel and launches kernels in dependence order, so a kernel holding
    /// a later statement may fail before one holding an earlier statement runs. Launches of
    /// one function's body are ordered by their statements' source positions; a launch of
    /// another function after the first failed one (a call) ends the run of comparable
    /// ones.
    fn earliest_failure(&self) -> Result<Option<RuntimeError>> {
        let failures = self.failures()?;
        let Some(&(first, function, _)) = failures.first() else {
            return Ok(None);
        };
        let function = function.to_string();
        let end = first
            + self.launches[first..]
                .iter()
                .take_while(|l| function_of(&l.kernel.name) == function)
                .count();
        Ok(earliest(
            failures
                .into_iter()
                .take_while(|(k, _, _)| *k < end)
                .map(|(_, _, error)| error),
        ))
    }

    /// `error`, unless a launch logged before it failed: the failure of the statement that
    /// comes first in program order leads (what followed a failed launch may have read what
    /// it wrote, and an earlier statement's error comes first on the CPU). `error` competes
    /// only when it has a source position and every failed launch belongs to one function,
    /// the one whose kernel was launched last (the step that failed is of the same body).
    pub(crate) fn first_error(&mut self, device: &Device, error: RuntimeError) -> RuntimeError {
        let last_function = self
            .launches
            .last()
            .map(|l| function_of(&l.kernel.name).to_string());
        match self.settle_all_failures(device) {
            Ok(None) => error,
            Ok(Some((earlier, same_body))) => {
                let competes = same_body
                    && last_function.is_some()
                    && error.location.is_some()
                    && !error.message.contains(KERNEL_FAILED);
                if competes {
                    earliest([earlier, error]).unwrap_or_else(|| RuntimeError::new(""))
                } else {
                    earlier
                }
            }
            Err(e) => e,
        }
    }

    /// Reads every status word back and returns the earliest failure (as
    /// [`PendingChecks::settle`] does), with whether every failed launch and the last launch
    /// belong to one function.
    fn settle_all_failures(&mut self, device: &Device) -> Result<Option<(RuntimeError, bool)>> {
        if self.launches.is_empty() {
            return Ok(None);
        }
        let last = self
            .launches
            .last()
            .map(|l| function_of(&l.kernel.name).to_string());
        let mut read = device
            .take_status_words(true)
            .map_err(|e| RuntimeError::new(format!("reading kernels' status words: {e}")))?;
        self.words.append(&mut read);
        let same_body = {
            let failures = self.failures()?;
            failures.iter().all(|(_, f, _)| Some(*f) == last.as_deref())
        };
        let outcome = self.earliest_failure();
        let complete = self.words.len() >= self.launches.iter().map(|l| l.words.len()).sum();
        let name = self.launches[0].kernel.name.clone();
        self.launches.clear();
        self.words.clear();
        match outcome? {
            Some(error) => Ok(Some((error, same_body))),
            None if complete => Ok(None),
            None => Err(RuntimeError::new(format!(
                "{name}: its status words were not read back"
            ))),
        }
    }
}

/// The function a generated kernel belongs to: its name is `<function>_k<n>`.
fn function_of(kernel: &str) -> &str {
    kernel
        .rsplit_once("_k")
        .map_or(kernel, |(function, _)| function)
}

/// The error of the statement that comes first in the source (errors without a position
/// last; among equals, the first given).
fn earliest(errors: impl IntoIterator<Item = RuntimeError>) -> Option<RuntimeError> {
    errors
        .into_iter()
        .enumerate()
        .min_by_key(|(k, e)| (e.location.is_none(), e.location, *k))
        .map(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(message: &str, line: u32, column: u32) -> RuntimeError {
        RuntimeError {
            message: message.to_string(),
            location: Some((line, column)),
        }
    }

    #[test]
    fn the_error_of_the_statement_first_in_the_source_leads() {
        let later = at("@mod: integer modulo by zero", 9, 5);
        let earlier = at("@index_a: index 7 out of range for length 5", 8, 5);
        let first = earliest([later, earlier.clone()]);
        assert_eq!(first, Some(earlier));
    }

    #[test]
    fn an_error_without_a_position_comes_after_located_ones() {
        let unlocated = RuntimeError::new("no position");
        let located = at("at 12:3", 12, 3);
        assert_eq!(earliest([unlocated, located.clone()]), Some(located));
    }

    #[test]
    fn kernels_belong_to_the_function_their_name_starts_with() {
        assert_eq!(function_of("main_k0"), "main");
        assert_eq!(function_of("my_kernel_fn_k12"), "my_kernel_fn");
    }
}
