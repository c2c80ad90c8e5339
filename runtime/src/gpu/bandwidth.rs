//! The device's measured memory bandwidth: buffer-to-buffer copies on the device, the
//! yardstick the benchmark compares a query's effective bandwidth with.

use std::time::Instant;

use super::device::Device;
use super::error::{GpuError, Result};

/// A measured copy bandwidth.
#[derive(Clone, Copy, Debug)]
pub struct CopyBandwidth {
    /// Bytes of the buffer copied.
    pub buffer_bytes: u64,
    /// Copies per timed submission.
    pub copies: u32,
    /// The best of the timed submissions, in seconds.
    pub seconds: f64,
}

impl CopyBandwidth {
    /// Bytes read plus bytes written per second (a copy reads and writes each byte once).
    pub fn bytes_per_second(&self) -> f64 {
        2.0 * self.buffer_bytes as f64 * f64::from(self.copies) / self.seconds.max(1e-12)
    }
}

/// Copies a buffer of up to `max_bytes` (at most the device's buffer limit) `copies` times
/// in one submission, `rounds` times; the fastest round counts (the first also warms up).
pub fn measure_copy_bandwidth(
    device: &Device,
    max_bytes: u64,
    copies: u32,
    rounds: u32,
) -> Result<CopyBandwidth> {
    let limit = device.limits().max_buffer_size.min(max_bytes);
    // Whole 4-byte words, a multiple of 256 bytes.
    let bytes = (limit / 256 * 256).max(256);
    let words = usize::try_from(bytes / 4).map_err(|_| GpuError::Command {
        label: "bandwidth".to_string(),
        message: format!("{bytes} bytes do not fit this machine's address space"),
    })?;
    let source = device.zeroed::<u32>("bandwidth source", words)?;
    let destination = device.zeroed::<u32>("bandwidth destination", words)?;
    let mut best = f64::INFINITY;
    for _ in 0..rounds.max(1) + 1 {
        let mut encoder = device
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bandwidth"),
            });
        for _ in 0..copies.max(1) {
            encoder.copy_buffer_to_buffer(source.raw(), 0, destination.raw(), 0, bytes);
        }
        let start = Instant::now();
        device.queue.submit([encoder.finish()]);
        device.wait_idle()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(CopyBandwidth {
        buffer_bytes: bytes,
        copies: copies.max(1),
        seconds: best,
    })
}
