//! Plain CSV files as tables: a header row of column names, then RFC 4180 records. A header
//! may give a column's type after a colon (`price:f64`; `i32 i64 f64 date sym str`): then
//! every cell must parse as that type, and one that does not is an error naming the file,
//! the line, the column and the value. Other column types are inferred from every cell: all
//! integers → `i64`, all numbers → `f64`, all ISO dates (`YYYY-MM-DD`) → `date`, anything
//! else → `sym`. An empty column is `sym`.
//!
//! The records are cut into pieces at line ends outside quotes and parsed in parallel: a
//! first pass infers the types of undeclared columns (each piece folds its cells' types), a
//! second parses every piece straight into typed columns.

use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::bail;
use crate::data::columns::{join_parts, parse_iso_date, SymBuilder};
use crate::data::Database;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{Strings, Table, Value, Vector};

/// Bytes a piece should have at least before a file is cut in pieces (small in unit tests,
/// so that small files are cut too).
const BYTES_PER_PIECE: usize = if cfg!(test) { 16 << 10 } else { 4 << 20 };

impl Database {
    /// Loads the CSV file `path` as the table `name` (replacing a table of that name).
    pub fn load_csv(&mut self, name: &str, path: &Path) -> Result<()> {
        let table = read_csv(path)?;
        self.insert(name, table);
        Ok(())
    }
}

/// What the cells of a column parse as, from narrowest to widest; folding two gives the
/// narrowest type both parse as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Inferred {
    /// No cell yet.
    Nothing,
    Integer,
    Number,
    Date,
    Text,
}

impl Inferred {
    fn of(cell: &[u8]) -> Inferred {
        let Ok(text) = std::str::from_utf8(cell) else {
            return Inferred::Text;
        };
        if text.parse::<i64>().is_ok() {
            Inferred::Integer
        } else if text.parse::<f64>().is_ok_and(f64::is_finite) {
            Inferred::Number
        } else if parse_iso_date(cell).is_some() {
            Inferred::Date
        } else {
            Inferred::Text
        }
    }

    fn fold(self, other: Inferred) -> Inferred {
        use Inferred::*;
        match (self, other) {
            (Nothing, x) | (x, Nothing) => x,
            (a, b) if a == b => a,
            (Integer | Number, Integer | Number) => Number,
            _ => Text,
        }
    }

    fn column_type(self) -> Type {
        match self {
            Inferred::Integer => Type::I64,
            Inferred::Number => Type::F64,
            Inferred::Date => Type::Date,
            Inferred::Nothing | Inferred::Text => Type::Sym,
        }
    }
}

fn read_csv(path: &Path) -> Result<Table> {
    let shown = path.display();
    let bytes =
        std::fs::read(path).map_err(|e| RuntimeError::new(format!("{shown}: cannot read: {e}")))?;
    let in_file = |error: csv::Error| RuntimeError::new(format!("{shown}: {error}"));
    // The header: the first record, wherever it ends.
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes.as_slice());
    let headers = reader.headers().map_err(in_file)?.clone();
    let body_start = usize::try_from(reader.position().byte()).unwrap_or(bytes.len());
    let body_line = reader.position().line().max(1);
    let mut names: Vec<Arc<str>> = Vec::new();
    let mut declared: Vec<Option<Type>> = Vec::new();
    for header in headers.iter() {
        let (name, ty) = match header.rsplit_once(':') {
            Some((name, ty)) => match Type::from_basic_name(ty.trim()) {
                Some(t @ (Type::I32 | Type::I64 | Type::F64 | Type::Date | Type::Sym | Type::Str)) => {
                    (name, Some(t))
                }
                _ => bail!(
                    "{shown}: column `{name}`: unsupported type `{ty}` (i32, i64, f64, date, sym or str)"
                ),
            },
            None => (header, None),
        };
        names.push(Arc::from(name));
        declared.push(ty);
    }
    for (position, name) in names.iter().enumerate() {
        if names[..position].contains(name) {
            bail!("{shown}: column `{name}` appears twice");
        }
    }
    let body = &bytes[body_start.min(bytes.len())..];
    let pieces = split_records(
        body,
        (body.len() / BYTES_PER_PIECE).clamp(1, rayon::current_num_threads().max(1)),
    );
    // The line each piece starts on, for messages.
    let first_lines: Vec<u64> = {
        let newlines: Vec<u64> = pieces
            .par_iter()
            .map(|piece| piece.iter().filter(|&&b| b == b'\n').count() as u64)
            .collect();
        let mut line = body_line;
        newlines
            .iter()
            .map(|count| {
                let first = line;
                line += count;
                first
            })
            .collect()
    };
    let width = names.len();
    let check = |record: &csv::ByteRecord, first_line: u64| -> Result<()> {
        if record.len() != width {
            let line = first_line + record.position().map_or(1, |p| p.line()) - 1;
            bail!(
                "{shown}:{line}: found a record with {} fields, the header has {width}",
                record.len()
            );
        }
        Ok(())
    };
    // Pass 1: the types of the undeclared columns.
    let types: Vec<Type> = if declared.iter().all(Option::is_some) {
        declared.iter().flatten().cloned().collect()
    } else {
        let folded = pieces
            .par_iter()
            .zip(&first_lines)
            .map(|(piece, &first_line)| -> Result<Vec<Inferred>> {
                let mut kinds = vec![Inferred::Nothing; width];
                let mut reader = piece_reader(piece);
                let mut record = csv::ByteRecord::new();
                while reader.read_byte_record(&mut record).map_err(in_file)? {
                    check(&record, first_line)?;
                    for ((kind, cell), ty) in kinds.iter_mut().zip(record.iter()).zip(&declared) {
                        if ty.is_none() && *kind != Inferred::Text {
                            *kind = kind.fold(Inferred::of(cell));
                        }
                    }
                }
                Ok(kinds)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut kinds = vec![Inferred::Nothing; width];
        for piece in folded {
            for (kind, other) in kinds.iter_mut().zip(piece) {
                *kind = kind.fold(other);
            }
        }
        declared
            .iter()
            .zip(kinds)
            .map(|(ty, kind)| ty.clone().unwrap_or_else(|| kind.column_type()))
            .collect()
    };
    // Pass 2: every piece into typed columns.
    let parts = pieces
        .par_iter()
        .zip(&first_lines)
        .map(|(piece, &first_line)| -> Result<Vec<Vector>> {
            let mut columns: Vec<CellColumn> = types.iter().map(CellColumn::new).collect();
            let mut reader = piece_reader(piece);
            let mut record = csv::ByteRecord::new();
            while reader.read_byte_record(&mut record).map_err(in_file)? {
                check(&record, first_line)?;
                for (index, (column, cell)) in columns.iter_mut().zip(record.iter()).enumerate() {
                    if !column.push(cell) {
                        let line = first_line + record.position().map_or(1, |p| p.line()) - 1;
                        bail!(
                            "{shown}:{line}: column {} `{}`: expected {}, found `{}`",
                            index + 1,
                            names[index],
                            types[index],
                            String::from_utf8_lossy(cell)
                        );
                    }
                }
            }
            Ok(columns.into_iter().map(CellColumn::finish).collect())
        })
        .collect::<Result<Vec<_>>>()?;
    let columns = if parts.is_empty() {
        types
            .iter()
            .map(|ty| CellColumn::new(ty).finish())
            .collect()
    } else {
        join_parts(parts)?
    };
    Ok(Table {
        names,
        columns: columns.into_iter().map(Value::Vector).collect(),
    })
}

/// A headerless reader of one piece of records.
fn piece_reader(piece: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(piece)
}

/// Cuts `bytes` into about `pieces` runs of whole records: at line ends outside quotes.
fn split_records(bytes: &[u8], pieces: usize) -> Vec<&[u8]> {
    let mut runs = Vec::with_capacity(pieces);
    let mut start = 0;
    let mut in_quotes = false;
    let mut next_target = bytes.len() / pieces;
    for (offset, &byte) in bytes.iter().enumerate() {
        match byte {
            // A doubled quote inside quotes toggles twice: still inside.
            b'"' => in_quotes = !in_quotes,
            b'\n' if !in_quotes && offset >= next_target && runs.len() + 1 < pieces => {
                runs.push(&bytes[start..=offset]);
                start = offset + 1;
                next_target = bytes.len() / pieces * (runs.len() + 1);
            }
            _ => {}
        }
    }
    if start < bytes.len() {
        runs.push(&bytes[start..]);
    }
    runs
}

/// A column being parsed from CSV cells (the cell's text trimmed for numbers and dates).
enum CellColumn {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Date(Vec<i32>),
    Sym(SymBuilder<'static>),
    Str(Vec<String>),
}

impl CellColumn {
    fn new(ty: &Type) -> CellColumn {
        match ty {
            Type::I32 => CellColumn::I32(Vec::new()),
            Type::I64 => CellColumn::I64(Vec::new()),
            Type::F64 => CellColumn::F64(Vec::new()),
            Type::Date => CellColumn::Date(Vec::new()),
            Type::Str => CellColumn::Str(Vec::new()),
            _ => CellColumn::Sym(SymBuilder::default()),
        }
    }

    /// Appends a cell; false when it does not parse as the column's type.
    fn push(&mut self, cell: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(cell) else {
            return false;
        };
        let trimmed = text.trim();
        match self {
            CellColumn::I32(values) => trimmed.parse().map(|v| values.push(v)).is_ok(),
            CellColumn::I64(values) => trimmed.parse().map(|v| values.push(v)).is_ok(),
            CellColumn::F64(values) => trimmed
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(|v| values.push(v))
                .is_some(),
            CellColumn::Date(values) => parse_iso_date(trimmed.as_bytes())
                .map(|v| values.push(v))
                .is_some(),
            CellColumn::Sym(values) => {
                values.push_owned(text);
                true
            }
            CellColumn::Str(values) => {
                values.push(text.to_string());
                true
            }
        }
    }

    fn finish(self) -> Vector {
        match self {
            CellColumn::I32(values) => Vector::I32(Arc::new(values)),
            CellColumn::I64(values) => Vector::I64(Arc::new(values)),
            CellColumn::F64(values) => Vector::F64(Arc::new(values)),
            CellColumn::Date(values) => Vector::Date(Arc::new(values)),
            CellColumn::Sym(values) => Vector::Sym(values.finish()),
            CellColumn::Str(values) => Vector::Str(Strings::from_strs(&values)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temporal::days_from_civil;
    use crate::value::Strings;

    fn load(text: &str) -> Result<Table> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("data.csv");
        std::fs::write(&path, text).expect("writable");
        let mut database = Database::new();
        database.load_csv("data", &path)?;
        database.table("data").map(|table| (*table).clone())
    }

    #[test]
    fn column_types_are_inferred_from_every_cell() {
        let table = load(
            "id,price,day,name,mixed\n\
             1,2.5,1998-12-01,\"Smith, J\",3\n\
             -7,3,1970-01-01,Doe,x\n",
        )
        .expect("valid CSV");
        let names: Vec<&str> = table.names.iter().map(|n| n.as_ref()).collect();
        assert_eq!(names, ["id", "price", "day", "name", "mixed"]);
        let column = |name: &str| table.column(name).cloned();
        assert_eq!(
            column("id"),
            Some(Value::Vector(Vector::I64(Arc::new(vec![1, -7]))))
        );
        assert_eq!(
            column("price"),
            Some(Value::Vector(Vector::F64(Arc::new(vec![2.5, 3.0]))))
        );
        assert_eq!(
            column("day"),
            Some(Value::Vector(Vector::Date(Arc::new(vec![
                days_from_civil(1998, 12, 1),
                0
            ]))))
        );
        assert_eq!(
            column("name"),
            Some(Value::Vector(Vector::Sym(Strings::from_strs(&[
                "Smith, J", "Doe"
            ]))))
        );
        assert_eq!(
            column("mixed"),
            Some(Value::Vector(Vector::Sym(Strings::from_strs(&["3", "x"]))))
        );
    }

    #[test]
    fn ragged_records_and_repeated_names_are_errors() {
        let ragged = load("a,b\n1,2\n3\n").unwrap_err();
        assert!(ragged.message.contains("data.csv"), "{}", ragged.message);
        assert!(
            ragged
                .message
                .ends_with("data.csv:3: found a record with 1 fields, the header has 2"),
            "{}",
            ragged.message
        );
        let repeated = load("a,a\n1,2\n").unwrap_err();
        assert!(
            repeated.message.ends_with("column `a` appears twice"),
            "{}",
            repeated.message
        );
    }

    #[test]
    fn records_split_at_line_ends_outside_quotes() {
        let text = b"1,\"a\nb\"\n2,\"c\"\"\nd\"\n3,e\n4,f\n";
        for pieces in 1..8 {
            let runs = split_records(text, pieces);
            assert_eq!(runs.concat(), text.to_vec(), "{pieces}");
            for run in &runs {
                let quotes = run.iter().filter(|&&b| b == b'"').count();
                assert_eq!(
                    quotes % 2,
                    0,
                    "{pieces}: {:?}",
                    String::from_utf8_lossy(run)
                );
            }
        }
    }

    #[test]
    fn a_large_file_parses_in_pieces_as_one() {
        // Enough rows for several pieces, quoted newlines among them.
        let mut text = String::from("id,name,price\n");
        for row in 0..50_000 {
            text += &format!("{row},\"n{}\nx\",{}.5\n", row % 7, row % 100);
        }
        let table = load(&text).expect("valid CSV");
        assert_eq!(table.rows(), 50_000);
        let Some(Value::Vector(Vector::Sym(names))) = table.column("name") else {
            panic!("name is sym");
        };
        assert_eq!(names.get(49_999), format!("n{}\nx", 49_999 % 7));
        assert_eq!(names.dict.strings.len(), 7);
        assert_eq!(table.column("id").map(Value::ty), Some(Type::I64));
        assert_eq!(table.column("price").map(Value::ty), Some(Type::F64));
        let bad = text
            .replacen("id,", "id:i64,", 1)
            .replace("\n49999,", "\n49999x,");
        let error = load(&bad).unwrap_err();
        assert!(
            error.message.ends_with(&format!(
                "data.csv:{}: column 1 `id`: expected i64, found `49999x`",
                2 + 2 * 49_999
            )),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_header_without_rows_gives_empty_sym_columns() {
        let table = load("a,b\n").expect("valid CSV");
        assert_eq!(table.rows(), 0);
        assert_eq!(
            table.column("b").map(Value::ty),
            Some(crate::types::Type::Sym)
        );
    }

    #[test]
    fn declared_column_types_parse_every_cell_or_name_the_one_that_does_not() {
        let table =
            load("id:i32,price:f64,day:date,name:str\n1,2.5,1998-12-01,x\n").expect("typed CSV");
        assert_eq!(
            table.column("id"),
            Some(&Value::Vector(Vector::I32(Arc::new(vec![1]))))
        );
        assert_eq!(table.column("name").map(Value::ty), Some(Type::Str));
        let error = load("id,price:f64\n1,2.5\n2,cheap\n").unwrap_err();
        assert!(
            error
                .message
                .ends_with("data.csv:3: column 2 `price`: expected f64, found `cheap`"),
            "{}",
            error.message
        );
        let unknown = load("id:money\n1\n").unwrap_err();
        assert!(
            unknown.message.contains("unsupported type `money`"),
            "{}",
            unknown.message
        );
    }
}
