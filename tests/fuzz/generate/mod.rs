//! The program generator: random well-typed HorseIR over the TPC-H tables.
//!
//! The generator keeps, for every variable, its static type and its [`Shape`] (a scalar, or a
//! vector of a length class). Types come from the compiler's own type rules
//! ([`builtin_result`]): a candidate call is kept only when the rules accept it, so a program
//! is well typed by construction and stays so when the rules change. Shapes make element-wise
//! calls, masks and index vectors agree in length; with a small probability a statement is
//! made wrong on purpose (operands of different lengths, an index out of range, a negative
//! count, an `if` on a vector), and then both backends must refuse it with the same message.

use std::collections::HashMap;

use horsec::sema::rules::{builtin_result, ArgType, FunctionType};
use horsec_runtime::builtin::Builtin as B;
use horsec_runtime::data::{ColumnKind, Database, TPCH_SCHEMA};
use horsec_runtime::types::Type;

use super::program::{placeholder, ClassId, Function, Program, Shape, Stmt, Var, VarId};
use super::rng::Rng;

mod calls;
mod control;
mod float;
mod functions;
mod relations;
mod selection;

/// One TPC-H table as the generator sees it.
#[derive(Clone, Debug)]
pub struct TableInfo {
    pub name: &'static str,
    pub rows: usize,
    pub columns: Vec<(&'static str, ColumnKind)>,
}

/// Table names, row counts and column types of the database the programs run on.
#[derive(Clone, Debug)]
pub struct Schema {
    pub tables: Vec<TableInfo>,
}

impl Schema {
    pub fn of(db: &Database) -> Schema {
        let tables = TPCH_SCHEMA
            .iter()
            .map(|spec| TableInfo {
                name: spec.name,
                rows: db.table(spec.name).map(|t| t.rows()).unwrap_or(0),
                columns: spec.columns.iter().map(|c| (c.name, c.kind)).collect(),
            })
            .collect();
        Schema { tables }
    }
}

/// Knobs of the generator.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Most statements of `main` (compound statements count once).
    pub max_stmts: usize,
    /// Probability that a statement is made wrong on purpose (lengths, bounds, counts).
    pub error_rate: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_stmts: 12,
            error_rate: 0.03,
        }
    }
}

/// The program of `seed`.
pub fn generate(seed: u64, schema: &Schema, options: Options) -> Program {
    let mut g = Gen::new(seed, schema, options);
    g.run();
    g.p
}

/// An argument ready to print: a variable or a literal.
#[derive(Clone, Debug)]
struct Operand {
    text: String,
    ty: Type,
    shape: Shape,
    uses: Vec<VarId>,
}

/// A call ready to print, with its static type and shape.
#[derive(Clone, Debug)]
struct Expr {
    text: String,
    ty: Type,
    shape: Shape,
    uses: Vec<VarId>,
    calls: Vec<usize>,
}

/// A user function the program defines, for calling it again with other arguments.
#[derive(Clone, Debug)]
struct FunctionSig {
    index: usize,
    /// Parameter types and whether each is a scalar.
    params: Vec<(Type, bool)>,
    returns: Type,
    returns_scalar: bool,
}

struct Class {
    /// An upper bound of the length (to keep joins small).
    max_len: usize,
}

/// Builtins that keep the shape of their argument (besides [`FLOAT_FUNCTIONS`], which a
/// unary call is [`FLOAT_FUNCTION_SHARE`] of the time).
const UNARY: &[(B, u32)] = &[
    (B::Abs, 3),
    (B::Neg, 3),
    (B::Ceil, 2),
    (B::Floor, 2),
    (B::Round, 2),
    (B::Signum, 2),
    (B::Sqrt, 2),
    (B::Recip, 1),
    (B::Not, 4),
    (B::DateYear, 2),
    (B::DateMonth, 2),
    (B::DateDay, 2),
    (B::Fact, 1),
];

/// The floating functions of one argument ("Rounding" in `runtime/BUILTINS.md`). Of an f32
/// (or a narrower integer, whose result is f32) the GPU computes each in f64 in its kernels
/// and rounds to f32, as the CPU does (bit-equal but where the exact value lies within a few
/// f64 ulp of an f32 rounding midpoint); of an f64 (or an i64) it has no instruction, and the
/// step runs on the CPU. `@pi` is `x·π`. They come from unary calls anywhere (kernels, user
/// functions, loop updates: [`FLOAT_FUNCTION_SHARE`] of unary calls) and from statements of
/// their own (`Gen::float_function`), which take their argument through a quotient (into
/// the functions' domains, or to an infinity or NaN by a zero divisor) or a conversion.
pub const FLOAT_FUNCTIONS: &[(B, u32)] = &[
    (B::Exp, 2),
    (B::Log, 2),
    (B::Log2, 1),
    (B::Log10, 1),
    (B::Sin, 2),
    (B::Cos, 2),
    (B::Tan, 1),
    (B::Asin, 1),
    (B::Acos, 1),
    (B::Atan, 1),
    (B::Sinh, 1),
    (B::Cosh, 1),
    (B::Tanh, 1),
    (B::Asinh, 1),
    (B::Acosh, 1),
    (B::Atanh, 1),
    (B::Pi, 1),
];

/// The part of unary element-wise calls that are a [`FLOAT_FUNCTIONS`] (before they were
/// all listed, `@exp`, `@log` and `@cos` were a tenth of them).
const FLOAT_FUNCTION_SHARE: f64 = 0.15;

/// The units of `@datetime_add`/`@datetime_sub` of a date (the unary call of a date is one
/// of these shifts a third of the time, with an integer amount; see `Gen::elementwise`).
const DATE_UNITS: &[&str] = &["year", "month", "day"];

/// Binary element-wise builtins (a length-1 operand broadcasts).
const BINARY: &[(B, u32)] = &[
    (B::Plus, 6),
    (B::Minus, 5),
    (B::Mul, 5),
    (B::Div, 4),
    (B::Mod, 2),
    (B::Power, 1),
    (B::Logb, 1),
    (B::Lt, 4),
    (B::Gt, 3),
    (B::Leq, 3),
    (B::Geq, 3),
    (B::Eq, 4),
    (B::Neq, 3),
    (B::And, 4),
    (B::Or, 4),
    (B::Nand, 2),
    (B::Nor, 2),
    (B::Xor, 2),
];

const LITERAL_TYPES: &[(Type, u32)] = &[
    (Type::Bool, 3),
    (Type::I16, 1),
    (Type::I32, 4),
    (Type::I64, 4),
    (Type::F32, 1),
    (Type::F64, 5),
    (Type::Date, 3),
    (Type::Char, 1),
    (Type::Sym, 2),
    (Type::Str, 1),
];

const SYMBOLS: &[&str] = &[
    "MAIL",
    "SHIP",
    "AIR",
    "RAIL",
    "TRUCK",
    "\"REG AIR\"",
    "BUILDING",
    "AUTOMOBILE",
    "\"1-URGENT\"",
    "ASIA",
    "GERMANY",
    "x",
];
const CHARS: &[&str] = &["'A'", "'N'", "'R'", "'F'", "'O'", "'P'"];
const LIKE_PATTERNS: &[&str] = &[
    "%AIR%", "M%", "%L", "_A%", "%", "", "PROMO%", "%#%", "%a%", "__", "%BRASS",
];

fn weighted<T: Clone>(rng: &mut Rng, items: &[(T, u32)]) -> T {
    let total: u32 = items.iter().map(|(_, w)| w).sum();
    let mut k = rng.below(total as usize) as u32;
    for (item, w) in items {
        if k < *w {
            return item.clone();
        }
        k -= w;
    }
    items[0].0.clone()
}

fn value(t: &Type) -> ArgType {
    ArgType::Value(t.clone())
}

/// The single basic result type of `b` on `args`, if the rules accept the call.
fn result_type(b: B, args: &[ArgType]) -> Option<Type> {
    match builtin_result(b, args) {
        Ok(types) if types.len() == 1 && !types[0].has_wildcard() => Some(types[0].clone()),
        _ => None,
    }
}

fn is_float(t: &Type) -> bool {
    matches!(t, Type::F32 | Type::F64)
}

/// Element-wise builtins whose result moves little when an operand moves by a rounding
/// error, and decides nothing: the only ones a reordered value feeds (see [`Var::reordered`]).
/// Comparisons, `@mod`, rounding to integers, `@signum` jump; `@div`, `@recip`, `@log` and
/// `@power` blow up near zero; `@cos` of a large value is anything.
pub const CONTINUOUS: &[B] = &[B::Plus, B::Minus, B::Mul, B::Abs, B::Neg, B::Sqrt, B::Exp];

/// True when `reduction` of values of type `ty` adds them in an order the backends choose
/// differently (a float sum or mean).
fn sums_floats(reduction: B, ty: &Type) -> bool {
    matches!(reduction, B::Sum | B::Avg) && is_float(ty)
}

fn is_text(t: &Type) -> bool {
    matches!(t, Type::Sym | Type::Str)
}

struct Gen<'s> {
    rng: Rng,
    schema: &'s Schema,
    options: Options,
    p: Program,
    classes: Vec<Class>,
    literal_classes: HashMap<usize, ClassId>,
    /// The class of the values a mask selects, per mask variable.
    masked_classes: HashMap<VarId, ClassId>,
    table_vars: HashMap<usize, VarId>,
    /// `main`'s variables that are basic vectors (the operands of new statements).
    pool: Vec<VarId>,
    /// Variables holding valid row indexes into a class (from `@where`, `@unique`, `@order`,
    /// joins, foreign keys and group keys).
    index_vars: HashMap<VarId, ClassId>,
    signatures: Vec<FunctionSig>,
    /// Columns that are their table's primary key (no two rows equal).
    keys: std::collections::HashSet<VarId>,
}

impl<'s> Gen<'s> {
    fn new(seed: u64, schema: &'s Schema, options: Options) -> Gen<'s> {
        let classes = schema
            .tables
            .iter()
            .map(|t| Class { max_len: t.rows })
            .collect();
        Gen {
            rng: Rng::new(seed),
            schema,
            options,
            p: Program::default(),
            classes,
            literal_classes: HashMap::new(),
            masked_classes: HashMap::new(),
            table_vars: HashMap::new(),
            pool: Vec::new(),
            index_vars: HashMap::new(),
            signatures: Vec::new(),
            keys: Default::default(),
        }
    }

    fn run(&mut self) {
        let target = 3 + self.rng.below(self.options.max_stmts.max(4) - 2);
        let first = self.rng.below(self.schema.tables.len());
        for _ in 0..2 {
            let table = if self.rng.chance(0.6) {
                first
            } else {
                self.rng.below(self.schema.tables.len())
            };
            self.column(table);
        }
        let mut attempts = 0;
        while self.p.stmts.len() < target && attempts < target * 20 {
            attempts += 1;
            let before = self.p.stmts.len();
            self.statement();
            debug_assert!(self.p.stmts.len() >= before);
        }
        self.choose_returns();
    }

    fn choose_returns(&mut self) {
        let n = 1 + self.rng.below(4);
        let recent: Vec<VarId> = self.pool.iter().rev().take(8).copied().collect();
        let mut returns = Vec::new();
        for _ in 0..n {
            let v = *self.rng.pick(&recent);
            if !returns.contains(&v) {
                returns.push(v);
            }
        }
        self.p.returns = returns;
    }

    fn deliberate(&mut self) -> bool {
        self.rng.chance(self.options.error_rate)
    }

    fn new_var(&mut self, prefix: &str, ty: Type, shape: Shape) -> VarId {
        let id = self.p.vars.len();
        self.p.vars.push(Var {
            prefix: prefix.to_string(),
            ty,
            shape,
            reordered: false,
        });
        id
    }

    fn name(&self, v: VarId) -> String {
        placeholder(v)
    }

    fn new_class(&mut self, max_len: usize) -> ClassId {
        self.classes.push(Class { max_len });
        self.classes.len() - 1
    }

    fn literal_class(&mut self, n: usize) -> ClassId {
        if let Some(&c) = self.literal_classes.get(&n) {
            return c;
        }
        let c = self.new_class(n);
        self.literal_classes.insert(n, c);
        c
    }

    fn max_len(&self, shape: Shape) -> usize {
        match shape {
            Shape::Scalar => 1,
            Shape::Rows(c) => self.classes[c].max_len,
        }
    }

    fn push(&mut self, stmt: Stmt, pooled: &[VarId]) {
        // A float computed from a reordered value, or returned by a function that computes
        // one, is reordered.
        let reordered = stmt.uses.iter().any(|&u| self.p.vars[u].reordered)
            || stmt
                .calls
                .iter()
                .any(|&f| self.p.vars[self.p.functions[f].result].reordered);
        if reordered {
            for &v in &stmt.defs {
                if is_float(&self.p.vars[v].ty) {
                    self.p.vars[v].reordered = true;
                }
            }
        }
        self.pool.extend_from_slice(pooled);
        self.p.stmts.push(stmt);
    }

    /// One random statement (or nothing when the pick does not fit the program so far).
    fn statement(&mut self) {
        let kinds: &[(u8, u32)] = &[
            (0, 8),  // column
            (1, 3),  // literal vector or scalar
            (2, 8),  // unary or binary element-wise
            (3, 10), // binary element-wise
            (4, 5),  // compress
            (5, 2),  // where
            (6, 6),  // index
            (7, 5),  // reduction
            (8, 5),  // group + each
            (9, 3),  // join
            (10, 3), // foreign key
            (11, 3), // member
            (12, 2), // unique
            (13, 3), // order
            (14, 3), // like
            (15, 2), // sub_string
            (16, 6), // user function
            (17, 2), // if
            (18, 2), // while
            (19, 2), // repeat
            (20, 2), // vector, range, append, len
            (21, 2), // index_a
            (22, 2), // index_of
            (23, 4), // floating function
            (24, 6), // grouped aggregation (a grouped kernel's shape)
            (25, 1), // tolist + each
        ];
        let kind = weighted(&mut self.rng, kinds);
        match kind {
            0 => {
                let t = self.rng.below(self.schema.tables.len());
                self.column(t);
            }
            1 => self.literal_stmt(),
            2 | 3 => {
                let scope = self.pool.clone();
                if let Some(e) = self.elementwise(&scope, None, None, kind == 3) {
                    self.assign_expr(e);
                }
            }
            4 => self.compress(),
            5 => self.where_(),
            6 => self.index(),
            7 => self.reduction(),
            8 => self.group(),
            9 => self.join(),
            10 => self.foreign_key(),
            11 => self.member(),
            12 => self.unique(),
            13 => self.order(),
            14 => self.like(),
            15 => self.sub_string(),
            16 => self.call(),
            17 => self.if_(),
            18 => self.while_(),
            19 => self.repeat(),
            20 => self.misc(),
            21 => self.index_assign(),
            22 => self.index_of(),
            23 => self.float_function(),
            24 => self.grouped_aggregation(),
            _ => self.tolist_each(),
        }
    }

    // ----- operands and literals -----

    fn var_operand(&self, v: VarId) -> Operand {
        let var = &self.p.vars[v];
        Operand {
            text: placeholder(v),
            ty: var.ty.clone(),
            shape: var.shape,
            uses: vec![v],
        }
    }

    fn scalar_text(&mut self, ty: &Type) -> String {
        let r = &mut self.rng;
        match ty {
            Type::Bool => format!("{}", r.below(2)),
            Type::I8 | Type::I16 | Type::I32 | Type::I64 => {
                let extreme = match ty {
                    Type::I16 => i16::MAX as i64,
                    Type::I32 => i32::MAX as i64,
                    Type::I64 => i64::MAX,
                    _ => i8::MAX as i64,
                };
                if r.chance(0.03) {
                    format!("{}", if r.chance(0.5) { extreme } else { -extreme })
                } else if r.chance(0.7) {
                    format!("{}", r.range(-3, 12))
                } else {
                    format!("{}", r.range(-100, 2000))
                }
            }
            Type::F32 | Type::F64 => {
                let k = if r.chance(0.7) {
                    r.range(-40, 40)
                } else {
                    r.range(-8000, 8000)
                };
                format!("{:.2}", k as f64 / 4.0)
            }
            Type::Date => format!(
                "{}-{:02}-{:02}",
                r.range(1992, 1998),
                r.range(1, 12),
                r.range(1, 28)
            ),
            Type::Char => r.pick(CHARS).to_string(),
            Type::Sym => format!("`{}", r.pick(SYMBOLS)),
            Type::Str => format!("\"{}\"", r.pick(SYMBOLS).trim_matches('"')),
            other => unreachable!("no literals of type {other} are generated"),
        }
    }

    fn scalar_literal(&mut self, ty: &Type) -> Operand {
        Operand {
            text: format!("{}:{ty}", self.scalar_text(ty)),
            ty: ty.clone(),
            shape: Shape::Scalar,
            uses: Vec::new(),
        }
    }

    fn vector_literal_text(&mut self, ty: &Type, n: usize) -> String {
        let items: Vec<String> = (0..n).map(|_| self.scalar_text(ty)).collect();
        format!("({}):{ty}", items.join(", "))
    }

    /// A literal type "near" `t`: one the rules are likely to accept next to it.
    fn related_type(&mut self, t: &Type) -> Type {
        if t.is_real() && *t != Type::Bool {
            weighted(
                &mut self.rng,
                &[
                    (Type::I32, 3),
                    (Type::I64, 3),
                    (Type::F64, 3),
                    (Type::I16, 1),
                    (Type::F32, 1),
                    (t.clone(), 4),
                ],
            )
        } else if t.is_temporal() {
            weighted(
                &mut self.rng,
                &[(t.clone(), 3), (Type::I32, 1), (Type::I64, 1)],
            )
        } else {
            t.clone()
        }
    }

    fn column(&mut self, table: usize) {
        let info = &self.schema.tables[table];
        let (column, kind) = *self.rng.pick(&info.columns);
        if matches!(kind, ColumnKind::ForeignKey { .. }) {
            return self.foreign_key();
        }
        let table_var = self.table_var(table);
        let ty = kind.value_type();
        let v = self.new_var("c", ty.clone(), Shape::Rows(table));
        if TPCH_SCHEMA[table].primary_key == Some(column) {
            self.keys.insert(v);
        }
        let line = format!(
            "{}:{ty} = check_cast(@column_value({}, `{column}:sym), {ty});",
            self.name(v),
            self.name(table_var)
        );
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses: vec![table_var],
                calls: Vec::new(),
            },
            &[v],
        );
    }

    fn table_var(&mut self, table: usize) -> VarId {
        if let Some(&v) = self.table_vars.get(&table) {
            return v;
        }
        let name = self.schema.tables[table].name;
        let v = self.new_var(&format!("t_{name}"), Type::Table, Shape::Scalar);
        let line = format!("{}:table = @load_table(`{name}:sym);", self.name(v));
        self.p.stmts.push(Stmt {
            lines: vec![line],
            defs: vec![v],
            uses: Vec::new(),
            calls: Vec::new(),
        });
        self.table_vars.insert(table, v);
        v
    }

    fn literal_stmt(&mut self) {
        let ty = weighted(&mut self.rng, LITERAL_TYPES);
        if self.rng.chance(0.5) {
            let lit = self.scalar_literal(&ty);
            let v = self.new_var("s", ty.clone(), Shape::Scalar);
            let line = format!("{}:{ty} = {};", self.name(v), lit.text);
            self.push(
                Stmt {
                    lines: vec![line],
                    defs: vec![v],
                    ..Stmt::default()
                },
                &[v],
            );
        } else {
            let n = 2 + self.rng.below(4);
            let class = self.literal_class(n);
            let text = self.vector_literal_text(&ty, n);
            let v = self.new_var("l", ty.clone(), Shape::Rows(class));
            let line = format!("{}:{ty} = {text};", self.name(v));
            self.push(
                Stmt {
                    lines: vec![line],
                    defs: vec![v],
                    ..Stmt::default()
                },
                &[v],
            );
        }
    }

    fn pick_var(&mut self, scope: &[VarId], fits: impl Fn(&Var) -> bool) -> Option<VarId> {
        let candidates: Vec<VarId> = scope
            .iter()
            .copied()
            .filter(|&v| fits(&self.p.vars[v]))
            .collect();
        if candidates.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&candidates))
        }
    }
}
