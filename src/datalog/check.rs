//! Checks of a parsed Datalog program — declarations, arities, types (number / symbol),
//! variable binding (range restriction), stratified negation — and its strata in
//! evaluation order (strongly connected components of the dependency graph, petgraph).

use std::collections::{BTreeMap, HashMap};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::ast::*;
use crate::diag::Diagnostic;
use crate::syntax::ast::Span;

/// A declared relation.
#[derive(Clone, Debug)]
pub struct Relation {
    pub name: String,
    pub attrs: Vec<String>,
    pub types: Vec<AttrType>,
    pub input: bool,
    pub output: bool,
}

/// Relations evaluated together: one strongly connected component of the dependency graph.
#[derive(Clone, Debug)]
pub struct Stratum {
    /// Relation ids, in declaration order.
    pub relations: Vec<usize>,
    /// Some rule of the stratum reads a relation of the stratum.
    pub recursive: bool,
}

/// A program that passed every check.
#[derive(Debug)]
pub struct Checked<'p> {
    pub program: &'p Program,
    pub relations: Vec<Relation>,
    pub ids: HashMap<String, usize>,
    /// In evaluation order: a stratum reads only its own relations and earlier strata's.
    pub strata: Vec<Stratum>,
    /// The type of every variable of every clause (`var_types[clause][name]`).
    pub var_types: Vec<BTreeMap<String, AttrType>>,
}

/// Checks `program`; the errors name the problem and point at it.
pub fn check(program: &Program) -> Result<Checked<'_>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut relations = Vec::new();
    let mut ids = HashMap::new();
    for decl in &program.decls {
        if ids.contains_key(&decl.name) {
            diags.push(Diagnostic::error(
                decl.span,
                format!("relation `{}` is declared twice", decl.name),
            ));
            continue;
        }
        if decl.attrs.is_empty() {
            diags.push(Diagnostic::error(
                decl.span,
                format!(
                    "relation `{}` has no attributes; horsec needs at least one",
                    decl.name
                ),
            ));
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for attr in &decl.attrs {
            if seen.contains(&attr.name.as_str()) {
                diags.push(Diagnostic::error(
                    attr.span,
                    format!("attribute `{}` appears twice in `{}`", attr.name, decl.name),
                ));
            }
            seen.push(&attr.name);
        }
        ids.insert(decl.name.clone(), relations.len());
        relations.push(Relation {
            name: decl.name.clone(),
            attrs: decl.attrs.iter().map(|a| a.name.clone()).collect(),
            types: decl.attrs.iter().map(|a| a.ty).collect(),
            input: false,
            output: false,
        });
    }
    for (directives, input) in [(&program.inputs, true), (&program.outputs, false)] {
        for d in directives {
            match ids.get(&d.relation) {
                Some(&id) if input => relations[id].input = true,
                Some(&id) => relations[id].output = true,
                None => diags.push(unknown_relation(&d.relation, d.span)),
            }
        }
    }

    let mut var_types = Vec::with_capacity(program.clauses.len());
    for clause in &program.clauses {
        let mut checker = ClauseChecker {
            relations: &relations,
            ids: &ids,
            types: BTreeMap::new(),
            diags: &mut diags,
        };
        checker.clause(clause);
        var_types.push(checker.types);
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let strata = stratify(program, &relations, &ids)?;
    Ok(Checked {
        program,
        relations,
        ids,
        strata,
        var_types,
    })
}

fn unknown_relation(name: &str, span: Span) -> Diagnostic {
    Diagnostic::error(span, format!("unknown relation `{name}`"))
        .with_note("declare it with `.decl`")
}

struct ClauseChecker<'a> {
    relations: &'a [Relation],
    ids: &'a HashMap<String, usize>,
    types: BTreeMap<String, AttrType>,
    diags: &'a mut Vec<Diagnostic>,
}

impl ClauseChecker<'_> {
    fn clause(&mut self, clause: &Clause) {
        let before = self.diags.len();
        // Types: positive atoms first (they bind), then negations and the head.
        for literal in &clause.body {
            if let Literal::Positive(atom) = literal {
                self.body_atom(atom);
            }
        }
        for literal in &clause.body {
            if let Literal::Negative(atom) = literal {
                self.body_atom(atom);
            }
        }
        for literal in &clause.body {
            if let Literal::Aggregate(aggregate) = literal {
                self.aggregate(clause, aggregate);
            }
        }
        // Equalities bind variables not bound by an atom (`y = x + 1`): type their terms
        // in binding order, then every constraint.
        let bound = self.bound_variables(clause);
        for literal in &clause.body {
            if let Literal::Constraint {
                op, left, right, ..
            } = literal
            {
                self.constraint(*op, left, right);
            }
        }
        self.atom(&clause.head);
        if self.diags.len() > before {
            return;
        }
        let has_positive = clause
            .body
            .iter()
            .any(|l| matches!(l, Literal::Positive(_) | Literal::Aggregate(_)));
        if !clause.body.is_empty() && !has_positive {
            self.diags.push(Diagnostic::error(
                clause.span,
                "a rule needs at least one positive body atom",
            ));
            return;
        }
        for term in &clause.head.args {
            if let Term::Wildcard(span) = term {
                self.diags
                    .push(Diagnostic::error(*span, "`_` cannot stand in a head"));
            }
            self.require_bound(term, &bound, "in the head");
        }
        for literal in &clause.body {
            match literal {
                Literal::Negative(atom) => {
                    for term in &atom.args {
                        self.require_bound(term, &bound, "in a negation");
                    }
                }
                Literal::Constraint { left, right, .. } => {
                    for term in [left, right] {
                        if let Term::Wildcard(span) = term {
                            self.diags
                                .push(Diagnostic::error(*span, "`_` cannot stand in a constraint"));
                        }
                        self.require_bound(term, &bound, "in a constraint");
                    }
                }
                Literal::Positive(_) | Literal::Aggregate(_) => {}
            }
        }
    }

    /// An aggregate: its atom, a number result, a number target among the atom's variables,
    /// and no variable of the atom used elsewhere in the rule (aggregates are not correlated).
    fn aggregate(&mut self, clause: &Clause, aggregate: &Aggregate) {
        self.body_atom(&aggregate.atom);
        let mut inner = Vec::new();
        for term in &aggregate.atom.args {
            term.variables(&mut inner);
        }
        if let Some((target, span)) = &aggregate.target {
            if !inner.contains(&target.as_str()) {
                self.diags.push(Diagnostic::error(
                    *span,
                    format!(
                        "the aggregated variable `{target}` does not appear in the body of `{}`",
                        aggregate.kind.name()
                    ),
                ));
            } else {
                let place = format!("the variable `{}` aggregates", aggregate.kind.name());
                self.expect(&Term::Var(target.clone(), *span), AttrType::Number, &place);
            }
        }
        let result = Term::Var(aggregate.result.clone(), aggregate.result_span);
        self.expect(&result, AttrType::Number, "the result of an aggregate");
        let mut outside = Vec::new();
        for term in &clause.head.args {
            term.variables(&mut outside);
        }
        outside.push(aggregate.result.as_str());
        for literal in &clause.body {
            match literal {
                Literal::Aggregate(other) if std::ptr::eq(other, aggregate) => {}
                Literal::Aggregate(other) => {
                    outside.push(other.result.as_str());
                    for term in &other.atom.args {
                        term.variables(&mut outside);
                    }
                }
                Literal::Positive(atom) | Literal::Negative(atom) => {
                    for term in &atom.args {
                        term.variables(&mut outside);
                    }
                }
                Literal::Constraint { left, right, .. } => {
                    left.variables(&mut outside);
                    right.variables(&mut outside);
                }
            }
        }
        for term in &aggregate.atom.args {
            if let Term::Var(name, span) = term {
                if outside.contains(&name.as_str()) {
                    self.diags.push(
                        Diagnostic::error(
                            *span,
                            format!(
                                "variable `{name}` of an aggregate's body is also used outside it"
                            ),
                        )
                        .with_note("horsec's aggregates are not correlated: rename it"),
                    );
                }
            }
        }
    }

    /// Variables bound by positive atoms, then by equalities with one unbound variable side.
    fn bound_variables(&mut self, clause: &Clause) -> Vec<String> {
        let mut bound: Vec<String> = Vec::new();
        for literal in &clause.body {
            if let Literal::Aggregate(aggregate) = literal {
                bound.push(aggregate.result.clone());
            }
        }
        for literal in &clause.body {
            if let Literal::Positive(atom) = literal {
                for term in &atom.args {
                    if let Term::Var(name, _) = term {
                        if !bound.contains(name) {
                            bound.push(name.clone());
                        }
                    }
                }
            }
        }
        loop {
            let mut changed = false;
            for literal in &clause.body {
                if let Literal::Constraint {
                    op: CmpOp::Eq,
                    left,
                    right,
                    ..
                } = literal
                {
                    for (target, source) in [(left, right), (right, left)] {
                        if let Term::Var(name, _) = target {
                            let mut vars = Vec::new();
                            source.variables(&mut vars);
                            if !bound.contains(name)
                                && vars.iter().all(|v| bound.iter().any(|b| b == v))
                            {
                                bound.push(name.clone());
                                changed = true;
                            }
                        }
                    }
                }
            }
            if !changed {
                return bound;
            }
        }
    }

    fn require_bound(&mut self, term: &Term, bound: &[String], place: &str) {
        match term {
            Term::Var(name, span) if !bound.contains(name) => {
                self.diags.push(
                    Diagnostic::error(*span, format!("unbound variable `{name}` {place}"))
                        .with_note("every variable of a head, a negation or a constraint must appear in a positive body atom"),
                );
            }
            Term::Binary { left, right, .. } => {
                self.require_bound(left, bound, place);
                self.require_bound(right, bound, place);
            }
            Term::Negate(inner, _) => self.require_bound(inner, bound, place),
            _ => {}
        }
    }

    /// A body atom: its arguments are variables, `_` or constants.
    fn body_atom(&mut self, atom: &Atom) {
        for term in &atom.args {
            if let Term::Binary { span, .. } | Term::Negate(_, span) = term {
                self.diags.push(
                    Diagnostic::error(*span, "arithmetic in a body atom is not supported")
                        .with_note("bind a new variable instead: `r(y), x = y + 1`"),
                );
            }
        }
        self.atom(atom);
    }

    fn atom(&mut self, atom: &Atom) {
        let Some(&id) = self.ids.get(&atom.relation) else {
            self.diags
                .push(unknown_relation(&atom.relation, atom.name_span));
            return;
        };
        let relation = &self.relations[id];
        if atom.args.len() != relation.types.len() {
            self.diags.push(Diagnostic::error(
                atom.span,
                format!(
                    "`{}` has {} attribute(s), found {} argument(s)",
                    atom.relation,
                    relation.types.len(),
                    atom.args.len()
                ),
            ));
            return;
        }
        for ((term, &ty), attr) in atom.args.iter().zip(&relation.types).zip(&relation.attrs) {
            let place = format!("attribute `{attr}` of `{}`", atom.relation);
            self.expect(term, ty, &place);
        }
    }

    fn constraint(&mut self, op: CmpOp, left: &Term, right: &Term) {
        let ordered = !matches!(op, CmpOp::Eq | CmpOp::Ne);
        if ordered {
            let place = format!("an operand of `{}`", op.symbol());
            self.expect(left, AttrType::Number, &place);
            self.expect(right, AttrType::Number, &place);
            return;
        }
        let ty = self.infer(left).or_else(|| self.infer(right));
        if let Some(ty) = ty {
            let place = format!("an operand of `{}`", op.symbol());
            self.expect(left, ty, &place);
            self.expect(right, ty, &place);
        }
    }

    /// The type of a term when it is known (a constant, arithmetic, a typed variable).
    fn infer(&self, term: &Term) -> Option<AttrType> {
        match term {
            Term::Number(..) | Term::Binary { .. } | Term::Negate(..) => Some(AttrType::Number),
            Term::Symbol(..) => Some(AttrType::Symbol),
            Term::Var(name, _) => self.types.get(name).copied(),
            Term::Wildcard(_) => None,
        }
    }

    /// Requires `term` to have type `ty` where it stands for `place`.
    fn expect(&mut self, term: &Term, ty: AttrType, place: &str) {
        let mismatch = |found: &str, span: Span| {
            Diagnostic::error(
                span,
                format!("type mismatch: {place} is a {}, found {found}", ty.name()),
            )
        };
        match term {
            Term::Wildcard(_) => {}
            Term::Number(_, span) if ty == AttrType::Symbol => {
                self.diags.push(mismatch("a number", *span));
            }
            Term::Symbol(_, span) if ty == AttrType::Number => {
                self.diags.push(mismatch("a symbol", *span));
            }
            Term::Number(..) | Term::Symbol(..) => {}
            Term::Binary {
                op: ArithOp::Div,
                span,
                ..
            } => {
                self.diags.push(
                    Diagnostic::error(*span, "division `/` is not supported")
                        .with_note("numbers are integers; HorseIR's @div is floating-point"),
                );
            }
            Term::Binary {
                left, right, span, ..
            } => {
                if ty == AttrType::Symbol {
                    self.diags.push(mismatch("arithmetic", *span));
                    return;
                }
                self.expect(left, AttrType::Number, "an operand of arithmetic");
                self.expect(right, AttrType::Number, "an operand of arithmetic");
            }
            Term::Negate(inner, span) => {
                if ty == AttrType::Symbol {
                    self.diags.push(mismatch("arithmetic", *span));
                    return;
                }
                self.expect(inner, AttrType::Number, "an operand of arithmetic");
            }
            Term::Var(name, span) => match self.types.get(name) {
                Some(&known) if known != ty => {
                    self.diags.push(mismatch(
                        &format!("variable `{name}`, a {}", known.name()),
                        *span,
                    ));
                }
                Some(_) => {}
                None => {
                    self.types.insert(name.clone(), ty);
                }
            },
        }
    }
}

/// The strata of the program in evaluation order; an error for negation inside recursion.
fn stratify(
    program: &Program,
    relations: &[Relation],
    ids: &HashMap<String, usize>,
) -> Result<Vec<Stratum>, Vec<Diagnostic>> {
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..relations.len()).map(|id| graph.add_node(id)).collect();
    // Strict dependencies: (body relation, head relation, the atom's span, negation or aggregate).
    let mut negations = Vec::new();
    let mut self_loops = vec![false; relations.len()];
    for clause in &program.clauses {
        let head = ids[&clause.head.relation];
        for literal in &clause.body {
            // What the head depends on strictly: the negation or (reading the whole of its
            // relation) an aggregate of `atom`, computed in an earlier stratum.
            let (atom, negated) = match literal {
                Literal::Positive(atom) => (atom, None),
                Literal::Negative(atom) => (atom, Some("the negation")),
                Literal::Aggregate(aggregate) => (&aggregate.atom, Some("an aggregate")),
                Literal::Constraint { .. } => continue,
            };
            let body = ids[&atom.relation];
            graph.update_edge(nodes[body], nodes[head], ());
            if body == head {
                self_loops[head] = true;
            }
            if let Some(how) = negated {
                negations.push((body, head, atom.span, how));
            }
        }
    }
    let mut components = tarjan_scc(&graph);
    // petgraph lists components in reverse topological order; edges run body → head.
    components.reverse();
    let mut component_of = vec![0; relations.len()];
    let mut strata = Vec::with_capacity(components.len());
    for (c, nodes_of) in components.iter().enumerate() {
        let mut members: Vec<usize> = nodes_of.iter().map(|n| graph[*n]).collect();
        members.sort_unstable();
        for &id in &members {
            component_of[id] = c;
        }
        let recursive = members.len() > 1 || self_loops[members[0]];
        strata.push(Stratum {
            relations: members,
            recursive,
        });
    }
    let diags: Vec<Diagnostic> = negations
        .iter()
        .filter(|(body, head, _, _)| component_of[*body] == component_of[*head])
        .map(|(body, head, span, how)| {
            Diagnostic::error(
                *span,
                format!(
                    "unstratifiable program: `{}` depends on {how} of `{}`, which depends on `{}`",
                    relations[*head].name, relations[*body].name, relations[*head].name
                ),
            )
            .with_note(format!("{how} must not be part of a recursive cycle"))
        })
        .collect();
    if diags.is_empty() {
        Ok(strata)
    } else {
        Err(diags)
    }
}
