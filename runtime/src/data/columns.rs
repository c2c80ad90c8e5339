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
/// the rows borrow are not copied. A column whose first rows are mostly distinct (comments)
/// stops hashing: each later row gets a code of its own, and the merge's sort finds the
/// repeats. The dictionary is sorted only when the column is finished:
/// [`SymBuilder::finish`] for a column built in one piece, [`join_column_parts`] for one built
/// in pieces on several cores, whose dictionaries are merged once, in parallel.
pub(crate) struct SymBuilder<'s> {
    /// Each distinct text with its code, while hashing.
    code_of: Option<FxHashMap<Cow<'s, str>, u32>>,
    /// Texts by code, once hashing has stopped.
    listed: Vec<Cow<'s, str>>,
    codes: Vec<u32>,
}

impl Default for SymBuilder<'_> {
    fn default() -> Self {
        SymBuilder::with_capacity(0)
    }
}

impl<'s> SymBuilder<'s> {
    /// Rows after which a column decides whether hashing pays.
    const DECIDE_AT: usize = 4096;

    pub(crate) fn with_capacity(rows: usize) -> SymBuilder<'s> {
        SymBuilder {
            code_of: Some(FxHashMap::default()),
            listed: Vec::new(),
            codes: Vec::with_capacity(rows),
        }
    }

    /// The code of `text`, whose owned copy `own` makes when it is new.
    fn code(&mut self, text: &str, own: impl FnOnce(&str) -> Cow<'s, str>) -> u32 {
        if self.codes.len() == Self::DECIDE_AT
            && self
                .code_of
                .as_ref()
                .is_some_and(|code_of| code_of.len() > Self::DECIDE_AT / 2)
        {
            self.stop_hashing();
        }
        let Some(code_of) = &mut self.code_of else {
            self.listed.push(own(text));
            return (self.listed.len() - 1) as u32;
        };
        if let Some(&code) = code_of.get(text) {
            return code;
        }
        let code = code_of.len() as u32;
        code_of.insert(own(text), code);
        code
    }

    /// Lists the texts seen so far by code; from now on every row gets a code of its own.
    fn stop_hashing(&mut self) {
        if let Some(code_of) = self.code_of.take() {
            // Room for a text per row still expected.
            let expected = code_of.len() + self.codes.capacity().saturating_sub(self.codes.len());
            let mut listed = Vec::with_capacity(expected);
            listed.resize(code_of.len(), Cow::Borrowed(""));
            for (text, code) in code_of {
                listed[code as usize] = text;
            }
            self.listed = listed;
        }
    }

    /// Appends a row whose text outlives the builder.
    pub(crate) fn push(&mut self, text: &'s str) {
        let code = self.code(text, |_| Cow::Borrowed(text));
        self.codes.push(code);
    }

    /// Appends a row whose text is short-lived: copied the first time it is seen.
    pub(crate) fn push_owned(&mut self, text: &str) {
        let code = self.code(text, |text| Cow::Owned(text.to_string()));
        self.codes.push(code);
    }

    /// Appends rows given as codes into `texts` (an Arrow dictionary's keys and values):
    /// each key is looked up once, not once per row. A key outside `texts` is an error
    /// naming it.
    pub(crate) fn push_keyed(
        &mut self,
        texts: &[&'s str],
        keys: impl Iterator<Item = usize>,
    ) -> std::result::Result<(), usize> {
        const UNSEEN: u32 = u32::MAX;
        let mut code_of_key = vec![UNSEEN; texts.len()];
        for key in keys {
            let Some(&text) = texts.get(key) else {
                return Err(key);
            };
            if code_of_key[key] == UNSEEN {
                code_of_key[key] = self.code(text, |_| Cow::Borrowed(text));
            }
            self.codes.push(code_of_key[key]);
        }
        Ok(())
    }

    /// The encoded column, its dictionary sorted so that code order is string order.
    pub(crate) fn finish(self) -> Strings {
        merge_syms(vec![self])
    }

    /// The texts by code (repeats possible once hashing has stopped).
    fn texts(&self) -> Vec<&str> {
        match &self.code_of {
            Some(code_of) => {
                let mut texts = vec![""; code_of.len()];
                for (text, &code) in code_of {
                    texts[code as usize] = text.as_ref();
                }
                texts
            }
            None => self.listed.iter().map(|text| text.as_ref()).collect(),
        }
    }
}

/// Bytes of a text that its sort key holds.
const SORT_PREFIX: usize = 32;

/// The first [`SORT_PREFIX`] bytes of `text`, zero-padded, as big-endian numbers: they
/// compare as the strings do whenever they differ (zero padding sorts a shorter prefix
/// first). 32 bytes tell apart nearly all TPC-H comments, which often share 16.
fn sort_prefix(text: &str) -> [u64; SORT_PREFIX / 8] {
    let mut prefix = [0u8; SORT_PREFIX];
    let bytes = &text.as_bytes()[..text.len().min(SORT_PREFIX)];
    prefix[..bytes.len()].copy_from_slice(bytes);
    let mut words = [0u64; SORT_PREFIX / 8];
    for (word, bytes) in words.iter_mut().zip(prefix.chunks_exact(8)) {
        *word = u64::from_be_bytes(bytes.try_into().unwrap_or_default());
    }
    words
}

/// One part of a string column: its distinct texts (indexed by the part's codes, in any
/// order, repeats allowed) and its rows' codes.
struct DictPart<'t> {
    texts: Vec<&'t str>,
    codes: &'t [u32],
}

/// Joins string columns built in pieces into one column with one sorted dictionary.
fn merge_syms(parts: Vec<SymBuilder<'_>>) -> Strings {
    let dicts: Vec<DictPart<'_>> = parts
        .par_iter()
        .map(|part| DictPart {
            texts: part.texts(),
            codes: &part.codes,
        })
        .collect();
    let merged = merge_dictionaries(&dicts);
    drop(dicts);
    // Owned texts are freed on every core, not one.
    parts.into_par_iter().for_each(drop);
    merged
}

/// Joins string columns with sorted dictionaries into one column with one sorted dictionary.
pub(crate) fn concat_strings(parts: Vec<Strings>) -> Strings {
    if parts.len() == 1 {
        if let Some(only) = parts.into_iter().next() {
            return only;
        }
        return Strings::from_strs::<&str>(&[]);
    }
    let dicts: Vec<DictPart<'_>> = parts
        .iter()
        .map(|part| DictPart {
            texts: part.dict.strings.iter().map(|s| s.as_ref()).collect(),
            codes: &part.codes,
        })
        .collect();
    merge_dictionaries(&dicts)
}

/// Merges the dictionaries of `parts` into one sorted dictionary of distinct strings and
/// renumbers every row, all of it on every core: the parts' texts are sorted together (as
/// small keys: a 32-byte prefix settles most comparisons without following the string
/// pointer, which would miss the cache), runs of equal texts get one code, each distinct text is copied once, and each
/// part's rows are renumbered into their place in one code buffer.
fn merge_dictionaries(parts: &[DictPart<'_>]) -> Strings {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    // Every part's texts one after another: part `p`'s code `c` is text `first[p] + c`.
    let mut first = Vec::with_capacity(parts.len() + 1);
    first.push(0usize);
    for dict in parts {
        first.push(first[first.len() - 1] + dict.texts.len());
    }
    let mut texts: Vec<&str> = Vec::with_capacity(first[parts.len()]);
    for dict in parts {
        texts.extend_from_slice(&dict.texts);
    }
    let mut keys: Vec<([u64; SORT_PREFIX / 8], u32)> = texts
        .par_iter()
        .enumerate()
        .map(|(i, text)| (sort_prefix(text), i as u32))
        .collect();
    keys.par_sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| texts[a.1 as usize].cmp(texts[b.1 as usize]))
    });
    let starts_run: Vec<bool> = keys
        .par_iter()
        .enumerate()
        .map(|(i, key)| {
            i == 0 || {
                let before = &keys[i - 1];
                before.0 != key.0 || texts[before.1 as usize] != texts[key.1 as usize]
            }
        })
        .collect();
    let mut run_starts = Vec::with_capacity(keys.len());
    let mut merged_code = Vec::with_capacity(keys.len());
    for (position, &starts) in starts_run.iter().enumerate() {
        if starts {
            run_starts.push(position);
        }
        merged_code.push(run_starts.len().saturating_sub(1) as u32);
    }
    drop(starts_run);
    let strings: Vec<Arc<str>> = run_starts
        .par_iter()
        .map(|&position| Arc::<str>::from(texts[keys[position].1 as usize]))
        .collect();
    let renumber: Vec<AtomicU32> = (0..texts.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    keys.par_iter()
        .zip(&merged_code)
        .for_each(|(key, &code)| renumber[key.1 as usize].store(code, Relaxed));
    drop(keys);
    let mut codes = vec![0u32; parts.iter().map(|dict| dict.codes.len()).sum()];
    let mut outputs = Vec::with_capacity(parts.len());
    let mut rest = codes.as_mut_slice();
    for dict in parts {
        let (output, after) = rest.split_at_mut(dict.codes.len());
        outputs.push(output);
        rest = after;
    }
    const ROWS_PER_TASK: usize = 1 << 16;
    outputs
        .into_par_iter()
        .zip(parts)
        .zip(&first)
        .for_each(|((output, dict), &first)| {
            let renumber = &renumber[first..];
            output
                .par_chunks_mut(ROWS_PER_TASK)
                .zip(dict.codes.par_chunks(ROWS_PER_TASK))
                .for_each(|(output, codes)| {
                    for (new, &old) in output.iter_mut().zip(codes) {
                        *new = renumber[old as usize].load(Relaxed);
                    }
                });
        });
    Strings {
        dict: Arc::new(StrDict { strings }),
        codes: Arc::new(codes),
    }
}

/// Joins the parts of a column of plain values into one buffer, copying them in parallel.
fn append<T: Copy + Default + Send + Sync>(parts: Vec<Arc<Vec<T>>>) -> Arc<Vec<T>> {
    if parts.len() == 1 {
        if let Some(only) = parts.into_iter().next() {
            return only;
        }
        return Arc::new(Vec::new());
    }
    let mut joined = vec![T::default(); parts.iter().map(|part| part.len()).sum()];
    let mut outputs = Vec::with_capacity(parts.len());
    let mut rest = joined.as_mut_slice();
    for part in &parts {
        let (output, after) = rest.split_at_mut(part.len());
        outputs.push(output);
        rest = after;
    }
    outputs
        .into_par_iter()
        .zip(&parts)
        .for_each(|(output, part)| output.copy_from_slice(part));
    parts.into_par_iter().for_each(drop);
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
            let mut all = Vec::with_capacity(rest.len() + 1);
            all.push($first);
            for part in rest {
                match part {
                    Vector::$variant(buffer) => all.push(buffer),
                    other => bail!(
                        "cannot join a {} column part to a {} column",
                        other.ty(),
                        stringify!($variant)
                    ),
                }
            }
            Vector::$variant(append(all))
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

/// Joins the parts of one table column by column, the columns in parallel.
pub(crate) fn join_parts(parts: Vec<Vec<Vector>>) -> Result<Vec<Vector>> {
    by_column(parts)?
        .into_par_iter()
        .map(concat_vectors)
        .collect()
}

/// One part of a column read on one core: finished values, or a string column whose
/// dictionary is still in first-seen order (all the parts' dictionaries are merged once).
pub(crate) enum ColumnPart<'s> {
    Vector(Vector),
    Syms(SymBuilder<'s>),
}

/// [`join_parts`] of parts that may hold unfinished string columns.
pub(crate) fn join_column_parts(parts: Vec<Vec<ColumnPart<'_>>>) -> Result<Vec<Vector>> {
    by_column(parts)?
        .into_par_iter()
        .map(|column| {
            let mut vectors = Vec::with_capacity(column.len());
            let mut syms = Vec::with_capacity(column.len());
            for part in column {
                match part {
                    ColumnPart::Vector(vector) => vectors.push(vector),
                    ColumnPart::Syms(builder) => syms.push(builder),
                }
            }
            match (vectors.is_empty(), syms.is_empty()) {
                (_, true) => concat_vectors(vectors),
                (true, false) => Ok(Vector::Sym(merge_syms(syms))),
                (false, false) => {
                    bail!("cannot join a sym column part to a column of another type")
                }
            }
        })
        .collect()
}

/// The parts' columns regrouped: every part of column 0, then of column 1, ….
fn by_column<T>(parts: Vec<Vec<T>>) -> Result<Vec<Vec<T>>> {
    let columns = parts.first().map_or(0, Vec::len);
    let mut by_column: Vec<Vec<T>> = (0..columns)
        .map(|_| Vec::with_capacity(parts.len()))
        .collect();
    for part in parts {
        if part.len() != columns {
            bail!("table parts have different numbers of columns");
        }
        for (column, vector) in by_column.iter_mut().zip(part) {
            column.push(vector);
        }
    }
    Ok(by_column)
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

    fn texts_of(strings: &Strings) -> Vec<&str> {
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
        assert_eq!(texts_of(&strings), ["pear", "apple", "pear", "fig"]);
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
            "abcdefghijklmnop",
            "abcdefghijklmnop\0",
            "abcdefghijklmnopq",
            "abcdefghijklmnoq",
            "abcdefghijklmno",
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
        assert_eq!(texts_of(&joined), ["b", "d", "b", "a", "d", "c"]);
        let dict: Vec<&str> = joined.dict.strings.iter().map(|s| s.as_ref()).collect();
        assert_eq!(dict, ["a", "b", "c", "d"]);
    }

    /// Rows of text cut into parts of the given lengths, each part dictionary-encoded on its
    /// own, then joined.
    fn joined_in_parts(rows: &[String], cuts: &[usize]) -> Vector {
        let mut parts = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain([&rows.len()]) {
            let end = cut.clamp(start, rows.len());
            let mut builder = SymBuilder::default();
            for text in &rows[start..end] {
                builder.push(text);
            }
            parts.push(vec![ColumnPart::Syms(builder)]);
            start = end;
        }
        let mut joined = join_column_parts(parts).expect("one type");
        joined.remove(0)
    }

    proptest::proptest! {
        #[test]
        fn text_joined_from_parts_is_the_text_encoded_whole(
            rows in proptest::collection::vec("[aé日🦀 ]{0,3}", 0..60),
            mut cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            cuts.sort_unstable();
            let expected = Vector::Sym(Strings::from_strs(&rows));
            proptest::prop_assert_eq!(joined_in_parts(&rows, &cuts), expected);
        }
    }

    #[test]
    fn mostly_distinct_text_stops_hashing_and_still_encodes_exactly() {
        let rows: Vec<String> = (0..3 * SymBuilder::DECIDE_AT)
            .map(|row| format!("comment {}", row % (2 * SymBuilder::DECIDE_AT)))
            .collect();
        for cuts in [vec![], vec![10, 5000], vec![SymBuilder::DECIDE_AT + 1]] {
            let expected = Vector::Sym(Strings::from_strs(&rows));
            assert_eq!(joined_in_parts(&rows, &cuts), expected, "{cuts:?}");
        }
        let mut owned = SymBuilder::default();
        for row in &rows {
            owned.push_owned(row);
        }
        assert!(owned.code_of.is_none(), "hashing stopped");
        assert_eq!(owned.finish(), Strings::from_strs(&rows));
    }

    #[test]
    fn dictionary_keys_are_looked_up_once_and_checked() {
        let texts = ["b", "a", "b", "unused"];
        let mut builder = SymBuilder::default();
        builder.push("c");
        assert_eq!(builder.push_keyed(&texts, [0, 1, 2, 0].into_iter()), Ok(()));
        let strings = builder.finish();
        assert_eq!(texts_of(&strings), ["c", "b", "a", "b", "b"]);
        let dict: Vec<&str> = strings.dict.strings.iter().map(|s| s.as_ref()).collect();
        assert_eq!(dict, ["a", "b", "c"], "unused entries stay out");
        let mut builder = SymBuilder::default();
        assert_eq!(builder.push_keyed(&texts, [1, 4].into_iter()), Err(4));
    }

    #[test]
    fn parts_of_a_string_column_and_of_another_type_do_not_join() {
        let parts = vec![
            vec![ColumnPart::Syms(SymBuilder::default())],
            vec![ColumnPart::Vector(Vector::I32(Arc::new(vec![1])))],
        ];
        assert!(join_column_parts(parts).is_err());
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
