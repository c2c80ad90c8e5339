//! The device's measured memory bandwidth: buffer-to-buffer copies on the device, the
//! yardstick the benchmark compares a query's effective bandwidth with. A copy is timed two
//! ways, by the queue's copy command and by a compute kernel, and the faster counts: on an
//! H100 the copy command moved 846 GB/s while q6's kernel alone read more than that, so the
//! command alone would flatter every query measured against it.

use std::time::Instant;

use super::device::Device;
use super::error::{GpuError, Result};
use super::pipeline::{BindingKind, Commands, KernelSpec};

/// The copy kernel: each invocation copies 16-byte words, striding over the buffer.
const COPY_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read> source: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> destination: array<vec4<u32>>;

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) id: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = id.x; i < arrayLength(&destination); i = i + stride) {
        destination[i] = source[i];
    }
}
"#;

/// Workgroups of the copy kernel (it strides over the buffer).
const COPY_WORKGROUPS: u64 = 8192;

/// How a copy was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMethod {
    /// The queue's buffer-to-buffer copy command.
    Command,
    /// A compute kernel reading and writing 16-byte words.
    Kernel,
}

/// A measured copy bandwidth.
#[derive(Clone, Copy, Debug)]
pub struct CopyBandwidth {
    /// Bytes of the buffer copied.
    pub buffer_bytes: u64,
    /// Copies per timed submission.
    pub copies: u32,
    /// The best of the timed submissions, in seconds.
    pub seconds: f64,
    pub method: CopyMethod,
}

impl CopyBandwidth {
    /// Bytes read plus bytes written per second (a copy reads and writes each byte once).
    pub fn bytes_per_second(&self) -> f64 {
        2.0 * self.buffer_bytes as f64 * f64::from(self.copies) / self.seconds.max(1e-12)
    }
}

/// Copies a buffer of up to `max_bytes` (at most the device's buffer and binding limits)
/// `copies` times in one submission, `rounds` times, by the copy command and by the copy
/// kernel; the fastest round of each counts (the first also warms up). The faster of the two
/// comes first.
pub fn measure_copy_bandwidth(
    device: &Device,
    max_bytes: u64,
    copies: u32,
    rounds: u32,
) -> Result<[CopyBandwidth; 2]> {
    let limits = device.limits();
    let limit = limits
        .max_buffer_size
        .min(limits.max_storage_buffer_binding_size)
        .min(max_bytes);
    // Whole 16-byte words, a multiple of 256 bytes.
    let bytes = (limit / 256 * 256).max(256);
    let words = usize::try_from(bytes / 4).map_err(|_| GpuError::Command {
        label: "bandwidth".to_string(),
        message: format!("{bytes} bytes do not fit this machine's address space"),
    })?;
    let source = device.zeroed::<u32>("bandwidth source", words)?;
    let destination = device.zeroed::<u32>("bandwidth destination", words)?;
    let copies = copies.max(1);
    let best_of = |record: &dyn Fn() -> Result<()>| -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..rounds.max(1) + 1 {
            let start = Instant::now();
            record()?;
            device.wait_idle()?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let command = best_of(&|| {
        let mut encoder = device
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bandwidth"),
            });
        for _ in 0..copies {
            encoder.copy_buffer_to_buffer(source.raw(), 0, destination.raw(), 0, bytes);
        }
        device.submit(encoder.finish());
        Ok(())
    })?;
    let pipeline = device.pipeline(&KernelSpec {
        label: "bandwidth copy",
        source: COPY_WGSL,
        entry_point: "copy",
        constants: &[],
        bindings: &[BindingKind::StorageRead, BindingKind::StorageReadWrite],
    })?;
    let kernel = best_of(&|| {
        let mut commands = Commands::new(device, "bandwidth copy");
        for _ in 0..copies {
            commands.dispatch(
                &pipeline,
                &[source.raw(), destination.raw()],
                COPY_WORKGROUPS,
            )?;
        }
        commands.submit()
    })?;
    let measured = |seconds, method| CopyBandwidth {
        buffer_bytes: bytes,
        copies,
        seconds,
        method,
    };
    let (command, kernel) = (
        measured(command, CopyMethod::Command),
        measured(kernel, CopyMethod::Kernel),
    );
    Ok(if kernel.seconds < command.seconds {
        [kernel, command]
    } else {
        [command, kernel]
    })
}
