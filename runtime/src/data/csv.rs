//! Plain CSV files as tables: a header row of column names, then RFC 4180 records. A header
//! may give a column's type after a colon (`price:f64`; `i32 i64 f64 date sym str`): then
//! every cell must parse as that type, and one that does not is an error naming the file,
//! the line, the column and the value. Other column types are inferred from every cell: all
//! integers → `i64`, all numbers → `f64`, all ISO dates (`YYYY-MM-DD`) → `date`, anything
//! else → `sym`. An empty column is `sym`.

use std::path::Path;
use std::sync::Arc;

use crate::bail;
use crate::data::columns::{parse_iso_date, SymBuilder};
use crate::data::Database;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{Table, Value, Vector};

impl Database {
    /// Loads the CSV file `path` as the table `name` (replacing a table of that name).
    pub fn load_csv(&mut self, name: &str, path: &Path) -> Result<()> {
        let table = read_csv(path)?;
        self.insert(name, table);
        Ok(())
    }
}

fn read_csv(path: &Path) -> Result<Table> {
    let in_file = |error: csv::Error| RuntimeError::new(format!("{}: {error}", path.display()));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(in_file)?;
    let mut names: Vec<Arc<str>> = Vec::new();
    let mut declared: Vec<Option<Type>> = Vec::new();
    for header in reader.headers().map_err(in_file)?.iter() {
        let (name, ty) = match header.rsplit_once(':') {
            Some((name, ty)) => match Type::from_basic_name(ty.trim()) {
                Some(t @ (Type::I32 | Type::I64 | Type::F64 | Type::Date | Type::Sym | Type::Str)) => {
                    (name, Some(t))
                }
                _ => bail!(
                    "{}: column `{name}`: unsupported type `{ty}` (i32, i64, f64, date, sym or str)",
                    path.display()
                ),
            },
            None => (header, None),
        };
        names.push(Arc::from(name));
        declared.push(ty);
    }
    for (position, name) in names.iter().enumerate() {
        if names[..position].contains(name) {
            bail!("{}: column `{name}` appears twice", path.display());
        }
    }
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    let mut lines: Vec<u64> = Vec::new();
    // The reader checks that every record has as many fields as the header.
    for record in reader.records() {
        let record = record.map_err(in_file)?;
        lines.push(record.position().map_or(0, |p| p.line()));
        for (column, field) in cells.iter_mut().zip(record.iter()) {
            column.push(field.to_string());
        }
    }
    let mut columns = Vec::with_capacity(names.len());
    for (index, (column, ty)) in cells.iter().zip(&declared).enumerate() {
        let vector = match ty {
            None => infer_column(column),
            Some(ty) => typed_column(column, ty).map_err(|row| {
                RuntimeError::new(format!(
                    "{}:{}: column {} `{}`: expected {ty}, found `{}`",
                    path.display(),
                    lines.get(row).copied().unwrap_or(0),
                    index + 1,
                    names[index],
                    column[row]
                ))
            })?,
        };
        columns.push(Value::Vector(vector));
    }
    Ok(Table { names, columns })
}

/// The cells parsed as the declared type `ty`; the error is the row that does not parse.
fn typed_column(cells: &[String], ty: &Type) -> std::result::Result<Vector, usize> {
    fn parse_all<T>(
        cells: &[String],
        parse: impl Fn(&str) -> Option<T>,
    ) -> std::result::Result<Vec<T>, usize> {
        cells
            .iter()
            .enumerate()
            .map(|(row, cell)| parse(cell.trim()).ok_or(row))
            .collect()
    }
    Ok(match ty {
        Type::I32 => Vector::I32(Arc::new(parse_all(cells, |c| c.parse().ok())?)),
        Type::I64 => Vector::I64(Arc::new(parse_all(cells, |c| c.parse().ok())?)),
        Type::F64 => Vector::F64(Arc::new(parse_all(cells, |c| c.parse().ok())?)),
        Type::Date => Vector::Date(Arc::new(parse_all(cells, |c| {
            parse_iso_date(c.as_bytes())
        })?)),
        Type::Str => Vector::Str(crate::value::Strings::from_strs(cells)),
        _ => {
            let mut symbols = SymBuilder::with_capacity(cells.len());
            for cell in cells {
                symbols.push(cell);
            }
            Vector::Sym(symbols.finish())
        }
    })
}

/// The narrowest column type every cell parses as.
fn infer_column(cells: &[String]) -> Vector {
    if !cells.is_empty() {
        if let Some(integers) = cells.iter().map(|cell| cell.parse::<i64>().ok()).collect() {
            return Vector::I64(Arc::new(integers));
        }
        let finite = |cell: &String| cell.parse::<f64>().ok().filter(|v| v.is_finite());
        if let Some(numbers) = cells.iter().map(finite).collect() {
            return Vector::F64(Arc::new(numbers));
        }
        if let Some(days) = cells
            .iter()
            .map(|cell| parse_iso_date(cell.as_bytes()))
            .collect()
        {
            return Vector::Date(Arc::new(days));
        }
    }
    let mut symbols = SymBuilder::with_capacity(cells.len());
    for cell in cells {
        symbols.push(cell);
    }
    Vector::Sym(symbols.finish())
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
        assert!(ragged.message.contains("line: 3"), "{}", ragged.message);
        let repeated = load("a,a\n1,2\n").unwrap_err();
        assert!(
            repeated.message.ends_with("column `a` appears twice"),
            "{}",
            repeated.message
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
