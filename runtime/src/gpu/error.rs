//! Errors of the GPU layer.

use std::fmt;

/// A failure of the GPU layer: no adapter, a device request the adapter refused, a shader or
/// command the driver rejected, or data that does not fit the device's limits.
#[derive(Debug)]
pub enum GpuError {
    /// No adapter exists (or none matches `HORSEC_ADAPTER`).
    NoAdapter(String),
    /// The adapter refused to create a device.
    RequestDevice(String),
    /// A WGSL module or pipeline failed validation or compilation.
    Shader { label: String, message: String },
    /// wgpu rejected a command (validation, out of memory, internal error).
    Command { label: String, message: String },
    /// A buffer is larger than the device lets one storage binding be.
    BindingTooLarge {
        label: String,
        bytes: u64,
        limit: u64,
    },
    /// A buffer is larger than the device lets one buffer be, or has more elements than a
    /// kernel can index.
    BufferTooLarge {
        label: String,
        bytes: u64,
        limit: u64,
    },
    /// The element type needs a device feature the device lacks (e.g. `SHADER_F64`).
    MissingFeature { what: String, feature: String },
    /// Waiting for the device or mapping a buffer for reading failed.
    Readback(String),
    /// A library kernel does not handle these arguments (a type it has no GPU encoding for,
    /// a result too large for its index width); `what` names the builtin or kernel.
    Unsupported { what: String, message: String },
}

impl GpuError {
    /// True when no adapter could be found at all (as opposed to one failing).
    pub fn is_no_adapter(&self) -> bool {
        matches!(self, GpuError::NoAdapter(_))
    }
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoAdapter(why) => write!(f, "no GPU adapter: {why}"),
            GpuError::RequestDevice(why) => write!(f, "the GPU adapter refused a device: {why}"),
            GpuError::Shader { label, message } => {
                write!(f, "GPU shader `{label}` was rejected: {message}")
            }
            GpuError::Command { label, message } => {
                write!(f, "GPU command `{label}` failed: {message}")
            }
            GpuError::BindingTooLarge {
                label,
                bytes,
                limit,
            } => write!(
                f,
                "GPU buffer `{label}` has {bytes} bytes, more than the device's storage binding \
                 limit of {limit} bytes"
            ),
            GpuError::BufferTooLarge {
                label,
                bytes,
                limit,
            } => write!(
                f,
                "GPU buffer `{label}` would have {bytes} bytes, more than the limit of {limit}"
            ),
            GpuError::MissingFeature { what, feature } => {
                write!(
                    f,
                    "{what} needs the GPU feature {feature}, which this device lacks"
                )
            }
            GpuError::Readback(why) => write!(f, "reading back from the GPU failed: {why}"),
            GpuError::Unsupported { what, message } => {
                write!(f, "{what} on the GPU: {message}")
            }
        }
    }
}

impl std::error::Error for GpuError {}

/// Shorthand for results of GPU operations.
pub type Result<T> = std::result::Result<T, GpuError>;
