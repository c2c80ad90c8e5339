//! A generated program: user functions and a `main` made of statements, each a unit the
//! shrinker can drop, that knows which variables it defines and uses.

use std::collections::BTreeSet;
use std::fmt::Write;

use horsec_runtime::types::Type;

/// Index of a variable in [`Program::vars`].
pub type VarId = usize;

/// The characters around a variable's number in a [`placeholder`].
pub const OPEN: char = '\u{1}';
pub const CLOSE: char = '\u{2}';

/// The name of variable `v` in statement lines, resolved by [`Program::text`].
pub fn placeholder(v: VarId) -> String {
    format!("{OPEN}{v}{CLOSE}")
}

/// A length class: two values of the same class have the same length at run time (they come
/// from the same table, the same mask, the same group, ...). Values of different classes may
/// differ in length.
pub type ClassId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Length 1, broadcast by element-wise builtins.
    Scalar,
    /// A vector of the length class.
    Rows(ClassId),
}

#[derive(Clone, Debug)]
pub struct Var {
    /// The start of its name; [`Program::text`] appends a number.
    pub prefix: String,
    /// The static type, as the type rules (`horsec::sema::rules`) give it.
    pub ty: Type,
    pub shape: Shape,
    /// A float whose value depends on the order of a summation (a float `@sum` or `@avg`,
    /// grouped or not, and what is computed from it): the backends add in different orders,
    /// so its last bits may differ, and it never feeds a discrete decision (see "Summation
    /// order" in `tests/fuzz/mod.rs`).
    pub reordered: bool,
}

/// One statement of `main` (or a compound one: a group-by, a join, a loop), kept or dropped
/// as a whole by the shrinker.
#[derive(Clone, Debug, Default)]
pub struct Stmt {
    /// HorseIR lines, without the indentation of `main`'s body.
    pub lines: Vec<String>,
    /// The variables it defines that later statements may use.
    pub defs: Vec<VarId>,
    /// The variables of earlier statements it reads.
    pub uses: Vec<VarId>,
    /// Indexes into [`Program::functions`] of the user functions it calls.
    pub calls: Vec<usize>,
}

#[derive(Clone, Debug)]
pub struct Function {
    /// Its name (a placeholder, like variables).
    pub name: String,
    /// `def f(p:T, ...) : R`
    pub header: String,
    /// Statements over the parameters, kept or dropped by the shrinker like `main`'s.
    pub body: Vec<Stmt>,
    /// The variable it returns.
    pub result: VarId,
}

#[derive(Clone, Debug, Default)]
pub struct Program {
    pub vars: Vec<Var>,
    pub functions: Vec<Function>,
    pub stmts: Vec<Stmt>,
    /// The variables `main` returns (basic vectors), compared between the backends.
    pub returns: Vec<VarId>,
}

impl Program {
    /// The program as HorseIR text: only the functions some statement calls.
    pub fn text(&self) -> String {
        let called: BTreeSet<usize> = self
            .stmts
            .iter()
            .flat_map(|s| s.calls.iter().copied())
            .collect();
        let mut out = String::from("module fuzz {\n  import Builtin.*;\n");
        for index in called {
            let f = &self.functions[index];
            let _ = writeln!(out, "\n  {} {{", f.header);
            for line in f.body.iter().flat_map(|s| &s.lines) {
                let _ = writeln!(out, "    {line}");
            }
            let _ = writeln!(out, "    return {};\n  }}", placeholder(f.result));
        }
        let types: Vec<String> = self
            .returns
            .iter()
            .map(|&v| self.vars[v].ty.to_string())
            .collect();
        let _ = writeln!(out, "\n  def main() : {} {{", types.join(", "));
        for stmt in &self.stmts {
            for line in &stmt.lines {
                let _ = writeln!(out, "    {line}");
            }
        }
        let names: Vec<String> = self.returns.iter().map(|&v| placeholder(v)).collect();
        let _ = writeln!(out, "    return {};\n  }}\n}}", names.join(", "));
        self.resolve_names(&out)
    }

    /// Replaces each variable's placeholder with its prefix and a number counted in order of
    /// first appearance, so programs of the same structure have the same text (and their
    /// kernels the same WGSL, which the device's pipeline cache then shares).
    fn resolve_names(&self, raw: &str) -> String {
        let mut numbers: std::collections::HashMap<VarId, usize> = Default::default();
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(start) = rest.find(OPEN) {
            out.push_str(&rest[..start]);
            let after = &rest[start + OPEN.len_utf8()..];
            let end = after.find(CLOSE).unwrap_or(after.len());
            let id: VarId = after[..end].parse().unwrap_or(usize::MAX);
            let next = numbers.len();
            let number = *numbers.entry(id).or_insert(next);
            let prefix = self.vars.get(id).map_or("bad", |v| v.prefix.as_str());
            let _ = write!(out, "{prefix}{number}");
            rest = &after[(end + CLOSE.len_utf8()).min(after.len())..];
        }
        out.push_str(rest);
        out
    }

    /// The program without statement `index` and every statement that depends on it
    /// (transitively); None when that would leave nothing to return.
    pub fn without_stmt(&self, index: usize) -> Option<Program> {
        let mut removed: BTreeSet<VarId> = self.stmts[index].defs.iter().copied().collect();
        let mut stmts = Vec::with_capacity(self.stmts.len());
        for (i, stmt) in self.stmts.iter().enumerate() {
            if i == index || stmt.uses.iter().any(|u| removed.contains(u)) {
                removed.extend(stmt.defs.iter().copied());
            } else {
                stmts.push(stmt.clone());
            }
        }
        let returns: Vec<VarId> = self
            .returns
            .iter()
            .copied()
            .filter(|v| !removed.contains(v))
            .collect();
        if returns.is_empty() {
            return None;
        }
        Some(Program {
            vars: self.vars.clone(),
            functions: self.functions.clone(),
            stmts,
            returns,
        })
    }

    /// The program without statement `stmt` of function `function` (and the statements of
    /// the function that depend on it); None when the function's result depends on it.
    pub fn without_function_stmt(&self, function: usize, stmt: usize) -> Option<Program> {
        let f = &self.functions[function];
        let mut removed: BTreeSet<VarId> = f.body[stmt].defs.iter().copied().collect();
        let mut body = Vec::new();
        for (i, s) in f.body.iter().enumerate() {
            if i == stmt || s.uses.iter().any(|u| removed.contains(u)) {
                removed.extend(s.defs.iter().copied());
            } else {
                body.push(s.clone());
            }
        }
        if removed.contains(&f.result) {
            return None;
        }
        let mut p = self.clone();
        p.functions[function].body = body;
        Some(p)
    }

    /// The program returning all but its `index`th value; None when it returns only one.
    pub fn without_return(&self, index: usize) -> Option<Program> {
        if self.returns.len() < 2 {
            return None;
        }
        let mut p = self.clone();
        p.returns.remove(index);
        Some(p)
    }

    /// Drops statements that nothing returned depends on (after the shrinker removed uses).
    pub fn without_dead_code(&self) -> Program {
        let mut live: BTreeSet<VarId> = self.returns.iter().copied().collect();
        let mut keep = vec![false; self.stmts.len()];
        for (i, stmt) in self.stmts.iter().enumerate().rev() {
            if stmt.defs.iter().any(|d| live.contains(d)) {
                keep[i] = true;
                live.extend(stmt.uses.iter().copied());
            }
        }
        let mut p = self.clone();
        p.stmts = self
            .stmts
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(s, _)| s.clone())
            .collect();
        p
    }
}
