//! Runs one program text on both backends and compares what they did.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use horsec::diag::Severity;
use horsec::driver::{compile_for, Compilation, Stage, Target};
use horsec::sema::typed::{Expr as TypedExpr, ExprKind, Stmt as TypedStmt, StmtKind, TypedProgram};
use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::format::{write_value, OutputFormat};
use horsec_runtime::interp;
use horsec_runtime::profile::Profile;
use horsec_runtime::types::Type;
use horsec_runtime::value::Value;

use super::bound::{bound_program, reordered_returns, BoundProgram};
use super::generate::FLOAT_FUNCTIONS;
use horsec_runtime::builtin::Builtin;

/// What one backend did with a program.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran and returned these values.
    Values(Vec<Value>),
    /// It refused the program, at compile or run time, with this message (without the
    /// location: a fused kernel reports the statement that starts it).
    Refused(String),
    /// It panicked (always a defect).
    Panicked(String),
}

impl Outcome {
    pub fn describe(&self) -> String {
        match self {
            Outcome::Values(values) => {
                let mut out = String::new();
                for (i, v) in values.iter().enumerate() {
                    let text = tsv(v).unwrap_or_else(|e| format!("<unprintable: {e}>"));
                    let lines: Vec<&str> = text.lines().collect();
                    let shown = lines.iter().take(8).copied().collect::<Vec<_>>().join(" ");
                    let more = if lines.len() > 8 {
                        format!(" ... ({} rows)", lines.len())
                    } else {
                        String::new()
                    };
                    out.push_str(&format!("\n      value {i}: {}: {shown}{more}", v.ty()));
                }
                format!("values:{out}")
            }
            Outcome::Refused(m) => format!("refused: {m}"),
            Outcome::Panicked(m) => format!("panicked: {m}"),
        }
    }
}

/// The kinds of disagreement, the classes the shrinker preserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The front end (shared by both backends) rejected a program the generator meant to be
    /// well typed: a generator bug or a type-rule bug.
    Invalid,
    /// A backend panicked.
    Panic,
    /// One backend answered, the other refused.
    AnswerVsRefusal,
    /// Both refused, with different messages.
    DifferentErrors,
    /// Both answered, with values of different types.
    DifferentTypes,
    /// A backend returned a value whose type is not the static type.
    NotStaticType,
    /// Both answered, with different values.
    DifferentValues,
}

#[derive(Clone, Debug)]
pub struct Disagreement {
    pub kind: Kind,
    pub detail: String,
    pub cpu: Outcome,
    pub gpu: Outcome,
}

/// The result of one program.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// Same values.
    Answered,
    /// Same refusal message.
    Refused(String),
    Disagree(Box<Disagreement>),
}

/// Time spent per phase, over many programs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub generate: Duration,
    pub compile_cpu: Duration,
    pub compile_gpu: Duration,
    pub run_cpu: Duration,
    pub run_gpu: Duration,
    pub compare: Duration,
    /// Pipelines the GPU runs compiled (the WGSL of a kernel not seen before).
    pub pipelines_compiled: u64,
    /// The part of `run_gpu` spent compiling them (naga and the driver).
    pub compile_pipelines: Duration,
    /// A second GPU run of the same plan, with its pipelines cached (when asked for).
    pub run_gpu_warm: Duration,
    /// Programs whose float answers differ beyond the relative tolerance, and the part of
    /// them that agree within the bound of their summation order (see `fuzz/bound.rs`).
    pub beyond_tolerance: u64,
    pub within_summation_bound: u64,
    /// Programs that answered the same whose floats print differently on some row (apart,
    /// but within the tolerance or a summation bound), per tolerance: those computing in f32
    /// anywhere, and the others.
    pub f32_programs_apart: u64,
    pub f64_programs_apart: u64,
    /// The largest relative difference of such rows, per tolerance (for choosing it).
    pub f32_largest_apart: f64,
    pub f64_largest_apart: f64,
}

impl Timings {
    pub fn add(&mut self, other: &Timings) {
        self.generate += other.generate;
        self.compile_cpu += other.compile_cpu;
        self.compile_gpu += other.compile_gpu;
        self.run_cpu += other.run_cpu;
        self.run_gpu += other.run_gpu;
        self.compare += other.compare;
        self.pipelines_compiled += other.pipelines_compiled;
        self.compile_pipelines += other.compile_pipelines;
        self.run_gpu_warm += other.run_gpu_warm;
        self.beyond_tolerance += other.beyond_tolerance;
        self.within_summation_bound += other.within_summation_bound;
        self.f32_programs_apart += other.f32_programs_apart;
        self.f64_programs_apart += other.f64_programs_apart;
        self.f32_largest_apart = self.f32_largest_apart.max(other.f32_largest_apart);
        self.f64_largest_apart = self.f64_largest_apart.max(other.f64_largest_apart);
    }
}

pub fn tsv(v: &Value) -> Result<String, String> {
    let mut out = Vec::new();
    write_value(v, OutputFormat::Tsv, &mut out).map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// The error messages of a failed compilation, without locations.
fn compile_errors(c: &Compilation) -> String {
    c.diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

enum Compiled {
    Plan(Box<Compilation>),
    /// Parse or type errors: the front end is shared, so this is one outcome for both
    /// backends (and, as the generator means every program to be well typed, a bug).
    FrontEnd(String),
    /// The backend's own compile stages (outlining, code generation) refused.
    Refused(String),
    Panicked(String),
}

/// Compiles for `target`. The CPU compile is parse, analysis and lowering, so any error it
/// reports is the front end's; the GPU compile runs the same front end first, so once the CPU
/// compile passed, an error of the GPU compile is its own.
fn compile(text: &str, target: Target) -> Compiled {
    let c = match catch_unwind(AssertUnwindSafe(|| {
        compile_for("fuzz.hir", text, Stage::Plan, target)
    })) {
        Ok(c) => c,
        Err(e) => return Compiled::Panicked(format!("compiling: {}", panic_message(e))),
    };
    if !c.failed() {
        Compiled::Plan(Box::new(c))
    } else if compile_errors(&c).contains(": length mismatch (") {
        // A mismatch the front end proves (`analysis::mismatch`): the refusal a deliberately
        // wrong statement is meant to meet, the same for both backends.
        Compiled::Refused(compile_errors(&c))
    } else if target == Target::Cpu {
        Compiled::FrontEnd(c.render_diagnostics())
    } else {
        Compiled::Refused(compile_errors(&c))
    }
}

fn run_plan(c: &Compilation, db: &Database, engine: Option<&mut GpuEngine<'_>>) -> Outcome {
    let Some(plan) = c.plan.as_ref() else {
        return Outcome::Refused("no plan".to_string());
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut printed = Vec::new();
        let mut profile = Profile::new();
        match engine {
            Some(engine) => interp::run_with(plan, db, &mut printed, engine, &mut profile),
            None => interp::run(plan, db, &mut printed),
        }
    }));
    match result {
        Ok(Ok(values)) => Outcome::Values(values),
        Ok(Err(e)) => Outcome::Refused(e.message),
        Err(e) => Outcome::Panicked(format!("running: {}", panic_message(e))),
    }
}

/// Runs `text` on the CPU and on `engine`'s device, and compares what they did; the static
/// types of what `main` returns are the front end's. The engine may have run other programs
/// before: it keeps the device copies of the columns it uploaded (values it holds a clone
/// of, so a copy is never taken for another value at the same address).
pub fn check(
    text: &str,
    db: &Database,
    engine: &mut GpuEngine<'_>,
    timings: &mut Timings,
) -> Verdict {
    let mut types: Vec<Type> = Vec::new();
    let mut in_f32 = computes_in_f32(text);
    let start = Instant::now();
    let cpu_compiled = compile(text, Target::Cpu);
    timings.compile_cpu += start.elapsed();
    let cpu = match cpu_compiled {
        Compiled::FrontEnd(diagnostics) => {
            return Verdict::Disagree(Box::new(Disagreement {
                kind: Kind::Invalid,
                detail: format!("the front end rejects the generated program:\n{diagnostics}"),
                cpu: Outcome::Refused(diagnostics.clone()),
                gpu: Outcome::Refused(diagnostics),
            }));
        }
        Compiled::Refused(m) => Outcome::Refused(m),
        Compiled::Panicked(m) => Outcome::Panicked(m),
        Compiled::Plan(c) => {
            if let Some(typed) = &c.typed {
                types = typed.functions[typed.entry.0].returns.clone();
                in_f32 |= typed_computes_in_f32(typed);
            }
            let start = Instant::now();
            let outcome = run_plan(&c, db, None);
            timings.run_cpu += start.elapsed();
            outcome
        }
    };
    let start = Instant::now();
    let gpu_compiled = compile(text, Target::Gpu);
    timings.compile_gpu += start.elapsed();
    let gpu = match gpu_compiled {
        Compiled::FrontEnd(m) | Compiled::Refused(m) => Outcome::Refused(m),
        Compiled::Panicked(m) => Outcome::Panicked(m),
        Compiled::Plan(c) => {
            let (built, build_time) = engine.device().pipelines_built();
            let start = Instant::now();
            let outcome = run_plan(&c, db, Some(engine));
            timings.run_gpu += start.elapsed();
            // Other jobs sharing the device may compile meanwhile: a close estimate.
            let (built_after, build_time_after) = engine.device().pipelines_built();
            timings.pipelines_compiled += u64::from(built_after.saturating_sub(built));
            timings.compile_pipelines += build_time_after.saturating_sub(build_time);
            if std::env::var_os("HORSEC_FUZZ_WARM").is_some() {
                let start = Instant::now();
                run_plan(&c, db, Some(engine));
                timings.run_gpu_warm += start.elapsed();
            }
            outcome
        }
    };
    let start = Instant::now();
    let tolerance = if in_f32 { F32_TOLERANCE } else { F64_TOLERANCE };
    let apart = largest_apart(&cpu, &gpu);
    if apart.is_some() && (!in_f32 || !calls_float_function(text)) {
        if let Some(detail) = rounded_apart(text, &cpu, &gpu) {
            timings.compare += start.elapsed();
            return Verdict::Disagree(Box::new(Disagreement {
                kind: Kind::DifferentValues,
                detail,
                cpu,
                gpu,
            }));
        }
    }
    let mut bounded = false;
    let verdict = compare(cpu, gpu, &types, tolerance, || {
        bounded = true;
        summation_bounds(text, db)
    });
    if bounded {
        timings.beyond_tolerance += 1;
        if matches!(verdict, Verdict::Answered) {
            timings.within_summation_bound += 1;
        }
    }
    if let (Some(apart), Verdict::Answered) = (apart, &verdict) {
        if in_f32 {
            timings.f32_programs_apart += 1;
            timings.f32_largest_apart = timings.f32_largest_apart.max(apart);
        } else {
            timings.f64_programs_apart += 1;
            timings.f64_largest_apart = timings.f64_largest_apart.max(apart);
        }
        if show_apart().is_some_and(|least| apart >= least) {
            eprintln!("floats apart by {apart:e} (relative):\n{text}");
        }
    }
    timings.compare += start.elapsed();
    verdict
}

/// Per value `main` returns: for a float that depends on a summation order and has a bound
/// (`fuzz/bound.rs`), the largest difference allowed between the backends, per row; None
/// for any other value (compared within the relative tolerance alone).
pub type Bounds = Vec<Option<Vec<f64>>>;

/// What the CPU backend does with `text` (a front-end error is a refusal).
pub fn run_on_cpu(text: &str, db: &Database) -> Outcome {
    match compile(text, Target::Cpu) {
        Compiled::Plan(c) => run_plan(&c, db, None),
        Compiled::FrontEnd(m) | Compiled::Refused(m) => Outcome::Refused(m),
        Compiled::Panicked(m) => Outcome::Panicked(m),
    }
}

/// The bounds of `text`'s returned values, from its bound-computing sibling run on the CPU.
/// A sibling that fails to compile or run gives no bound: the comparison stays strict.
pub fn summation_bounds(text: &str, db: &Database) -> Bounds {
    let Some(sibling) = bound_program(text) else {
        return Vec::new();
    };
    let Outcome::Values(values) = run_on_cpu(&sibling.text, db) else {
        return Vec::new();
    };
    sibling
        .returns
        .iter()
        .zip(&values)
        .map(|(order, w)| {
            let order = (*order)?;
            let rows = tsv(w).ok()?;
            rows.lines()
                .map(|row| {
                    let w: f64 = row.parse().ok()?;
                    Some(BoundProgram::allowed(order, w))
                })
                .collect()
        })
        .collect()
}

/// Relative tolerance of floats computed in f64 only: both backends compute the same IEEE
/// operations, and differ by a few rounding steps at most.
pub const F64_TOLERANCE: f64 = 1e-9;

/// Relative tolerance of floats in a program that computes in f32 anywhere (its text names
/// f32, or a call or a variable of its typed program is f32: a floating function of an
/// integer): 256 ulp of f32 (2^-23 · 256 ≈ 3.1e-5).
///
/// What the generated code computes in f32 it computes as the CPU does, to the bit: `+ - *`,
/// `@div` and `@sqrt` correctly rounded, conversions, and every floating function as the f64
/// function rounded to f32 (commit 4307609 did so for the inverse trigonometric and hyperbolic
/// ones, which used the GPU's own f32 instructions before; `@div`, `@recip` and `@pi` of an
/// integer go through f64 as on the CPU), but where a function's exact value lies within a few
/// f64 ulp of an f32 rounding midpoint ("Rounding" in `runtime/BUILTINS.md`, about once in
/// 10^7 arguments): there the backends are an f32 ulp apart, which a later operation may
/// amplify (a difference that cancels, `@cos` of a large value). On lavapipe no f32 moved:
/// in 10 runs of 9,700 (up to 24 statements) to 37,000 random programs with every floating
/// function (seeds 2 to 11, 1 job, 300 to 450 s each), no program computing in f32 printed
/// a float differently
/// from the CPU but for the order of a float sum (1e-13 relative at most) and once for a
/// regrouping by the shader compiler: `(k · 1000.0) · π` as `k · (1000.0 · π)`, 0.76 ulp
/// (now computed in f64, `@pi` is out of its reach).
///
/// The tolerance is kept for what a device's shader compiler may do and the CPU does not:
/// naga marks no operation NoContraction, so Vulkan lets it contract `a * b + c` into an fma
/// and regroup operations (NVIDIA's regroups `(w - k·c1) - k·c2`, see `trig_reduce` in
/// `codegen/wgsl/float_functions.rs`; lavapipe simplified `k + (-683 - k)` to -683,
/// `corpus/sum_regrouped_by_the_shader_compiler.hir`). The IEEE helpers now take their
/// operands through their bits, but an operation the generated code runs unchecked
/// (`generate/exact.rs`) or a compiler's freedom not seen yet may still move an f32 result
/// by an ulp of its operands, many ulp of its own where they cancel; the H100 has not been
/// measured with every floating function generated. The summary of a run prints the largest
/// relative difference of agreeing programs per tolerance, and `HORSEC_FUZZ_SHOW_APART`
/// prints the programs, so a run on a device measures what a tighter bound would reject
/// there. An f64 computed from an f32 (`@sum` of an f32 vector) carries the same error, hence
/// one tolerance for every float of such a program. An answer wrong in any other way (a row
/// missing, a wrong element, a sign) is still far outside it.
pub const F32_TOLERANCE: f64 = 256.0 / (1u64 << 23) as f64;

/// Whether the program's text names f32 (a literal, a declaration, a column cast).
fn computes_in_f32(text: &str) -> bool {
    text.contains("f32")
}

/// Whether a call or a variable of the typed program has an f32 in its type: a floating
/// function of an integer is f32 even where the text names no f32 (`x:f64 = @sin(k);` of an
/// i32 `k` rounds the sine to f32, then converts it).
fn typed_computes_in_f32(typed: &TypedProgram) -> bool {
    fn has_f32(ty: &Type) -> bool {
        // Lists, dictionaries and enums print their element types.
        ty.to_string().contains("f32")
    }
    fn expr_in_f32(e: &TypedExpr) -> bool {
        e.types.iter().any(has_f32)
            || matches!(&e.kind, ExprKind::CheckCast { expr, .. } if expr_in_f32(expr))
    }
    fn stmts_in_f32(body: &[TypedStmt]) -> bool {
        body.iter().any(|s| match &s.kind {
            StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => expr_in_f32(expr),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => stmts_in_f32(then_body) || else_body.as_deref().is_some_and(stmts_in_f32),
            StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => stmts_in_f32(body),
            _ => false,
        })
    }
    typed
        .functions
        .iter()
        .any(|f| f.locals.iter().any(|l| has_f32(&l.ty)) || stmts_in_f32(&f.body))
}

/// The comparison rule: same values (floats within a relative `tolerance`, or, for a float
/// that depends on a summation order, within the bound `bounds` gives for it, asked for only
/// when a float differs beyond the tolerance), of the static types, or refusals with the
/// same message. Values of other types (integers, dates, text) are equal as text.
pub fn compare(
    cpu: Outcome,
    gpu: Outcome,
    types: &[Type],
    tolerance: f64,
    bounds: impl FnOnce() -> Bounds,
) -> Verdict {
    let mut bounds = Some(bounds);
    let mut computed: Option<Bounds> = None;
    let disagree = |kind: Kind, detail: String, cpu: Outcome, gpu: Outcome| {
        Verdict::Disagree(Box::new(Disagreement {
            kind,
            detail,
            cpu,
            gpu,
        }))
    };
    match (&cpu, &gpu) {
        (Outcome::Panicked(m), _) | (_, Outcome::Panicked(m)) => {
            let m = m.clone();
            disagree(Kind::Panic, m, cpu, gpu)
        }
        (Outcome::Refused(a), Outcome::Refused(b)) => {
            if a == b {
                Verdict::Refused(a.clone())
            } else {
                disagree(Kind::DifferentErrors, String::new(), cpu, gpu)
            }
        }
        (Outcome::Refused(_), Outcome::Values(_)) | (Outcome::Values(_), Outcome::Refused(_)) => {
            disagree(Kind::AnswerVsRefusal, String::new(), cpu, gpu)
        }
        (Outcome::Values(a), Outcome::Values(b)) => {
            if a.len() != b.len() {
                return disagree(
                    Kind::DifferentValues,
                    format!("{} values against {}", a.len(), b.len()),
                    cpu,
                    gpu,
                );
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x.ty() != y.ty() {
                    let detail = format!("value {i}: CPU type {} but GPU type {}", x.ty(), y.ty());
                    return disagree(Kind::DifferentTypes, detail, cpu, gpu);
                }
                if let Some(t) = types.get(i) {
                    if x.ty() != *t {
                        let detail = format!(
                            "value {i}: the static type is {t}, both backends give {}",
                            x.ty()
                        );
                        return disagree(Kind::NotStaticType, detail, cpu, gpu);
                    }
                }
                if let Err(detail) = same_text(x, y, tolerance, None) {
                    let float = matches!(x.ty(), Type::F32 | Type::F64);
                    if float && computed.is_none() {
                        computed = bounds.take().map(|b| b());
                    }
                    let allowed = computed
                        .as_ref()
                        .and_then(|b| b.get(i))
                        .and_then(|b| b.as_deref())
                        .filter(|_| float);
                    let detail = match allowed {
                        Some(allowed) => match same_text(x, y, tolerance, Some(allowed)) {
                            Ok(()) => continue,
                            Err(detail) => format!("{detail}, beyond its summation bound"),
                        },
                        None => detail,
                    };
                    return disagree(
                        Kind::DifferentValues,
                        format!("value {i}: {detail}"),
                        cpu,
                        gpu,
                    );
                }
            }
            Verdict::Answered
        }
    }
}

/// Whether `x` and `y` print the same, floats within the relative `tolerance` or, with
/// `allowed`, within its absolute bound of the row (when it has one per row).
fn same_text(x: &Value, y: &Value, tolerance: f64, allowed: Option<&[f64]>) -> Result<(), String> {
    let (a, b) = (tsv(x)?, tsv(y)?);
    if a == b {
        return Ok(());
    }
    let float = matches!(x.ty(), Type::F32 | Type::F64);
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if la.len() != lb.len() {
        return Err(format!(
            "{} rows on the CPU, {} on the GPU",
            la.len(),
            lb.len()
        ));
    }
    let allowed = allowed.filter(|a| a.len() == la.len());
    for (row, (p, q)) in la.iter().zip(&lb).enumerate() {
        let same = if float {
            field_eq(p, q, tolerance, allowed.map(|a| a[row]))
        } else {
            p == q
        };
        if !same {
            return Err(format!("row {row}: CPU {p:?}, GPU {q:?}"));
        }
    }
    Ok(())
}

/// The largest relative difference between two finite floats of the same row that print
/// differently, over the values both backends returned (None when every float row prints the
/// same, or the outcomes are not both values of the same shape).
fn largest_apart(cpu: &Outcome, gpu: &Outcome) -> Option<f64> {
    let (Outcome::Values(a), Outcome::Values(b)) = (cpu, gpu) else {
        return None;
    };
    let mut largest: Option<f64> = None;
    for (x, y) in a.iter().zip(b) {
        if !matches!(x.ty(), Type::F32 | Type::F64) || x.ty() != y.ty() {
            continue;
        }
        let (Ok(p), Ok(q)) = (tsv(x), tsv(y)) else {
            continue;
        };
        if p == q {
            continue;
        }
        for (r, s) in p.lines().zip(q.lines()) {
            if let (Ok(r), Ok(s)) = (r.parse::<f64>(), s.parse::<f64>()) {
                if r != s && r.is_finite() && s.is_finite() {
                    let relative = (r - s).abs() / r.abs().max(s.abs());
                    largest = Some(largest.map_or(relative, |l| l.max(relative)));
                }
            }
        }
    }
    largest
}

/// Whether `text` calls a floating function other than `@pi` (`@sin`, `@exp`, ...; called
/// or passed): where its result is an f32, the backends may round it an f32 ulp apart (see
/// [`F32_TOLERANCE`]).
fn calls_float_function(text: &str) -> bool {
    let names: Vec<String> = FLOAT_FUNCTIONS
        .iter()
        .filter(|(b, _)| *b != Builtin::Pi)
        .map(|(b, _)| b.to_string())
        .collect();
    text.split('@').skip(1).any(|after| {
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        names.contains(&name)
    })
}

/// The first row of a float the backends print differently though it depends on no
/// summation order (`fuzz/bound.rs` knows which returned values do), in a program that calls
/// no floating function but `@pi` in f32 (in f64 they run on the CPU): such a value comes
/// from the same correctly rounded operations on both backends (`+ - *`, `@div`, `@sqrt`,
/// conversions, `@pi`), so even an ulp apart is a defect, one the relative tolerance would
/// let through. A shader compiler regrouping `(x * 3.0) * 7.0` as `x * 21.0` was such an
/// ulp (found only where `@sin` of a large argument made it 1e-5). None when every such
/// value prints the same, or the program has no sibling to tell.
pub fn rounded_apart(text: &str, cpu: &Outcome, gpu: &Outcome) -> Option<String> {
    let (Outcome::Values(a), Outcome::Values(b)) = (cpu, gpu) else {
        return None;
    };
    let reordered_returns = reordered_returns(text)?;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let reordered = reordered_returns.get(i).copied().unwrap_or(true);
        let float = matches!(x.ty(), Type::F32 | Type::F64);
        if reordered || !float || x.ty() != y.ty() {
            continue;
        }
        let (Ok(p), Ok(q)) = (tsv(x), tsv(y)) else {
            continue;
        };
        if let Some((row, (r, s))) = p
            .lines()
            .zip(q.lines())
            .enumerate()
            .find(|(_, (r, s))| r != s)
        {
            return Some(format!(
                "value {i}: row {row} apart though it depends on no summation order: CPU {r:?}, GPU {s:?}"
            ));
        }
    }
    None
}

/// `HORSEC_FUZZ_SHOW_APART=<relative>`: print every program that answered the same on both
/// backends but with floats apart by at least that much (to see what the tolerance lets
/// through).
fn show_apart() -> Option<f64> {
    static LEAST: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
    *LEAST.get_or_init(|| {
        std::env::var("HORSEC_FUZZ_SHOW_APART")
            .ok()
            .and_then(|v| v.parse().ok())
    })
}

/// Whether a row where the CPU computed NaN or an infinity matches any GPU value:
/// `HORSEC_FUZZ_NONFINITE=lenient`, for a device whose compiler breaks IEEE special values
/// in a way the generated code does not guard (see "Non-finite floats" in `fuzz/mod.rs`).
/// By default they are compared like any other row.
fn nonfinite_ignored() -> bool {
    static IGNORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IGNORE.get_or_init(|| std::env::var("HORSEC_FUZZ_NONFINITE").is_ok_and(|v| v == "lenient"))
}

/// Whether two printed floats agree: equal, within the relative `tolerance` (or 1e-12), or
/// within the relative `tolerance` plus the absolute `allowed` (a bound of the summation
/// order), all finite.
fn field_eq(a: &str, b: &str, tolerance: f64, allowed: Option<f64>) -> bool {
    if a == b {
        return true;
    }
    if nonfinite_ignored() && a.parse::<f64>().is_ok_and(|x| !x.is_finite()) {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
            let scale = x.abs().max(y.abs());
            // The bound adds to the tolerance: the summation order and the rounding of the
            // other operations (a division, an f32 function) each move the result.
            let within_bound =
                allowed.is_some_and(|w| w.is_finite() && (x - y).abs() <= tolerance * scale + w);
            (x - y).abs() <= tolerance * scale || (x - y).abs() <= 1e-12 || within_bound
        }
        (Ok(x), Ok(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => false,
    }
}
