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

/// Builtins that keep the shape of their argument.
const UNARY: &[(B, u32)] = &[
    (B::Abs, 3),
    (B::Neg, 3),
    (B::Ceil, 2),
    (B::Floor, 2),
    (B::Round, 2),
    (B::Signum, 2),
    (B::Sqrt, 2),
    (B::Recip, 1),
    (B::Exp, 1),
    (B::Log, 1),
    (B::Cos, 1),
    (B::Not, 4),
    (B::DateYear, 2),
    (B::DateMonth, 2),
    (B::DateDay, 2),
];

/// Binary element-wise builtins (a length-1 operand broadcasts).
const BINARY: &[(B, u32)] = &[
    (B::Plus, 6),
    (B::Minus, 5),
    (B::Mul, 5),
    (B::Div, 4),
    (B::Mod, 2),
    (B::Power, 1),
    (B::Lt, 4),
    (B::Gt, 3),
    (B::Leq, 3),
    (B::Geq, 3),
    (B::Eq, 4),
    (B::Neq, 3),
    (B::And, 4),
    (B::Or, 4),
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
            _ => self.index_of(),
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

    // ----- element-wise calls -----

    /// A unary or binary element-wise call over `scope` (and literals), optionally of exactly
    /// type and shape `want`, optionally with `first` as its first operand.
    fn elementwise(
        &mut self,
        scope: &[VarId],
        want: Option<(&Type, Shape)>,
        first: Option<VarId>,
        binary_only: bool,
    ) -> Option<Expr> {
        for _ in 0..40 {
            let wrong = self.deliberate();
            let a = match first {
                Some(v) => self.var_operand(v),
                None => match want {
                    Some((_, Shape::Rows(c))) if self.rng.chance(0.8) => {
                        let v = self.pick_var(scope, |var| var.shape == Shape::Rows(c))?;
                        self.var_operand(v)
                    }
                    _ => match self.pick_var(scope, |v| v.ty.is_basic()) {
                        Some(v) if self.rng.chance(0.85) => self.var_operand(v),
                        _ => {
                            let ty = weighted(&mut self.rng, LITERAL_TYPES);
                            self.scalar_literal(&ty)
                        }
                    },
                },
            };
            let unary = !binary_only && self.rng.chance(0.3);
            let (builtin, args) = if unary {
                (weighted(&mut self.rng, UNARY), vec![a])
            } else {
                let builtin = weighted(&mut self.rng, BINARY);
                let shape = a.shape;
                let b_var = if self.rng.chance(0.6) {
                    self.pick_var(scope, |v| {
                        v.ty.is_basic()
                            && if wrong {
                                matches!((v.shape, shape), (Shape::Rows(x), Shape::Rows(y)) if x != y)
                            } else {
                                v.shape == shape || v.shape == Shape::Scalar || shape == Shape::Scalar
                            }
                    })
                } else {
                    None
                };
                let b = match b_var {
                    Some(v) => self.var_operand(v),
                    None if wrong => continue,
                    None => {
                        let ty = self.related_type(&a.ty);
                        self.scalar_literal(&ty)
                    }
                };
                if self.rng.chance(0.5) && first.is_none() {
                    (builtin, vec![b, a])
                } else {
                    (builtin, vec![a, b])
                }
            };
            let arg_types: Vec<ArgType> = args.iter().map(|o| value(&o.ty)).collect();
            let Some(ty) = result_type(builtin, &arg_types) else {
                continue;
            };
            if !ty.is_basic() {
                continue;
            }
            let shape = args
                .iter()
                .map(|o| o.shape)
                .find(|s| *s != Shape::Scalar)
                .unwrap_or(Shape::Scalar);
            if let Some((want_ty, want_shape)) = want {
                if ty != *want_ty || shape != want_shape {
                    continue;
                }
            }
            let texts: Vec<&str> = args.iter().map(|o| o.text.as_str()).collect();
            return Some(Expr {
                text: format!("@{}({})", builtin.name(), texts.join(", ")),
                ty,
                shape,
                uses: args.iter().flat_map(|o| o.uses.clone()).collect(),
                calls: Vec::new(),
            });
        }
        None
    }

    /// `v:T = expr;` added to `main` and the pool.
    fn assign_expr(&mut self, e: Expr) -> VarId {
        let v = self.new_var("v", e.ty.clone(), e.shape);
        let line = format!("{}:{} = {};", self.name(v), e.ty, e.text);
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses: e.uses,
                calls: e.calls,
            },
            &[v],
        );
        v
    }

    /// A single-line statement `v:T = @b(args);` whose type the rules give.
    fn simple_call(&mut self, b: B, args: &[Operand], shape: Shape, prefix: &str) -> Option<VarId> {
        let types: Vec<ArgType> = args.iter().map(|o| value(&o.ty)).collect();
        let ty = result_type(b, &types)?;
        let texts: Vec<&str> = args.iter().map(|o| o.text.as_str()).collect();
        let v = self.new_var(prefix, ty.clone(), shape);
        let line = format!(
            "{}:{ty} = @{}({});",
            self.name(v),
            b.name(),
            texts.join(", ")
        );
        self.push(
            Stmt {
                lines: vec![line],
                defs: vec![v],
                uses: args.iter().flat_map(|o| o.uses.clone()).collect(),
                calls: Vec::new(),
            },
            &[v],
        );
        Some(v)
    }

    fn rows_var(&mut self, fits: impl Fn(&Var) -> bool) -> Option<VarId> {
        let pool = self.pool.clone();
        self.pick_var(&pool, |v| matches!(v.shape, Shape::Rows(_)) && fits(v))
    }

    fn class_of(&self, v: VarId) -> ClassId {
        match self.p.vars[v].shape {
            Shape::Rows(c) => c,
            Shape::Scalar => usize::MAX,
        }
    }

    // ----- selection and indexing -----

    fn mask_class(&mut self, mask: VarId) -> ClassId {
        if let Some(&c) = self.masked_classes.get(&mask) {
            return c;
        }
        let max = self.max_len(self.p.vars[mask].shape);
        let c = self.new_class(max);
        self.masked_classes.insert(mask, c);
        c
    }

    fn compress(&mut self) {
        let Some(mask) = self.rows_var(|v| v.ty == Type::Bool) else {
            return;
        };
        let class = self.class_of(mask);
        let wrong = self.deliberate();
        let Some(x) = self.rows_var(|v| (v.shape == Shape::Rows(class)) != wrong) else {
            return;
        };
        let out = self.mask_class(mask);
        let (m, x) = (self.var_operand(mask), self.var_operand(x));
        self.simple_call(B::Compress, &[m, x], Shape::Rows(out), "k");
    }

    fn where_(&mut self) {
        let Some(mask) = self.rows_var(|v| v.ty == Type::Bool) else {
            return;
        };
        let class = self.class_of(mask);
        let out = self.mask_class(mask);
        let m = self.var_operand(mask);
        if let Some(v) = self.simple_call(B::Where, &[m], Shape::Rows(out), "w") {
            self.index_vars.insert(v, class);
        }
    }

    fn index(&mut self) {
        let wrong = self.deliberate();
        let indexes: Vec<(VarId, ClassId)> = self
            .index_vars
            .iter()
            .map(|(&v, &c)| (v, c))
            .filter(|(v, _)| self.pool.contains(v))
            .collect();
        if !wrong && !indexes.is_empty() && self.rng.chance(0.85) {
            let mut indexes = indexes;
            indexes.sort();
            let (i, target) = *self.rng.pick(&indexes);
            let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(target)) else {
                return;
            };
            let shape = self.p.vars[i].shape;
            let (x, i) = (self.var_operand(x), self.var_operand(i));
            self.simple_call(B::Index, &[x, i], shape, "i");
        } else {
            // Literal positions: out of range on purpose now and then.
            let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                return;
            };
            let len = self.max_len(self.p.vars[x].shape).max(1) as i64;
            let n = 1 + self.rng.below(4);
            let items: Vec<String> = (0..n)
                .map(|_| {
                    if wrong {
                        format!("{}", if self.rng.chance(0.5) { -1 } else { len + 3 })
                    } else {
                        format!("{}", self.rng.range(0, (len - 1).min(4)))
                    }
                })
                .collect();
            let class = self.literal_class(n);
            let i = Operand {
                text: format!("({}):i64", items.join(", ")),
                ty: Type::I64,
                shape: Shape::Rows(class),
                uses: Vec::new(),
            };
            let x = self.var_operand(x);
            self.simple_call(B::Index, &[x, i], Shape::Rows(class), "i");
        }
    }

    /// `@index_a(x, i, v)`: a copy of `x` with `x[i] = v`.
    fn index_assign(&mut self) {
        let wrong = self.deliberate();
        let mut indexes: Vec<(VarId, ClassId)> = self
            .index_vars
            .iter()
            .map(|(&v, &c)| (v, c))
            .filter(|(v, _)| self.pool.contains(v))
            .collect();
        indexes.sort();
        if indexes.is_empty() {
            return;
        }
        let (i, target) = *self.rng.pick(&indexes);
        let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(target) && v.ty.is_basic()) else {
            return;
        };
        let x_ty = self.p.vars[x].ty.clone();
        let i_shape = self.p.vars[i].shape;
        let i_op = if wrong {
            let len = self.max_len(Shape::Rows(target)) as i64;
            Operand {
                text: format!("({}):i64", len + 2),
                ty: Type::I64,
                shape: Shape::Scalar,
                uses: Vec::new(),
            }
        } else {
            self.var_operand(i)
        };
        let values = match self.rows_var(|v| v.shape == i_shape && v.ty == x_ty) {
            Some(v) if !wrong && self.rng.chance(0.5) => Some(self.var_operand(v)),
            _ => self.scalar_literal_or_skip(&x_ty),
        };
        let Some(values) = values else {
            return;
        };
        let x = self.var_operand(x);
        self.simple_call(B::IndexA, &[x, i_op, values], Shape::Rows(target), "ia");
    }

    /// `@index_of(x, y)`: for each element of `y`, its first position in `x` (or `len(x)`).
    fn index_of(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let x_ty = self.p.vars[x].ty.clone();
        let Some(y) = self.rows_var(|v| {
            v.ty.is_basic() && result_type(B::IndexOf, &[value(&x_ty), value(&v.ty)]).is_some()
        }) else {
            return;
        };
        let shape = self.p.vars[y].shape;
        let (x, y) = (self.var_operand(x), self.var_operand(y));
        self.simple_call(B::IndexOf, &[x, y], shape, "io");
    }

    /// A scalar literal of `ty` when the generator writes literals of that type.
    fn scalar_literal_or_skip(&mut self, ty: &Type) -> Option<Operand> {
        LITERAL_TYPES
            .iter()
            .any(|(t, _)| t == ty)
            .then(|| self.scalar_literal(ty))
    }

    fn reduction(&mut self) {
        let b = *self
            .rng
            .pick(&[B::Sum, B::Sum, B::Avg, B::Min, B::Max, B::Len]);
        let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let x = self.var_operand(x);
        self.simple_call(b, &[x], Shape::Scalar, "r");
    }

    fn member(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let x = self.var_operand(x);
        let y = match self.rows_var(|v| v.ty == x.ty) {
            Some(y) if self.rng.chance(0.5) => self.var_operand(y),
            _ => {
                let ty = self.related_type(&x.ty);
                let n = 1 + self.rng.below(4);
                let class = self.literal_class(n);
                Operand {
                    text: self.vector_literal_text(&ty, n),
                    ty,
                    shape: Shape::Rows(class),
                    uses: Vec::new(),
                }
            }
        };
        let shape = x.shape;
        self.simple_call(B::Member, &[x, y], shape, "m");
    }

    fn unique(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let class_of_x = self.class_of(x);
        let max = self.max_len(self.p.vars[x].shape);
        let out = self.new_class(max);
        let xo = self.var_operand(x);
        let Some(u) = self.simple_call(B::Unique, std::slice::from_ref(&xo), Shape::Rows(out), "u")
        else {
            return;
        };
        self.index_vars.insert(u, class_of_x);
        let uo = self.var_operand(u);
        self.simple_call(B::Index, &[xo, uo], Shape::Rows(out), "uv");
    }

    fn order(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && v.ty != Type::Complex) else {
            return;
        };
        let class = self.class_of(x);
        let xo = self.var_operand(x);
        let second = self.rows_var(|v| v.shape == Shape::Rows(class) && v.ty.is_basic());
        let o = self.new_var("o", Type::I64, Shape::Rows(class));
        let mut lines = Vec::new();
        let mut uses = xo.uses.clone();
        match second {
            Some(y) if self.rng.chance(0.5) => {
                let keys = self.new_var("ok", Type::Wildcard, Shape::Scalar);
                let dirs = format!("({}, {}):bool", self.rng.below(2), self.rng.below(2));
                lines.push(format!(
                    "{}:? = @list({}, {});",
                    self.name(keys),
                    xo.text,
                    self.name(y)
                ));
                lines.push(format!(
                    "{}:i64 = @order({}, {dirs});",
                    self.name(o),
                    self.name(keys)
                ));
                uses.push(y);
            }
            _ => {
                let dir = self.rng.below(2);
                lines.push(format!(
                    "{}:i64 = @order({}, {dir}:bool);",
                    self.name(o),
                    xo.text
                ));
            }
        }
        // The values in sorted order.
        let sorted = self.new_var("sv", xo.ty.clone(), Shape::Rows(class));
        lines.push(format!(
            "{}:{} = @index({}, {});",
            self.name(sorted),
            xo.ty,
            xo.text,
            self.name(o)
        ));
        self.index_vars.insert(o, class);
        self.push(
            Stmt {
                lines,
                defs: vec![o, sorted],
                uses,
                calls: Vec::new(),
            },
            &[o, sorted],
        );
    }

    fn like(&mut self) {
        let Some(s) = self.rows_var(|v| matches!(v.ty, Type::Sym | Type::Str | Type::Char)) else {
            return;
        };
        let pattern = self.rng.pick(LIKE_PATTERNS).to_string();
        let ty = if self.rng.chance(0.7) { "str" } else { "sym" };
        let text = if ty == "str" {
            format!("\"{pattern}\":str")
        } else {
            format!("`\"{pattern}\":sym")
        };
        let p = Operand {
            text,
            ty: if ty == "str" { Type::Str } else { Type::Sym },
            shape: Shape::Scalar,
            uses: Vec::new(),
        };
        let so = self.var_operand(s);
        let shape = so.shape;
        self.simple_call(B::Like, &[so, p], shape, "lk");
    }

    fn sub_string(&mut self) {
        let Some(s) = self.rows_var(|v| is_text(&v.ty)) else {
            return;
        };
        let wrong = self.deliberate();
        let (pos, len) = if wrong {
            (self.rng.range(-2, 0), self.rng.range(-3, 2))
        } else {
            (self.rng.range(1, 6), self.rng.range(0, 8))
        };
        let range = Operand {
            text: format!("({pos}, {len}):i32"),
            ty: Type::I32,
            shape: Shape::Rows(usize::MAX),
            uses: Vec::new(),
        };
        let so = self.var_operand(s);
        let shape = so.shape;
        self.simple_call(B::SubString, &[so, range], shape, "ss");
    }

    fn misc(&mut self) {
        match self.rng.below(4) {
            0 => {
                let wrong = self.deliberate();
                let n = if wrong { -1 } else { self.rng.range(0, 5) };
                let ty = weighted(&mut self.rng, LITERAL_TYPES);
                let value = self.scalar_literal(&ty);
                let class = self.literal_class(n.max(0) as usize);
                let count = Operand {
                    text: format!("{n}:i64"),
                    ty: Type::I64,
                    shape: Shape::Scalar,
                    uses: Vec::new(),
                };
                self.simple_call(B::Vector, &[count, value], Shape::Rows(class), "vec");
            }
            1 => {
                let n = self.rng.range(0, 6);
                let class = self.literal_class(n as usize);
                let count = Operand {
                    text: format!("{n}:i64"),
                    ty: Type::I64,
                    shape: Shape::Scalar,
                    uses: Vec::new(),
                };
                self.simple_call(B::Range, &[count], Shape::Rows(class), "rg");
            }
            2 => {
                let Some(a) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let a = self.var_operand(a);
                let Some(b) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let b = self.var_operand(b);
                let max = self.max_len(a.shape) + self.max_len(b.shape);
                let class = self.new_class(max);
                self.simple_call(B::Append, &[a, b], Shape::Rows(class), "ap");
            }
            _ => {
                let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let x = self.var_operand(x);
                self.simple_call(B::Len, &[x], Shape::Scalar, "n");
            }
        }
    }

    // ----- groups, joins, foreign keys -----

    fn group(&mut self) {
        let Some(k) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let class = self.class_of(k);
        let k2 = self.rows_var(|v| {
            v.shape == Shape::Rows(class) && v.ty.is_basic() && v.ty != Type::Complex
        });
        let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(class)) else {
            return;
        };
        let reducer = *self
            .rng
            .pick(&[B::Sum, B::Sum, B::Avg, B::Min, B::Max, B::Len]);
        let x_ty = self.p.vars[x].ty.clone();
        let cells_ty = Type::List(Box::new(x_ty.clone()));
        let Some(agg_list) = result_type(
            B::Each,
            &[
                ArgType::Function(FunctionType::Builtin(reducer)),
                value(&cells_ty),
            ],
        ) else {
            return;
        };
        let Type::List(agg_ty) = agg_list else {
            return;
        };
        let agg_ty = *agg_ty;
        let max = self.max_len(Shape::Rows(class));
        let groups = self.new_class(max);
        let g = self.new_var("g", Type::Wildcard, Shape::Scalar);
        let g = self.name(g);
        let key = self.new_var("gk", self.p.vars[k].ty.clone(), Shape::Rows(groups));
        let first = self.new_var("gf", Type::I64, Shape::Rows(groups));
        let agg = self.new_var("ga", agg_ty.clone(), Shape::Rows(groups));
        let (kn, xn) = (self.name(k).to_string(), self.name(x).to_string());
        let mut lines = Vec::new();
        let mut uses = vec![k, x];
        match k2 {
            Some(k2) if self.rng.chance(0.4) => {
                lines.push(format!("{g}_k:? = @list({kn}, {});", self.name(k2)));
                lines.push(format!("{g}:? = @group({g}_k);"));
                uses.push(k2);
            }
            _ => lines.push(format!("{g}:? = @group({kn});")),
        }
        lines.push(format!("{}:i64 = @keys({g});", self.name(first)));
        lines.push(format!("{g}_rows:? = @values({g});"));
        lines.push(format!(
            "{}:{} = @index({kn}, {});",
            self.name(key),
            self.p.vars[k].ty,
            self.name(first)
        ));
        lines.push(format!(
            "{g}_cells:? = @each_right(@index, {xn}, {g}_rows);"
        ));
        lines.push(format!(
            "{g}_aggs:? = @each(@{}, {g}_cells);",
            reducer.name()
        ));
        lines.push(format!("{}:{agg_ty} = @raze({g}_aggs);", self.name(agg)));
        self.index_vars.insert(first, class);
        self.push(
            Stmt {
                lines,
                defs: vec![key, first, agg],
                uses,
                calls: Vec::new(),
            },
            &[key, first, agg],
        );
    }

    fn join(&mut self) {
        let Some(a) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let a_ty = self.p.vars[a].ty.clone();
        let a_len = self.max_len(self.p.vars[a].shape);
        let b = self.rows_var(|v| {
            v.ty.is_basic() && result_type(B::Eq, &[value(&a_ty), value(&v.ty)]).is_some()
        });
        let Some(b) = b else {
            return;
        };
        let b_len = self.max_len(self.p.vars[b].shape);
        let pairs = a_len.saturating_mul(b_len);
        // Joins stay small: an equality join on a key gives at most one match per row of
        // the other side; other joins only on small inputs.
        let predicate = if pairs <= 20_000 && self.rng.chance(0.4) {
            *self.rng.pick(&[B::Lt, B::Neq, B::Geq])
        } else {
            B::Eq
        };
        let keyed = self.keys.contains(&a) || self.keys.contains(&b);
        if !(pairs <= 50_000 || predicate == B::Eq && keyed) {
            return;
        }
        let fits = result_type(predicate, &[value(&a_ty), value(&self.p.vars[b].ty)]).is_some();
        if !fits {
            return;
        }
        let (ca, cb) = (self.class_of(a), self.class_of(b));
        let out = self.new_class(a_len.saturating_mul(b_len).min(1 << 24));
        let j = self.new_var("j", Type::Wildcard, Shape::Scalar);
        let j = self.name(j);
        let ia = self.new_var("ja", Type::I64, Shape::Rows(out));
        let ib = self.new_var("jb", Type::I64, Shape::Rows(out));
        let lines = vec![
            format!(
                "{j}:? = @join_index(@{}, {}, {});",
                predicate.name(),
                self.name(a),
                self.name(b)
            ),
            format!("{}:i64 = @index({j}, 0:i64);", self.name(ia)),
            format!("{}:i64 = @index({j}, 1:i64);", self.name(ib)),
        ];
        self.index_vars.insert(ia, ca);
        self.index_vars.insert(ib, cb);
        self.push(
            Stmt {
                lines,
                defs: vec![ia, ib],
                uses: vec![a, b],
                calls: Vec::new(),
            },
            &[ia, ib],
        );
    }

    fn foreign_key(&mut self) {
        let fks: Vec<(usize, &'static str, &'static str)> = self
            .schema
            .tables
            .iter()
            .enumerate()
            .flat_map(|(t, info)| {
                info.columns
                    .iter()
                    .filter_map(move |(name, kind)| match kind {
                        ColumnKind::ForeignKey { table, .. } => Some((t, *name, *table)),
                        _ => None,
                    })
            })
            .collect();
        let (child, column, parent) = *self.rng.pick(&fks);
        let Some(parent) = self.schema.tables.iter().position(|t| t.name == parent) else {
            return;
        };
        let table_var = self.table_var(child);
        let rows = self.new_var("fk", Type::I64, Shape::Rows(child));
        let e = self.new_var("e", Type::Wildcard, Shape::Scalar);
        let e = self.name(e);
        let lines = vec![
            format!(
                "{e}:enum<i32> = check_cast(@column_value({}, `{column}:sym), enum<i32>);",
                self.name(table_var)
            ),
            format!("{}:i64 = @values({e});", self.name(rows)),
        ];
        self.index_vars.insert(rows, parent);
        self.push(
            Stmt {
                lines,
                defs: vec![rows],
                uses: vec![table_var],
                calls: Vec::new(),
            },
            &[rows],
        );
    }

    // ----- user functions -----

    /// A call of a new or an earlier user function, with scalar and vector arguments.
    fn call(&mut self) {
        if !self.signatures.is_empty() && self.rng.chance(0.35) {
            let sig = self.rng.pick(&self.signatures).clone();
            if let Some(e) = self.call_existing(&sig) {
                self.assign_expr(e);
                return;
            }
        }
        let class = self.rows_var(|v| v.ty.is_basic()).map(|v| self.class_of(v));
        let n = 1 + self.rng.below(3);
        let mut args = Vec::new();
        for _ in 0..n {
            let vector = class.is_some() && self.rng.chance(0.6);
            let arg = if vector {
                let c = class.unwrap_or_default();
                match self.rows_var(|v| v.shape == Shape::Rows(c) && v.ty.is_basic()) {
                    Some(v) => self.var_operand(v),
                    None => continue,
                }
            } else {
                let pool = self.pool.clone();
                match self.pick_var(&pool, |v| v.shape == Shape::Scalar && v.ty.is_basic()) {
                    Some(v) if self.rng.chance(0.4) => self.var_operand(v),
                    _ => {
                        let ty = weighted(&mut self.rng, LITERAL_TYPES);
                        self.scalar_literal(&ty)
                    }
                }
            };
            args.push(arg);
        }
        if args.is_empty() {
            return;
        }
        if let Some(e) = self.new_function(args, None) {
            self.assign_expr(e);
        }
    }

    /// Defines a function of `args`' types (scalar where the argument is) whose body is a few
    /// element-wise calls, and returns the call of it on `args`. With `want`, the function
    /// returns exactly that type.
    fn new_function(&mut self, args: Vec<Operand>, want: Option<&Type>) -> Option<Expr> {
        let index = self.p.functions.len();
        let fvar = self.new_var("f", Type::Func, Shape::Scalar);
        let fname = self.name(fvar);
        let call_class = args.iter().map(|a| a.shape).find(|s| *s != Shape::Scalar);
        let max = call_class.map_or(1, |s| self.max_len(s));
        let body_class = self.new_class(max);
        let mut scope = Vec::new();
        let mut params = Vec::new();
        for a in &args {
            let shape = if a.shape == Shape::Scalar {
                Shape::Scalar
            } else {
                Shape::Rows(body_class)
            };
            let v = self.new_var("p", a.ty.clone(), shape);
            scope.push(v);
            params.push(format!("{}:{}", self.name(v), a.ty));
        }
        let mut body: Vec<Stmt> = Vec::new();
        let steps = 1 + self.rng.below(3);
        let mut last = None;
        for step in 0..steps {
            let final_step = step + 1 == steps;
            let e = match (final_step, want) {
                (true, Some(t)) => {
                    let shape = if call_class.is_some() && self.rng.chance(0.8) {
                        Shape::Rows(body_class)
                    } else {
                        Shape::Scalar
                    };
                    let first = scope.first().copied();
                    self.elementwise(&scope, Some((t, shape)), first, false)
                        .or_else(|| {
                            self.elementwise(
                                &scope,
                                Some((t, Shape::Rows(body_class))),
                                None,
                                false,
                            )
                        })
                        .or_else(|| self.elementwise(&scope, Some((t, Shape::Scalar)), None, false))
                }
                _ => self.elementwise(&scope, None, None, false),
            };
            let Some(e) = e else {
                if final_step && want.is_some() {
                    return None;
                }
                continue;
            };
            let v = self.new_var("fv", e.ty.clone(), e.shape);
            body.push(Stmt {
                lines: vec![format!("{}:{} = {};", self.name(v), e.ty, e.text)],
                defs: vec![v],
                uses: e.uses,
                calls: Vec::new(),
            });
            scope.push(v);
            last = Some(v);
        }
        // A reduction inside the function now and then (a scalar result from vectors).
        if want.is_none() && self.rng.chance(0.2) {
            if let Some(x) = last.filter(|&x| self.p.vars[x].ty.is_real()) {
                let ty = result_type(B::Sum, &[value(&self.p.vars[x].ty)])?;
                let v = self.new_var("fv", ty.clone(), Shape::Scalar);
                body.push(Stmt {
                    lines: vec![format!("{}:{ty} = @sum({});", self.name(v), self.name(x))],
                    defs: vec![v],
                    uses: vec![x],
                    calls: Vec::new(),
                });
                last = Some(v);
            }
        }
        let result = last?;
        let ret_ty = self.p.vars[result].ty.clone();
        let returns_scalar = self.p.vars[result].shape == Shape::Scalar;
        self.p.functions.push(Function {
            name: fname.clone(),
            header: format!("def {fname}({}) : {ret_ty}", params.join(", ")),
            body,
            result,
        });
        self.signatures.push(FunctionSig {
            index,
            params: args
                .iter()
                .map(|a| (a.ty.clone(), a.shape == Shape::Scalar))
                .collect(),
            returns: ret_ty.clone(),
            returns_scalar,
        });
        let shape = if returns_scalar {
            Shape::Scalar
        } else {
            call_class.unwrap_or(Shape::Scalar)
        };
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        Some(Expr {
            text: format!("@{fname}({})", texts.join(", ")),
            ty: ret_ty,
            shape,
            uses: args.iter().flat_map(|a| a.uses.clone()).collect(),
            calls: vec![index],
        })
    }

    /// A call of an earlier function on other arguments of its parameter types.
    fn call_existing(&mut self, sig: &FunctionSig) -> Option<Expr> {
        let mut class = None;
        let mut args = Vec::new();
        for (ty, scalar) in &sig.params {
            let arg = if *scalar {
                let pool = self.pool.clone();
                match self.pick_var(&pool, |v| v.shape == Shape::Scalar && v.ty == *ty) {
                    Some(v) if self.rng.chance(0.4) => self.var_operand(v),
                    _ => self.scalar_literal(ty),
                }
            } else {
                let v = self
                    .rows_var(|v| v.ty == *ty && class.is_none_or(|c| v.shape == Shape::Rows(c)))?;
                class = Some(self.class_of(v));
                self.var_operand(v)
            };
            args.push(arg);
        }
        let shape = match class {
            Some(c) if !sig.returns_scalar => Shape::Rows(c),
            _ => Shape::Scalar,
        };
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        Some(Expr {
            text: format!(
                "@{}({})",
                self.p.functions[sig.index].name,
                texts.join(", ")
            ),
            ty: sig.returns.clone(),
            shape,
            uses: args.iter().flat_map(|a| a.uses.clone()).collect(),
            calls: vec![sig.index],
        })
    }

    // ----- control flow -----

    /// A new value to carry through a branch or loop: its initial expression.
    fn carried(&mut self) -> Option<Expr> {
        let pool = self.pool.clone();
        let e = self.elementwise(&pool, None, None, false)?;
        (e.ty.is_real()).then_some(e)
    }

    /// `x = ...` keeping `x`'s type and shape: an element-wise call on `x`, sometimes
    /// through a new user function.
    fn update(
        &mut self,
        x: VarId,
        lines: &mut Vec<String>,
        uses: &mut Vec<VarId>,
        calls: &mut Vec<usize>,
    ) -> bool {
        let (ty, shape) = (self.p.vars[x].ty.clone(), self.p.vars[x].shape);
        let mut scope = self.pool.clone();
        scope.push(x);
        let Some(e) = self.elementwise(&scope, Some((&ty, shape)), Some(x), false) else {
            return false;
        };
        let e = if self.rng.chance(0.35) {
            // The same computation through a user function.
            let mut args = vec![self.var_operand(x)];
            if let Some(&other) = e.uses.iter().find(|&&u| u != x) {
                args.push(self.var_operand(other));
            } else {
                let t = self.related_type(&ty);
                args.push(self.scalar_literal(&t));
            }
            match self.new_function(args, Some(&ty)) {
                Some(call) if call.shape == shape => call,
                _ => e,
            }
        } else {
            e
        };
        lines.push(format!("  {} = {};", self.name(x), e.text));
        uses.extend(e.uses.iter().copied().filter(|&u| u != x));
        calls.extend(e.calls);
        true
    }

    fn if_(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let wrong = self.deliberate();
        let cond = if wrong {
            match self.rows_var(|v| v.ty == Type::Bool) {
                Some(v) => self.var_operand(v),
                None => return,
            }
        } else {
            let pool = self.pool.clone();
            match self.pick_var(&pool, |v| v.shape == Shape::Scalar && v.ty == Type::Bool) {
                Some(v) if self.rng.chance(0.7) => self.var_operand(v),
                _ => self.scalar_literal(&Type::Bool),
            }
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        let mut lines = vec![format!("{}:{} = {};", self.name(x), init.ty, init.text)];
        let mut uses = init.uses.clone();
        uses.extend(cond.uses.iter().copied());
        let mut calls = init.calls.clone();
        lines.push(format!("if ({}) {{", cond.text));
        if !self.update(x, &mut lines, &mut uses, &mut calls) {
            return;
        }
        if self.rng.chance(0.6) {
            lines.push("} else {".to_string());
            if !self.update(x, &mut lines, &mut uses, &mut calls) {
                return;
            }
        }
        lines.push("}".to_string());
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }

    fn while_(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        let (i, c) = (format!("{}_i", self.name(x)), format!("{}_c", self.name(x)));
        let k = self.rng.range(0, 3);
        let mut lines = vec![
            format!("{}:{} = {};", self.name(x), init.ty, init.text),
            format!("{i}:i64 = 0:i64;"),
            format!("{c}:bool = @lt({i}, {k}:i64);"),
            format!("while ({c}) {{"),
        ];
        let mut uses = init.uses.clone();
        let mut calls = init.calls.clone();
        if !self.update(x, &mut lines, &mut uses, &mut calls) {
            return;
        }
        lines.push(format!("  {i} = @plus({i}, 1:i64);"));
        lines.push(format!("  {c} = @lt({i}, {k}:i64);"));
        lines.push("}".to_string());
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }

    fn repeat(&mut self) {
        let Some(init) = self.carried() else {
            return;
        };
        let x = self.new_var("x", init.ty.clone(), init.shape);
        let k = if self.deliberate() {
            -1
        } else {
            self.rng.range(0, 3)
        };
        let mut lines = vec![
            format!("{}:{} = {};", self.name(x), init.ty, init.text),
            format!("repeat ({k}:i64) {{"),
        ];
        let mut uses = init.uses.clone();
        let mut calls = init.calls.clone();
        if !self.update(x, &mut lines, &mut uses, &mut calls) {
            return;
        }
        lines.push("}".to_string());
        self.push(
            Stmt {
                lines,
                defs: vec![x],
                uses,
                calls,
            },
            &[x],
        );
    }
}
