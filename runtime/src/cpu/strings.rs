//! String builtins: `@like` and `@sub_string`. Both run once per distinct string of the
//! dictionary and are then applied to the rows through their codes, which beats per-row work
//! whenever a column repeats values.

use rayon::prelude::*;

use super::Args;
use crate::bail;
use crate::error::Result;
use crate::value::{Strings, Value, Vector};

/// SQL `LIKE`: `%` matches any run of characters (possibly empty), `_` exactly one; every
/// other character matches itself. Backtracks only to the last `%`, so it runs in
/// O(len(text) · len(pattern)) at worst.
fn like_match(text: &[char], pattern: &[char]) -> bool {
    let (mut t, mut p) = (0, 0);
    // Position after the last `%` seen and the text position it is currently matched to.
    let mut resume: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('%') => {
                resume = Some((p + 1, t));
                p += 1;
            }
            Some(&c) if c == '_' || c == text[t] => {
                t += 1;
                p += 1;
            }
            _ => match resume {
                Some((after, from)) => {
                    p = after;
                    t = from + 1;
                    resume = Some((after, from + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '%')
}

fn strings_arg<'a>(v: &'a Vector, what: &str) -> Result<&'a Strings> {
    v.as_strings().ok_or_else(|| {
        crate::error::RuntimeError::new(format!("{what} must be sym or str, got {}", v.ty()))
    })
}

/// `@like(s, pattern)`: bool per string of `s`.
pub(crate) fn like(s: &Vector, pattern: &Vector) -> Result<Value> {
    let strings = strings_arg(s, "the strings")?;
    let pattern = strings_arg(pattern, "the pattern")?;
    if pattern.len() != 1 {
        bail!("expected one pattern, got {}", pattern.len());
    }
    let pattern: Vec<char> = pattern.get(0).chars().collect();
    let per_entry: Vec<bool> = strings
        .dict
        .strings
        .par_iter()
        .map_init(Vec::new, |text: &mut Vec<char>, entry| {
            text.clear();
            text.extend(entry.chars());
            like_match(text, &pattern)
        })
        .collect();
    let matched = gather_bools(&per_entry, &strings.codes)?;
    Ok(Value::from_bools(matched))
}

fn gather_bools(per_entry: &[bool], codes: &[u32]) -> Result<Vec<bool>> {
    let mut out = Vec::with_capacity(codes.len());
    for &c in codes {
        match per_entry.get(c as usize) {
            Some(&m) => out.push(m),
            None => bail!("string code {c} outside its dictionary"),
        }
    }
    Ok(out)
}

/// `@sub_string(s, (pos, len))` or `@sub_string(s, pos, len)`: `len` characters from the
/// 1-based position `pos` of each string (clipped to the string, as SQL `SUBSTRING`).
pub(crate) fn sub_string(args: &Args<'_, '_>) -> Result<Value> {
    let (pos, len) = match args.len() {
        2 => {
            let range = args.vector(1)?;
            match (range.len(), range.integer_at(0), range.integer_at(1)) {
                (2, Some(p), Some(l)) => (p, l),
                _ => bail!(
                    "expected (position, length) as two integers, got {} element(s) of {}",
                    range.len(),
                    range.ty()
                ),
            }
        }
        3 => {
            let (p, l) = (args.vector(1)?, args.vector(2)?);
            match (p.len(), p.integer_at(0), l.len(), l.integer_at(0)) {
                (1, Some(p), 1, Some(l)) => (p, l),
                _ => bail!("expected an integer position and an integer length"),
            }
        }
        n => bail!("takes 2 or 3 arguments, got {n}"),
    };
    if len < 0 {
        bail!("negative length {len}");
    }
    let s = args.vector(0)?;
    let strings = strings_arg(&s, "the strings")?;
    let start = pos.saturating_sub(1);
    let end = start.saturating_add(len);
    let per_entry: Vec<String> = strings
        .dict
        .strings
        .iter()
        .map(|entry| {
            let from = start.max(0) as usize;
            let to = end.max(0) as usize;
            entry
                .chars()
                .skip(from)
                .take(to.saturating_sub(from))
                .collect()
        })
        .collect();
    let result = strings.map_dictionary(per_entry)?;
    Ok(Value::Vector(match &*s {
        Vector::Sym(_) => Vector::Sym(result),
        _ => Vector::Str(result),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::like_match;
    use crate::builtin::Builtin as B;

    fn matches(text: &str, pattern: &str) -> bool {
        like_match(
            &text.chars().collect::<Vec<_>>(),
            &pattern.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn like_patterns() {
        assert!(matches("special requests", "%special%requests%"));
        assert!(matches("xspecialyrequestsz", "%special%requests%"));
        assert!(!matches("requests special", "%special%requests%"));
        assert!(matches("forest green", "forest%"));
        assert!(matches("LARGE BRASS", "%BRASS"));
        assert!(!matches("BRASS PLATED", "%BRASS"));
        assert!(matches("abc", "a_c"));
        assert!(!matches("abbc", "a_c"));
        assert!(matches("", "%"));
        assert!(!matches("", "_"));
        assert!(matches("aaa", "%a%a"));
    }

    #[test]
    fn like_runs_per_dictionary_entry_and_gathers() {
        let s = syms(&["PROMO BRUSHED", "STANDARD", "PROMO PLATED", "STANDARD"]);
        assert_eq!(
            run(B::Like, &[s.clone(), syms(&["PROMO%"])]).unwrap(),
            bools(&[1, 0, 1, 0])
        );
        assert_eq!(
            run(B::Like, &[s, strs(&["%D"])]).unwrap(),
            bools(&[1, 1, 1, 1])
        );
        assert!(run(B::Like, &[i64s(&[1]), syms(&["%"])]).is_err());
    }

    #[test]
    fn sub_string_is_one_based_and_clipped() {
        let phones = syms(&["13-715-945", "31-101-672", "1"]);
        let out = run(B::SubString, &[phones.clone(), i32s(&[1, 2])]).unwrap();
        assert_eq!(texts(&out), ["13", "31", "1"]);
        let out = run(B::SubString, &[phones.clone(), i32s(&[4]), i32s(&[3])]).unwrap();
        assert_eq!(texts(&out), ["715", "101", ""]);
        assert!(run(B::SubString, &[phones.clone(), i32s(&[1])]).is_err());
        assert!(run(B::SubString, &[phones, i32s(&[1, -1])]).is_err());
    }
}
