//! The generated HorseIR text: nested calls flattened into one call per statement.

use super::*;

/// Rewrites nested calls (`@f(@g(x))`, convenient to generate) into one call per statement,
/// as HorseIR requires: each inner call becomes a temporary `hN` declared just before.
pub(super) fn flatten_calls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut next = 0usize;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(eq) = trimmed.find(" = @") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (target, rest) = trimmed.split_at(eq + 3);
        let mut expr = rest.trim_end_matches(';').to_string();
        while let Some((start, end)) = innermost_nested_call(&expr) {
            next += 1;
            let name = format!("h{next}");
            let call = &expr[start..end];
            let _ = writeln!(out, "{indent}{name}:{} = {call};", result_type(call));
            expr.replace_range(start..end, &name);
        }
        let _ = writeln!(out, "{indent}{target}{expr};");
    }
    out
}

/// The span of a call nested in another call's arguments that itself has no nested call.
pub(super) fn innermost_nested_call(expr: &str) -> Option<(usize, usize)> {
    let bytes = expr.as_bytes();
    let mut best = None;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => i += 1,
            b'@' if !in_string && i > 0 => best = Some(i),
            b')' if !in_string => {
                if let Some(start) = best {
                    return Some((start, i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The HorseIR type of a generated call's result (the calls the lowering nests).
pub(super) fn result_type(call: &str) -> &'static str {
    let name = call[1..].split('(').next().unwrap_or("");
    match name {
        "len" | "unique" | "range" | "index_of" | "append" | "minus" => "i64",
        "list" | "tuple_unique" | "tuple_diff" | "tuple_merge" | "sorted_join" | "join_unique"
        | "multiway_join" => "list<i64>",
        "multiway_count" => "i64",
        "eq" | "neq" | "lt" | "leq" | "gt" | "geq" | "and" | "or" | "not" | "member" => "bool",
        _ => "?",
    }
}
