//! The generated TPC-H tables kept as Parquet in the user's cache directory, so that the
//! embedded default data is generated once, not on every run.
//!
//! `<cache>/tpch/sf<SF>-<GENERATOR>/` holds `<table>.parquet` for the eight tables and a
//! `MANIFEST` listing each file's length and hash, written last: a directory without a
//! manifest is incomplete, a file that does not match it is corrupt, and either way the
//! tables are generated again (with a notice). A directory is filled under a temporary name
//! and renamed into place, so processes starting together never read a half-written one.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use crate::bail;
use crate::data::tpch::TPCH_SCHEMA;
use crate::data::{write_tpch_files, ArrowFileFormat, Database};
use crate::error::{Result, RuntimeError};

/// The generator the cached rows come from, and the layout of the cache: a new tpchgen (or
/// a change to how horsec writes the tables) must not read an older cache.
pub const TPCH_CACHE_GENERATOR: &str = "tpchgen4-parquet1";

const MANIFEST: &str = "MANIFEST";

/// Where the cached tables of scale factor `sf` live under the cache directory `cache`.
pub fn tpch_cache_dir(cache: &Path, sf: f64) -> PathBuf {
    cache
        .join("tpch")
        .join(format!("sf{sf}-{TPCH_CACHE_GENERATOR}"))
}

/// What [`Database::tpch_cached`] did besides reading the cache, for the user to see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheNotice {
    /// The cache was missing: the tables were generated and stored.
    Generated(PathBuf),
    /// The cache was unreadable: the tables were generated again.
    Regenerated { dir: PathBuf, reason: String },
    /// The tables were generated but could not be stored (the next run generates again).
    NotStored { dir: PathBuf, reason: String },
}

impl std::fmt::Display for CacheNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheNotice::Generated(dir) => write!(
                f,
                "generated the TPC-H tables once into `{}`; later runs read them from there",
                dir.display()
            ),
            CacheNotice::Regenerated { dir, reason } => write!(
                f,
                "the cached TPC-H tables in `{}` are unusable ({reason}); generated them again",
                dir.display()
            ),
            CacheNotice::NotStored { dir, reason } => write!(
                f,
                "cannot store the generated TPC-H tables in `{}` ({reason}); they are generated on every run",
                dir.display()
            ),
        }
    }
}

impl Database {
    /// TPC-H at `sf` read from the cache directory `cache` (see the module documentation),
    /// only the tables and columns asked for (as [`Database::from_dir`] reads them). When the
    /// cache is missing or corrupt, all eight tables are generated, stored and returned,
    /// with a notice saying so.
    pub fn tpch_cached(
        sf: f64,
        cache: &Path,
        progress: bool,
        tables: Option<&[String]>,
        columns: Option<&[String]>,
    ) -> Result<(Database, Option<CacheNotice>)> {
        let dir = tpch_cache_dir(cache, sf);
        let problem = if dir.join(MANIFEST).is_file() {
            match verify(&dir) {
                Ok(()) => match Database::from_dir(&dir, progress, tables, columns) {
                    Ok(database) => return Ok((database, None)),
                    Err(e) => Some(e.message),
                },
                Err(e) => Some(e.message),
            }
        } else {
            None
        };
        match store(sf, &dir, problem.is_some()) {
            Ok(()) => {
                let database = Database::from_dir(&dir, progress, tables, columns)?;
                let notice = match problem {
                    Some(reason) => CacheNotice::Regenerated { dir, reason },
                    None => CacheNotice::Generated(dir),
                };
                Ok((database, Some(notice)))
            }
            Err(e) => {
                let database = Database::tpch_tables(sf, progress, tables)?;
                let notice = CacheNotice::NotStored {
                    dir,
                    reason: e.message,
                };
                Ok((database, Some(notice)))
            }
        }
    }
}

/// Generates the eight tables into a fresh directory beside `dir` and renames it to `dir`
/// (replacing a corrupt one when `replace`).
fn store(sf: f64, dir: &Path, replace: bool) -> Result<()> {
    let Some(parent) = dir.parent() else {
        bail!("no parent directory");
    };
    std::fs::create_dir_all(parent)
        .map_err(|e| RuntimeError::new(format!("cannot create `{}`: {e}", parent.display())))?;
    // Unique to this process and call: threads and processes may store at once.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let fresh = parent.join(format!(
        ".{}.{}-{}.partial",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("tpch"),
        std::process::id(),
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&fresh);
    let filled = (|| -> Result<()> {
        write_tpch_files(sf, &fresh, ArrowFileFormat::Parquet, false)?;
        let mut manifest = String::new();
        for spec in &TPCH_SCHEMA {
            let name = format!("{}.parquet", spec.name);
            let (length, hash) = fingerprint(&fresh.join(&name))?;
            manifest += &format!("{name} {length} {hash:016x}\n");
        }
        std::fs::write(fresh.join(MANIFEST), manifest)
            .map_err(|e| RuntimeError::new(format!("cannot write the manifest: {e}")))
    })();
    if let Err(e) = filled {
        let _ = std::fs::remove_dir_all(&fresh);
        return Err(e);
    }
    if replace {
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Err(e) = std::fs::rename(&fresh, dir) {
        let _ = std::fs::remove_dir_all(&fresh);
        // Another process stored the same tables first: theirs serve as well.
        if dir.join(MANIFEST).is_file() {
            return Ok(());
        }
        bail!("cannot rename into place: {e}");
    }
    Ok(())
}

/// Checks every file of the cache against its manifest line.
fn verify(dir: &Path) -> Result<()> {
    let manifest = std::fs::read_to_string(dir.join(MANIFEST))
        .map_err(|e| RuntimeError::new(format!("cannot read the manifest: {e}")))?;
    let mut listed = 0;
    for line in manifest.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let [name, length, hash] = fields.as_slice() else {
            bail!("malformed manifest line `{line}`");
        };
        let (actual_length, actual_hash) = fingerprint(&dir.join(name))?;
        if length.parse::<u64>().ok() != Some(actual_length)
            || u64::from_str_radix(hash, 16).ok() != Some(actual_hash)
        {
            bail!("`{name}` does not match its manifest entry");
        }
        listed += 1;
    }
    if listed != TPCH_SCHEMA.len() {
        bail!(
            "the manifest lists {listed} files, not {}",
            TPCH_SCHEMA.len()
        );
    }
    Ok(())
}

/// The length and a 64-bit hash of a file's bytes.
fn fingerprint(path: &Path) -> Result<(u64, u64)> {
    let bytes = std::fs::read(path)
        .map_err(|e| RuntimeError::new(format!("cannot read `{}`: {e}", path.display())))?;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(&bytes);
    Ok((bytes.len() as u64, hasher.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q6_tables() -> Vec<String> {
        vec!["lineitem".to_string()]
    }

    #[test]
    fn the_cache_is_filled_once_then_read_and_a_corrupt_file_is_regenerated() {
        let cache = tempfile::tempdir().expect("temporary directory");
        let sf = 0.001;
        let columns = vec!["l_quantity".to_string(), "l_shipdate".to_string()];
        let (first, notice) =
            Database::tpch_cached(sf, cache.path(), false, Some(&q6_tables()), Some(&columns))
                .expect("generates");
        let dir = tpch_cache_dir(cache.path(), sf);
        assert_eq!(notice, Some(CacheNotice::Generated(dir.clone())));
        assert!(dir.join(MANIFEST).is_file());

        let (second, notice) =
            Database::tpch_cached(sf, cache.path(), false, Some(&q6_tables()), Some(&columns))
                .expect("reads the cache");
        assert_eq!(notice, None);
        let lineitem = second.table("lineitem").expect("loaded");
        let names: Vec<&str> = lineitem.names.iter().map(|n| n.as_ref()).collect();
        assert_eq!(
            names,
            ["l_quantity", "l_shipdate"],
            "only the columns asked for"
        );
        let generated = Database::tpch_tables(sf, false, Some(&q6_tables())).expect("generates");
        let generated = generated.table("lineitem").expect("generated");
        assert_eq!(
            first
                .table("lineitem")
                .expect("loaded")
                .column("l_quantity"),
            generated.column("l_quantity")
        );
        for name in names {
            assert_eq!(lineitem.column(name), generated.column(name), "{name}");
        }

        // One byte changed in the middle of a file: detected, regenerated, said so.
        let file = dir.join("lineitem.parquet");
        let mut bytes = std::fs::read(&file).expect("cached file");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x55;
        std::fs::write(&file, bytes).expect("writable");
        let (third, notice) =
            Database::tpch_cached(sf, cache.path(), false, Some(&q6_tables()), Some(&columns))
                .expect("regenerates");
        match notice {
            Some(CacheNotice::Regenerated { reason, .. }) => {
                assert!(reason.contains("lineitem.parquet"), "{reason}")
            }
            other => panic!("expected a regeneration notice, got {other:?}"),
        }
        assert_eq!(
            third
                .table("lineitem")
                .expect("loaded")
                .column("l_quantity"),
            generated.column("l_quantity")
        );
        let (_, notice) =
            Database::tpch_cached(sf, cache.path(), false, Some(&q6_tables()), Some(&columns))
                .expect("reads the repaired cache");
        assert_eq!(notice, None);
    }
}
