//! Values to GPU words and back, in the layout of `crate::kernel` (DESIGN.md): bool/char as
//! `u32` words, i8/i16/i32 and the day- or unit-counting temporal types as `i32`, i64 and `dt`
//! as `i64`, f32/f64 native, sym/str as `u32` codes into the column's sorted dictionary.
//!
//! Every buffer of the engine is a `GpuBuffer<u32>` of raw words; an 8-byte element takes two.

use std::sync::Arc;

use crate::error::{Result, RuntimeError};
use crate::kernel::{GpuElement, ValuePart};
use crate::types::Type;
use crate::value::{List, StrDict, Strings, Value, Vector};
use crate::value_ops::DictMerge;

/// The words of `part` of `value`, checked against the element type the kernel expects.
pub(crate) fn words_of(value: &Value, part: ValuePart, element: GpuElement) -> Result<Vec<u32>> {
    match (value, part) {
        (Value::Vector(v), ValuePart::Elements) => vector_words(v, element),
        (Value::List(List::Flat { values, .. }), ValuePart::ListValues) => {
            vector_words(values, element)
        }
        (Value::List(List::Flat { offsets, .. }), ValuePart::ListOffsets) => offsets
            .iter()
            .map(|&o| {
                u32::try_from(o).map_err(|_| {
                    RuntimeError::new(format!("a list of {o} elements is too long for the GPU"))
                })
            })
            .collect(),
        (Value::Enum(e), ValuePart::EnumKeys) => vector_words(&e.domain, element),
        (Value::Enum(e), ValuePart::EnumIndex) => {
            expect_element(element, GpuElement::I64, "an enum's row positions")?;
            Ok(bytemuck::cast_slice(e.index.as_slice()).to_vec())
        }
        (value, part) => Err(RuntimeError::new(format!(
            "a kernel reads the {part:?} of a {} value, which has none",
            value.ty()
        ))),
    }
}

/// The number of elements of `part` of `value` (cells for `ListOffsets`).
pub(crate) fn part_len(value: &Value, part: ValuePart) -> Result<u64> {
    let n = match (value, part) {
        (Value::Vector(v), ValuePart::Elements) => v.len(),
        (Value::Device(d), ValuePart::Elements) => d.len,
        (Value::DeviceList(l), ValuePart::ListValues) => l.values.len,
        (Value::DeviceList(l), ValuePart::ListOffsets) => l.cells,
        (Value::List(List::Flat { values, .. }), ValuePart::ListValues) => values.len(),
        (Value::List(l @ List::Flat { .. }), ValuePart::ListOffsets) => l.len(),
        (Value::Enum(e), ValuePart::EnumKeys) => e.domain.len(),
        (Value::Enum(e), ValuePart::EnumIndex) => e.index.len(),
        (value, part) => {
            return Err(RuntimeError::new(format!(
                "a kernel needs the length of the {part:?} of a {} value, which has none",
                value.ty()
            )))
        }
    };
    Ok(n as u64)
}

fn expect_element(got: GpuElement, want: GpuElement, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(RuntimeError::new(format!(
            "a kernel binds {what} as {}, but they are {} on the GPU",
            got.wgsl(),
            want.wgsl()
        )))
    }
}

fn vector_words(v: &Vector, element: GpuElement) -> Result<Vec<u32>> {
    let want = GpuElement::of_type(&v.ty())
        .ok_or_else(|| RuntimeError::new(format!("{} values have no GPU layout", v.ty())))?;
    expect_element(element, want, &format!("a {} vector", v.ty()))?;
    Ok(match v {
        Vector::Bool(x) => x.iter().map(|&b| u32::from(b)).collect(),
        Vector::Char(x) => x.iter().map(|&c| u32::from(c)).collect(),
        Vector::I8(x) => x.iter().map(|&i| i32::from(i) as u32).collect(),
        Vector::I16(x) => x.iter().map(|&i| i32::from(i) as u32).collect(),
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => bytemuck::cast_slice(x.as_slice()).to_vec(),
        Vector::I64(x) | Vector::Dt(x) => bytemuck::cast_slice(x.as_slice()).to_vec(),
        Vector::F32(x) => bytemuck::cast_slice(x.as_slice()).to_vec(),
        Vector::F64(x) => bytemuck::cast_slice(x.as_slice()).to_vec(),
        Vector::Sym(s) | Vector::Str(s) => s.codes.as_ref().clone(),
        Vector::Complex(_) => {
            return Err(RuntimeError::new("complex values have no GPU layout"));
        }
    })
}

/// A vector of HorseIR type `ty` from `n` elements in `words`; sym/str codes index `dict`.
pub(crate) fn vector_from_words(
    ty: &Type,
    words: &[u32],
    n: usize,
    dict: Option<Arc<StrDict>>,
) -> Result<Vector> {
    let element = GpuElement::of_type(ty)
        .ok_or_else(|| RuntimeError::new(format!("{ty} values have no GPU layout")))?;
    let needed = n * (element.size() as usize / 4);
    let words = words.get(..needed).ok_or_else(|| {
        RuntimeError::new(format!(
            "a kernel output of {n} {ty} elements came back with {} words",
            words.len()
        ))
    })?;
    let i32s = || -> Arc<Vec<i32>> { Arc::new(bytemuck::cast_slice(words).to_vec()) };
    let i64s = || -> Arc<Vec<i64>> { Arc::new(bytemuck::pod_collect_to_vec(words)) };
    Ok(match ty {
        Type::Bool => Vector::Bool(Arc::new(words.iter().map(|&w| w != 0).collect())),
        Type::Char => Vector::Char(Arc::new(words.iter().map(|&w| w as u8).collect())),
        Type::I8 => Vector::I8(Arc::new(words.iter().map(|&w| w as i32 as i8).collect())),
        Type::I16 => Vector::I16(Arc::new(words.iter().map(|&w| w as i32 as i16).collect())),
        Type::I32 => Vector::I32(i32s()),
        Type::Month => Vector::Month(i32s()),
        Type::Date => Vector::Date(i32s()),
        Type::Minute => Vector::Minute(i32s()),
        Type::Second => Vector::Second(i32s()),
        Type::Time => Vector::Time(i32s()),
        Type::I64 => Vector::I64(i64s()),
        Type::Dt => Vector::Dt(i64s()),
        Type::F32 => Vector::F32(Arc::new(bytemuck::cast_slice(words).to_vec())),
        Type::F64 => Vector::F64(Arc::new(bytemuck::pod_collect_to_vec(words))),
        Type::Sym | Type::Str => {
            let dict = dict.ok_or_else(|| {
                RuntimeError::new(format!("a {ty} kernel output has no dictionary"))
            })?;
            let size = dict.strings.len();
            if let Some(bad) = words.iter().find(|&&c| c as usize >= size) {
                return Err(RuntimeError::new(format!(
                    "a kernel wrote string code {bad} into a dictionary of {size} strings"
                )));
            }
            let strings = Strings {
                dict,
                codes: Arc::new(words.to_vec()),
            };
            if *ty == Type::Sym {
                Vector::Sym(strings)
            } else {
                Vector::Str(strings)
            }
        }
        other => {
            return Err(RuntimeError::new(format!(
                "{other} values have no GPU layout"
            )))
        }
    })
}

/// Elements read back from the GPU: 4-byte words, or 8-byte words for i64/dt/f64.
pub(crate) enum Downloaded {
    Words(Vec<u32>),
    Wide(Vec<u64>),
}

/// A vector of HorseIR type `ty` from exactly its `n` downloaded elements, reusing the
/// download's allocation where the layouts agree (a column of hundreds of megabytes is not
/// copied again).
pub(crate) fn vector_from_download(
    ty: &Type,
    data: Downloaded,
    dict: Option<Arc<StrDict>>,
) -> Result<Vector> {
    use bytemuck::allocation::cast_vec;
    Ok(match (ty, data) {
        (Type::I32, Downloaded::Words(w)) => Vector::I32(Arc::new(cast_vec(w))),
        (Type::Month, Downloaded::Words(w)) => Vector::Month(Arc::new(cast_vec(w))),
        (Type::Date, Downloaded::Words(w)) => Vector::Date(Arc::new(cast_vec(w))),
        (Type::Minute, Downloaded::Words(w)) => Vector::Minute(Arc::new(cast_vec(w))),
        (Type::Second, Downloaded::Words(w)) => Vector::Second(Arc::new(cast_vec(w))),
        (Type::Time, Downloaded::Words(w)) => Vector::Time(Arc::new(cast_vec(w))),
        (Type::F32, Downloaded::Words(w)) => Vector::F32(Arc::new(cast_vec(w))),
        (Type::I64, Downloaded::Wide(w)) => Vector::I64(Arc::new(cast_vec(w))),
        (Type::Dt, Downloaded::Wide(w)) => Vector::Dt(Arc::new(cast_vec(w))),
        (Type::F64, Downloaded::Wide(w)) => Vector::F64(Arc::new(cast_vec(w))),
        (ty, Downloaded::Words(w)) => vector_from_words(ty, &w, w.len(), dict)?,
        (ty, Downloaded::Wide(w)) => {
            let n = w.len();
            vector_from_words(ty, bytemuck::cast_slice(&w), n, dict)?
        }
    })
}

/// The dictionary of a sym/str value (a vector, or a list or enum of strings).
pub(crate) fn dictionary_of(value: &Value) -> Option<Arc<StrDict>> {
    let strings = |v: &Vector| match v {
        Vector::Sym(s) | Vector::Str(s) => Some(s.dict.clone()),
        _ => None,
    };
    match value {
        Value::Vector(v) => strings(v),
        Value::Device(d) => d.dict.clone(),
        Value::DeviceList(l) => l.values.dict.clone(),
        Value::List(List::Flat { values, .. }) => strings(values),
        Value::Enum(e) => strings(&e.domain),
        _ => None,
    }
}

/// `value` with its strings re-coded by input `k` of `merge` (a vector, or a list or enum
/// of strings; other values unchanged). A device vector must be read back first.
pub(crate) fn recode(value: &Value, merge: &DictMerge, k: usize) -> Result<Value> {
    let recode_vector = |v: &Vector| -> Result<Vector> {
        Ok(match v {
            Vector::Sym(s) => Vector::Sym(merge.recode(k, s)?),
            Vector::Str(s) => Vector::Str(merge.recode(k, s)?),
            other => other.clone(),
        })
    };
    Ok(match value {
        Value::Vector(v) => Value::Vector(recode_vector(v)?),
        Value::List(List::Flat { values, offsets }) => Value::List(List::Flat {
            values: recode_vector(values)?,
            offsets: offsets.clone(),
        }),
        Value::Enum(e) => Value::Enum(crate::value::Enumeration {
            domain: recode_vector(&e.domain)?,
            index: e.index.clone(),
        }),
        Value::Device(d) if d.dict.is_some() => {
            return Err(RuntimeError::new(
                "re-coding strings needs them on the host (read the device vector back first)",
            ))
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_types_widen_to_words_and_come_back() {
        let v = Value::Vector(Vector::I16(Arc::new(vec![-3, 0, 7])));
        let words = words_of(&v, ValuePart::Elements, GpuElement::I32).unwrap();
        assert_eq!(words, vec![(-3i32) as u32, 0, 7]);
        let back = vector_from_words(&Type::I16, &words, 3, None).unwrap();
        assert_eq!(Value::Vector(back), v);
    }

    #[test]
    fn wide_types_take_two_words() {
        let v = Value::Vector(Vector::F64(Arc::new(vec![1.5, -2.25])));
        let words = words_of(&v, ValuePart::Elements, GpuElement::F64).unwrap();
        assert_eq!(words.len(), 4);
        assert_eq!(
            Value::Vector(vector_from_words(&Type::F64, &words, 2, None).unwrap()),
            v
        );
    }

    #[test]
    fn a_wrong_element_type_is_an_error_not_a_reinterpretation() {
        let v = Value::Vector(Vector::I64(Arc::new(vec![1])));
        assert!(words_of(&v, ValuePart::Elements, GpuElement::I32).is_err());
    }

    #[test]
    fn recoding_into_a_merged_dictionary_keeps_the_strings() {
        let a = Strings::from_strs(&["b", "a", "b"]);
        let b = Strings::from_strs(&["c", "a"]);
        let merge = StrDict::merge(&[&a.dict, &b.dict]);
        let v = recode(&Value::Vector(Vector::Sym(a)), &merge, 0).unwrap();
        let Value::Vector(Vector::Sym(s)) = v else {
            panic!("not sym")
        };
        assert_eq!(s.codes.as_slice(), &[1, 0, 1]);
        assert_eq!(merge.dict.strings.len(), 3);
    }

    #[test]
    fn downloads_become_vectors_without_changing_values() {
        let v = vector_from_download(&Type::F64, Downloaded::Wide(vec![1.5f64.to_bits()]), None)
            .unwrap();
        assert_eq!(v, Vector::F64(Arc::new(vec![1.5])));
        let v = vector_from_download(&Type::Bool, Downloaded::Words(vec![1, 0]), None).unwrap();
        assert_eq!(v, Vector::Bool(Arc::new(vec![true, false])));
        let v = vector_from_download(&Type::Date, Downloaded::Words(vec![7]), None).unwrap();
        assert_eq!(v, Vector::Date(Arc::new(vec![7])));
    }

    #[test]
    fn a_code_outside_the_dictionary_is_an_error() {
        let dict = Strings::from_strs(&["x"]).dict;
        assert!(vector_from_words(&Type::Sym, &[0, 1], 2, Some(dict)).is_err());
    }
}
