//! A rule's body as a chain of binary joins: the first atom's columns, then each further
//! atom joined on the variables already bound (`@sorted_join`, or `@join_unique` where the
//! pairs need only their distinct projections), with constraints, bindings and negations
//! applied as soon as their variables are bound.

use super::*;

impl Lowering<'_, '_> {
    /// The head columns of clause `c` with body atoms reading `versions`; `first` is the
    /// atom to start from (the delta atom of a semi-naive variant).
    pub(super) fn rule(
        &mut self,
        c: usize,
        versions: &[Version],
        first: Option<usize>,
        code: &mut Code,
    ) -> Vec<String> {
        let checked = self.checked;
        let clause = &checked.program.clauses[c];
        if first.is_none() && !self.binary_joins {
            if let Some(plan) = multiway_plan(clause) {
                return self.multiway_rule(c, &plan, code);
            }
        }
        let atoms = positive_atoms(clause).count();
        self.rule_plans.entry(c).or_insert_with(|| {
            format!(
                "rule {}: {}",
                rule_head(clause),
                if atoms > 1 {
                    "binary joins"
                } else {
                    "one atom"
                }
            )
        });
        code.line(&format!(
            "// rule {}{}",
            clause.head.relation,
            match first {
                Some(d) => format!(", delta of body atom {}", d + 1),
                None => String::new(),
            }
        ));
        let mut pending: Vec<usize> = positive_atoms(clause).map(|(i, _)| i).collect();
        let mut applied = vec![false; clause.body.len()];
        let mut rows = match first.or(pending.first().copied()) {
            Some(start) => {
                pending.retain(|&i| i != start);
                applied[start] = true;
                self.first_atom(clause, start, versions[start], code)
            }
            None => {
                // Only aggregates (checked): they bind their results on one row, which the
                // first aggregate's value (one element) stands for.
                Rows {
                    columns: BTreeMap::new(),
                    witness: String::new(),
                }
            }
        };
        self.apply_ready(clause, &mut applied, &mut rows, code);
        while !pending.is_empty() {
            // The atom sharing the most bound variables next (the earliest on ties).
            let next = *pending
                .iter()
                .max_by_key(|&&i| {
                    let shared = atom_of(clause, i)
                        .args
                        .iter()
                        .filter(|t| matches!(t, Term::Var(v, _) if rows.columns.contains_key(v)))
                        .count();
                    (shared, std::cmp::Reverse(i))
                })
                .unwrap_or(&pending[0]);
            pending.retain(|&i| i != next);
            applied[next] = true;
            let head_vars: Option<Vec<&str>> = clause
                .head
                .args
                .iter()
                .map(|t| match t {
                    Term::Var(v, _) => Some(v.as_str()),
                    _ => None,
                })
                .collect();
            match head_vars {
                // The last step, with nothing left to apply and a head of variables: the
                // head's tuples. In the loop, those already in full_R are not new: the
                // batched join drops them per batch.
                Some(head_vars) if pending.is_empty() && applied.iter().all(|&a| a) => {
                    let known = first.map(|_| full(&clause.head.relation));
                    if let Some(columns) = self.join_unique(
                        clause,
                        next,
                        versions[next],
                        &rows,
                        &head_vars,
                        known,
                        code,
                    ) {
                        self.unique_parts.insert(columns.clone());
                        if first.is_some() {
                            self.new_parts.insert(columns.clone());
                        }
                        return columns;
                    }
                }
                // A step before the last: the distinct bindings of the variables needed
                // later (a chain's intermediate can have far more pairs than distinct
                // bindings, as `ValueFlow(z, x), MemoryAlias(z, w)` has of `(x, w)`).
                _ if !pending.is_empty() => {
                    let needed = needed_later(clause, &applied);
                    let atom = atom_of(clause, next);
                    let mut outputs: Vec<&str> = needed
                        .iter()
                        .copied()
                        .filter(|v| {
                            rows.columns.contains_key(*v)
                                || atom
                                    .args
                                    .iter()
                                    .any(|t| matches!(t, Term::Var(w, _) if w == v))
                        })
                        .collect();
                    outputs.sort_unstable();
                    if !outputs.is_empty() {
                        if let Some(columns) = self.join_unique(
                            clause,
                            next,
                            versions[next],
                            &rows,
                            &outputs,
                            None,
                            code,
                        ) {
                            rows = Rows {
                                witness: columns[0].clone(),
                                columns: outputs
                                    .iter()
                                    .map(|v| v.to_string())
                                    .zip(columns)
                                    .collect(),
                            };
                            self.apply_ready(clause, &mut applied, &mut rows, code);
                            continue;
                        }
                    }
                }
                _ => {}
            }
            self.join(clause, next, versions[next], &mut rows, &applied, code);
            self.apply_ready(clause, &mut applied, &mut rows, code);
        }
        // The head.
        let head = &clause.head;
        let mut columns = Vec::with_capacity(head.args.len());
        for term in &head.args {
            let operand = self.term(term, &rows, code);
            columns.push(self.full_length(operand, &rows, term, code));
        }
        columns
    }

    /// The columns of the first atom: its variables, filtered by its constants and repeats.
    pub(super) fn first_atom(
        &mut self,
        clause: &Clause,
        i: usize,
        version: Version,
        code: &mut Code,
    ) -> Rows {
        let atom = atom_of(clause, i);
        let source = self.source(atom, version);
        let mut columns = BTreeMap::new();
        let mut masks = Vec::new();
        let mut witness = None;
        for (k, term) in atom.args.iter().enumerate() {
            let needs_column =
                !matches!(term, Term::Wildcard(_)) || witness.is_none() && k + 1 == atom.args.len();
            if !needs_column {
                continue;
            }
            let column = self.temp(&format!("{}_{k}", atom.relation));
            code.line(&format!("{column}:i64 = @index({source}, {k}:i64);"));
            if witness.is_none() {
                witness = Some(column.clone());
            }
            match term {
                Term::Var(v, _) => match columns.get(v) {
                    Some(previous) => masks.push(format!("@eq({previous}, {column})")),
                    None => {
                        columns.insert(v.clone(), column);
                    }
                },
                Term::Wildcard(_) => {}
                constant => {
                    let value = self.constant(constant).unwrap_or_else(|| "0:i64".into());
                    masks.push(format!("@eq({column}, {value})"));
                }
            }
        }
        let mut rows = Rows {
            columns,
            witness: witness.unwrap_or_default(),
        };
        self.filter(masks, &mut rows, code);
        rows
    }

    /// Keeps the rows where every mask holds.
    pub(super) fn filter(&mut self, masks: Vec<String>, rows: &mut Rows, code: &mut Code) {
        let mut combined: Option<String> = None;
        for mask in masks {
            let m = self.temp("mask");
            code.line(&format!("{m}:bool = {mask};"));
            combined = Some(match combined {
                None => m,
                Some(previous) => {
                    let both = self.temp("mask");
                    code.line(&format!("{both}:bool = @and({previous}, {m});"));
                    both
                }
            });
        }
        let Some(mask) = combined else {
            return;
        };
        let mut renamed = BTreeMap::new();
        let mut witness_done = false;
        for (v, column) in &rows.columns {
            let kept = self.temp(&format!("{v}_kept"));
            code.line(&format!("{kept}:i64 = @compress({mask}, {column});"));
            if *column == rows.witness {
                rows.witness = kept.clone();
                witness_done = true;
            }
            renamed.insert(v.clone(), kept);
        }
        if !witness_done {
            let kept = self.temp("rows_kept");
            code.line(&format!(
                "{kept}:i64 = @compress({mask}, {});",
                rows.witness
            ));
            rows.witness = kept;
        }
        rows.columns = renamed;
    }

    /// Joins the rows with body atom `i` on the variables they share (and its constants).
    pub(super) fn join(
        &mut self,
        clause: &Clause,
        i: usize,
        version: Version,
        rows: &mut Rows,
        applied: &[bool],
        code: &mut Code,
    ) {
        let atom = atom_of(clause, i);
        let id = self.checked.ids[&atom.relation];
        let mut key_positions = Vec::new();
        let mut probe = Vec::new();
        for (k, term) in atom.args.iter().enumerate() {
            match term {
                Term::Var(v, _) => {
                    if let Some(column) = rows.columns.get(v) {
                        key_positions.push(k);
                        probe.push(column.clone());
                    }
                }
                Term::Wildcard(_) => {}
                constant => {
                    let value = self.constant(constant).unwrap_or_else(|| "0:i64".into());
                    let column = self.temp("constant");
                    code.line(&format!(
                        "{column}:i64 = @vector(@len({}), {value});",
                        rows.witness
                    ));
                    key_positions.push(k);
                    probe.push(column);
                }
            }
        }
        let (build, order, build_keys) = if key_positions.is_empty() {
            // No shared variable: a cross product, joined on a constant key.
            let source = self.source(atom, version);
            let first = self.temp("column");
            code.line(&format!("{first}:i64 = @index({source}, 0:i64);"));
            let zeros = self.temp("constant");
            code.line(&format!("{zeros}:i64 = @vector(@len({first}), 0:i64);"));
            let probe_zeros = self.temp("constant");
            code.line(&format!(
                "{probe_zeros}:i64 = @vector(@len({}), 0:i64);",
                rows.witness
            ));
            probe.push(probe_zeros);
            (
                source,
                (0..atom.args.len()).collect::<Vec<_>>(),
                vec![zeros],
            )
        } else {
            let source = self.source(atom, version);
            let (build, order) = index_for(atom, id, &key_positions, source, code);
            let keys = self.key_columns(&build, key_positions.len(), code);
            (build, order, keys)
        };
        let pairs = self.temp("pairs");
        code.line(&format!(
            "{pairs}:list<i64> = @sorted_join(@list({}), @list({}));",
            probe.join(", "),
            build_keys.join(", ")
        ));
        let probe_rows = self.temp("probe_rows");
        let build_rows = self.temp("build_rows");
        code.line(&format!("{probe_rows}:i64 = @index({pairs}, 0:i64);"));
        code.line(&format!("{build_rows}:i64 = @index({pairs}, 1:i64);"));

        // Keep the variables needed later; add the atom's new ones.
        let needed = needed_later(clause, applied);
        let mut columns = BTreeMap::new();
        for (v, column) in &rows.columns {
            if needed.contains(v.as_str()) {
                let gathered = self.temp(v);
                code.line(&format!("{gathered}:i64 = @index({column}, {probe_rows});"));
                columns.insert(v.clone(), gathered);
            }
        }
        let mut masks = Vec::new();
        for (k, term) in atom.args.iter().enumerate() {
            let Term::Var(v, _) = term else { continue };
            if rows.columns.contains_key(v) {
                continue;
            }
            let repeated = columns.contains_key(v);
            if !needed.contains(v.as_str())
                && !repeated
                && atom
                    .args
                    .iter()
                    .filter(|t| matches!(t, Term::Var(w, _) if w == v))
                    .count()
                    == 1
            {
                continue;
            }
            let position = order.iter().position(|&o| o == k).unwrap_or(k);
            let cell = self.temp(&format!("{}_{k}", atom.relation));
            code.line(&format!("{cell}:i64 = @index({build}, {position}:i64);"));
            let gathered = self.temp(v);
            code.line(&format!("{gathered}:i64 = @index({cell}, {build_rows});"));
            match columns.get(v) {
                Some(previous) => masks.push(format!("@eq({previous}, {gathered})")),
                None => {
                    columns.insert(v.clone(), gathered);
                }
            }
        }
        rows.columns = columns;
        rows.witness = probe_rows;
        self.filter(masks, rows, code);
    }

    /// The columns of variables `outputs` after joining the rows with body atom `i`, as one
    /// `@join_unique`: their distinct bindings, less the tuples of `known` (the head's
    /// `full_R`, when `outputs` are the head's), made a batch of join pairs at a time, so
    /// that a join with many more pairs than distinct bindings never holds all its pairs.
    /// None where the join needs more (no shared variable or constant to join on, or a new
    /// variable twice in the atom: an equality on the pairs); then `join` builds the pairs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn join_unique(
        &mut self,
        clause: &Clause,
        i: usize,
        version: Version,
        rows: &Rows,
        outputs: &[&str],
        known: Option<String>,
        code: &mut Code,
    ) -> Option<Vec<String>> {
        let atom = atom_of(clause, i);
        let mut key_positions = Vec::new();
        let mut new_vars: BTreeMap<&str, usize> = BTreeMap::new();
        for (k, term) in atom.args.iter().enumerate() {
            match term {
                Term::Var(v, _) if rows.columns.contains_key(v) => key_positions.push(k),
                Term::Var(v, _) => {
                    if new_vars.insert(v.as_str(), k).is_some() {
                        // A repeated new variable: an equality on the pairs.
                        return None;
                    }
                }
                Term::Wildcard(_) => {}
                _ => key_positions.push(k),
            }
        }
        if key_positions.is_empty()
            || !outputs
                .iter()
                .all(|v| rows.columns.contains_key(*v) || new_vars.contains_key(v))
        {
            return None;
        }
        let id = self.checked.ids[&atom.relation];
        let mut probe = Vec::new();
        for &k in &key_positions {
            match &atom.args[k] {
                Term::Var(v, _) => probe.push(rows.columns[v].clone()),
                constant => {
                    let value = self.constant(constant).unwrap_or_else(|| "0:i64".into());
                    let column = self.temp("constant");
                    code.line(&format!(
                        "{column}:i64 = @vector(@len({}), {value});",
                        rows.witness
                    ));
                    probe.push(column);
                }
            }
        }
        let source = self.source(atom, version);
        let (build, order) = index_for(atom, id, &key_positions, source, code);
        // The probe side: its key columns, then the head's variables bound before.
        for v in outputs {
            let column = &rows.columns.get(*v);
            if let Some(column) = column {
                if !probe.contains(column) {
                    probe.push((*column).clone());
                }
            }
        }
        let picks: Vec<String> = outputs
            .iter()
            .map(|v| match rows.columns.get(*v) {
                Some(column) => probe.iter().position(|c| c == column).unwrap_or(0),
                None => {
                    let k = new_vars[v];
                    probe.len() + order.iter().position(|&o| o == k).unwrap_or(k)
                }
            })
            .map(|p| p.to_string())
            .collect();
        let picks = match picks.as_slice() {
            [one] => format!("{one}:i64"),
            many => format!("({}):i64", many.join(", ")),
        };
        let tuples = self.temp("tuples");
        code.line(&format!(
            "{tuples}:list<i64> = @join_unique(@list({}), {build}, {}:i64, {picks}{});",
            probe.join(", "),
            key_positions.len(),
            known.map(|f| format!(", {f}")).unwrap_or_default()
        ));
        let columns: Vec<String> = (0..outputs.len())
            .map(|k| {
                let column = self.temp("column");
                code.line(&format!("{column}:i64 = @index({tuples}, {k}:i64);"));
                column
            })
            .collect();
        Some(columns)
    }

    /// Applies the constraints, bindings and negations whose variables are all bound.
    pub(super) fn apply_ready(
        &mut self,
        clause: &Clause,
        applied: &mut [bool],
        rows: &mut Rows,
        code: &mut Code,
    ) {
        loop {
            let mut progress = false;
            for (i, literal) in clause.body.iter().enumerate() {
                if applied[i] {
                    continue;
                }
                let bound = |t: &Term| {
                    let mut vars = Vec::new();
                    t.variables(&mut vars);
                    vars.iter().all(|v| rows.columns.contains_key(*v))
                };
                match literal {
                    Literal::Positive(_) => {}
                    Literal::Aggregate(aggregate) => {
                        applied[i] = true;
                        progress = true;
                        self.aggregate(clause, i, aggregate, rows, code);
                    }
                    Literal::Constraint {
                        op, left, right, ..
                    } => {
                        if bound(left) && bound(right) {
                            applied[i] = true;
                            progress = true;
                            let l = self.term(left, rows, code);
                            let r = self.term(right, rows, code);
                            let mut mask = format!("@{}({l}, {r})", comparison(*op));
                            if !rows.columns.values().any(|c| *c == l || *c == r)
                                && matches!(
                                    (left, right),
                                    (
                                        Term::Number(..) | Term::Symbol(..),
                                        Term::Number(..) | Term::Symbol(..)
                                    )
                                )
                            {
                                mask = format!("@vector(@len({}), {mask})", rows.witness);
                            }
                            self.filter(vec![mask], rows, code);
                        } else if *op == CmpOp::Eq {
                            // A binding `v = e` with `e` bound and `v` not.
                            for (target, source) in [(left, right), (right, left)] {
                                if let Term::Var(v, _) = target {
                                    if !rows.columns.contains_key(v) && bound(source) {
                                        let value = self.term(source, rows, code);
                                        let column = self.full_length(value, rows, source, code);
                                        rows.columns.insert(v.clone(), column);
                                        applied[i] = true;
                                        progress = true;
                                        break;
                                    }
                                }
                            }
                        }
                    }
                    Literal::Negative(atom) => {
                        if atom.args.iter().all(bound) {
                            applied[i] = true;
                            progress = true;
                            self.anti_join(atom, rows, code);
                        }
                    }
                }
            }
            if !progress {
                break;
            }
        }
    }

    /// Drops the rows matching the negated atom (a relation of an earlier stratum).
    pub(super) fn anti_join(&mut self, atom: &Atom, rows: &mut Rows, code: &mut Code) {
        let id = self.checked.ids[&atom.relation];
        let mut key_positions = Vec::new();
        let mut probe = Vec::new();
        for (k, term) in atom.args.iter().enumerate() {
            match term {
                Term::Wildcard(_) => {}
                Term::Var(v, _) => {
                    key_positions.push(k);
                    probe.push(rows.columns[v].clone());
                }
                constant => {
                    let value = self.constant(constant).unwrap_or_else(|| "0:i64".into());
                    let column = self.temp("constant");
                    code.line(&format!(
                        "{column}:i64 = @vector(@len({}), {value});",
                        rows.witness
                    ));
                    key_positions.push(k);
                    probe.push(column);
                }
            }
        }
        let source = full(&atom.relation);
        if key_positions.is_empty() {
            // `!r(_, …)`: every row survives exactly when `r` is empty.
            let first = self.temp("column");
            code.line(&format!("{first}:i64 = @index({source}, 0:i64);"));
            let empty = self.temp("empty");
            code.line(&format!("{empty}:bool = @eq(@len({first}), 0:i64);"));
            self.filter(
                vec![format!("@vector(@len({}), {empty})", rows.witness)],
                rows,
                code,
            );
            return;
        }
        let (build, _) = index_for(atom, id, &key_positions, source, code);
        let keys = self.key_columns(&build, key_positions.len(), code);
        let pairs = self.temp("pairs");
        code.line(&format!(
            "{pairs}:list<i64> = @sorted_join(@list({}), @list({}));",
            probe.join(", "),
            keys.join(", ")
        ));
        let matched = self.temp("matched");
        code.line(&format!("{matched}:i64 = @index({pairs}, 0:i64);"));
        let row_numbers = self.temp("row_numbers");
        code.line(&format!(
            "{row_numbers}:i64 = @range(@len({}));",
            rows.witness
        ));
        self.filter(
            vec![format!("@not(@member({row_numbers}, {matched}))")],
            rows,
            code,
        );
    }

    /// The operand of a term over bound columns (arithmetic emitted as statements).
    pub(super) fn term(&mut self, term: &Term, rows: &Rows, code: &mut Code) -> String {
        match term {
            Term::Var(v, _) => rows.columns.get(v).cloned().unwrap_or_default(),
            Term::Number(..) | Term::Symbol(..) => self.constant(term).unwrap_or_default(),
            Term::Wildcard(_) => String::new(),
            Term::Negate(inner, _) => {
                let value = self.term(inner, rows, code);
                let out = self.temp("negated");
                code.line(&format!("{out}:i64 = @neg({value});"));
                out
            }
            Term::Binary {
                op, left, right, ..
            } => {
                let l = self.term(left, rows, code);
                let r = self.term(right, rows, code);
                let builtin = match op {
                    ArithOp::Add => "plus",
                    ArithOp::Sub => "minus",
                    ArithOp::Mul => "mul",
                    ArithOp::Div => "div",
                    ArithOp::Mod => "mod",
                };
                let out = self.temp("arithmetic");
                code.line(&format!("{out}:i64 = @{builtin}({l}, {r});"));
                out
            }
        }
    }

    /// The first `count` columns of relation variable `build` (its join keys).
    fn key_columns(&mut self, build: &str, count: usize, code: &mut Code) -> Vec<String> {
        (0..count)
            .map(|k| {
                let column = self.temp("build_key");
                code.line(&format!("{column}:i64 = @index({build}, {k}:i64);"));
                column
            })
            .collect()
    }
}

pub(super) fn comparison(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "neq",
        CmpOp::Lt => "lt",
        CmpOp::Le => "leq",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "geq",
    }
}

pub(super) fn atom_of(clause: &Clause, i: usize) -> &Atom {
    match &clause.body[i] {
        Literal::Positive(a) | Literal::Negative(a) => a,
        Literal::Aggregate(a) => &a.atom,
        Literal::Constraint { .. } => &clause.head,
    }
}

/// `head(args)` as written, for the rule plans.
pub(super) fn rule_head(clause: &Clause) -> String {
    let args: Vec<String> = clause
        .head
        .args
        .iter()
        .map(|t| match t {
            Term::Var(v, _) => v.clone(),
            Term::Wildcard(_) => "_".to_string(),
            Term::Number(n, _) => n.to_string(),
            Term::Symbol(s, _) => format!("{s:?}"),
            _ => "…".to_string(),
        })
        .collect();
    format!("{}({})", clause.head.relation, args.join(", "))
}

pub(super) fn positive_atoms(clause: &Clause) -> impl Iterator<Item = (usize, &Atom)> {
    clause.body.iter().enumerate().filter_map(|(i, l)| match l {
        Literal::Positive(a) => Some((i, a)),
        _ => None,
    })
}

/// The variables read by the head and by the body literals not applied yet.
pub(super) fn needed_later<'c>(clause: &'c Clause, applied: &[bool]) -> HashSet<&'c str> {
    let mut vars = Vec::new();
    for term in &clause.head.args {
        term.variables(&mut vars);
    }
    for (i, literal) in clause.body.iter().enumerate() {
        if applied[i] {
            continue;
        }
        match literal {
            Literal::Positive(a) | Literal::Negative(a) => {
                for t in &a.args {
                    t.variables(&mut vars);
                }
            }
            Literal::Constraint { left, right, .. } => {
                left.variables(&mut vars);
                right.variables(&mut vars);
            }
            // Reads no variable of the rule (aggregates are not correlated).
            Literal::Aggregate(_) => {}
        }
    }
    vars.into_iter().collect()
}

/// The relation an atom of relation `id` is joined against on the columns `key_positions`:
/// `source` itself when those are its first columns, else its index with them first (built
/// by `flush`), with the column order of that index.
fn index_for(
    atom: &Atom,
    id: usize,
    key_positions: &[usize],
    source: String,
    code: &mut Code,
) -> (String, Vec<usize>) {
    let mut order = key_positions.to_vec();
    order.extend((0..atom.args.len()).filter(|k| !key_positions.contains(k)));
    if order.iter().enumerate().all(|(a, &b)| a == b) {
        return (source, order);
    }
    code.indexes.insert((id, order.clone()));
    (index_name(&atom.relation, &order), order)
}
