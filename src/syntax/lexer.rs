//! The HorseIR lexer: logos recognises raw tokens, [`lex`] checks their shape and turns them
//! into the [`Tok`]s that the lalrpop grammar consumes.
//!
//! Decisions worth knowing:
//! - Type names (`i32`, `date`, `list`, …) are ordinary identifiers; the grammar gives them
//!   meaning in type positions. So `def date()` and `@date(…)` need no special case.
//! - A name after `@` or in a qualified name may also be a keyword (`@if` is a call of `if`);
//!   the grammar accepts keywords there.
//! - Integers are `[+-]?(0|[1-9][0-9]*)`; a leading zero is an error. Floats need digits on at
//!   least one side of `.` (`.5`, `5.`, `5.0`) and have **no exponent**, as in rNdN. Complex
//!   literals are `1+2i`, `-0.5i` (real part optional).
//! - Dates and clock times are recognised loosely (`[0-9]+-[0-9]+…`, `[0-9]+:[0-9]+…`) so that
//!   a malformed one (`20196-05`) gives one clear error instead of a confusing token sequence;
//!   the exact shape (`YYYY-MM-DD`, `HH:MM`, …) is checked here, field ranges in `literal.rs`.
//! - Lexical errors are collected as diagnostics and the lexer goes on: a malformed literal
//!   becomes [`Tok::BadLiteral`] (which the grammar accepts wherever a literal element may
//!   stand, so no parse error cascades from it); unknown characters are skipped, one
//!   diagnostic per run of them.

use std::fmt;

use logos::Logos;

use super::ast::Span;
use crate::diag::Diagnostic;

/// A token as logos recognises it, before shape checks.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(skip r"/\*([^*]|\*+[^*/])*\*+/")]
enum Raw<'s> {
    #[token("/*")]
    UnterminatedComment,

    #[token("module")]
    Module,
    #[token("import")]
    Import,
    #[token("global")]
    Global,
    #[token("def")]
    Def,
    #[token("kernel")]
    Kernel,
    #[token("check_cast")]
    CheckCast,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("while")]
    While,
    #[token("repeat")]
    Repeat,
    #[token("var")]
    Var,
    #[token("return")]
    Return,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,

    #[regex("[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice())]
    Ident(&'s str),

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("=")]
    Eq,
    #[token(":")]
    Colon,
    #[token(";")]
    Semi,
    #[token(",")]
    Comma,
    #[token("@")]
    At,
    #[token(".")]
    Dot,
    #[token("*")]
    Star,
    #[token("?")]
    Question,

    #[regex("[+-]?[0-9]+", |lex| lex.slice())]
    Int(&'s str),
    #[regex(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+)", |lex| lex.slice())]
    Float(&'s str),
    #[regex(r"[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)([+-]([0-9]+(\.[0-9]*)?|\.[0-9]+))?)i", |lex| lex.slice())]
    Complex(&'s str),
    #[regex(r"'([^'\\\n\r]|\\[^\n\r])'", |lex| lex.slice())]
    Char(&'s str),
    #[regex(r#""([^"\\\n\r]|\\[^\n\r])*""#, |lex| lex.slice())]
    Str(&'s str),
    #[regex(r#""([^"\\\n\r]|\\[^\n\r])*"#)]
    UnterminatedStr,
    #[regex("`[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice())]
    SymName(&'s str),
    #[regex(r#"`"([^"\\\n\r]|\\[^\n\r])*""#, |lex| lex.slice())]
    SymQuoted(&'s str),
    #[regex(r#"`"([^"\\\n\r]|\\[^\n\r])*"#)]
    UnterminatedSym,
    /// `2010-09-01`, `2010-09`, `2019-01-02T17:10:21.001`, or a malformed variant of them.
    #[regex(r"[0-9]+-[0-9]+(-[0-9]+(T[0-9]+(:[0-9]+(:[0-9]+(\.[0-9]+)?)?)?)?)?", |lex| lex.slice())]
    DateLike(&'s str),
    /// `20:15`, `17:06:20`, `11:22:33.001`, or a malformed variant of them.
    #[regex(r"[0-9]+:[0-9]+(:[0-9]+(\.[0-9]+)?)?", |lex| lex.slice())]
    ClockLike(&'s str),
}

/// A token the grammar consumes. Literal tokens carry their source text, unconverted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tok<'s> {
    Module,
    Import,
    Global,
    Def,
    Kernel,
    CheckCast,
    If,
    Else,
    While,
    Repeat,
    Var,
    Return,
    Break,
    Continue,
    Ident(&'s str),
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Lt,
    Gt,
    Eq,
    Colon,
    Semi,
    Comma,
    At,
    Dot,
    Star,
    Question,
    Int(&'s str),
    Float(&'s str),
    Complex(&'s str),
    /// `'a'`, quotes included.
    Char(&'s str),
    /// `"text"`, quotes included.
    Str(&'s str),
    /// `` `name `` or `` `"text" ``, backquote included.
    Sym(&'s str),
    Date(&'s str),
    Month(&'s str),
    Dt(&'s str),
    Minute(&'s str),
    Second(&'s str),
    Time(&'s str),
    /// A literal the lexer already reported as malformed.
    BadLiteral,
}

impl Tok<'_> {
    /// How the token is named in messages: `` `;` ``, ``name `foo` ``, ``integer `12` ``.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::Int(s) => format!("integer `{s}`"),
            Tok::Float(s) => format!("float `{s}`"),
            Tok::Complex(s) => format!("complex `{s}`"),
            Tok::Char(s) => format!("char literal {s}"),
            Tok::Str(s) => format!("string literal {s}"),
            Tok::Sym(s) => format!("symbol `{s}`"),
            Tok::Date(s) => format!("date `{s}`"),
            Tok::Month(s) => format!("month `{s}`"),
            Tok::Dt(s) => format!("datetime `{s}`"),
            Tok::Minute(s) => format!("minute `{s}`"),
            Tok::Second(s) => format!("second `{s}`"),
            Tok::Time(s) => format!("time `{s}`"),
            Tok::BadLiteral => "malformed literal".to_string(),
            other => format!("`{other}`"),
        }
    }
}

impl fmt::Display for Tok<'_> {
    /// The token's text (for fixed tokens) or its source text (for the others).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Tok::Module => "module",
            Tok::Import => "import",
            Tok::Global => "global",
            Tok::Def => "def",
            Tok::Kernel => "kernel",
            Tok::CheckCast => "check_cast",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::While => "while",
            Tok::Repeat => "repeat",
            Tok::Var => "var",
            Tok::Return => "return",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Eq => "=",
            Tok::Colon => ":",
            Tok::Semi => ";",
            Tok::Comma => ",",
            Tok::At => "@",
            Tok::Dot => ".",
            Tok::Star => "*",
            Tok::Question => "?",
            Tok::BadLiteral => "<malformed literal>",
            Tok::Ident(s)
            | Tok::Int(s)
            | Tok::Float(s)
            | Tok::Complex(s)
            | Tok::Char(s)
            | Tok::Str(s)
            | Tok::Sym(s)
            | Tok::Date(s)
            | Tok::Month(s)
            | Tok::Dt(s)
            | Tok::Minute(s)
            | Tok::Second(s)
            | Tok::Time(s) => s,
        };
        f.write_str(text)
    }
}

/// A token with its byte range, as lalrpop's external lexer interface wants it.
pub type Spanned<'s> = (usize, Tok<'s>, usize);

/// Splits `source` into tokens; lexical errors go to `diags` and lexing goes on after them.
pub fn lex<'s>(source: &'s str, diags: &mut Vec<Diagnostic>) -> Vec<Spanned<'s>> {
    lex_to_end(source, diags).0
}

/// Like [`lex`]; the flag says whether the tokens reach the end of the source (false after
/// an unterminated block comment, which hides the rest).
pub fn lex_to_end<'s>(source: &'s str, diags: &mut Vec<Diagnostic>) -> (Vec<Spanned<'s>>, bool) {
    // HorseIR averages about three bytes per token (TPC-H queries: 2.9 to 3.0), so half the
    // length holds every token of real programs without growing (each growth copies the
    // tokens and, for big vectors, faults in fresh pages).
    let mut tokens = Vec::with_capacity(source.len() / 2 + 16);
    let mut complete = true;
    let mut lexer = Raw::lexer(source);
    // A run of unknown characters is reported once, when it ends.
    let mut unknown_run: Option<Span> = None;
    while let Some(result) = lexer.next() {
        let range = lexer.span();
        let span = Span::new(range.start, range.end);
        let raw = match result {
            Ok(raw) => raw,
            Err(()) => {
                unknown_run = Some(match unknown_run {
                    Some(run) if run.end == span.start => run.to(span),
                    Some(run) => {
                        diags.push(unknown_characters(source, run));
                        span
                    }
                    None => span,
                });
                continue;
            }
        };
        if let Some(run) = unknown_run.take() {
            diags.push(unknown_characters(source, run));
        }
        match convert(raw) {
            Ok(Some(tok)) => tokens.push((span.start, tok, span.end)),
            Ok(None) => {
                // An unterminated block comment swallows the rest of the file.
                diags.push(Diagnostic::error(
                    Span::new(span.start, span.end),
                    "unterminated block comment: `/*` has no matching `*/`",
                ));
                complete = false;
                break;
            }
            Err(message) => {
                diags.push(Diagnostic::error(span, message));
                tokens.push((span.start, Tok::BadLiteral, span.end));
            }
        }
    }
    if let Some(run) = unknown_run {
        diags.push(unknown_characters(source, run));
    }
    (tokens, complete)
}

fn unknown_characters(source: &str, run: Span) -> Diagnostic {
    let text = source.get(run.start..run.end).unwrap_or("");
    let shown: String = text.chars().take(8).flat_map(char::escape_debug).collect();
    let more = if text.chars().count() > 8 { "…" } else { "" };
    let message = if text.chars().count() == 1 {
        format!("unexpected character `{shown}`")
    } else {
        format!("unexpected characters `{shown}{more}`")
    };
    Diagnostic::error(run, message)
}

/// Checks a raw token's shape. `Ok(None)` is an unterminated block comment.
fn convert(raw: Raw<'_>) -> Result<Option<Tok<'_>>, String> {
    Ok(Some(match raw {
        Raw::UnterminatedComment => return Ok(None),
        Raw::Module => Tok::Module,
        Raw::Import => Tok::Import,
        Raw::Global => Tok::Global,
        Raw::Def => Tok::Def,
        Raw::Kernel => Tok::Kernel,
        Raw::CheckCast => Tok::CheckCast,
        Raw::If => Tok::If,
        Raw::Else => Tok::Else,
        Raw::While => Tok::While,
        Raw::Repeat => Tok::Repeat,
        Raw::Var => Tok::Var,
        Raw::Return => Tok::Return,
        Raw::Break => Tok::Break,
        Raw::Continue => Tok::Continue,
        Raw::Ident(s) => Tok::Ident(s),
        Raw::LParen => Tok::LParen,
        Raw::RParen => Tok::RParen,
        Raw::LBrace => Tok::LBrace,
        Raw::RBrace => Tok::RBrace,
        Raw::LBracket => Tok::LBracket,
        Raw::RBracket => Tok::RBracket,
        Raw::Lt => Tok::Lt,
        Raw::Gt => Tok::Gt,
        Raw::Eq => Tok::Eq,
        Raw::Colon => Tok::Colon,
        Raw::Semi => Tok::Semi,
        Raw::Comma => Tok::Comma,
        Raw::At => Tok::At,
        Raw::Dot => Tok::Dot,
        Raw::Star => Tok::Star,
        Raw::Question => Tok::Question,
        Raw::Int(s) => {
            let digits = s.trim_start_matches(['+', '-']);
            if digits.len() > 1 && digits.starts_with('0') {
                return Err(format!("integer literal `{s}` has a leading zero"));
            }
            Tok::Int(s)
        }
        Raw::Float(s) => Tok::Float(s),
        Raw::Complex(s) => Tok::Complex(s),
        Raw::Char(s) => Tok::Char(s),
        Raw::Str(s) => Tok::Str(s),
        Raw::UnterminatedStr => {
            return Err("unterminated string literal: missing closing `\"`".to_string())
        }
        Raw::SymName(s) | Raw::SymQuoted(s) => Tok::Sym(s),
        Raw::UnterminatedSym => {
            return Err("unterminated symbol literal: missing closing `\"`".to_string())
        }
        Raw::DateLike(s) => date_like(s)?,
        Raw::ClockLike(s) => clock_like(s)?,
    }))
}

/// True when `field` is exactly `len` ASCII digits.
fn digits(field: &str, len: usize) -> bool {
    field.len() == len && field.bytes().all(|b| b.is_ascii_digit())
}

fn date_like(s: &str) -> Result<Tok<'_>, String> {
    let (date, clock) = match s.split_once('T') {
        Some((date, clock)) => (date, Some(clock)),
        None => (s, None),
    };
    let fields: Vec<&str> = date.split('-').collect();
    let kind = match (fields.len(), clock) {
        (2, None) => "month",
        (3, None) => "date",
        _ => "datetime",
    };
    let expected = match kind {
        "month" => "YYYY-MM",
        "date" => "YYYY-MM-DD",
        _ => "YYYY-MM-DDTHH:MM:SS.mmm",
    };
    let malformed = || format!("malformed {kind} literal `{s}`: expected the form {expected}");
    let date_ok = match fields.as_slice() {
        [year, month] => digits(year, 4) && digits(month, 2),
        [year, month, day] => digits(year, 4) && digits(month, 2) && digits(day, 2),
        _ => false,
    };
    if !date_ok {
        return Err(malformed());
    }
    match (kind, clock) {
        ("month", None) => Ok(Tok::Month(s)),
        ("date", None) => Ok(Tok::Date(s)),
        (_, Some(clock)) if clock_shape(clock) == Some(ClockShape::Time) => Ok(Tok::Dt(s)),
        _ => Err(malformed()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ClockShape {
    Minute,
    Second,
    Time,
}

fn clock_shape(s: &str) -> Option<ClockShape> {
    let (hms, millis) = match s.split_once('.') {
        Some((hms, millis)) => (hms, Some(millis)),
        None => (s, None),
    };
    let fields: Vec<&str> = hms.split(':').collect();
    if !fields.iter().all(|f| digits(f, 2)) {
        return None;
    }
    match (fields.len(), millis) {
        (2, None) => Some(ClockShape::Minute),
        (3, None) => Some(ClockShape::Second),
        (3, Some(ms)) if digits(ms, 3) => Some(ClockShape::Time),
        _ => None,
    }
}

fn clock_like(s: &str) -> Result<Tok<'_>, String> {
    match clock_shape(s) {
        Some(ClockShape::Minute) => Ok(Tok::Minute(s)),
        Some(ClockShape::Second) => Ok(Tok::Second(s)),
        Some(ClockShape::Time) => Ok(Tok::Time(s)),
        None => Err(format!(
            "malformed time literal `{s}`: expected HH:MM (minute), HH:MM:SS (second) or \
             HH:MM:SS.mmm (time)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(source: &str) -> Vec<Tok<'_>> {
        let mut diags = Vec::new();
        let tokens = lex(source, &mut diags);
        assert!(
            diags.is_empty(),
            "unexpected diagnostics for {source:?}: {diags:?}"
        );
        tokens.into_iter().map(|(_, t, _)| t).collect()
    }

    fn errors(source: &str) -> Vec<(Span, String)> {
        let mut diags = Vec::new();
        lex(source, &mut diags);
        diags.into_iter().map(|d| (d.span, d.message)).collect()
    }

    #[test]
    fn keywords_identifiers_and_type_names() {
        assert_eq!(
            toks("module m def kernel check_cast if else while repeat var return break continue"),
            vec![
                Tok::Module,
                Tok::Ident("m"),
                Tok::Def,
                Tok::Kernel,
                Tok::CheckCast,
                Tok::If,
                Tok::Else,
                Tok::While,
                Tok::Repeat,
                Tok::Var,
                Tok::Return,
                Tok::Break,
                Tok::Continue
            ]
        );
        // Type names are identifiers; so are names that merely start with a keyword.
        assert_eq!(
            toks("i32 date list modules _x1"),
            vec![
                Tok::Ident("i32"),
                Tok::Ident("date"),
                Tok::Ident("list"),
                Tok::Ident("modules"),
                Tok::Ident("_x1")
            ]
        );
    }

    #[test]
    fn keyword_after_at_is_still_a_keyword_token() {
        // The grammar, not the lexer, accepts keywords as function names after `@`.
        assert_eq!(toks("@if"), vec![Tok::At, Tok::If]);
        assert_eq!(toks("@date"), vec![Tok::At, Tok::Ident("date")]);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("0 12 -1 +7 .5 5. 3.25 -0.5 1+2i -2.5i 1.5-0.5i"),
            vec![
                Tok::Int("0"),
                Tok::Int("12"),
                Tok::Int("-1"),
                Tok::Int("+7"),
                Tok::Float(".5"),
                Tok::Float("5."),
                Tok::Float("3.25"),
                Tok::Float("-0.5"),
                Tok::Complex("1+2i"),
                Tok::Complex("-2.5i"),
                Tok::Complex("1.5-0.5i")
            ]
        );
        // A negative literal followed by its type suffix.
        assert_eq!(
            toks("-1:i32"),
            vec![Tok::Int("-1"), Tok::Colon, Tok::Ident("i32")]
        );
    }

    #[test]
    fn leading_zero_is_an_error() {
        assert_eq!(
            errors("007"),
            vec![(
                Span::new(0, 3),
                "integer literal `007` has a leading zero".to_string()
            )]
        );
    }

    #[test]
    fn chars_strings_symbols() {
        assert_eq!(
            toks(r#"'a' '\n' '\'' "hi \"x\"" `abc `"any text""#),
            vec![
                Tok::Char("'a'"),
                Tok::Char(r"'\n'"),
                Tok::Char(r"'\''"),
                Tok::Str(r#""hi \"x\"""#),
                Tok::Sym("`abc"),
                Tok::Sym("`\"any text\""),
            ]
        );
    }

    #[test]
    fn temporal_literals() {
        assert_eq!(
            toks("2010-09-01:date 2010-09 20:15:minute 17:06:20 11:22:33.001 2019-01-02T17:10:21.001"),
            vec![
                Tok::Date("2010-09-01"),
                Tok::Colon,
                Tok::Ident("date"),
                Tok::Month("2010-09"),
                Tok::Minute("20:15"),
                Tok::Colon,
                Tok::Ident("minute"),
                Tok::Second("17:06:20"),
                Tok::Time("11:22:33.001"),
                Tok::Dt("2019-01-02T17:10:21.001"),
            ]
        );
    }

    #[test]
    fn five_digit_year_is_one_error() {
        let mut diags = Vec::new();
        let tokens = lex("20196-05:month", &mut diags);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].span, Span::new(0, 8));
        assert!(diags[0]
            .message
            .contains("malformed month literal `20196-05`"));
        assert_eq!(tokens[0].1, Tok::BadLiteral);
    }

    #[test]
    fn malformed_clock() {
        let errs = errors("1:30:minute");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].1.starts_with("malformed time literal `1:30`"));
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            toks("a // line\n/* block\n * more */ b /**/ c /* a*b */"),
            vec![Tok::Ident("a"), Tok::Ident("b"), Tok::Ident("c")]
        );
    }

    #[test]
    fn unterminated_comment_and_string() {
        assert_eq!(
            errors("a /* never closed"),
            vec![(
                Span::new(2, 4),
                "unterminated block comment: `/*` has no matching `*/`".to_string()
            )]
        );
        let errs = errors("\"abc");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].1.starts_with("unterminated string literal"));
    }

    #[test]
    fn unknown_characters_are_reported_once_per_run() {
        let errs = errors("a $$\u{0}é b # c");
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].0, Span::new(2, 7));
        assert_eq!(errs[1].1, "unexpected character `#`");
    }

    #[test]
    fn spans_are_byte_offsets() {
        let mut diags = Vec::new();
        let tokens = lex("é x", &mut diags);
        assert_eq!(tokens, vec![(3, Tok::Ident("x"), 4)]);
        assert_eq!(diags[0].span, Span::new(0, 2));
        let tokens = lex("  abc", &mut diags);
        assert_eq!(tokens, vec![(2, Tok::Ident("abc"), 5)]);
    }
}
