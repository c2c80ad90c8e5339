//! Plain CSV files as tables: a header row of column names, then RFC 4180 records. Column
//! types are inferred from every cell: all integers → `i64`, all numbers → `f64`, all ISO
//! dates (`YYYY-MM-DD`) → `date`, anything else → `sym`. An empty column is `sym`.

use std::path::Path;
use std::sync::Arc;

use crate::bail;
use crate::data::columns::{parse_iso_date, SymBuilder};
use crate::data::Database;
use crate::error::{Result, RuntimeError};
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
    let names: Vec<Arc<str>> = reader
        .headers()
        .map_err(in_file)?
        .iter()
        .map(Arc::from)
        .collect();
    for (position, name) in names.iter().enumerate() {
        if names[..position].contains(name) {
            bail!("{}: column `{name}` appears twice", path.display());
        }
    }
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    // The reader checks that every record has as many fields as the header.
    for record in reader.records() {
        let record = record.map_err(in_file)?;
        for (column, field) in cells.iter_mut().zip(record.iter()) {
            column.push(field.to_string());
        }
    }
    let columns = cells
        .iter()
        .map(|column| Value::Vector(infer_column(column)))
        .collect();
    Ok(Table { names, columns })
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
}
