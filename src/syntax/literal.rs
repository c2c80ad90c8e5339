//! Literal conversion: the text of each literal element is checked against the literal's type
//! suffix and converted into [`LiteralValue`] in the encoding `ast.rs` documents.
//!
//! Rules: integers fit any integer type (out of range of i8/i16/i32 is a warning and wraps as
//! two's complement; beyond i64 is an error), and any float or complex type; `bool` takes only
//! 0 and 1; floats fit f32/f64/complex; every other element kind fits only its own type
//! (`'a'` char, `"a"` str, `` `a `` sym, dates and times their type). Date and time fields are
//! range-checked (month 00, day 32, 25:00 are errors).

use horsec_runtime::temporal::{days_from_civil, days_in_month, month_code};
use horsec_runtime::types::Type;

use super::ast::{Literal, LiteralValue, Span, TypeExpr};
use super::lexer::Tok;
use crate::diag::Diagnostic;

/// One element of a literal as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawElem<'s> {
    pub tok: Tok<'s>,
    pub span: Span,
}

/// Converts the elements of `elems:ty` into a [`Literal`]. Problems go to `diags`; the
/// elements that fail are left out, so the result is only meaningful without errors.
pub fn convert(
    elems: &[RawElem<'_>],
    ty: TypeExpr,
    parenthesized: bool,
    span: Span,
    diags: &mut Vec<Diagnostic>,
) -> Literal {
    let mut values = Vec::with_capacity(elems.len());
    if !ty.ty.is_basic() {
        diags.push(Diagnostic::error(
            ty.span,
            format!(
                "a literal cannot have type {}: literals are vectors of a basic type",
                ty.ty
            ),
        ));
    } else {
        // A malformed element was reported by the lexer already.
        for elem in elems.iter().filter(|e| e.tok != Tok::BadLiteral) {
            match convert_elem(elem, &ty.ty, diags) {
                Ok(value) => values.push(value),
                Err(message) => diags.push(Diagnostic::error(elem.span, message)),
            }
        }
    }
    Literal {
        values,
        ty,
        parenthesized,
        span,
    }
}

/// The diagnostic for a literal written without its `:type` suffix.
pub fn untyped(elems: &[RawElem<'_>], span: Span) -> Diagnostic {
    let example = match elems.first().map(|e| e.tok) {
        Some(tok) if elems.len() == 1 => {
            let ty = natural_type(&tok).unwrap_or("T");
            format!("`{tok}:{ty}`")
        }
        Some(tok) => format!("`(…):{}`", natural_type(&tok).unwrap_or("T")),
        None => "`():i64`".to_string(),
    };
    Diagnostic::error(
        span,
        format!("literal has no type: a literal needs a type suffix, as in {example}"),
    )
}

/// The type an element has on its own, for messages.
fn natural_type(tok: &Tok<'_>) -> Option<&'static str> {
    Some(match tok {
        Tok::Int(_) => "i64",
        Tok::Float(_) => "f64",
        Tok::Complex(_) => "complex",
        Tok::Char(_) => "char",
        Tok::Str(_) => "str",
        Tok::Sym(_) => "sym",
        Tok::Date(_) => "date",
        Tok::Month(_) => "month",
        Tok::Dt(_) => "dt",
        Tok::Minute(_) => "minute",
        Tok::Second(_) => "second",
        Tok::Time(_) => "time",
        _ => return None,
    })
}

fn convert_elem(
    elem: &RawElem<'_>,
    ty: &Type,
    diags: &mut Vec<Diagnostic>,
) -> Result<LiteralValue, String> {
    let mismatch = || {
        let natural = natural_type(&elem.tok).unwrap_or("unknown");
        format!(
            "literal `{}` of type {natural} cannot have type {ty}",
            elem.tok
        )
    };
    // A date or time that is itself wrong (`2019-00`) is reported as such, whatever its suffix.
    let own_type = match elem.tok {
        Tok::Date(_) => Some(Type::Date),
        Tok::Month(_) => Some(Type::Month),
        Tok::Dt(_) => Some(Type::Dt),
        Tok::Minute(_) => Some(Type::Minute),
        Tok::Second(_) => Some(Type::Second),
        Tok::Time(_) => Some(Type::Time),
        _ => None,
    };
    if let Some(own_type) = own_type.filter(|own| own != ty) {
        convert_elem(elem, &own_type, diags)?;
        return Err(mismatch());
    }
    match (elem.tok, ty) {
        (Tok::Int(text), Type::Bool) => match text.trim_start_matches('+') {
            "0" => Ok(LiteralValue::Bool(false)),
            "1" => Ok(LiteralValue::Bool(true)),
            _ => Err(format!("bool literal must be 0 or 1, found `{text}`")),
        },
        (Tok::Int(text), Type::I8 | Type::I16 | Type::I32 | Type::I64) => {
            let value = parse_int(text)?;
            let wrapped = match ty {
                Type::I8 => i64::from(value as i8),
                Type::I16 => i64::from(value as i16),
                Type::I32 => i64::from(value as i32),
                _ => value,
            };
            if wrapped != value {
                diags.push(Diagnostic::warning(
                    elem.span,
                    format!(
                        "integer `{text}` is out of range for {ty}; it wraps (two's complement) \
                         to {wrapped}"
                    ),
                ));
            }
            Ok(LiteralValue::Int(wrapped))
        }
        (Tok::Int(text) | Tok::Float(text), Type::F32 | Type::F64) => {
            Ok(LiteralValue::Float(parse_float(text)?))
        }
        (Tok::Int(text) | Tok::Float(text), Type::Complex) => Ok(LiteralValue::Complex {
            re: parse_float(text)?,
            im: 0.0,
        }),
        (Tok::Complex(text), Type::Complex) => {
            let (re, im) = parse_complex(text)?;
            Ok(LiteralValue::Complex { re, im })
        }
        (Tok::Char(text), Type::Char) => {
            let inner = strip(text, 1, 1);
            let bytes = unescape(inner, '\'')?.into_bytes();
            match bytes.as_slice() {
                [byte] => Ok(LiteralValue::Char(*byte)),
                _ => Err(format!("char literal {text} is not a single byte")),
            }
        }
        (Tok::Str(text), Type::Str) => Ok(LiteralValue::Text(unescape(strip(text, 1, 1), '"')?)),
        (Tok::Sym(text), Type::Sym) => {
            let name = strip(text, 1, 0);
            if name.starts_with('"') {
                Ok(LiteralValue::Text(unescape(strip(name, 1, 1), '"')?))
            } else {
                Ok(LiteralValue::Text(name.to_string()))
            }
        }
        (Tok::Date(text), Type::Date) => {
            let (year, month, day) = parse_date(text)?;
            Ok(LiteralValue::Date(days_from_civil(year, month, day)))
        }
        (Tok::Month(text), Type::Month) => {
            let year = field(text, 0..4)?;
            let month = month_field(text, field(text, 5..7)?)?;
            Ok(LiteralValue::Month(month_code(year as i32, month)))
        }
        (Tok::Minute(text), Type::Minute) => {
            let (hour, minute) = hour_minute(text)?;
            Ok(LiteralValue::Minute((hour * 60 + minute) as i32))
        }
        (Tok::Second(text), Type::Second) => {
            Ok(LiteralValue::Second((seconds_of_day(text)?) as i32))
        }
        (Tok::Time(text), Type::Time) => Ok(LiteralValue::Time(millis_of_day(text)? as i32)),
        (Tok::Dt(text), Type::Dt) => {
            let (date, clock) = text.split_once('T').unwrap_or((text, ""));
            let (year, month, day) = parse_date(date)?;
            let days = i64::from(days_from_civil(year, month, day));
            Ok(LiteralValue::Dt(
                days * 86_400_000 + i64::from(millis_of_day(clock)?),
            ))
        }
        _ => Err(mismatch()),
    }
}

/// `text` without `front` bytes at the start and `back` at the end (quotes are ASCII).
fn strip(text: &str, front: usize, back: usize) -> &str {
    text.get(front..text.len().saturating_sub(back))
        .unwrap_or("")
}

fn parse_int(text: &str) -> Result<i64, String> {
    text.trim_start_matches('+')
        .parse::<i64>()
        .map_err(|_| format!("integer literal `{text}` does not fit in 64 bits"))
}

fn parse_float(text: &str) -> Result<f64, String> {
    match text.trim_start_matches('+').parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(format!("float literal `{text}` is out of range")),
    }
}

/// `1+2i` → (1, 2); `-2.5i` → (0, -2.5).
fn parse_complex(text: &str) -> Result<(f64, f64), String> {
    let body = text.strip_suffix('i').unwrap_or(text);
    // The imaginary part starts at the last sign that is not the first character.
    let split = body
        .char_indices()
        .skip(1)
        .filter(|(_, c)| *c == '+' || *c == '-')
        .map(|(i, _)| i)
        .last();
    match split {
        Some(at) => Ok((parse_float(&body[..at])?, parse_float(&body[at..])?)),
        None => Ok((0.0, parse_float(body)?)),
    }
}

/// Resolves the escapes `\a \b \f \n \r \t \v \\` and `\<quote>`.
fn unescape(text: &str, quote: char) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next().unwrap_or('\\');
        out.push(match escaped {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' => '\\',
            q if q == quote => q,
            other => {
                return Err(format!(
                "unknown escape `\\{}`; the escapes are \\a \\b \\f \\n \\r \\t \\v \\\\ \\{quote}",
                other.escape_debug()
            ))
            }
        });
    }
    Ok(out)
}

/// The number in `text[range]` (the lexer guarantees ASCII digits there).
fn field(text: &str, range: std::ops::Range<usize>) -> Result<u32, String> {
    text.get(range)
        .and_then(|digits| digits.parse::<u32>().ok())
        .ok_or_else(|| format!("malformed literal `{text}`"))
}

fn month_field(text: &str, month: u32) -> Result<u32, String> {
    if (1..=12).contains(&month) {
        Ok(month)
    } else {
        Err(format!(
            "month {month:02} in `{text}` is out of range 01–12"
        ))
    }
}

/// `YYYY-MM-DD` → (year, month, day), with month and day checked.
fn parse_date(text: &str) -> Result<(i32, u32, u32), String> {
    let year = field(text, 0..4)? as i32;
    let month = month_field(text, field(text, 5..7)?)?;
    let day = field(text, 8..10)?;
    let last = days_in_month(year, month);
    if day == 0 || day > last {
        return Err(format!(
            "day {day:02} in `{text}` is out of range: {year:04}-{month:02} has {last} days"
        ));
    }
    Ok((year, month, day))
}

fn hour_minute(text: &str) -> Result<(u32, u32), String> {
    let hour = field(text, 0..2)?;
    let minute = field(text, 3..5)?;
    if hour > 23 {
        return Err(format!("hour {hour:02} in `{text}` is out of range 00–23"));
    }
    if minute > 59 {
        return Err(format!(
            "minute {minute:02} in `{text}` is out of range 00–59"
        ));
    }
    Ok((hour, minute))
}

/// `HH:MM:SS` (and the start of `HH:MM:SS.mmm`) → seconds since midnight.
fn seconds_of_day(text: &str) -> Result<u32, String> {
    let (hour, minute) = hour_minute(text)?;
    let second = field(text, 6..8)?;
    if second > 59 {
        return Err(format!(
            "second {second:02} in `{text}` is out of range 00–59"
        ));
    }
    Ok((hour * 60 + minute) * 60 + second)
}

/// `HH:MM:SS.mmm` → milliseconds since midnight.
fn millis_of_day(text: &str) -> Result<u32, String> {
    Ok(seconds_of_day(text)? * 1000 + field(text, 9..12)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elem(tok: Tok<'_>) -> RawElem<'_> {
        RawElem {
            tok,
            span: Span::new(0, 1),
        }
    }

    fn ty(ty: Type) -> TypeExpr {
        TypeExpr {
            ty,
            span: Span::new(2, 3),
        }
    }

    /// Converts one element; returns its value or the first diagnostic's message.
    fn one(tok: Tok<'_>, t: Type) -> Result<LiteralValue, String> {
        let mut diags = Vec::new();
        let lit = convert(&[elem(tok)], ty(t), false, Span::new(0, 3), &mut diags);
        match diags.into_iter().find(Diagnostic::is_error) {
            Some(d) => Err(d.message),
            None => Ok(lit.values[0].clone()),
        }
    }

    #[test]
    fn integers_and_bools() {
        assert_eq!(one(Tok::Int("-5"), Type::I32), Ok(LiteralValue::Int(-5)));
        assert_eq!(one(Tok::Int("+7"), Type::I64), Ok(LiteralValue::Int(7)));
        assert_eq!(one(Tok::Int("1"), Type::Bool), Ok(LiteralValue::Bool(true)));
        assert_eq!(
            one(Tok::Int("2"), Type::Bool),
            Err("bool literal must be 0 or 1, found `2`".to_string())
        );
        assert_eq!(
            one(Tok::Int("99999999999999999999"), Type::I64),
            Err("integer literal `99999999999999999999` does not fit in 64 bits".to_string())
        );
    }

    #[test]
    fn out_of_range_small_integers_wrap_with_a_warning() {
        let mut diags = Vec::new();
        let lit = convert(
            &[elem(Tok::Int("200"))],
            ty(Type::I8),
            true,
            Span::new(0, 3),
            &mut diags,
        );
        assert_eq!(lit.values, vec![LiteralValue::Int(-56)]);
        assert_eq!(diags.len(), 1);
        assert!(!diags[0].is_error());
        assert!(diags[0].message.contains("wraps (two's complement) to -56"));
    }

    #[test]
    fn floats_accept_integers() {
        assert_eq!(one(Tok::Int("2"), Type::F64), Ok(LiteralValue::Float(2.0)));
        assert_eq!(
            one(Tok::Float(".5"), Type::F32),
            Ok(LiteralValue::Float(0.5))
        );
        assert_eq!(
            one(Tok::Float("0.5"), Type::I32),
            Err("literal `0.5` of type f64 cannot have type i32".to_string())
        );
        let huge = format!("1{}.0", "0".repeat(400));
        assert!(one(Tok::Float(&huge), Type::F64)
            .unwrap_err()
            .contains("out of range"));
    }

    #[test]
    fn complex_numbers() {
        assert_eq!(
            one(Tok::Complex("1.5-0.5i"), Type::Complex),
            Ok(LiteralValue::Complex { re: 1.5, im: -0.5 })
        );
        assert_eq!(
            one(Tok::Complex("-2i"), Type::Complex),
            Ok(LiteralValue::Complex { re: 0.0, im: -2.0 })
        );
        assert_eq!(
            one(Tok::Int("3"), Type::Complex),
            Ok(LiteralValue::Complex { re: 3.0, im: 0.0 })
        );
    }

    #[test]
    fn text_literals_and_escapes() {
        assert_eq!(
            one(Tok::Char(r"'\n'"), Type::Char),
            Ok(LiteralValue::Char(b'\n'))
        );
        assert_eq!(
            one(Tok::Char(r"'\''"), Type::Char),
            Ok(LiteralValue::Char(b'\''))
        );
        assert!(one(Tok::Char("'é'"), Type::Char).is_err());
        assert_eq!(
            one(Tok::Str(r#""a\"b\t""#), Type::Str),
            Ok(LiteralValue::Text("a\"b\t".to_string()))
        );
        assert!(one(Tok::Str(r#""\q""#), Type::Str)
            .unwrap_err()
            .starts_with("unknown escape `\\q`"));
        assert_eq!(
            one(Tok::Sym("`abc"), Type::Sym),
            Ok(LiteralValue::Text("abc".to_string()))
        );
        assert_eq!(
            one(Tok::Sym("`\"%BRASS x\""), Type::Sym),
            Ok(LiteralValue::Text("%BRASS x".to_string()))
        );
        assert_eq!(
            one(Tok::Int("0"), Type::Str),
            Err("literal `0` of type i64 cannot have type str".to_string())
        );
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(
            one(Tok::Date("1970-01-02"), Type::Date),
            Ok(LiteralValue::Date(1))
        );
        assert_eq!(
            one(Tok::Month("1970-02"), Type::Month),
            Ok(LiteralValue::Month(1970 * 12 + 1))
        );
        assert_eq!(
            one(Tok::Minute("01:59"), Type::Minute),
            Ok(LiteralValue::Minute(119))
        );
        assert_eq!(
            one(Tok::Second("00:01:05"), Type::Second),
            Ok(LiteralValue::Second(65))
        );
        assert_eq!(
            one(Tok::Time("00:00:01.250"), Type::Time),
            Ok(LiteralValue::Time(1250))
        );
        assert_eq!(
            one(Tok::Dt("1970-01-02T00:00:00.001"), Type::Dt),
            Ok(LiteralValue::Dt(86_400_001))
        );
    }

    #[test]
    fn out_of_range_calendar_fields() {
        assert_eq!(
            one(Tok::Month("2019-00"), Type::Month),
            Err("month 00 in `2019-00` is out of range 01–12".to_string())
        );
        assert!(one(Tok::Date("2019-01-32"), Type::Date)
            .unwrap_err()
            .contains("day 32"));
        assert!(one(Tok::Date("2019-02-29"), Type::Date).is_err());
        assert!(one(Tok::Date("2020-02-29"), Type::Date).is_ok());
        assert!(one(Tok::Minute("25:00"), Type::Minute)
            .unwrap_err()
            .contains("hour 25"));
        assert!(one(Tok::Second("10:00:60"), Type::Second).is_err());
        assert_eq!(
            one(Tok::Date("2019-01-01"), Type::Month),
            Err("literal `2019-01-01` of type date cannot have type month".to_string())
        );
        // A wrong month is named as such even under the wrong suffix (fail/t3.hir).
        assert_eq!(
            one(Tok::Month("2019-00"), Type::Date),
            Err("month 00 in `2019-00` is out of range 01–12".to_string())
        );
    }

    #[test]
    fn non_vector_types_are_rejected() {
        assert!(one(Tok::Int("1"), Type::List(Box::new(Type::I32)))
            .unwrap_err()
            .contains("cannot have type list<i32>"));
    }

    #[test]
    fn untyped_literal_message_suggests_a_suffix() {
        let d = untyped(&[elem(Tok::Int("0"))], Span::new(0, 1));
        assert_eq!(
            d.message,
            "literal has no type: a literal needs a type suffix, as in `0:i64`"
        );
    }
}
