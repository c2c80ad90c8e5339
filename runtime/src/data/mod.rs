//! The data registry: the tables a program can `@load_table`, and the sources they come
//! from — TPC-H generated in process ([`Database::tpch`]) or cached as Parquet
//! ([`Database::tpch_cached`]), directories of TPC-H tables in `.tbl`, Parquet, Arrow IPC or
//! CSV files ([`Database::from_dir`]), single files of any of those formats
//! ([`Database::load_file`]) and Arrow record batches ([`Database::insert_batches`]).
//! How Arrow types map to HorseIR types is documented in [`arrow_convert`].

pub mod arrow_convert;
mod cache;
mod columns;
mod csv;
mod facts;
mod files;
mod generate;
mod phases;
mod sources;
mod tbl;
pub mod tpch;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bail;
use crate::error::Result;
use crate::value::Table;

pub use self::cache::{tpch_cache_dir, CacheNotice, TPCH_CACHE_GENERATOR};
pub use self::facts::{FactFormat, FactType};
pub use self::files::{write_batches, ArrowFileFormat};
pub use self::generate::{write_tpch_files, write_tpch_tbl};
pub use self::phases::time_phases;
pub use self::sources::FileFormat;
pub use self::tpch::{tpch_table, ColumnKind, ColumnSpec, TableSpec, TPCH_SCHEMA};

/// Tables by name.
#[derive(Clone, Debug, Default)]
pub struct Database {
    tables: BTreeMap<String, Arc<Table>>,
}

impl Database {
    /// An empty database.
    pub fn new() -> Database {
        Database::default()
    }

    /// The table called `name`; the error lists the tables there are.
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        match self.tables.get(name) {
            Some(table) => Ok(Arc::clone(table)),
            None if self.tables.is_empty() => {
                bail!("unknown table `{name}`: no tables are loaded")
            }
            None => bail!(
                "unknown table `{name}`; known tables: {}",
                self.names().collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// Adds (or replaces) the table `name`; returns the table it replaced.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        table: impl Into<Arc<Table>>,
    ) -> Option<Arc<Table>> {
        self.tables.insert(name.into(), table.into())
    }

    /// Table names in ascending order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tables.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Adds (or replaces) the table `name` made of Arrow record batches of one schema, their
    /// rows one after another; types are mapped as [`arrow_convert`] documents.
    pub fn insert_batches(
        &mut self,
        name: &str,
        batches: &[arrow_array::RecordBatch],
    ) -> Result<()> {
        let Some(first) = batches.first() else {
            bail!("table `{name}`: no record batches");
        };
        let schema = first.schema();
        if let Some(other) = batches.iter().find(|b| b.schema() != schema) {
            bail!(
                "table `{name}`: record batches of different schemas ({} and {})",
                schema,
                other.schema()
            );
        }
        let columns = arrow_convert::columns_from_batches(&schema, batches).map_err(|e| {
            crate::error::RuntimeError::new(format!("table `{name}`: {}", e.message))
        })?;
        let table = Table {
            names: schema
                .fields()
                .iter()
                .map(|f| Arc::from(f.name().as_str()))
                .collect(),
            columns: columns
                .into_iter()
                .map(crate::value::Value::Vector)
                .collect(),
        };
        self.insert(name, table);
        Ok(())
    }
}

/// One progress bar per table, drawn on stderr only when asked for, stderr is a terminal,
/// and the work has taken more than [`Progress::DELAY`]: a quick load draws nothing.
pub(crate) struct Progress {
    bars: Option<MultiProgress>,
    /// Dropped when the work ends, which stops the timer that would show the bars.
    _done: Option<std::sync::mpsc::Sender<()>>,
}

impl Progress {
    const DELAY: std::time::Duration = std::time::Duration::from_secs(1);

    pub(crate) fn new(wanted: bool) -> Progress {
        if !(wanted && std::io::stderr().is_terminal()) {
            return Progress {
                bars: None,
                _done: None,
            };
        }
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let shown = bars.clone();
        let timer = std::thread::Builder::new()
            .name("progress".to_string())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    finished.recv_timeout(Self::DELAY)
                {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                }
            });
        Progress {
            bars: timer.is_ok().then_some(bars),
            _done: Some(done),
        }
    }

    /// A bar for `table` of `length` units (rows, or bytes when `bytes`).
    pub(crate) fn bar(&self, table: &str, length: u64, bytes: bool) -> ProgressBar {
        let Some(bars) = &self.bars else {
            return ProgressBar::hidden();
        };
        let template = if bytes {
            "{prefix:>9} [{bar:32}] {bytes:>10}/{total_bytes:<10} {elapsed}"
        } else {
            "{prefix:>9} [{bar:32}] {human_pos:>10}/{human_len:<10} {elapsed}"
        };
        let style = ProgressStyle::with_template(template)
            .map(|style| style.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = bars.add(ProgressBar::new(length).with_style(style));
        bar.set_prefix(table.to_string());
        bar
    }
}

/// Counts rows into a progress bar in batches, so the bar's lock is not taken per row.
pub(crate) struct Ticker<'a> {
    bar: &'a ProgressBar,
    pending: u64,
}

impl<'a> Ticker<'a> {
    const BATCH: u64 = 16_384;

    pub(crate) fn new(bar: &'a ProgressBar) -> Ticker<'a> {
        Ticker { bar, pending: 0 }
    }

    pub(crate) fn tick(&mut self, units: u64) {
        self.pending += units;
        if self.pending >= Self::BATCH {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        self.bar.inc(self.pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tables_are_named_with_the_known_ones() {
        let mut database = Database::new();
        assert_eq!(
            database.table("orders").unwrap_err().message,
            "unknown table `orders`: no tables are loaded"
        );
        database.insert(
            "region",
            Table {
                names: vec![],
                columns: vec![],
            },
        );
        database.insert(
            "nation",
            Table {
                names: vec![],
                columns: vec![],
            },
        );
        assert_eq!(
            database.table("orders").unwrap_err().message,
            "unknown table `orders`; known tables: nation, region"
        );
        assert!(database.table("nation").is_ok());
        assert_eq!(database.names().collect::<Vec<_>>(), ["nation", "region"]);
        assert_eq!(database.len(), 2);
    }
}
