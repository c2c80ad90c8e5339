//! `@take` and `@drop` of a device vector, on the device: the elements they keep are one
//! contiguous run (see `args::take_or_drop_range`). A prefix is the same buffer seen shorter,
//! with no copy and no command; any other run is copied into a buffer of its own. Either way
//! nothing is read back: `@take(10, @index(x, @order(…)))`, a query's `LIMIT`, downloads its
//! ten rows, not the sorted column.

use std::ops::Range;
use std::sync::Arc;

use super::device::Device;
use super::error::{GpuError, Result};
use super::pipeline::Commands;
use crate::kernel::GpuElement;
use crate::value::DeviceVector;

/// How a slice was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sliced {
    /// The source's buffer, seen shorter.
    Prefix,
    /// Copied on the device.
    Copied,
}

/// Elements `range` of `vector` (a range within its length), on the device.
pub fn slice(
    device: &Device,
    vector: &DeviceVector,
    range: Range<usize>,
    label: &str,
) -> Result<(DeviceVector, Sliced)> {
    let unsupported = |message: String| GpuError::Unsupported {
        what: label.to_string(),
        message,
    };
    if range.end > vector.len || range.start > range.end {
        return Err(unsupported(format!(
            "elements {}..{} of {} elements",
            range.start, range.end, vector.len
        )));
    }
    let dict = vector.dict.clone();
    let ty = vector.ty.clone();
    if range.start == 0 {
        let prefix = DeviceVector::new(ty, range.end, dict, vector.buffer.clone());
        return Ok((prefix, Sliced::Prefix));
    }
    let element = GpuElement::of_type(&vector.ty)
        .ok_or_else(|| unsupported(format!("{} values have no GPU layout", vector.ty)))?;
    let bytes = range.len() as u64 * element.size();
    // At least 8 bytes: a binding of 8-byte elements needs one even when empty.
    let words = (bytes / 4).max(2) as usize;
    let copy = device.scratch_named::<u32>(&|| label.to_string(), words)?;
    let mut commands = Commands::new(device, label);
    commands.copy_bytes(
        vector.buffer.raw(),
        range.start as u64 * element.size(),
        copy.raw(),
        0,
        bytes,
    )?;
    commands.submit()?;
    let copied = DeviceVector::new(ty, range.len(), dict, Arc::new(copy));
    Ok((copied, Sliced::Copied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::require_gpu_or_skip;
    use crate::types::Type;

    fn words(device: &Device, vector: &DeviceVector) -> Vec<u32> {
        device
            .download_range(&vector.buffer, 0, vector.len)
            .expect("read back")
    }

    #[test]
    fn a_prefix_is_the_same_buffer_and_any_other_run_a_copy() {
        let Some(device) = require_gpu_or_skip() else {
            return;
        };
        let data: Vec<u32> = (10..20).collect();
        let buffer = Arc::new(device.upload("ten", &data).expect("uploaded"));
        let vector = DeviceVector::new(Type::I32, data.len(), None, buffer);

        let (prefix, how) = slice(&device, &vector, 0..4, "@take").expect("sliced");
        assert_eq!(how, Sliced::Prefix);
        assert!(Arc::ptr_eq(&prefix.buffer, &vector.buffer));
        assert_eq!(words(&device, &prefix), [10, 11, 12, 13]);

        let (middle, how) = slice(&device, &vector, 3..7, "@drop").expect("sliced");
        assert_eq!(how, Sliced::Copied);
        assert_eq!(words(&device, &middle), [13, 14, 15, 16]);

        let (empty, _) = slice(&device, &vector, 10..10, "@drop").expect("sliced");
        assert_eq!(empty.len, 0);
        assert!(slice(&device, &vector, 8..11, "@take").is_err());
    }
}
