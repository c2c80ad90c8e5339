//! One source of truth for the types of builtin results: for every builtin and every argument
//! type its rule accepts, the type `horsec compile --emit typed` gives the result is the type
//! of the value each backend returns.
//!
//! The cases are enumerated from the shared rule table (`horsec_runtime::typing`), so a rule
//! added or changed is tested without touching this file. Every builtin gets one program
//! holding all its cases (`r0 = @b(…); r1 = @b(…); …`), run on the CPU and on the GPU
//! (lavapipe will do; without an adapter the GPU half says SKIPPED, a failure under
//! `HORSEC_REQUIRE_GPU=1`).

mod common;

use horsec::driver::{compile, compile_for, Stage, Target};
use horsec::sema::typed::TypedProgram;
use horsec_runtime::builtin::Builtin;
use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::interp;
use horsec_runtime::profile::Profile;
use horsec_runtime::types::Type;
use horsec_runtime::typing::rules::{arity, Arity};
use horsec_runtime::typing::vector_result;
use horsec_runtime::value::{List, Value};

/// Every vector type, each with a one-element literal (one element, so that kernels are
/// generated for it on the GPU). Integers are 2 and floats 0.5: every builtin of the
/// enumeration accepts them without a run-time error (`@mod` by 2, `@range(2)`, `@acosh`
/// of 0.5 is NaN, not an error).
const LITERALS: &[(Type, &str)] = &[
    (Type::Bool, "1:bool"),
    (Type::Char, "'a':char"),
    (Type::I8, "2:i8"),
    (Type::I16, "2:i16"),
    (Type::I32, "2:i32"),
    (Type::I64, "2:i64"),
    (Type::F32, "0.5:f32"),
    (Type::F64, "0.5:f64"),
    (Type::Complex, "1+2i:complex"),
    (Type::Sym, "`abc:sym"),
    (Type::Str, "\"abc\":str"),
    (Type::Month, "1998-09:month"),
    (Type::Date, "1998-09-02:date"),
    (Type::Minute, "12:30:minute"),
    (Type::Second, "12:30:45:second"),
    (Type::Time, "12:30:45.123:time"),
    (Type::Dt, "1998-09-02T12:30:45.123:dt"),
];

/// Builtins whose arguments need values the generic literals do not give; each has its own
/// cases in [`special_cases`].
fn needs_special_arguments(b: Builtin) -> bool {
    use Builtin as B;
    matches!(
        b,
        // Index 2 is out of range for one element; the unit is a symbol of a fixed set.
        B::Index | B::IndexA | B::SubString | B::DatetimeAdd | B::DatetimeSub
            // Tables and files: no vector arguments to enumerate.
            | B::LoadTable | B::LoadCsv | B::ColumnValue
    )
}

/// One call of a builtin: the argument literals and their types.
struct Case {
    args: Vec<String>,
    types: Vec<Type>,
}

/// Every accepted combination of literal types for `b` that gives one vector result.
fn generic_cases(b: Builtin) -> Vec<Case> {
    let n = match arity(b) {
        Arity::Exactly(n @ (1 | 2)) => n,
        _ => return Vec::new(),
    };
    let mut cases = Vec::new();
    let mut push = |picked: &[&(Type, &str)]| {
        let types: Vec<Type> = picked.iter().map(|(t, _)| t.clone()).collect();
        if vector_result(b, &types).is_some() {
            cases.push(Case {
                args: picked.iter().map(|(_, lit)| lit.to_string()).collect(),
                types,
            });
        }
    };
    for first in LITERALS {
        if n == 1 {
            push(&[first]);
        } else {
            for second in LITERALS {
                push(&[first, second]);
            }
        }
    }
    cases
}

fn special_cases(b: Builtin) -> Vec<Case> {
    use Builtin as B;
    let case = |args: &[&str], types: &[Type]| Case {
        args: args.iter().map(|a| a.to_string()).collect(),
        types: types.to_vec(),
    };
    let integers = [Type::Bool, Type::I8, Type::I16, Type::I32, Type::I64];
    let mut cases = Vec::new();
    match b {
        B::Index => {
            for (ty, lit) in LITERALS {
                for index in &integers[1..] {
                    cases.push(case(
                        &[lit, &format!("0:{index}")],
                        &[ty.clone(), index.clone()],
                    ));
                }
            }
        }
        B::DatetimeAdd | B::DatetimeSub => {
            for (ty, lit) in LITERALS.iter().filter(|(t, _)| t.is_temporal()) {
                let unit = match ty {
                    Type::Month | Type::Date | Type::Dt => "`year:sym",
                    _ => "`minute:sym",
                };
                for amount in &integers[1..] {
                    cases.push(case(
                        &[lit, &format!("2:{amount}"), unit],
                        &[ty.clone(), amount.clone(), Type::Sym],
                    ));
                }
            }
        }
        B::SubString => {
            for (ty, lit) in LITERALS
                .iter()
                .filter(|(t, _)| matches!(t, Type::Sym | Type::Str))
            {
                cases.push(case(&[lit, "(1,2):i64"], &[ty.clone(), Type::I64]));
            }
        }
        _ => {}
    }
    cases
        .into_iter()
        .filter(|c| vector_result(b, &c.types).is_some())
        .collect()
}

fn cases(b: Builtin) -> Vec<Case> {
    if needs_special_arguments(b) {
        special_cases(b)
    } else {
        generic_cases(b)
    }
}

/// `main` computing every case into `r0, r1, …` and returning them as one list.
fn program(b: Builtin, cases: &[Case]) -> String {
    let mut body = String::new();
    for (i, case) in cases.iter().enumerate() {
        body += &format!("        r{i}:? = @{b}({});\n", case.args.join(", "));
    }
    let results: Vec<String> = (0..cases.len()).map(|i| format!("r{i}")).collect();
    format!(
        "module types {{\n    import Builtin.*;\n    def main() : list<?> {{\n{body}        \
         all:list<?> = @list({});\n        return all;\n    }}\n}}\n",
        results.join(", ")
    )
}

/// The type `--emit typed` gives each `r{i}`.
fn static_types(typed: &TypedProgram, count: usize) -> Vec<Type> {
    let main = &typed.functions[typed.entry.0];
    (0..count)
        .map(|i| {
            let name = format!("r{i}");
            main.locals
                .iter()
                .find(|local| local.name == name)
                .map(|local| local.ty.clone())
                .unwrap_or_else(|| panic!("no local {name}"))
        })
        .collect()
}

/// The types of the values of the returned list's cells.
fn value_types(values: &[Value]) -> Vec<Type> {
    match values {
        [Value::List(list)] => match list {
            List::Flat { .. } | List::Mixed(_) => list.cells().iter().map(Value::ty).collect(),
        },
        other => panic!("expected one list, got {other:?}"),
    }
}

fn run_cpu(source: &str) -> Result<Vec<Value>, String> {
    let c = compile("types.hir", source, Stage::Plan);
    if c.failed() {
        return Err(c.render_diagnostics());
    }
    let plan = c.plan.as_ref().ok_or("no plan")?;
    interp::run(plan, &Database::new(), &mut Vec::new()).map_err(|e| e.to_string())
}

fn run_gpu(source: &str, device: &horsec_runtime::gpu::Device) -> Result<Vec<Value>, String> {
    let c = compile_for("types.hir", source, Stage::Plan, Target::Gpu);
    if c.failed() {
        return Err(c.render_diagnostics());
    }
    let plan = c.plan.as_ref().ok_or("no plan")?;
    let mut engine = GpuEngine::new(device);
    interp::run_with(
        plan,
        &Database::new(),
        &mut Vec::new(),
        &mut engine,
        &mut Profile::new(),
    )
    .map_err(|e| e.to_string())
}

/// Checks every builtin on one backend; returns the disagreements, one line each.
fn disagreements(backend: &str, run: impl Fn(&str) -> Result<Vec<Value>, String>) -> Vec<String> {
    let mut found = Vec::new();
    let mut checked = 0;
    for &b in Builtin::ALL {
        let cases = cases(b);
        if cases.is_empty() {
            continue;
        }
        let source = program(b, &cases);
        let typed = compile("types.hir", &source, Stage::Analyze);
        assert!(!typed.failed(), "@{b}:\n{}", typed.render_diagnostics());
        let expected = static_types(typed.typed.as_ref().expect("typed"), cases.len());
        let values = match run(&source) {
            Ok(values) => values,
            Err(e) => {
                found.push(format!("@{b} on the {backend}: {e}"));
                continue;
            }
        };
        let actual = value_types(&values);
        for ((case, expected), actual) in cases.iter().zip(&expected).zip(&actual) {
            // The rule, the typed program and the value must agree.
            let rule = vector_result(b, &case.types);
            if rule.as_ref() != Some(expected) || actual != expected {
                found.push(format!(
                    "@{b}({}): rule {rule:?}, --emit typed {expected}, {backend} value {actual}",
                    case.args.join(", ")
                ));
            }
            checked += 1;
        }
    }
    eprintln!("{backend}: {checked} builtin calls checked");
    assert!(checked > 500, "the enumeration found only {checked} calls");
    found
}

#[test]
fn every_builtin_result_on_the_cpu_has_the_type_the_rules_give() {
    let found = disagreements("CPU", run_cpu);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_builtin_result_on_the_gpu_has_the_type_the_rules_give() {
    let Some(device) = common::gpu() else {
        return;
    };
    let found = disagreements("GPU", |source| run_gpu(source, device));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The examples, spelled out: the types the rules (HorsePower's and rNdN's) give.
#[test]
fn date_parts_differences_and_floating_functions_have_the_documented_types() {
    let expect = |b: Builtin, args: &[Type], result: Type| {
        assert_eq!(vector_result(b, args), Some(result), "@{b}{args:?}");
    };
    expect(Builtin::DateYear, &[Type::Date], Type::I16);
    expect(Builtin::DateMonth, &[Type::Dt], Type::I16);
    expect(Builtin::DateDay, &[Type::Date], Type::I16);
    expect(Builtin::TimeHour, &[Type::Time], Type::I16);
    expect(Builtin::TimeMill, &[Type::Dt], Type::I16);
    expect(Builtin::Minus, &[Type::Date, Type::Date], Type::I32);
    expect(Builtin::Minus, &[Type::Dt, Type::Dt], Type::I64);
    expect(Builtin::DatetimeDiff, &[Type::Date, Type::Date], Type::I32);
    expect(Builtin::Sqrt, &[Type::I32], Type::F32);
    expect(Builtin::Log, &[Type::I64], Type::F64);
    expect(Builtin::Recip, &[Type::I16], Type::F32);
    expect(Builtin::Signum, &[Type::F64], Type::I16);
    expect(Builtin::Sum, &[Type::I32], Type::I64);
    expect(Builtin::Avg, &[Type::F32], Type::F64);
}
