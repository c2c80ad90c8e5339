//! A recursive-descent parser for Soufflé's core syntax. After an error it skips to the end
//! of the clause (the next `.`) or the next directive and goes on, so one mistake gives one
//! diagnostic.

use super::ast::*;
use super::lexer::{lex, Tok};
use crate::diag::Diagnostic;
use crate::syntax::ast::Span;

/// Parses `text`; the program holds every item that parsed.
pub fn parse(text: &str) -> (Program, Vec<Diagnostic>) {
    let (tokens, mut diags) = lex(text);
    let mut parser = Parser {
        tokens,
        at: 0,
        end: Span::new(text.len(), text.len()),
        program: Program::default(),
    };
    while parser.peek().is_some() {
        if let Err(e) = parser.item() {
            diags.push(e);
            parser.recover();
        }
    }
    (parser.program, diags)
}

struct Parser {
    tokens: Vec<(Tok, Span)>,
    at: usize,
    end: Span,
    program: Program,
}

type Parsed<T> = Result<T, Diagnostic>;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    fn peek_at(&self, offset: usize) -> Option<&Tok> {
        self.tokens.get(self.at + offset).map(|(t, _)| t)
    }

    fn span(&self) -> Span {
        self.tokens.get(self.at).map_or(self.end, |(_, s)| *s)
    }

    fn previous_end(&self) -> usize {
        self.at
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .map_or(0, |(_, s)| s.end)
    }

    fn bump(&mut self) -> Option<(Tok, Span)> {
        let token = self.tokens.get(self.at).cloned();
        if token.is_some() {
            self.at += 1;
        }
        token
    }

    fn unexpected(&self, expected: &str) -> Diagnostic {
        match self.peek() {
            Some(tok) => Diagnostic::error(
                self.span(),
                format!("expected {expected}, found {}", tok.describe()),
            ),
            None => Diagnostic::error(
                self.end,
                format!("expected {expected}, found the end of the file"),
            ),
        }
    }

    fn expect(&mut self, tok: Tok, expected: &str) -> Parsed<Span> {
        if self.peek() == Some(&tok) {
            Ok(self.bump().map_or(self.end, |(_, s)| s))
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn ident(&mut self, expected: &str) -> Parsed<(String, Span)> {
        match self.peek() {
            Some(Tok::Ident(_)) => match self.bump() {
                Some((Tok::Ident(name), span)) => Ok((name, span)),
                _ => Err(self.unexpected(expected)),
            },
            _ => Err(self.unexpected(expected)),
        }
    }

    /// Skips past the next `.` (the end of a clause), or to the next directive.
    fn recover(&mut self) {
        while let Some(tok) = self.peek() {
            match tok {
                Tok::Decl | Tok::Input | Tok::Output | Tok::Directive(_) => return,
                Tok::Dot => {
                    self.at += 1;
                    return;
                }
                _ => self.at += 1,
            }
        }
    }

    fn item(&mut self) -> Parsed<()> {
        match self.peek() {
            Some(Tok::Decl) => self.decl(),
            Some(Tok::Input) | Some(Tok::Output) => self.io_directive(),
            Some(Tok::Directive(name)) => {
                let name = name.clone();
                let span = self.span();
                self.at += 1;
                Err(
                    Diagnostic::error(span, format!("unsupported directive `{name}`"))
                        .with_note("horsec accepts `.decl`, `.input` and `.output`"),
                )
            }
            _ => self.clause(),
        }
    }

    fn decl(&mut self) -> Parsed<()> {
        self.bump();
        let (name, span) = self.ident("a relation name after `.decl`")?;
        self.expect(Tok::LParen, "`(` after the relation name")?;
        let mut attrs = Vec::new();
        if self.peek() != Some(&Tok::RParen) {
            loop {
                let (attr, attr_span) = self.ident("an attribute name")?;
                self.expect(Tok::Colon, "`:` after the attribute name")?;
                let (ty_name, ty_span) = self.ident("an attribute type (`number` or `symbol`)")?;
                let ty = match ty_name.as_str() {
                    "number" => AttrType::Number,
                    "symbol" => AttrType::Symbol,
                    other => {
                        return Err(Diagnostic::error(
                            ty_span,
                            format!("unknown type `{other}`; expected `number` or `symbol`"),
                        ))
                    }
                };
                attrs.push(Attr {
                    name: attr,
                    ty,
                    span: attr_span.to(ty_span),
                });
                if self.peek() == Some(&Tok::Comma) {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::RParen, "`,` or `)` in the attribute list")?;
        self.program.decls.push(Decl { name, span, attrs });
        Ok(())
    }

    fn io_directive(&mut self) -> Parsed<()> {
        let input = matches!(self.bump(), Some((Tok::Input, _)));
        loop {
            let (relation, span) = self.ident("a relation name")?;
            if self.peek() == Some(&Tok::LParen) {
                return Err(
                    Diagnostic::error(self.span(), "I/O parameters are not supported").with_note(
                        "give the data with `--table NAME=FILE.csv` or `--data DIR` (NAME.facts)",
                    ),
                );
            }
            let directive = Directive { relation, span };
            if input {
                self.program.inputs.push(directive);
            } else {
                self.program.outputs.push(directive);
            }
            if self.peek() == Some(&Tok::Comma) {
                self.bump();
            } else {
                return Ok(());
            }
        }
    }

    fn clause(&mut self) -> Parsed<()> {
        let head = self.atom()?;
        let mut body = Vec::new();
        if self.peek() == Some(&Tok::Turnstile) {
            self.bump();
            loop {
                body.push(self.literal()?);
                if self.peek() == Some(&Tok::Comma) {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        let end = self.expect(Tok::Dot, "`,` or `.` to end the clause")?;
        let span = head.span.to(end);
        self.program.clauses.push(Clause { head, body, span });
        Ok(())
    }

    fn atom(&mut self) -> Parsed<Atom> {
        let (relation, name_span) = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(` after the relation name")?;
        let mut args = Vec::new();
        if self.peek() != Some(&Tok::RParen) {
            loop {
                args.push(self.term()?);
                if self.peek() == Some(&Tok::Comma) {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        let close = self.expect(Tok::RParen, "`,` or `)` in the argument list")?;
        Ok(Atom {
            relation,
            args,
            span: name_span.to(close),
            name_span,
        })
    }

    fn literal(&mut self) -> Parsed<Literal> {
        match (self.peek(), self.peek_at(1)) {
            (Some(Tok::Bang), _) => {
                let bang = self.span();
                self.bump();
                let mut atom = self.atom()?;
                atom.span = bang.to(atom.span);
                Ok(Literal::Negative(atom))
            }
            (Some(Tok::Ident(_)), Some(Tok::LParen)) => Ok(Literal::Positive(self.atom()?)),
            (Some(Tok::Ident(_)), Some(Tok::Equal)) if self.aggregate_follows(2) => {
                let (result, result_span) = self.ident("a variable")?;
                self.bump();
                self.aggregate(result, result_span)
            }
            _ => {
                let left = self.term()?;
                let op = match self.peek() {
                    Some(Tok::Equal) => CmpOp::Eq,
                    Some(Tok::NotEqual) => CmpOp::Ne,
                    Some(Tok::Less) => CmpOp::Lt,
                    Some(Tok::LessEqual) => CmpOp::Le,
                    Some(Tok::Greater) => CmpOp::Gt,
                    Some(Tok::GreaterEqual) => CmpOp::Ge,
                    _ => {
                        return Err(
                            self.unexpected("a comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`)")
                        )
                    }
                };
                self.bump();
                let right = self.term()?;
                let span = left.span().to(right.span());
                Ok(Literal::Constraint {
                    op,
                    left,
                    right,
                    span,
                })
            }
        }
    }

    /// Whether an aggregate starts `offset` tokens ahead: `count :` or `sum x :` (also
    /// `min`, `max`).
    fn aggregate_follows(&self, offset: usize) -> bool {
        match self.peek_at(offset) {
            Some(Tok::Ident(name)) => match AggregateKind::from_name(name) {
                Some(AggregateKind::Count) => self.peek_at(offset + 1) == Some(&Tok::Colon),
                Some(_) => {
                    matches!(self.peek_at(offset + 1), Some(Tok::Ident(_)))
                        && self.peek_at(offset + 2) == Some(&Tok::Colon)
                }
                None => false,
            },
            _ => false,
        }
    }

    /// `kind [target] : { atom }` after `result =`.
    fn aggregate(&mut self, result: String, result_span: Span) -> Parsed<Literal> {
        let (name, _) = self.ident("an aggregate")?;
        let kind =
            AggregateKind::from_name(&name).ok_or_else(|| self.unexpected("an aggregate"))?;
        let target = if kind == AggregateKind::Count {
            None
        } else {
            Some(self.ident("the aggregated variable")?)
        };
        self.expect(Tok::Colon, "`:` after the aggregate")?;
        self.expect(Tok::LBrace, "`{` opening the aggregate's body")?;
        let atom = self.atom()?;
        if self.peek() == Some(&Tok::Comma) {
            return Err(Diagnostic::error(
                self.span(),
                "an aggregate's body is one atom in horsec",
            )
            .with_note("derive the conjunction into a relation first and aggregate over it"));
        }
        let close = self.expect(Tok::RBrace, "`}` closing the aggregate's body")?;
        Ok(Literal::Aggregate(Aggregate {
            result,
            result_span,
            kind,
            target,
            atom,
            span: result_span.to(close),
        }))
    }

    fn term(&mut self) -> Parsed<Term> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Plus) => ArithOp::Add,
                Some(Tok::Minus) => ArithOp::Sub,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.product()?;
            let span = left.span().to(right.span());
            left = Term::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                span,
            };
        }
    }

    fn product(&mut self) -> Parsed<Term> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Star) => ArithOp::Mul,
                Some(Tok::Slash) => ArithOp::Div,
                Some(Tok::Percent) => ArithOp::Mod,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            let span = left.span().to(right.span());
            left = Term::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                span,
            };
        }
    }

    fn unary(&mut self) -> Parsed<Term> {
        if self.peek() == Some(&Tok::Minus) {
            let minus = self.span();
            self.bump();
            let inner = self.unary()?;
            // `-5` is the number itself, so `i64::MIN` can be written.
            if let Term::Number(n, span) = &inner {
                if *n >= 0 {
                    return Ok(Term::Number(-n, minus.to(*span)));
                }
            }
            let span = minus.to(inner.span());
            return Ok(Term::Negate(Box::new(inner), span));
        }
        self.primary()
    }

    fn primary(&mut self) -> Parsed<Term> {
        let span = self.span();
        match self.peek().cloned() {
            Some(Tok::Number(text)) => {
                self.bump();
                // Parsed with room for `-9223372036854775808`.
                match text.parse::<i128>() {
                    Ok(n) if n <= i128::from(i64::MAX) => Ok(Term::Number(n as i64, span)),
                    _ => Err(Diagnostic::error(
                        span,
                        format!("number `{text}` does not fit in 64 bits"),
                    )),
                }
            }
            Some(Tok::String(text)) => {
                self.bump();
                Ok(Term::Symbol(unescape(&text[1..text.len() - 1]), span))
            }
            Some(Tok::Ident(name)) => {
                self.bump();
                if self.peek() == Some(&Tok::LParen) {
                    return Err(Diagnostic::error(
                        span,
                        format!("`{name}(…)` is an atom, not a value; functors are not supported"),
                    ));
                }
                Ok(if name == "_" {
                    Term::Wildcard(span)
                } else {
                    Term::Var(name, span)
                })
            }
            Some(Tok::LParen) => {
                self.bump();
                let inner = self.term()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(inner)
            }
            _ => {
                let _ = self.previous_end();
                Err(self.unexpected("a variable, `_`, a number or a string"))
            }
        }
    }
}

/// The text of a string literal without its escapes (`\"`, `\\`, `\n`, `\t`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}
