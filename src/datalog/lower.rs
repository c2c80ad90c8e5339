//! Lowering a checked Datalog program to HorseIR text.
//!
//! Every relation is a `list<i64>` of columns whose tuples are sorted and duplicate-free
//! (`@tuple_unique`). Symbols are coded as i64: their position in one dictionary
//! (`symbols`) of every symbol of the input data and of the program, decoded on output.
//!
//! Strata run in order. A non-recursive stratum is the union of its inputs, facts and rule
//! results. A recursive stratum runs semi-naively: `full_R` and `delta_R` start as the rules
//! that read no relation of the stratum; then, while some delta is non-empty, every rule is
//! evaluated once per body atom of the stratum with that atom reading `delta` (the others
//! `full`) into `new_R`, `delta_R = new_R − full_R` (`@tuple_diff`) and
//! `full_R = full_R ∪ delta_R` (`@tuple_merge`).
//!
//! A rule body is a chain of binary joins: the first atom (the delta one, in a recursive
//! variant) gives the starting columns; each further atom is joined by `@sorted_join` on the
//! variables already bound, against an *index*: the relation with its join columns first,
//! sorted (`idx_R_1_0` for columns (1, 0)), built once for relations of earlier strata and
//! kept up to date by merging each delta for relations of the stratum. Only the columns
//! needed later survive a join (the temporaries of the chain). Constraints, bindings
//! (`y = x + 1`) and negations (an anti-join: `@sorted_join`, then `@member` of the row
//! numbers) are applied as soon as their variables are bound.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use super::ast::*;
use super::check::Checked;

/// A relation the program reads with `.input`, and the columns its data must have.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRelation {
    pub name: String,
    pub attrs: Vec<(String, AttrType)>,
}

/// Choices of the lowering.
#[derive(Clone, Copy, Debug, Default)]
pub struct LowerOptions {
    /// Return one more table, `iterations`, with the number of semi-naive iterations run
    /// (summed over the recursive strata); `horsec bench` reports it.
    pub count_iterations: bool,
    /// Run every rule as a chain of binary joins, cyclic ones too (`horsec bench` compares
    /// the multiway joins with this plan).
    pub binary_joins: bool,
}

/// The HorseIR program of a Datalog program.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub hir: String,
    pub inputs: Vec<InputRelation>,
    /// The `.output` relations, in the order of the tables `main` returns.
    pub outputs: Vec<String>,
    /// How each rule is evaluated, one line per rule in source order (`compile --emit plan`
    /// prints them): `rule tri(x, y, z): multiway join, variable order x y z` or `… binary
    /// joins`.
    pub rule_plans: Vec<String>,
}

/// Which version of a relation an atom reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// The whole relation (of an earlier stratum, or `full_R` of this one).
    Full,
    /// `delta_R` of this stratum.
    Delta,
}

pub fn lower(checked: &Checked<'_>, options: LowerOptions) -> Lowered {
    let mut lowering = Lowering {
        checked,
        out: String::new(),
        next_temp: 0,
        symbol_codes: BTreeMap::new(),
        static_indexes: HashSet::new(),
        rule_plans: BTreeMap::new(),
        binary_joins: options.binary_joins,
        unique_parts: HashSet::new(),
        new_parts: HashSet::new(),
        count_only: if options.binary_joins {
            BTreeMap::new()
        } else {
            count_only_relations(checked)
        },
    };
    lowering.program(options)
}

struct Lowering<'c, 'p> {
    checked: &'c Checked<'p>,
    out: String,
    next_temp: usize,
    /// Program symbol constant → the variable holding its code.
    symbol_codes: BTreeMap<String, String>,
    /// Indexes of relations of finished strata already built: `(relation, column order)`.
    static_indexes: HashSet<(usize, Vec<usize>)>,
    /// Clause index → how the rule is evaluated.
    rule_plans: BTreeMap<usize, String>,
    /// No multiway joins (`LowerOptions::binary_joins`).
    binary_joins: bool,
    /// Head columns of rules whose tuples are sorted and distinct (one `@join_unique`): a
    /// relation made of one of them alone needs no `@tuple_unique`.
    unique_parts: HashSet<Vec<String>>,
    /// Those of them in a semi-naive loop, less the head's `full_R` already: a `new_R` made
    /// of one of them alone is the delta as it is (no `@tuple_diff`).
    new_parts: HashSet<Vec<String>>,
    /// Relations only counted (relation id → its rule): never built, their number is
    /// `count_R`, one `@multiway_count` (see [`count_only_relations`]).
    count_only: BTreeMap<usize, usize>,
}

/// Generated statements of one piece of code, with the indexes they read.
#[derive(Default)]
struct Code {
    text: String,
    /// `(relation, column order)` of every index the code reads.
    indexes: BTreeSet<(usize, Vec<usize>)>,
}

impl Code {
    fn line(&mut self, text: &str) {
        self.text.push_str("    ");
        self.text.push_str(text);
        self.text.push('\n');
    }
}

/// The relation variables of names `full_R`, `delta_R`, `new_R`, `idx_R_…`.
fn full(name: &str) -> String {
    format!("full_{name}")
}

fn delta(name: &str) -> String {
    format!("delta_{name}")
}

fn index_name(name: &str, order: &[usize]) -> String {
    let digits: Vec<String> = order.iter().map(usize::to_string).collect();
    format!("idx_{name}_{}", digits.join("_"))
}

/// A HorseIR symbol literal for `text`.
fn symbol_literal(text: &str) -> String {
    if !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !text.starts_with(|c: char| c.is_ascii_digit())
    {
        format!("`{text}")
    } else {
        let mut escaped = String::new();
        for c in text.chars() {
            match c {
                '"' => escaped.push_str("\\\""),
                '\\' => escaped.push_str("\\\\"),
                '\n' => escaped.push_str("\\n"),
                '\t' => escaped.push_str("\\t"),
                c => escaped.push(c),
            }
        }
        format!("`\"{escaped}\"")
    }
}

fn symbols_literal(texts: &[&str]) -> String {
    let items: Vec<String> = texts.iter().map(|t| symbol_literal(t)).collect();
    format!("({}):sym", items.join(", "))
}

/// The columns bound so far in a rule body: variable → column variable, plus a column whose
/// length is the number of rows (for constants and when no variable is kept).
struct Rows {
    columns: BTreeMap<String, String>,
    witness: String,
}

impl Lowering<'_, '_> {
    fn temp(&mut self, what: &str) -> String {
        self.next_temp += 1;
        format!("t{}_{what}", self.next_temp)
    }

    fn emit(&mut self, text: &str) {
        self.out.push_str("    ");
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn program(&mut self, options: LowerOptions) -> Lowered {
        let checked = self.checked;
        let inputs: Vec<InputRelation> = checked
            .relations
            .iter()
            .filter(|r| r.input)
            .map(|r| InputRelation {
                name: r.name.clone(),
                attrs: r
                    .attrs
                    .iter()
                    .cloned()
                    .zip(r.types.iter().copied())
                    .collect(),
            })
            .collect();
        let outputs: Vec<String> = checked
            .program
            .outputs
            .iter()
            .map(|d| d.relation.clone())
            .collect();
        let returns = vec!["table"; outputs.len() + usize::from(options.count_iterations)];

        let _ = writeln!(
            self.out,
            "// Generated by horsec from Datalog: semi-naive evaluation over sorted relations.\nmodule datalog {{\n  import Builtin.*;\n\n  def main() : {} {{",
            returns.join(", ")
        );
        self.inputs_and_symbols();
        if options.count_iterations {
            self.emit("iterations:i64 = 0:i64;");
        }
        for stratum in 0..checked.strata.len() {
            self.stratum(stratum, options);
        }
        let mut results = Vec::new();
        for name in &outputs {
            results.push(self.output(name));
        }
        if options.count_iterations {
            self.emit("iteration_table:table = @table((`iterations):sym, @list(iterations));");
            results.push("iteration_table".to_string());
        }
        self.emit(&format!("return {};", results.join(", ")));
        self.out.push_str("  }\n}\n");
        Lowered {
            hir: flatten_calls(&self.out),
            inputs,
            outputs,
            rule_plans: self.rule_plans.values().cloned().collect(),
        }
    }

    fn uses_symbols(&self) -> bool {
        self.checked
            .relations
            .iter()
            .any(|r| r.types.contains(&AttrType::Symbol))
    }

    /// Loads the input columns, builds the symbol dictionary, and codes symbol columns and
    /// constants.
    fn inputs_and_symbols(&mut self) {
        let checked = self.checked;
        let mut symbol_columns = Vec::new();
        for relation in checked.relations.iter().filter(|r| r.input) {
            let table = format!("table_{}", relation.name);
            self.emit(&format!(
                "{table}:table = @load_table({}:sym);",
                symbol_literal(&relation.name)
            ));
            for (k, (attr, ty)) in relation.attrs.iter().zip(&relation.types).enumerate() {
                let column = format!("input_{}_{k}", relation.name);
                let (suffix, hir_type) = match ty {
                    AttrType::Number => ("", "i64"),
                    AttrType::Symbol => ("_text", "sym"),
                };
                self.emit(&format!(
                    "{column}{suffix}:{hir_type} = check_cast(@column_value({table}, {}:sym), {hir_type});",
                    symbol_literal(attr)
                ));
                if *ty == AttrType::Symbol {
                    symbol_columns.push(column);
                }
            }
        }
        if !self.uses_symbols() {
            return;
        }
        let mut constants = BTreeSet::new();
        for clause in &checked.program.clauses {
            collect_symbols(&clause.head.args, &mut constants);
            for literal in &clause.body {
                match literal {
                    Literal::Positive(a) | Literal::Negative(a) => {
                        collect_symbols(&a.args, &mut constants)
                    }
                    Literal::Aggregate(a) => collect_symbols(&a.atom.args, &mut constants),
                    Literal::Constraint { left, right, .. } => collect_symbols(
                        std::slice::from_ref(left)
                            .iter()
                            .chain([right])
                            .cloned()
                            .collect::<Vec<_>>()
                            .as_slice(),
                        &mut constants,
                    ),
                }
            }
        }
        // The dictionary: the program's constants (or one empty symbol) and the input data,
        // each distinct symbol once; a symbol's code is its position.
        let constant_texts: Vec<&str> = if constants.is_empty() {
            vec![""]
        } else {
            constants.iter().map(String::as_str).collect()
        };
        self.emit(&format!(
            "all_symbols:sym = {};",
            symbols_literal(&constant_texts)
        ));
        for column in &symbol_columns {
            self.emit(&format!(
                "all_symbols = @append(all_symbols, {column}_text);"
            ));
        }
        self.emit("symbols:sym = @index(all_symbols, @unique(all_symbols));");
        for column in &symbol_columns {
            self.emit(&format!(
                "{column}:i64 = @index_of(symbols, {column}_text);"
            ));
        }
        for (k, text) in constants.iter().enumerate() {
            let var = format!("symbol_{k}");
            self.emit(&format!(
                "{var}:i64 = @index_of(symbols, {}:sym);",
                symbol_literal(text)
            ));
            self.symbol_codes.insert(text.clone(), var);
        }
    }

    /// The HorseIR operand of a constant term (a literal or a symbol's code variable).
    fn constant(&self, term: &Term) -> Option<String> {
        match term {
            Term::Number(n, _) => Some(format!("{n}:i64")),
            Term::Symbol(s, _) => self.symbol_codes.get(s).cloned(),
            _ => None,
        }
    }

    /// The parts of relation `id` that read no relation of its own stratum: the input,
    /// the facts and the rules over earlier strata, as lists of column variables.
    fn base_parts(&mut self, id: usize, stratum: &[usize], code: &mut Code) -> Vec<Vec<String>> {
        let checked = self.checked;
        let relation = &checked.relations[id];
        let arity = relation.types.len();
        let mut parts = Vec::new();
        if relation.input {
            parts.push(
                (0..arity)
                    .map(|k| format!("input_{}_{k}", relation.name))
                    .collect(),
            );
        }
        let facts: Vec<&Clause> = checked
            .program
            .clauses
            .iter()
            .filter(|c| c.body.is_empty() && checked.ids[&c.head.relation] == id)
            .collect();
        if !facts.is_empty() {
            let mut columns = Vec::with_capacity(arity);
            for k in 0..arity {
                let column = self.temp(&format!("facts_{}_{k}", relation.name));
                let values: Vec<String> = facts
                    .iter()
                    .map(|c| match &c.head.args[k] {
                        Term::Number(n, _) => n.to_string(),
                        Term::Symbol(s, _) => symbol_literal(s),
                        // Checked: a fact's arguments are constants (no variable is bound).
                        other => format!("/* not a constant: {other:?} */"),
                    })
                    .collect();
                match relation.types[k] {
                    AttrType::Number => {
                        code.line(&format!("{column}:i64 = ({}):i64;", values.join(", ")))
                    }
                    AttrType::Symbol => code.line(&format!(
                        "{column}:i64 = @index_of(symbols, ({}):sym);",
                        values.join(", ")
                    )),
                }
                columns.push(column);
            }
            parts.push(columns);
        }
        for (c, clause) in checked.program.clauses.iter().enumerate() {
            if clause.body.is_empty() || checked.ids[&clause.head.relation] != id {
                continue;
            }
            let reads_stratum =
                positive_atoms(clause).any(|(_, a)| stratum.contains(&checked.ids[&a.relation]));
            if !reads_stratum {
                let versions = vec![Version::Full; clause.body.len()];
                parts.push(self.rule(c, &versions, None, code));
            }
        }
        parts
    }

    /// `target = the relation of the union of parts` (sorted, duplicate-free).
    fn union(
        &mut self,
        target: &str,
        declare: bool,
        id: usize,
        parts: &[Vec<String>],
        code: &mut Code,
    ) {
        let arity = self.checked.relations[id].types.len();
        let ty = if declare { ":list<i64>" } else { "" };
        if let [part] = parts {
            if self.unique_parts.contains(part) {
                // Already sorted and distinct: the columns as they are.
                code.line(&format!("{target}{ty} = @list({});", part.join(", ")));
                return;
            }
        }
        let mut columns = Vec::with_capacity(arity);
        for k in 0..arity {
            let mut column = match parts.first() {
                Some(part) => part[k].clone(),
                None => {
                    let empty = self.temp("empty");
                    code.line(&format!("{empty}:i64 = @vector(0:i64, 0:i64);"));
                    empty
                }
            };
            for part in parts.iter().skip(1) {
                let appended = self.temp("union");
                code.line(&format!("{appended}:i64 = @append({column}, {});", part[k]));
                column = appended;
            }
            columns.push(column);
        }
        code.line(&format!(
            "{target}{ty} = @tuple_unique(@list({}));",
            columns.join(", ")
        ));
    }

    fn stratum(&mut self, s: usize, options: LowerOptions) {
        let checked = self.checked;
        let stratum = checked.strata[s].clone();
        let mut code = Code::default();
        let names: Vec<String> = stratum
            .relations
            .iter()
            .map(|&id| checked.relations[id].name.clone())
            .collect();
        let _ = writeln!(
            code.text,
            "\n    // stratum {s}: {}{}",
            names.join(", "),
            if stratum.recursive {
                " (recursive)"
            } else {
                ""
            }
        );
        for &id in &stratum.relations {
            if let Some(&c) = self.count_only.get(&id) {
                self.counted_rule(c, &mut code);
                continue;
            }
            let parts = self.base_parts(id, &stratum.relations, &mut code);
            let name = &checked.relations[id].name;
            self.union(&full(name), true, id, &parts, &mut code);
        }
        if !stratum.recursive {
            self.flush(code, &[]);
            return;
        }

        // The semi-naive loop.
        let mut body = Code::default();
        let mut news: BTreeMap<usize, Vec<Vec<String>>> = BTreeMap::new();
        for (c, clause) in checked.program.clauses.iter().enumerate() {
            let head = checked.ids[&clause.head.relation];
            if clause.body.is_empty() || !stratum.relations.contains(&head) {
                continue;
            }
            let recursive_atoms: Vec<usize> = positive_atoms(clause)
                .filter(|(_, a)| stratum.relations.contains(&checked.ids[&a.relation]))
                .map(|(i, _)| i)
                .collect();
            for &d in &recursive_atoms {
                let versions: Vec<Version> = clause
                    .body
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        if i == d {
                            Version::Delta
                        } else {
                            Version::Full
                        }
                    })
                    .collect();
                let part = self.rule(c, &versions, Some(d), &mut body);
                news.entry(head).or_default().push(part);
            }
        }
        let mut already_new = BTreeMap::new();
        for &id in &stratum.relations {
            let name = checked.relations[id].name.clone();
            let parts = news.remove(&id).unwrap_or_default();
            if let [part] = parts.as_slice() {
                if self.new_parts.contains(part) {
                    // Its delta as it is: no new_R.
                    already_new.insert(id, part.clone());
                    continue;
                }
            }
            let new = format!("new_{name}");
            if parts.is_empty() {
                // No rule derives more of it in the loop: nothing new.
                body.line(&format!(
                    "{new}:list<i64> = @tuple_diff({}, {});",
                    full(&name),
                    full(&name)
                ));
            } else {
                self.union(&new, true, id, &parts, &mut body);
            }
        }
        for &id in &stratum.relations {
            let name = &checked.relations[id].name;
            if let Some(columns) = already_new.get(&id) {
                // A list of the columns (cells taken, not copied).
                body.line(&format!("{} = @list({});", delta(name), columns.join(", ")));
            } else {
                body.line(&format!(
                    "{} = @tuple_diff(new_{name}, {});",
                    delta(name),
                    full(name)
                ));
            }
            body.line(&format!(
                "{} = @tuple_merge({}, {});",
                full(name),
                full(name),
                delta(name)
            ));
        }
        // Indexes of this stratum's relations: built before the loop, merged with each delta.
        let own: Vec<(usize, Vec<usize>)> = body
            .indexes
            .iter()
            .filter(|(id, _)| stratum.relations.contains(id))
            .cloned()
            .collect();
        for (id, order) in &own {
            let name = checked.relations[*id].name.clone();
            let columns = self.permuted_columns(&delta(&name), order, &mut body);
            let sorted = self.temp("delta_index");
            body.line(&format!(
                "{sorted}:list<i64> = @tuple_unique(@list({}));",
                columns.join(", ")
            ));
            let index = index_name(&name, order);
            body.line(&format!("{index} = @tuple_merge({index}, {sorted});"));
        }
        if options.count_iterations {
            body.line("iterations = @plus(iterations, 1:i64);");
        }
        let more = self.temp("more");
        let any = self.any_delta(&stratum.relations, &mut body);
        body.line(&format!("{more} = {any};"));

        // delta_R starts as full_R: a list of full_R's columns (cells taken, not copied, so a
        // relation on the device stays where it is and no kernel copies it).
        for &id in &stratum.relations {
            let name = checked.relations[id].name.clone();
            let mut cells = Vec::new();
            for c in 0..checked.relations[id].attrs.len() {
                let cell = self.temp(&format!("{name}_{c}"));
                code.line(&format!("{cell}:i64 = @index({}, {c}:i64);", full(&name)));
                cells.push(cell);
            }
            code.line(&format!(
                "{}:list<i64> = @list({});",
                delta(&name),
                cells.join(", ")
            ));
        }
        for (id, order) in &own {
            let name = checked.relations[*id].name.clone();
            let columns = self.permuted_columns(&full(&name), order, &mut code);
            code.line(&format!(
                "{}:list<i64> = @tuple_unique(@list({}));",
                index_name(&name, order),
                columns.join(", ")
            ));
        }
        let any = self.any_delta(&stratum.relations, &mut code);
        code.line(&format!("{more}:bool = {any};"));
        code.line(&format!("while ({more}) {{"));
        for line in body.text.lines() {
            let _ = writeln!(code.text, "  {line}");
        }
        code.line("}");
        let mut indexes = body.indexes;
        indexes.retain(|(id, _)| !stratum.relations.contains(id));
        code.indexes.extend(indexes);
        self.flush(code, &stratum.relations);
    }

    /// `@or` of "delta_R is not empty" over `relations`, as an operand.
    fn any_delta(&mut self, relations: &[usize], code: &mut Code) -> String {
        let mut any: Option<String> = None;
        for &id in relations {
            let name = self.checked.relations[id].name.clone();
            let first = self.temp("delta_column");
            code.line(&format!("{first}:i64 = @index({}, 0:i64);", delta(&name)));
            let nonempty = self.temp("delta_nonempty");
            code.line(&format!("{nonempty}:bool = @gt(@len({first}), 0:i64);"));
            any = Some(match any {
                None => nonempty,
                Some(previous) => {
                    let both = self.temp("any_delta");
                    code.line(&format!("{both}:bool = @or({previous}, {nonempty});"));
                    both
                }
            });
        }
        any.unwrap_or_else(|| "0:bool".to_string())
    }

    /// Columns `order` of relation variable `relation`, as column variables.
    fn permuted_columns(
        &mut self,
        relation: &str,
        order: &[usize],
        code: &mut Code,
    ) -> Vec<String> {
        order
            .iter()
            .map(|&k| {
                let column = self.temp("column");
                code.line(&format!("{column}:i64 = @index({relation}, {k}:i64);"));
                column
            })
            .collect()
    }

    /// Writes `code` after building the indexes it reads of relations of finished strata
    /// (`own`: the stratum's relations, whose indexes the code builds itself).
    fn flush(&mut self, code: Code, own: &[usize]) {
        for (id, order) in &code.indexes {
            if own.contains(id) || self.static_indexes.contains(&(*id, order.clone())) {
                continue;
            }
            let name = self.checked.relations[*id].name.clone();
            let mut prelude = Code::default();
            let columns = self.permuted_columns(&full(&name), order, &mut prelude);
            prelude.line(&format!(
                "{}:list<i64> = @tuple_unique(@list({}));",
                index_name(&name, order),
                columns.join(", ")
            ));
            self.out.push_str(&prelude.text);
            self.static_indexes.insert((*id, order.clone()));
        }
        self.out.push_str(&code.text);
    }

    /// The table of output relation `name` (symbols decoded); returns its variable.
    fn output(&mut self, name: &str) -> String {
        let checked = self.checked;
        let id = checked.ids[name];
        let relation = &checked.relations[id];
        let mut columns = Vec::new();
        for (k, ty) in relation.types.iter().enumerate() {
            let column = format!("output_{name}_{k}");
            self.emit(&format!("{column}:i64 = @index({}, {k}:i64);", full(name)));
            match ty {
                AttrType::Number => columns.push(column),
                AttrType::Symbol => {
                    self.emit(&format!("{column}_text:sym = @index(symbols, {column});"));
                    columns.push(format!("{column}_text"));
                }
            }
        }
        let attrs: Vec<&str> = relation.attrs.iter().map(String::as_str).collect();
        let table = format!("output_{name}");
        self.emit(&format!(
            "{table}:table = @table({}, @list({}));",
            symbols_literal(&attrs),
            columns.join(", ")
        ));
        table
    }

    /// The relation variable an atom reads.
    fn source(&self, atom: &Atom, version: Version) -> String {
        match version {
            Version::Full => full(&atom.relation),
            Version::Delta => delta(&atom.relation),
        }
    }

    /// The head columns of clause `c` with body atoms reading `versions`; `first` is the
    /// atom to start from (the delta atom of a semi-naive variant).
    fn rule(
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

    /// Binds the result of aggregate `i` of the clause on every row: one value over the
    /// tuples of its atom (the relation of an earlier stratum, filtered by the atom's
    /// constants and repeated variables). `min` and `max` of no tuple keep no row.
    fn aggregate(
        &mut self,
        clause: &Clause,
        i: usize,
        aggregate: &Aggregate,
        rows: &mut Rows,
        code: &mut Code,
    ) {
        let counted = self.checked.ids[&aggregate.atom.relation];
        if self.count_only.contains_key(&counted) {
            // Counted where its rule ran (`counted_rule`), never built.
            let value = count_name(&aggregate.atom.relation);
            if rows.witness.is_empty() {
                rows.witness = value.clone();
                rows.columns.insert(aggregate.result.clone(), value);
            } else {
                let column = self.temp(&aggregate.result);
                code.line(&format!(
                    "{column}:i64 = @vector(@len({}), {value});",
                    rows.witness
                ));
                rows.columns.insert(aggregate.result.clone(), column);
            }
            return;
        }
        let inner = self.first_atom(clause, i, Version::Full, code);
        let value = self.temp(aggregate.kind.name());
        let target = aggregate
            .target
            .as_ref()
            .and_then(|(name, _)| inner.columns.get(name));
        match (aggregate.kind, target) {
            (AggregateKind::Count, _) | (_, None) => {
                code.line(&format!("{value}:i64 = @len({});", inner.witness));
            }
            (AggregateKind::Sum, Some(column)) => {
                code.line(&format!("{value}:i64 = @sum({column});"));
            }
            (kind, Some(column)) => {
                // `@min`/`@max` of no element is an error: reduce the column with the
                // identity appended (the row is dropped below when the column is empty).
                let identity = self.temp("identity");
                if kind == AggregateKind::Min {
                    code.line(&format!("{identity}:i64 = 9223372036854775807:i64;"));
                } else {
                    code.line(&format!(
                        "{identity}:i64 = @minus(-9223372036854775807:i64, 1:i64);"
                    ));
                }
                code.line(&format!(
                    "{value}:i64 = @{}(@append({column}, {identity}));",
                    kind.name()
                ));
            }
        }
        if matches!(aggregate.kind, AggregateKind::Min | AggregateKind::Max)
            && rows.witness.is_empty()
        {
            // The first row is the value; no tuple, no row.
            let nonempty = self.temp("nonempty");
            code.line(&format!(
                "{nonempty}:bool = @gt(@len({}), 0:i64);",
                inner.witness
            ));
            let kept = self.temp(&aggregate.result);
            code.line(&format!("{kept}:i64 = @compress({nonempty}, {value});"));
            rows.witness = kept.clone();
            rows.columns.insert(aggregate.result.clone(), kept);
            return;
        }
        if matches!(aggregate.kind, AggregateKind::Min | AggregateKind::Max) {
            let nonempty = self.temp("nonempty");
            code.line(&format!(
                "{nonempty}:bool = @gt(@len({}), 0:i64);",
                inner.witness
            ));
            let mask = format!("@vector(@len({}), {nonempty})", rows.witness);
            self.filter(vec![mask], rows, code);
        }
        if rows.witness.is_empty() {
            // The rule's first row: the value itself (one element).
            rows.witness = value.clone();
            rows.columns.insert(aggregate.result.clone(), value);
            return;
        }
        let column = self.temp(&aggregate.result);
        code.line(&format!(
            "{column}:i64 = @vector(@len({}), {value});",
            rows.witness
        ));
        rows.columns.insert(aggregate.result.clone(), column);
    }

    /// The head columns of clause `c` evaluated by one `@multiway_join` (worst-case optimal):
    /// the atoms' variable columns (wildcard columns dropped) joined in `plan`'s variable
    /// order, the comparisons between atom variables folded in; the other literals are
    /// applied to the join's result.
    fn multiway_rule(&mut self, c: usize, plan: &MultiwayPlan, code: &mut Code) -> Vec<String> {
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
    fn counted_rule(&mut self, c: usize, code: &mut Code) {
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
    fn multiway_arguments(
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
    fn full_length(
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

    /// The columns of the first atom: its variables, filtered by its constants and repeats.
    fn first_atom(&mut self, clause: &Clause, i: usize, version: Version, code: &mut Code) -> Rows {
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
    fn filter(&mut self, masks: Vec<String>, rows: &mut Rows, code: &mut Code) {
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
    fn join(
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
            let mut order = key_positions.clone();
            order.extend((0..atom.args.len()).filter(|k| !key_positions.contains(k)));
            let identity = order.iter().enumerate().all(|(a, &b)| a == b);
            let build = if identity {
                self.source(atom, version)
            } else {
                code.indexes.insert((id, order.clone()));
                index_name(&atom.relation, &order)
            };
            let keys: Vec<String> = (0..key_positions.len())
                .map(|k| {
                    let column = self.temp("build_key");
                    code.line(&format!("{column}:i64 = @index({build}, {k}:i64);"));
                    column
                })
                .collect();
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
    fn join_unique(
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
        let mut order = key_positions.clone();
        order.extend((0..atom.args.len()).filter(|k| !key_positions.contains(k)));
        let identity = order.iter().enumerate().all(|(a, &b)| a == b);
        let build = if identity {
            self.source(atom, version)
        } else {
            code.indexes.insert((id, order.clone()));
            index_name(&atom.relation, &order)
        };
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
    fn apply_ready(
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
    fn anti_join(&mut self, atom: &Atom, rows: &mut Rows, code: &mut Code) {
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
        let mut order = key_positions.clone();
        order.extend((0..atom.args.len()).filter(|k| !key_positions.contains(k)));
        let identity = order.iter().enumerate().all(|(a, &b)| a == b);
        let build = if identity {
            source
        } else {
            code.indexes.insert((id, order.clone()));
            index_name(&atom.relation, &order)
        };
        let keys: Vec<String> = (0..key_positions.len())
            .map(|k| {
                let column = self.temp("build_key");
                code.line(&format!("{column}:i64 = @index({build}, {k}:i64);"));
                column
            })
            .collect();
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
    fn term(&mut self, term: &Term, rows: &Rows, code: &mut Code) -> String {
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
}

fn comparison(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "neq",
        CmpOp::Lt => "lt",
        CmpOp::Le => "leq",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "geq",
    }
}

fn atom_of(clause: &Clause, i: usize) -> &Atom {
    match &clause.body[i] {
        Literal::Positive(a) | Literal::Negative(a) => a,
        Literal::Aggregate(a) => &a.atom,
        Literal::Constraint { .. } => &clause.head,
    }
}

/// `head(args)` as written, for the rule plans.
fn rule_head(clause: &Clause) -> String {
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

/// The variable holding the number of tuples of a relation only counted.
fn count_name(relation: &str) -> String {
    format!("count_{relation}")
}

/// Relations whose tuples nothing needs but their number, each with its rule: defined by one
/// rule (no input, no fact) that runs as a multiway join and has nothing in its body but the
/// join's atoms and comparisons, whose head is the join's variables, each once (so the
/// join's rows and the relation's tuples are one to one); not an output; read only by
/// `count` aggregates whose atom is wildcards and distinct variables (no filter). Such a
/// relation is never built: `count_R = @multiway_count(…)` of its rule counts at the last
/// variable (a triangle count needs no triangle list).
fn count_only_relations(checked: &Checked<'_>) -> BTreeMap<usize, usize> {
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
struct MultiwayPlan {
    /// Variables, most constrained first.
    order: Vec<String>,
    /// Body indexes of the positive atoms.
    atoms: Vec<usize>,
    /// Body indexes of the comparisons folded into the join (`<`, `<=`, `>`, `>=`, `!=`
    /// between two variables of the atoms).
    comparisons: Vec<usize>,
}

/// The multiway plan of a rule whose positive atoms (three or more, of variables and
/// wildcards only, no variable twice in one atom) share variables in a cycle; None for the
/// others, which run as chains of binary joins.
fn multiway_plan(clause: &Clause) -> Option<MultiwayPlan> {
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
fn cyclic(edges: &[Vec<&str>]) -> bool {
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

fn positive_atoms(clause: &Clause) -> impl Iterator<Item = (usize, &Atom)> {
    clause.body.iter().enumerate().filter_map(|(i, l)| match l {
        Literal::Positive(a) => Some((i, a)),
        _ => None,
    })
}

/// The variables read by the head and by the body literals not applied yet.
fn needed_later<'c>(clause: &'c Clause, applied: &[bool]) -> HashSet<&'c str> {
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

fn collect_symbols(terms: &[Term], out: &mut BTreeSet<String>) {
    for term in terms {
        match term {
            Term::Symbol(s, _) => {
                out.insert(s.clone());
            }
            Term::Binary { left, right, .. } => {
                collect_symbols(std::slice::from_ref(left.as_ref()), out);
                collect_symbols(std::slice::from_ref(right.as_ref()), out);
            }
            Term::Negate(inner, _) => collect_symbols(std::slice::from_ref(inner.as_ref()), out),
            _ => {}
        }
    }
}

/// Rewrites nested calls (`@f(@g(x))`, convenient to generate) into one call per statement,
/// as HorseIR requires: each inner call becomes a temporary `hN` declared just before.
fn flatten_calls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut next = 0usize;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(eq) = trimmed.find(" = @") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (target, rest) = trimmed.split_at(eq + 3);
        let mut expr = rest.trim_end_matches(';').to_string();
        while let Some((start, end)) = innermost_nested_call(&expr) {
            next += 1;
            let name = format!("h{next}");
            let call = &expr[start..end];
            let _ = writeln!(out, "{indent}{name}:{} = {call};", result_type(call));
            expr.replace_range(start..end, &name);
        }
        let _ = writeln!(out, "{indent}{target}{expr};");
    }
    out
}

/// The span of a call nested in another call's arguments that itself has no nested call.
fn innermost_nested_call(expr: &str) -> Option<(usize, usize)> {
    let bytes = expr.as_bytes();
    let mut best = None;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => i += 1,
            b'@' if !in_string && i > 0 => best = Some(i),
            b')' if !in_string => {
                if let Some(start) = best {
                    return Some((start, i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The HorseIR type of a generated call's result (the calls the lowering nests).
fn result_type(call: &str) -> &'static str {
    let name = call[1..].split('(').next().unwrap_or("");
    match name {
        "len" | "unique" | "range" | "index_of" | "append" | "minus" => "i64",
        "list" | "tuple_unique" | "tuple_diff" | "tuple_merge" | "sorted_join" | "join_unique"
        | "multiway_join" => "list<i64>",
        "multiway_count" => "i64",
        "eq" | "neq" | "lt" | "leq" | "gt" | "geq" | "and" | "or" | "not" | "member" => "bool",
        _ => "?",
    }
}
