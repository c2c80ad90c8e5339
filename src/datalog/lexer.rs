//! The Datalog lexer (Soufflé's core syntax): logos recognises the tokens; [`lex`] turns
//! them into tokens with spans and reports characters it does not know, one diagnostic
//! per run of them.

use logos::Logos;

use crate::diag::Diagnostic;
use crate::syntax::ast::Span;

#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(skip r"/\*([^*]|\*+[^*/])*\*+/")]
pub enum Tok {
    #[token("/*")]
    UnterminatedComment,
    #[token(".decl")]
    Decl,
    #[token(".input")]
    Input,
    #[token(".output")]
    Output,
    #[regex(r"\.[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Directive(String),
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Ident(String),
    #[regex(r"[0-9]+", |lex| lex.slice().to_string())]
    Number(String),
    #[regex(r#""([^"\\\n]|\\.)*""#, |lex| lex.slice().to_string())]
    String(String),
    #[regex(r#""([^"\\\n]|\\.)*"#)]
    UnterminatedString,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token(",")]
    Comma,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(".")]
    Dot,
    #[token(":-")]
    Turnstile,
    #[token(":")]
    Colon,
    #[token("!=")]
    NotEqual,
    #[token("!")]
    Bang,
    #[token("=")]
    Equal,
    #[token("<=")]
    LessEqual,
    #[token("<")]
    Less,
    #[token(">=")]
    GreaterEqual,
    #[token(">")]
    Greater,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
}

impl Tok {
    /// How the token reads in a message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("`{name}`"),
            Tok::Number(n) => format!("number `{n}`"),
            Tok::String(s) => format!("string {s}"),
            Tok::Directive(d) => format!("directive `{d}`"),
            Tok::Decl => "`.decl`".into(),
            Tok::Input => "`.input`".into(),
            Tok::Output => "`.output`".into(),
            Tok::UnterminatedComment => "an unterminated comment".into(),
            Tok::UnterminatedString => "an unterminated string".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Comma => "`,`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::Dot => "`.`".into(),
            Tok::Turnstile => "`:-`".into(),
            Tok::Colon => "`:`".into(),
            Tok::NotEqual => "`!=`".into(),
            Tok::Bang => "`!`".into(),
            Tok::Equal => "`=`".into(),
            Tok::LessEqual => "`<=`".into(),
            Tok::Less => "`<`".into(),
            Tok::GreaterEqual => "`>=`".into(),
            Tok::Greater => "`>`".into(),
            Tok::Plus => "`+`".into(),
            Tok::Minus => "`-`".into(),
            Tok::Star => "`*`".into(),
            Tok::Slash => "`/`".into(),
            Tok::Percent => "`%`".into(),
        }
    }
}

/// The tokens of `text` with their spans, and the lexical errors.
pub fn lex(text: &str) -> (Vec<(Tok, Span)>, Vec<Diagnostic>) {
    let mut tokens = Vec::new();
    let mut diags = Vec::new();
    let mut unknown: Option<Span> = None;
    let mut lexer = Tok::lexer(text);
    while let Some(result) = lexer.next() {
        let range = lexer.span();
        let span = Span::new(range.start, range.end);
        match result {
            Ok(Tok::UnterminatedComment) => {
                diags.push(Diagnostic::error(span, "unterminated comment `/*`"));
                break;
            }
            Ok(Tok::UnterminatedString) => {
                diags.push(Diagnostic::error(span, "unterminated string"));
            }
            Ok(tok) => {
                if let Some(run) = unknown.take() {
                    diags.push(unknown_characters(text, run));
                }
                tokens.push((tok, span));
            }
            Err(()) => {
                unknown = Some(match unknown {
                    Some(run) if run.end == span.start => run.to(span),
                    Some(run) => {
                        diags.push(unknown_characters(text, run));
                        span
                    }
                    None => span,
                });
            }
        }
    }
    if let Some(run) = unknown {
        diags.push(unknown_characters(text, run));
    }
    (tokens, diags)
}

fn unknown_characters(text: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "unexpected character(s) `{}`",
            text.get(span.start..span.end).unwrap_or("?")
        ),
    )
}
