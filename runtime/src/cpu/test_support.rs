//! Helpers for the unit tests of the builtins: an environment with in-memory tables, and
//! short constructors for values.

use std::sync::Arc;

use super::{call_builtin, ArgValue, Env};
use crate::builtin::Builtin;
use crate::error::Result;
use crate::plan::Callee;
use crate::value::{Strings, Table, Value, Vector};

/// An environment holding named tables; `@print` output is collected in `printed`.
#[derive(Default)]
pub struct TestEnv {
    pub tables: Vec<(String, Arc<Table>)>,
    pub printed: Vec<Value>,
}

impl Env for TestEnv {
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>> {
        match self.tables.iter().find(|(n, _)| n == name) {
            Some((_, t)) => Ok(t.clone()),
            None => crate::bail!("no table `{name}`"),
        }
    }

    fn invoke(&mut self, f: Callee, args: &[Value]) -> Result<Vec<Value>> {
        match f {
            Callee::Builtin(b) => Ok(vec![call(self, b, args)?]),
            Callee::Function(id) => crate::bail!("no user function #{} in tests", id.0),
        }
    }

    fn print(&mut self, value: &Value) -> Result<()> {
        self.printed.push(value.clone());
        Ok(())
    }
}

fn call(env: &mut TestEnv, b: Builtin, args: &[Value]) -> Result<Value> {
    let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
    call_builtin(b, &refs, env)
}

/// Calls `b` on value arguments in an empty environment.
pub fn run(b: Builtin, args: &[Value]) -> Result<Value> {
    call(&mut TestEnv::default(), b, args)
}

/// Calls `b` with function literals first, then values (`@each(@sum, l)`).
pub fn run_with(b: Builtin, functions: &[Builtin], args: &[Value]) -> Result<Value> {
    let mut list: Vec<ArgValue<'_>> = functions
        .iter()
        .map(|&f| ArgValue::Function(Callee::Builtin(f)))
        .collect();
    list.extend(args.iter().map(ArgValue::Value));
    call_builtin(b, &list, &mut TestEnv::default())
}

pub fn i64s(v: &[i64]) -> Value {
    Value::from_i64s(v.to_vec())
}

pub fn i32s(v: &[i32]) -> Value {
    Value::Vector(Vector::I32(Arc::new(v.to_vec())))
}

pub fn i16s(v: &[i16]) -> Value {
    Value::Vector(Vector::I16(Arc::new(v.to_vec())))
}

pub fn f32s(v: &[f32]) -> Value {
    Value::Vector(Vector::F32(Arc::new(v.to_vec())))
}

pub fn f64s(v: &[f64]) -> Value {
    Value::from_f64s(v.to_vec())
}

pub fn bools(v: &[u8]) -> Value {
    Value::from_bools(v.iter().map(|&b| b != 0).collect())
}

pub fn syms(v: &[&str]) -> Value {
    Value::Vector(Vector::Sym(Strings::from_strs(v)))
}

pub fn strs(v: &[&str]) -> Value {
    Value::Vector(Vector::Str(Strings::from_strs(v)))
}

pub fn chars(s: &str) -> Value {
    Value::Vector(Vector::Char(Arc::new(s.as_bytes().to_vec())))
}

pub fn dates(v: &[i32]) -> Value {
    Value::Vector(Vector::Date(Arc::new(v.to_vec())))
}

/// The text of each element of a string vector.
pub fn texts(v: &Value) -> Vec<String> {
    match v {
        Value::Vector(Vector::Sym(s) | Vector::Str(s)) => s.iter().map(str::to_string).collect(),
        other => panic!("not a string vector: {other:?}"),
    }
}

/// The cells of a list value.
pub fn cells(v: &Value) -> Vec<Value> {
    match v {
        Value::List(l) => l.cells(),
        other => panic!("not a list: {other:?}"),
    }
}

/// A list value of `cells`.
pub fn list(cells: Vec<Value>) -> Value {
    Value::List(crate::value::List::from_cells(cells))
}
