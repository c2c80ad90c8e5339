//! The WGSL library sources and their specialisation by text substitution.
//!
//! Convention (also in `shaders/README.md`): a placeholder is `{{NAME}}`, upper case; the Rust
//! side substitutes every placeholder of a source, and a placeholder left over is an error.

use super::error::{GpuError, Result};

/// `shaders/scan.wgsl`: reduce-then-scan exclusive prefix sum.
pub const SCAN_WGSL: &str = include_str!("../../../shaders/scan.wgsl");
/// `shaders/where.wgsl`: positions of true flags.
pub const WHERE_WGSL: &str = include_str!("../../../shaders/where.wgsl");
/// `shaders/compact.wgsl`: compress values by a mask.
pub const COMPACT_WGSL: &str = include_str!("../../../shaders/compact.wgsl");
/// `shaders/radix_sort.wgsl`: one pass of the stable LSD radix sort.
pub const RADIX_SORT_WGSL: &str = include_str!("../../../shaders/radix_sort.wgsl");

/// `shaders/or_reduce.wgsl`: bitwise OR of all elements.
pub const OR_REDUCE_WGSL: &str = include_str!("../../../shaders/or_reduce.wgsl");
pub const GATHER_WGSL: &str = include_str!("../../../shaders/gather.wgsl");

/// `shaders/partition_point.wgsl`: the binary search the library kernels share.
pub const PARTITION_POINT_WGSL: &str = include_str!("../../../shaders/partition_point.wgsl");

/// One binary search of a kernel module: `fn name(lo, hi<params>) -> u32`, the first
/// position in [lo, hi) where `before` (a WGSL condition on `mid` and the parameters,
/// holding on a prefix of the range) fails.
pub struct Search {
    pub name: &'static str,
    /// Extra parameters, each written `, name: type`.
    pub params: &'static str,
    pub before: &'static str,
}

/// The WGSL functions of `searches` (`shaders/partition_point.wgsl`, once per search), the
/// text of a module's `{{SEARCHES}}`.
pub fn partition_points(searches: &[Search]) -> Result<String> {
    let mut out = String::new();
    for s in searches {
        out.push_str(&render(
            "partition_point.wgsl",
            PARTITION_POINT_WGSL,
            &[("NAME", s.name), ("PARAMS", s.params), ("BEFORE", s.before)],
        )?);
        out.push('\n');
    }
    Ok(out)
}

/// Invocations per workgroup of every library kernel.
pub const WORKGROUP_SIZE: u32 = 256;
/// Elements each invocation handles in the tiled kernels (scan, radix sort) on a software
/// driver: there workgroup barriers cost most, and many items per invocation means few
/// barriers per element (on lavapipe, 32 scans 4M u32 4.5× faster than 4).
pub const CPU_ITEMS_PER_THREAD: u32 = 32;
/// Elements per invocation on a real GPU: on an H100, 8 sorts 16M keys fastest (13 ms,
/// against 24 ms with 32 and 36 ms with 1); the scan is indifferent.
pub const GPU_ITEMS_PER_THREAD: u32 = 8;
/// Most items per invocation: the radix sort packs per-tile digit counts into 16 bits, so a
/// tile (WORKGROUP_SIZE × items) must stay below 65 536 elements.
pub const MAX_ITEMS_PER_THREAD: u32 = 64;
const _: () = assert!(WORKGROUP_SIZE * MAX_ITEMS_PER_THREAD < 1 << 16);

/// Replaces each `{{NAME}}` of `source` by its value in `substitutions`. Fails if a
/// placeholder has no value (a bug in the caller, reported before any GPU work).
pub fn render(name: &str, source: &str, substitutions: &[(&str, &str)]) -> Result<String> {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(template_error(name, "`{{` without a closing `}}`"));
        };
        let placeholder = &after[..end];
        let Some((_, value)) = substitutions.iter().find(|(key, _)| *key == placeholder) else {
            return Err(template_error(
                name,
                &format!("placeholder {{{{{placeholder}}}}} has no value"),
            ));
        };
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`render`], once per template and substitutions for the life of the process: library
/// modules are specialised by a few device settings only, and a kernel's look-up
/// (`Device::pipeline`) finds a text it saw before at the same address without hashing it.
pub fn rendered(
    name: &str,
    source: &'static str,
    substitutions: &[(&str, &str)],
) -> Result<&'static str> {
    type Rendered = std::collections::HashMap<(usize, String), &'static str>;
    static RENDERED: std::sync::OnceLock<std::sync::Mutex<Rendered>> = std::sync::OnceLock::new();
    let mut values = String::new();
    for (key, value) in substitutions {
        values.push_str(key);
        values.push('=');
        values.push_str(value);
        values.push('\0');
    }
    let key = (source.as_ptr() as usize, values);
    let cache = RENDERED.get_or_init(Default::default);
    if let Some(text) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return Ok(text);
    }
    let text: &'static str = Box::leak(render(name, source, substitutions)?.into_boxed_str());
    if let Ok(mut leaked) = leaked_texts().lock() {
        leaked.insert((text.as_ptr() as usize, text.len()));
    }
    match cache.lock() {
        Ok(mut c) => Ok(*c.entry(key).or_insert(text)),
        Err(_) => Ok(text),
    }
}

/// Addresses and lengths of the texts [`rendered`] made: never freed, so no other text can
/// ever be found at one of them.
fn leaked_texts() -> &'static std::sync::Mutex<std::collections::HashSet<(usize, usize)>> {
    static LEAKED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashSet<(usize, usize)>>,
    > = std::sync::OnceLock::new();
    LEAKED.get_or_init(Default::default)
}

/// Whether `text` is one that [`rendered`] made (at its address, whole): then a text seen at
/// that address and length later is this one, without comparing them.
pub(crate) fn is_rendered(text: &str) -> bool {
    leaked_texts()
        .lock()
        .is_ok_and(|leaked| leaked.contains(&(text.as_ptr() as usize, text.len())))
}

fn template_error(name: &str, message: &str) -> GpuError {
    GpuError::Shader {
        label: name.to_string(),
        message: format!("template: {message}"),
    }
}

/// An element type that kernels can be specialised for: its WGSL spelling and the device
/// feature it needs, if any.
pub trait GpuScalar: bytemuck::Pod {
    /// WGSL type name, substituted for `{{T}}`.
    const WGSL: &'static str;
    /// Device feature needed to use the type in a shader.
    const FEATURE: Option<wgpu::Features>;
}

macro_rules! gpu_scalar {
    ($rust:ty, $wgsl:literal, $feature:expr) => {
        impl GpuScalar for $rust {
            const WGSL: &'static str = $wgsl;
            const FEATURE: Option<wgpu::Features> = $feature;
        }
    };
}

gpu_scalar!(u32, "u32", None);
gpu_scalar!(i32, "i32", None);
gpu_scalar!(f32, "f32", None);
gpu_scalar!(u64, "u64", Some(wgpu::Features::SHADER_INT64));
gpu_scalar!(i64, "i64", Some(wgpu::Features::SHADER_INT64));
gpu_scalar!(f64, "f64", Some(wgpu::Features::SHADER_F64));

pub(crate) fn workgroup_size_text() -> String {
    WORKGROUP_SIZE.to_string()
}

/// The scan module with tiles of `WORKGROUP_SIZE × items_per_thread`, loading each input
/// through `map` (an expression in `x: u32`).
pub fn scan_source(map: &str, items_per_thread: u32) -> Result<&'static str> {
    rendered(
        "scan.wgsl",
        SCAN_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("ITEMS_PER_THREAD", &items_per_thread.to_string()),
            ("MAP", map),
        ],
    )
}

/// The `@where` module.
pub fn where_source() -> Result<String> {
    render(
        "where.wgsl",
        WHERE_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

/// The compress module for element type `T`.
pub fn compact_source<T: GpuScalar>() -> Result<String> {
    render(
        "compact.wgsl",
        COMPACT_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text()), ("T", T::WGSL)],
    )
}

/// The OR-reduction module.
pub fn or_reduce_source() -> Result<String> {
    render(
        "or_reduce.wgsl",
        OR_REDUCE_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

/// The radix sort module with tiles of `WORKGROUP_SIZE × items_per_thread`.
pub fn radix_sort_source(items_per_thread: u32) -> Result<&'static str> {
    rendered(
        "radix_sort.wgsl",
        RADIX_SORT_WGSL,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("ITEMS_PER_THREAD", &items_per_thread.to_string()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    fn validate(name: &str, source: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{name} does not parse:\n{}", e.emit_to_string(source)));
        Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name} is invalid:\n{}", e.emit_to_string(source)));
    }

    #[test]
    fn placeholders_are_substituted_everywhere() {
        let text = render("t", "a {{X}} b {{Y}} {{X}}", &[("X", "1"), ("Y", "2")]);
        assert_eq!(text.ok().as_deref(), Some("a 1 b 2 1"));
    }

    #[test]
    fn a_placeholder_without_value_is_an_error() {
        let error = render("t", "x {{MISSING}}", &[])
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(|m| m.contains("{{MISSING}}")));
    }

    #[test]
    fn an_unclosed_placeholder_is_an_error() {
        assert!(render("t", "x {{OOPS", &[]).is_err());
    }

    #[test]
    fn scan_validates_with_each_load_map() {
        for map in ["x", "u32(x != 0u)"] {
            for items in [
                1,
                GPU_ITEMS_PER_THREAD,
                CPU_ITEMS_PER_THREAD,
                MAX_ITEMS_PER_THREAD,
            ] {
                validate("scan.wgsl", scan_source(map, items).expect("renders"));
            }
        }
    }

    #[test]
    fn where_validates() {
        validate(
            "where.wgsl",
            &where_source().expect("where template renders"),
        );
    }

    #[test]
    fn compact_validates_for_every_element_type() {
        validate(
            "compact.wgsl<u32>",
            &compact_source::<u32>().expect("renders"),
        );
        validate(
            "compact.wgsl<i32>",
            &compact_source::<i32>().expect("renders"),
        );
        validate(
            "compact.wgsl<f32>",
            &compact_source::<f32>().expect("renders"),
        );
        validate(
            "compact.wgsl<u64>",
            &compact_source::<u64>().expect("renders"),
        );
        validate(
            "compact.wgsl<i64>",
            &compact_source::<i64>().expect("renders"),
        );
        validate(
            "compact.wgsl<f64>",
            &compact_source::<f64>().expect("renders"),
        );
    }

    #[test]
    fn or_reduce_validates() {
        validate("or_reduce.wgsl", &or_reduce_source().expect("renders"));
    }

    #[test]
    fn radix_sort_validates() {
        for items in [
            1,
            GPU_ITEMS_PER_THREAD,
            CPU_ITEMS_PER_THREAD,
            MAX_ITEMS_PER_THREAD,
        ] {
            validate(
                "radix_sort.wgsl",
                radix_sort_source(items).expect("renders"),
            );
        }
    }
}
