//! How far apart the backends may rightly be on a float whose value depends on a summation
//! order ("Summation order" in `tests/fuzz/mod.rs`).
//!
//! The CPU folds a float `@sum` left to right, the GPU in a tree of threads and per-workgroup
//! partials: both are right, and they differ by rounding errors that depend on the *terms*,
//! not on the result. Where the terms cancel (`@sum(c - @index(c, @order(c)))` over account
//! balances: exactly 0, CPU 1.0e-10, GPU 0.0; fuzzer seed 7920365047743087880 on an H100, and
//! lavapipe) no tolerance relative to the result accepts both, and a looser relative tolerance
//! would miss wrong answers. So the comparison learns, for each returned float that depends
//! on a summation order, a bound of the error each backend may make, from the terms.
//!
//! # The bound
//! A sum of `n` floats added in any order, each addition rounded to nearest in f64 (unit
//! roundoff `u = 2^-53`; both backends accumulate every float sum in f64, f32 terms
//! converted exactly: `float_sum` in `runtime/src/cpu/reduce.rs`, the f64 accumulator of
//! `src/codegen/generate/reduce.rs`) is within `(n - 1) · u · Σ|x_i|` of the exact sum, to first order
//! (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2). Values computed from
//! sums by the builtins the generator lets them feed (`+ - *`, `@abs`, `@neg`, `@min`,
//! `@max`, gathers, compression, groups' cells, user functions returning a sum) keep a
//! bound of the same form: for every such value `v` each backend's result is within
//! `c · u · W(v)` of the exact one, with
//! - `W(@sum(x)) = n · Σ W(x_i)` and `c = max(c(x), 1)` (the inherited errors plus the
//!   sum's own `(n - 1) u Σ|x_i|`: `c + n - 1 <= c · n`),
//! - `W(@avg(x)) = (n + 1) · avg(W(x))` (the sum's bound over `n`, plus the division's
//!   rounding), `c` as for the sum,
//! - `W(a ± b) = W(a) + W(b)`, `c = max(c(a), c(b)) + 1` (the addition's own rounding,
//!   `u |a ± b| <= u (W(a) + W(b))`),
//! - `W(a · b) = W(a) · W(b)`, `c = c(a) + c(b) + 1`,
//! - `W(@abs(a)) = W(@neg(a)) = W(a)`, `W(@min(x)) = W(@max(x)) = max W(x_i)`, and a
//!   gather, compression or list moves `W` with the values, `c` unchanged,
//!
//! where `W(x) = |x|` for a value that does not depend on a summation order (computed the
//! same, to the bit, on both backends), and `c = 0`. By induction `W(v) >= |v|`, which the
//! rules for `+` and `·` use. The backends then agree within `2 · c · u · W(v)` (each is
//! within `c · u · W(v)` of the exact value); the comparison allows `2 · (c + 1) · u · W`,
//! one more step for the second-order terms, on top of the relative tolerance of the result
//! (which covers the operations whose rounding differs between the backends for the same
//! operands: a division, an f32 function).
//!
//! A wrong answer stays outside it: a term missing from a sum of `n` moves it by `|x_i|`,
//! about `Σ|x_i| / n`, against a bound of about `n · u · Σ|x_i|` (at `n = 6,000` rows, 1e-12
//! of the sum of magnitudes).
//!
//! # How it is computed
//! The CPU runs a sibling of the program ([`bound_program`]): every statement that computes
//! a value depending on a summation order computes `W` of it instead (`@sum(x)` becomes
//! `@mul(@sum(@abs(x)), @len(x))`, `@minus(a, b)` becomes `@plus(@abs(a), @abs(b))`, ...),
//! and every other statement is unchanged. The generator never lets such a value decide
//! anything (a comparison, a key, a user function's argument: `Var::reordered`), so the
//! sibling computes every other value as the program does, and returns `W` of each returned
//! value in its place. Programs where that does not hold (a value summed in some order
//! reaching a comparison, a name declared twice) get no sibling; values computed through a
//! builtin without a rule (`@sqrt`, `@exp`, ...) get no bound: both are compared as before,
//! within the relative tolerance of the result. The sibling is only run when the program's
//! answers differ beyond that tolerance, so a run of agreeing programs pays nothing.

use std::collections::{HashMap, HashSet};

/// Unit roundoff of f64.
pub const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 53) as f64;

/// The sibling program computing error bounds, and what it returns.
#[derive(Clone, Debug)]
pub struct BoundProgram {
    pub text: String,
    /// Per value `main` returns: `Some(c)` when the sibling returns `W` of it (the error of
    /// each backend is within `c · u · W`), None when the value is compared as before (it
    /// does not depend on a summation order, or it does through a builtin without a rule).
    pub returns: Vec<Option<u32>>,
    /// Per value `main` returns: whether it depends on a summation order (bounded or not).
    pub reordered: Vec<bool>,
}

impl BoundProgram {
    /// The largest difference allowed between the backends for a returned value of bound
    /// `w` and order `c` (see the module's documentation).
    pub fn allowed(c: u32, w: f64) -> f64 {
        2.0 * f64::from(c + 1) * UNIT_ROUNDOFF * w
    }
}

/// A statement of the program, as the analysis sees it.
#[derive(Clone, Debug)]
enum Line {
    /// `target = rhs;` (`target` is `name:type` or `name`).
    Assign {
        indent: String,
        target: String,
        name: String,
        rhs: Rhs,
    },
    /// `def f(...) : T {`
    Def { name: String },
    /// `while (...) {`, `repeat (...) {`: a block run more than once.
    Loop { operands: Vec<String> },
    /// `if (...) {`
    If { operands: Vec<String> },
    /// `}` or `} else {`.
    Close { reopens: bool },
    /// `return a, b;`
    Return { names: Vec<String> },
    /// Anything else (module header, import), kept as it is.
    Other,
}

#[derive(Clone, Debug)]
enum Rhs {
    /// `@name(args)`; a function literal argument is kept as its text (`@sum`).
    Call { builtin: String, args: Vec<String> },
    /// A variable or a literal.
    Operand(String),
    /// `check_cast(...)` and anything else: never depends on a summation order.
    Opaque,
}

/// Splits `text` at the commas outside parentheses and quotes.
fn split_args(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut quote: Option<char> = None;
    let mut current = String::new();
    let mut escaped = false;
    for ch in text.chars() {
        if let Some(q) = quote {
            current.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '"' | '\'' => {
                quote = Some(ch);
                current.push(ch);
            }
            '(' => {
                depth += 1;
                current.push(ch);
            }
            ')' => {
                depth -= 1;
                current.push(ch);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut current).trim().to_string()),
            _ => current.push(ch),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The text between the first `(` and its matching `)` of `text`.
fn parenthesised(text: &str) -> Option<&str> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    (close > open).then(|| &text[open + 1..close])
}

fn parse_rhs(rhs: &str) -> Rhs {
    let rhs = rhs.trim();
    if let Some(call) = rhs.strip_prefix('@') {
        let builtin: String = call
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let rest = call[builtin.len()..].trim();
        if rest.starts_with('(') && rest.ends_with(')') {
            return Rhs::Call {
                builtin,
                args: split_args(&rest[1..rest.len() - 1]),
            };
        }
        return Rhs::Opaque;
    }
    if rhs.starts_with("check_cast") {
        return Rhs::Opaque;
    }
    Rhs::Operand(rhs.to_string())
}

fn parse_line(raw: &str) -> Line {
    let indent: String = raw.chars().take_while(|c| c.is_whitespace()).collect();
    let line = raw.trim();
    if let Some(rest) = line.strip_prefix("def ") {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        return Line::Def { name };
    }
    let keyword = |k: &str| {
        line.strip_prefix(k)
            .is_some_and(|rest| rest.starts_with([' ', '(', ';']))
    };
    if keyword("while") || keyword("repeat") {
        let operands = parenthesised(line).map(split_args).unwrap_or_default();
        return Line::Loop { operands };
    }
    if keyword("if") {
        let operands = parenthesised(line).map(split_args).unwrap_or_default();
        return Line::If { operands };
    }
    if line.starts_with('}') {
        return Line::Close {
            reopens: line.ends_with('{'),
        };
    }
    if let Some(rest) = line.strip_prefix("return").filter(|_| keyword("return")) {
        let names = split_args(rest.trim_end_matches(';'));
        return Line::Return { names };
    }
    if let Some((target, rhs)) = line.split_once('=') {
        let target = target.trim().to_string();
        let name = target.split(':').next().unwrap_or("").trim().to_string();
        if is_name(&name) && line.ends_with(';') && !rhs.starts_with('=') {
            return Line::Assign {
                indent,
                rhs: parse_rhs(rhs.trim().trim_end_matches(';')),
                target,
                name,
            };
        }
    }
    Line::Other
}

/// Declared types of every name, or None when a name is declared twice (names of one
/// program may then mean different variables: no sibling).
fn declarations(lines: &[Line], text: &str) -> Option<HashMap<String, String>> {
    let mut types = HashMap::new();
    for line in lines {
        if let Line::Assign { target, name, .. } = line {
            if let Some((_, ty)) = target.split_once(':') {
                if types.insert(name.clone(), ty.trim().to_string()).is_some() {
                    return None;
                }
            }
        }
    }
    // Parameters: `def f(p1:T, p2:U) : R {`.
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("def ") {
            let params = rest.split_once('(')?.1.split_once(')')?.0;
            for param in split_args(params) {
                let (name, ty) = param.split_once(':')?;
                if types
                    .insert(name.trim().to_string(), ty.trim().to_string())
                    .is_some()
                {
                    return None;
                }
            }
        }
    }
    Some(types)
}

fn is_float_type(ty: &str) -> bool {
    matches!(ty, "f32" | "f64")
}

/// Whether a function literal argument names a reduction that sums floats in an order.
fn sums(builtin: &str) -> bool {
    matches!(builtin, "sum" | "avg")
}

struct Analysis<'a> {
    types: &'a HashMap<String, String>,
    /// Names of `?` type that hold float cells (a group's cells of a float column).
    float_cells: HashSet<String>,
    /// Values depending on a summation order.
    reordered: HashSet<String>,
    /// User function name -> the variable it returns.
    results: HashMap<String, String>,
}

impl Analysis<'_> {
    fn is_float(&self, operand: &str) -> bool {
        match self.types.get(operand) {
            Some(ty) => is_float_type(ty) || self.float_cells.contains(operand),
            None => operand.ends_with(":f64") || operand.ends_with(":f32"),
        }
    }

    fn is_reordered(&self, operand: &str) -> bool {
        self.reordered.contains(operand)
    }

    /// Whether `rhs` computes a value that depends on a summation order: a float sum or
    /// mean (grouped or not), or anything of such a value, or a user function returning one.
    fn depends(&self, rhs: &Rhs) -> bool {
        match rhs {
            Rhs::Call { builtin, args } => {
                if matches!(builtin.as_str(), "len" | "count") {
                    return false;
                }
                if sums(builtin) && args.first().is_some_and(|x| self.is_float(x)) {
                    return true;
                }
                if builtin == "each"
                    && args
                        .first()
                        .is_some_and(|f| sums(f.trim_start_matches('@')))
                    && args.get(1).is_some_and(|x| self.is_float(x))
                {
                    return true;
                }
                if self
                    .results
                    .get(builtin)
                    .is_some_and(|r| self.is_reordered(r))
                {
                    return true;
                }
                args.iter().any(|a| self.is_reordered(a))
            }
            Rhs::Operand(o) => self.is_reordered(o),
            Rhs::Opaque => false,
        }
    }
}

/// The bound-computing sibling of `text` (see the module's documentation), or None when the
/// program does not keep values summed in some order apart from its decisions, or returns
/// none.
pub fn bound_program(text: &str) -> Option<BoundProgram> {
    let lines: Vec<Line> = text.lines().map(parse_line).collect();
    let types = declarations(&lines, text)?;
    let (a, main_returns) = analyse(&lines, &types);
    if !main_returns.iter().any(|r| a.is_reordered(r)) {
        return None;
    }
    if lines.iter().any(|line| decides(&a, line)) {
        return None;
    }
    let mut sibling = Sibling {
        a: &a,
        out: String::new(),
        temps: 0,
        unbounded: HashSet::new(),
        order: HashMap::new(),
    };
    // Which values have a bound: all but those computed (at any assignment) through a
    // builtin without a rule, or from such a value, to a fixpoint.
    loop {
        let before = sibling.unbounded.len();
        for line in &lines {
            if let Line::Assign { name, rhs, .. } = line {
                if a.is_reordered(name) && !sibling.has_rule(rhs) {
                    sibling.unbounded.insert(name.clone());
                }
            }
        }
        if sibling.unbounded.len() == before {
            break;
        }
    }
    sibling.orders(&lines);
    for (raw, line) in text.lines().zip(&lines) {
        match line {
            Line::Assign {
                indent,
                target,
                name,
                rhs,
            } if a.is_reordered(name) && !sibling.unbounded.contains(name) => {
                sibling.rewrite(indent, target, rhs);
            }
            _ => {
                sibling.out.push_str(raw);
                sibling.out.push('\n');
            }
        }
    }
    let returns = main_returns
        .iter()
        .map(|r| {
            (a.is_reordered(r) && !sibling.unbounded.contains(r))
                .then(|| sibling.order.get(r).copied().unwrap_or(0))
        })
        .collect();
    Some(BoundProgram {
        text: sibling.out,
        returns,
        reordered: main_returns.iter().map(|r| a.is_reordered(r)).collect(),
    })
}

/// Per value `main` returns, whether it depends on a summation order; None where that cannot
/// be told (declarations the analysis cannot read) or where a summed value decides something
/// (a condition, a key), so that any value may depend on the order.
pub fn reordered_returns(text: &str) -> Option<Vec<bool>> {
    let lines: Vec<Line> = text.lines().map(parse_line).collect();
    let types = declarations(&lines, text)?;
    let (a, main_returns) = analyse(&lines, &types);
    if lines.iter().any(|line| decides(&a, line)) {
        return None;
    }
    Some(main_returns.iter().map(|r| a.is_reordered(r)).collect())
}

/// The values of `lines` that depend on a summation order, and the names `main` returns.
fn analyse<'t>(lines: &[Line], types: &'t HashMap<String, String>) -> (Analysis<'t>, Vec<String>) {
    let mut a = Analysis {
        types,
        float_cells: HashSet::new(),
        reordered: HashSet::new(),
        results: HashMap::new(),
    };
    // Function results: the `return` of each `def` but main.
    let mut function: Option<String> = None;
    let mut main_returns: Vec<String> = Vec::new();
    for line in lines {
        match line {
            Line::Def { name } => function = Some(name.clone()),
            Line::Return { names } => match function.as_deref() {
                Some("main") => main_returns = names.clone(),
                Some(f) => {
                    if let [name] = names.as_slice() {
                        a.results.insert(f.to_string(), name.clone());
                    }
                }
                None => {}
            },
            _ => {}
        }
    }
    // Names of `?` type holding float cells, then the values depending on a summation
    // order, both to a fixpoint (loops assign after use).
    loop {
        let mut changed = false;
        for line in lines {
            let Line::Assign { name, rhs, .. } = line else {
                continue;
            };
            if let Rhs::Call { builtin, args } = rhs {
                let cells = builtin == "each_right"
                    && args.first().is_some_and(|f| f == "@index")
                    && args.get(1).is_some_and(|x| a.is_float(x))
                    && types.get(name).is_some_and(|t| t == "?");
                if cells && a.float_cells.insert(name.clone()) {
                    changed = true;
                }
            }
            if a.depends(rhs) && a.reordered.insert(name.clone()) {
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (a, main_returns)
}

/// Whether `line` decides something on a value that depends on a summation order: such a
/// value may reach only values of float type or lists of cells (which then depend on the
/// order too), `@len`, `@count` and `main`'s return, never a condition, a user function's
/// parameter, or a list from `@group`, `@join_index`, ...
fn decides(a: &Analysis<'_>, line: &Line) -> bool {
    match line {
        Line::Assign { name, rhs, .. } if a.is_reordered(name) => {
            let ty = a.types.get(name).map(String::as_str).unwrap_or("");
            let cells = matches!(rhs, Rhs::Call { builtin, .. }
                if matches!(builtin.as_str(), "each" | "each_right" | "list"));
            let argument = matches!(rhs, Rhs::Call { builtin, args }
                if a.results.contains_key(builtin) && args.iter().any(|x| a.is_reordered(x)));
            !(is_float_type(ty) || (ty == "?" && cells)) || argument
        }
        Line::Loop { operands } | Line::If { operands } => {
            operands.iter().any(|o| a.is_reordered(o))
        }
        _ => false,
    }
}

struct Sibling<'a> {
    a: &'a Analysis<'a>,
    out: String,
    temps: usize,
    /// Values depending on a summation order that get no bound.
    unbounded: HashSet<String>,
    /// The order `c` of each bounded value (see the module's documentation).
    order: HashMap<String, u32>,
}

/// Builtins that move values (a gather, a compression, a list), with the positions of
/// their arguments that are moved: `W` moves with them.
fn moved_arguments(builtin: &str) -> Option<&'static [usize]> {
    Some(match builtin {
        "index" => &[0],
        "compress" => &[1],
        "each_right" => &[1],
        "raze" => &[0],
        "append" => &[0, 1],
        "vector" => &[1],
        "index_a" => &[0, 2],
        "take" | "drop" => &[1],
        "reverse" => &[0],
        _ => return None,
    })
}

impl Sibling<'_> {
    fn bounded(&self, operand: &str) -> bool {
        !self.unbounded.contains(operand)
    }

    /// Whether `rhs` (of a value depending on a summation order) has a rule, with every
    /// operand depending on the order bounded.
    fn has_rule(&self, rhs: &Rhs) -> bool {
        let a = self.a;
        match rhs {
            Rhs::Operand(o) => self.bounded(o),
            Rhs::Opaque => false,
            Rhs::Call { builtin, args } => {
                let operands_bounded = args.iter().all(|x| self.bounded(x));
                if let Some(result) = a.results.get(builtin) {
                    return self.bounded(result) && operands_bounded;
                }
                let known = match builtin.as_str() {
                    "sum" | "avg" | "min" | "max" | "abs" | "neg" => args.len() == 1,
                    "plus" | "minus" | "mul" => args.len() == 2,
                    "each" => {
                        args.len() == 2
                            && matches!(args[0].as_str(), "@sum" | "@avg" | "@min" | "@max")
                    }
                    "each_right" => args.len() == 3 && args[0] == "@index",
                    other => moved_arguments(other).is_some(),
                };
                known && operands_bounded
            }
        }
    }

    fn order_of(&self, operand: &str) -> u32 {
        self.order.get(operand).copied().unwrap_or(0)
    }

    /// The order of every bounded value: the statements in turn, a loop's body four times
    /// (generated loops run at most three times; an if's branches both count).
    fn orders(&mut self, lines: &[Line]) {
        // Where each loop's body starts and ends.
        let mut stack: Vec<(usize, bool)> = Vec::new();
        let mut loops: HashMap<usize, usize> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            match line {
                Line::Loop { .. } => stack.push((i, true)),
                Line::If { .. } | Line::Def { .. } => stack.push((i, false)),
                Line::Close { reopens: true } => {}
                Line::Close { reopens: false } => {
                    if let Some((start, true)) = stack.pop() {
                        loops.insert(start, i);
                    }
                }
                _ => {}
            }
        }
        self.orders_of(lines, 0, lines.len(), &loops);
    }

    fn orders_of(
        &mut self,
        lines: &[Line],
        start: usize,
        end: usize,
        loops: &HashMap<usize, usize>,
    ) {
        let mut i = start;
        while i < end {
            if let Some(&close) = loops.get(&i) {
                for _ in 0..4 {
                    self.orders_of(lines, i + 1, close, loops);
                }
                i = close + 1;
                continue;
            }
            if let Line::Assign { name, rhs, .. } = &lines[i] {
                if self.a.is_reordered(name) && self.bounded(name) {
                    let c = self.order_of_rhs(rhs);
                    let entry = self.order.entry(name.clone()).or_insert(0);
                    *entry = (*entry).max(c);
                }
            }
            i += 1;
        }
    }

    fn order_of_rhs(&self, rhs: &Rhs) -> u32 {
        match rhs {
            Rhs::Operand(o) => self.order_of(o),
            Rhs::Opaque => 0,
            Rhs::Call { builtin, args } => {
                let c = |i: usize| args.get(i).map_or(0, |x| self.order_of(x));
                if let Some(result) = self.a.results.get(builtin) {
                    return self.order_of(result);
                }
                match builtin.as_str() {
                    "sum" | "avg" => c(0).max(1),
                    "each" if matches!(args.first().map(String::as_str), Some("@sum" | "@avg")) => {
                        c(1).max(1)
                    }
                    "plus" | "minus" => c(0).max(c(1)) + 1,
                    "mul" => c(0) + c(1) + 1,
                    _ => (0..args.len()).map(c).max().unwrap_or(0),
                }
            }
        }
    }

    fn temp(&mut self, indent: &str, rhs: &str) -> String {
        let name = format!("bound_w{}", self.temps);
        self.temps += 1;
        self.out.push_str(&format!("{indent}{name}:? = {rhs};\n"));
        name
    }

    /// `W` of an operand: itself when it depends on a summation order (the sibling computes
    /// its `W` there), else its magnitude.
    fn magnitude(&mut self, indent: &str, operand: &str) -> String {
        if self.a.is_reordered(operand) {
            return operand.to_string();
        }
        let boolean =
            self.a.types.get(operand).is_some_and(|t| t == "bool") || operand.ends_with(":bool");
        if boolean {
            return operand.to_string();
        }
        self.temp(indent, &format!("@abs({operand})"))
    }

    /// Writes the statements computing `W` of `target` (see the module's documentation).
    fn rewrite(&mut self, indent: &str, target: &str, rhs: &Rhs) {
        let value = match rhs {
            Rhs::Operand(o) => self.magnitude(indent, o),
            Rhs::Opaque => unreachable!("opaque statements have no rule"),
            Rhs::Call { builtin, args } => self.rewrite_call(indent, builtin, args),
        };
        self.out.push_str(&format!("{indent}{target} = {value};\n"));
    }

    /// The right-hand side computing `W` of `@builtin(args)`, after the temporaries it needs.
    fn rewrite_call(&mut self, indent: &str, builtin: &str, args: &[String]) -> String {
        if self.a.results.contains_key(builtin) {
            // A user function returning a value summed in some order returns its `W` in the
            // sibling (its body is rewritten too).
            return format!("@{builtin}({})", args.join(", "));
        }
        match builtin {
            "sum" | "avg" => {
                let x = &args[0];
                let magnitudes = self.magnitude(indent, x);
                let reduced = self.temp(indent, &format!("@{builtin}({magnitudes})"));
                let n = self.temp(indent, &format!("@len({x})"));
                let factor = if builtin == "avg" {
                    self.temp(indent, &format!("@plus({n}, 1:i64)"))
                } else {
                    n
                };
                format!("@mul({reduced}, {factor})")
            }
            "min" | "max" => format!("@max({})", args[0]),
            "abs" | "neg" => format!("@abs({})", args[0]),
            "plus" | "minus" | "mul" => {
                let x = self.magnitude(indent, &args[0]);
                let y = self.magnitude(indent, &args[1]);
                let op = if builtin == "mul" { "mul" } else { "plus" };
                format!("@{op}({x}, {y})")
            }
            "each" => {
                let (f, cells) = (args[0].trim_start_matches('@'), &args[1]);
                if sums(f) {
                    let magnitudes = self.temp(indent, &format!("@each(@abs, {cells})"));
                    let reduced = self.temp(indent, &format!("@each(@{f}, {magnitudes})"));
                    let n = self.temp(indent, &format!("@each(@len, {cells})"));
                    let factor = if f == "avg" {
                        self.temp(indent, &format!("@each_right(@plus, 1:i64, {n})"))
                    } else {
                        n
                    };
                    format!("@each_item(@mul, {reduced}, {factor})")
                } else {
                    format!("@each(@max, {cells})")
                }
            }
            _ => {
                let moved = moved_arguments(builtin).unwrap_or(&[]);
                let mut out = Vec::new();
                for (i, x) in args.iter().enumerate() {
                    out.push(if moved.contains(&i) {
                        self.magnitude(indent, x)
                    } else {
                        x.clone()
                    });
                }
                format!("@{builtin}({})", out.join(", "))
            }
        }
    }
}
