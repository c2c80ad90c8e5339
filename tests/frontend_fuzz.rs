//! Property tests of the front end: on mangled programs, `parse` and the whole front end
//! (parse, analysis, lowering to a plan) never panic, and always answer with either a program
//! or at least one error rendered as `file:line:col: error: …`.
//!
//! Seeds are the conformance programs (or a few embedded ones when conformance is missing);
//! mutations truncate, delete, duplicate and insert byte ranges, inject junk and random
//! unicode, and swap type names. Runs 500 cases by default; `PROPTEST_CASES` raises it.

use std::path::PathBuf;
use std::sync::OnceLock;

use horsec::diag::has_errors;
use horsec::driver::{compile, Stage};
use horsec::syntax::parse;
use proptest::prelude::*;

const EMBEDDED: [&str; 3] = [
    "module m {\n  import Builtin.*;\n  def main() : i32 {\n    x:i32 = @plus(1:i32, (2,3):i32);\n    \
     if (x) { y:? = @each(@sum, x); } else break;\n    return x;\n  }\n}\n",
    "module d {\n  global g:date = (2010-09-01, 1998-12-31):date;\n  def f(a:list<?>) : ?, i64 {\n    \
     var b, c:f64;\n    t:sym = check_cast(@column_value(a, `\"x y\":sym), sym);\n    \
     while (c) { repeat (3:i32) { continue; } }\n    return a, 1:i64;\n  }\n}\n",
    "module t {\n  def main() {\n    a:? = (20:15, 01:59):minute;\n    b:? = 11:22:33.001:time;\n    \
     c:? = 2019-01-02T17:10:21.001:dt;\n    d:? = 'x':char;\n    e:? = \"s\\n\":str;\n    \
     f:? = 1+2i:complex;\n    x:i32, _ = @g();\n  }\n}\n",
];

/// The seed programs: every conformance `.hir`, else the embedded ones.
fn seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = std::env::var_os("HORSEC_CONFORMANCE").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance"),
            PathBuf::from,
        );
        let mut found = Vec::new();
        for sub in [
            "tpch/queries",
            "horsepower-unit/pass",
            "horsepower-unit/fail",
        ] {
            let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
                continue;
            };
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            found.extend(
                paths
                    .iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "hir"))
                    .filter_map(|p| std::fs::read_to_string(p).ok()),
            );
        }
        if found.is_empty() {
            eprintln!("SKIPPED: conformance not found; fuzzing the embedded programs only");
            found = EMBEDDED.iter().map(|s| s.to_string()).collect();
        }
        found
    })
}

/// One edit to a program, with positions as fractions of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Truncate(f64),
    Delete(f64, usize),
    Duplicate(f64, usize),
    Insert(f64, String),
    SwapType(usize, usize),
    /// Misspells the n-th name (`@sum` → `@sumx`, `t12` → `t12x`): an unknown name.
    Misspell(usize),
}

const TYPE_NAMES: [&str; 12] = [
    "i32",
    "i64",
    "f64",
    "bool",
    "sym",
    "str",
    "date",
    "list<?>",
    "?",
    "enum<i32>",
    "dict<i8,?>",
    "table",
];

fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[-(){};:,@.*?<>=`'\"/\\\\+]{1,4}",
        "[0-9:.T-]{1,12}",
        "\\PC{1,6}",
        proptest::collection::vec(any::<u8>(), 1..8)
            .prop_map(|bytes| bytes.into_iter().map(char::from).collect()),
        Just("/*".to_string()),
        Just("{".repeat(300)),
        Just("99999999999999999999999".to_string()),
        Just("if (x) ".to_string()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64, 1..40usize).prop_map(|(at, len)| Mutation::Delete(at, len)),
        (0.0..1.0f64, 1..40usize).prop_map(|(at, len)| Mutation::Duplicate(at, len)),
        (0.0..1.0f64, junk()).prop_map(|(at, text)| Mutation::Insert(at, text)),
        (0..TYPE_NAMES.len(), 0..TYPE_NAMES.len()).prop_map(|(a, b)| Mutation::SwapType(a, b)),
        (0..400usize).prop_map(Mutation::Misspell),
    ]
}

/// The largest char boundary at or below `fraction` of the text.
fn boundary(text: &str, fraction: f64) -> usize {
    let mut at = ((text.len() as f64) * fraction) as usize;
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn range(text: &str, fraction: f64, len: usize) -> (usize, usize) {
    let start = boundary(text, fraction);
    let mut end = (start + len).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

fn apply(text: &mut String, mutation: &Mutation) {
    match mutation {
        Mutation::Truncate(at) => {
            let at = boundary(text, *at);
            text.truncate(at);
        }
        Mutation::Delete(at, len) => {
            let (start, end) = range(text, *at, *len);
            text.replace_range(start..end, "");
        }
        Mutation::Duplicate(at, len) => {
            let (start, end) = range(text, *at, *len);
            let copy = text[start..end].to_string();
            text.insert_str(end, &copy);
        }
        Mutation::Insert(at, junk) => {
            let at = boundary(text, *at);
            text.insert_str(at, junk);
        }
        Mutation::SwapType(from, to) => {
            *text = text.replacen(TYPE_NAMES[*from], TYPE_NAMES[*to], 1);
        }
        Mutation::Misspell(n) => {
            // End of the n-th identifier (wrapping around), where an `x` makes it unknown.
            let ends: Vec<usize> = text
                .char_indices()
                .zip(text.chars().skip(1).chain(std::iter::once(' ')))
                .filter(|&((_, c), next)| {
                    c.is_ascii_alphanumeric() && !next.is_ascii_alphanumeric() && next != '_'
                })
                .map(|((i, c), _)| i + c.len_utf8())
                .collect();
            if !ends.is_empty() {
                text.insert(ends[n % ends.len()], 'x');
            }
        }
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mangled_programs_never_panic(
        seed in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed.index(seeds.len())].clone();
        for m in &mutations {
            apply(&mut text, m);
        }
        let (program, diags) = parse(&text);
        match program {
            Some(_) => prop_assert!(!has_errors(&diags), "a program with errors: {diags:?}"),
            None => prop_assert!(has_errors(&diags), "no program and no error for {text:?}"),
        }
        for d in &diags {
            prop_assert!(
                d.span.start <= d.span.end && d.span.end <= text.len(),
                "span {:?} outside the source ({} bytes): {}",
                d.span,
                text.len(),
                d.message
            );
        }
    }

    #[test]
    fn the_front_end_never_panics_and_locates_its_errors(
        seed in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed.index(seeds.len())].clone();
        for m in &mutations {
            apply(&mut text, m);
        }
        let c = compile("fuzz.hir", &text, Stage::Plan);
        if c.failed() {
            let rendered = c.render_diagnostics();
            let located = rendered.lines().any(|l| {
                l.strip_prefix("fuzz.hir:").is_some_and(|rest| {
                    let mut parts = rest.splitn(3, ':');
                    let (line, col) = (parts.next(), parts.next());
                    line.is_some_and(|n| n.parse::<usize>().is_ok())
                        && col.is_some_and(|n| n.parse::<usize>().is_ok())
                        && parts.next().is_some_and(|m| m.starts_with(" error: "))
                })
            });
            prop_assert!(located, "an error without a location:\n{rendered}");
        } else {
            prop_assert!(c.plan.is_some(), "no error and no plan for {text:?}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let (program, diags) = parse(&text);
        prop_assert!(program.is_some() || has_errors(&diags));
        for d in &diags {
            prop_assert!(d.span.end <= text.len());
        }
    }
}
