//! Where execution time went, step by step: what `--time` and `horsec bench` report.
//!
//! Every builtin call and kernel launch the interpreter makes is recorded with its
//! [`Placement`]. A compute step that ran on the CPU under the GPU backend is thereby visible
//! (listed by [`Profile::cpu_compute_steps`]), never a silent fallback.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::builtin::Builtin;

/// Where one step ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Host bookkeeping of containers: tables, columns, lists, dictionaries, printing. No
    /// element is computed; these stay on the CPU under every backend.
    Host,
    /// A compute step on the CPU.
    Cpu,
    /// A generated (fused) kernel on the GPU.
    GpuKernel,
    /// A library kernel on the GPU (sort, group, join, …).
    GpuLibrary,
    /// Copies between host and GPU memory.
    Transfer,
}

impl Placement {
    fn label(self) -> &'static str {
        match self {
            Placement::Host => "host (containers)",
            Placement::Cpu => "CPU compute",
            Placement::GpuKernel => "GPU kernels",
            Placement::GpuLibrary => "GPU library kernels",
            Placement::Transfer => "transfer",
        }
    }
}

/// Builtins that only build, take apart or print containers: they compute no element, so
/// they run on the host under the GPU backend too (DESIGN.md: only data loading and building
/// the output stay on the CPU).
pub fn is_host_builtin(b: Builtin) -> bool {
    matches!(
        b,
        Builtin::LoadTable
            | Builtin::ColumnValue
            | Builtin::List
            | Builtin::Enlist
            | Builtin::ToList
            | Builtin::Table
            | Builtin::KTable
            | Builtin::Dict
            | Builtin::Keys
            | Builtin::Values
            | Builtin::Meta
            // An enum keeps its values as a column: fetching them computes nothing.
            | Builtin::Fetch
            | Builtin::Print
            | Builtin::Format
            | Builtin::LoadCsv
    )
}

/// Tallies every GPU library step reports of the host's device operations during it (see
/// [`Profile::tally`]): blocking waits, dispatches recorded, queue submissions, pipeline
/// look-ups.
pub const HOST_WAITS: &str = "host waits";
pub const DISPATCHES: &str = "dispatches";
pub const SUBMISSIONS: &str = "submissions";
pub const PIPELINE_LOOKUPS: &str = "pipeline look-ups";

/// Count and total time of one kind of step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepTotals {
    pub count: u32,
    pub time: Duration,
}

/// Totals per placement and step name (`@sum`, a kernel's name, `upload`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Per placement and step name, sorted by both (the order of every listing). A vector
    /// searched by halves, not maps: recording is on every step's path, and a run records
    /// some ten names, each a new map entry (and the builtins' names new strings) in every
    /// run's fresh profile.
    steps: Vec<(Placement, Cow<'static, str>, StepTotals)>,
    /// Bytes copied to the GPU and back for generated kernels.
    pub uploaded_bytes: u64,
    pub downloaded_bytes: u64,
    /// GPU time of generated kernels measured by timestamp queries (zero where the device
    /// has none): the part of the kernels' wall time the GPU was actually computing.
    pub gpu_busy: Duration,
    /// GPU time of library kernels by timestamp queries, measured only while the device
    /// profiles (`--time`; zero otherwise).
    pub gpu_busy_library: Duration,
    /// Device values read back because a host step needed their elements: per step
    /// (`@raze`, `if`, `result`, …), reads and bytes.
    read_backs: BTreeMap<String, (u32, u64)>,
    /// Bytes GPU steps read back while they ran (compaction counts, status words, list
    /// results, library kernels' own reads): per step, steps that read and bytes.
    step_reads: BTreeMap<String, (u32, u64)>,
    /// Counters library steps report of their own work (`@multiway_count`: tries built and
    /// reused, rounds, host waits, …): per step, (counter, total) in the order first seen.
    tallies: BTreeMap<String, Vec<(String, u64)>>,
}

impl Profile {
    pub fn new() -> Profile {
        Profile::default()
    }

    /// Adds one step of `name` at `placement` that took `time`.
    pub fn record(&mut self, placement: Placement, name: &str, time: Duration) {
        self.add(placement, name, || Cow::Owned(name.to_string()), time);
    }

    /// [`Profile::record`] of a name that lives as long as the program (a builtin's): kept
    /// without a copy.
    pub fn record_static(&mut self, placement: Placement, name: &'static str, time: Duration) {
        self.add(placement, name, || Cow::Borrowed(name), time);
    }

    fn add(
        &mut self,
        placement: Placement,
        name: &str,
        owned: impl FnOnce() -> Cow<'static, str>,
        time: Duration,
    ) {
        let at = match self
            .steps
            .binary_search_by(|(p, n, _)| (*p, n.as_ref()).cmp(&(placement, name)))
        {
            Ok(at) => at,
            Err(at) => {
                self.steps
                    .insert(at, (placement, owned(), StepTotals::default()));
                at
            }
        };
        if let Some((_, _, totals)) = self.steps.get_mut(at) {
            totals.count += 1;
            totals.time += time;
        }
    }

    /// The steps recorded at `placement`, by name.
    fn at(&self, placement: Placement) -> impl Iterator<Item = (&str, &StepTotals)> + '_ {
        self.steps
            .iter()
            .filter(move |(p, _, _)| *p == placement)
            .map(|(_, name, totals)| (name.as_ref(), totals))
    }

    /// Records that `step` (a host step) needed a device value's elements: `bytes` read back
    /// in `time`.
    pub fn read_back(&mut self, step: &str, bytes: u64, time: Duration) {
        let entry = self.read_backs.entry(step.to_string()).or_default();
        entry.0 += 1;
        entry.1 += bytes;
        self.downloaded_bytes += bytes;
        self.record(Placement::Transfer, &format!("read back for {step}"), time);
    }

    /// Records that GPU step `step` (a kernel, a library builtin) read `bytes` back while it
    /// ran.
    pub fn step_read(&mut self, step: &str, bytes: u64) {
        if bytes > 0 {
            let entry = self.step_reads.entry(step.to_string()).or_default();
            entry.0 += 1;
            entry.1 += bytes;
        }
    }

    /// Adds `n` to counter `what` of step `step` (see [`Profile::tallies`]).
    pub fn tally(&mut self, step: &str, what: &str, n: u64) {
        let counters = self.tallies.entry(step.to_string()).or_default();
        match counters.iter_mut().find(|(name, _)| name == what) {
            Some((_, total)) => *total += n,
            None => counters.push((what.to_string(), n)),
        }
    }

    /// Counter `what` of step `step` (0 when never reported).
    pub fn tallied(&self, step: &str, what: &str) -> u64 {
        self.tallies
            .get(step)
            .and_then(|c| c.iter().find(|(name, _)| name == what))
            .map_or(0, |(_, n)| *n)
    }

    /// The counters steps reported: (step, [(counter, total)]).
    pub fn tallies(&self) -> impl Iterator<Item = (&str, &[(String, u64)])> + '_ {
        self.tallies
            .iter()
            .map(|(step, counters)| (step.as_str(), counters.as_slice()))
    }

    /// The GPU steps that read bytes back while they ran: (step, times, bytes).
    pub fn step_reads(&self) -> impl Iterator<Item = (&str, u32, u64)> + '_ {
        self.step_reads
            .iter()
            .map(|(step, &(n, bytes))| (step.as_str(), n, bytes))
    }

    /// The host steps that read device values back: (step, reads, bytes).
    pub fn read_backs(&self) -> impl Iterator<Item = (&str, u32, u64)> + '_ {
        self.read_backs
            .iter()
            .map(|(step, &(n, bytes))| (step.as_str(), n, bytes))
    }

    /// The total time at `placement`.
    pub fn total(&self, placement: Placement) -> Duration {
        self.at(placement).map(|(_, t)| t.time).sum()
    }

    /// Compute steps that ran on the CPU, by name, with their totals.
    pub fn cpu_compute_steps(&self) -> Vec<(&str, StepTotals)> {
        self.at(Placement::Cpu)
            .map(|(name, t)| (name, *t))
            .collect()
    }

    /// Every step of every placement, in placement order.
    pub fn steps(&self) -> impl Iterator<Item = (Placement, &str, StepTotals)> + '_ {
        self.steps.iter().map(|(p, n, t)| (*p, n.as_ref(), *t))
    }

    /// The breakdown as indented lines: a total per placement, then the CPU compute steps.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for placement in [
            Placement::Transfer,
            Placement::GpuKernel,
            Placement::GpuLibrary,
            Placement::Cpu,
            Placement::Host,
        ] {
            let count: u32 = self.at(placement).map(|(_, t)| t.count).sum();
            if count > 0 {
                let _ = writeln!(
                    out,
                    "  {:<22} {:>10.3} ms  ({count} steps)",
                    placement.label(),
                    self.total(placement).as_secs_f64() * 1e3
                );
            }
        }
        if !self.gpu_busy.is_zero() {
            let _ = writeln!(
                out,
                "  GPU busy (timestamps) {:>10.3} ms  (generated kernels)",
                self.gpu_busy.as_secs_f64() * 1e3
            );
        }
        if !self.gpu_busy_library.is_zero() {
            let _ = writeln!(
                out,
                "  GPU busy (timestamps) {:>10.3} ms  (library kernels)",
                self.gpu_busy_library.as_secs_f64() * 1e3
            );
        }
        if self.uploaded_bytes + self.downloaded_bytes > 0 {
            let _ = writeln!(
                out,
                "  kernel data moved      {:.1} MB up, {:.1} MB down",
                self.uploaded_bytes as f64 / 1e6,
                self.downloaded_bytes as f64 / 1e6
            );
        }
        let mut slowest: Vec<(&str, &StepTotals)> = self
            .steps
            .iter()
            .filter(|(p, _, _)| *p != Placement::Host)
            .map(|(_, n, t)| (n.as_ref(), t))
            .collect();
        slowest.sort_by_key(|entry| std::cmp::Reverse(entry.1.time));
        if !slowest.is_empty() {
            let names: Vec<String> = slowest
                .iter()
                .take(6)
                .map(|(name, t)| format!("{name} {:.2} ms", t.time.as_secs_f64() * 1e3))
                .collect();
            let _ = writeln!(out, "  slowest steps: {}", names.join(", "));
        }
        if !self.read_backs.is_empty() {
            let steps: Vec<String> = self
                .read_backs()
                .map(|(step, n, bytes)| format!("{step} ×{n} {bytes} B"))
                .collect();
            let _ = writeln!(out, "  read back for host steps: {}", steps.join(", "));
        }
        if !self.step_reads.is_empty() {
            let steps: Vec<String> = self
                .step_reads()
                .map(|(step, n, bytes)| format!("{step} ×{n} {bytes} B"))
                .collect();
            let _ = writeln!(out, "  read back inside GPU steps: {}", steps.join(", "));
        }
        for (step, counters) in self.tallies() {
            let parts: Vec<String> = counters
                .iter()
                .map(|(what, n)| format!("{what} {n}"))
                .collect();
            let _ = writeln!(out, "  {step}: {}", parts.join(", "));
        }
        let cpu = self.cpu_compute_steps();
        if cpu.is_empty() {
            out.push_str("  no compute step ran on the CPU\n");
        } else {
            let names: Vec<String> = cpu
                .iter()
                .map(|(name, t)| format!("{name} ×{}", t.count))
                .collect();
            let _ = writeln!(out, "  compute steps on the CPU: {}", names.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_compute_steps_are_listed_and_host_steps_are_not() {
        let mut p = Profile::new();
        p.record(Placement::Host, "@load_table", Duration::from_millis(1));
        p.record(Placement::Cpu, "@sum", Duration::from_millis(2));
        p.record(Placement::Cpu, "@sum", Duration::from_millis(3));
        let cpu = p.cpu_compute_steps();
        assert_eq!(cpu.len(), 1);
        assert_eq!(cpu[0].0, "@sum");
        assert_eq!(cpu[0].1.count, 2);
        assert_eq!(p.total(Placement::Cpu), Duration::from_millis(5));
        assert!(p.report().contains("compute steps on the CPU: @sum ×2"));
    }

    #[test]
    fn containers_are_host_steps_and_arithmetic_is_not() {
        assert!(is_host_builtin(Builtin::LoadTable));
        assert!(is_host_builtin(Builtin::Table));
        assert!(!is_host_builtin(Builtin::Plus));
        assert!(!is_host_builtin(Builtin::Order));
    }
}
