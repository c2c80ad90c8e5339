//! dbgen `.tbl` files: one row per line, fields separated by `|`, each line ending in `|`.
//!
//! A file is cut into pieces at line boundaries that parse in parallel. Text is kept exactly
//! as written (TPC-H comments may start or end with a space); blank lines are skipped.

use std::path::Path;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::data::columns::{join_column_parts, parse_iso_date, ColumnPart, SymBuilder};
use crate::data::phases;
use crate::data::tpch::{ColumnKind, TableSpec};
use crate::data::{Database, Progress, Ticker};
use crate::error::{Result, RuntimeError};
use crate::value::Vector;

/// Bytes a piece should have at least before a file is cut in pieces.
const BYTES_PER_PIECE: usize = 4 << 20;

/// Pieces per core at most: more pieces than cores even out the cores' work (lines and
/// strings differ in cost), and each costs a dictionary of its own to merge.
const PIECES_PER_THREAD: usize = 4;

impl Database {
    /// Loads the eight TPC-H tables from `dir/<table>.tbl` (as `dbgen` or `tpchgen-cli tbl`
    /// write them), or from `<table>.parquet`, `.arrow`, `.feather` or `.csv` files there
    /// (see [`Database::from_dir`]). With `progress`, draws a bar per table on stderr when it
    /// is a terminal.
    pub fn from_tbl_dir(dir: &Path, progress: bool) -> Result<Database> {
        Database::from_dir(dir, progress, None, None)
    }

    /// Loads only the TPC-H tables `tables` names (and those their foreign keys reference)
    /// from `dir`; `None` loads all eight. Only their files need to exist.
    pub fn from_tbl_dir_tables(
        dir: &Path,
        progress: bool,
        tables: Option<&[String]>,
    ) -> Result<Database> {
        Database::from_dir(dir, progress, tables, None)
    }
}

/// Reads the columns `selected` flags of the TPC-H table `spec` from the `.tbl` file `path`
/// (`None` for the others); the error names the file, line, column and field.
pub(crate) fn read_tbl(
    path: &Path,
    spec: &TableSpec,
    selected: &[bool],
    progress: &Progress,
) -> Result<Vec<Option<Vector>>> {
    let bytes = phases::time("read file", || read_whole_file(path))
        .map_err(|error| RuntimeError::new(format!("cannot read `{}`: {error}", path.display())))?;
    let bar = progress.bar(spec.name, bytes.len() as u64, true);
    let columns = parse_tbl(&bytes, spec, selected, &bar)
        .map_err(|error| RuntimeError::new(format!("{}:{error}", path.display())))?;
    bar.finish_and_clear();
    phases::time("free file", || drop(bytes));
    Ok(columns)
}

/// The bytes of the file `path`, read in pieces on every core (a file in the page cache
/// reads at memory speed on each core; one core alone copies it several times slower).
pub(crate) fn read_whole_file(path: &Path) -> std::io::Result<Vec<u8>> {
    read_whole_file_in_pieces(path, 8 << 20)
}

/// [`read_whole_file`] reading at most `bytes_per_read` bytes at a time.
fn read_whole_file_in_pieces(path: &Path, bytes_per_read: usize) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(path)?;
        let length = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::other("the file is larger than memory can address"))?;
        // Zeroed memory comes fresh from the system: its pages are touched first by the
        // reads, on the cores doing them.
        let mut bytes = vec![0u8; length];
        bytes
            .par_chunks_mut(bytes_per_read.max(1))
            .enumerate()
            .try_for_each(|(piece, buffer)| {
                file.read_exact_at(buffer, (piece * bytes_per_read.max(1)) as u64)
            })?;
        // A file that grew while it was read is read again whole, as it is now.
        let mut probe = [0u8; 1];
        if file.read_at(&mut probe, length as u64)? != 0 {
            return std::fs::read(path);
        }
        Ok(bytes)
    }
    #[cfg(not(unix))]
    {
        let _ = bytes_per_read;
        std::fs::read(path)
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
fn parse_tbl(
    bytes: &[u8],
    spec: &TableSpec,
    selected: &[bool],
    bar: &ProgressBar,
) -> Result<Vec<Option<Vector>>> {
    let pieces = (bytes.len() / BYTES_PER_PIECE)
        .clamp(1, PIECES_PER_THREAD * rayon::current_num_threads().max(1));
    parse_tbl_in_pieces(bytes, pieces, spec, selected, bar)
}

/// [`parse_tbl`] with the file cut in about `pieces` pieces.
fn parse_tbl_in_pieces(
    bytes: &[u8],
    pieces: usize,
    spec: &TableSpec,
    selected: &[bool],
    bar: &ProgressBar,
) -> Result<Vec<Option<Vector>>> {
    let parsed: Vec<std::result::Result<Vec<ColumnPart>, ErrorAt>> = phases::time("parse", || {
        split_at_lines(bytes, pieces)
            .into_par_iter()
            .map(|(start, piece)| parse_piece(piece, start, spec, selected, bar))
            .collect()
    });
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
    let mut joined = phases::time("join pieces", || join_column_parts(parts))?.into_iter();
    Ok(selected
        .iter()
        .map(|&wanted| if wanted { joined.next() } else { None })
        .collect())
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
    /// A column the program does not read: its fields are counted, not parsed.
    Skip,
}

impl<'s> ColumnReader<'s> {
    /// A reader of about `rows` rows (room for them is made at once: growing a column
    /// copies it).
    fn new(kind: ColumnKind, rows: usize) -> ColumnReader<'s> {
        match kind {
            ColumnKind::I32 | ColumnKind::ForeignKey { .. } => {
                ColumnReader::I32(Vec::with_capacity(rows))
            }
            ColumnKind::F64 => ColumnReader::F64(Vec::with_capacity(rows)),
            ColumnKind::Date => ColumnReader::Date(Vec::with_capacity(rows)),
            ColumnKind::Char => ColumnReader::Char(Vec::with_capacity(rows)),
            ColumnKind::Sym => ColumnReader::Sym(SymBuilder::with_capacity(rows)),
        }
    }

    /// Reads one field, given as text too when its piece is known to be UTF-8; the error
    /// says what was expected.
    fn push(&mut self, field: &'s [u8], text: Option<&'s str>) -> std::result::Result<(), String> {
        // Numbers in the form dbgen writes them parse without UTF-8 checks; anything else
        // takes the general path, which also words the error.
        match self {
            ColumnReader::Skip => return Ok(()),
            ColumnReader::Sym(values) => {
                if let Some(text) = text {
                    values.push(text);
                    return Ok(());
                }
            }
            ColumnReader::I32(values) => {
                if let Some(value) = plain_i32(field) {
                    values.push(value);
                    return Ok(());
                }
            }
            ColumnReader::F64(values) => {
                if let Some(value) = plain_decimal(field) {
                    values.push(value);
                    return Ok(());
                }
            }
            _ => {}
        }
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
            ColumnReader::Skip => {}
        }
        Ok(())
    }

    fn finish(self) -> Option<ColumnPart<'s>> {
        use std::sync::Arc;
        Some(match self {
            ColumnReader::I32(values) => ColumnPart::Vector(Vector::I32(Arc::new(values))),
            ColumnReader::F64(values) => ColumnPart::Vector(Vector::F64(Arc::new(values))),
            ColumnReader::Date(values) => ColumnPart::Vector(Vector::Date(Arc::new(values))),
            ColumnReader::Char(values) => ColumnPart::Vector(Vector::Char(Arc::new(values))),
            ColumnReader::Sym(values) => ColumnPart::Syms(values),
            ColumnReader::Skip => return None,
        })
    }
}

/// `[-]digits` (at most 9 digits: always within i32) as an i32.
fn plain_i32(field: &[u8]) -> Option<i32> {
    let (negative, digits) = match field {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, field),
    };
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    let mut value = 0i32;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i32::from(digit - b'0');
    }
    Some(if negative { -value } else { value })
}

/// `[-]digits[.digits]` with at most 15 digits in all, as the nearest f64: the digits as an
/// integer (exact below 2^53) divided by a power of ten (exact up to 10^22) rounds once, so
/// the result is what parsing the text gives.
fn plain_decimal(field: &[u8]) -> Option<f64> {
    const POWERS: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (negative, text) = match field {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, field),
    };
    let mut mantissa = 0u64;
    let mut digits = 0;
    let mut fraction_digits = None;
    for &byte in text {
        match byte {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(byte - b'0');
                digits += 1;
                if let Some(count) = &mut fraction_digits {
                    *count += 1;
                }
            }
            b'.' if fraction_digits.is_none() => fraction_digits = Some(0),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 || fraction_digits == Some(0) {
        return None;
    }
    let value = mantissa as f64 / POWERS[fraction_digits.unwrap_or(0)];
    Some(if negative { -value } else { value })
}

/// Parses the whole lines of `piece`, which starts at byte `base` of the file.
fn parse_piece<'s>(
    piece: &'s [u8],
    base: usize,
    spec: &TableSpec,
    selected: &[bool],
    bar: &ProgressBar,
) -> std::result::Result<Vec<ColumnPart<'s>>, ErrorAt> {
    let mut ticker = Ticker::new(bar);
    let readers_len = spec.columns.len();
    // Checked once here; a piece that is not UTF-8 is checked field by field, which finds
    // the field to blame.
    let piece_text = std::str::from_utf8(piece).ok();
    // Lines in the piece, estimated from its first 64 KiB (a few percent over).
    let sample = &piece[..piece.len().min(64 << 10)];
    let sample_lines = memchr::memchr_iter(b'\n', sample).count().max(1);
    let rows = (piece.len() as f64 / sample.len().max(1) as f64 * sample_lines as f64 * 1.05)
        as usize
        + 16;
    let mut readers: Vec<ColumnReader<'s>> = spec
        .columns
        .iter()
        .zip(selected)
        .map(|(column, &wanted)| {
            if wanted {
                ColumnReader::new(column.kind, rows)
            } else {
                ColumnReader::Skip
            }
        })
        .collect();
    for (line_offset, line) in lines(piece) {
        ticker.tick(line.len() as u64 + 1);
        if line.is_empty() {
            continue;
        }
        let body = line.strip_suffix(b"|").unwrap_or(line);
        // One pass over the line: fields are parsed as they are cut; a wrong field count
        // (found at the end, or when a field fails to parse) is the error reported first.
        let wrong_count = || {
            let found = fields(body).count();
            (found != readers_len).then(|| ErrorAt {
                offset: base + line_offset,
                message: format!(
                    "table `{}` has {readers_len} fields per line, found {found}",
                    spec.name
                ),
            })
        };
        let mut fields = fields(body);
        let mut field_offset = line_offset;
        for (reader, column) in readers.iter_mut().zip(spec.columns) {
            let Some(field) = fields.next() else {
                return Err(wrong_count().unwrap_or(ErrorAt {
                    offset: base + line_offset,
                    message: "too few fields".to_string(),
                }));
            };
            // Cut at ASCII bytes, text of a UTF-8 piece is UTF-8: no check per field.
            let text =
                piece_text.and_then(|text| text.get(field_offset..field_offset + field.len()));
            if let Err(problem) = reader.push(field, text) {
                return Err(wrong_count().unwrap_or(ErrorAt {
                    offset: base + field_offset,
                    message: format!("column `{}`: {problem}", column.name),
                }));
            }
            field_offset += field.len() + 1;
        }
        if fields.next().is_some() {
            return Err(wrong_count().unwrap_or(ErrorAt {
                offset: base + line_offset,
                message: "too many fields".to_string(),
            }));
        }
    }
    Ok(readers
        .into_iter()
        .filter_map(ColumnReader::finish)
        .collect())
}

/// The `|`-separated fields of a line (as `split` cuts them), found with a vectorised search.
fn fields(body: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut bars = memchr::memchr_iter(b'|', body);
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let from = start?;
        match bars.next() {
            Some(bar) => {
                start = Some(bar + 1);
                Some(&body[from..bar])
            }
            None => {
                start = None;
                Some(&body[from..])
            }
        }
    })
}

/// The lines of `bytes` with their offsets, without `\n` or `\r\n`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end =
            memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |newline| start + newline);
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
        let columns = parse_tbl(text, region(), &[true; 3], &ProgressBar::hidden()).expect("valid");
        assert_eq!(columns[0], Some(Vector::I32(Arc::new(vec![0, 1]))));
        assert_eq!(
            columns[2],
            Some(Vector::Sym(Strings::from_strs(&[
                " lar deposits. ",
                "hs use"
            ])))
        );
    }

    #[test]
    fn errors_name_line_column_and_field() {
        let text = b"0|AFRICA|x|\n1x|AMERICA|y|\n";
        let error = parse_tbl(text, region(), &[true; 3], &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "2:1: column `r_regionkey`: expected an i32 integer, found `1x`"
        );
        let error =
            parse_tbl(b"0|AFRICA|\n", region(), &[true; 3], &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "1:1: table `region` has 3 fields per line, found 2"
        );
        let orders = tpch_table("orders").expect("orders is a TPC-H table");
        let line = b"1|37|O|131251.81|1996-02-30|5-LOW|Clerk#000000951|0|c|\n";
        let error = parse_tbl(line, orders, &[true; 9], &ProgressBar::hidden()).unwrap_err();
        assert_eq!(
            error.message,
            "1:18: column `o_orderdate`: expected a date YYYY-MM-DD, found `1996-02-30`"
        );
    }

    #[test]
    fn fields_are_cut_as_split_cuts_them() {
        for line in ["", "|", "a", "a|", "|a", "a||b", "ab|cd|ef", "||"] {
            let expected: Vec<&[u8]> = line.as_bytes().split(|&b| b == b'|').collect();
            assert_eq!(
                fields(line.as_bytes()).collect::<Vec<_>>(),
                expected,
                "{line:?}"
            );
        }
    }

    #[test]
    fn text_that_is_not_utf8_is_named_by_its_field() {
        let error = parse_tbl(
            b"0|AFRICA|x|\n1|AM\xffERICA|y|\n",
            region(),
            &[true; 3],
            &ProgressBar::hidden(),
        )
        .unwrap_err();
        assert_eq!(error.message, "2:3: column `r_name`: invalid UTF-8");
    }

    #[test]
    fn plain_numbers_parse_as_the_general_parser_does() {
        for text in [
            "0",
            "-0",
            "7",
            "-123456789",
            "999999999",
            "1234567890",
            "1x",
            "",
            "-",
            "+5",
        ] {
            if let Some(value) = plain_i32(text.as_bytes()) {
                assert_eq!(Ok(value), text.parse::<i32>(), "{text}");
            }
        }
        assert_eq!(plain_i32(b"-123456789"), Some(-123_456_789));
        assert_eq!(
            plain_i32(b"1234567890"),
            None,
            "ten digits take the general path"
        );
        for text in [
            "0.07",
            "0.06",
            "901.07",
            "-4312.00",
            "104949.50",
            "1",
            "17.5",
            "0.1",
            "0.3",
            "123456789012.345",
            "9999999.99",
            ".5",
        ] {
            assert_eq!(plain_decimal(text.as_bytes()), text.parse().ok(), "{text}");
        }
        for text in [
            "",
            ".",
            "1.",
            "1.2.3",
            "1e5",
            "1234567890123456",
            "nan",
            "-",
        ] {
            assert_eq!(plain_decimal(text.as_bytes()), None, "{text}");
        }
    }

    /// Region rows whose names and comments hold multi-byte UTF-8 (2, 3 and 4 bytes).
    fn region_lines(rows: usize) -> (String, Vec<i32>, Vec<String>, Vec<String>) {
        let words = ["AFRICA", "Çà", "日本語", "🦀x", "", " e\u{301} "];
        let mut text = String::new();
        let (mut keys, mut names, mut comments) = (vec![], vec![], vec![]);
        for row in 0..rows {
            let name = words[row % words.len()].to_string();
            let comment = format!("{}{row}{}", words[row * 7 % words.len()], words[row % 4]);
            // Some lines without the trailing bar, some ending in CRLF, a blank line now and then.
            let bar = if row % 3 == 0 { "" } else { "|" };
            let end = if row % 5 == 0 { "\r\n" } else { "\n" };
            text += &format!("{row}|{name}|{comment}{bar}{end}");
            if row % 11 == 0 {
                text += "\n";
            }
            keys.push(row as i32);
            names.push(name);
            comments.push(comment);
        }
        (text, keys, names, comments)
    }

    fn parse_region(text: &str, pieces: usize) -> Result<Vec<Option<Vector>>> {
        parse_tbl_in_pieces(
            text.as_bytes(),
            pieces,
            region(),
            &[true; 3],
            &ProgressBar::hidden(),
        )
    }

    #[test]
    fn pieces_cut_anywhere_parse_as_the_whole_file_with_multibyte_text() {
        let (text, keys, names, comments) = region_lines(500);
        let expected = vec![
            Some(Vector::I32(Arc::new(keys))),
            Some(Vector::Sym(Strings::from_strs(&names))),
            Some(Vector::Sym(Strings::from_strs(&comments))),
        ];
        for pieces in [1, 2, 3, 7, 64, 499, 500, 2000] {
            let columns = parse_region(&text, pieces).expect("valid");
            assert_eq!(columns, expected, "{pieces} pieces");
        }
        // Every cut of a small file: each byte offset lands at some piece boundary.
        let (small, ..) = region_lines(12);
        let whole = parse_region(&small, 1).expect("valid");
        for pieces in 1..=small.len() {
            let columns = parse_region(&small, pieces).expect("valid");
            assert_eq!(columns, whole, "{pieces} pieces");
        }
    }

    #[test]
    fn errors_name_the_same_line_whatever_the_pieces() {
        let (mut text, ..) = region_lines(300);
        text += "300|bad\u{e9}|x|y|\n301|x|\n";
        let line = text.lines().count() - 1;
        for pieces in [1, 4, 50] {
            let error = parse_region(&text, pieces).unwrap_err();
            assert_eq!(
                error.message,
                format!("{line}:1: table `region` has 3 fields per line, found 4"),
                "{pieces} pieces"
            );
        }
        let short = text.replace("300|bad\u{e9}|x|y|\n", "");
        let error = parse_region(&short, 4).unwrap_err();
        assert_eq!(
            error.message,
            format!("{line}:1: table `region` has 3 fields per line, found 2")
        );
    }

    #[test]
    fn a_file_read_in_pieces_on_every_core_is_the_file() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("t.tbl");
        let (text, ..) = region_lines(200);
        std::fs::write(&path, &text).expect("writable");
        for bytes_per_read in [1, 3, 7, 4096, text.len(), text.len() + 1] {
            let read = read_whole_file_in_pieces(&path, bytes_per_read).expect("readable");
            assert_eq!(read, text.as_bytes(), "{bytes_per_read} bytes per read");
        }
        std::fs::write(&path, "").expect("writable");
        assert_eq!(read_whole_file(&path).expect("readable"), b"");
    }

    #[test]
    fn unread_columns_are_skipped() {
        let text = b"0|AFRICA|x|\n1|AMERICA|y|\n";
        let columns = parse_tbl(
            text,
            region(),
            &[false, true, false],
            &ProgressBar::hidden(),
        )
        .expect("valid");
        assert_eq!(columns[0], None);
        assert_eq!(
            columns[1],
            Some(Vector::Sym(Strings::from_strs(&["AFRICA", "AMERICA"])))
        );
        assert_eq!(columns[2], None);
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let error = Database::from_tbl_dir(dir.path(), false).unwrap_err();
        let region = dir.path().join("region.tbl");
        assert_eq!(
            error.message,
            format!(
                "missing TPC-H file `{}` (or .parquet, .arrow, .feather, .arrows, .csv)",
                region.display()
            )
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
