//! The CPU implementation of every builtin: the interpreter's executor for CPU steps, the
//! whole of `--backend cpu`, and the oracle GPU results are tested against.
//!
//! [`call_builtin`] dispatches to one file per family of builtins. Every builtin of
//! [`Builtin::ALL`] either computes its result or returns a [`RuntimeError`] that names it and
//! says why the arguments are not supported (`@plus: length mismatch (3 vs 5)`); no input
//! makes it panic.

use std::sync::Arc;

use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::plan::Callee;
use crate::value::{Table, Value};

pub use crate::args::ArgValue;
pub(crate) use crate::args::{as_vector, Args};

mod arith;
mod compare;
mod db;
mod elementwise;
pub(crate) mod graph;
mod group;
mod io;
pub(crate) mod join;
pub(crate) mod keys;
mod list;
mod logic;
mod math;
pub mod multiway;
mod order;
mod reduce;
pub(crate) mod relation;
mod select;
mod strings;
mod temporal;

#[cfg(test)]
mod test_support;

/// What a builtin may need from the program running it.
pub trait Env {
    /// The table called `name` (`@load_table`).
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>>;
    /// Calls a function literal (a builtin or a user function) on `args`; returns its values.
    fn invoke(&mut self, f: Callee, args: &[Value]) -> Result<Vec<Value>>;
    /// Writes a value for `@print`.
    fn print(&mut self, value: &Value) -> Result<()>;
}

/// Calls builtin `b` on `args`. Errors start with `@name: `.
///
/// The result has exactly the type the shared rules ([`crate::typing`]) give the arguments,
/// the type `horsec compile --emit typed` shows and the GPU backend lays out.
pub fn call_builtin(b: Builtin, args: &[ArgValue<'_>], env: &mut dyn Env) -> Result<Value> {
    let value = dispatch(b, Args { list: args }, env).map_err(|e| name_error(b, e))?;
    conform_to_rules(b, args, value).map_err(|e| name_error(b, e))
}

/// Gives a vector result the type the rules give vector arguments of these types.
///
/// The implementations compute in the widest convenient type (date parts and differences as
/// i64, floating functions as f64); the rules decide the type the program sees (`i16` for a
/// year, `i32` for a difference of dates, `f32` for `@sqrt` of an `i32`, as HorsePower and
/// rNdN type them). Only real types convert; any other disagreement is a bug in this crate,
/// reported as an error rather than a value of the wrong type.
fn conform_to_rules(b: Builtin, args: &[ArgValue<'_>], value: Value) -> Result<Value> {
    let Value::Vector(vector) = &value else {
        return Ok(value);
    };
    let mut types = Vec::with_capacity(args.len());
    for arg in args {
        match arg {
            ArgValue::Value(Value::Vector(v)) => types.push(v.ty()),
            // Lists, enums and function literals: the implementation's type stands.
            _ => return Ok(value),
        }
    }
    let Some(expected) = crate::typing::vector_result(b, &types) else {
        return Ok(value);
    };
    let actual = vector.ty();
    if actual == expected {
        return Ok(value);
    }
    if actual.is_real() && expected.is_real() {
        return vector.cast_real(&expected).map(Value::Vector);
    }
    bail!("internal error: the result is {actual}, the type rules say {expected}")
}

/// Puts `@name: ` in front of an error that does not already name a builtin (an error from
/// a nested call, e.g. `@sum` inside `@each`, keeps the inner name).
fn name_error(b: Builtin, mut e: RuntimeError) -> RuntimeError {
    if !e.message.starts_with('@') {
        e.message = format!("@{}: {}", b.name(), e.message);
    }
    e
}

fn dispatch(b: Builtin, args: Args<'_, '_>, env: &mut dyn Env) -> Result<Value> {
    use Builtin as B;
    match b {
        B::Abs | B::Neg | B::Ceil | B::Floor | B::Round | B::Conj | B::Recip | B::Signum
        | B::Pi | B::Log | B::Exp | B::Log2 | B::Log10 | B::Sqrt | B::Cos | B::Sin | B::Tan
        | B::Acos | B::Asin | B::Atan | B::Cosh | B::Sinh | B::Tanh | B::Acosh | B::Asinh
        | B::Atanh | B::Fact => {
            args.exactly(1)?;
            math::unary(b, &*args.vector(0)?).map(Value::Vector)
        }
        B::Not => {
            args.exactly(1)?;
            logic::not(&*args.vector(0)?).map(Value::Vector)
        }
        B::Date | B::DateYear | B::DateMonth | B::DateDay | B::Time | B::TimeHour
        | B::TimeMinute | B::TimeSecond | B::TimeMill => {
            args.exactly(1)?;
            temporal::extract(b, &*args.vector(0)?).map(Value::Vector)
        }
        B::DatetimeAdd | B::DatetimeSub => {
            args.exactly(3)?;
            let unit = args.vector(2)?;
            temporal::shift(b, &*args.vector(0)?, &*args.vector(1)?, &unit).map(Value::Vector)
        }
        B::DatetimeDiff => {
            args.exactly(2)?;
            temporal::diff(&*args.vector(0)?, &*args.vector(1)?).map(Value::Vector)
        }
        B::Lt | B::Gt | B::Leq | B::Geq | B::Eq | B::Neq => {
            args.exactly(2)?;
            compare::compare(b, &*args.vector(0)?, &*args.vector(1)?).map(Value::Vector)
        }
        B::Plus | B::Minus | B::Mul | B::Div | B::Power | B::Logb | B::Mod => {
            args.exactly(2)?;
            arith::binary(b, &*args.vector(0)?, &*args.vector(1)?).map(Value::Vector)
        }
        B::And | B::Or | B::Nand | B::Nor | B::Xor => {
            args.exactly(2)?;
            logic::binary(b, &*args.vector(0)?, &*args.vector(1)?).map(Value::Vector)
        }
        B::Count | B::Sum | B::Avg | B::Min | B::Max => {
            args.exactly(1)?;
            reduce::reduce(b, args.value(0)?).map(Value::Vector)
        }
        B::Unique => {
            args.exactly(1)?;
            select::unique(args.value(0)?)
        }
        B::Len => {
            args.exactly(1)?;
            let value = args.value(0)?;
            Ok(Value::from_i64s(vec![value.len() as i64]))
        }
        B::Range => {
            args.exactly(1)?;
            select::range(&*args.vector(0)?)
        }
        B::Reverse => {
            args.exactly(1)?;
            select::reverse(args.value(0)?)
        }
        B::Where => {
            args.exactly(1)?;
            select::where_true(&*args.vector(0)?)
        }
        B::Compress => {
            args.exactly(2)?;
            select::compress(&*args.vector(0)?, args.value(1)?)
        }
        B::Index => {
            args.exactly(2)?;
            select::index(args.value(0)?, &*args.vector(1)?)
        }
        B::IndexA => {
            args.exactly(3)?;
            select::index_assign(&*args.vector(0)?, &*args.vector(1)?, &*args.vector(2)?)
        }
        B::IndexOf => {
            args.exactly(2)?;
            select::index_of(&*args.vector(0)?, &*args.vector(1)?)
        }
        B::Vector => {
            args.exactly(2)?;
            select::vector(&*args.vector(0)?, args.value(1)?)
        }
        B::Append => {
            args.exactly(2)?;
            select::append(args.value(0)?, args.value(1)?)
        }
        B::Member => {
            args.exactly(2)?;
            select::member(&*args.vector(0)?, &*args.vector(1)?)
        }
        B::Take | B::Drop => {
            args.exactly(2)?;
            select::take_or_drop(b, &*args.vector(0)?, args.value(1)?)
        }
        B::Group => {
            args.exactly(1)?;
            group::group(args.value(0)?)
        }
        B::GroupAggregate => group::group_aggregate(&args),
        B::Order => {
            args.exactly(2)?;
            order::order(args.value(0)?, &*args.vector(1)?)
        }
        B::JoinIndex => join::join_index(&args),
        B::Like => {
            args.exactly(2)?;
            strings::like(&*args.vector(0)?, &*args.vector(1)?)
        }
        B::SubString => strings::sub_string(&args),
        B::List => list::list(&args),
        B::Raze => {
            args.exactly(1)?;
            list::raze(args.value(0)?)
        }
        B::Enlist => {
            args.exactly(1)?;
            Ok(list::enlist(args.value(0)?))
        }
        B::ToList => {
            args.exactly(1)?;
            list::to_list(&*args.vector(0)?)
        }
        B::Match => {
            args.exactly(2)?;
            Ok(Value::from_bools(vec![list::values_match(args.value(0)?, args.value(1)?)]))
        }
        B::Each | B::EachItem | B::EachLeft | B::EachRight => list::each(b, &args, env),
        B::Enum | B::Dict | B::Table | B::KTable | B::Keys | B::Values | B::Meta
        | B::ColumnValue | B::LoadTable | B::Fetch | B::Flip => db::call(b, &args, env),
        B::LoadCsv => bail!("reading CSV files from a program is not supported; load the data with the data registry instead"),
        // Typed `i64` (rNdN): how many elements (cells, rows) it printed.
        B::Print => {
            args.exactly(1)?;
            let value = args.value(0)?;
            env.print(value)?;
            Ok(Value::from_i64s(vec![value.len() as i64]))
        }
        B::Str | B::Format => {
            args.exactly(1)?;
            io::to_text(b, args.value(0)?)
        }
        B::Rand => {
            args.exactly(1)?;
            io::rand(&*args.vector(0)?)
        }
        B::Randk => {
            args.exactly(2)?;
            io::randk(&*args.vector(0)?, &*args.vector(1)?)
        }
        B::Seed => {
            args.exactly(1)?;
            io::seed(&*args.vector(0)?)
        }
        B::Csr => graph::csr(&args),
        B::ShortestPathLength => graph::shortest_path_length(&args),
        B::Reachable => graph::reachable(&args),
        B::TupleUnique => relation::tuple_unique(&args),
        B::TupleDiff => relation::tuple_diff(&args),
        B::TupleMerge => relation::tuple_merge(&args),
        B::SortedJoin => relation::sorted_join(&args),
        B::JoinUnique => relation::join_unique(&args),
        B::MultiwayJoin => multiway::multiway_join(&args),
        B::MultiwayCount => multiway::multiway_count(&args),
        B::ReachIndex => graph::reach_index(&args),
    }
}

use crate::bail;

/// Calls a function literal on `args` and returns its single value: builtins directly,
/// user functions through the environment.
pub(crate) fn invoke(f: Callee, args: &[Value], env: &mut dyn Env) -> Result<Value> {
    match f {
        Callee::Builtin(b) => {
            let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
            call_builtin(b, &refs, env)
        }
        Callee::Function(_) => {
            let mut values = env.invoke(f, args)?;
            if values.len() != 1 {
                bail!(
                    "the function passed must return one value, it returned {}",
                    values.len()
                );
            }
            values
                .pop()
                .ok_or_else(|| RuntimeError::new("the function passed returned no value"))
        }
    }
}

/// Where the CPU backend runs each builtin call, for the printed plan: containers on the host,
/// everything else on the CPU.
pub struct CpuCallSites;

impl crate::plan::CallSites for CpuCallSites {
    fn placement(
        &self,
        builtin: Builtin,
        _function_arg: Option<Builtin>,
    ) -> crate::plan::CallPlacement {
        if crate::profile::is_host_builtin(builtin) {
            crate::plan::CallPlacement::Host
        } else {
            crate::plan::CallPlacement::Cpu
        }
    }
}
