//! The CPU implementation of every builtin: the interpreter's executor for CPU steps, the
//! whole of `--backend cpu`, and the oracle GPU results are tested against.

use std::sync::Arc;

use crate::builtin::Builtin;
use crate::error::Result;
use crate::plan::Callee;
use crate::value::{Table, Value};

/// An argument of a builtin call: a value, or a function literal (`@sum` in `@each(@sum, x)`).
#[derive(Clone, Copy, Debug)]
pub enum ArgValue<'a> {
    Value(&'a Value),
    Function(Callee),
}

/// What a builtin may need from the program running it.
pub trait Env {
    /// The table called `name` (`@load_table`).
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>>;
    /// Calls a function literal (a builtin or a user function) on `args`; returns its values.
    fn invoke(&mut self, f: Callee, args: &[Value]) -> Result<Vec<Value>>;
    /// Writes a value for `@print`.
    fn print(&mut self, value: &Value) -> Result<()>;
}
