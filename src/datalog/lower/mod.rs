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

mod aggregate;
mod multiway;
mod rule;
mod text;

use multiway::*;
use rule::*;
use text::*;

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
