//! Which values already have a GPU copy. A value's elements live in `Arc`s shared by every
//! clone of it, so the address of that allocation identifies the data: a column uploaded
//! for one kernel is bound again, not re-uploaded, by every later kernel that reads it, and a
//! kernel's output (downloaded for the host) keeps its device copy for the kernels after it.
//!
//! The cache holds a clone of each value it has a buffer for, so an address cannot be freed
//! and reused for other data while its entry exists.

use std::collections::HashMap;
use std::sync::Arc;

use super::encode::words_of;
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuBuffer};
use crate::kernel::{GpuElement, ValuePart};
use crate::value::{List, Value, Vector};

/// Identity of one part of one value's data.
type Key = (usize, ValuePart, GpuElement);

#[derive(Default)]
pub(crate) struct Residency {
    buffers: HashMap<Key, (Arc<GpuBuffer<u32>>, Value)>,
    /// Bytes held on the device.
    resident_bytes: u64,
}

impl Residency {
    /// The device copy of `part` of `value`, uploading it when there is none; also returns
    /// the bytes uploaded (0 when it was resident).
    pub(crate) fn buffer(
        &mut self,
        device: &Device,
        value: &Value,
        part: ValuePart,
        element: GpuElement,
    ) -> Result<(Arc<GpuBuffer<u32>>, u64)> {
        let key = key_of(value, part, element);
        if let Some(k) = key {
            if let Some((buffer, _)) = self.buffers.get(&k) {
                return Ok((buffer.clone(), 0));
            }
        }
        let mut words = words_of(value, part, element)?;
        // A binding of 8-byte elements needs 8 bytes even when empty.
        if words.len() < 2 {
            words.resize(2, 0);
        }
        let buffer = Arc::new(
            device
                .upload("input", &words)
                .map_err(|e| RuntimeError::new(format!("uploading an input: {e}")))?,
        );
        let bytes = (words.len() * 4) as u64;
        if let Some(k) = key {
            self.resident_bytes += bytes;
            self.buffers.insert(k, (buffer.clone(), value.clone()));
        }
        Ok((buffer, bytes))
    }

    /// Records that `buffer` already holds `part` of `value` (a kernel's output).
    pub(crate) fn adopt(
        &mut self,
        value: &Value,
        part: ValuePart,
        element: GpuElement,
        buffer: Arc<GpuBuffer<u32>>,
    ) {
        if let Some(k) = key_of(value, part, element) {
            self.resident_bytes += buffer.byte_len();
            self.buffers.insert(k, (buffer, value.clone()));
        }
    }

    /// Bytes of all device copies held.
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.resident_bytes
    }
}

/// The address of the data behind `part` of `value` (None for values without one).
fn key_of(value: &Value, part: ValuePart, element: GpuElement) -> Option<Key> {
    let address = match (value, part) {
        (Value::Vector(v), ValuePart::Elements) => vector_address(v),
        (Value::List(List::Flat { values, .. }), ValuePart::ListValues) => vector_address(values),
        (Value::List(List::Flat { offsets, .. }), ValuePart::ListOffsets) => {
            Arc::as_ptr(offsets) as usize
        }
        (Value::Enum(e), ValuePart::EnumKeys) => vector_address(&e.domain),
        (Value::Enum(e), ValuePart::EnumIndex) => Arc::as_ptr(&e.index) as usize,
        _ => return None,
    };
    Some((address, part, element))
}

fn vector_address(v: &Vector) -> usize {
    match v {
        Vector::Bool(x) => Arc::as_ptr(x) as usize,
        Vector::Char(x) => Arc::as_ptr(x) as usize,
        Vector::I8(x) => Arc::as_ptr(x) as usize,
        Vector::I16(x) => Arc::as_ptr(x) as usize,
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => Arc::as_ptr(x) as usize,
        Vector::I64(x) | Vector::Dt(x) => Arc::as_ptr(x) as usize,
        Vector::F32(x) => Arc::as_ptr(x) as usize,
        Vector::F64(x) => Arc::as_ptr(x) as usize,
        Vector::Complex(x) => Arc::as_ptr(x) as usize,
        Vector::Sym(s) | Vector::Str(s) => Arc::as_ptr(&s.codes) as usize,
    }
}
