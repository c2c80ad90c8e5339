//! Inputs a kernel can read coded: a host vector with few distinct elements (TPC-H's
//! quantities, discounts, taxes, flags and statuses) is bound as a byte per element and a
//! dictionary of its distinct elements (`ValuePart::Coded`), which the engine makes where it
//! can, so that a kernel streaming the column reads a quarter or an eighth of its bytes.
//!
//! The kernel reads such an input only through a function that decides on a
//! pipeline-overridable constant which binding holds it: the engine sets the constant when it
//! binds the input coded, and the shader compiler drops the other branch.
//!
//! Measured on the H200 (TPC-H SF 1): q6's kernel took 40 µs of GPU time reading its
//! quantities and discounts as f64, 33 reading them coded, and a warm run 0.070-0.071 ms
//! against 0.063-0.064 (a run's median, three processes each). Grouped kernels read their
//! inputs as elements (see `grouped`).

use super::*;
use crate::outline::MAX_STORAGE_BINDINGS;
use horsec_runtime::kernel::{coded_override, CODED_DICTIONARY};

/// How a kernel reads its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InputReads {
    /// Coded where the engine has the codes (see the module docs).
    CodedWherePossible,
    /// As their elements only.
    Elements,
}

impl Generator<'_> {
    /// Gives each input the kernel reads by index a [`ValuePart::Coded`] binding, while the
    /// kernel stays within [`MAX_STORAGE_BINDINGS`]; routes every read of it in `text` (the
    /// module's functions) through its read function, and returns the declarations of the
    /// bindings, constants and functions.
    pub(super) fn coded_inputs(&mut self, text: &mut String) -> String {
        let candidates: Vec<(Slot, String, GpuElement)> = self
            .bindings
            .iter()
            .filter_map(|b| match b.buffer {
                BufferRef::Input {
                    slot,
                    part: ValuePart::Elements,
                } => Some((slot, b.name.clone(), b.element)),
                _ => None,
            })
            .collect();
        let mut declarations = String::new();
        for (slot, name, element) in candidates {
            if self.bindings.len() >= MAX_STORAGE_BINDINGS {
                break;
            }
            let reader = format!("read_{name}");
            if !route_reads(text, &name, &reader) {
                continue;
            }
            let coded = format!("{name}_coded");
            self.bindings.push(Binding {
                group: 0,
                binding: self.bindings.len() as u32 + 1,
                name: coded.clone(),
                buffer: BufferRef::Input {
                    slot,
                    part: ValuePart::Coded,
                },
                element: GpuElement::U32,
                access: Access::Read,
            });
            declarations += &read_function(&name, &coded, &reader, element);
        }
        declarations
    }
}

/// The declarations of one coded input: its binding's override, and its read function.
fn read_function(name: &str, coded: &str, reader: &str, element: GpuElement) -> String {
    let words = element.size() / 4;
    let dictionary_words = CODED_DICTIONARY as u64 * words;
    let in_use = coded_override(coded);
    let ty = element.wgsl();
    let decoded = match element {
        GpuElement::U32 => format!("{coded}[code]"),
        GpuElement::I32 | GpuElement::F32 => format!("bitcast<{ty}>({coded}[code])"),
        // Two words, low first, as the elements' own storage.
        _ => format!(
            "bitcast<{ty}>(u64({coded}[2u * code]) | (u64({coded}[2u * code + 1u]) << 32u))"
        ),
    };
    format!(
        "// `{name}` as the engine bound it: its elements, or (`{in_use}`) a byte code per
// element after a dictionary of {CODED_DICTIONARY} elements, four codes to a word.
override {in_use}: bool = false;

fn {reader}(i: u32) -> {ty} {{
    if {in_use} {{
        let code = ({coded}[{dictionary_words}u + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
        return {decoded};
    }}
    return {name}[i];
}}

"
    )
}

/// Rewrites every `name[index]` in `text` as `reader(u32(index))`; false when there is none
/// (the kernel binds the input only to pass it on, or reads it some other way).
fn route_reads(text: &mut String, name: &str, reader: &str) -> bool {
    let pattern = format!("{name}[");
    let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text.as_str();
    let mut found = false;
    while let Some(at) = rest.find(&pattern) {
        let (before, from) = rest.split_at(at);
        out += before;
        if before.chars().next_back().is_some_and(identifier) {
            // Another name ending in this one (`xin_t5[`).
            out += &pattern;
            rest = &from[pattern.len()..];
            continue;
        }
        let inner = &from[pattern.len()..];
        let mut depth = 1usize;
        let end = inner.char_indices().find_map(|(k, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(k)
        });
        let Some(end) = end else {
            // Unbalanced: left as it is (the module then fails to validate, loudly).
            out += from;
            rest = "";
            break;
        };
        out += reader;
        out += "(u32(";
        out += &inner[..end];
        out += "))";
        rest = &inner[end + 1..];
        found = true;
    }
    out += rest;
    if found {
        *text = out;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::route_reads;

    #[test]
    fn reads_of_an_input_go_through_its_read_function_and_nothing_else_does() {
        let mut text =
            "a = in_t5[min(i, n[0] - 1u)]; b = xin_t5[i]; c = in_t50[i]; d = in_t5[j];".to_string();
        assert!(route_reads(&mut text, "in_t5", "read_in_t5"));
        assert_eq!(
            text,
            "a = read_in_t5(u32(min(i, n[0] - 1u))); b = xin_t5[i]; c = in_t50[i]; d = read_in_t5(u32(j));"
        );
    }

    #[test]
    fn an_input_the_kernel_never_indexes_is_not_routed() {
        let mut text = "let n = arrayLength(&in_t5);".to_string();
        assert!(!route_reads(&mut text, "in_t5", "read_in_t5"));
        assert_eq!(text, "let n = arrayLength(&in_t5);");
    }
}
