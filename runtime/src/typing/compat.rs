//! Whether a value of one type may go where another is declared: the one rule used for
//! assignments, returns and the arguments of user functions.
//!
//! HorseIR programs in the wild (the HorsePower unit tests) assign numeric values across widths
//! (`new1:f32 = @plus(x:i32, y:f64)`) and even vectors into list-typed variables and back
//! (`x2:i32 = @list(x0, x1)`). Those are accepted with a warning; anything else that differs
//! (a `table` into an `i32`, a `sym` into an `i32`) is an error.

use crate::types::Type;

/// How well a value type fits a declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Compat {
    /// The same type, up to `?` (which matches anything and is checked at run time).
    Exact,
    /// Different but convertible: numeric widths, or a list against its cell type.
    Convertible,
    Incompatible,
}

/// How a value of type `value` fits a place declared `declared`.
pub fn compatibility(declared: &Type, value: &Type) -> Compat {
    match (declared, value) {
        (Type::Wildcard, _) | (_, Type::Wildcard) => Compat::Exact,
        (a, b) if a == b => Compat::Exact,
        (a, b) if a.is_real() && b.is_real() => Compat::Convertible,
        (Type::List(a), Type::List(b)) | (Type::Enum(a), Type::Enum(b)) => compatibility(a, b),
        (Type::Dict(ka, va), Type::Dict(kb, vb)) => {
            compatibility(ka, kb).max(compatibility(va, vb))
        }
        // A vector where a list is declared, or a list where a vector is declared: accepted
        // when the cells fit, never exactly.
        (Type::List(cell), other) | (other, Type::List(cell)) if other.is_basic() => {
            match compatibility(cell, other) {
                Compat::Incompatible => Compat::Incompatible,
                _ => Compat::Convertible,
            }
        }
        _ => Compat::Incompatible,
    }
}

/// Whether an assignment converts its value: a numeric value (a vector of a real type) stored
/// in a variable declared with another real type (`x:f32 = @div(a, b)` of an f64 quotient:
/// the type checker warns "it is converted"). Both backends convert it there, so that the
/// variable holds the declared type, which the typed program gives every use of it. (Lists,
/// dictionaries and enums keep their values: a list where a vector is declared, and back, is
/// a container the program picks apart itself.)
pub fn converts_at_assignment(declared: &Type, value: &Type) -> bool {
    declared.is_real() && value.is_real() && declared != value
}

/// The type of the value a variable declared `declared` holds after an assignment of a value
/// of type `value`: the declared type when the assignment converts
/// ([`converts_at_assignment`]), else the value's own.
pub fn assigned_type(declared: &Type, value: &Type) -> Type {
    if converts_at_assignment(declared, value) {
        declared.clone()
    } else {
        value.clone()
    }
}

/// The declared type with each `?` filled in from the value's type where the value knows it:
/// `?` with `i64` gives `i64`, `list<?>` with `list<f64>` gives `list<f64>`.
pub fn infer(declared: &Type, value: &Type) -> Type {
    match (declared, value) {
        (Type::Wildcard, v) => v.clone(),
        (Type::List(d), Type::List(v)) => Type::List(Box::new(infer(d, v))),
        (Type::Enum(d), Type::Enum(v)) => Type::Enum(Box::new(infer(d, v))),
        (Type::Dict(dk, dv), Type::Dict(vk, vv)) => {
            Type::Dict(Box::new(infer(dk, vk)), Box::new(infer(dv, vv)))
        }
        (d, _) => d.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    #[test]
    fn equal_types_and_wildcards_are_exact() {
        assert_eq!(compatibility(&Type::I32, &Type::I32), Compat::Exact);
        assert_eq!(compatibility(&Type::Wildcard, &Type::Table), Compat::Exact);
        assert_eq!(compatibility(&Type::Sym, &Type::Wildcard), Compat::Exact);
        assert_eq!(
            compatibility(&list(Type::Wildcard), &list(Type::F64)),
            Compat::Exact
        );
    }

    #[test]
    fn numeric_widths_convert_with_a_warning() {
        assert_eq!(compatibility(&Type::F32, &Type::F64), Compat::Convertible);
        assert_eq!(compatibility(&Type::I32, &Type::Bool), Compat::Convertible);
        assert_eq!(
            compatibility(&list(Type::I32), &list(Type::I64)),
            Compat::Convertible
        );
    }

    #[test]
    fn a_list_and_its_cell_type_convert_with_a_warning() {
        assert_eq!(
            compatibility(&Type::I32, &list(Type::I64)),
            Compat::Convertible
        );
        assert_eq!(
            compatibility(&Type::I32, &list(Type::I32)),
            Compat::Convertible
        );
        assert_eq!(
            compatibility(&list(Type::I32), &Type::I32),
            Compat::Convertible
        );
        assert_eq!(
            compatibility(&Type::I32, &list(Type::Sym)),
            Compat::Incompatible
        );
    }

    #[test]
    fn different_kinds_of_values_are_incompatible() {
        assert_eq!(
            compatibility(&Type::Table, &Type::I32),
            Compat::Incompatible
        );
        assert_eq!(compatibility(&Type::I32, &Type::Sym), Compat::Incompatible);
        assert_eq!(compatibility(&Type::Date, &Type::I32), Compat::Incompatible);
        assert_eq!(compatibility(&Type::Sym, &Type::Str), Compat::Incompatible);
    }

    #[test]
    fn inference_fills_every_wildcard_the_value_knows() {
        assert_eq!(infer(&Type::Wildcard, &Type::I64), Type::I64);
        assert_eq!(
            infer(&list(Type::Wildcard), &list(Type::F64)),
            list(Type::F64)
        );
        assert_eq!(infer(&Type::I32, &Type::I64), Type::I32);
        assert_eq!(
            infer(&list(Type::Wildcard), &Type::I64),
            list(Type::Wildcard)
        );
    }
}
