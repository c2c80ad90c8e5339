//! HorseIR types, shared by the compiler (type checking) and the runtime (values, plans).

use std::fmt;

/// A HorseIR type as written in source (`i32`, `list<?>`, `dict<sym,i64>`, …).
///
/// `Wildcard` is `?`: in source it asks the compiler to infer the type; after semantic
/// analysis it only remains where a type is truly unknown statically (a `list<?>` of
/// mixed cells, or the result of `@column_value` before `check_cast`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Wildcard,
    Bool,
    Char,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    Complex,
    Sym,
    Str,
    Month,
    Date,
    Minute,
    Second,
    Time,
    Dt,
    List(Box<Type>),
    Dict(Box<Type>, Box<Type>),
    Enum(Box<Type>),
    Table,
    KTable,
    Func,
}

impl Type {
    /// The basic (vector) type named `name`, if it is one of the builtin type names.
    pub fn from_basic_name(name: &str) -> Option<Type> {
        Some(match name {
            "bool" => Type::Bool,
            "char" => Type::Char,
            "i8" => Type::I8,
            "i16" => Type::I16,
            "i32" => Type::I32,
            "i64" => Type::I64,
            "f32" => Type::F32,
            "f64" => Type::F64,
            "complex" => Type::Complex,
            "sym" => Type::Sym,
            "str" => Type::Str,
            "month" => Type::Month,
            "date" => Type::Date,
            "minute" => Type::Minute,
            "second" => Type::Second,
            "time" => Type::Time,
            "dt" => Type::Dt,
            "table" => Type::Table,
            "ktable" => Type::KTable,
            "func" => Type::Func,
            _ => return None,
        })
    }

    /// A vector type: every value of it is a flat typed array.
    pub fn is_basic(&self) -> bool {
        !matches!(
            self,
            Type::Wildcard
                | Type::List(_)
                | Type::Dict(..)
                | Type::Enum(_)
                | Type::Table
                | Type::KTable
                | Type::Func
        )
    }

    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            Type::Bool | Type::I8 | Type::I16 | Type::I32 | Type::I64
        )
    }

    pub fn is_float(&self) -> bool {
        matches!(self, Type::F32 | Type::F64)
    }

    /// Integers (bool included) and floats: the types of numeric promotion.
    pub fn is_real(&self) -> bool {
        self.is_integer() || self.is_float()
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Type::Sym | Type::Str | Type::Char)
    }

    pub fn is_temporal(&self) -> bool {
        matches!(
            self,
            Type::Month | Type::Date | Type::Minute | Type::Second | Type::Time | Type::Dt
        )
    }

    /// Rank in the numeric promotion order bool < i8 < i16 < i32 < i64 < f32 < f64.
    pub fn numeric_rank(&self) -> Option<u8> {
        Some(match self {
            Type::Bool => 0,
            Type::I8 => 1,
            Type::I16 => 2,
            Type::I32 => 3,
            Type::I64 => 4,
            Type::F32 => 5,
            Type::F64 => 6,
            _ => return None,
        })
    }

    /// The larger of two real types under numeric promotion.
    pub fn promote(a: &Type, b: &Type) -> Option<Type> {
        let (ra, rb) = (a.numeric_rank()?, b.numeric_rank()?);
        Some(if ra >= rb { a.clone() } else { b.clone() })
    }

    /// True when the type still contains a `?` somewhere.
    pub fn has_wildcard(&self) -> bool {
        match self {
            Type::Wildcard => true,
            Type::List(t) | Type::Enum(t) => t.has_wildcard(),
            Type::Dict(k, v) => k.has_wildcard() || v.has_wildcard(),
            _ => false,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Type::Wildcard => "?",
            Type::Bool => "bool",
            Type::Char => "char",
            Type::I8 => "i8",
            Type::I16 => "i16",
            Type::I32 => "i32",
            Type::I64 => "i64",
            Type::F32 => "f32",
            Type::F64 => "f64",
            Type::Complex => "complex",
            Type::Sym => "sym",
            Type::Str => "str",
            Type::Month => "month",
            Type::Date => "date",
            Type::Minute => "minute",
            Type::Second => "second",
            Type::Time => "time",
            Type::Dt => "dt",
            Type::Table => "table",
            Type::KTable => "ktable",
            Type::Func => "func",
            Type::List(t) => return write!(f, "list<{t}>"),
            Type::Dict(k, v) => return write!(f, "dict<{k},{v}>"),
            Type::Enum(t) => return write!(f, "enum<{t}>"),
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_compound_types_as_horseir() {
        let t = Type::Dict(
            Box::new(Type::I64),
            Box::new(Type::List(Box::new(Type::I64))),
        );
        assert_eq!(t.to_string(), "dict<i64,list<i64>>");
        assert_eq!(Type::Enum(Box::new(Type::I32)).to_string(), "enum<i32>");
    }

    #[test]
    fn promotion_takes_the_larger_type() {
        assert_eq!(Type::promote(&Type::I32, &Type::F64), Some(Type::F64));
        assert_eq!(Type::promote(&Type::Bool, &Type::I16), Some(Type::I16));
        assert_eq!(Type::promote(&Type::Sym, &Type::I16), None);
    }
}
