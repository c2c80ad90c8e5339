//! Front end: lexer (logos), parser (lalrpop grammar in `grammar/`), AST and its printer.
//!
//! [`parse`] is the entry point: source text in, AST and located diagnostics out. It never
//! panics and never recurses on the input's nesting (see [`MAX_NESTING`]).

pub mod ast;
pub mod lexer;
pub mod literal;
pub mod printer;

use std::convert::Infallible;

use horsec_runtime::types::Type;
use lalrpop_util::{ErrorRecovery, ParseError};

use crate::diag::{has_errors, Diagnostic};
use ast::{Literal, Program, Span, TypeExpr};
use lexer::{Spanned, Tok};
use literal::RawElem;

pub use printer::print_program;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused_parens, unused_imports)]
    grammar,
    "/horseir.rs"
);

/// The deepest nesting of brackets, braces and unbraced `if`/`while`/`repeat` bodies accepted.
/// Later stages walk the AST recursively; this bound keeps them far from the stack's end.
pub const MAX_NESTING: usize = 256;

/// At most this many errors are reported; beyond, one more says how many were left out.
const MAX_ERRORS: usize = 50;

/// Parses a HorseIR source file.
///
/// Returns the program when there is no error (warnings may be present), and every
/// diagnostic, sorted by position. Spans are byte offsets into `source`.
pub fn parse(source: &str) -> (Option<Program>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let (tokens, complete) = lexer::lex_to_end(source, &mut diags);
    if let Some(too_deep) = check_nesting(&tokens) {
        diags.push(too_deep);
        return (None, finish(diags));
    }
    let mut ctx = ParseContext::default();
    let result = grammar::ProgramParser::new().parse(
        &mut ctx,
        tokens.iter().copied().map(Ok::<Spanned<'_>, Infallible>),
    );
    let mut parse_errors = std::mem::take(&mut ctx.recovered);
    let program = match result {
        Ok(program) => Some(program),
        // When a comment hid the rest of the file, running out of tokens is no news.
        Err(ParseError::UnrecognizedEof { .. }) if !complete => None,
        Err(error) => {
            parse_errors.push(error);
            None
        }
    };
    diags.append(&mut ctx.diags);
    for error in parse_errors {
        diags.push(describe_parse_error(&error, &tokens, source.len()));
    }
    let diags = finish(diags);
    if has_errors(&diags) {
        (None, diags)
    } else {
        (program, diags)
    }
}

/// Sorts the diagnostics, drops exact duplicates and caps the number of errors.
fn finish(mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    diags.dedup_by(|a, b| a.span == b.span && a.message == b.message);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    if errors > MAX_ERRORS {
        let mut kept = 0;
        let mut last_span = Span::default();
        diags.retain(|d| {
            if !d.is_error() {
                return true;
            }
            kept += 1;
            if kept <= MAX_ERRORS {
                last_span = d.span;
            }
            kept <= MAX_ERRORS
        });
        diags.push(Diagnostic::error(
            last_span,
            format!("too many errors: {} more not shown", errors - MAX_ERRORS),
        ));
    }
    diags
}

/// The statements of a block from the parser's list of them (boxed on its stack, `None` for
/// one that failed to parse), allocated once at their final size: a function body's
/// statements take tens of kilobytes, and growing to that by doubling copies them over and
/// over into fresh memory.
pub(crate) fn unbox_statements(parsed: Vec<Option<Box<ast::Stmt>>>) -> Vec<ast::Stmt> {
    let mut stmts = Vec::with_capacity(parsed.iter().flatten().count());
    stmts.extend(parsed.into_iter().flatten().map(|stmt| *stmt));
    stmts
}

/// State the grammar's actions report into.
#[derive(Default)]
pub struct ParseContext<'s> {
    diags: Vec<Diagnostic>,
    recovered: Vec<ParseError<usize, Tok<'s>, Infallible>>,
}

impl<'s> ParseContext<'s> {
    /// Records a syntax error the parser recovered from.
    pub fn recovered(&mut self, recovery: ErrorRecovery<usize, Tok<'s>, Infallible>) {
        self.recovered.push(recovery.error);
    }

    /// `elems:ty`, converted and checked.
    pub fn literal(
        &mut self,
        elems: &[RawElem<'s>],
        ty: TypeExpr,
        parenthesized: bool,
        span: Span,
    ) -> Literal {
        literal::convert(elems, ty, parenthesized, span, &mut self.diags)
    }

    /// A literal without its type suffix: an error, parsed on as an untyped placeholder.
    pub fn untyped_literal(
        &mut self,
        elems: &[RawElem<'s>],
        parenthesized: bool,
        span: Span,
    ) -> Literal {
        self.diags.push(literal::untyped(elems, span));
        Literal {
            values: Vec::new(),
            ty: TypeExpr {
                ty: Type::Wildcard,
                span,
            },
            parenthesized,
            span,
        }
    }

    /// The type `name` or `name<args>`; an unknown name or a wrong number of arguments is
    /// reported and becomes `?`.
    pub fn named_type(&mut self, name: &str, args: Vec<TypeExpr>, span: Span) -> TypeExpr {
        let ty = match (name, args.len()) {
            ("list", 1) | ("enum", 1) | ("dict", 2) => {
                let mut args = args.into_iter().map(|a| Box::new(a.ty));
                match (name, args.next(), args.next()) {
                    ("list", Some(elem), None) => Some(Type::List(elem)),
                    ("enum", Some(elem), None) => Some(Type::Enum(elem)),
                    ("dict", Some(key), Some(value)) => Some(Type::Dict(key, value)),
                    _ => None,
                }
            }
            ("list" | "enum", n) => {
                self.type_error(span, format!("`{name}` takes 1 type argument, found {n}"));
                None
            }
            ("dict", n) => {
                self.type_error(span, format!("`dict` takes 2 type arguments, found {n}"));
                None
            }
            (_, 0) => match Type::from_basic_name(name) {
                Some(ty) => Some(ty),
                None => {
                    self.type_error(span, format!("unknown type `{name}`"));
                    None
                }
            },
            (_, _) => {
                self.type_error(span, format!("type `{name}` takes no type arguments"));
                None
            }
        };
        TypeExpr {
            ty: ty.unwrap_or(Type::Wildcard),
            span,
        }
    }

    fn type_error(&mut self, span: Span, message: String) {
        self.diags.push(Diagnostic::error(span, message));
    }
}

/// Rejects input nested deeper than [`MAX_NESTING`], before any recursive stage sees it.
///
/// Depth counts open brackets of every kind, plus the chain of `if`/`while`/`repeat`/`else`
/// whose bodies are not yet closed: `if (a) if (b) x;` and `else if` chains nest in the AST
/// without any brace.
fn check_nesting(tokens: &[Spanned<'_>]) -> Option<Diagnostic> {
    let mut brackets = 0usize;
    // The control-statement chain of each enclosing brace level, and the current one.
    let mut saved_chains: Vec<usize> = Vec::new();
    let mut saved_total = 0usize;
    let mut chain = 0usize;
    for (index, (start, tok, end)) in tokens.iter().enumerate() {
        let next_is_else = matches!(tokens.get(index + 1), Some((_, Tok::Else, _)));
        match tok {
            Tok::LParen | Tok::LBracket | Tok::Lt => brackets += 1,
            Tok::RParen | Tok::RBracket | Tok::Gt => brackets = brackets.saturating_sub(1),
            Tok::LBrace => {
                brackets += 1;
                saved_chains.push(chain);
                saved_total += chain;
                chain = 0;
            }
            Tok::RBrace => {
                brackets = brackets.saturating_sub(1);
                chain = saved_chains.pop().unwrap_or(0);
                saved_total = saved_total.saturating_sub(chain);
                if !next_is_else {
                    chain = 0;
                }
            }
            Tok::If | Tok::While | Tok::Repeat | Tok::Else => chain += 1,
            Tok::Semi if !next_is_else => chain = 0,
            _ => {}
        }
        if brackets + saved_total + chain > MAX_NESTING {
            return Some(Diagnostic::error(
                Span::new(*start, *end),
                format!("nesting is too deep: more than {MAX_NESTING} levels"),
            ));
        }
    }
    None
}

/// A syntax error in plain words: what was found, what was expected, where.
fn describe_parse_error(
    error: &ParseError<usize, Tok<'_>, Infallible>,
    tokens: &[Spanned<'_>],
    source_len: usize,
) -> Diagnostic {
    match error {
        ParseError::InvalidToken { location } => Diagnostic::error(
            Span::new(*location, (*location + 1).min(source_len)),
            "invalid token",
        ),
        ParseError::UnrecognizedEof { expected, .. } => {
            let at = source_len;
            let what = if expected.is_empty() {
                "unexpected end of file".to_string()
            } else {
                format!(
                    "expected {}, found end of file",
                    describe_expected(expected)
                )
            };
            Diagnostic::error(Span::new(at, at), what)
        }
        ParseError::UnrecognizedToken {
            token: (start, tok, end),
            expected,
        } => {
            let found = tok.describe();
            let expects_semicolon = expected.iter().any(|e| e == "\";\"");
            // A missing `;` is best shown at the end of the statement it should close.
            let previous_end = tokens
                .iter()
                .take_while(|(s, _, _)| s < start)
                .last()
                .map(|(_, _, e)| *e);
            if expected.is_empty() {
                return Diagnostic::error(Span::new(*start, *end), format!("unexpected {found}"));
            }
            let message = format!("expected {}, found {found}", describe_expected(expected));
            match previous_end {
                Some(prev) if expects_semicolon && expected.len() <= 3 && prev < *start => {
                    Diagnostic::error(Span::new(prev, prev), message)
                }
                _ => Diagnostic::error(Span::new(*start, *end), message),
            }
        }
        ParseError::ExtraToken {
            token: (start, tok, end),
        } => Diagnostic::error(
            Span::new(*start, *end),
            format!("unexpected {} after the last module", tok.describe()),
        ),
        ParseError::User { error } => match *error {},
    }
}

const KEYWORDS: [&str; 14] = [
    "module",
    "import",
    "global",
    "def",
    "kernel",
    "check_cast",
    "if",
    "else",
    "while",
    "repeat",
    "var",
    "return",
    "break",
    "continue",
];

/// Turns lalrpop's list of expected terminals into words: "`;` or `,`", "a statement".
fn describe_expected(expected: &[String]) -> String {
    let has = |t: &str| expected.iter().any(|e| e == t);
    // At the start of a statement lalrpop lists every token a statement may begin with.
    if has("\"var\"") && has("\"@\"") {
        return if has("\"}\"") {
            "a statement or `}`".to_string()
        } else {
            "a statement".to_string()
        };
    }
    let any_name = has("\"NAME\"") && has("\"module\"") && has("\"continue\"");
    let mut words: Vec<String> = Vec::new();
    let mut push = |w: String| {
        if !words.contains(&w) {
            words.push(w);
        }
    };
    // `<` only continues a type name: listing it beside the real alternatives misleads.
    let useful = expected
        .iter()
        .filter(|t| expected.len() == 1 || t.as_str() != "\"<\"");
    for terminal in useful {
        let bare = terminal.trim_matches('"');
        let word = match bare {
            "NAME" => "a name".to_string(),
            "INT" | "FLOAT" | "COMPLEX" | "CHAR" | "STRING" | "SYMBOL" | "DATE" | "MONTH"
            | "DATETIME" | "MINUTE" | "SECOND" | "TIME" | "BAD_LITERAL" => "a literal".to_string(),
            // Where keywords are names too (after `@`), "a name" covers them.
            _ if any_name && KEYWORDS.contains(&bare) => continue,
            other => format!("`{other}`"),
        };
        push(word);
    }
    // Names and literals first, then punctuation and keywords in lalrpop's order.
    words.sort_by_key(|w| match w.as_str() {
        "a name" => 0,
        "a literal" => 1,
        _ => 2,
    });
    match words.as_slice() {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests;
