//! The rules as a table: every builtin with the vector argument types it accepts and the type
//! of its result, rendered as the generated part of `runtime/BUILTINS.md`. A test keeps the
//! file equal to the rules (`HORSEC_UPDATE_BUILTINS_MD=1` rewrites it).

use std::collections::BTreeMap;

use crate::builtin::Builtin;
use crate::types::Type;

use super::rules::{arity, Arity};
use super::vector_result;

/// Every vector type, in promotion order then the others.
pub const VECTOR_TYPES: [Type; 17] = [
    Type::Bool,
    Type::I8,
    Type::I16,
    Type::I32,
    Type::I64,
    Type::F32,
    Type::F64,
    Type::Complex,
    Type::Char,
    Type::Sym,
    Type::Str,
    Type::Month,
    Type::Date,
    Type::Minute,
    Type::Second,
    Type::Time,
    Type::Dt,
];

fn names(types: &[Type]) -> String {
    if types.len() == VECTOR_TYPES.len() {
        return "any".to_string();
    }
    types
        .iter()
        .map(Type::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The accepted argument types of `b` (vectors only; `sym` for the third argument of the
/// builtins that take a unit) grouped by result: one line per result type and first argument.
fn signature_lines(b: Builtin) -> Vec<String> {
    let n = match arity(b) {
        Arity::Exactly(n) => n,
        Arity::AtLeast(_) => return Vec::new(),
    };
    let mut lines = Vec::new();
    match n {
        1 => {
            let mut by_result: BTreeMap<String, Vec<Type>> = BTreeMap::new();
            for t in &VECTOR_TYPES {
                if let Some(r) = vector_result(b, std::slice::from_ref(t)) {
                    by_result.entry(r.to_string()).or_default().push(t.clone());
                }
            }
            for (result, args) in by_result {
                lines.push(format!("({}) → {result}", names(&args)));
            }
        }
        2 | 3 => {
            let third: &[Type] = if n == 3 { &[Type::Sym] } else { &[] };
            // result → first argument → second arguments
            let mut by_result: BTreeMap<String, Vec<(Type, Vec<Type>)>> = BTreeMap::new();
            for a in &VECTOR_TYPES {
                let mut seconds: BTreeMap<String, Vec<Type>> = BTreeMap::new();
                for c in &VECTOR_TYPES {
                    let mut args = vec![a.clone(), c.clone()];
                    args.extend_from_slice(third);
                    if let Some(r) = vector_result(b, &args) {
                        seconds.entry(r.to_string()).or_default().push(c.clone());
                    }
                }
                for (result, cs) in seconds {
                    by_result.entry(result).or_default().push((a.clone(), cs));
                }
            }
            for (result, rows) in by_result {
                // First arguments with the same second arguments share a line.
                let mut merged: Vec<(Vec<Type>, Vec<Type>)> = Vec::new();
                for (a, cs) in rows {
                    match merged.iter_mut().find(|(_, other)| *other == cs) {
                        Some((firsts, _)) => firsts.push(a),
                        None => merged.push((vec![a], cs)),
                    }
                }
                for (firsts, seconds) in merged {
                    let unit = if n == 3 { ", sym" } else { "" };
                    lines.push(format!(
                        "({}) × ({}){unit} → {result}",
                        names(&firsts),
                        names(&seconds)
                    ));
                }
            }
        }
        _ => {}
    }
    lines
}

/// The generated table: one row per builtin that takes and gives vectors.
pub fn vector_builtins_markdown() -> String {
    let mut out = String::from("| builtin | arguments → result |\n|---|---|\n");
    for &b in Builtin::ALL {
        let lines = signature_lines(b);
        if lines.is_empty() {
            continue;
        }
        out += &format!("| `@{b}` | {} |\n", lines.join("<br>"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "<!-- BEGIN GENERATED: vector builtins -->\n";
    const END: &str = "<!-- END GENERATED -->";

    /// `runtime/BUILTINS.md` shows exactly the rules: regenerate it with
    /// `HORSEC_UPDATE_BUILTINS_MD=1 cargo test -p horsec-runtime --lib builtins_md`.
    #[test]
    fn builtins_md_shows_the_rules() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("BUILTINS.md");
        let text = std::fs::read_to_string(&path).expect("runtime/BUILTINS.md exists");
        let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) else {
            panic!("BUILTINS.md lacks the generated-table markers");
        };
        let generated = vector_builtins_markdown();
        let current = &text[start + BEGIN.len()..end];
        if current != generated {
            if std::env::var_os("HORSEC_UPDATE_BUILTINS_MD").is_some() {
                let updated = format!("{}{BEGIN}{generated}{}", &text[..start], &text[end..]);
                std::fs::write(&path, updated).expect("BUILTINS.md is writable");
            } else {
                panic!(
                    "runtime/BUILTINS.md is out of date with the type rules; run \
                     HORSEC_UPDATE_BUILTINS_MD=1 cargo test -p horsec-runtime --lib builtins_md"
                );
            }
        }
    }

    #[test]
    fn the_table_groups_arguments_by_result() {
        let lines = signature_lines(Builtin::Sqrt);
        assert_eq!(lines, ["(bool i8 i16 i32 f32) → f32", "(i64 f64) → f64"]);
    }
}
