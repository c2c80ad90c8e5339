//! Cyclic rules evaluated by one worst-case-optimal multiway join (`@multiway_join`), and
//! relations only counted (`@multiway_count`): which rules qualify and in what variable order.

use super::*;

impl Lowering<'_, '_> {
    /// The head columns of clause `c` evaluated by one `@multiway_join` (worst-case optimal):
    /// the atoms' variable columns (wildcard columns dropped) joined in `plan`'s variable
    /// order, the comparisons between atom variables folded in; the other literals are
    /// applied to the join's result.
    pub(super) fn multiway_rule(
        &mut self,
        c: usize,
        plan: &MultiwayPlan,
        code: &mut Code,
    ) -> Vec<String> {
        let clause = &self.checked.program.clauses[c];
        let arguments = self.multiway_arguments(c, plan, "multiway join", code);
        let joined = self.temp("multiway");
        code.line(&format!(
            "{joined}:list<i64> = @multiway_join({arguments});"
        ));
        let mut columns = BTreeMap::new();
        let mut witness = String::new();
        for (k, v) in plan.order.iter().enumerate() {
            let column = self.temp(v);
            code.line(&format!("{column}:i64 = @index({joined}, {k}:i64);"));
            if k == 0 {
                witness = column.clone();
            }
            columns.insert(v.clone(), column);
        }
        let mut rows = Rows { columns, witness };
        let mut applied = vec![false; clause.body.len()];
        for &i in plan.atoms.iter().chain(&plan.comparisons) {
            applied[i] = true;
        }
        self.apply_ready(clause, &mut applied, &mut rows, code);
        let mut columns = Vec::with_capacity(clause.head.args.len());
        for term in &clause.head.args {
            let operand = self.term(term, &rows, code);
            columns.push(self.full_length(operand, &rows, term, code));
        }
        columns
    }

    /// `count_R = @multiway_count(…)` of the rule `c` of a relation only counted
    /// ([`count_only_relations`]): the rule's join, its rows never built.
    pub(super) fn counted_rule(&mut self, c: usize, code: &mut Code) {
        let clause = &self.checked.program.clauses[c];
        let Some(plan) = multiway_plan(clause) else {
            return;
        };
        let arguments =
            self.multiway_arguments(c, &plan, "multiway count (its tuples only counted)", code);
        code.line(&format!(
            "{}:i64 = @multiway_count({arguments});",
            count_name(&clause.head.relation)
        ));
    }

    /// The arguments of the multiway join of clause `c` (the spec, then a list of each
    /// atom's variable columns); records the rule's plan line as `how` it runs.
    pub(super) fn multiway_arguments(
        &mut self,
        c: usize,
        plan: &MultiwayPlan,
        how: &str,
        code: &mut Code,
    ) -> String {
        let clause = &self.checked.program.clauses[c];
        let mut comparisons = Vec::new();
        for &i in &plan.comparisons {
            if let Literal::Constraint {
                op,
                left: Term::Var(l, _),
                right: Term::Var(r, _),
                ..
            } = &clause.body[i]
            {
                comparisons.push(format!("{l} {} {r}", op.symbol()));
            }
        }
        let description = format!(
            "{how}, variable order {}{}",
            plan.order.join(" "),
            if comparisons.is_empty() {
                String::new()
            } else {
                format!(", where {}", comparisons.join(", "))
            }
        );
        self.rule_plans
            .insert(c, format!("rule {}: {description}", rule_head(clause)));
        code.line(&format!("// rule {}: {description}", clause.head.relation));
        let mut lists = Vec::new();
        let mut atom_specs = Vec::new();
        for &i in &plan.atoms {
            let atom = atom_of(clause, i);
            let source = full(&atom.relation);
            let (mut columns, mut names) = (Vec::new(), Vec::new());
            for (k, term) in atom.args.iter().enumerate() {
                if let Term::Var(v, _) = term {
                    let column = self.temp(&format!("{}_{k}", atom.relation));
                    code.line(&format!("{column}:i64 = @index({source}, {k}:i64);"));
                    columns.push(column);
                    names.push(v.as_str());
                }
            }
            lists.push(format!("@list({})", columns.join(", ")));
            atom_specs.push(names.join(" "));
        }
        let mut spec = format!("{}; {}", plan.order.join(" "), atom_specs.join("; "));
        if !comparisons.is_empty() {
            spec.push_str(&format!("; where {}", comparisons.join(", ")));
        }
        format!("{}:sym, {}", symbol_literal(&spec), lists.join(", "))
    }

    /// A column of the operand's value with one element per row: constants repeated,
    /// columns and arithmetic as they are.
    pub(super) fn full_length(
        &mut self,
        operand: String,
        rows: &Rows,
        term: &Term,
        code: &mut Code,
    ) -> String {
        if !matches!(term, Term::Number(..) | Term::Symbol(..)) {
            return operand;
        }
        let column = self.temp("constant");
        code.line(&format!(
            "{column}:i64 = @vector(@len({}), {operand});",
            rows.witness
        ));
        column
    }
}

/// The variable holding the number of tuples of a relation only counted.
pub(super) fn count_name(relation: &str) -> String {
    format!("count_{relation}")
}

/// Relations whose tuples nothing needs but their number, each with its rule: defined by one
/// rule (no input, no fact) that runs as a multiway join and has nothing in its body but the
/// join's atoms and comparisons, whose head is the join's variables, each once (so the
/// join's rows and the relation's tuples are one to one); not an output; read only by
/// `count` aggregates whose atom is wildcards and distinct variables (no filter). Such a
/// relation is never built: `count_R = @multiway_count(…)` of its rule counts at the last
/// variable (a triangle count needs no triangle list).
pub(super) fn count_only_relations(checked: &Checked<'_>) -> BTreeMap<usize, usize> {
    let program = checked.program;
    let mut found = BTreeMap::new();
    'relations: for (id, relation) in checked.relations.iter().enumerate() {
        if relation.input || relation.output {
            continue;
        }
        let defining: Vec<usize> = program
            .clauses
            .iter()
            .enumerate()
            .filter(|(_, c)| c.head.relation == relation.name)
            .map(|(c, _)| c)
            .collect();
        let [c] = defining[..] else {
            continue;
        };
        let clause = &program.clauses[c];
        let Some(plan) = multiway_plan(clause) else {
            continue;
        };
        if plan.atoms.len() + plan.comparisons.len() != clause.body.len()
            || checked
                .strata
                .iter()
                .any(|s| s.recursive && s.relations.contains(&id))
        {
            continue;
        }
        let mut head: Vec<&str> = Vec::new();
        for term in &clause.head.args {
            match term {
                Term::Var(v, _) if !head.contains(&v.as_str()) => head.push(v),
                _ => continue 'relations,
            }
        }
        if head.len() != plan.order.len() || plan.order.iter().any(|v| !head.contains(&v.as_str()))
        {
            continue;
        }
        let mut counted = false;
        for other in &program.clauses {
            for literal in &other.body {
                match literal {
                    Literal::Positive(a) | Literal::Negative(a) if a.relation == relation.name => {
                        continue 'relations
                    }
                    Literal::Aggregate(a) if a.atom.relation == relation.name => {
                        let mut seen: Vec<&str> = Vec::new();
                        for term in &a.atom.args {
                            match term {
                                Term::Wildcard(_) => {}
                                Term::Var(v, _) if !seen.contains(&v.as_str()) => seen.push(v),
                                _ => continue 'relations,
                            }
                        }
                        if a.kind != AggregateKind::Count {
                            continue 'relations;
                        }
                        counted = true;
                    }
                    _ => {}
                }
            }
        }
        if counted {
            found.insert(id, c);
        }
    }
    found
}

/// A rule evaluated by one multiway join.
pub(super) struct MultiwayPlan {
    /// Variables, most constrained first.
    pub(super) order: Vec<String>,
    /// Body indexes of the positive atoms.
    pub(super) atoms: Vec<usize>,
    /// Body indexes of the comparisons folded into the join (`<`, `<=`, `>`, `>=`, `!=`
    /// between two variables of the atoms).
    pub(super) comparisons: Vec<usize>,
}

/// The multiway plan of a rule whose positive atoms (three or more, of variables and
/// wildcards only, no variable twice in one atom) share variables in a cycle; None for the
/// others, which run as chains of binary joins.
pub(super) fn multiway_plan(clause: &Clause) -> Option<MultiwayPlan> {
    let atoms: Vec<(usize, &Atom)> = positive_atoms(clause).collect();
    if atoms.len() < 3 {
        return None;
    }
    let mut edges: Vec<Vec<&str>> = Vec::with_capacity(atoms.len());
    let mut first_seen: Vec<&str> = Vec::new();
    for (_, atom) in &atoms {
        let mut vars: Vec<&str> = Vec::new();
        for term in &atom.args {
            match term {
                Term::Var(v, _) if vars.contains(&v.as_str()) => return None,
                Term::Var(v, _) => vars.push(v),
                Term::Wildcard(_) => {}
                _ => return None,
            }
        }
        if vars.is_empty() {
            return None;
        }
        for v in &vars {
            if !first_seen.contains(v) {
                first_seen.push(v);
            }
        }
        edges.push(vars);
    }
    if !cyclic(&edges) {
        return None;
    }
    let comparisons: Vec<(usize, &str, &str)> = clause
        .body
        .iter()
        .enumerate()
        .filter_map(|(i, literal)| match literal {
            Literal::Constraint {
                op,
                left: Term::Var(l, _),
                right: Term::Var(r, _),
                ..
            } if *op != CmpOp::Eq
                && l != r
                && first_seen.contains(&l.as_str())
                && first_seen.contains(&r.as_str()) =>
            {
                Some((i, l.as_str(), r.as_str()))
            }
            _ => None,
        })
        .collect();
    // Most constrained first: the variable in the most atoms; then, among those sharing an
    // atom with the chosen ones, the most connected, the most atoms, the most comparisons
    // with the chosen ones; ties in order of appearance.
    let mut order: Vec<&str> = Vec::new();
    while order.len() < first_seen.len() {
        let next = first_seen
            .iter()
            .enumerate()
            .filter(|(_, v)| !order.contains(v))
            .max_by_key(|&(position, &v)| {
                let in_atoms = edges.iter().filter(|e| e.contains(&v)).count();
                let connected = edges
                    .iter()
                    .filter(|e| e.contains(&v) && e.iter().any(|u| order.contains(u)))
                    .count();
                let compared = comparisons
                    .iter()
                    .filter(|(_, l, r)| {
                        (*l == v && order.contains(r)) || (*r == v && order.contains(l))
                    })
                    .count();
                (connected, in_atoms, compared, std::cmp::Reverse(position))
            })
            .map(|(_, v)| *v)?;
        order.push(next);
    }
    Some(MultiwayPlan {
        order: order.into_iter().map(str::to_string).collect(),
        atoms: atoms.iter().map(|(i, _)| *i).collect(),
        comparisons: comparisons.iter().map(|(i, _, _)| *i).collect(),
    })
}

/// Whether the hypergraph of `edges` (each a set of variables) is cyclic: GYO reduction
/// (drop variables in only one edge, and edges inside another edge) leaves something.
pub(super) fn cyclic(edges: &[Vec<&str>]) -> bool {
    let mut edges: Vec<Vec<&str>> = edges.to_vec();
    loop {
        let mut changed = false;
        let all: Vec<&str> = edges.iter().flatten().copied().collect();
        for edge in &mut edges {
            let before = edge.len();
            edge.retain(|v| all.iter().filter(|u| *u == v).count() > 1);
            changed |= edge.len() != before;
        }
        let mut i = 0;
        while i < edges.len() {
            let contained = edges.iter().enumerate().any(|(j, other)| {
                j != i
                    && edges[i].iter().all(|v| other.contains(v))
                    && (edges[i].len() < other.len() || j < i)
            });
            if edges[i].is_empty() || contained {
                edges.remove(i);
                changed = true;
            } else {
                i += 1;
            }
        }
        if !changed {
            return !edges.is_empty();
        }
    }
}
