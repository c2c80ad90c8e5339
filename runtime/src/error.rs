//! Errors raised while executing a plan.

use std::fmt;

/// A runtime failure: unknown table or column, length mismatch, index out of range, …
/// The interpreter adds the source location of the failing statement.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeError {
    pub message: String,
    /// `line:col` of the statement, once known.
    pub location: Option<(u32, u32)>,
    /// Where in the run the failing statement ran (its `SourcePath` from the entry
    /// function down), where that is not the step that reports the error: a kernel's
    /// failure that a later read-back brought.
    pub ran_at: Option<Vec<u64>>,
}

impl RuntimeError {
    pub fn new(message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            message: message.into(),
            location: None,
            ran_at: None,
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some((line, col)) => write!(f, "{line}:{col}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// Shorthand for results of runtime operations.
pub type Result<T> = std::result::Result<T, RuntimeError>;

/// Returns early with a [`RuntimeError`] built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::RuntimeError::new(format!($($arg)*)))
    };
}
