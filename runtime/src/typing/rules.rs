//! The type rules of every builtin: from the types of the arguments to the types of the
//! results, or an error naming the builtin and the argument that does not fit.
//!
//! The rules follow rNdN's type checker (the dialect of our TPC-H programs), with the choices
//! `LANGUAGE.md` makes where HorsePower and rNdN differ: `@sum` of integers is `i64` and of
//! floats `f64`, `@avg` is `f64`, `@div` is floating, `@group` gives `dict<i64, list<i64>>`.
//!
//! `?` (a type not known statically) never causes an error here: a rule that cannot decide
//! because an argument is `?` answers `?`, so one unknown does not cascade into many errors.

use crate::builtin::Builtin;
use crate::types::Type;

use super::compat::{compatibility, Compat};

/// The type of one argument of a call.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgType {
    /// A variable or literal.
    Value(Type),
    /// A function literal `@f`, for the higher-order builtins.
    Function(FunctionType),
}

/// A function passed as an argument: a builtin (typed by its rule) or a user function (typed by
/// its declaration).
#[derive(Clone, Debug, PartialEq)]
pub enum FunctionType {
    Builtin(Builtin),
    User {
        /// `module.name`, for messages.
        name: String,
        params: Vec<Type>,
        returns: Vec<Type>,
    },
}

impl FunctionType {
    /// `@plus`, `@m.f`
    pub fn display_name(&self) -> String {
        match self {
            FunctionType::Builtin(b) => format!("@{b}"),
            FunctionType::User { name, .. } => format!("@{name}"),
        }
    }
}

/// Why a call does not type-check. `arg` is the index of the argument at fault, when one is.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleError {
    pub arg: Option<usize>,
    pub message: String,
}

/// How many arguments a builtin takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    AtLeast(usize),
}

/// The number of arguments `builtin` takes.
pub fn arity(builtin: Builtin) -> Arity {
    use Builtin as B;
    match builtin {
        B::List => Arity::AtLeast(0),
        B::JoinIndex => Arity::AtLeast(3),
        B::MultiwayJoin | B::MultiwayCount | B::GroupAggregate => Arity::AtLeast(2),
        B::JoinUnique => Arity::AtLeast(4),
        B::EachItem
        | B::EachLeft
        | B::EachRight
        | B::IndexA
        | B::DatetimeAdd
        | B::DatetimeSub
        | B::Csr
        | B::ShortestPathLength
        | B::Reachable => Arity::Exactly(3),
        B::ReachIndex => Arity::Exactly(2),
        b if b.is_binary_elementwise() => Arity::Exactly(2),
        B::Append
        | B::Like
        | B::Compress
        | B::Randk
        | B::IndexOf
        | B::Take
        | B::Drop
        | B::Order
        | B::Member
        | B::Vector
        | B::Each
        | B::Match
        | B::Enum
        | B::Dict
        | B::Table
        | B::KTable
        | B::ColumnValue
        | B::Index
        | B::SubString
        | B::DatetimeDiff
        | B::TupleDiff
        | B::TupleMerge
        | B::SortedJoin => Arity::Exactly(2),
        _ => Arity::Exactly(1),
    }
}

/// The result types of calling `function` with arguments of types `args`.
pub fn apply(function: &FunctionType, args: &[ArgType]) -> Result<Vec<Type>, RuleError> {
    match function {
        FunctionType::Builtin(builtin) => builtin_result(*builtin, args),
        FunctionType::User {
            name,
            params,
            returns,
        } => {
            if params.len() != args.len() {
                return Err(RuleError {
                    arg: None,
                    message: format!(
                        "`@{name}` takes {} argument{}, found {}",
                        params.len(),
                        plural(params.len()),
                        args.len()
                    ),
                });
            }
            for (index, (param, arg)) in params.iter().zip(args).enumerate() {
                let fits = match arg {
                    ArgType::Value(ty) => compatibility(param, ty) != Compat::Incompatible,
                    ArgType::Function(_) => *param == Type::Func || *param == Type::Wildcard,
                };
                if !fits {
                    return Err(RuleError {
                        arg: Some(index),
                        message: format!(
                            "`@{name}` expects {param} as argument {}, found {}",
                            index + 1,
                            describe(arg)
                        ),
                    });
                }
            }
            Ok(returns.clone())
        }
    }
}

/// The result types of the builtin `builtin` applied to arguments of types `args`.
pub fn builtin_result(builtin: Builtin, args: &[ArgType]) -> Result<Vec<Type>, RuleError> {
    let count_ok = match arity(builtin) {
        Arity::Exactly(n) => args.len() == n,
        Arity::AtLeast(n) => args.len() >= n,
    };
    if !count_ok {
        let expected = match arity(builtin) {
            Arity::Exactly(n) => format!("{n} argument{}", plural(n)),
            Arity::AtLeast(n) => format!("at least {n} arguments"),
        };
        return Err(RuleError {
            arg: None,
            message: format!("`@{builtin}` takes {expected}, found {}", args.len()),
        });
    }
    let call = Call { builtin, args };
    match call.result() {
        Ok(types) => Ok(types),
        // An argument of unknown type: whatever went wrong is decided at run time.
        Err(_) if args.contains(&ArgType::Value(Type::Wildcard)) => Ok(vec![Type::Wildcard]),
        Err(error) => Err(error),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn describe(arg: &ArgType) -> String {
    match arg {
        ArgType::Value(ty) => ty.to_string(),
        ArgType::Function(f) => format!("the function {}", f.display_name()),
    }
}

/// A relation argument: `list<i64>`, or a type not known statically.
fn relation(t: &Type) -> bool {
    *t == list(Type::I64) || *t == list(Type::Wildcard) || *t == Type::Wildcard
}

fn list(cell: Type) -> Type {
    Type::List(Box::new(cell))
}

/// The type of a reachability index from `@reach_index`: `dict<sym, list<i64>>`.
pub fn reach_index_type() -> Type {
    Type::Dict(Box::new(Type::Sym), Box::new(list(Type::I64)))
}

/// The wider of two real types; two bools widen to `i16` (HorsePower promotes bool before
/// arithmetic).
fn arithmetic(a: &Type, b: &Type) -> Option<Type> {
    if *a == Type::Bool && *b == Type::Bool {
        return Some(Type::I16);
    }
    Type::promote(a, b)
}

/// The float type of a floating function of a real: `f64` for the 64-bit types, else `f32`.
fn floating(t: &Type) -> Type {
    match t {
        Type::I64 | Type::F64 => Type::F64,
        _ => Type::F32,
    }
}

/// `<`, `>`, `min`, `order` apply: reals, and every basic type but complex against itself.
fn orderable(t: &Type) -> bool {
    t.is_basic() && *t != Type::Complex
}

fn orderable_pair(a: &Type, b: &Type) -> bool {
    (a.is_real() && b.is_real()) || (a == b && orderable(a))
}

/// Vectors whose elements can be hashed and compared for equality as keys: every basic type
/// but complex (complex numbers support `@abs @neg @conj @pi` and nothing else: neither
/// backend keys, compares or multiplies them).
fn keyable(t: &Type) -> bool {
    t.is_basic() && *t != Type::Complex
}

/// `=`, `@member`, `@index_of` apply: reals, equal keyable types, and text against text
/// (`sym` and `str` hold the same strings: TPC-H q22 tests `@sub_string` of a sym column for
/// membership in a `str` vector).
fn comparable_pair(a: &Type, b: &Type) -> bool {
    let text = |t: &Type| matches!(t, Type::Str | Type::Sym);
    (a.is_real() && b.is_real()) || (a == b && keyable(a)) || (text(a) && text(b))
}

/// The cells of a list argument; a vector counts as a list of its elements.
fn cell_of(t: &Type) -> Option<Type> {
    match t {
        Type::List(cell) => Some((**cell).clone()),
        Type::Wildcard => Some(Type::Wildcard),
        t if t.is_basic() => Some(t.clone()),
        _ => None,
    }
}

/// Every cell of a list is a vector (or unknown).
fn cells_are_vectors(t: &Type) -> bool {
    match t {
        Type::List(cell) => cell.is_basic() || **cell == Type::Wildcard,
        _ => false,
    }
}

/// The common type of several cells: their type when all agree, `?` otherwise.
fn common(types: &[Type]) -> Type {
    match types.split_first() {
        Some((first, rest)) if rest.iter().all(|t| t == first) => first.clone(),
        _ => Type::Wildcard,
    }
}

struct Call<'a> {
    builtin: Builtin,
    args: &'a [ArgType],
}

impl Call<'_> {
    fn error(&self, arg: usize, expected: &str) -> RuleError {
        let found = self
            .args
            .get(arg)
            .map_or_else(|| "nothing".to_string(), describe);
        RuleError {
            arg: Some(arg),
            message: format!(
                "`@{}` expects {expected} as argument {}, found {found}",
                self.builtin,
                arg + 1
            ),
        }
    }

    /// An error about the arguments together (`@plus` of `date` and `sym`).
    fn mismatch(&self, indexes: &[usize]) -> RuleError {
        let types: Vec<String> = indexes
            .iter()
            .filter_map(|&i| self.args.get(i).map(describe))
            .collect();
        RuleError {
            arg: None,
            message: format!(
                "`@{}` cannot be applied to {}",
                self.builtin,
                types.join(" and ")
            ),
        }
    }

    fn value(&self, arg: usize) -> Result<&Type, RuleError> {
        match self.args.get(arg) {
            Some(ArgType::Value(ty)) => Ok(ty),
            _ => Err(self.error(arg, "a value")),
        }
    }

    fn function(&self, arg: usize) -> Result<&FunctionType, RuleError> {
        match self.args.get(arg) {
            Some(ArgType::Function(f)) => Ok(f),
            _ => Err(self.error(arg, "a function literal")),
        }
    }

    /// The value of argument `arg`, required to satisfy `ok`.
    fn value_where(
        &self,
        arg: usize,
        expected: &str,
        ok: impl Fn(&Type) -> bool,
    ) -> Result<&Type, RuleError> {
        let ty = self.value(arg)?;
        if ok(ty) {
            Ok(ty)
        } else {
            Err(self.error(arg, expected))
        }
    }

    /// `f` applied to `cells`, which must give exactly one value.
    fn apply_one(&self, arg: usize, cells: Vec<Type>) -> Result<Type, RuleError> {
        let f = self.function(arg)?;
        let described: Vec<String> = cells.iter().map(Type::to_string).collect();
        let args: Vec<ArgType> = cells.into_iter().map(ArgType::Value).collect();
        match apply(f, &args) {
            Ok(types) if types.len() == 1 => Ok(types.into_iter().next().unwrap_or(Type::Wildcard)),
            Ok(types) => Err(RuleError {
                arg: Some(arg),
                message: format!(
                    "`@{}` needs a function of one result, but {} gives {}",
                    self.builtin,
                    f.display_name(),
                    types.len()
                ),
            }),
            Err(inner) => Err(RuleError {
                arg: Some(arg),
                message: format!(
                    "`@{}` applies {} to ({}): {}",
                    self.builtin,
                    f.display_name(),
                    described.join(", "),
                    inner.message
                ),
            }),
        }
    }

    fn result(&self) -> Result<Vec<Type>, RuleError> {
        self.single().map(|t| vec![t])
    }

    fn single(&self) -> Result<Type, RuleError> {
        use Builtin as B;
        let real = |t: &Type| t.is_real();
        let integer = |t: &Type| t.is_integer();
        let boolean = |t: &Type| *t == Type::Bool;
        let basic = |t: &Type| t.is_basic();
        // Graph vertices: integer indexes, or an enum (its row indexes into the vertex table).
        let vertex_ids = |t: &Type| t.is_integer() || matches!(t, Type::Enum(_));
        match self.builtin {
            // Unary element-wise.
            B::Abs | B::Ceil | B::Floor | B::Round => {
                Ok(self.value_where(0, "a real vector", real)?.clone())
            }
            B::Neg => {
                let t = self.value_where(0, "a real vector", real)?;
                Ok(if *t == Type::Bool {
                    Type::I16
                } else {
                    t.clone()
                })
            }
            B::Conj => Ok(self
                .value_where(0, "a complex vector", |t| *t == Type::Complex)?
                .clone()),
            B::Signum => {
                self.value_where(0, "a real vector", real)?;
                Ok(Type::I16)
            }
            B::Pi => {
                let t = self.value_where(0, "a numeric vector", |t| {
                    t.is_real() || *t == Type::Complex
                })?;
                Ok(if *t == Type::Complex {
                    Type::Complex
                } else {
                    floating(t)
                })
            }
            B::Not => Ok(self.value_where(0, "a bool vector", boolean)?.clone()),
            B::Recip
            | B::Log
            | B::Exp
            | B::Log2
            | B::Log10
            | B::Sqrt
            | B::Cos
            | B::Sin
            | B::Tan
            | B::Acos
            | B::Asin
            | B::Atan
            | B::Cosh
            | B::Sinh
            | B::Tanh
            | B::Acosh
            | B::Asinh
            | B::Atanh => Ok(floating(self.value_where(0, "a real vector", real)?)),

            // Dates and times (HorsePower `date.md`: the parts are i16).
            B::Date => {
                self.value_where(0, "a dt vector", |t| *t == Type::Dt)?;
                Ok(Type::Date)
            }
            B::DateYear | B::DateMonth => {
                self.value_where(0, "a date, month or dt vector", |t| {
                    matches!(t, Type::Date | Type::Month | Type::Dt)
                })?;
                Ok(Type::I16)
            }
            B::DateDay => {
                self.value_where(0, "a date or dt vector", |t| {
                    matches!(t, Type::Date | Type::Dt)
                })?;
                Ok(Type::I16)
            }
            B::Time => {
                self.value_where(0, "a dt vector", |t| *t == Type::Dt)?;
                Ok(Type::Time)
            }
            B::TimeHour | B::TimeMinute => {
                self.value_where(0, "a minute, second, time or dt vector", |t| {
                    matches!(t, Type::Minute | Type::Second | Type::Time | Type::Dt)
                })?;
                Ok(Type::I16)
            }
            B::TimeSecond => {
                self.value_where(0, "a second, time or dt vector", |t| {
                    matches!(t, Type::Second | Type::Time | Type::Dt)
                })?;
                Ok(Type::I16)
            }
            B::TimeMill => {
                self.value_where(0, "a time or dt vector", |t| {
                    matches!(t, Type::Time | Type::Dt)
                })?;
                Ok(Type::I16)
            }
            B::DatetimeAdd | B::DatetimeSub => {
                let t = self.value_where(0, "a date or time vector", Type::is_temporal)?;
                self.value_where(1, "an integer vector", integer)?;
                self.value_where(2, "a sym (the unit)", |t| *t == Type::Sym)?;
                Ok(t.clone())
            }
            B::DatetimeDiff => {
                let a = self.value_where(0, "a date or time vector", Type::is_temporal)?;
                let b = self.value(1)?;
                if a != b {
                    return Err(self.error(1, &format!("{a} (like argument 1)")));
                }
                Ok(if *a == Type::Dt { Type::I64 } else { Type::I32 })
            }

            // Binary element-wise.
            B::Lt | B::Gt | B::Leq | B::Geq => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if !orderable_pair(a, b) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::Bool)
            }
            B::Eq | B::Neq => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if !comparable_pair(a, b) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::Bool)
            }
            B::Plus => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if let Some(t) = arithmetic(a, b) {
                    Ok(t)
                } else if a.is_integer() && b.is_temporal() {
                    Ok(b.clone())
                } else if a.is_temporal() && b.is_integer() {
                    Ok(a.clone())
                } else {
                    Err(self.mismatch(&[0, 1]))
                }
            }
            B::Minus => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if let Some(t) = arithmetic(a, b) {
                    Ok(t)
                } else if a.is_temporal() && b.is_integer() {
                    Ok(a.clone())
                } else if a.is_temporal() && a == b {
                    Ok(if *a == Type::Dt { Type::I64 } else { Type::I32 })
                } else {
                    Err(self.mismatch(&[0, 1]))
                }
            }
            B::Mul => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                arithmetic(a, b).ok_or_else(|| self.mismatch(&[0, 1]))
            }
            B::Div => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                // Always floating: f32 only when the wider operand is f32.
                match Type::promote(a, b) {
                    Some(Type::F32) => Ok(Type::F32),
                    Some(_) => Ok(Type::F64),
                    None => Err(self.mismatch(&[0, 1])),
                }
            }
            B::Power | B::Logb => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                Type::promote(a, b)
                    .map(|t| floating(&t))
                    .ok_or_else(|| self.mismatch(&[0, 1]))
            }
            B::Mod => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                arithmetic(a, b).ok_or_else(|| self.mismatch(&[0, 1]))
            }
            B::And | B::Or | B::Nand | B::Nor | B::Xor => {
                self.value_where(0, "a bool vector", boolean)?;
                self.value_where(1, "a bool vector", boolean)?;
                Ok(Type::Bool)
            }

            // Algebraic, unary.
            B::Unique => {
                self.value_where(0, "a vector of keys (not complex)", keyable)?;
                Ok(Type::I64)
            }
            B::Str => {
                self.value(0)?;
                Ok(Type::Str)
            }
            B::Len | B::Count => {
                self.value(0)?;
                Ok(Type::I64)
            }
            B::Range | B::Fact | B::Rand | B::Seed => {
                self.value_where(0, "an integer vector", integer)?;
                Ok(Type::I64)
            }
            B::Flip => Ok(self
                .value_where(0, "a list", |t| matches!(t, Type::List(_)))?
                .clone()),
            B::Reverse => Ok(self
                .value_where(0, "a vector or list", |t| {
                    t.is_basic() || matches!(t, Type::List(_))
                })?
                .clone()),
            B::Where => {
                self.value_where(0, "a bool vector", boolean)?;
                Ok(Type::I64)
            }
            B::Group => {
                self.value_where(0, "a vector or a list of vectors (not complex)", |t| {
                    keyable(t) || cells_are_vectors(t)
                })?;
                Ok(Type::Dict(Box::new(Type::I64), Box::new(list(Type::I64))))
            }
            // `@group_aggregate(k, ops, x1, …, xn)`: `k` as for `@group`; `ops` a sym vector
            // naming one reduction per result (`sum`, `avg`, `len`); each `sum`/`avg` takes
            // the next numeric column (`len` takes none). The result is a list: the groups'
            // first rows (i64, as `@keys(@group(k))`), then one vector per op (run-time checks
            // in `crate::args::group`).
            B::GroupAggregate => {
                self.value_where(0, "a vector or a list of vectors (not complex)", |t| {
                    keyable(t) || cells_are_vectors(t)
                })?;
                self.value_where(1, "the reductions (sym)", |t| {
                    matches!(t, Type::Sym | Type::Wildcard)
                })?;
                for arg in 2..self.args.len() {
                    self.value_where(arg, "a numeric vector", |t| {
                        t.is_real() || *t == Type::Wildcard
                    })?;
                }
                Ok(list(Type::Wildcard))
            }

            // Algebraic, binary.
            B::Append => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if let Some(t) = Type::promote(a, b) {
                    Ok(t)
                } else if a == b && a.is_basic() {
                    Ok(a.clone())
                } else if let Type::Enum(key) = a {
                    if compatibility(key, b) == Compat::Exact {
                        Ok(a.clone())
                    } else {
                        Err(self.error(1, &format!("{key} (the enumeration's key type)")))
                    }
                } else if matches!(a, Type::List(_)) || matches!(b, Type::List(_)) {
                    match (cell_of(a), cell_of(b)) {
                        (Some(x), Some(y)) => Ok(list(common(&[x, y]))),
                        _ => Err(self.mismatch(&[0, 1])),
                    }
                } else {
                    Err(self.mismatch(&[0, 1]))
                }
            }
            B::Like => {
                // Each element is one string: `str` or `sym` (a `char` vector is characters).
                let text = |t: &Type| matches!(t, Type::Str | Type::Sym);
                self.value_where(0, "a str or sym vector", text)?;
                self.value_where(1, "a str or sym pattern", text)?;
                Ok(Type::Bool)
            }
            B::Compress => {
                self.value_where(0, "a bool mask", boolean)?;
                Ok(self
                    .value_where(1, "a vector", |t| {
                        t.is_basic() || matches!(t, Type::Enum(_))
                    })?
                    .clone())
            }
            B::Randk => {
                self.value_where(0, "an integer vector", integer)?;
                self.value_where(1, "an integer vector", integer)?;
                Ok(Type::I64)
            }
            B::IndexOf => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if !comparable_pair(a, b) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::I64)
            }
            B::Take | B::Drop => {
                self.value_where(0, "an integer count", integer)?;
                Ok(self
                    .value_where(1, "a vector or list", |t| {
                        t.is_basic() || matches!(t, Type::List(_))
                    })?
                    .clone())
            }
            B::Order => {
                self.value_where(0, "a vector or a list of vectors", |t| {
                    orderable(t) || cells_are_vectors(t)
                })?;
                self.value_where(1, "a bool vector (1 ascending, 0 descending)", boolean)?;
                Ok(Type::I64)
            }
            B::Member => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if !comparable_pair(a, b) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::Bool)
            }
            B::Vector => {
                self.value_where(0, "an integer length", integer)?;
                Ok(self.value_where(1, "a vector", basic)?.clone())
            }
            B::Match => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if !(a == b || (a.is_real() && b.is_real())) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::Bool)
            }

            // Reductions.
            B::Sum => {
                let t = self.value_where(0, "a real vector", real)?;
                Ok(if t.is_float() { Type::F64 } else { Type::I64 })
            }
            B::Avg => {
                self.value_where(0, "a real vector", real)?;
                Ok(Type::F64)
            }
            B::Min | B::Max => Ok(self.value_where(0, "a vector", orderable)?.clone()),

            // Lists.
            B::Raze => {
                let t = self.value_where(0, "a list", |t| cell_of(t).is_some())?;
                let cell = cell_of(t).unwrap_or(Type::Wildcard);
                if cell.is_basic() || cell == Type::Wildcard {
                    Ok(cell)
                } else {
                    Err(self.error(0, "a list of vectors"))
                }
            }
            B::List => {
                let mut cells = Vec::with_capacity(self.args.len());
                for index in 0..self.args.len() {
                    cells.push(self.value(index)?.clone());
                }
                Ok(list(common(&cells)))
            }
            B::Enlist => Ok(list(self.value(0)?.clone())),
            B::ToList => Ok(list(self.value_where(0, "a vector", basic)?.clone())),
            B::Each => {
                let cell = self.list_cell(1)?;
                Ok(list(self.apply_one(0, vec![cell])?))
            }
            B::EachLeft => {
                let cell = self.list_cell(1)?;
                let right = self.value(2)?.clone();
                Ok(list(self.apply_one(0, vec![cell, right])?))
            }
            B::EachRight => {
                let left = self.value(1)?.clone();
                let cell = self.list_cell(2)?;
                Ok(list(self.apply_one(0, vec![left, cell])?))
            }
            B::EachItem => {
                let (a, b) = (self.list_cell(1)?, self.list_cell(2)?);
                Ok(list(self.apply_one(0, vec![a, b])?))
            }

            // Database.
            B::Enum => {
                let (a, b) = (self.value(0)?, self.value(1)?);
                if a != b || !(a.is_basic() || cells_are_vectors(a)) {
                    return Err(self.mismatch(&[0, 1]));
                }
                Ok(Type::Enum(Box::new(a.clone())))
            }
            B::Dict => {
                let (k, v) = (self.value(0)?, self.value(1)?);
                Ok(Type::Dict(Box::new(k.clone()), Box::new(v.clone())))
            }
            B::Table => {
                self.value_where(0, "a sym vector of column names", |t| *t == Type::Sym)?;
                self.value_where(1, "a list of columns", cells_are_vectors)?;
                Ok(Type::Table)
            }
            B::KTable => {
                self.value_where(0, "a table", |t| *t == Type::Table)?;
                self.value_where(1, "a table", |t| *t == Type::Table)?;
                Ok(Type::KTable)
            }
            B::Keys => match self.value(0)? {
                Type::Dict(key, _) => Ok((**key).clone()),
                Type::Enum(key) => Ok((**key).clone()),
                Type::Table => Ok(Type::Sym),
                Type::KTable => Ok(Type::Table),
                _ => Err(self.error(0, "a dict, enum, table or keyed table")),
            },
            B::Values => match self.value(0)? {
                Type::Dict(_, value) => Ok((**value).clone()),
                Type::Enum(_) => Ok(Type::I64),
                Type::Table => Ok(list(Type::Wildcard)),
                Type::KTable => Ok(Type::Table),
                _ => Err(self.error(0, "a dict, enum, table or keyed table")),
            },
            B::Meta => {
                self.value_where(0, "a table or keyed table", |t| {
                    matches!(t, Type::Table | Type::KTable)
                })?;
                Ok(Type::Table)
            }
            B::ColumnValue => {
                self.value_where(0, "a table", |t| matches!(t, Type::Table | Type::KTable))?;
                self.value_where(1, "a sym column name", |t| *t == Type::Sym)?;
                // Known only at run time: `check_cast` gives it a type.
                Ok(Type::Wildcard)
            }
            B::LoadTable => {
                self.value_where(0, "a sym table name", |t| *t == Type::Sym)?;
                Ok(Type::Table)
            }
            B::Fetch => match self.value(0)? {
                Type::Enum(key) => Ok((**key).clone()),
                _ => Err(self.error(0, "an enum")),
            },
            B::JoinIndex => {
                self.join_arguments()?;
                Ok(list(Type::I64))
            }

            // Indexing.
            B::Index => {
                self.value_where(1, "an integer index vector", integer)?;
                match self.value(0)? {
                    Type::List(cell) => Ok((**cell).clone()),
                    t if t.is_basic() || matches!(t, Type::Enum(_)) => Ok(t.clone()),
                    _ => Err(self.error(0, "a vector or list")),
                }
            }
            B::IndexA => {
                let target = self.value_where(0, "a vector", basic)?;
                self.value_where(1, "an integer index vector", integer)?;
                let values = self.value(2)?;
                if compatibility(target, values) == Compat::Incompatible
                    || !(values.is_basic() || *values == Type::Wildcard)
                {
                    return Err(self.error(2, &format!("values of type {target}")));
                }
                Ok(target.clone())
            }

            // Strings.
            B::SubString => {
                let t = self.value_where(0, "a str or sym vector", |t| {
                    matches!(t, Type::Str | Type::Sym)
                })?;
                self.value_where(1, "integer (position, length)", integer)?;
                Ok(t.clone())
            }

            // Other.
            B::LoadCsv => {
                self.value_where(0, "a file name (sym or str)", |t| {
                    matches!(t, Type::Sym | Type::Str)
                })?;
                Ok(Type::Table)
            }
            B::Print => {
                self.value(0)?;
                Ok(Type::I64)
            }
            B::Format => {
                self.value(0)?;
                Ok(Type::Str)
            }

            // Graphs: vertices are integer indexes or enums into a vertex table (their rows).
            B::Csr => {
                self.value_where(0, "integer vertex indexes or an enum", vertex_ids)?;
                self.value_where(1, "integer vertex indexes or an enum", vertex_ids)?;
                self.value_where(2, "an integer vertex count", integer)?;
                Ok(list(Type::I64))
            }
            // `@reach_index(g, d)`: a GRAIL index of graph `g` with `d` labels (1 to 8, 0 for
            // 3; checked when it runs). An index is a `dict<sym, list<i64>>` (components,
            // condensed DAG, labels; runtime `graph::grail`), which `@reachable` accepts in
            // place of the graph.
            B::ReachIndex => {
                self.value_where(0, "a graph (list<i64> from @csr)", |t| {
                    *t == list(Type::I64)
                })?;
                self.value_where(1, "an integer label count", integer)?;
                Ok(reach_index_type())
            }
            B::Reachable => {
                self.value_where(
                    0,
                    "a graph (list<i64> from @csr) or an index (from @reach_index)",
                    |t| *t == list(Type::I64) || *t == reach_index_type(),
                )?;
                self.value_where(1, "integer vertex indexes or an enum", vertex_ids)?;
                self.value_where(2, "integer vertex indexes or an enum", vertex_ids)?;
                Ok(Type::Bool)
            }
            B::ShortestPathLength => {
                self.value_where(0, "a graph (list<i64> from @csr)", |t| {
                    *t == list(Type::I64)
                })?;
                self.value_where(1, "integer vertex indexes or an enum", vertex_ids)?;
                self.value_where(2, "integer vertex indexes or an enum", vertex_ids)?;
                Ok(Type::I64)
            }

            // Relations: a list of i64 columns (tuples sorted where the builtin needs it,
            // checked at run time). `@sorted_join` gives `(probe rows, build rows)`.
            B::TupleUnique | B::TupleDiff | B::TupleMerge | B::SortedJoin => {
                let arguments = if self.builtin == B::TupleUnique { 1 } else { 2 };
                for arg in 0..arguments {
                    self.value_where(arg, "a relation (list<i64> of columns)", relation)?;
                }
                Ok(list(Type::I64))
            }
            // `@join_unique(probe, build, keys, picks[, full])`: two relations, the number
            // of key columns and the picked columns (i64), and optionally the relation whose
            // tuples are left out; the result is a relation of one column per pick.
            B::JoinUnique => {
                if self.args.len() > 5 {
                    return Err(RuleError {
                        arg: None,
                        message: format!("takes 4 or 5 arguments, got {}", self.args.len()),
                    });
                }
                for arg in [0, 1]
                    .into_iter()
                    .chain((self.args.len() == 5).then_some(4))
                {
                    self.value_where(arg, "a relation (list<i64> of columns)", relation)?;
                }
                for arg in [2, 3] {
                    self.value_where(arg, "i64 column numbers", |t| {
                        matches!(t, Type::I64 | Type::Wildcard)
                    })?;
                }
                Ok(list(Type::I64))
            }
            // `@multiway_join(spec, r1, …, rk)`: a str or sym spec (parsed when it runs, see
            // `crate::multiway`), then the relations; the result is a relation of one column
            // per variable.
            // `@multiway_count(spec, r1, …, rk)`: the number of rows of that join (one i64),
            // counted without building them.
            B::MultiwayJoin | B::MultiwayCount => {
                self.value_where(0, "a join spec (str or sym)", |t| {
                    matches!(t, Type::Str | Type::Sym | Type::Wildcard)
                })?;
                for arg in 1..self.args.len() {
                    self.value_where(arg, "a relation (list<i64> of columns)", relation)?;
                }
                Ok(if self.builtin == B::MultiwayCount {
                    Type::I64
                } else {
                    list(Type::I64)
                })
            }
        }
    }

    /// The cell type of list argument `arg` (a vector counts as a list of its elements).
    fn list_cell(&self, arg: usize) -> Result<Type, RuleError> {
        let t = self.value(arg)?;
        cell_of(t).ok_or_else(|| self.error(arg, "a list"))
    }

    /// `@join_index(f, a, b)` with vectors, or `@join_index(f1, …, fn, la, lb)` with lists of
    /// columns: one predicate for every column, or one for all; each predicate gives bool.
    fn join_arguments(&self) -> Result<(), RuleError> {
        let functions = self.args.len() - 2;
        for index in 0..functions {
            self.function(index)?;
        }
        let (a, b) = (self.value(functions)?, self.value(functions + 1)?);
        let columns = |t: &Type| -> Option<Type> {
            match t {
                Type::List(cell) => Some((**cell).clone()),
                t if t.is_basic() || *t == Type::Wildcard => None,
                _ => None,
            }
        };
        let pairs: Vec<(Type, Type)> = match (columns(a), columns(b)) {
            (Some(x), Some(y)) => vec![(x, y)],
            (None, None) if a.is_basic() || *a == Type::Wildcard => {
                if !(b.is_basic() || *b == Type::Wildcard) {
                    return Err(self.error(functions + 1, "a vector, like the left side"));
                }
                if functions != 1 {
                    return Err(RuleError {
                        arg: None,
                        message: format!(
                            "`@join_index` of two vectors takes one predicate, found {functions}"
                        ),
                    });
                }
                vec![(a.clone(), b.clone())]
            }
            (Some(_), None) => {
                return Err(self.error(functions + 1, "a list of columns, like the left side"))
            }
            _ => return Err(self.error(functions, "a vector or a list of columns")),
        };
        for index in 0..functions {
            for (x, y) in &pairs {
                let result = self.apply_one(index, vec![x.clone(), y.clone()])?;
                if !(result == Type::Bool || result == Type::Wildcard) {
                    return Err(self.error(index, "a predicate giving bool"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
