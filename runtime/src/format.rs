//! Printing values: an aligned table for people, TSV, CSV and JSON for programs.
//!
//! Every value prints as rows:
//! - a table (or keyed table: key columns first) prints one row per table row;
//! - a vector, enum or list prints one row per element or cell, under a header naming its
//!   type (`Table`); TSV and CSV print just the values, one per line, and JSON an array;
//! - a dict prints a `key` and a `value` column.
//!
//! Cells print as:
//! - floats with the shortest text that reads back as the same number, integral ones keeping
//!   `.0` (`37734107.0`, `0.04998529583835735`), as the reference answers are written;
//! - `bool` as `1`/`0` (HorseIR's literals), JSON `true`/`false`;
//! - dates `YYYY-MM-DD`, months `YYYY-MM`, times `HH:MM[:SS[.mmm]]`, datetimes
//!   `YYYY-MM-DDTHH:MM:SS.mmm`; `char` as the character; `sym`/`str` as the text;
//! - an enum as its key values; a list cell as `(a, b, c)` (a one-element cell as the
//!   element alone), JSON as an array.
//!
//! TSV escapes tab, newline, carriage return and backslash in text as `\t`, `\n`, `\r`,
//! `\\` so every row stays one line. Nothing is ever truncated: all rows print.

use std::fmt;
use std::io::{self, Write};
use std::ops::Range;
use std::str::FromStr;

use crate::temporal::{format_date, month_from_code};
use crate::value::{Complex, List, Value, Vector};

/// How [`write_value`] lays a value out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Aligned columns with a header, a separator and a row count, for people.
    Table,
    /// A header line of column names, then one tab-separated line per row.
    Tsv,
    /// RFC 4180: a header record, then one record per row, quoted where needed.
    Csv,
    /// An array of row objects (a bare vector or list: an array of values).
    Json,
}

impl OutputFormat {
    /// Every format, in the order their names are listed.
    pub const ALL: [OutputFormat; 4] = [
        OutputFormat::Table,
        OutputFormat::Tsv,
        OutputFormat::Csv,
        OutputFormat::Json,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Table => "table",
            OutputFormat::Tsv => "tsv",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<OutputFormat, String> {
        OutputFormat::ALL
            .into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| {
                format!("unknown output format `{name}` (expected table, tsv, csv or json)")
            })
    }
}

/// Writes `value` to `out` in `format`. A malformed value (columns of different lengths, an
/// enum index outside its domain) is an `InvalidData` error, never a panic.
pub fn write_value(value: &Value, format: OutputFormat, out: &mut dyn Write) -> io::Result<()> {
    let grid = Grid::of(value)?;
    match format {
        OutputFormat::Table => write_table(&grid, out),
        OutputFormat::Tsv => write_tsv(&grid, out),
        OutputFormat::Csv => write_csv(&grid, out),
        OutputFormat::Json => write_json(&grid, out),
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A value seen as rows: named columns, each a value with one cell per row.
struct Grid<'a> {
    names: Vec<String>,
    columns: Vec<&'a Value>,
    rows: usize,
    /// A vector or list printed on its own: no column names in TSV/CSV, a flat JSON array.
    bare: bool,
}

impl<'a> Grid<'a> {
    fn of(value: &'a Value) -> io::Result<Grid<'a>> {
        let (names, columns, bare): (Vec<String>, Vec<&Value>, bool) = match value {
            Value::Table(table) => (
                table.names.iter().map(|n| n.to_string()).collect(),
                table.columns.iter().collect(),
                false,
            ),
            Value::KTable(keys, values) => (
                keys.names
                    .iter()
                    .chain(&values.names)
                    .map(|n| n.to_string())
                    .collect(),
                keys.columns.iter().chain(&values.columns).collect(),
                false,
            ),
            Value::Dict(dict) => (
                vec!["key".to_string(), "value".to_string()],
                vec![&*dict.keys, &*dict.values],
                false,
            ),
            Value::Vector(_) | Value::Enum(_) | Value::List(_) => {
                (vec![value.ty().to_string()], vec![value], true)
            }
            Value::Device(_) | Value::DeviceList(_) => return Err(on_device()),
        };
        if names.len() != columns.len() {
            return Err(invalid(format!(
                "a table with {} names for {} columns",
                names.len(),
                columns.len()
            )));
        }
        let mut rows = None;
        for (name, column) in names.iter().zip(&columns) {
            let length = column_rows(column)?;
            match rows {
                None => rows = Some(length),
                Some(rows) if rows != length => {
                    return Err(invalid(format!(
                        "column `{name}` has {length} rows, the columns before it {rows}"
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(Grid {
            names,
            columns,
            rows: rows.unwrap_or(0),
            bare,
        })
    }
}

/// The number of cells `column` has as a column.
fn column_rows(column: &Value) -> io::Result<usize> {
    match column {
        Value::Vector(_) | Value::Enum(_) | Value::List(_) => Ok(column.len()),
        other => Err(invalid(format!(
            "cannot print a {} as a column",
            other.ty()
        ))),
    }
}

/// One element of a vector.
#[derive(Clone, Copy, Debug)]
enum Atom<'a> {
    Bool(bool),
    Int(i64),
    F32(f32),
    F64(f64),
    Complex(Complex),
    Char(u8),
    Text(&'a str),
    Month(i32),
    Date(i32),
    Minute(i32),
    Second(i32),
    Time(i32),
    Dt(i64),
}

/// One cell of a column.
enum Cell<'a> {
    Atom(Atom<'a>),
    /// A cell of a flat list: a run of its values.
    Run(&'a Vector, Range<usize>),
    /// A cell of a mixed list.
    Value(&'a Value),
}

fn atom(vector: &Vector, i: usize) -> Option<Atom<'_>> {
    Some(match vector {
        Vector::Bool(v) => Atom::Bool(*v.get(i)?),
        Vector::Char(v) => Atom::Char(*v.get(i)?),
        Vector::I8(v) => Atom::Int(i64::from(*v.get(i)?)),
        Vector::I16(v) => Atom::Int(i64::from(*v.get(i)?)),
        Vector::I32(v) => Atom::Int(i64::from(*v.get(i)?)),
        Vector::I64(v) => Atom::Int(*v.get(i)?),
        Vector::F32(v) => Atom::F32(*v.get(i)?),
        Vector::F64(v) => Atom::F64(*v.get(i)?),
        Vector::Complex(v) => Atom::Complex(*v.get(i)?),
        Vector::Sym(s) | Vector::Str(s) => {
            Atom::Text(s.dict.strings.get(*s.codes.get(i)? as usize)?.as_ref())
        }
        Vector::Month(v) => Atom::Month(*v.get(i)?),
        Vector::Date(v) => Atom::Date(*v.get(i)?),
        Vector::Minute(v) => Atom::Minute(*v.get(i)?),
        Vector::Second(v) => Atom::Second(*v.get(i)?),
        Vector::Time(v) => Atom::Time(*v.get(i)?),
        Vector::Dt(v) => Atom::Dt(*v.get(i)?),
    })
}

fn vector_atom(vector: &Vector, i: usize) -> io::Result<Atom<'_>> {
    atom(vector, i).ok_or_else(|| invalid(format!("element {i} of a {} is missing", vector.ty())))
}

/// Cell `i` of `column`.
fn cell(column: &Value, i: usize) -> io::Result<Cell<'_>> {
    match column {
        Value::Vector(vector) => Ok(Cell::Atom(vector_atom(vector, i)?)),
        Value::Enum(enumeration) => {
            let row = enumeration
                .index
                .get(i)
                .and_then(|&row| usize::try_from(row).ok())
                .ok_or_else(|| invalid(format!("enum row {i} has no valid index")))?;
            Ok(Cell::Atom(vector_atom(&enumeration.domain, row)?))
        }
        Value::List(List::Flat { values, offsets }) => match (offsets.get(i), offsets.get(i + 1)) {
            (Some(&start), Some(&end)) if start <= end && end <= values.len() => {
                Ok(Cell::Run(values, start..end))
            }
            _ => Err(invalid(format!("list cell {i} has invalid offsets"))),
        },
        Value::List(List::Mixed(cells)) => cells
            .get(i)
            .map(Cell::Value)
            .ok_or_else(|| invalid(format!("list cell {i} is missing"))),
        other => Err(invalid(format!(
            "cannot print a {} as a column",
            other.ty()
        ))),
    }
}

/// Text of a float: shortest round-trip digits; integral values keep `.0`; exponent notation
/// only below 1e-4 or from 1e16 on (the same choice as the reference answers' writer).
fn float_text(value: f64) -> String {
    format!("{value:?}")
}

fn float32_text(value: f32) -> String {
    format!("{value:?}")
}

/// `HH:MM:SS.mmm` of milliseconds since midnight.
fn clock_text(millis: i64) -> String {
    let millis = millis.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1000 % 60,
        millis % 1000
    )
}

fn atom_text(atom: Atom<'_>) -> String {
    match atom {
        Atom::Bool(b) => u8::from(b).to_string(),
        Atom::Int(i) => i.to_string(),
        Atom::F32(x) => float32_text(x),
        Atom::F64(x) => float_text(x),
        Atom::Complex(c) => {
            let sign = if c.im.is_sign_negative() { "-" } else { "+" };
            format!("{}{sign}{}i", float_text(c.re), float_text(c.im.abs()))
        }
        Atom::Char(c) => char::from(c).to_string(),
        Atom::Text(s) => s.to_string(),
        Atom::Month(code) => {
            let (year, month) = month_from_code(code);
            format!("{year:04}-{month:02}")
        }
        Atom::Date(days) => format_date(days),
        Atom::Minute(m) => {
            let m = m.rem_euclid(1440);
            format!("{:02}:{:02}", m / 60, m % 60)
        }
        Atom::Second(s) => {
            let s = s.rem_euclid(86_400);
            format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        }
        Atom::Time(ms) => clock_text(i64::from(ms)),
        Atom::Dt(ms) => {
            let days = ms.div_euclid(86_400_000);
            let date = i32::try_from(days).map_or_else(|_| days.to_string(), format_date);
            format!("{date}T{}", clock_text(ms.rem_euclid(86_400_000)))
        }
    }
}

/// `(a, b, c)`, or the element alone when there is exactly one.
fn run_text(vector: &Vector, range: Range<usize>) -> io::Result<String> {
    if range.len() == 1 {
        return Ok(atom_text(vector_atom(vector, range.start)?));
    }
    let items = range
        .map(|i| vector_atom(vector, i).map(atom_text))
        .collect::<io::Result<Vec<_>>>()?;
    Ok(format!("({})", items.join(", ")))
}

/// Printing reads host elements: the interpreter reads device values back before any host
/// step (and for the result), so one here is a bug of the caller.
fn on_device() -> io::Error {
    invalid("a device value must be read back before it is printed".to_string())
}

fn value_text(value: &Value) -> io::Result<String> {
    match value {
        Value::Vector(vector) => run_text(vector, 0..vector.len()),
        Value::Device(d) => match d.host() {
            Some(vector) => run_text(vector, 0..vector.len()),
            None => Err(on_device()),
        },
        Value::DeviceList(_) => Err(on_device()),
        Value::Enum(_) | Value::List(_) => {
            let items = (0..value.len())
                .map(|i| cell_text(&cell(value, i)?))
                .collect::<io::Result<Vec<_>>>()?;
            Ok(match items.as_slice() {
                [only] if matches!(value, Value::Enum(_)) => only.clone(),
                _ => format!("({})", items.join(", ")),
            })
        }
        Value::Dict(dict) => {
            let entries = (0..dict.keys.len().min(dict.values.len()))
                .map(|i| {
                    let key = cell_text(&cell(&dict.keys, i)?)?;
                    let value = cell_text(&cell(&dict.values, i)?)?;
                    Ok(format!("{key}: {value}"))
                })
                .collect::<io::Result<Vec<_>>>()?;
            Ok(format!("{{{}}}", entries.join(", ")))
        }
        Value::Table(table) => Ok(format!(
            "<table: {} columns, {} rows>",
            table.columns.len(),
            table.rows()
        )),
        Value::KTable(keys, values) => Ok(format!(
            "<ktable: {} columns, {} rows>",
            keys.columns.len() + values.columns.len(),
            keys.rows()
        )),
    }
}

fn cell_text(cell: &Cell<'_>) -> io::Result<String> {
    match cell {
        Cell::Atom(atom) => Ok(atom_text(*atom)),
        Cell::Run(vector, range) => run_text(vector, range.clone()),
        Cell::Value(value) => value_text(value),
    }
}

/// Numbers align right in the `Table` format; everything else left.
fn right_aligned(column: &Value) -> bool {
    let vector = match column {
        Value::Vector(vector) => vector,
        Value::Enum(enumeration) => &enumeration.domain,
        _ => return false,
    };
    vector.ty().is_real()
}

fn write_table(grid: &Grid<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut texts: Vec<Vec<String>> = Vec::with_capacity(grid.columns.len());
    for column in &grid.columns {
        texts.push(
            (0..grid.rows)
                .map(|row| cell_text(&cell(column, row)?))
                .collect::<io::Result<_>>()?,
        );
    }
    let width = |text: &str| text.chars().count();
    let widths: Vec<usize> = grid
        .names
        .iter()
        .zip(&texts)
        .map(|(name, cells)| cells.iter().map(|c| width(c)).fold(width(name), usize::max))
        .collect();
    let right: Vec<bool> = grid.columns.iter().map(|c| right_aligned(c)).collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let padded: Vec<String> = cells
            .zip(widths.iter().zip(&right))
            .map(|(text, (&w, &right))| {
                // Padded by hand: `format!`'s width is at most u16::MAX and panics beyond
                // it, and a cell (a list's vector) can be wider than that.
                let padding = " ".repeat(w.saturating_sub(width(text)));
                if right {
                    padding + text
                } else {
                    text.to_string() + &padding
                }
            })
            .collect();
        padded.join(" | ").trim_end().to_string()
    };
    writeln!(out, "{}", line(&mut grid.names.iter().map(String::as_str)))?;
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    writeln!(out, "{}", rule.join("-+-"))?;
    for row in 0..grid.rows {
        writeln!(
            out,
            "{}",
            line(&mut texts.iter().map(|cells| cells[row].as_str()))
        )?;
    }
    let plural = if grid.rows == 1 { "" } else { "s" };
    writeln!(out, "({} row{plural})", grid.rows)
}

/// Text with tab, newline, carriage return and backslash escaped, for TSV.
fn tsv_escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\t', '\n', '\r', '\\']) {
        return text.into();
    }
    let mut escaped = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        match c {
            '\t' => escaped.push_str("\\t"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\\' => escaped.push_str("\\\\"),
            c => escaped.push(c),
        }
    }
    escaped.into()
}

fn write_tsv(grid: &Grid<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut line = String::new();
    if !grid.bare {
        let names: Vec<_> = grid.names.iter().map(|n| tsv_escape(n)).collect();
        writeln!(out, "{}", names.join("\t"))?;
    }
    for row in 0..grid.rows {
        line.clear();
        for (position, column) in grid.columns.iter().enumerate() {
            if position > 0 {
                line.push('\t');
            }
            line.push_str(&tsv_escape(&cell_text(&cell(column, row)?)?));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn write_csv(grid: &Grid<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut writer = csv::WriterBuilder::new().flexible(true).from_writer(out);
    if !grid.bare {
        writer.write_record(&grid.names)?;
    }
    let mut record = Vec::with_capacity(grid.columns.len());
    for row in 0..grid.rows {
        record.clear();
        for column in &grid.columns {
            record.push(cell_text(&cell(column, row)?)?);
        }
        writer.write_record(&record)?;
    }
    writer.flush()
}

fn write_json_atom(atom: Atom<'_>, out: &mut dyn Write) -> io::Result<()> {
    match atom {
        Atom::Bool(b) => write!(out, "{b}"),
        Atom::Int(i) => write!(out, "{i}"),
        Atom::F32(x) => Ok(serde_json::to_writer(out, &x)?),
        Atom::F64(x) => Ok(serde_json::to_writer(out, &x)?),
        Atom::Text(s) => Ok(serde_json::to_writer(out, s)?),
        other => Ok(serde_json::to_writer(out, &atom_text(other))?),
    }
}

fn write_json_cell(cell: &Cell<'_>, out: &mut dyn Write) -> io::Result<()> {
    match cell {
        Cell::Atom(atom) => write_json_atom(*atom, out),
        Cell::Run(vector, range) => {
            out.write_all(b"[")?;
            for (n, i) in range.clone().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                write_json_atom(vector_atom(vector, i)?, out)?;
            }
            out.write_all(b"]")
        }
        Cell::Value(value) => write_json_value(value, out),
    }
}

/// A nested value: vectors, enums and lists as arrays, dicts and tables as arrays of rows.
fn write_json_value(value: &Value, out: &mut dyn Write) -> io::Result<()> {
    match value {
        Value::Vector(vector) => write_json_cell(&Cell::Run(vector, 0..vector.len()), out),
        _ => write_json_rows(&Grid::of(value)?, out),
    }
}

fn write_json_rows(grid: &Grid<'_>, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"[")?;
    for row in 0..grid.rows {
        if row > 0 {
            out.write_all(b",")?;
        }
        if grid.bare {
            for column in &grid.columns {
                write_json_cell(&cell(column, row)?, out)?;
            }
            continue;
        }
        out.write_all(b"{")?;
        for (position, (name, column)) in grid.names.iter().zip(&grid.columns).enumerate() {
            if position > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut *out, name)?;
            out.write_all(b":")?;
            write_json_cell(&cell(column, row)?, out)?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"]")
}

fn write_json(grid: &Grid<'_>, out: &mut dyn Write) -> io::Result<()> {
    write_json_rows(grid, out)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temporal::days_from_civil;
    use crate::value::{Dict, Enumeration, Strings, Table};
    use std::sync::Arc;

    fn print(value: &Value, format: OutputFormat) -> String {
        let mut out = Vec::new();
        write_value(value, format, &mut out).expect("printable");
        String::from_utf8(out).expect("UTF-8 output")
    }

    fn vector(v: Vector) -> Value {
        Value::Vector(v)
    }

    fn table(columns: Vec<(&str, Value)>) -> Value {
        Value::Table(Arc::new(Table {
            names: columns.iter().map(|(n, _)| Arc::from(*n)).collect(),
            columns: columns.into_iter().map(|(_, c)| c).collect(),
        }))
    }

    /// A small result in the shape of TPC-H Q1's.
    fn q1_like() -> Value {
        table(vec![
            (
                "l_returnflag",
                vector(Vector::Char(Arc::new(b"AN".to_vec()))),
            ),
            (
                "sum_qty",
                vector(Vector::F64(Arc::new(vec![37734107.0, 991417.0]))),
            ),
            (
                "avg_disc",
                vector(Vector::F64(Arc::new(vec![0.04998529583835735, 0.05]))),
            ),
            (
                "count_order",
                vector(Vector::I64(Arc::new(vec![1478493, 38854]))),
            ),
            (
                "note",
                vector(Vector::Sym(Strings::from_strs(&["a\tb, \"c\"", "plain"]))),
            ),
        ])
    }

    #[test]
    fn format_names_round_trip() {
        for format in OutputFormat::ALL {
            assert_eq!(format.name().parse(), Ok(format));
        }
        assert!("xml".parse::<OutputFormat>().is_err());
    }

    #[test]
    fn tsv_matches_the_reference_answers_style() {
        assert_eq!(
            print(&q1_like(), OutputFormat::Tsv),
            "l_returnflag\tsum_qty\tavg_disc\tcount_order\tnote\n\
             A\t37734107.0\t0.04998529583835735\t1478493\ta\\tb, \"c\"\n\
             N\t991417.0\t0.05\t38854\tplain\n"
        );
    }

    #[test]
    fn csv_quotes_as_rfc_4180_says() {
        assert_eq!(
            print(&q1_like(), OutputFormat::Csv),
            "l_returnflag,sum_qty,avg_disc,count_order,note\n\
             A,37734107.0,0.04998529583835735,1478493,\"a\tb, \"\"c\"\"\"\n\
             N,991417.0,0.05,38854,plain\n"
        );
    }

    #[test]
    fn json_is_an_array_of_row_objects() {
        assert_eq!(
            print(&q1_like(), OutputFormat::Json),
            "[{\"l_returnflag\":\"A\",\"sum_qty\":37734107.0,\"avg_disc\":0.04998529583835735,\
             \"count_order\":1478493,\"note\":\"a\\tb, \\\"c\\\"\"},\
             {\"l_returnflag\":\"N\",\"sum_qty\":991417.0,\"avg_disc\":0.05,\
             \"count_order\":38854,\"note\":\"plain\"}]\n"
        );
    }

    #[test]
    fn table_aligns_numbers_right_and_counts_rows() {
        let value = table(vec![
            ("flag", vector(Vector::Char(Arc::new(b"AN".to_vec())))),
            (
                "sum_qty",
                vector(Vector::F64(Arc::new(vec![37734107.0, 1.5]))),
            ),
            (
                "name",
                vector(Vector::Sym(Strings::from_strs(&["x", "longer"]))),
            ),
        ]);
        assert_eq!(
            print(&value, OutputFormat::Table),
            "flag |    sum_qty | name\n\
             -----+------------+-------\n\
             A    | 37734107.0 | x\n\
             N    |        1.5 | longer\n\
             (2 rows)\n"
        );
        let empty = table(vec![("n", vector(Vector::I64(Arc::new(vec![]))))]);
        assert_eq!(print(&empty, OutputFormat::Table), "n\n-\n(0 rows)\n");
    }

    #[test]
    fn table_cells_wider_than_a_format_width_are_padded_in_full() {
        // A list of two long vectors prints a row per cell, each cell its whole vector:
        // wider than the 65,535 columns `format!` can pad to.
        let long = Vector::I32(Arc::new((0..20_000).collect()));
        let short = Vector::I32(Arc::new(vec![7]));
        let list = Value::List(List::from_cells(vec![vector(long.clone()), vector(short)]));
        let printed = print(&list, OutputFormat::Table);
        let lines: Vec<&str> = printed.lines().collect();
        let long_text = value_text(&vector(long)).expect("printable");
        assert!(long_text.chars().count() > usize::from(u16::MAX));
        assert_eq!(lines[2], long_text);
        assert_eq!(lines[3].trim_end(), "7");
        assert_eq!(lines[1].chars().count(), long_text.chars().count());
        assert_eq!(lines[4], "(2 rows)");
    }

    #[test]
    fn every_basic_type_prints_as_its_literal_text() {
        let days = days_from_civil(1998, 9, 2);
        let cases: Vec<(Vector, &str)> = vec![
            (Vector::Bool(Arc::new(vec![true, false])), "1\n0\n"),
            (Vector::I8(Arc::new(vec![-8])), "-8\n"),
            (Vector::I16(Arc::new(vec![300])), "300\n"),
            (Vector::I32(Arc::new(vec![7])), "7\n"),
            (Vector::F32(Arc::new(vec![0.5, 2.0])), "0.5\n2.0\n"),
            (
                Vector::F64(Arc::new(vec![1e-7, 1e16, f64::NAN])),
                "1e-7\n1e16\nNaN\n",
            ),
            (
                Vector::Complex(Arc::new(vec![Complex { re: 1.0, im: -2.5 }])),
                "1.0-2.5i\n",
            ),
            (Vector::Str(Strings::from_strs(&["hi there"])), "hi there\n"),
            (Vector::Month(Arc::new(vec![1998 * 12 + 8])), "1998-09\n"),
            (Vector::Date(Arc::new(vec![days])), "1998-09-02\n"),
            (Vector::Minute(Arc::new(vec![13 * 60 + 5])), "13:05\n"),
            (Vector::Second(Arc::new(vec![3661])), "01:01:01\n"),
            (Vector::Time(Arc::new(vec![3_661_007])), "01:01:01.007\n"),
            (
                Vector::Dt(Arc::new(vec![i64::from(days) * 86_400_000 + 1])),
                "1998-09-02T00:00:00.001\n",
            ),
        ];
        for (values, expected) in cases {
            let ty = values.ty();
            assert_eq!(print(&vector(values), OutputFormat::Tsv), expected, "{ty}");
        }
    }

    #[test]
    fn a_bare_vector_prints_one_value_per_line_or_a_one_column_table() {
        let value = vector(Vector::I64(Arc::new(vec![42])));
        assert_eq!(print(&value, OutputFormat::Tsv), "42\n");
        assert_eq!(print(&value, OutputFormat::Csv), "42\n");
        assert_eq!(print(&value, OutputFormat::Json), "[42]\n");
        assert_eq!(
            print(&value, OutputFormat::Table),
            "i64\n---\n 42\n(1 row)\n"
        );
    }

    #[test]
    fn enums_print_their_keys_and_lists_their_cells() {
        let keys = Value::Enum(Enumeration {
            domain: Vector::I32(Arc::new(vec![10, 20, 30])),
            index: Arc::new(vec![2, 0, 2]),
        });
        assert_eq!(print(&keys, OutputFormat::Tsv), "30\n10\n30\n");

        let groups = Value::List(List::Flat {
            values: Vector::I64(Arc::new(vec![0, 3, 1, 2])),
            offsets: Arc::new(vec![0, 2, 3, 4]),
        });
        assert_eq!(print(&groups, OutputFormat::Tsv), "(0, 3)\n1\n2\n");
        assert_eq!(print(&groups, OutputFormat::Json), "[[0,3],[1],[2]]\n");

        let mixed = Value::List(List::Mixed(Arc::new(vec![
            vector(Vector::Sym(Strings::from_strs(&["a", "b"]))),
            vector(Vector::F64(Arc::new(vec![1.0]))),
        ])));
        assert_eq!(print(&mixed, OutputFormat::Tsv), "(a, b)\n1.0\n");
        assert_eq!(print(&mixed, OutputFormat::Json), "[[\"a\",\"b\"],[1.0]]\n");
    }

    #[test]
    fn a_dict_prints_keys_against_values() {
        let dict = Value::Dict(Dict {
            keys: Box::new(vector(Vector::Sym(Strings::from_strs(&["x", "y"])))),
            values: Box::new(vector(Vector::I64(Arc::new(vec![1, 2])))),
        });
        assert_eq!(print(&dict, OutputFormat::Tsv), "key\tvalue\nx\t1\ny\t2\n");
        assert_eq!(
            print(&dict, OutputFormat::Json),
            "[{\"key\":\"x\",\"value\":1},{\"key\":\"y\",\"value\":2}]\n"
        );
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        let ragged = table(vec![
            ("a", vector(Vector::I64(Arc::new(vec![1, 2])))),
            ("b", vector(Vector::I64(Arc::new(vec![1])))),
        ]);
        let bad_enum = Value::Enum(Enumeration {
            domain: Vector::I32(Arc::new(vec![1])),
            index: Arc::new(vec![5]),
        });
        let bad_list = Value::List(List::Flat {
            values: Vector::I64(Arc::new(vec![1])),
            offsets: Arc::new(vec![0, 9]),
        });
        for value in [ragged, bad_enum, bad_list] {
            for format in OutputFormat::ALL {
                let error = write_value(&value, format, &mut Vec::new()).unwrap_err();
                assert_eq!(error.kind(), io::ErrorKind::InvalidData);
            }
        }
    }
}
