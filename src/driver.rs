//! The compiler driver: runs the stages in order on one source file and keeps what each
//! produced, with its time, so the CLI and tests can print any stage.

use std::time::{Duration, Instant};

use horsec_runtime::plan::Plan;

use crate::diag::{has_errors, Diagnostic, SourceFile};
use crate::sema::{self, typed::TypedProgram};
use crate::syntax::{self, ast::Program};

/// Everything the compiler produced for one file, up to the first stage that failed.
pub struct Compilation {
    pub file: SourceFile,
    /// Errors and warnings of every stage that ran.
    pub diagnostics: Vec<Diagnostic>,
    pub ast: Option<Program>,
    pub typed: Option<TypedProgram>,
    pub plan: Option<Plan>,
    /// Wall time of each stage that ran, in order.
    pub stage_times: Vec<(&'static str, Duration)>,
}

impl Compilation {
    /// True when a stage reported an error (the later stages did not run).
    pub fn failed(&self) -> bool {
        has_errors(&self.diagnostics)
    }

    /// All diagnostics rendered as `file:line:col: severity: message` with source snippets.
    pub fn render_diagnostics(&self) -> String {
        self.file.render_all(&self.diagnostics)
    }
}

/// How far to take the compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Parse,
    Analyze,
    Plan,
}

/// Compiles `text` (named `name` in diagnostics) up to and including `until`.
pub fn compile(name: &str, text: &str, until: Stage) -> Compilation {
    let mut c = Compilation {
        file: SourceFile::new(name, text),
        diagnostics: Vec::new(),
        ast: None,
        typed: None,
        plan: None,
        stage_times: Vec::new(),
    };

    let start = Instant::now();
    let (ast, diags) = syntax::parse(text);
    c.stage_times.push(("parse", start.elapsed()));
    c.diagnostics.extend(diags);
    c.ast = ast;
    let Some(ast) = c.ast.as_ref().filter(|_| !c.failed()) else {
        return c;
    };
    if until < Stage::Analyze {
        return c;
    }

    let start = Instant::now();
    let (typed, diags) = sema::analyze(ast);
    c.stage_times.push(("analyze", start.elapsed()));
    c.diagnostics.extend(diags);
    c.typed = typed;
    let Some(typed) = c.typed.as_ref().filter(|_| !has_errors(&c.diagnostics)) else {
        return c;
    };
    if until < Stage::Plan {
        return c;
    }

    let start = Instant::now();
    let plan = crate::lower::lower(typed, &c.file);
    c.stage_times.push(("lower", start.elapsed()));
    c.plan = Some(plan);
    c
}
