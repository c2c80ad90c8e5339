//! Compiled pipelines kept across processes: a wgpu [`wgpu::PipelineCache`] (Vulkan) loaded
//! from the user's cache directory when the device opens and written back by
//! [`Device::save_pipeline_cache`], so a second `horsec run` of a query does not compile its
//! pipelines again. The file is named by `wgpu::util::pipeline_cache_key` (vendor and device);
//! the driver checks the data and starts empty when it does not match.

use std::path::{Path, PathBuf};

use super::device::Device;

/// Environment variable naming the cache directory; empty turns the cache off.
pub const CACHE_DIR_ENV: &str = "HORSEC_CACHE_DIR";

/// `$HORSEC_CACHE_DIR`, else `$XDG_CACHE_HOME/horsec`, else `~/.cache/horsec`.
pub fn cache_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = std::env::var_os(CACHE_DIR_ENV) {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("horsec"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".cache/horsec"))
}

/// The pipeline cache of an open device and the file it lives in.
pub(crate) struct DiskCache {
    pub(crate) cache: wgpu::PipelineCache,
    path: PathBuf,
    /// Bytes read from the file when the device opened (0: none there).
    loaded: usize,
}

/// Opens the cache for `device` when the adapter supports one (`PIPELINE_CACHE`, Vulkan)
/// and a cache directory is known.
pub(crate) fn open(
    device: &wgpu::Device,
    info: &wgpu::AdapterInfo,
    features: wgpu::Features,
) -> Option<DiskCache> {
    if !features.contains(wgpu::Features::PIPELINE_CACHE) {
        return None;
    }
    let path = cache_dir()?.join(wgpu::util::pipeline_cache_key(info)?);
    let data = std::fs::read(&path).ok();
    // SAFETY: the data is what `PipelineCache::get_data` returned for an adapter of the
    // same key (we write nothing else there); the driver validates its header and, with
    // `fallback`, starts an empty cache when it does not match.
    let cache = unsafe {
        device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
            label: Some("horsec pipelines"),
            data: data.as_deref(),
            fallback: true,
        })
    };
    Some(DiskCache {
        cache,
        path,
        loaded: data.map_or(0, |d| d.len()),
    })
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, data)?;
    std::fs::rename(&temporary, path)
}

impl Device {
    /// Writes the pipeline cache back to its file; returns the file and its size, or None
    /// where there is no cache (no `PIPELINE_CACHE`, no cache directory, no data).
    pub fn save_pipeline_cache(&self) -> Result<Option<(PathBuf, usize)>, String> {
        let Some(disk) = &self.pipeline_cache else {
            return Ok(None);
        };
        let Some(data) = disk.cache.get_data() else {
            return Ok(None);
        };
        write_atomically(&disk.path, &data)
            .map_err(|e| format!("writing the pipeline cache {}: {e}", disk.path.display()))?;
        Ok(Some((disk.path.clone(), data.len())))
    }

    /// One line for `--time`: where the pipeline cache is and what it held at start.
    pub fn pipeline_cache_status(&self) -> String {
        match &self.pipeline_cache {
            None => "off (no PIPELINE_CACHE on this adapter, or no cache directory)".to_string(),
            Some(disk) if disk.loaded > 0 => {
                format!("{} bytes loaded from {}", disk.loaded, disk.path.display())
            }
            Some(disk) => format!("empty (will be written to {})", disk.path.display()),
        }
    }

    /// The wgpu cache to compile pipelines with, if any.
    pub(crate) fn wgpu_pipeline_cache(&self) -> Option<&wgpu::PipelineCache> {
        self.pipeline_cache.as_ref().map(|d| &d.cache)
    }
}
