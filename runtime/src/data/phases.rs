//! Where loading spends its time: wall time of each phase (reading the file, parsing,
//! joining the pieces, the TPC-H schema step, …), collected only while asked for
//! ([`time_phases`], which `horsec bench --load` uses). Phases are timed on the thread that
//! loads (each phase spreads its work over every core), so collecting is per thread.

use std::cell::RefCell;
use std::time::{Duration, Instant};

thread_local! {
    /// The phases timed so far, while collecting.
    static PHASES: RefCell<Option<Vec<(&'static str, Duration)>>> = const { RefCell::new(None) };
}

/// Runs `work` and returns its result with the wall time of every loading phase it went
/// through, summed by phase, in the order each phase first ran.
pub fn time_phases<T>(work: impl FnOnce() -> T) -> (T, Vec<(&'static str, Duration)>) {
    let outer = PHASES.with(|phases| phases.replace(Some(Vec::new())));
    let result = work();
    let timed = PHASES.with(|phases| phases.replace(outer));
    (result, timed.unwrap_or_default())
}

/// Runs the phase `phase` of a load, timing it when phases are collected.
pub(crate) fn time<T>(phase: &'static str, work: impl FnOnce() -> T) -> T {
    if PHASES.with(|phases| phases.borrow().is_none()) {
        return work();
    }
    let start = Instant::now();
    let result = work();
    let spent = start.elapsed();
    PHASES.with(|phases| {
        if let Some(phases) = phases.borrow_mut().as_mut() {
            match phases.iter_mut().find(|(name, _)| *name == phase) {
                Some((_, total)) => *total += spent,
                None => phases.push((phase, spent)),
            }
        }
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_summed_by_name_in_first_run_order() {
        let (answer, phases) = time_phases(|| {
            time("parse", || ());
            time("join", || ());
            time("parse", || 42)
        });
        assert_eq!(answer, 42);
        let names: Vec<&str> = phases.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["parse", "join"]);
        assert!(time_phases(|| ()).1.is_empty());
    }
}
