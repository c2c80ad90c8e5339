//! A launch's checks: the argument checks it makes on the host before anything runs, and the
//! messages of the checks its kernel makes on the device, naming the failing element as the
//! CPU does (from the positions and operands the kernel recorded).

use rustc_hash::FxHashMap;

use super::{input, LaunchCost};
use crate::engine::encode::part_len;
use crate::engine::location::{self, Location};
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuBuffer};
use crate::kernel::{
    CheckReport, CheckSite, GpuElement, IndexReport, IndexSource, KernelLaunch, LaunchCheck,
    LaunchRule, Length, ScratchId, RECORDED_POSITIONS,
};
use crate::plan::Slot;
use crate::value::{List, Value, Vector};

/// Gives `error` the location of the statement `site` names.
pub(crate) fn located(mut error: RuntimeError, site: &CheckSite) -> RuntimeError {
    if let Some(at) = site.at {
        error.location = Some((at.line, at.column));
    }
    error
}

/// `inputs` with the values that the launch checks read as numbers (counts, lengths given
/// by a value) on the host; `inputs` as they are when the checks read none (no copy of the
/// map per launch).
pub(super) fn hosted_check_inputs<'i>(
    device: &Device,
    location: &mut Location,
    kernel: &KernelLaunch,
    inputs: &'i FxHashMap<Slot, Value>,
    cost: &mut LaunchCost,
) -> Result<std::borrow::Cow<'i, FxHashMap<Slot, Value>>> {
    let mut slots = Vec::new();
    for check in &kernel.launch_checks {
        match &check.rule {
            LaunchRule::Broadcast(a, b) | LaunchRule::MaskLength(a, b) => {
                length_value_slots(a, &mut slots);
                length_value_slots(b, &mut slots);
            }
            LaunchRule::Count { count, .. } => slots.push(*count),
        }
    }
    let mut hosted = std::borrow::Cow::Borrowed(inputs);
    for slot in slots {
        let (value, moved) = location.host_scalar(device, input(inputs, slot, kernel)?)?;
        cost.download_bytes += moved.bytes;
        cost.download_time += moved.time;
        hosted.to_mut().insert(slot, value);
    }
    Ok(hosted)
}

/// The slots whose values give `length` (`Length::ValueOf`), appended to `slots`.
fn length_value_slots(length: &Length, slots: &mut Vec<Slot>) {
    match length {
        Length::ValueOf(slot) => slots.push(*slot),
        Length::Broadcast(a, b) | Length::Max(a, b) | Length::Min(a, b) | Length::Sum(a, b) => {
            length_value_slots(a, slots);
            length_value_slots(b, slots);
        }
        Length::Constant(_) | Length::Of { .. } | Length::Compacted(_) => {}
    }
}

/// The length of an input part, or a constant (the lengths launch checks compare).
fn static_length(
    kernel: &KernelLaunch,
    length: &Length,
    values: &FxHashMap<Slot, Value>,
) -> Result<u64> {
    Ok(match length {
        Length::Constant(n) => *n,
        Length::Of { slot, part } => part_len(input(values, *slot, kernel)?, *part)?,
        Length::Broadcast(a, b) => match (
            static_length(kernel, a, values)?,
            static_length(kernel, b, values)?,
        ) {
            (1, m) => m,
            (n, 1) => n,
            (n, m) => n.max(m),
        },
        Length::Max(a, b) => {
            static_length(kernel, a, values)?.max(static_length(kernel, b, values)?)
        }
        Length::Min(a, b) => {
            static_length(kernel, a, values)?.min(static_length(kernel, b, values)?)
        }
        Length::Sum(a, b) => static_length(kernel, a, values)?
            .checked_add(static_length(kernel, b, values)?)
            .ok_or_else(|| RuntimeError::new("a length overflows"))?,
        Length::ValueOf(slot) => match input(values, *slot, kernel)? {
            Value::Vector(v) if v.len() == 1 => {
                let n = v.integer_at(0).ok_or_else(|| {
                    RuntimeError::new(format!("{}: a length that is not an integer", kernel.name))
                })?;
                u64::try_from(n).map_err(|_| {
                    RuntimeError::new(format!("a length must not be negative, got {n}"))
                })?
            }
            _ => {
                return Err(RuntimeError::new(format!(
                    "{}: slot {} must hold one integer (a length)",
                    kernel.name, slot.0
                )))
            }
        },
        Length::Compacted(_) => {
            return Err(RuntimeError::new(format!(
                "{}: a launch check of a length known only on the device",
                kernel.name
            )))
        }
    })
}

/// The first element position a check recorded in the scratch `first` (which holds its
/// complement; 0: none recorded).
fn first_recorded(
    device: &Device,
    kernel: &KernelLaunch,
    recorded: &Recorded,
    first: ScratchId,
) -> Result<Option<usize>> {
    let word = device
        .download_range(recorded.buffer(kernel, first)?, 0, 1)
        .map_err(|e| RuntimeError::new(format!("{}: {e}", kernel.name)))?[0];
    Ok((word != 0).then_some(!word as usize))
}

/// What a launch whose checks name the failing element keeps for its pending check: its
/// inputs and the scratch buffers where the kernel recorded positions and operands.
pub(crate) struct Recorded {
    pub(super) values: FxHashMap<Slot, Value>,
    pub(super) scratch: FxHashMap<ScratchId, GpuBuffer<u32>>,
}

impl Recorded {
    fn buffer(&self, kernel: &KernelLaunch, id: ScratchId) -> Result<&GpuBuffer<u32>> {
        self.scratch.get(&id).ok_or_else(|| {
            RuntimeError::new(format!("{}: no scratch buffer {}", kernel.name, id.0))
        })
    }
}

/// The message of `check`, a failed check of `kernel` with a report, naming the failing
/// element as the CPU does (None: the check's own message).
pub(crate) fn report_message(
    device: &Device,
    kernel: &KernelLaunch,
    check: &crate::kernel::StatusCheck,
    recorded: &Recorded,
) -> Result<Option<String>> {
    let gpu_error = |e: crate::gpu::GpuError| RuntimeError::new(format!("{}: {e}", kernel.name));
    Ok(match &check.report {
        Some(CheckReport::Index(report)) => index_message(device, kernel, report, recorded)?,
        Some(CheckReport::Shift {
            builtin,
            ty,
            minus,
            unit,
            first,
            operands,
        }) => first_recorded(device, kernel, recorded, *first)?
            .filter(|&position| (position as u64) < RECORDED_POSITIONS)
            .map(|position| {
                let words = device
                    .download_range(recorded.buffer(kernel, *operands)?, 4 * position, 4)
                    .map_err(gpu_error)?;
                let word = |k: usize| {
                    (u64::from(words[2 * k]) | (u64::from(words[2 * k + 1]) << 32)) as i64
                };
                let shifted = match unit {
                    Some(unit) => {
                        crate::temporal::datetime_shift(ty, unit, word(0), word(1), *minus)
                    }
                    None => crate::temporal::shift(ty, word(0), word(1), *minus),
                };
                Ok::<_, RuntimeError>(shifted.err().map(|why| format!("@{builtin}: {why}")))
            })
            .transpose()?
            .flatten(),
        Some(CheckReport::Factorial { first, arguments }) => {
            first_recorded(device, kernel, recorded, *first)?
                .filter(|&position| (position as u64) < RECORDED_POSITIONS)
                .map(|position| {
                    let words = device
                        .download_range(recorded.buffer(kernel, *arguments)?, 2 * position, 2)
                        .map_err(gpu_error)?;
                    let argument = (u64::from(words[0]) | (u64::from(words[1]) << 32)) as i64;
                    Ok::<_, RuntimeError>(
                        crate::numeric::factorial(argument)
                            .err()
                            .map(|why| format!("@fact: {why}")),
                    )
                })
                .transpose()?
                .flatten()
        }
        None => None,
    })
}

/// The CPU's message for the first index out of range (None when none was found).
fn index_message(
    device: &Device,
    kernel: &KernelLaunch,
    report: &IndexReport,
    recorded: &Recorded,
) -> Result<Option<String>> {
    let values = &recorded.values;
    let mut slots = Vec::new();
    if let IndexSource::Input(slot) = report.index {
        slots.push(slot);
    }
    length_value_slots(&report.length, &mut slots);
    let mut hosted = values.clone();
    for slot in slots {
        let (value, _) = location::host(device, input(values, slot, kernel)?)?;
        hosted.insert(slot, value);
    }
    let length = static_length(kernel, &report.length, &hosted)?;
    let first = match &report.index {
        IndexSource::Input(slot) => {
            let out_of_range = |index: &Vector, positions: std::ops::Range<usize>| {
                positions
                    .filter_map(|k| index.integer_at(k))
                    .find(|&i| i < 0 || i as u64 >= length)
            };
            match input(&hosted, *slot, kernel)? {
                Value::Vector(index) => out_of_range(index, 0..index.len()),
                // The positions of a list kernel's cells, in cell order (as the CPU's
                // `@each_right(@index, x, cells)` meets them).
                Value::List(List::Flat { values, offsets }) => offsets
                    .windows(2)
                    .find_map(|cell| out_of_range(values, cell[0]..cell[1])),
                Value::List(List::Mixed(cells)) => cells.iter().find_map(|cell| match cell {
                    Value::Vector(index) => out_of_range(index, 0..index.len()),
                    _ => None,
                }),
                _ => return Ok(None),
            }
        }
        IndexSource::Device {
            first,
            values,
            element,
        } => {
            let download = |id: ScratchId, start: usize, count: usize| {
                device
                    .download_range(recorded.buffer(kernel, id)?, start, count)
                    .map_err(|e| RuntimeError::new(format!("{}: {e}", kernel.name)))
            };
            let Some(position) = first_recorded(device, kernel, recorded, *first)? else {
                return Ok(None);
            };
            if position as u64 >= RECORDED_POSITIONS {
                return Ok(None);
            }
            match element {
                GpuElement::I64 => {
                    let words = download(*values, 2 * position, 2)?;
                    Some((u64::from(words[0]) | (u64::from(words[1]) << 32)) as i64)
                }
                GpuElement::I32 => Some(i64::from(download(*values, position, 1)?[0] as i32)),
                _ => None,
            }
        }
    };
    Ok(first.map(|i| {
        format!(
            "@{}: index {i} out of range for length {length}",
            report.builtin
        )
    }))
}

/// Makes one of the kernel's argument checks, failing as the CPU builtin would.
pub(super) fn check_arguments(
    kernel: &KernelLaunch,
    check: &LaunchCheck,
    values: &FxHashMap<Slot, Value>,
) -> Result<()> {
    let fail = |message: String| {
        Err(located(
            RuntimeError::new(format!("@{}: {message}", check.builtin)),
            &check.site,
        ))
    };
    match &check.rule {
        LaunchRule::Broadcast(a, b) => {
            let (n, m) = (
                static_length(kernel, a, values)?,
                static_length(kernel, b, values)?,
            );
            if n != m && n != 1 && m != 1 {
                return fail(format!("length mismatch ({n} vs {m})"));
            }
        }
        LaunchRule::MaskLength(mask, data) => {
            let (n, m) = (
                static_length(kernel, mask, values)?,
                static_length(kernel, data, values)?,
            );
            if n != m {
                return fail(format!("length mismatch (mask {n} vs {m})"));
            }
        }
        LaunchRule::Count {
            count,
            element_bytes,
        } => match input(values, *count, kernel)? {
            Value::Vector(v) => match (v.len(), v.integer_at(0)) {
                (1, Some(n)) => {
                    if let Err(e) = crate::sizes::checked_count(n, *element_bytes) {
                        return fail(format!("cannot make {n} elements: {e}"));
                    }
                }
                _ => {
                    return fail(format!(
                        "expected one integer, got {} element(s) of {}",
                        v.len(),
                        v.ty()
                    ))
                }
            },
            other => return fail(format!("expected a count, got a {}", other.ty())),
        },
    }
    Ok(())
}
