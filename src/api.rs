//! horsec as a library: compile a HorseIR (or Datalog) program once, run it many times on
//! different tables, and take the result as Arrow record batches.
//!
//! ```
//! use std::sync::Arc;
//! use horsec::api::{Engine, Tables};
//! use horsec::arrow_array::{Float64Array, Int64Array, RecordBatch};
//! use horsec::arrow_schema::{DataType, Field, Schema};
//!
//! // The CPU backend runs everywhere; `Engine::gpu(None)` picks the best GPU adapter.
//! let engine = Engine::cpu();
//! let query = engine.compile(
//!     "total.hir",
//!     "module m { import Builtin.*;
//!        def main() : table {
//!          t:table = @load_table(`sales:sym);
//!          price:f64 = check_cast(@column_value(t, `price:sym), f64);
//!          total:f64 = @sum(price);
//!          columns:? = @list(total);
//!          result:table = @table(`total:sym, columns);
//!          return result;
//!        } }",
//! )?;
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("id", DataType::Int64, false),
//!     Field::new("price", DataType::Float64, false),
//! ]));
//! for prices in [vec![1.5, 2.5], vec![10.0, 20.0, 30.0]] {
//!     let ids = Int64Array::from_iter_values(0..prices.len() as i64);
//!     let batch = RecordBatch::try_new(
//!         schema.clone(),
//!         vec![Arc::new(ids), Arc::new(Float64Array::from(prices.clone()))],
//!     )?;
//!     let mut tables = Tables::new();
//!     tables.insert_batches("sales", &[batch])?;
//!     let result = engine.run(&query, &tables)?.record_batch()?;
//!     let total = result.column(0).as_any().downcast_ref::<Float64Array>().unwrap();
//!     assert_eq!(total.value(0), prices.iter().sum::<f64>());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Errors are values ([`Error`]): a program that does not compile, data that does not load,
//! a run that fails, each with its message (compile errors rendered with the source line).

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::gpu::Device;
use horsec_runtime::interp;
use horsec_runtime::profile::Profile;
use horsec_runtime::value::Value;

pub use horsec_runtime::data::Database as Tables;
pub use horsec_runtime::format::OutputFormat;

use crate::diag::Diagnostic;
use crate::driver::{compile_for, Compilation, Stage, Target};

/// What went wrong, by stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The program does not parse, type-check or compile.
    Compile,
    /// No GPU could be opened.
    Device,
    /// Tables could not be read or converted.
    Data,
    /// The program failed while running (its message names the statement).
    Run,
}

/// An error of any stage, as a value: its kind and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// The message as the command line prints it (compile and run errors with
    /// `file:line:col:` and the source line).
    pub message: String,
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// A data error (loading or converting tables).
    pub fn data(error: horsec_runtime::error::RuntimeError) -> Error {
        Error::new(ErrorKind::Data, error.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.trim_end())
    }
}

impl std::error::Error for Error {}

impl From<horsec_runtime::error::RuntimeError> for Error {
    /// Runtime-crate errors reaching the API outside a run come from tables.
    fn from(error: horsec_runtime::error::RuntimeError) -> Error {
        Error::data(error)
    }
}

/// Where builtins execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Every builtin on the CPU (the reference implementation).
    Cpu,
    /// Fused kernels and library builtins on a GPU through wgpu.
    Gpu,
}

/// A compiled program, ready to run any number of times on an [`Engine`] of its backend.
pub struct Query {
    compilation: Compilation,
    backend: Backend,
    compile_time: Duration,
}

impl Query {
    /// The backend the program was compiled for.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Every stage's output, diagnostics and time.
    pub fn compilation(&self) -> &Compilation {
        &self.compilation
    }

    /// Wall time of the whole compilation.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Warnings of the compilation, rendered (empty when there are none).
    pub fn warnings(&self) -> String {
        self.compilation.render_diagnostics()
    }

    /// The tables the program loads, when each `@load_table` names its table literally.
    pub fn tables(&self) -> Option<Vec<String>> {
        self.compilation
            .typed
            .as_ref()
            .and_then(crate::driver::loaded_tables)
    }

    /// The columns the program reads from each table it loads (see
    /// [`crate::driver::used_columns`]); `None` when any column may be read.
    pub fn columns(&self) -> Option<std::collections::BTreeMap<String, Vec<String>>> {
        self.compilation
            .typed
            .as_ref()
            .and_then(crate::driver::used_columns)
    }

    /// A runtime error rendered as `file:line:col: error: message` with the source line.
    fn render_runtime_error(&self, e: &horsec_runtime::error::RuntimeError) -> String {
        let c = &self.compilation;
        match e
            .location
            .and_then(|(line, col)| c.file.offset_of(line as usize, col as usize))
        {
            Some(start) => {
                let text = c.file.text();
                let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
                let span = crate::syntax::ast::Span {
                    start,
                    end: end.max(start + 1),
                };
                c.file.render(&Diagnostic::error(span, e.message.clone()))
            }
            None => format!("{}: error: {}\n", c.file.name(), e.message),
        }
    }
}

/// A backend, ready to compile and run programs: the CPU, or an opened GPU device.
pub struct Engine {
    device: Option<Device>,
}

impl Engine {
    /// The CPU backend.
    pub fn cpu() -> Engine {
        Engine { device: None }
    }

    /// The GPU backend on the adapter whose name contains `adapter`, or the best adapter
    /// (honouring `HORSEC_ADAPTER`) when `None`.
    pub fn gpu(adapter: Option<&str>) -> Result<Engine, Error> {
        let device = match adapter {
            Some(name) => Device::with_adapter_filter(Some(name)),
            None => Device::new(),
        };
        device
            .map(|device| Engine {
                device: Some(device),
            })
            .map_err(|e| Error::new(ErrorKind::Device, e.to_string()))
    }

    /// An engine on an already opened device.
    pub fn with_device(device: Device) -> Engine {
        Engine {
            device: Some(device),
        }
    }

    pub fn backend(&self) -> Backend {
        match self.device {
            Some(_) => Backend::Gpu,
            None => Backend::Cpu,
        }
    }

    /// The GPU device, on the GPU backend.
    pub fn device(&self) -> Option<&Device> {
        self.device.as_ref()
    }

    /// Compiles `source` (HorseIR, or Datalog when `name` ends in `.dl`) for this engine's
    /// backend; `name` is the file name diagnostics show.
    pub fn compile(&self, name: &str, source: &str) -> Result<Query, Error> {
        let target = match self.backend() {
            Backend::Gpu => Target::Gpu,
            Backend::Cpu => Target::Cpu,
        };
        let start = Instant::now();
        let compilation = compile_for(name, source, Stage::Plan, target);
        let compile_time = start.elapsed();
        if compilation.failed() || compilation.plan.is_none() {
            return Err(Error::new(
                ErrorKind::Compile,
                compilation.render_diagnostics(),
            ));
        }
        Ok(Query {
            compilation,
            backend: self.backend(),
            compile_time,
        })
    }

    /// Compiles the program in the file `path`.
    pub fn compile_file(&self, path: &Path) -> Result<Query, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorKind::Compile,
                format!("{}: error: cannot read: {e}", path.display()),
            )
        })?;
        self.compile(&path.display().to_string(), &text)
    }

    /// Runs `query` on `tables`. The tables are only read: run the same query on other
    /// tables, or other queries on these, as often as needed.
    pub fn run(&self, query: &Query, tables: &Tables) -> Result<Output, Error> {
        if query.backend != self.backend() {
            return Err(Error::new(
                ErrorKind::Run,
                format!(
                    "the query was compiled for the {:?} backend, this engine is {:?}",
                    query.backend,
                    self.backend()
                ),
            ));
        }
        let Some(plan) = query.compilation.plan.as_ref() else {
            return Err(Error::new(ErrorKind::Compile, "the query has no plan"));
        };
        let mut printed = Vec::new();
        let mut profile = Profile::new();
        let start = Instant::now();
        let result = match &self.device {
            Some(device) => {
                let mut engine = GpuEngine::new(device);
                interp::run_with(plan, tables, &mut printed, &mut engine, &mut profile)
            }
            None => interp::run_with(
                plan,
                tables,
                &mut printed,
                &mut interp::CpuOnly,
                &mut profile,
            ),
        };
        let execute_time = start.elapsed();
        let values =
            result.map_err(|e| Error::new(ErrorKind::Run, query.render_runtime_error(&e)))?;
        Ok(Output {
            values,
            printed,
            profile,
            execute_time,
        })
    }
}

/// What a run returned.
#[derive(Debug)]
pub struct Output {
    /// The values `main` returned (a query returns one table).
    pub values: Vec<Value>,
    /// What the program printed while it ran (`@print` and friends).
    pub printed: Vec<u8>,
    /// Every builtin call with its backend and time: the `--time` profile.
    pub profile: Profile,
    /// Wall time of the run.
    pub execute_time: Duration,
}

impl Output {
    /// Each returned value as a record batch (a table's columns, or a vector as the column
    /// `value`), typed as [`horsec_runtime::data::arrow_convert`] documents.
    pub fn record_batches(&self) -> Result<Vec<RecordBatch>, Error> {
        self.values
            .iter()
            .map(|value| {
                horsec_runtime::data::arrow_convert::value_to_batch(value)
                    .map_err(|e| Error::new(ErrorKind::Data, e.message))
            })
            .collect()
    }

    /// The single returned value as a record batch.
    pub fn record_batch(&self) -> Result<RecordBatch, Error> {
        match self.values.as_slice() {
            [value] => horsec_runtime::data::arrow_convert::value_to_batch(value)
                .map_err(|e| Error::new(ErrorKind::Data, e.message)),
            values => Err(Error::new(
                ErrorKind::Data,
                format!("the program returned {} values, not one", values.len()),
            )),
        }
    }

    /// Writes every returned value as text in `format` (what `horsec run` prints).
    pub fn write_text(
        &self,
        format: OutputFormat,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        for value in &self.values {
            horsec_runtime::format::write_value(value, format, out)?;
        }
        Ok(())
    }
}
