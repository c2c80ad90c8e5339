//! Data files by format: which reader a path needs (by its extension), single tables
//! (`--table NAME=PATH`), and directories of TPC-H tables in any mix of formats
//! (`--data DIR`), which all pass through the TPC-H schema step.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bail;
use crate::data::files::{read_arrow_ipc, read_parquet, FileColumns};
use crate::data::tpch::{self, ColumnKind, TableSpec, TPCH_SCHEMA};
use crate::data::{tbl, Database, Progress};
use crate::error::{Result, RuntimeError};
use crate::value::{Strings, Table, Value, Vector};

/// The formats a table is read from, picked by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// dbgen `.tbl`: `|`-separated, no header, TPC-H tables only.
    Tbl,
    /// `.csv` with a header row.
    Csv,
    /// `.parquet`.
    Parquet,
    /// Arrow IPC: `.arrow`, `.feather` (Feather v2), `.arrows` (the stream format).
    ArrowIpc,
}

impl FileFormat {
    /// Extensions in the order `--data DIR` looks for a table's file.
    pub const EXTENSIONS: [(&'static str, FileFormat); 6] = [
        ("tbl", FileFormat::Tbl),
        ("parquet", FileFormat::Parquet),
        ("arrow", FileFormat::ArrowIpc),
        ("feather", FileFormat::ArrowIpc),
        ("arrows", FileFormat::ArrowIpc),
        ("csv", FileFormat::Csv),
    ];

    /// The file of table `table` in `dir`: the first of `<table>.tbl`, `.parquet`,
    /// `.arrow`, `.feather`, `.arrows`, `.csv` that exists.
    pub fn find_table(dir: &Path, table: &str) -> Option<PathBuf> {
        Self::EXTENSIONS
            .iter()
            .map(|(extension, _)| dir.join(format!("{table}.{extension}")))
            .find(|path| path.is_file())
    }

    /// The format of `path`, by its extension (case-insensitive).
    pub fn of_path(path: &Path) -> Result<FileFormat> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        match Self::EXTENSIONS.iter().find(|(e, _)| *e == extension) {
            Some((_, format)) => Ok(*format),
            None => bail!(
                "`{}`: unknown data file extension (known: .tbl, .csv, .parquet, .arrow, .feather, .arrows)",
                path.display()
            ),
        }
    }
}

impl Database {
    /// Loads the file `path` as the table `name` (replacing a table of that name), its format
    /// chosen by extension. Parquet and Arrow columns are typed as
    /// [`crate::data::arrow_convert`] documents; CSV as [`Database::load_csv`] does; a `.tbl`
    /// file must hold a TPC-H table of that name (its foreign keys stay plain keys).
    pub fn load_file(&mut self, name: &str, path: &Path) -> Result<()> {
        let progress = Progress::new(false);
        let table = match FileFormat::of_path(path)? {
            FileFormat::Csv => return self.load_csv(name, path),
            FileFormat::Tbl => {
                let Some(spec) = tpch::tpch_table(name) else {
                    bail!(
                        "`{}`: a .tbl file is read as a TPC-H table, and `{name}` is none",
                        path.display()
                    );
                };
                let columns =
                    tbl::read_tbl(path, spec, &vec![true; spec.columns.len()], &progress)?;
                Table {
                    names: spec.columns.iter().map(|c| Arc::from(c.name)).collect(),
                    columns: columns.into_iter().flatten().map(Value::Vector).collect(),
                }
            }
            FileFormat::Parquet | FileFormat::ArrowIpc => {
                let read = read_arrow_file(path, None, &progress, name)?;
                Table {
                    names: read.names,
                    columns: read.columns.into_iter().map(Value::Vector).collect(),
                }
            }
        };
        self.insert(name, table);
        Ok(())
    }

    /// Loads TPC-H tables from `dir`: for each table, the first of `<table>.tbl`,
    /// `.parquet`, `.arrow`, `.feather`, `.arrows`, `.csv` that exists. Only the tables
    /// `tables` names (and those their foreign keys reference) are read (all eight when
    /// `None`), and of those only the columns `columns` names and the primary keys (all when
    /// `None`).
    ///
    /// Every source passes through the same TPC-H schema step: columns are found by name
    /// (any case), integer keys may be INT32 or INT64 (a value outside i32 is an error naming
    /// the row), prices DECIMAL or DOUBLE, one-letter flags `char` or text, and foreign keys
    /// become enumerations.
    pub fn from_dir(
        dir: &Path,
        progress: bool,
        tables: Option<&[String]>,
        columns: Option<&[String]>,
    ) -> Result<Database> {
        if !dir.is_dir() {
            bail!("`{}` is not a directory of TPC-H tables", dir.display());
        }
        let needed = tpch::tables_needed(tables);
        let mut files: Vec<Option<PathBuf>> = Vec::with_capacity(TPCH_SCHEMA.len());
        for (spec, &needed) in TPCH_SCHEMA.iter().zip(&needed) {
            if !needed {
                files.push(None);
                continue;
            }
            match FileFormat::find_table(dir, spec.name) {
                Some(path) => files.push(Some(path)),
                None => bail!(
                    "missing TPC-H file `{}` (or .parquet, .arrow, .feather, .arrows, .csv)",
                    dir.join(format!("{}.tbl", spec.name)).display()
                ),
            }
        }
        let bytes: u64 = files
            .iter()
            .flatten()
            .map(|file| std::fs::metadata(file).map_or(0, |m| m.len()))
            .sum();
        let limit = crate::sizes::memory_limit();
        // Loading holds a file and its columns (about as large again) at once; compressed
        // formats grow more, which the 2x does not see: it only rules out the hopeless.
        if bytes.saturating_mul(2) > limit {
            bail!(
                "the TPC-H files in `{}` ({}) need more memory than is available ({})",
                dir.display(),
                crate::sizes::human_bytes(u128::from(bytes)),
                crate::sizes::human_bytes(u128::from(limit))
            );
        }
        let progress = Progress::new(progress);
        let mut raw = Vec::with_capacity(files.len());
        for (spec, file) in TPCH_SCHEMA.iter().zip(&files) {
            let Some(path) = file else {
                raw.push(None);
                continue;
            };
            let selected = tpch::columns_needed(spec, columns);
            raw.push(Some(read_tpch_table(path, spec, &selected, &progress)?));
        }
        crate::data::phases::time("schema step", || tpch::assemble_columns(raw))
    }
}

/// Reads a Parquet or Arrow IPC file (by extension); a bar for `table` counts its rows.
fn read_arrow_file(
    path: &Path,
    wanted: Option<&[String]>,
    progress: &Progress,
    table: &str,
) -> Result<FileColumns> {
    let bar = progress.bar(table, 0, false);
    let read = match FileFormat::of_path(path)? {
        FileFormat::Parquet => read_parquet(path, wanted, &bar),
        _ => read_arrow_ipc(path, wanted, &bar),
    };
    bar.finish_and_clear();
    read
}

/// The columns `selected` flags of TPC-H table `spec` from `path`, in the schema's raw types.
fn read_tpch_table(
    path: &Path,
    spec: &TableSpec,
    selected: &[bool],
    progress: &Progress,
) -> Result<Vec<Option<Vector>>> {
    let format = FileFormat::of_path(path)?;
    if format == FileFormat::Tbl {
        return tbl::read_tbl(path, spec, selected, progress);
    }
    let read = match format {
        FileFormat::Csv => {
            let mut database = Database::new();
            database.load_csv(spec.name, path)?;
            let table = database.table(spec.name)?;
            let mut columns = Vec::with_capacity(table.columns.len());
            for (name, column) in table.names.iter().zip(&table.columns) {
                match column {
                    Value::Vector(vector) => columns.push(vector.clone()),
                    _ => bail!("{}: column `{name}` is not a vector", path.display()),
                }
            }
            FileColumns {
                names: table.names.clone(),
                columns,
            }
        }
        _ => {
            // Writers differ in case (`L_ORDERKEY`): ask for every case of the names.
            let wanted: Vec<String> = spec
                .columns
                .iter()
                .zip(selected)
                .filter(|(_, &s)| s)
                .flat_map(|(c, _)| [c.name.to_string(), c.name.to_ascii_uppercase()])
                .collect();
            read_arrow_file(path, Some(&wanted), progress, spec.name)?
        }
    };
    let mut found: Vec<Option<Vector>> = vec![None; spec.columns.len()];
    for (name, column) in read.names.iter().zip(read.columns) {
        if let Some(position) = spec
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
        {
            found[position] = Some(column);
        }
    }
    let mut columns = Vec::with_capacity(spec.columns.len());
    for ((column_spec, column), &wanted) in spec.columns.iter().zip(found).zip(selected) {
        if !wanted {
            columns.push(None);
            continue;
        }
        let Some(column) = column else {
            bail!(
                "{}: table `{}` has no column `{}` (its columns: {})",
                path.display(),
                spec.name,
                column_spec.name,
                read.names
                    .iter()
                    .map(|n| n.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let raw = to_schema_type(column, column_spec.kind).map_err(|message| {
            RuntimeError::new(format!(
                "{}: column `{}`: {message}",
                path.display(),
                column_spec.name
            ))
        })?;
        columns.push(Some(raw));
    }
    Ok(columns)
}

/// A column as read from a file, converted to the raw type of the schema's `kind`: the
/// conversions other writers need (INT64 keys, DECIMAL prices already f64, VARCHAR flags),
/// each exact or an error naming the row.
fn to_schema_type(column: Vector, kind: ColumnKind) -> std::result::Result<Vector, String> {
    let found = column.ty();
    let wrong = || format!("expected {}, found a {found} column", kind.raw_type());
    Ok(match (kind, column) {
        (ColumnKind::I32 | ColumnKind::ForeignKey { .. }, column) => match column {
            Vector::I32(values) => Vector::I32(values),
            Vector::I16(values) => {
                Vector::I32(Arc::new(values.iter().map(|&v| v.into()).collect()))
            }
            Vector::I8(values) => Vector::I32(Arc::new(values.iter().map(|&v| v.into()).collect())),
            Vector::I64(values) => Vector::I32(Arc::new(
                values
                    .iter()
                    .enumerate()
                    .map(|(row, &v)| {
                        i32::try_from(v)
                            .map_err(|_| format!("row {}: {v} does not fit in i32", row + 1))
                    })
                    .collect::<std::result::Result<_, _>>()?,
            )),
            _ => return Err(wrong()),
        },
        (ColumnKind::F64, column) => match column {
            Vector::F64(values) => Vector::F64(values),
            Vector::F32(values) => {
                Vector::F64(Arc::new(values.iter().map(|&v| v.into()).collect()))
            }
            Vector::I32(values) => {
                Vector::F64(Arc::new(values.iter().map(|&v| v.into()).collect()))
            }
            // Integers that a double holds exactly (every price and quantity does).
            Vector::I64(values) => Vector::F64(Arc::new(
                values
                    .iter()
                    .enumerate()
                    .map(|(row, &v)| {
                        let x = v as f64;
                        if x as i64 == v && x.abs() < 9_007_199_254_740_992.0 {
                            Ok(x)
                        } else {
                            Err(format!("row {}: {v} is not exact as f64", row + 1))
                        }
                    })
                    .collect::<std::result::Result<_, _>>()?,
            )),
            _ => return Err(wrong()),
        },
        (ColumnKind::Date, Vector::Date(values)) => Vector::Date(values),
        (ColumnKind::Char, Vector::Char(values)) => Vector::Char(values),
        (ColumnKind::Char, Vector::Sym(strings) | Vector::Str(strings)) => {
            Vector::Char(Arc::new(one_letters(&strings)?))
        }
        (ColumnKind::Sym, Vector::Sym(strings)) => Vector::Sym(strings),
        (ColumnKind::Sym, Vector::Str(strings)) => Vector::Sym(strings),
        _ => return Err(wrong()),
    })
}

/// The single byte of each one-letter string (a flag such as `R` or `F`).
fn one_letters(strings: &Strings) -> std::result::Result<Vec<u8>, String> {
    let bytes: Vec<Option<u8>> = strings
        .dict
        .strings
        .iter()
        .map(|s| match s.as_bytes() {
            [byte] => Some(*byte),
            _ => None,
        })
        .collect();
    strings
        .codes
        .iter()
        .enumerate()
        .map(|(row, &code)| {
            bytes.get(code as usize).copied().flatten().ok_or_else(|| {
                format!(
                    "row {}: expected one character, found `{}`",
                    row + 1,
                    strings.get(row)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{write_batches, write_tpch_files, ArrowFileFormat};
    use arrow_array::{Array, ArrayRef, Decimal128Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{Field, Schema};

    fn same_database(a: &Database, b: &Database) {
        assert_eq!(a.names().collect::<Vec<_>>(), b.names().collect::<Vec<_>>());
        for name in a.names() {
            let (x, y) = (
                a.table(name).expect("loaded"),
                b.table(name).expect("loaded"),
            );
            assert_eq!(x.names, y.names, "{name}");
            for (column, (p, q)) in x.names.iter().zip(x.columns.iter().zip(&y.columns)) {
                assert_eq!(p, q, "{name}.{column}");
            }
        }
    }

    #[test]
    fn tpch_from_parquet_and_arrow_is_the_generated_database() {
        let sf = 0.001;
        let generated = Database::tpch(sf, false).expect("generates");
        for format in [ArrowFileFormat::Parquet, ArrowFileFormat::ArrowIpc] {
            let dir = tempfile::tempdir().expect("temporary directory");
            write_tpch_files(sf, dir.path(), format, false).expect("written");
            let loaded = Database::from_dir(dir.path(), false, None, None).expect("loads");
            same_database(&loaded, &generated);
        }
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let schema = Schema::new(
            columns
                .iter()
                .map(|(name, array)| Field::new(*name, array.data_type().clone(), false))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(
            Arc::new(schema),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .expect("valid batch")
    }

    /// Region and nation as DuckDB's `COPY … (FORMAT parquet)` writes them: BIGINT keys,
    /// VARCHAR text, upper-case names from some writers.
    fn write_duckdb_style(dir: &Path, nation_region: i64) {
        let region = batch(vec![
            ("R_REGIONKEY", Arc::new(Int64Array::from(vec![0, 1]))),
            (
                "r_name",
                Arc::new(StringArray::from(vec!["AFRICA", "ASIA"])),
            ),
            ("r_comment", Arc::new(StringArray::from(vec!["x", "y"]))),
        ]);
        let nation = batch(vec![
            ("n_nationkey", Arc::new(Int64Array::from(vec![0, 1]))),
            (
                "n_name",
                Arc::new(StringArray::from(vec!["KENYA", "CHINA"])),
            ),
            (
                "n_regionkey",
                Arc::new(Int64Array::from(vec![0, nation_region])),
            ),
            ("n_comment", Arc::new(StringArray::from(vec!["a", "b"]))),
        ]);
        write_batches(
            &dir.join("region.parquet"),
            &[region],
            ArrowFileFormat::Parquet,
        )
        .expect("written");
        write_batches(
            &dir.join("nation.parquet"),
            &[nation],
            ArrowFileFormat::Parquet,
        )
        .expect("written");
    }

    #[test]
    fn other_writers_int64_keys_and_varchar_text_pass_the_schema_step() {
        let dir = tempfile::tempdir().expect("temporary directory");
        write_duckdb_style(dir.path(), 1);
        let nation = ["nation".to_string()];
        let database = Database::from_dir(dir.path(), false, Some(&nation), None).expect("loads");
        let table = database.table("nation").expect("loaded");
        assert_eq!(
            table.column("n_nationkey"),
            Some(&Value::Vector(Vector::I32(Arc::new(vec![0, 1]))))
        );
        assert_eq!(
            table.column("n_regionkey").map(Value::ty),
            Some(crate::types::Type::Enum(Box::new(crate::types::Type::I32)))
        );
        assert_eq!(
            table.column("n_name").map(Value::ty),
            Some(crate::types::Type::Sym)
        );
    }

    #[test]
    fn a_key_outside_i32_is_an_error_naming_file_column_and_row() {
        let dir = tempfile::tempdir().expect("temporary directory");
        write_duckdb_style(dir.path(), 1 << 40);
        let nation = ["nation".to_string()];
        let error = Database::from_dir(dir.path(), false, Some(&nation), None).unwrap_err();
        let file = dir.path().join("nation.parquet");
        assert_eq!(
            error.message,
            format!(
                "{}: column `n_regionkey`: row 2: 1099511627776 does not fit in i32",
                file.display()
            )
        );
    }

    #[test]
    fn decimal_prices_become_f64_and_text_flags_become_char() {
        let prices = Decimal128Array::from(vec![90_107, 5])
            .with_precision_and_scale(15, 2)
            .expect("valid decimal type");
        let field = Field::new("p", prices.data_type().clone(), false);
        let read =
            crate::data::arrow_convert::vector_from_arrow(&field, &prices, 0).expect("readable");
        assert_eq!(
            to_schema_type(read, ColumnKind::F64),
            Ok(Vector::F64(Arc::new(vec![901.07, 0.05])))
        );
        let flags = Vector::Sym(Strings::from_strs(&["R", "F", "R"]));
        assert_eq!(
            to_schema_type(flags, ColumnKind::Char),
            Ok(Vector::Char(Arc::new(b"RFR".to_vec())))
        );
        let long = Vector::Sym(Strings::from_strs(&["R", "RF"]));
        assert_eq!(
            to_schema_type(long, ColumnKind::Char),
            Err("row 2: expected one character, found `RF`".to_string())
        );
        let text = Vector::Sym(Strings::from_strs(&["1"]));
        assert_eq!(
            to_schema_type(text, ColumnKind::Date),
            Err("expected date, found a sym column".to_string())
        );
    }

    #[test]
    fn a_missing_column_is_named_with_the_columns_there_are() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let region = batch(vec![(
            "r_regionkey",
            Arc::new(Int64Array::from(vec![0])) as ArrayRef,
        )]);
        let path = dir.path().join("region.parquet");
        write_batches(&path, &[region], ArrowFileFormat::Parquet).expect("written");
        let wanted = ["region".to_string()];
        let error = Database::from_dir(dir.path(), false, Some(&wanted), None).unwrap_err();
        assert_eq!(
            error.message,
            format!(
                "{}: table `region` has no column `r_name` (its columns: r_regionkey)",
                path.display()
            )
        );
    }

    #[test]
    fn unknown_extensions_are_named() {
        let error = FileFormat::of_path(Path::new("data/t.xlsx")).unwrap_err();
        assert!(error
            .message
            .starts_with("`data/t.xlsx`: unknown data file extension"));
    }
}
