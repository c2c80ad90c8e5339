//! WGSL code generation: one module per kernel of the outlined program, with the launch
//! description the GPU engine runs it by ([`horsec_runtime::kernel::KernelLaunch`]).
//!
//! Entry points: [`generate_kernel`] for one kernel, [`generate_program`] for every kernel the
//! outliner made. Every module they return is parsed and validated by naga (with the 64-bit
//! integer and float capabilities); a module that does not validate is a compiler bug,
//! reported as [`CodegenErrorKind::InvalidWgsl`] with the kernel's name.
//! [`generate_kernel_for_device`] is the compile path of a program about to run: it leaves
//! validation to the device, whose shader-module creation parses and validates every module
//! with naga anyway (validating here too would do that work twice, and it is a third of the
//! compile time of a TPC-H query). A statement the
//! generator cannot translate yet is a [`CodegenErrorKind::Unsupported`] error naming the
//! statement, the builtin and the kernel — never silently wrong code.

mod generate;
pub mod wgsl;

#[cfg(test)]
mod tests;

use std::fmt;

use naga::valid::{Capabilities, ValidationFlags, Validator};

use horsec_runtime::builtin::Builtin;
pub use horsec_runtime::kernel::KernelLaunch;

use crate::analysis::{FunctionAnalysis, StmtId};
use crate::outline::kernel::Kernel;
use crate::sema::typed::TypedProgram;

/// One generated kernel: its WGSL text (`wgsl`) and everything needed to launch it.
pub type KernelModule = KernelLaunch;

/// Why a kernel could not be generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenError {
    /// The kernel's name (`main_k3`).
    pub kernel: String,
    pub kind: CodegenErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenErrorKind {
    /// A statement the generator does not translate (yet).
    Unsupported {
        /// The statement, as `t42 = @index(t9,t41)`.
        statement: String,
        builtin: Option<Builtin>,
        reason: String,
        /// The kernel's statement that could not be generated, where it is one statement
        /// (not the kernel as a whole): the driver runs it on the host and outlines the
        /// function again, so the rest of the kernel stays on the GPU.
        stmt: Option<StmtId>,
    },
    /// The kernel description is inconsistent with its function (an outliner bug).
    Malformed(String),
    /// The generated module does not parse or validate (a code generator bug).
    InvalidWgsl(String),
}

impl CodegenError {
    pub(crate) fn unsupported(
        kernel: &str,
        statement: String,
        builtin: Option<Builtin>,
        reason: String,
        stmt: Option<StmtId>,
    ) -> CodegenError {
        CodegenError {
            kernel: kernel.to_string(),
            kind: CodegenErrorKind::Unsupported {
                statement,
                builtin,
                reason,
                stmt,
            },
        }
    }

    pub(crate) fn malformed(kernel: &str, message: &str) -> CodegenError {
        CodegenError {
            kernel: kernel.to_string(),
            kind: CodegenErrorKind::Malformed(message.to_string()),
        }
    }

    /// True for errors that are bugs of horsec rather than limits of the generator.
    pub fn is_compiler_bug(&self) -> bool {
        !matches!(self.kind, CodegenErrorKind::Unsupported { .. })
    }

    /// What could not be generated, without the kernel's name: `cannot generate `t42 =
    /// @take(5:i64,t9)` (@take): this builtin is not generated on the GPU yet`.
    pub fn statement_message(&self) -> String {
        let text = self.to_string();
        let prefix = format!("kernel {}: ", self.kernel);
        match text.strip_prefix(&prefix) {
            Some(rest) => rest.to_string(),
            None => text,
        }
    }

    /// The one statement the generator could not translate, if the error is about one
    /// statement rather than the kernel as a whole.
    pub fn unsupported_statement(&self) -> Option<StmtId> {
        match self.kind {
            CodegenErrorKind::Unsupported { stmt, .. } => stmt,
            _ => None,
        }
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CodegenErrorKind::Unsupported {
                statement,
                builtin,
                reason,
                ..
            } => {
                write!(f, "kernel {}: cannot generate `{statement}`", self.kernel)?;
                if let Some(builtin) = builtin {
                    write!(f, " (@{builtin})")?;
                }
                write!(f, ": {reason}")
            }
            CodegenErrorKind::Malformed(message) => write!(
                f,
                "internal compiler error: kernel {} is malformed: {message}",
                self.kernel
            ),
            CodegenErrorKind::InvalidWgsl(message) => write!(
                f,
                "internal compiler error: the WGSL generated for kernel {} does not validate \
                 (a bug in horsec's code generator):\n{message}",
                self.kernel
            ),
        }
    }
}

impl std::error::Error for CodegenError {}

/// Generates the WGSL module and launch description of `kernel`, a kernel of the function
/// `analysis` describes, and validates the module with naga.
pub fn generate_kernel(
    program: &TypedProgram,
    analysis: &FunctionAnalysis,
    kernel: &Kernel,
) -> Result<KernelModule, CodegenError> {
    let launch = generate_kernel_for_device(program, analysis, kernel)?;
    validate(&launch.name, &launch.wgsl)?;
    Ok(launch)
}

/// [`generate_kernel`] without the naga validation, for a plan about to run: the GPU engine
/// creates the kernel's shader module, which validates it with the same naga rules, and
/// reports a module that does not validate as an internal compiler error naming the kernel
/// (see `horsec_runtime::engine`).
pub fn generate_kernel_for_device(
    program: &TypedProgram,
    analysis: &FunctionAnalysis,
    kernel: &Kernel,
) -> Result<KernelModule, CodegenError> {
    FunctionCodegen::new(program, analysis)?.kernel_for_device(kernel)
}

/// Code generation for the kernels of one function: what they all need from the function is
/// computed once, so generating all of a function's kernels stays linear in its size.
pub struct FunctionCodegen<'a> {
    code: generate::FunctionCode<'a>,
}

impl<'a> FunctionCodegen<'a> {
    /// Prepares the function `analysis` describes.
    pub fn new(
        program: &'a TypedProgram,
        analysis: &'a FunctionAnalysis,
    ) -> Result<FunctionCodegen<'a>, CodegenError> {
        Ok(FunctionCodegen {
            code: generate::FunctionCode::new(program, analysis)?,
        })
    }

    /// [`generate_kernel_for_device`] of one kernel of this function.
    pub fn kernel_for_device(&self, kernel: &Kernel) -> Result<KernelModule, CodegenError> {
        generate::Generator::new(&self.code, kernel)?.generate()
    }
}

/// The naga capabilities generated modules may use: 64-bit integers and floats (wgpu's
/// `SHADER_INT64`/`SHADER_F64`) and subgroup operations.
pub fn capabilities() -> Capabilities {
    Capabilities::SHADER_INT64 | Capabilities::FLOAT64 | Capabilities::SUBGROUP
}

/// Parses and validates a WGSL module; a failure is reported as a code generator bug.
pub fn validate(kernel: &str, source: &str) -> Result<(), CodegenError> {
    let invalid = |message: String| CodegenError {
        kernel: kernel.to_string(),
        kind: CodegenErrorKind::InvalidWgsl(message),
    };
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| invalid(e.emit_to_string_with_path(source, kernel)))?;
    let info = Validator::new(ValidationFlags::all(), capabilities())
        .validate(&module)
        .map_err(|e| invalid(e.emit_to_string_with_path(source, kernel)))?;
    if let Some(widening) = sign_changing_widening(&module, &info) {
        return Err(invalid(widening));
    }
    Ok(())
}

/// The first conversion in `module` that widens an integer and changes its signedness at
/// once (`i64(x)` of a u32, `u64(x)` of an i32), described for the error, if any. naga 30
/// writes those as SPIR-V's OpSConvert and OpUConvert of the source, which extend by the
/// *result's* signedness: `i64(x)` of a u32 from 2^31 up came out negative (`@sum(@range(n))`
/// was wrong for n past 2^31). Valid WGSL, wrong SPIR-V: the generator widens in the
/// source's signedness first (`i64(u64(x))`), and this keeps it doing so.
fn sign_changing_widening(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Option<String> {
    use naga::{Expression, ScalarKind, TypeInner};
    let functions = module
        .functions
        .iter()
        .map(|(handle, f)| (f, &info[handle]))
        .chain(
            module
                .entry_points
                .iter()
                .enumerate()
                .map(|(i, e)| (&e.function, info.get_entry_point(i))),
        );
    for (function, function_info) in functions {
        for (_, expression) in function.expressions.iter() {
            let Expression::As {
                expr,
                kind,
                convert: Some(width),
            } = *expression
            else {
                continue;
            };
            let scalar = match *function_info[expr].ty.inner_with(&module.types) {
                TypeInner::Scalar(scalar) | TypeInner::Vector { scalar, .. } => scalar,
                _ => continue,
            };
            let signs_differ = matches!(
                (scalar.kind, kind),
                (ScalarKind::Uint, ScalarKind::Sint) | (ScalarKind::Sint, ScalarKind::Uint)
            );
            if signs_differ && width > scalar.width {
                return Some(format!(
                    "{kind:?} of {} bytes converted from {:?} of {} in function `{}`: \
                     widen in the source's signedness first (naga writes this conversion \
                     as a sign-changing extension)",
                    width,
                    scalar.kind,
                    scalar.width,
                    function.name.as_deref().unwrap_or("?"),
                ));
            }
        }
    }
    None
}

/// Generates every kernel of an outlined program, in the order of
/// [`OutlinedProgram::kernels`](crate::outline::OutlinedProgram::kernels).
pub fn generate_program(
    program: &TypedProgram,
    outlined: &crate::outline::OutlinedProgram,
) -> Result<Vec<KernelModule>, CodegenError> {
    let mut modules = Vec::new();
    for function in &outlined.functions {
        for kernel in &function.kernels {
            modules.push(generate_kernel(program, &function.analysis, kernel)?);
        }
    }
    Ok(modules)
}
