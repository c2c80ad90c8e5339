//! Building blocks shared by every loader: dictionary encoding of string columns, joining
//! column parts built in parallel, and primary-key indexes for resolving foreign keys.

use std::borrow::Cow;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bail;
use crate::error::Result;
use crate::temporal::{days_from_civil, days_in_month};
use crate::value::{StrDict, Strings, Vector};

/// Dictionary-encodes a string column row by row.
///
/// Codes are handed out in first-seen order through a hash map (one lookup per row); strings
/// the rows borrow are not copied until the end. [`SymBuilder::finish`] sorts only the
/// distinct strings (in parallel) and renumbers, so a column of millions of rows costs one
/// hash per row plus a sort of its dictionary.
#[derive(Default)]
pub(crate) struct SymBuilder<'s> {
    code_of: FxHashMap<Cow<'s, str>, u32>,
    codes: Vec<u32>,
}

impl<'s> SymBuilder<'s> {
    pub(crate) fn with_capacity(rows: usize) -> SymBuilder<'s> {
        SymBuilder {
            code_of: FxHashMap::default(),
            codes: Vec::with_capacity(rows),
        }
    }

    /// Appends a row whose text outlives the builder.
    pub(crate) fn push(&mut self, text: &'s str) {
        let next = self.code_of.len() as u32;
        let code = *self.code_of.entry(Cow::Borrowed(text)).or_insert(next);
        self.codes.push(code);
    }

    /// Appends a row whose text is short-lived: copied the first time it is seen.
    pub(crate) fn push_owned(&mut self, text: &str) {
        let code = match self.code_of.get(text) {
            Some(&code) => code,
            None => {
                let code = self.code_of.len() as u32;
                self.code_of.insert(Cow::Owned(text.to_string()), code);
                code
            }
        };
        self.codes.push(code);
    }

    /// The encoded column, its dictionary sorted so that code order is string order.
    pub(crate) fn finish(self) -> Strings {
        let SymBuilder { code_of, codes } = self;
        let mut distinct: Vec<(u64, Cow<'s, str>, u32)> = code_of
            .into_iter()
            .map(|(text, code)| (sort_prefix(&text), text, code))
            .collect();
        // The 8-byte prefix settles most comparisons without following the string pointer.
        distinct.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let mut sorted_code = vec![0u32; distinct.len()];
        for (new_code, (_, _, old_code)) in distinct.iter().enumerate() {
            sorted_code[*old_code as usize] = new_code as u32;
        }
        let strings = distinct
            .into_par_iter()
            .map(|(_, text, _)| Arc::<str>::from(text.as_ref()))
            .collect();
        let codes = codes
            .into_par_iter()
            .map(|old_code| sorted_code[old_code as usize])
            .collect();
        Strings {
            dict: Arc::new(StrDict { strings }),
            codes: Arc::new(codes),
        }
    }
}

/// The first 8 bytes of `text`, zero-padded, as a big-endian number: numbers compare as
/// the strings do whenever they differ (zero padding sorts a shorter prefix first).
fn sort_prefix(text: &str) -> u64 {
    let mut prefix = [0u8; 8];
    let bytes = &text.as_bytes()[..text.len().min(8)];
    prefix[..bytes.len()].copy_from_slice(bytes);
    u64::from_be_bytes(prefix)
}

/// Joins string columns with sorted dictionaries into one column with one sorted dictionary,
/// by merging the dictionaries (a k-way merge through a heap: no hashing, no string copies)
/// and renumbering each part in parallel.
pub(crate) fn concat_strings(parts: Vec<Strings>) -> Strings {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    if parts.len() == 1 {
        if let Some(only) = parts.into_iter().next() {
            return only;
        }
        return Strings::from_strs::<&str>(&[]);
    }
    let mut merged_code: Vec<Vec<u32>> = parts
        .iter()
        .map(|part| vec![0u32; part.dict.strings.len()])
        .collect();
    let mut merged: Vec<Arc<str>> = Vec::with_capacity(
        parts
            .iter()
            .map(|part| part.dict.strings.len())
            .max()
            .unwrap_or(0),
    );
    // The head of each part's dictionary; ties pop in part order, all with one code.
    let mut heads: BinaryHeap<Reverse<(&str, usize, usize)>> = parts
        .iter()
        .enumerate()
        .filter_map(|(part, p)| {
            p.dict
                .strings
                .first()
                .map(|s| Reverse((s.as_ref(), part, 0)))
        })
        .collect();
    while let Some(Reverse((text, part, position))) = heads.pop() {
        if merged.last().is_none_or(|last| last.as_ref() != text) {
            merged.push(Arc::clone(&parts[part].dict.strings[position]));
        }
        merged_code[part][position] = (merged.len() - 1) as u32;
        if let Some(next) = parts[part].dict.strings.get(position + 1) {
            heads.push(Reverse((next.as_ref(), part, position + 1)));
        }
    }
    let renumbered: Vec<Vec<u32>> = parts
        .par_iter()
        .zip(&merged_code)
        .map(|(part, renumber)| {
            part.codes
                .iter()
                .map(|&code| renumber[code as usize])
                .collect()
        })
        .collect();
    let total: usize = renumbered.iter().map(Vec::len).sum();
    let mut codes = Vec::with_capacity(total);
    for part in renumbered {
        codes.extend_from_slice(&part);
    }
    Strings {
        dict: Arc::new(StrDict { strings: merged }),
        codes: Arc::new(codes),
    }
}

/// Appends `more` to the buffer behind `first`, copying `first` only if it is shared.
fn append<T: Clone>(first: Arc<Vec<T>>, more: &[Arc<Vec<T>>]) -> Arc<Vec<T>> {
    if more.is_empty() {
        return first;
    }
    let mut joined = Arc::try_unwrap(first).unwrap_or_else(|shared| (*shared).clone());
    joined.reserve(more.iter().map(|part| part.len()).sum());
    for part in more {
        joined.extend_from_slice(part);
    }
    Arc::new(joined)
}

/// Joins vectors of one type end to end (the parts of a column built in parallel).
pub(crate) fn concat_vectors(parts: Vec<Vector>) -> Result<Vector> {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        bail!("cannot join zero column parts");
    };
    let rest: Vec<Vector> = parts.collect();
    macro_rules! join_buffers {
        ($variant:ident, $first:expr) => {{
            let mut more = Vec::with_capacity(rest.len());
            for part in rest {
                match part {
                    Vector::$variant(buffer) => more.push(buffer),
                    other => bail!(
                        "cannot join a {} column part to a {} column",
                        other.ty(),
                        stringify!($variant)
                    ),
                }
            }
            Vector::$variant(append($first, &more))
        }};
    }
    macro_rules! join_strings {
        ($variant:ident, $first:expr) => {{
            let mut all = vec![$first];
            for part in rest {
                match part {
                    Vector::$variant(strings) => all.push(strings),
                    other => bail!(
                        "cannot join a {} column part to a {} column",
                        other.ty(),
                        stringify!($variant)
                    ),
                }
            }
            Vector::$variant(concat_strings(all))
        }};
    }
    Ok(match first {
        Vector::Bool(v) => join_buffers!(Bool, v),
        Vector::Char(v) => join_buffers!(Char, v),
        Vector::I8(v) => join_buffers!(I8, v),
        Vector::I16(v) => join_buffers!(I16, v),
        Vector::I32(v) => join_buffers!(I32, v),
        Vector::I64(v) => join_buffers!(I64, v),
        Vector::F32(v) => join_buffers!(F32, v),
        Vector::F64(v) => join_buffers!(F64, v),
        Vector::Complex(v) => join_buffers!(Complex, v),
        Vector::Month(v) => join_buffers!(Month, v),
        Vector::Date(v) => join_buffers!(Date, v),
        Vector::Minute(v) => join_buffers!(Minute, v),
        Vector::Second(v) => join_buffers!(Second, v),
        Vector::Time(v) => join_buffers!(Time, v),
        Vector::Dt(v) => join_buffers!(Dt, v),
        Vector::Sym(s) => join_strings!(Sym, s),
        Vector::Str(s) => join_strings!(Str, s),
    })
}

/// Joins the parts of one table column by column.
pub(crate) fn join_parts(parts: Vec<Vec<Vector>>) -> Result<Vec<Vector>> {
    let columns = parts.first().map_or(0, Vec::len);
    let mut by_column: Vec<Vec<Vector>> = vec![Vec::with_capacity(parts.len()); columns];
    for part in parts {
        if part.len() != columns {
            bail!("table parts have different numbers of columns");
        }
        for (column, vector) in by_column.iter_mut().zip(part) {
            column.push(vector);
        }
    }
    by_column.into_iter().map(concat_vectors).collect()
}

/// The day number of an ISO date `YYYY-MM-DD`, if `text` is one (a real calendar day).
pub(crate) fn parse_iso_date(text: &[u8]) -> Option<i32> {
    let [y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2] = *text else {
        return None;
    };
    let number = |digits: &[u8]| -> Option<u32> {
        digits.iter().try_fold(0u32, |value, &digit| {
            digit
                .is_ascii_digit()
                .then(|| value * 10 + u32::from(digit - b'0'))
        })
    };
    let year = number(&[y1, y2, y3, y4])? as i32;
    let month = number(&[m1, m2])?;
    let day = number(&[d1, d2])?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Row position of each value of an integer primary key: how foreign keys are resolved.
#[derive(Debug)]
pub(crate) enum KeyIndex {
    /// Keys packed in a small range (TPC-H keys are): a slot per possible key.
    Dense { min: i64, slots: Vec<u32> },
    /// Keys spread too thinly for a slot array.
    Sparse(FxHashMap<i32, u32>),
}

const ABSENT: u32 = u32::MAX;

impl KeyIndex {
    /// Indexes `keys`; a repeated key is an error naming `table.column` and the key.
    pub(crate) fn build(keys: &[i32], table: &str, column: &str) -> Result<KeyIndex> {
        if keys.len() >= ABSENT as usize {
            bail!("table `{table}` has too many rows to index its key `{column}`");
        }
        let duplicate = |key: i32| -> Result<KeyIndex> {
            bail!("primary key `{table}.{column}` repeats the value {key}")
        };
        let (Some(&min), Some(&max)) = (keys.iter().min(), keys.iter().max()) else {
            return Ok(KeyIndex::Dense {
                min: 0,
                slots: Vec::new(),
            });
        };
        let span = i64::from(max) - i64::from(min) + 1;
        // A slot array is worth it while it is at most a few times larger than the keys.
        if span <= 4 * keys.len() as i64 + 1024 {
            let mut slots = vec![ABSENT; span as usize];
            for (row, &key) in keys.iter().enumerate() {
                let slot = &mut slots[(i64::from(key) - i64::from(min)) as usize];
                if *slot != ABSENT {
                    return duplicate(key);
                }
                *slot = row as u32;
            }
            Ok(KeyIndex::Dense {
                min: i64::from(min),
                slots,
            })
        } else {
            let mut rows = FxHashMap::default();
            rows.reserve(keys.len());
            for (row, &key) in keys.iter().enumerate() {
                if rows.insert(key, row as u32).is_some() {
                    return duplicate(key);
                }
            }
            Ok(KeyIndex::Sparse(rows))
        }
    }

    /// The row holding `key`, if any.
    pub(crate) fn row_of(&self, key: i32) -> Option<u32> {
        match self {
            KeyIndex::Dense { min, slots } => {
                let slot = usize::try_from(i64::from(key) - min).ok()?;
                slots.get(slot).copied().filter(|&row| row != ABSENT)
            }
            KeyIndex::Sparse(rows) => rows.get(&key).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(strings: &Strings) -> Vec<&str> {
        strings.iter().collect()
    }

    #[test]
    fn sym_builder_sorts_the_dictionary_and_keeps_row_order() {
        let mut builder = SymBuilder::with_capacity(4);
        builder.push("pear");
        builder.push_owned("apple");
        builder.push_owned("pear");
        builder.push("fig");
        let strings = builder.finish();
        assert_eq!(texts(&strings), ["pear", "apple", "pear", "fig"]);
        let dict: Vec<&str> = strings.dict.strings.iter().map(|s| s.as_ref()).collect();
        assert_eq!(dict, ["apple", "fig", "pear"]);
        assert_eq!(*strings.codes, vec![2, 0, 2, 1]);
    }

    #[test]
    fn sort_prefixes_order_like_their_strings() {
        let texts = [
            "",
            "a",
            "ab",
            "ab\0",
            "ab\0\u{1}",
            "abcdefgh",
            "abcdefghi",
            "b",
            "\u{e9}",
        ];
        for a in texts {
            for b in texts {
                if sort_prefix(a) != sort_prefix(b) {
                    assert_eq!(sort_prefix(a) < sort_prefix(b), a < b, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn concatenated_strings_share_one_sorted_dictionary() {
        let joined = concat_strings(vec![
            Strings::from_strs(&["b", "d", "b"]),
            Strings::from_strs(&["a", "d"]),
            Strings::from_strs::<&str>(&[]),
            Strings::from_strs(&["c"]),
        ]);
        assert_eq!(texts(&joined), ["b", "d", "b", "a", "d", "c"]);
        let dict: Vec<&str> = joined.dict.strings.iter().map(|s| s.as_ref()).collect();
        assert_eq!(dict, ["a", "b", "c", "d"]);
    }

    #[test]
    fn concatenating_vectors_keeps_order_and_rejects_mixed_types() {
        let joined = concat_vectors(vec![
            Vector::I32(Arc::new(vec![1, 2])),
            Vector::I32(Arc::new(vec![3])),
        ]);
        assert_eq!(joined, Ok(Vector::I32(Arc::new(vec![1, 2, 3]))));
        let mixed = concat_vectors(vec![
            Vector::I32(Arc::new(vec![1])),
            Vector::F64(Arc::new(vec![1.0])),
        ]);
        assert!(mixed.is_err());
    }

    #[test]
    fn iso_dates_parse_only_when_they_name_a_real_day() {
        assert_eq!(parse_iso_date(b"1970-01-01"), Some(0));
        assert_eq!(parse_iso_date(b"1998-12-01"), Some(10_561));
        assert_eq!(parse_iso_date(b"1996-02-29"), Some(9_555));
        assert_eq!(parse_iso_date(b"1995-02-29"), None);
        assert_eq!(parse_iso_date(b"1995-13-01"), None);
        assert_eq!(parse_iso_date(b"1995-1-01"), None);
        assert_eq!(parse_iso_date(b"1995-01-0x"), None);
    }

    #[test]
    fn key_index_finds_rows_and_reports_duplicates() {
        let dense = KeyIndex::build(&[10, 12, 11], "t", "k").expect("distinct keys");
        assert!(matches!(dense, KeyIndex::Dense { .. }));
        assert_eq!(dense.row_of(12), Some(1));
        assert_eq!(dense.row_of(13), None);
        assert_eq!(dense.row_of(-5), None);

        let sparse = KeyIndex::build(&[1, 1_000_000_000, -7], "t", "k").expect("distinct keys");
        assert!(matches!(sparse, KeyIndex::Sparse(_)));
        assert_eq!(sparse.row_of(-7), Some(2));
        assert_eq!(sparse.row_of(2), None);

        let error = KeyIndex::build(&[4, 5, 4], "orders", "o_orderkey").unwrap_err();
        assert_eq!(
            error.message,
            "primary key `orders.o_orderkey` repeats the value 4"
        );
    }
}
