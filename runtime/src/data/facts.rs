//! Relations of a Datalog program as tables, with the column types its `.decl` gives
//! (no inference): a CSV file whose header names the columns (`--table rel=FILE.csv`), or a
//! Soufflé `.facts` file, tab-separated without a header (`--data DIR`, `DIR/rel.facts`).
//! A cell that does not parse is an error naming the file, line and column.

use std::path::Path;
use std::sync::Arc;

use crate::bail;
use crate::data::Database;
use crate::error::{Result, RuntimeError};
use crate::value::{Strings, Table, Value, Vector};

/// The type of a relation column: `number` (i64) or `symbol` (sym).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactType {
    Number,
    Symbol,
}

/// Where a relation's tuples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactFormat {
    /// A header line naming the columns (in any order, each of `columns` present), then
    /// comma-separated records.
    Csv,
    /// Tab-separated records, no header, the columns in declaration order.
    Facts,
}

impl Database {
    /// Loads the relation `name` with `columns` (name, type) from `path`.
    pub fn load_relation(
        &mut self,
        name: &str,
        path: &Path,
        columns: &[(String, FactType)],
        format: FactFormat,
    ) -> Result<()> {
        let table = read_relation(path, columns, format)?;
        self.insert(name, table);
        Ok(())
    }
}

fn read_relation(path: &Path, columns: &[(String, FactType)], format: FactFormat) -> Result<Table> {
    let shown = path.display();
    let in_file = |error: csv::Error| RuntimeError::new(format!("{shown}: {error}"));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(format == FactFormat::Csv)
        .delimiter(if format == FactFormat::Csv {
            b','
        } else {
            b'\t'
        })
        .flexible(true)
        .from_path(path)
        .map_err(in_file)?;
    // For each declared column, its field position in a record.
    let positions: Vec<usize> = match format {
        FactFormat::Facts => (0..columns.len()).collect(),
        FactFormat::Csv => {
            let header = reader.headers().map_err(in_file)?.clone();
            let mut positions = Vec::with_capacity(columns.len());
            for (column, _) in columns {
                match header.iter().position(|h| h.trim() == column) {
                    Some(p) => positions.push(p),
                    None => bail!(
                        "{shown}:1: the header has no column `{column}` (it has: {})",
                        header.iter().collect::<Vec<_>>().join(", ")
                    ),
                }
            }
            positions
        }
    };
    let mut numbers: Vec<Vec<i64>> = vec![Vec::new(); columns.len()];
    let mut texts: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
    let expected = match format {
        FactFormat::Facts => columns.len(),
        FactFormat::Csv => reader.headers().map_err(in_file)?.len(),
    };
    for record in reader.records() {
        let record = record.map_err(in_file)?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != expected {
            bail!(
                "{shown}:{line}: expected {expected} field(s), found {}",
                record.len()
            );
        }
        for (c, ((column, ty), &position)) in columns.iter().zip(&positions).enumerate() {
            let field = record.get(position).unwrap_or("");
            match ty {
                FactType::Number => match field.trim().parse::<i64>() {
                    Ok(n) => numbers[c].push(n),
                    Err(_) => bail!(
                        "{shown}:{line}: column `{column}`: `{field}` is not a number (an integer of 64 bits)"
                    ),
                },
                FactType::Symbol => texts[c].push(field.to_string()),
            }
        }
    }
    let values = columns
        .iter()
        .enumerate()
        .map(|(c, (_, ty))| {
            Value::Vector(match ty {
                FactType::Number => Vector::I64(Arc::new(std::mem::take(&mut numbers[c]))),
                FactType::Symbol => Vector::Sym(Strings::from_strs(&texts[c])),
            })
        })
        .collect();
    Ok(Table {
        names: columns.iter().map(|(n, _)| Arc::from(n.as_str())).collect(),
        columns: values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("horsec-facts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn columns() -> Vec<(String, FactType)> {
        vec![
            ("a".to_string(), FactType::Number),
            ("b".to_string(), FactType::Symbol),
        ]
    }

    #[test]
    fn csv_columns_are_found_by_header_name_and_typed_by_the_declaration() {
        let path = write("r.csv", "b,a\n7,1\nx,2\n");
        let table = read_relation(&path, &columns(), FactFormat::Csv).unwrap();
        assert_eq!(table.columns[0], Value::from_i64s(vec![1, 2]));
        assert_eq!(
            table.columns[1],
            Value::Vector(Vector::Sym(Strings::from_strs(&["7", "x"])))
        );
    }

    #[test]
    fn facts_are_tab_separated_without_a_header() {
        let path = write("r.facts", "1\tx\n2\ty\n");
        let table = read_relation(&path, &columns(), FactFormat::Facts).unwrap();
        assert_eq!(table.columns[0], Value::from_i64s(vec![1, 2]));
    }

    #[test]
    fn bad_cells_and_missing_columns_are_located_errors() {
        let path = write("bad.facts", "1\tx\nz\ty\n");
        let e = read_relation(&path, &columns(), FactFormat::Facts).unwrap_err();
        assert!(
            e.message
                .ends_with("bad.facts:2: column `a`: `z` is not a number (an integer of 64 bits)"),
            "{}",
            e.message
        );
        let path = write("short.facts", "1\n");
        let e = read_relation(&path, &columns(), FactFormat::Facts).unwrap_err();
        assert!(
            e.message
                .ends_with("short.facts:1: expected 2 field(s), found 1"),
            "{}",
            e.message
        );
        let path = write("other.csv", "a,c\n1,2\n");
        let e = read_relation(&path, &columns(), FactFormat::Csv).unwrap_err();
        assert!(
            e.message
                .ends_with("other.csv:1: the header has no column `b` (it has: a, c)"),
            "{}",
            e.message
        );
    }
}
