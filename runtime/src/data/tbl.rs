//! dbgen `.tbl` files: one row per line, fields separated by `|`, each line ending in `|`.
//!
//! A file is cut into pieces at line boundaries that parse in parallel. Text is kept exactly
//! as written (TPC-H comments may start or end with a space); blank lines are skipped.

use std::path::Path;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::data::columns::{join_parts, parse_iso_date, SymBuilder};
use crate::data::tpch::{self, ColumnKind, TableSpec, TPCH_SCHEMA};
use crate::data::{Database, Progress, Ticker};
use crate::error::{Result, RuntimeError};
use crate::value::Vector;

/// Bytes a piece should have at least before a file is cut in pieces.
const BYTES_PER_PIECE: usize = 4 << 20;

impl Database {
    /// Loads the eight TPC-H tables from `dir/<table>.tbl` (as `dbgen` or `tpchgen-cli tbl`
    /// write them). With `progress`, draws a bar per table on stderr when it is a terminal.
    pub fn from_tbl_dir(dir: &Path, progress: bool) -> Result<Database> {
        Database::from_tbl_dir_tables(dir, progress, None)
    }

    /// Loads only the TPC-H tables `tables` names (and those their foreign keys reference)
    /// from `dir`; `None` loads all eight. Only their files need to exist. Fails before
    /// reading when they would not fit in the available memory.
    pub fn from_tbl_dir_tables(
        dir: &Path,
        progress: bool,
        tables: Option<&[String]>,
    ) -> Result<Database> {
        if !dir.is_dir() {
            return Err(RuntimeError::new(format!(
                "`{}` is not a directory of TPC-H .tbl files",
                dir.display()
            )));
        }
        let needed = tpch::tables_needed(tables);
        let files: Vec<_> = TPCH_SCHEMA
            .iter()
            .map(|spec| dir.join(format!("{}.tbl", spec.name)))
            .collect();
        let wanted = || {
            files
                .iter()
                .zip(&needed)
                .filter(|(_, n)| **n)
                .map(|(f, _)| f)
        };
        if let Some(missing) = wanted().find(|file| !file.is_file()) {
            return Err(RuntimeError::new(format!(
                "missing TPC-H file `{}`",
                missing.display()
            )));
        }
        let bytes: u64 = wanted()
            .map(|file| std::fs::metadata(file).map_or(0, |m| m.len()))
            .sum();
        let limit = crate::sizes::memory_limit();
        // Loading holds the file and its columns (about as large again) at once.
        if bytes.saturating_mul(2) > limit {
            return Err(RuntimeError::new(format!(
                "the .tbl files in `{}` ({}) need more memory than is available ({})",
                dir.display(),
                crate::sizes::human_bytes(u128::from(bytes)),
                crate::sizes::human_bytes(u128::from(limit))
            )));
        }
        let progress = Progress::new(progress);
        let mut raw = Vec::with_capacity(files.len());
        for ((spec, file), &needed) in TPCH_SCHEMA.iter().zip(&files).zip(&needed) {
            if !needed {
                raw.push(None);
                continue;
            }
            let bytes = std::fs::read(file).map_err(|error| {
                RuntimeError::new(format!("cannot read `{}`: {error}", file.display()))
            })?;
            let bar = progress.bar(spec.name, bytes.len() as u64, true);
            raw.push(Some(parse_tbl(&bytes, spec, &bar).map_err(|error| {
                RuntimeError::new(format!("{}:{error}", file.display()))
            })?));
        }
        tpch::assemble(raw)
    }
}

/// A parse error at a byte offset of the file; rendered as `line:column: message`.
#[derive(Debug)]
struct ErrorAt {
    offset: usize,
    message: String,
}

/// Parses a whole `.tbl` file into raw columns of `spec`. The error text starts with
/// `line:column:` (1-based, column in bytes).
fn parse_tbl(bytes: &[u8], spec: &TableSpec, bar: &ProgressBar) -> Result<Vec<Vector>> {
    let pieces = (bytes.len() / BYTES_PER_PIECE).clamp(1, rayon::current_num_threads().max(1));
    let parsed: Vec<std::result::Result<Vec<Vector>, ErrorAt>> = split_at_lines(bytes, pieces)
        .into_par_iter()
        .map(|(start, piece)| parse_piece(piece, start, spec, bar))
        .collect();
    let mut parts = Vec::with_capacity(parsed.len());
    for part in parsed {
        match part {
            Ok(columns) => parts.push(columns),
            Err(ErrorAt { offset, message }) => {
                let before = &bytes[..offset.min(bytes.len())];
                let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let column = offset - line_start + 1;
                return Err(RuntimeError::new(format!("{line}:{column}: {message}")));
            }
        }
    }
    join_parts(parts)
}

/// Cuts `bytes` into about `pieces` runs of whole lines, each with its starting offset.
fn split_at_lines(bytes: &[u8], pieces: usize) -> Vec<(usize, &[u8])> {
    let mut runs = Vec::with_capacity(pieces);
    let mut start = 0;
    for piece in 1..pieces {
        let target = bytes.len() / pieces * piece;
        if target < start {
            continue;
        }
        let end = bytes[target..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |newline| target + newline + 1);
        runs.push((start, &bytes[start..end]));
        start = end;
    }
    runs.push((start, &bytes[start..]));
    runs
}

/// A column being read from text.
enum ColumnReader<'s> {
    I32(Vec<i32>),
    F64(Vec<f64>),
    Date(Vec<i32>),
    Char(Vec<u8>),
    Sym(SymBuilder<'s>),
}

impl<'s> ColumnReader<'s> {
    fn new(kind: ColumnKind) -> ColumnReader<'s> {
        match kind {
            ColumnKind::I32 | ColumnKind::ForeignKey { .. } => ColumnReader::I32(Vec::new()),
            ColumnKind::F64 => ColumnReader::F64(Vec::new()),
            ColumnKind::Date => ColumnReader::Date(Vec::new()),
            ColumnKind::Char => ColumnReader::Char(Vec::new()),
            ColumnKind::Sym => ColumnReader::Sym(SymBuilder::default()),
        }
    }

    /// Reads one field; the error says what was expected.
    fn push(&mut self, field: &'s [u8]) -> std::result::Result<(), String> {
        let text = std::str::from_utf8(field).map_err(|_| "invalid UTF-8".to_string())?;
        match self {
            ColumnReader::I32(values) => values.push(
                text.parse()
                    .map_err(|_| format!("expected an i32 integer, found `{text}`"))?,
            ),
            ColumnReader::F64(values) => values.push(
                text.parse::<f64>()
                    .ok()
                    .filter(|value| value.is_finite())
                    .ok_or_else(|| format!("expected a decimal number, found `{text}`"))?,
            ),
            ColumnReader::Date(values) => values.push(
                parse_iso_date(field)
                    .ok_or_else(|| format!("expected a date YYYY-MM-DD, found `{text}`"))?,
            ),
            ColumnReader::Char(values) => match field {
                [byte] => values.push(*byte),
                _ => return Err(format!("expected one character, found `{text}`")),
            },
            ColumnReader::Sym(values) => values.push(text),
        }
        Ok(())
    }

    fn finish(self) -> Vector {
        use std::sync::Arc;
        match self {
            ColumnReader::I32(values) => Vector::I32(Arc::new(values)),
            ColumnReader::F64(values) => Vector::F64(Arc::new(values)),
            ColumnReader::Date(values) => Vector::Date(Arc::new(values)),
            ColumnReader::Char(values) => Vector::Char(Arc::new(values)),
            ColumnReader::Sym(values) => Vector::Sym(values.finish()),
        }
    }
}

/// Parses the whole lines of `piece`, which starts at byte `base` of the file.
fn parse_piece<'s>(
    piece: &'s [u8],
    base: usize,
    spec: &TableSpec,
    bar: &ProgressBar,
) -> std::result::Result<Vec<Vector>, ErrorAt> {
    let mut ticker = Ticker::new(bar);
    let mut readers: Vec<ColumnReader<'s>> = spec
        .columns
        .iter()
        .map(|column| ColumnReader::new(column.kind))
        .collect();
    for (line_offset, line) in lines(piece) {
        ticker.tick(line.len() as u64 + 1);
        if line.is_empty() {
            continue;
        }
        let body = line.strip_suffix(b"|").unwrap_or(line);
        let fields = body.split(|&b| b == b'|').count();
        if fields != readers.len() {
            return Err(ErrorAt {
                offset: base + line_offset,
                message: format!(
                    "table `{}` has {} fields per line, found {fields}",
                    spec.name,
                    readers.len()
                ),
            });
        }
        let mut field_offset = line_offset;
        for ((field, reader), column) in body
            .split(|&b| b == b'|')
            .zip(&mut readers)
            .zip(spec.columns)
        {
            reader.push(field).map_err(|problem| ErrorAt {
                offset: base + field_offset,
                message: format!("column `{}`: {problem}", column.name),
            })?;
            field_offset += field.len() + 1;
        }
    }
    Ok(readers.into_iter().map(ColumnReader::finish).collect())
}

/// The lines of `bytes` with their offsets, without `\n` or `\r\n`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |newline| start + newline);
        let line = &bytes[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let item = (start, line);
        start = end + 1;
        Some(item)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tpch_table;
    use crate::value::{Strings, Value};
    use std::sync::Arc;

    fn region() -> &'static TableSpec {
        tpch_table("region").expect("region is a TPC-H table")
    }

    #[test]
    fn splitting_keeps_whole_lines_and_every_byte() {
        let text = b"a|\nbb|\nccc|\nd|\n";
        for pieces in 1..6 {
            let runs = split_at_lines(text, pieces);
            let joined: Vec<u8> = runs.iter().flat_map(|(_, run)| run.to_vec()).collect();
            assert_eq!(joined, text);
            for (start, run) in &runs {
                assert!(*start == 0 || text[start - 1] == b'\n');
                assert_eq!(&text[*start..*start + run.len()], *run);
            }
        }
    }

    #[test]
    fn parses_fields_with_or_without_the_trailing_bar() {
        let text = b"0|AFRICA| lar deposits. |\r\n1|AMERICA|hs use\n\n";
        let columns = parse_tbl(text, region(), &ProgressBar::hidden()).expect("valid");
        assert_eq!(columns[0], Vector::I32(Arc::new(vec![0, 1])));
        assert_eq!(
            columns[2],
            Vector::Sym(Strings::from_strs(&[" lar deposits. ", "hs use"]))
        );
    }

    #[test]
    fn errors_name_line_column_and_field() {
        let text = b"0|AFRICA|x|\n1x|AMERICA|y|\n";
        let error = parse_tbl(text, region(), &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "2:1: column `r_regionkey`: expected an i32 integer, found `1x`"
        );
        let error = parse_tbl(b"0|AFRICA|\n", region(), &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "1:1: table `region` has 3 fields per line, found 2"
        );
        let orders = tpch_table("orders").expect("orders is a TPC-H table");
        let line = b"1|37|O|131251.81|1996-02-30|5-LOW|Clerk#000000951|0|c|\n";
        let error = parse_tbl(line, orders, &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "1:18: column `o_orderdate`: expected a date YYYY-MM-DD, found `1996-02-30`"
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let error = Database::from_tbl_dir(dir.path(), false).unwrap_err();
        let region = dir.path().join("region.tbl");
        assert_eq!(
            error.message,
            format!("missing TPC-H file `{}`", region.display())
        );
    }

    #[test]
    fn tbl_files_load_the_same_database_as_generation() {
        use tpchgen::generators::*;
        let sf = 0.01;
        let dir = tempfile::tempdir().expect("temporary directory");
        let write = |name: &str, lines: Vec<String>| {
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(dir.path().join(format!("{name}.tbl")), text).expect("writable");
        };
        let show = |row: &dyn std::fmt::Display| row.to_string();
        write(
            "region",
            RegionGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "nation",
            NationGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "supplier",
            SupplierGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "customer",
            CustomerGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "part",
            PartGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "partsupp",
            PartSuppGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "orders",
            OrderGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );
        write(
            "lineitem",
            LineItemGenerator::new(sf, 1, 1)
                .iter()
                .map(|r| show(&r))
                .collect(),
        );

        let loaded = Database::from_tbl_dir(dir.path(), false).expect("loads");
        let generated = Database::tpch(sf, false).expect("generates");
        assert_eq!(
            loaded.names().collect::<Vec<_>>(),
            generated.names().collect::<Vec<_>>()
        );
        for name in generated.names() {
            let (a, b) = (loaded.table(name), generated.table(name));
            let (a, b) = (a.expect("loaded"), b.expect("generated"));
            assert_eq!(a.names, b.names, "{name}");
            for (column, (x, y)) in a.names.iter().zip(a.columns.iter().zip(&b.columns)) {
                match (x, y) {
                    (Value::Vector(Vector::Sym(x)), Value::Vector(Vector::Sym(y))) => {
                        assert!(x.iter().eq(y.iter()), "{name}.{column}");
                    }
                    _ => assert_eq!(x, y, "{name}.{column}"),
                }
            }
        }
    }
}
