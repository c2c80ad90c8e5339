//! Semantic analysis, specified on small programs: each test parses HorseIR text, analyzes it
//! and states the diagnostics (`line:col: severity: message`) or the typed result.

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use super::typed::{Callee, ExprKind, StmtKind, TypedProgram};
use super::{analyze, print_typed};
use crate::diag::{Diagnostic, Severity, SourceFile};
use crate::syntax::{ast, parse};

/// Analyzes `text`: the typed program (when there is no error) and every diagnostic as
/// `line:col: severity: message`.
fn check(text: &str) -> (Option<TypedProgram>, Vec<String>) {
    let (program, diags) = parse(text);
    let file = SourceFile::new("test.hir", text);
    let Some(program) = program else {
        panic!("does not parse:\n{}", file.render_all(&diags));
    };
    let (typed, diags) = analyze(&program);
    (typed, located(&file, &diags))
}

fn located(file: &SourceFile, diags: &[Diagnostic]) -> Vec<String> {
    diags
        .iter()
        .map(|d| {
            let (line, col) = file.line_col(d.span.start);
            let severity = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            format!("{line}:{col}: {severity}: {}", d.message)
        })
        .collect()
}

/// Analyzes `text`, which must have no diagnostic at all.
fn clean(text: &str) -> TypedProgram {
    let (typed, diags) = check(text);
    assert_eq!(diags, Vec::<String>::new());
    typed.unwrap_or_else(|| panic!("no typed program"))
}

/// The diagnostics of `text`, which must be rejected.
fn rejected(text: &str) -> Vec<String> {
    let (typed, diags) = check(text);
    assert!(typed.is_none(), "accepted with {diags:?}");
    diags
}

/// `main`'s body wrapped in a module importing the builtins.
fn main_body(body: &str) -> String {
    format!("module m {{\n  import Builtin.*;\n  def main() {{\n{body}\n  }}\n}}\n")
}

/// The final type of local `name` of function `function`.
fn local_type(program: &TypedProgram, function: &str, name: &str) -> Type {
    let f = program
        .functions
        .iter()
        .find(|f| f.name == function)
        .unwrap_or_else(|| panic!("no function {function}"));
    f.locals
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no local {name}"))
        .ty
        .clone()
}

// ---- inference ---------------------------------------------------------------------------

#[test]
fn every_wildcard_declaration_takes_the_type_of_its_value() {
    let p = clean(&main_body(
        "    t0:? = @load_table(`lineitem:sym);
    t1:date = check_cast(@column_value(t0, `l_shipdate:sym), date);
    t2:? = @geq(t1, 1994-01-01:date);
    t3:? = @list(t1, t1);
    t4:? = @group(t3);
    t5:list<?> = @values(t4);
    t6:? = @each(@len, t5);",
    ));
    assert_eq!(local_type(&p, "main", "t0"), Type::Table);
    assert_eq!(local_type(&p, "main", "t2"), Type::Bool);
    assert_eq!(local_type(&p, "main", "t3").to_string(), "list<date>");
    assert_eq!(
        local_type(&p, "main", "t4").to_string(),
        "dict<i64,list<i64>>"
    );
    assert_eq!(local_type(&p, "main", "t5").to_string(), "list<i64>");
    assert_eq!(local_type(&p, "main", "t6").to_string(), "list<i64>");
}

#[test]
fn a_var_of_unknown_type_is_inferred_from_its_first_assignment() {
    let p = clean(&main_body("    var x:?;\n    x = @plus(1:i32, 2:i64);"));
    assert_eq!(local_type(&p, "main", "x"), Type::I64);
}

#[test]
fn globals_are_read_with_their_declared_type() {
    // HorsePower pass/t13.
    let p = clean(
        "module m { import Builtin.*; global gg:i16 = 1:i16;
           def main() { z0:? = @mul(1:i32, 2:i32); z2:? = @minus(z0, gg); } }",
    );
    assert_eq!(local_type(&p, "main", "z2"), Type::I32);
}

#[test]
fn wildcard_return_types_are_inferred_from_the_returns() {
    // HorsePower pass/t37 declares `def main():?`.
    let p = clean("module m { def main() : ? { x:i64 = @rand(100:i32); return x; } }");
    assert_eq!(p.functions[0].returns, vec![Type::I64]);
}

// ---- names -------------------------------------------------------------------------------

#[test]
fn calls_resolve_to_the_module_then_the_last_import_then_the_builtins() {
    // HorsePower pass/t11.
    let p = clean(
        "module funcA { def foo() {} def bar() {} }
         module funcB { def foo() {} def bar() {} }
         module funcC { import funcA.*; import funcB.*;
           def main() { @foo(); @funcA.foo(); @bar(); @funcB.bar(); x:i64 = @len(1:i32); }
           def foo() {} }",
    );
    let main = &p.functions[p.entry.0];
    let callees: Vec<String> = main
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Expr(e) | StmtKind::Assign { expr: e, .. } => match &e.kind {
                ExprKind::Call { callee, .. } => Some(match callee {
                    Callee::Function(id) => p.functions[id.0].qualified_name(),
                    Callee::Builtin(b) => format!("Builtin.{b}"),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        callees,
        [
            "funcC.foo",
            "funcA.foo",
            "funcB.bar",
            "funcB.bar",
            "Builtin.len"
        ]
    );
}

#[test]
fn add_is_an_old_name_of_plus_unless_a_user_function_is_called_add() {
    // HorsePower pass/t10 and pass/t12.
    let p = clean(&main_body("    y:i32 = @add(1:i32, 2:i32);"));
    let StmtKind::Assign { expr, .. } = &p.functions[0].body[0].kind else {
        panic!("not an assignment")
    };
    assert!(matches!(
        expr.kind,
        ExprKind::Call {
            callee: Callee::Builtin(Builtin::Plus),
            ..
        }
    ));
    let (typed, diags) = check(
        "module dummy { def add(x:i32, y:i32) {} def main() { z0:i32 = @add(1:i32, 2:i32); } }",
    );
    assert!(typed.is_some());
    assert_eq!(
        diags,
        ["1:63: warning: `@dummy.add` declares no result to assign"]
    );
}

#[test]
fn importing_a_module_that_does_not_exist_is_a_warning() {
    // HorsePower pass/t5.
    let (typed, diags) = check("module m { import foo.z; import baz.{a,b}; def main() {} }");
    assert!(typed.is_some());
    assert_eq!(
        diags,
        [
            "1:19: warning: module `foo` is not defined; the import has no effect",
            "1:33: warning: module `baz` is not defined; the import has no effect",
        ]
    );
}

#[test]
fn unknown_functions_and_modules_are_errors_naming_them() {
    assert_eq!(
        rejected(&main_body("    @nothing(1:i32);")),
        ["4:6: error: unknown function `@nothing`"]
    );
    assert_eq!(
        rejected(&main_body("    @Builtin.nothing(1:i32);")),
        ["4:6: error: there is no builtin `nothing`"]
    );
    assert_eq!(
        rejected("module m { def main() { @q.f(); } }"),
        ["1:26: error: unknown module `q` in `@q.f`"]
    );
}

#[test]
fn a_program_needs_main() {
    let (typed, diags) = check("module m { def f() {} }");
    assert!(typed.is_none());
    assert_eq!(
        diags,
        ["1:1: error: no `main` function: a program needs one as its entry point"]
    );
    // An empty program (the grammar needs a module, so built by hand).
    let (typed, diags) = analyze(&ast::Program {
        modules: Vec::new(),
    });
    assert!(typed.is_none());
    assert_eq!(diags[0].span, ast::Span::new(0, 0));
}

#[test]
fn duplicate_functions_and_modules_are_errors() {
    assert_eq!(
        rejected("module m { def main() {} def main() {} }"),
        ["1:30: error: function `main` is defined twice in module `m`"]
    );
    assert_eq!(
        rejected("module m { def main() {} } module m { }"),
        ["1:35: error: module `m` is defined twice"]
    );
}

// ---- declarations and scopes ---------------------------------------------------------------

#[test]
fn assigning_an_undeclared_name_is_an_error_naming_it() {
    // HorsePower fail/t4.
    assert_eq!(
        rejected("module m { def main() { k0 = 1:i32; } }"),
        ["1:25: error: `k0` is not declared: declare it with `k0:type = …` or `var k0:type;`"]
    );
}

#[test]
fn a_name_is_declared_once_per_block_but_may_shadow_a_parameter() {
    // HorsePower fail/t10 and pass/t9.
    assert_eq!(
        rejected("module m { def main() { x:i32 = 1:i32; x:i32 = 2:i32; } }"),
        ["1:40: error: `x` is already declared in this block: a block declares a name once"]
    );
    clean("module m { def f(x:i32) { x:i32 = 1:i32; } def main() {} }");
}

#[test]
fn branches_are_scopes() {
    // HorsePower pass/t24 and fail/t11.
    let both = "x:bool = 0:bool; if (x) { z:i32 = 0:i32; } else { z:i32 = 1:i32; }";
    clean(&format!("module m {{ def main() {{ {both} }} }}"));
    assert_eq!(
        rejected(&format!(
            "module m {{ def main() : i32 {{ {both} return z; }} }}"
        )),
        ["1:105: error: `z` is not declared before this use"]
    );
}

#[test]
fn an_undeclared_name_is_reported_once() {
    assert_eq!(
        rejected(&main_body(
            "    a:i32 = @plus(q, q);\n    b:i32 = @plus(q, 1:i32);"
        )),
        ["4:19: error: `q` is not declared before this use"]
    );
}

#[test]
fn underscore_discards_but_is_neither_typed_nor_read() {
    // HorsePower pass/t26, fail/t6, fail/t7, fail/t8.
    let two = "def foo() : i32, i32 { return 0:i32, 1:i32; }";
    clean(&format!(
        "module m {{ {two} def main() : i32 {{ x:i32, _ = @foo(); return x; }} }}"
    ));
    assert_eq!(
        rejected(&format!(
            "module m {{ {two} def main() {{ x:i32, _:i32 = @foo(); }} }}"
        )),
        ["1:80: error: `_` discards a value and cannot be declared with a type: write `_` alone"]
    );
    assert_eq!(
        rejected("module m { def main() { x:i32 = _; } }"),
        ["1:33: error: `_` is not a value: it only discards a result on the left of `=`"]
    );
}

// ---- definite assignment -------------------------------------------------------------------

#[test]
fn reading_a_variable_no_assignment_reaches_is_an_error() {
    // HorsePower fail/t5.
    assert_eq!(
        rejected("module m { def main() { var x:i32; m:i32 = x; } }"),
        ["1:44: error: `x` is used before any value is assigned to it"]
    );
}

#[test]
fn an_assignment_on_some_path_is_enough() {
    // HorsePower pass/t27–t31: assigned in a branch or a loop body, read after.
    clean("module m { def main() : i32 { x:bool = 0:bool; var z:i32; if (x) { z = 0:i32; } return z; } }");
    clean("module m { def main() : i32 { x:bool = 0:bool; var z:i32; while (x) { z = 0:i32; } return z; } }");
    clean("module m { def main() : i32 { var z:i32; repeat (3:i32) { if (1:bool) break; z = 0:i32; } return z; } }");
}

#[test]
fn an_assignment_later_in_a_loop_reaches_the_next_iteration() {
    clean(
        "module m { import Builtin.*; def main() { var z:i32; x:bool = 1:bool;
           while (x) { x = @eq(z, 1:i32); z = 1:i32; } } }",
    );
    // Without the loop it does not.
    assert_eq!(
        rejected("module m { import Builtin.*; def main() { var z:i32; x:bool = @eq(z, 1:i32); z = 1:i32; } }"),
        ["1:67: error: `z` is used before any value is assigned to it"]
    );
}

// ---- type checks ---------------------------------------------------------------------------

#[test]
fn numeric_conversions_are_warnings_and_other_mismatches_errors() {
    // HorsePower pass/t9, pass/t34.
    let (typed, diags) = check(&main_body(
        "    x:i32 = 1:i32;\n    new1:f32 = @plus(x, 2.5:f64);\n    x2:i32 = @list(x, x);",
    ));
    assert!(typed.is_some());
    assert_eq!(
        diags,
        [
            "5:5: warning: `new1` is f32 but the value is f64: it is converted",
            "6:5: warning: `x2` is i32 but the value is list<i32>: it is converted",
        ]
    );
    assert_eq!(
        rejected(&main_body("    t:i32 = @load_table(`nation:sym);")),
        ["4:5: error: cannot assign a value of type table to `t` of type i32"]
    );
    assert_eq!(
        rejected(&main_body("    t:i32 = `a:sym;")),
        ["4:5: error: cannot assign a value of type sym to `t` of type i32"]
    );
}

#[test]
fn builtin_argument_errors_point_at_the_argument() {
    assert_eq!(
        rejected(&main_body("    m:bool = @and(1:bool, 2:i32);")),
        ["4:27: error: `@and` expects a bool vector as argument 2, found i32"]
    );
}

#[test]
fn an_error_does_not_cascade_through_the_values_it_leaves_unknown() {
    assert_eq!(
        rejected(&main_body(
            "    a:? = @plus(`x:sym, 1:i32);\n    b:? = @mul(a, 2:i32);\n    c:bool = @not(b);"
        )),
        ["4:11: error: `@plus` cannot be applied to sym and i32"]
    );
}

#[test]
fn returns_are_checked_against_the_declaration() {
    // HorsePower fail/t12, fail/t13, pass/t0, pass/t22.
    assert_eq!(
        rejected("module m { def main() { z:i32 = 1:i32; return z; } }"),
        ["1:40: error: function `main` declares no return type, but this returns 1 value"]
    );
    assert_eq!(
        rejected("module m { def main() : table { z:i32 = 1:i32; return z; } }"),
        ["1:55: error: function `main` returns table, but this value is i32"]
    );
    assert_eq!(
        rejected("module m { def main() : i32, i32 { return 1:i32; } }"),
        ["1:36: error: function `main` returns 2 values, but this returns 1"]
    );
    clean("module m { def main() : table { } }");
    clean("module m { def main() : i32 { return 1:i32; x:i32 = 2:i32; } }");
}

#[test]
fn calls_of_user_functions_check_count_and_types() {
    let f = "def f(x:i32) : i32 { return x; }";
    assert_eq!(
        rejected(&format!(
            "module m {{ {f} def main() {{ y:i32 = @f(1:i32, 2:i32); }} }}"
        )),
        ["1:66: error: `@m.f` takes 1 argument, found 2"]
    );
    assert_eq!(
        rejected(&format!(
            "module m {{ {f} def main() {{ y:i32 = @f(`a:sym); }} }}"
        )),
        ["1:69: error: `@m.f` expects i32 as argument 1, found sym"]
    );
    assert_eq!(
        rejected(&format!(
            "module m {{ {f} def main() {{ y:i32, z:i32 = @f(1:i32); }} }}"
        )),
        ["1:73: error: 2 targets but `@m.f` gives 1 value"]
    );
}

#[test]
fn conditions_are_bool_and_an_integer_is_a_warning() {
    // HorsePower pass/t10.
    let (typed, diags) = check("module m { def main() { z:i32 = 1:i32; if (z) { } } }");
    assert!(typed.is_some());
    assert_eq!(
        diags,
        ["1:44: warning: the `if` condition is i32, not bool: nonzero counts as true"]
    );
    assert_eq!(
        rejected("module m { def main() { s:sym = `a:sym; while (s) { } } }"),
        ["1:48: error: the `while` condition must be bool, found sym"]
    );
    assert_eq!(
        rejected("module m { def main() { repeat (1.5:f64) { } } }"),
        ["1:33: error: the `repeat` count must be an integer, found f64"]
    );
}

#[test]
fn break_and_continue_belong_in_loops() {
    assert_eq!(
        rejected("module m { def main() { break; } }"),
        ["1:25: error: `break` outside of a `while` or `repeat` loop"]
    );
}

#[test]
fn check_cast_types_unknown_values_and_rejects_certain_failures() {
    clean(&main_body(
        "    t:table = @load_table(`a:sym);\n    c:f64 = check_cast(@column_value(t, `c:sym), f64);",
    ));
    assert_eq!(
        rejected(&main_body("    c:f64 = check_cast(1:i32, f64);")),
        ["4:31: error: check_cast to f64 of a value of type i32 always fails"]
    );
}

// ---- the typed printer ---------------------------------------------------------------------

#[test]
fn the_typed_print_shows_every_type_and_qualifies_user_calls() {
    let p = clean(
        "module m {
  import Builtin.*;
  global g:i64 = 10:i64;
  def inc(x:i64) : i64 { y:? = @plus(x, g); return y; }
  def main() : i64 {
    var a, b:?;
    t:? = @inc(1:i64);
    d:? = @geq(1995-03-15:date, 1994-01-01:date);
    if (d) { a = t; } else { a = 0:i64; }
    return a;
  }
}",
    );
    assert_eq!(
        print_typed(&p),
        "module m {
    global g:i64 = 10:i64;
    def inc(x:i64) : i64 {
        y:i64 = @plus(x, g);
        return y;
    }
    def main() : i64 {
        var a:i64;
        var b:?;
        t:i64 = @m.inc(1:i64);
        d:bool = @geq(1995-03-15:date, 1994-01-01:date);
        if (d) {
            a = t;
        }
        else {
            a = 0:i64;
        }
        return a;
    }
}
"
    );
}

#[test]
fn a_builtin_hidden_by_a_user_function_prints_qualified() {
    let p = clean(
        "module m { def len(x:i32) : i32 { return x; }
           def main() { a:i64 = @Builtin.len(1:i32); b:i32 = @len(1:i32); } }",
    );
    let printed = print_typed(&p);
    assert!(
        printed.contains("a:i64 = @Builtin.len(1:i32);"),
        "{printed}"
    );
    assert!(printed.contains("b:i32 = @m.len(1:i32);"), "{printed}");
}
