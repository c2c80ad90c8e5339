//! Diagnostics: located errors and warnings, rendered as
//! `file:line:col: error: message` followed by the source line with a marker.

use std::fmt::Write as _;

use codespan_reporting::files::{Files, SimpleFile};

use crate::syntax::ast::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One message about the source, pointing at a span.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// Extra explanations printed under the snippet (`= note: …`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            notes: Vec::new(),
        }
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
            span,
            notes: Vec::new(),
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// True when any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// A source file with its display name, for locating spans.
pub struct SourceFile {
    file: SimpleFile<String, String>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            file: SimpleFile::new(name.into(), text.into()),
        }
    }

    pub fn name(&self) -> &str {
        self.file.name()
    }

    pub fn text(&self) -> &str {
        self.file.source()
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = clamp_to_char_boundary(self.text(), offset);
        match self.file.location((), offset) {
            Ok(loc) => (loc.line_number, loc.column_number),
            Err(_) => (1, 1),
        }
    }

    /// The byte offset of 1-based `line` and `col` (in characters), when the file has them.
    pub fn offset_of(&self, line: usize, col: usize) -> Option<usize> {
        let text = self.text();
        let line_start = if line <= 1 {
            0
        } else {
            text.match_indices('\n').nth(line - 2)?.0 + 1
        };
        let line_text = &text[line_start..];
        let line_text = &line_text[..line_text.find('\n').unwrap_or(line_text.len())];
        let within = match line_text.char_indices().nth(col.saturating_sub(1)) {
            Some((i, _)) => i,
            None => line_text.len(),
        };
        Some(line_start + within)
    }

    /// Renders one diagnostic: header line, source line, marker, notes.
    pub fn render(&self, diag: &Diagnostic) -> String {
        let text = self.text();
        let start = clamp_to_char_boundary(text, diag.span.start);
        let (line, col) = self.line_col(start);
        let severity = match diag.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!(
            "{}:{line}:{col}: {severity}: {}\n",
            self.name(),
            diag.message
        );
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let source_line: String = text[line_start..line_end]
            .chars()
            .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
            .collect();
        let gutter = line.to_string().len();
        let end = clamp_to_char_boundary(text, diag.span.end.max(start)).min(line_end);
        let indent: String = text[line_start..start]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let width = text[start..end].chars().count().max(1);
        let _ = writeln!(out, "{:gutter$} |", "");
        let _ = writeln!(out, "{line} | {source_line}");
        let _ = writeln!(out, "{:gutter$} | {indent}{}", "", "^".repeat(width));
        for note in &diag.notes {
            let _ = writeln!(out, "{:gutter$} = note: {note}", "");
        }
        out
    }

    /// Renders all diagnostics in source order.
    pub fn render_all(&self, diags: &[Diagnostic]) -> String {
        let mut sorted: Vec<&Diagnostic> = diags.iter().collect();
        sorted.sort_by_key(|d| (d.span.start, std::cmp::Reverse(d.severity)));
        sorted.iter().map(|d| self.render(d)).collect()
    }
}

fn clamp_to_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_header_line_and_marker() {
        let file = SourceFile::new("q.hir", "module m {\n  def main() { k0 = 1:i32; }\n}\n");
        let start = file.text().find("k0").unwrap();
        let diag = Diagnostic::error(Span::new(start, start + 2), "unknown variable `k0`");
        let text = file.render(&diag);
        assert_eq!(
            text,
            "q.hir:2:16: error: unknown variable `k0`\n  |\n2 |   def main() { k0 = 1:i32; }\n  |                ^^\n"
        );
    }

    #[test]
    fn spans_past_the_end_are_clamped() {
        let file = SourceFile::new("x.hir", "ab");
        let text = file.render(&Diagnostic::error(
            Span::new(10, 20),
            "unexpected end of file",
        ));
        assert!(text.starts_with("x.hir:1:3: error: unexpected end of file"));
    }
}
