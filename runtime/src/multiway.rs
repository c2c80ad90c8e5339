//! The query of `@multiway_join(spec, r1, …, rk)`: a worst-case-optimal join (Leapfrog
//! Triejoin) of k relations that share variables. Both backends read the same [`Spec`]; the
//! CPU LFTJ (`cpu/multiway.rs`) is the oracle of the breadth-first GPU kernel
//! (`gpu/multiway.rs`).
//!
//! The spec is one string of `;`-separated sections:
//!
//! ```text
//! x y z; x y; y z; x z; where x < y, y < z
//! ```
//!
//! - the first section is the variable order, the order in which the join binds variables
//!   and the order of the result's columns;
//! - then one section per relation argument, naming the variable of each of its columns, in
//!   column order (a permuted order such as `z x` is fine: the relation is indexed by the
//!   variable order; every column names a variable, and a variable appears once per atom);
//! - an optional last section `where a op b, …` of comparisons between variables, `op` one
//!   of `<`, `<=`, `>`, `>=`, `!=`.
//!
//! The result is a relation (`list<i64>`, one column per variable, in the variable order): the
//! distinct bindings that put a tuple of every relation in place and pass every comparison,
//! sorted lexicographically.

use std::fmt;

use crate::args::ArgValue;
use crate::bail;
use crate::error::RuntimeError;
use crate::relation::{argument, relation_argument, RelationArgument};
use crate::value::{Value, Vector};

/// A comparison between two variables: `left op right`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Lt,
    Le,
    Gt,
    Ge,
    Ne,
}

impl CompareOp {
    pub fn holds(self, left: i64, right: i64) -> bool {
        match self {
            CompareOp::Lt => left < right,
            CompareOp::Le => left <= right,
            CompareOp::Gt => left > right,
            CompareOp::Ge => left >= right,
            CompareOp::Ne => left != right,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::Le => CompareOp::Ge,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::Ge => CompareOp::Le,
            CompareOp::Ne => CompareOp::Ne,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::Ne => "!=",
        }
    }

    /// The code the GPU kernel reads (`shaders/multiway.wgsl`).
    pub fn code(self) -> u32 {
        match self {
            CompareOp::Lt => 0,
            CompareOp::Le => 1,
            CompareOp::Gt => 2,
            CompareOp::Ge => 3,
            CompareOp::Ne => 4,
        }
    }
}

/// `left op right`, variables by their position in the variable order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comparison {
    pub left: usize,
    pub op: CompareOp,
    pub right: usize,
}

/// A parsed and checked multiway-join spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Variable names, in the join's variable order.
    pub variables: Vec<String>,
    /// Per relation argument, the variable (position in `variables`) of each column.
    pub atoms: Vec<Vec<usize>>,
    pub comparisons: Vec<Comparison>,
}

impl Spec {
    /// Parses `text`; the error says what is wrong, naming the offending variable or section.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let mut sections: Vec<&str> = text.split(';').map(str::trim).collect();
        let comparisons_text = match sections.last() {
            Some(last) if last.starts_with("where") => {
                let c = last["where".len()..].trim();
                sections.pop();
                Some(c)
            }
            _ => None,
        };
        let Some((order, atoms_text)) = sections.split_first() else {
            return Err("the spec is empty".to_string());
        };
        let variables: Vec<String> = order.split_whitespace().map(str::to_string).collect();
        if variables.is_empty() {
            return Err("the spec names no variables (first section)".to_string());
        }
        for (i, v) in variables.iter().enumerate() {
            if !v.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(format!("`{v}` is not a variable name"));
            }
            if variables[..i].contains(v) {
                return Err(format!(
                    "variable `{v}` is listed twice in the variable order"
                ));
            }
        }
        let lookup = |name: &str| -> Result<usize, String> {
            variables
                .iter()
                .position(|v| v == name)
                .ok_or_else(|| format!("variable `{name}` is not in the variable order"))
        };
        if atoms_text.is_empty() {
            return Err("the spec has no atoms".to_string());
        }
        let mut atoms = Vec::with_capacity(atoms_text.len());
        for (a, atom) in atoms_text.iter().enumerate() {
            let mut columns = Vec::new();
            for name in atom.split_whitespace() {
                let v = lookup(name)?;
                if columns.contains(&v) {
                    return Err(format!(
                        "atom {} names variable `{name}` twice (select equal columns first)",
                        a + 1
                    ));
                }
                columns.push(v);
            }
            if columns.is_empty() {
                return Err(format!("atom {} has no columns", a + 1));
            }
            atoms.push(columns);
        }
        for (v, name) in variables.iter().enumerate() {
            if !atoms.iter().any(|columns| columns.contains(&v)) {
                return Err(format!("variable `{name}` appears in no atom"));
            }
        }
        let mut comparisons = Vec::new();
        if let Some(text) = comparisons_text {
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                comparisons.push(parse_comparison(part, &lookup)?);
            }
        }
        Ok(Spec {
            variables,
            atoms,
            comparisons,
        })
    }

    /// The columns of atom `a` in the order its trie is indexed: by their variable's position
    /// in the variable order.
    pub fn trie_columns(&self, a: usize) -> Vec<usize> {
        let mut columns: Vec<usize> = (0..self.atoms[a].len()).collect();
        columns.sort_by_key(|&c| self.atoms[a][c]);
        columns
    }

    /// The atoms that contain variable `v`, each with the trie level `v` is at.
    pub fn atoms_with(&self, v: usize) -> Vec<(usize, usize)> {
        self.atoms
            .iter()
            .enumerate()
            .filter(|(_, columns)| columns.contains(&v))
            .map(|(a, columns)| (a, columns.iter().filter(|&&u| u < v).count()))
            .collect()
    }

    /// The comparisons that decide once `v` is bound, each as `v op u` with `u` before `v`.
    pub fn checks_at(&self, v: usize) -> Vec<(CompareOp, usize)> {
        self.comparisons
            .iter()
            .filter_map(|c| {
                if c.left == v && c.right < v {
                    Some((c.op, c.right))
                } else if c.right == v && c.left < v {
                    Some((c.op.flipped(), c.left))
                } else if c.left == v && c.right == v {
                    // `v op v`: decided by v alone; compare it with itself.
                    Some((c.op, v))
                } else {
                    None
                }
            })
            .collect()
    }
}

fn parse_comparison(
    part: &str,
    lookup: &impl Fn(&str) -> Result<usize, String>,
) -> Result<Comparison, String> {
    // Longest operators first, so that `<=` is not read as `<`.
    for (symbol, op) in [
        ("<=", CompareOp::Le),
        (">=", CompareOp::Ge),
        ("!=", CompareOp::Ne),
        ("<", CompareOp::Lt),
        (">", CompareOp::Gt),
    ] {
        if let Some((left, right)) = part.split_once(symbol) {
            return Ok(Comparison {
                left: lookup(left.trim())?,
                op,
                right: lookup(right.trim())?,
            });
        }
    }
    Err(format!(
        "`{part}` is not a comparison `a op b` (op: < <= > >= !=)"
    ))
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |vars: &[usize]| {
            vars.iter()
                .map(|&v| self.variables[v].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        write!(f, "{}", self.variables.join(" "))?;
        for atom in &self.atoms {
            write!(f, "; {}", names(atom))?;
        }
        if !self.comparisons.is_empty() {
            let parts: Vec<String> = self
                .comparisons
                .iter()
                .map(|c| {
                    format!(
                        "{} {} {}",
                        self.variables[c.left],
                        c.op.symbol(),
                        self.variables[c.right]
                    )
                })
                .collect();
            write!(f, "; where {}", parts.join(", "))?;
        }
        Ok(())
    }
}

/// The spec and relation arguments of `@multiway_join` and `@multiway_count`, checked as
/// both backends check them, the relations as host columns (the CPU's).
pub fn multiway_arguments(
    args: &[ArgValue<'_>],
) -> crate::error::Result<(Spec, Vec<Vec<Vec<i64>>>)> {
    let (spec, relations) = multiway_relations(args)?;
    let relations = relations
        .into_iter()
        .map(RelationArgument::into_host_columns)
        .collect::<crate::error::Result<Vec<_>>>()?;
    Ok((spec, relations))
}

/// The spec and relation arguments of `@multiway_join` and `@multiway_count`, checked; the
/// relations' columns where they are (on the device for the GPU's kernels' outputs).
pub fn multiway_relations<'v>(
    args: &[ArgValue<'v>],
) -> crate::error::Result<(Spec, Vec<RelationArgument<'v>>)> {
    if args.len() < 2 {
        bail!(
            "takes a spec and at least one relation, got {} argument(s)",
            args.len()
        );
    }
    let spec_text = match argument(args, 0)? {
        Value::Vector(Vector::Str(s) | Vector::Sym(s)) if s.len() == 1 => s.get(0).to_string(),
        other => bail!(
            "argument 1 must be the join spec (one str or sym), got {}",
            other.ty()
        ),
    };
    let spec = Spec::parse(&spec_text)
        .map_err(|e| RuntimeError::new(format!("spec `{spec_text}`: {e}")))?;
    if spec.atoms.len() != args.len() - 1 {
        bail!(
            "spec `{spec_text}` names {} atoms but {} relations are given",
            spec.atoms.len(),
            args.len() - 1
        );
    }
    let mut relations = Vec::with_capacity(spec.atoms.len());
    for (a, atom) in spec.atoms.iter().enumerate() {
        let r = relation_argument(args, a + 1)?;
        if r.columns.len() != atom.len() {
            bail!(
                "argument {} has {} columns but its atom in the spec names {}",
                a + 2,
                r.columns.len(),
                atom.len()
            );
        }
        relations.push(r);
    }
    Ok((spec, relations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_triangle_spec_names_the_order_the_atoms_and_the_comparisons() {
        let spec = Spec::parse("x y z; x y; y z; z x; where x < y, y <= z").unwrap();
        assert_eq!(spec.variables, ["x", "y", "z"]);
        assert_eq!(spec.atoms, vec![vec![0, 1], vec![1, 2], vec![2, 0]]);
        assert_eq!(spec.trie_columns(2), [1, 0]);
        assert_eq!(spec.atoms_with(0), [(0, 0), (2, 0)]);
        assert_eq!(spec.atoms_with(2), [(1, 1), (2, 1)]);
        assert_eq!(spec.checks_at(1), [(CompareOp::Gt, 0)]);
        assert_eq!(spec.checks_at(2), [(CompareOp::Ge, 1)]);
        assert_eq!(
            spec.to_string(),
            "x y z; x y; y z; z x; where x < y, y <= z"
        );
    }

    #[test]
    fn bad_specs_name_the_problem() {
        let e = |s: &str| Spec::parse(s).unwrap_err();
        assert_eq!(e("x y; x q"), "variable `q` is not in the variable order");
        assert_eq!(e("x y; x"), "variable `y` appears in no atom");
        assert_eq!(
            e("x; x x"),
            "atom 1 names variable `x` twice (select equal columns first)"
        );
        assert_eq!(e("x"), "the spec has no atoms");
        assert_eq!(
            e("x y; x y; where x ~ y"),
            "`x ~ y` is not a comparison `a op b` (op: < <= > >= !=)"
        );
    }
}
