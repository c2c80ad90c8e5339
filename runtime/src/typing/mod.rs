//! The one table of builtin types, shared by the compiler and both backends.
//!
//! [`rules`] decides, for every builtin, which argument types it accepts and the types of its
//! results; [`compat`] decides where a value of one type may go where another is declared.
//! Semantic analysis (`horsec::sema`) types programs with them; the CPU backend gives every
//! result the type [`vector_result`] names (see `cpu::call_builtin`), and the GPU code
//! generator lays buffers out from the types of the typed program, so the three cannot
//! drift apart. `runtime/BUILTINS.md` lists every builtin's argument and result types.

pub mod compat;
pub mod rules;
pub mod table;

use crate::builtin::Builtin;
use crate::types::Type;

use rules::{builtin_result, ArgType};

/// The type of the result of `builtin` applied to vectors of types `args`, when the rules
/// accept them and give exactly one vector type; `None` otherwise (a rule error, several
/// results, or a result that is not a vector, such as a list or a table).
pub fn vector_result(builtin: Builtin, args: &[Type]) -> Option<Type> {
    let args: Vec<ArgType> = args.iter().cloned().map(ArgType::Value).collect();
    match builtin_result(builtin, &args) {
        Ok(types) => match types.as_slice() {
            [t] if t.is_basic() => Some(t.clone()),
            _ => None,
        },
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_results_come_from_the_rules() {
        assert_eq!(
            vector_result(Builtin::DateYear, &[Type::Date]),
            Some(Type::I16)
        );
        assert_eq!(
            vector_result(Builtin::Minus, &[Type::Date, Type::Date]),
            Some(Type::I32)
        );
        assert_eq!(vector_result(Builtin::Sqrt, &[Type::I32]), Some(Type::F32));
        assert_eq!(vector_result(Builtin::Sqrt, &[Type::Sym]), None);
        assert_eq!(vector_result(Builtin::ToList, &[Type::I64]), None);
    }
}
