//! Operations on runtime values shared by the CPU builtins, the interpreter and the data
//! loaders: constructors, accessors, gather/compress/slice/concat on [`Vector`], numeric
//! casts, list cells, and merging of string dictionaries.
//!
//! Everything here is total: bad input (an index out of range, vectors of different types)
//! is an error, never a panic. Messages do not name a builtin; the CPU builtins add
//! `@name: ` in front.

use std::ops::Range;
use std::sync::Arc;

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{List, StrDict, Strings, Value, Vector};

/// Rebuilds a vector of the same variant from an operation on its buffer.
///
/// `$buf` is bound to the `&Arc<Vec<T>>` of every non-string variant and `$op` must give a
/// `Vec<T>` of the same element type; `$strs` is bound to the `&Strings` of `sym`/`str` and
/// `$sop` must give a `Strings`. Both are expanded once per variant, so they may be generic
/// code (and may use `?`).
macro_rules! rebuild_vector {
    ($v:expr, $buf:ident => $op:expr, $strs:ident => $sop:expr) => {
        match $v {
            Vector::Bool($buf) => Vector::Bool(Arc::new($op)),
            Vector::Char($buf) => Vector::Char(Arc::new($op)),
            Vector::I8($buf) => Vector::I8(Arc::new($op)),
            Vector::I16($buf) => Vector::I16(Arc::new($op)),
            Vector::I32($buf) => Vector::I32(Arc::new($op)),
            Vector::I64($buf) => Vector::I64(Arc::new($op)),
            Vector::F32($buf) => Vector::F32(Arc::new($op)),
            Vector::F64($buf) => Vector::F64(Arc::new($op)),
            Vector::Complex($buf) => Vector::Complex(Arc::new($op)),
            Vector::Month($buf) => Vector::Month(Arc::new($op)),
            Vector::Date($buf) => Vector::Date(Arc::new($op)),
            Vector::Minute($buf) => Vector::Minute(Arc::new($op)),
            Vector::Second($buf) => Vector::Second(Arc::new($op)),
            Vector::Time($buf) => Vector::Time(Arc::new($op)),
            Vector::Dt($buf) => Vector::Dt(Arc::new($op)),
            Vector::Sym($strs) => Vector::Sym($sop),
            Vector::Str($strs) => Vector::Str($sop),
        }
    };
}

/// Gathers `src[i]` for each `i` of `idx`; an index outside `src` is an error.
pub fn gather_slice<T: Copy>(src: &[T], idx: &[i64]) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(idx.len());
    for &i in idx {
        match usize::try_from(i).ok().and_then(|i| src.get(i)) {
            Some(&x) => out.push(x),
            None => bail!("index {i} out of range for length {}", src.len()),
        }
    }
    Ok(out)
}

/// The elements of `src` where `mask` is true, in order (lengths already checked).
fn compress_slice<T: Copy>(src: &[T], mask: &[bool]) -> Vec<T> {
    let kept = mask.iter().filter(|&&m| m).count();
    let mut out = Vec::with_capacity(kept);
    out.extend(src.iter().zip(mask).filter(|(_, &m)| m).map(|(&x, _)| x));
    out
}

/// `n` elements taken from `src` cyclically (`src` not empty).
fn cycle_slice<T: Copy>(src: &[T], n: usize) -> Vec<T> {
    if src.len() == 1 {
        return vec![src[0]; n];
    }
    src.iter().copied().cycle().take(n).collect()
}

/// The result of merging string dictionaries: one sorted dictionary holding every string of
/// the inputs, and for each input dictionary the new code of each of its old codes.
#[derive(Clone, Debug)]
pub struct DictMerge {
    pub dict: Arc<StrDict>,
    /// `maps[k][old]` is the merged code of code `old` of input dictionary `k`.
    pub maps: Vec<Vec<u32>>,
}

impl DictMerge {
    /// Codes of `strings` (which codes into input dictionary `k`) in the merged dictionary.
    pub fn recode(&self, k: usize, strings: &Strings) -> Result<Strings> {
        let map = self
            .maps
            .get(k)
            .ok_or_else(|| RuntimeError::new(format!("no input dictionary #{k} in the merge")))?;
        let codes = gather_codes(map, &strings.codes)?;
        Ok(Strings {
            dict: self.dict.clone(),
            codes: Arc::new(codes),
        })
    }
}

/// `map[c]` for each code `c` (a code outside the map is a corrupt value: an error).
pub fn gather_codes(map: &[u32], codes: &[u32]) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(codes.len());
    for &c in codes {
        match map.get(c as usize) {
            Some(&m) => out.push(m),
            None => bail!("string code {c} outside its dictionary of {}", map.len()),
        }
    }
    Ok(out)
}

/// Merges two sorted dictionaries in one linear pass; returns the merged strings and the
/// code maps of both inputs.
fn merge_two(a: &[Arc<str>], b: &[Arc<str>]) -> (Vec<Arc<str>>, Vec<u32>, Vec<u32>) {
    let mut merged = Vec::with_capacity(a.len().max(b.len()));
    let (mut map_a, mut map_b) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let code = merged.len() as u32;
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.as_ref().cmp(y.as_ref()),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                merged.push(a[i].clone());
                map_a.push(code);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                merged.push(b[j].clone());
                map_b.push(code);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                merged.push(a[i].clone());
                map_a.push(code);
                map_b.push(code);
                i += 1;
                j += 1;
            }
        }
    }
    (merged, map_a, map_b)
}

impl StrDict {
    /// Merges dictionaries into one sorted dictionary of all their strings. When every input
    /// is the same dictionary (`Arc::ptr_eq`), it is reused and the maps are identities.
    /// This is the one place string vectors with different dictionaries are reconciled.
    pub fn merge(dicts: &[&Arc<StrDict>]) -> DictMerge {
        let Some(first) = dicts.first() else {
            return DictMerge {
                dict: Arc::new(StrDict::default()),
                maps: Vec::new(),
            };
        };
        if dicts.iter().all(|d| Arc::ptr_eq(d, first)) {
            let identity: Vec<u32> = (0..first.strings.len() as u32).collect();
            return DictMerge {
                dict: (*first).clone(),
                maps: vec![identity; dicts.len()],
            };
        }
        let mut strings = first.strings.clone();
        let mut maps: Vec<Vec<u32>> = vec![(0..strings.len() as u32).collect()];
        for dict in &dicts[1..] {
            let (merged, map_old, map_new) = merge_two(&strings, &dict.strings);
            for map in &mut maps {
                for code in map.iter_mut() {
                    // Codes of earlier inputs point into `strings`, which `map_old` re-codes.
                    *code = map_old.get(*code as usize).copied().unwrap_or(*code);
                }
            }
            maps.push(map_new);
            strings = merged;
        }
        DictMerge {
            dict: Arc::new(StrDict { strings }),
            maps,
        }
    }
}

impl Strings {
    /// The strings at positions `idx` (same dictionary).
    pub fn gather(&self, idx: &[i64]) -> Result<Strings> {
        Ok(Strings {
            dict: self.dict.clone(),
            codes: Arc::new(gather_slice(&self.codes, idx)?),
        })
    }

    /// Re-encodes strings whose dictionary was transformed: `map[old code]` is the new code
    /// in `dict`.
    pub fn remap(&self, dict: Arc<StrDict>, map: &[u32]) -> Result<Strings> {
        Ok(Strings {
            dict,
            codes: Arc::new(gather_codes(map, &self.codes)?),
        })
    }

    /// Encodes strings given per dictionary entry: `per_entry[c]` replaces dictionary string
    /// `c` (e.g. a substring of it). Work is per distinct string, not per row.
    pub fn map_dictionary(&self, per_entry: Vec<String>) -> Result<Strings> {
        let encoded = Strings::from_strs(&per_entry);
        self.remap(encoded.dict.clone(), &encoded.codes)
    }
}

/// Concatenates string vectors, merging their dictionaries when they differ.
fn concat_strings(parts: &[&Strings]) -> Result<Strings> {
    let dicts: Vec<&Arc<StrDict>> = parts.iter().map(|s| &s.dict).collect();
    let merge = StrDict::merge(&dicts);
    let total = parts.iter().map(|s| s.len()).sum();
    let mut codes = Vec::with_capacity(total);
    for (part, map) in parts.iter().zip(&merge.maps) {
        codes.extend(gather_codes(map, &part.codes)?);
    }
    Ok(Strings {
        dict: merge.dict,
        codes: Arc::new(codes),
    })
}

impl Vector {
    /// `self[i]` for each `i` of `idx`; an index out of range is an error.
    pub fn gather(&self, idx: &[i64]) -> Result<Vector> {
        Ok(rebuild_vector!(self, v => gather_slice(v, idx)?, s => s.gather(idx)?))
    }

    /// The elements where `mask` is true, in order; `mask` must be as long as `self`.
    pub fn compress(&self, mask: &[bool]) -> Result<Vector> {
        if mask.len() != self.len() {
            bail!("length mismatch (mask {} vs {})", mask.len(), self.len());
        }
        Ok(
            rebuild_vector!(self, v => compress_slice(v, mask), s => Strings {
                dict: s.dict.clone(),
                codes: Arc::new(compress_slice(&s.codes, mask)),
            }),
        )
    }

    /// The elements in `range`; a range outside the vector is an error.
    pub fn slice(&self, range: Range<usize>) -> Result<Vector> {
        if range.start > range.end || range.end > self.len() {
            bail!(
                "slice {}..{} out of range for length {}",
                range.start,
                range.end,
                self.len()
            );
        }
        let r = range;
        Ok(
            rebuild_vector!(self, v => v[r.clone()].to_vec(), s => Strings {
                dict: s.dict.clone(),
                codes: Arc::new(s.codes[r.clone()].to_vec()),
            }),
        )
    }

    /// `n` elements taken cyclically from `self` (HorseIR `@vector`); `self` must not be
    /// empty unless `n` is 0.
    pub fn cycle_to(&self, n: usize) -> Result<Vector> {
        if n == 0 {
            return self.slice(0..0);
        }
        if self.is_empty() {
            bail!("cannot fill {n} elements from an empty vector");
        }
        Ok(rebuild_vector!(self, v => cycle_slice(v, n), s => Strings {
            dict: s.dict.clone(),
            codes: Arc::new(cycle_slice(&s.codes, n)),
        }))
    }

    /// Concatenates vectors of one type (strings with different dictionaries are re-coded
    /// into a merged one). No parts is an error: the type would be unknown.
    pub fn concat(parts: &[Vector]) -> Result<Vector> {
        let Some(first) = parts.first() else {
            bail!("cannot concatenate zero vectors");
        };
        let ty = first.ty();
        if let Some(other) = parts.iter().find(|p| p.ty() != ty) {
            bail!("cannot concatenate {ty} and {}", other.ty());
        }
        if parts.len() == 1 {
            return Ok(first.clone());
        }
        if matches!(first, Vector::Sym(_) | Vector::Str(_)) {
            let strings: Vec<&Strings> = parts
                .iter()
                .filter_map(|p| match p {
                    Vector::Sym(s) | Vector::Str(s) => Some(s),
                    _ => None,
                })
                .collect();
            let merged = concat_strings(&strings)?;
            return Ok(if ty == Type::Sym {
                Vector::Sym(merged)
            } else {
                Vector::Str(merged)
            });
        }
        let total: usize = parts.iter().map(Vector::len).sum();
        macro_rules! join_parts {
            ($variant:ident) => {{
                let mut out = Vec::with_capacity(total);
                for part in parts {
                    if let Vector::$variant(v) = part {
                        out.extend_from_slice(v);
                    }
                }
                Vector::$variant(Arc::new(out))
            }};
        }
        Ok(match first {
            Vector::Bool(_) => join_parts!(Bool),
            Vector::Char(_) => join_parts!(Char),
            Vector::I8(_) => join_parts!(I8),
            Vector::I16(_) => join_parts!(I16),
            Vector::I32(_) => join_parts!(I32),
            Vector::I64(_) => join_parts!(I64),
            Vector::F32(_) => join_parts!(F32),
            Vector::F64(_) => join_parts!(F64),
            Vector::Complex(_) => join_parts!(Complex),
            Vector::Month(_) => join_parts!(Month),
            Vector::Date(_) => join_parts!(Date),
            Vector::Minute(_) => join_parts!(Minute),
            Vector::Second(_) => join_parts!(Second),
            Vector::Time(_) => join_parts!(Time),
            Vector::Dt(_) => join_parts!(Dt),
            Vector::Sym(_) | Vector::Str(_) => unreachable_strings(),
        })
    }

    /// An empty vector of basic type `ty`.
    pub fn empty(ty: &Type) -> Result<Vector> {
        Ok(match ty {
            Type::Bool => Vector::Bool(Arc::default()),
            Type::Char => Vector::Char(Arc::default()),
            Type::I8 => Vector::I8(Arc::default()),
            Type::I16 => Vector::I16(Arc::default()),
            Type::I32 => Vector::I32(Arc::default()),
            Type::I64 => Vector::I64(Arc::default()),
            Type::F32 => Vector::F32(Arc::default()),
            Type::F64 => Vector::F64(Arc::default()),
            Type::Complex => Vector::Complex(Arc::default()),
            Type::Sym => Vector::Sym(Strings::from_strs::<&str>(&[])),
            Type::Str => Vector::Str(Strings::from_strs::<&str>(&[])),
            Type::Month => Vector::Month(Arc::default()),
            Type::Date => Vector::Date(Arc::default()),
            Type::Minute => Vector::Minute(Arc::default()),
            Type::Second => Vector::Second(Arc::default()),
            Type::Time => Vector::Time(Arc::default()),
            Type::Dt => Vector::Dt(Arc::default()),
            other => bail!("{other} is not a vector type"),
        })
    }

    pub fn from_i64s(values: Vec<i64>) -> Vector {
        Vector::I64(Arc::new(values))
    }

    pub fn from_f64s(values: Vec<f64>) -> Vector {
        Vector::F64(Arc::new(values))
    }

    pub fn from_bools(values: Vec<bool>) -> Vector {
        Vector::Bool(Arc::new(values))
    }

    /// The booleans of a `bool` vector.
    pub fn as_bools(&self) -> Option<&[bool]> {
        match self {
            Vector::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The values of an `i64` vector, without copying.
    pub fn as_i64s(&self) -> Option<&[i64]> {
        match self {
            Vector::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The values of an integer vector (bool, i8 … i64) widened to i64; `None` for other
    /// types. Copies unless the vector is already i64.
    pub fn to_i64s(&self) -> Option<std::borrow::Cow<'_, [i64]>> {
        use std::borrow::Cow;
        Some(match self {
            Vector::I64(v) => Cow::Borrowed(v.as_slice()),
            Vector::Bool(v) => Cow::Owned(v.iter().map(|&x| i64::from(x)).collect()),
            Vector::I8(v) => Cow::Owned(v.iter().map(|&x| i64::from(x)).collect()),
            Vector::I16(v) => Cow::Owned(v.iter().map(|&x| i64::from(x)).collect()),
            Vector::I32(v) => Cow::Owned(v.iter().map(|&x| i64::from(x)).collect()),
            _ => return None,
        })
    }

    /// Element `i` of an integer vector as i64.
    pub fn integer_at(&self, i: usize) -> Option<i64> {
        match self {
            Vector::Bool(v) => v.get(i).map(|&x| i64::from(x)),
            Vector::I8(v) => v.get(i).map(|&x| i64::from(x)),
            Vector::I16(v) => v.get(i).map(|&x| i64::from(x)),
            Vector::I32(v) => v.get(i).map(|&x| i64::from(x)),
            Vector::I64(v) => v.get(i).copied(),
            _ => None,
        }
    }

    /// Converts a real vector (bool, integers, floats) to the real type `ty` with Rust `as`
    /// semantics (floats to integers truncate and saturate). Same type: a cheap clone.
    pub fn cast_real(&self, ty: &Type) -> Result<Vector> {
        if &self.ty() == ty {
            return Ok(self.clone());
        }
        macro_rules! convert {
            ($t:ty) => {
                match self {
                    Vector::Bool(v) => v.iter().map(|&x| u8::from(x) as $t).collect::<Vec<$t>>(),
                    Vector::I8(v) => v.iter().map(|&x| x as $t).collect(),
                    Vector::I16(v) => v.iter().map(|&x| x as $t).collect(),
                    Vector::I32(v) => v.iter().map(|&x| x as $t).collect(),
                    Vector::I64(v) => v.iter().map(|&x| x as $t).collect(),
                    Vector::F32(v) => v.iter().map(|&x| x as $t).collect(),
                    Vector::F64(v) => v.iter().map(|&x| x as $t).collect(),
                    other => bail!("cannot convert {} to {ty}", other.ty()),
                }
            };
        }
        Ok(match ty {
            Type::Bool => match self.to_f64s() {
                Some(v) => Vector::Bool(Arc::new(v.iter().map(|&x| x != 0.0).collect())),
                None => bail!("cannot convert {} to bool", self.ty()),
            },
            Type::I8 => Vector::I8(Arc::new(convert!(i8))),
            Type::I16 => Vector::I16(Arc::new(convert!(i16))),
            Type::I32 => Vector::I32(Arc::new(convert!(i32))),
            Type::I64 => Vector::I64(Arc::new(convert!(i64))),
            Type::F32 => Vector::F32(Arc::new(convert!(f32))),
            Type::F64 => Vector::F64(Arc::new(convert!(f64))),
            other => bail!("cannot convert {} to {other}", self.ty()),
        })
    }

    /// The values of a real vector as f64 (`None` for other types).
    pub fn to_f64s(&self) -> Option<Vec<f64>> {
        Some(match self {
            Vector::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
            Vector::I8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Vector::I16(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Vector::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Vector::I64(v) => v.iter().map(|&x| x as f64).collect(),
            Vector::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Vector::F64(v) => v.to_vec(),
            _ => return None,
        })
    }

    /// The dictionary-encoded strings of a `sym` or `str` vector.
    pub fn as_strings(&self) -> Option<&Strings> {
        match self {
            Vector::Sym(s) | Vector::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Concatenation handles strings before the per-variant copy; this arm cannot be reached
/// but must produce a value without panicking.
fn unreachable_strings() -> Vector {
    Vector::Sym(Strings::from_strs::<&str>(&[]))
}

impl Value {
    /// The vector, if this value is one.
    pub fn as_vector(&self) -> Option<&Vector> {
        match self {
            Value::Vector(v) => Some(v),
            _ => None,
        }
    }

    pub fn from_i64s(values: Vec<i64>) -> Value {
        Value::Vector(Vector::from_i64s(values))
    }

    pub fn from_f64s(values: Vec<f64>) -> Value {
        Value::Vector(Vector::from_f64s(values))
    }

    pub fn from_bools(values: Vec<bool>) -> Value {
        Value::Vector(Vector::from_bools(values))
    }

    /// A one-element `sym` vector.
    pub fn symbol(name: &str) -> Value {
        Value::Vector(Vector::Sym(Strings::from_strs(&[name])))
    }

    /// The single integer of a length-1 integer vector.
    pub fn scalar_i64(&self) -> Option<i64> {
        match self {
            Value::Vector(v) if v.len() == 1 => v.integer_at(0),
            _ => None,
        }
    }
}

impl List {
    /// Number of cells.
    pub fn len(&self) -> usize {
        match self {
            List::Flat { offsets, .. } => offsets.len().saturating_sub(1),
            List::Mixed(cells) => cells.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element range of flat cell `i`.
    fn flat_range(offsets: &[usize], i: usize) -> Option<Range<usize>> {
        let start = *offsets.get(i)?;
        let end = *offsets.get(i + 1)?;
        (start <= end).then_some(start..end)
    }

    /// Cell `i` (a copy of its elements for a flat list); `None` when out of range.
    pub fn cell(&self, i: usize) -> Option<Value> {
        match self {
            List::Flat { values, offsets } => {
                let range = List::flat_range(offsets, i)?;
                values.slice(range).ok().map(Value::Vector)
            }
            List::Mixed(cells) => cells.get(i).cloned(),
        }
    }

    /// All cells, in order.
    pub fn cells(&self) -> Vec<Value> {
        match self {
            List::Mixed(cells) => cells.as_ref().clone(),
            List::Flat { .. } => (0..self.len()).filter_map(|i| self.cell(i)).collect(),
        }
    }

    /// A list of `cells`: flat when every cell is a vector and all have one type (strings
    /// with different dictionaries are merged), mixed otherwise.
    pub fn from_cells(cells: Vec<Value>) -> List {
        // Vectors of one type only are concatenated, asked before anything is cloned: a
        // query's result columns (`@list` before `@table`) have different types, and a failed
        // concatenation builds its error message, on every run.
        let vectors: Option<Vec<&Vector>> = cells.iter().map(Value::as_vector).collect();
        let vectors = vectors
            .filter(|v| v.windows(2).all(|w| w[0].ty() == w[1].ty()))
            .map(|v| v.into_iter().cloned().collect::<Vec<Vector>>());
        if let Some(vectors) = vectors {
            if let Ok(values) = Vector::concat(&vectors) {
                let mut offsets = Vec::with_capacity(vectors.len() + 1);
                offsets.push(0);
                let mut end = 0;
                for v in &vectors {
                    end += v.len();
                    offsets.push(end);
                }
                return List::Flat {
                    values,
                    offsets: Arc::new(offsets),
                };
            }
        }
        List::Mixed(Arc::new(cells))
    }

    /// A flat list from a values vector and CSR offsets (checked: starts at 0, never
    /// decreases, ends at the number of values).
    pub fn flat(values: Vector, offsets: Vec<usize>) -> Result<List> {
        let valid = offsets.first() == Some(&0)
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && offsets.last() == Some(&values.len());
        if !valid {
            bail!("invalid list offsets for {} values", values.len());
        }
        Ok(List::Flat {
            values,
            offsets: Arc::new(offsets),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64s(v: &[i64]) -> Vector {
        Vector::from_i64s(v.to_vec())
    }

    #[test]
    fn gather_reads_positions_and_rejects_out_of_range() {
        let v = Vector::I32(Arc::new(vec![10, 20, 30]));
        assert_eq!(
            v.gather(&[2, 0, 2]).unwrap(),
            Vector::I32(Arc::new(vec![30, 10, 30]))
        );
        assert!(v.gather(&[3]).is_err());
        assert!(v.gather(&[-1]).is_err());
        assert_eq!(v.gather(&[]).unwrap().len(), 0);
    }

    #[test]
    fn compress_keeps_masked_elements_and_checks_length() {
        let v = Vector::Sym(Strings::from_strs(&["a", "b", "c"]));
        let kept = v.compress(&[true, false, true]).unwrap();
        assert_eq!(
            kept.as_strings().unwrap().iter().collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert!(v.compress(&[true]).is_err());
    }

    #[test]
    fn concat_merges_different_string_dictionaries() {
        let a = Vector::Sym(Strings::from_strs(&["pear", "apple"]));
        let b = Vector::Sym(Strings::from_strs(&["fig", "pear"]));
        let joined = Vector::concat(&[a, b]).unwrap();
        let s = joined.as_strings().unwrap();
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            ["pear", "apple", "fig", "pear"]
        );
        assert_eq!(s.dict.strings.len(), 3);
        assert!(Vector::concat(&[i64s(&[1]), Vector::from_f64s(vec![1.0])]).is_err());
    }

    #[test]
    fn merge_maps_every_dictionary_into_one_sorted_one() {
        let a = Strings::from_strs(&["b", "d"]);
        let b = Strings::from_strs(&["a", "d", "e"]);
        let c = Strings::from_strs(&["c"]);
        let m = StrDict::merge(&[&a.dict, &b.dict, &c.dict]);
        let merged: Vec<&str> = m.dict.strings.iter().map(|s| s.as_ref()).collect();
        assert_eq!(merged, ["a", "b", "c", "d", "e"]);
        assert_eq!(m.maps, vec![vec![1, 3], vec![0, 3, 4], vec![2]]);
        let same = StrDict::merge(&[&a.dict, &a.dict]);
        assert!(Arc::ptr_eq(&same.dict, &a.dict));
    }

    #[test]
    fn list_cells_round_trip_through_flat_storage() {
        let cells = vec![Value::from_i64s(vec![1, 2]), Value::from_i64s(vec![])];
        let list = List::from_cells(cells.clone());
        assert!(matches!(list, List::Flat { .. }));
        assert_eq!(list.cells(), cells);
        assert_eq!(list.cell(2), None);
        let mixed = List::from_cells(vec![Value::from_i64s(vec![1]), Value::from_f64s(vec![])]);
        assert!(matches!(mixed, List::Mixed(_)));
    }

    #[test]
    fn cast_and_cycle() {
        let v = Vector::Bool(Arc::new(vec![true, false]));
        assert_eq!(
            v.cast_real(&Type::F64).unwrap(),
            Vector::from_f64s(vec![1.0, 0.0])
        );
        assert_eq!(
            i64s(&[1, 2, 3]).cycle_to(5).unwrap(),
            i64s(&[1, 2, 3, 1, 2])
        );
        assert!(i64s(&[]).cycle_to(2).is_err());
        assert!(List::flat(i64s(&[1]), vec![0, 2]).is_err());
    }
}
