//! Builtins outside kernels that the engine does itself on values with device parts,
//! without reading them back: containers of device values (`@list`, `@keys`/`@values`, a
//! list's cell), `@take`/`@drop` of a device vector (a slice on the device), `@index` of
//! one by host positions (a slice or a gather on the device), and `@tolist` of one (its
//! elements as one-element cells, the offsets made on the device). Each returns None where the CPU's
//! own builtin is to run, with its checks and errors.

use std::borrow::Cow;
use std::sync::Arc;

use super::GpuEngine;
use crate::args::ArgValue;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::kernel::GpuElement;
use crate::profile::{Placement, Profile};
use crate::value::{DeviceList, DeviceVector, List, Value};

/// Container builtins over values with device parts, done without reading anything back:
/// `@list` of device vectors, `@keys`/`@values` of a dictionary, a cell of a list. None
/// where the CPU's own builtin is to run (on host values, with its checks and errors).
pub(super) fn container_on_device(b: Builtin, args: &[ArgValue<'_>]) -> Option<Value> {
    // Asked before collecting the arguments: most calls (`@column_value`, `@table`, on every
    // run) have no device value and need no vector of them.
    if !args
        .iter()
        .any(|a| matches!(a, ArgValue::Value(v) if v.on_device()))
    {
        return None;
    }
    let values: Vec<&Value> = args
        .iter()
        .map(|a| match a {
            ArgValue::Value(v) => Some(*v),
            ArgValue::Function(_) => None,
        })
        .collect::<Option<_>>()?;
    match (b, values.as_slice()) {
        (Builtin::List, cells) => Some(Value::List(List::Mixed(Arc::new(
            cells.iter().map(|v| (*v).clone()).collect(),
        )))),
        (Builtin::Keys, [Value::Dict(d)]) => Some((*d.keys).clone()),
        (Builtin::Values, [Value::Dict(d)]) => Some((*d.values).clone()),
        // A flat list's cells one after another are its values.
        (Builtin::Raze, [Value::DeviceList(l)]) => Some(Value::Device(l.values.clone())),
        (Builtin::Index, [Value::List(List::Mixed(cells)), Value::Vector(k)]) if k.len() == 1 => {
            let k = usize::try_from(k.integer_at(0)?).ok()?;
            cells.get(k).cloned()
        }
        _ => None,
    }
}

impl GpuEngine<'_> {
    /// `@take`/`@drop` of a device vector: sliced on the device (`gpu/slice.rs`) instead of
    /// read back for the CPU. A count a kernel computed is read (one element). A prefix is the
    /// vector's buffer seen shorter, a host step that computes nothing; any other run is a
    /// copy on the device. None where the CPU's builtin runs (host values, lists, a count that
    /// is not one integer: its error).
    pub(super) fn slice_on_device(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
        profile: &mut Profile,
    ) -> Option<Result<(Value, Placement)>> {
        if !matches!(b, Builtin::Take | Builtin::Drop) {
            return None;
        }
        let [ArgValue::Value(count), ArgValue::Value(Value::Device(vector))] = args else {
            return None;
        };
        let step = b.step_name();
        let count = match count {
            Value::Vector(count) => Cow::Borrowed(count),
            Value::Device(count) if count.len == 1 => {
                match self.host_value(&Value::Device(count.clone()), step, profile) {
                    Ok(Value::Vector(count)) => Cow::Owned(count),
                    Ok(_) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            _ => return None,
        };
        let range = crate::args::take_or_drop_range(b == Builtin::Take, &count, vector.len).ok()?;
        let sliced = crate::gpu::slice::slice(self.device, vector, range, step)
            .map_err(|e| RuntimeError::new(format!("{step}: {e}")));
        Some(sliced.map(|(value, how)| {
            let placement = match how {
                crate::gpu::slice::Sliced::Prefix => Placement::Host,
                crate::gpu::slice::Sliced::Copied => Placement::GpuLibrary,
            };
            (Value::Device(value), placement)
        }))
    }

    /// `@tolist(v)` of a device vector: a device list whose values are `v`'s buffer as it is
    /// and whose offsets `0, 1, …, n` a kernel writes, so that the list kernels after it read
    /// it where it is. None for a host vector (the CPU's builtin builds its list, a container
    /// on the host).
    pub(super) fn tolist_on_device(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
    ) -> Option<Result<(Value, Placement)>> {
        let (Builtin::ToList, [ArgValue::Value(Value::Device(vector))]) = (b, args) else {
            return None;
        };
        let step = b.step_name();
        let offsets = crate::gpu::keys::iota(self.device, vector.len + 1)
            .map_err(|e| RuntimeError::new(format!("{step}: {e}")));
        Some(offsets.map(|offsets| {
            let list = DeviceList {
                values: vector.clone(),
                offsets: Arc::new(offsets),
                cells: vector.len,
            };
            (Value::DeviceList(list), Placement::GpuLibrary)
        }))
    }

    /// `@index(v, i)` of a device vector by host positions, all in range, taken on the
    /// device into a vector that stays there, so that the host does not wait for the work
    /// that made `v`: consecutive positions are a slice (a prefix is `v`'s buffer seen
    /// shorter), others a gather (`gpu::keys::gather`; only the positions go up). None where
    /// the CPU's builtin runs (a position out of range: its error; `v` already on the host).
    pub(super) fn index_device_vector(
        &mut self,
        b: Builtin,
        args: &[ArgValue<'_>],
    ) -> Option<Result<(Value, Placement)>> {
        let (
            Builtin::Index,
            [ArgValue::Value(Value::Device(source)), ArgValue::Value(Value::Vector(index))],
        ) = (b, args)
        else {
            return None;
        };
        if source.host().is_some() || index.is_empty() {
            return None;
        }
        let positions = index
            .to_i64s()?
            .iter()
            .map(|&i| usize::try_from(i).ok().filter(|&i| i < source.len))
            .collect::<Option<Vec<usize>>>()?;
        let step = b.step_name();
        let consecutive = positions.windows(2).all(|w| w[1] == w[0] + 1);
        let taken = if consecutive {
            let range = positions[0]..positions[0] + positions.len();
            crate::gpu::slice::slice(self.device, source, range, step).map(|(v, how)| {
                let placement = match how {
                    crate::gpu::slice::Sliced::Prefix => Placement::Host,
                    crate::gpu::slice::Sliced::Copied => Placement::GpuLibrary,
                };
                (v, placement)
            })
        } else {
            gather_on_device(self.device, source, &positions).map(|v| (v, Placement::GpuLibrary))
        };
        Some(
            taken
                .map(|(v, placement)| (Value::Device(v), placement))
                .map_err(|e| RuntimeError::new(format!("{step}: {e}"))),
        )
    }
}

/// Elements `positions` (each below its length) of a device vector, gathered on the device.
fn gather_on_device(
    device: &crate::gpu::Device,
    source: &DeviceVector,
    positions: &[usize],
) -> crate::gpu::Result<DeviceVector> {
    let unsupported = |message: String| crate::gpu::GpuError::Unsupported {
        what: "@index".to_string(),
        message,
    };
    let element = GpuElement::of_type(&source.ty)
        .ok_or_else(|| unsupported(format!("{} values have no GPU layout", source.ty)))?;
    // Word w of element p is word p * words + w of the source.
    let words = (element.size() / 4) as usize;
    let word_of = |p: usize, w: usize| u32::try_from(p * words + w).ok();
    let word_positions = positions
        .iter()
        .flat_map(|&p| (0..words).map(move |w| word_of(p, w)))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| unsupported(format!("{} elements do not fit u32 indexes", source.len)))?;
    let indexes = device.upload("@index positions", &word_positions)?;
    let gathered = crate::gpu::keys::gather(device, &source.buffer, &indexes)?;
    Ok(DeviceVector::new(
        source.ty.clone(),
        positions.len(),
        source.dict.clone(),
        Arc::new(gathered),
    ))
}
