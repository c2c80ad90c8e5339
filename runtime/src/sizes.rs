//! Sizes checked before allocating: a size that comes from a value of the program (`@vector`,
//! `@range`, `@randk`, `@csr`) or from the command line (`--tpch`, `gen-tpch --sf`) is checked
//! against what the machine can hold before anything is allocated, so a huge or negative size
//! is a clear error naming the builtin and the size, never a "capacity overflow" panic or an
//! aborted allocation.

use std::fmt;

use crate::types::Type;

/// No single allocation asks for more than this, whatever the machine reports (1 TiB).
pub const HARD_CAP_BYTES: u64 = 1 << 40;

/// Requests below this size are not checked against the available memory (reading
/// `/proc/meminfo` for every small vector would cost more than the vector).
const UNCHECKED_BYTES: u64 = 64 << 20;

/// Why a size cannot be allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// A count below zero.
    Negative(i64),
    /// `count` elements of `element_bytes` bytes exceed `limit_bytes`.
    TooLarge {
        count: u128,
        element_bytes: u64,
        limit_bytes: u64,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::Negative(n) => write!(f, "the count {n} is negative"),
            SizeError::TooLarge {
                count,
                element_bytes,
                limit_bytes,
            } => write!(
                f,
                "{count} elements of {element_bytes} bytes ({}) exceed the memory available ({})",
                human_bytes(count.saturating_mul(u128::from(*element_bytes))),
                human_bytes(u128::from(*limit_bytes))
            ),
        }
    }
}

impl std::error::Error for SizeError {}

/// Bytes as `12.3 GiB`.
pub fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The memory the system can give this process now (`MemAvailable` of `/proc/meminfo`);
/// `None` where that is not known.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The most bytes one allocation may take: the available memory, at most [`HARD_CAP_BYTES`].
pub fn memory_limit() -> u64 {
    available_memory().map_or(HARD_CAP_BYTES, |m| m.min(HARD_CAP_BYTES))
}

/// Bytes free to an unprivileged writer on the file system holding `path`; `None` where
/// that is not known.
pub fn free_disk_space(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a NUL-terminated path and `stats` points at writable memory of
    // the right type; statvfs only writes into it, and we read it only when it succeeded.
    let status = unsafe { libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled in `stats`.
    let stats = unsafe { stats.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field widths differ between platforms
    Some((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}

/// `count` elements of `element_bytes` each, as a `usize`, when the machine can hold them.
pub fn checked_count(count: i64, element_bytes: u64) -> Result<usize, SizeError> {
    let Ok(n) = u64::try_from(count) else {
        return Err(SizeError::Negative(count));
    };
    checked_bytes(u128::from(n), element_bytes)?;
    usize::try_from(n).map_err(|_| SizeError::TooLarge {
        count: u128::from(n),
        element_bytes,
        limit_bytes: memory_limit(),
    })
}

/// Fails when `count` elements of `element_bytes` each exceed what one allocation may take.
pub fn checked_bytes(count: u128, element_bytes: u64) -> Result<u64, SizeError> {
    let bytes = count.saturating_mul(u128::from(element_bytes));
    if bytes <= u128::from(UNCHECKED_BYTES) {
        return Ok(bytes as u64);
    }
    let limit = memory_limit();
    if bytes > u128::from(limit) {
        return Err(SizeError::TooLarge {
            count,
            element_bytes,
            limit_bytes: limit,
        });
    }
    Ok(bytes as u64)
}

/// A vector with room for `n` elements, or an error where the allocator refuses (instead of
/// the process aborting).
pub fn try_vec_with_capacity<T>(n: usize) -> Result<Vec<T>, SizeError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| SizeError::TooLarge {
        count: n as u128,
        element_bytes: std::mem::size_of::<T>() as u64,
        limit_bytes: memory_limit(),
    })?;
    Ok(v)
}

/// Bytes one element of a vector of type `ty` takes in memory (a list cell or other
/// container counts as one value handle).
pub fn element_bytes(ty: &Type) -> u64 {
    match ty {
        Type::Bool | Type::Char | Type::I8 => 1,
        Type::I16 => 2,
        Type::I32 | Type::F32 | Type::Sym | Type::Str => 4,
        Type::Month | Type::Date | Type::Minute | Type::Second | Type::Time => 4,
        Type::I64 | Type::F64 | Type::Dt => 8,
        Type::Complex => 16,
        _ => std::mem::size_of::<crate::value::Value>() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_pass_and_negative_counts_fail() {
        assert_eq!(checked_count(5, 8), Ok(5));
        assert_eq!(checked_count(-5, 8), Err(SizeError::Negative(-5)));
    }

    #[test]
    fn counts_beyond_the_machine_fail_with_the_size() {
        let err = checked_count(i64::MAX, 8).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("9223372036854775807 elements of 8 bytes (64.0 EiB) exceed"),
            "{message}"
        );
        assert!(checked_count(4_000_000_000_000, 8).is_err());
    }

    #[test]
    fn the_disk_of_the_temporary_directory_has_free_space() {
        let free = free_disk_space(&std::env::temp_dir()).expect("statvfs works here");
        assert!(free > 0);
        assert_eq!(free_disk_space(std::path::Path::new("/no/such/dir")), None);
    }

    #[test]
    fn bytes_print_in_binary_units() {
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
