//! Parser tests: every statement form, and syntax errors with their exact locations.

use horsec_runtime::types::Type;

use super::ast::*;
use super::{parse, MAX_NESTING};
use crate::diag::{Severity, SourceFile};

fn parse_ok(source: &str) -> Program {
    let (program, diags) = parse(source);
    match program {
        Some(program) => program,
        None => panic!("{source}\nfailed: {diags:#?}"),
    }
}

/// The statements of `main` in `module m { def main() { <body> } }`.
fn stmts(body: &str) -> Vec<StmtKind> {
    let program = parse_ok(&format!("module m {{ def main() {{ {body} }} }}"));
    match &program.modules[0].items[0] {
        Item::Function(f) => f.body.stmts.iter().map(|s| s.kind.clone()).collect(),
        other => panic!("not a function: {other:?}"),
    }
}

/// `line:col: message` of every error.
fn errors(source: &str) -> Vec<String> {
    let (program, diags) = parse(source);
    assert!(program.is_none(), "expected errors in {source}");
    let file = SourceFile::new("t.hir", source);
    diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            let (line, col) = file.line_col(d.span.start);
            format!("{line}:{col}: {}", d.message)
        })
        .collect()
}

fn name(stmt_name: &Ident) -> &str {
    &stmt_name.name
}

fn literal(operand: &Operand) -> &Literal {
    match operand {
        Operand::Literal(l) => l,
        Operand::Name(n) => panic!("not a literal: {n:?}"),
    }
}

#[test]
fn modules_imports_globals_and_functions() {
    let program = parse_ok(
        "module a { import Builtin.*; import foo.z; import baz.{a, b, if}; \
         global g:i32 = 1:i32; \
         def f(x:i32, y:list<?>) : i32, ? { } kernel k() : ? { } def main() { } } \
         module b { }",
    );
    assert_eq!(program.modules.len(), 2);
    let items = &program.modules[0].items;
    assert!(
        matches!(&items[0], Item::Import(Import { module, names: ImportNames::All, .. })
        if module.name == "Builtin")
    );
    match &items[2] {
        Item::Import(Import {
            names: ImportNames::Some(names),
            ..
        }) => {
            let names: Vec<&str> = names.iter().map(name).collect();
            assert_eq!(names, ["a", "b", "if"]);
        }
        other => panic!("{other:?}"),
    }
    match &items[3] {
        Item::Global(g) => {
            assert_eq!(g.name.name, "g");
            assert_eq!(g.ty.ty, Type::I32);
            assert_eq!(literal(&g.value).values, vec![LiteralValue::Int(1)]);
        }
        other => panic!("{other:?}"),
    }
    match &items[4] {
        Item::Function(f) => {
            assert_eq!(f.kind, FunctionKind::Def);
            assert_eq!(f.params.len(), 2);
            assert_eq!(f.params[1].ty.ty, Type::List(Box::new(Type::Wildcard)));
            let returns: Vec<Type> = f.returns.iter().map(|t| t.ty.clone()).collect();
            assert_eq!(returns, [Type::I32, Type::Wildcard]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&items[5], Item::Function(f) if f.kind == FunctionKind::Kernel));
}

#[test]
fn types() {
    let program = parse_ok(
        "module m { def f(a:dict<sym, list<i64>>, b:enum<i32>, c:table, d:ktable, e:func) { } }",
    );
    let Item::Function(f) = &program.modules[0].items[0] else {
        panic!("not a function")
    };
    let types: Vec<Type> = f.params.iter().map(|p| p.ty.ty.clone()).collect();
    assert_eq!(
        types,
        [
            Type::Dict(
                Box::new(Type::Sym),
                Box::new(Type::List(Box::new(Type::I64)))
            ),
            Type::Enum(Box::new(Type::I32)),
            Type::Table,
            Type::KTable,
            Type::Func
        ]
    );
}

#[test]
fn var_declarations() {
    assert_eq!(
        stmts("var y, z:f32;"),
        [StmtKind::Var {
            names: vec![
                Ident {
                    name: "y".into(),
                    span: Span::new(28, 29)
                },
                Ident {
                    name: "z".into(),
                    span: Span::new(31, 32)
                }
            ],
            ty: TypeExpr {
                ty: Type::F32,
                span: Span::new(33, 36)
            }
        }]
    );
}

#[test]
fn assignments_with_and_without_types_and_discards() {
    let [StmtKind::Assign { targets, expr }] = &stmts("x:i32, _, y = @foo();")[..] else {
        panic!("not one assignment")
    };
    assert!(matches!(&targets[0], Target::Name { name, ty: Some(t) }
        if name.name == "x" && t.ty == Type::I32));
    assert!(matches!(&targets[1], Target::Discard { ty: None, .. }));
    assert!(matches!(&targets[2], Target::Name { name, ty: None } if name.name == "y"));
    assert!(matches!(&expr.kind, ExprKind::Call(c) if c.callee.name.name == "foo"));
    // `_:T` parses; semantic analysis reports it.
    assert!(matches!(&stmts("_:i32 = 1:i32;")[0],
        StmtKind::Assign { targets, .. } if matches!(targets[0], Target::Discard { ty: Some(_), .. })));
}

#[test]
fn expression_statements_and_calls() {
    let kinds = stmts("@print(x); x; @Builtin.plus(1:i32, x); y:? = @each(@sum, x); z:? = @join_index(@eq, @Builtin.lt, a, b); @if();");
    assert_eq!(kinds.len(), 6);
    let StmtKind::Expr(Expr {
        kind: ExprKind::Call(call),
        ..
    }) = &kinds[2]
    else {
        panic!("{:?}", kinds[2])
    };
    assert_eq!(call.callee.module.as_ref().map(name), Some("Builtin"));
    assert_eq!(call.callee.name.name, "plus");
    let StmtKind::Assign { expr, .. } = &kinds[4] else {
        panic!("{:?}", kinds[4])
    };
    let ExprKind::Call(call) = &expr.kind else {
        panic!("not a call")
    };
    assert!(matches!(&call.args[0], Arg::Function(f) if f.name.name == "eq"));
    assert!(matches!(&call.args[1], Arg::Function(f)
        if f.module.as_ref().map(name) == Some("Builtin") && f.name.name == "lt"));
    assert!(matches!(&call.args[2], Arg::Operand(Operand::Name(n)) if n.name == "a"));
    assert!(
        matches!(&kinds[5], StmtKind::Expr(Expr { kind: ExprKind::Call(c), .. })
        if c.callee.name.name == "if")
    );
}

#[test]
fn check_cast_wraps_a_call_or_an_operand() {
    let kinds =
        stmts("a:i32 = check_cast(@column_value(t, `c:sym), i32); b:? = check_cast(x, enum<i32>);");
    let StmtKind::Assign { expr, .. } = &kinds[0] else {
        panic!()
    };
    assert!(matches!(&expr.kind, ExprKind::CheckCast(inner, ty)
        if matches!(inner.kind, ExprKind::Call(_)) && ty.ty == Type::I32));
    let StmtKind::Assign { expr, .. } = &kinds[1] else {
        panic!()
    };
    assert!(matches!(&expr.kind, ExprKind::CheckCast(inner, _)
        if matches!(inner.kind, ExprKind::Operand(Operand::Name(_)))));
}

#[test]
fn returns() {
    assert_eq!(stmts("return;"), [StmtKind::Return(vec![])]);
    let [StmtKind::Return(values)] = &stmts("return a, 1:i32;")[..] else {
        panic!()
    };
    assert_eq!(values.len(), 2);
}

#[test]
fn control_flow() {
    let kinds = stmts(
        "if (c) { x = 1:i32; } else { x = 2:i32; } if (y) break; while (t) { continue; } \
         repeat (5:i32) x = @plus(x, 1:i32);",
    );
    assert!(
        matches!(&kinds[0], StmtKind::If { then_block, else_block: Some(e), .. }
        if then_block.stmts.len() == 1 && e.stmts.len() == 1)
    );
    assert!(
        matches!(&kinds[1], StmtKind::If { then_block, else_block: None, .. }
        if then_block.stmts[0].kind == StmtKind::Break)
    );
    assert!(matches!(&kinds[2], StmtKind::While { body, .. }
        if body.stmts[0].kind == StmtKind::Continue));
    assert!(
        matches!(&kinds[3], StmtKind::Repeat { count: Operand::Literal(_), body }
        if body.stmts.len() == 1)
    );
}

#[test]
fn dangling_else_belongs_to_the_nearest_if() {
    let kinds = stmts("if (a) if (b) x = 1:i32; else x = 2:i32;");
    let [StmtKind::If {
        then_block,
        else_block: None,
        ..
    }] = &kinds[..]
    else {
        panic!("{kinds:?}")
    };
    assert!(matches!(
        &then_block.stmts[0].kind,
        StmtKind::If {
            else_block: Some(_),
            ..
        }
    ));
    // else-if chains
    let kinds = stmts("if (a) x; else if (b) y; else { z; }");
    assert!(matches!(&kinds[0], StmtKind::If { else_block: Some(e), .. }
        if matches!(e.stmts[0].kind, StmtKind::If { else_block: Some(_), .. })));
}

#[test]
fn literal_forms_in_operands() {
    let kinds = stmts(
        "a:? = (1,2,3):i32; b:? = ():i64; c:? = (`a,`b):sym; d:? = (2010-09-01, 1010-01-31):date; \
         e:? = -1:i32; f:? = 20:15:minute; g:? = (5):i32;",
    );
    let values: Vec<&Literal> = kinds
        .iter()
        .map(|k| match k {
            StmtKind::Assign {
                expr:
                    Expr {
                        kind: ExprKind::Operand(o),
                        ..
                    },
                ..
            } => literal(o),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values[0].values.len(), 3);
    assert!(values[1].values.is_empty() && values[1].ty.ty == Type::I64);
    assert_eq!(
        values[2].values,
        [
            LiteralValue::Text("a".into()),
            LiteralValue::Text("b".into())
        ]
    );
    assert_eq!(values[3].values.len(), 2);
    assert_eq!(values[4].values, [LiteralValue::Int(-1)]);
    assert_eq!(values[5].values, [LiteralValue::Minute(20 * 60 + 15)]);
    assert!(values[6].parenthesized && !values[0].values.is_empty());
}

#[test]
fn warnings_do_not_fail_the_parse() {
    let (program, diags) = parse("module m { def main() { x:i8 = (10, 100, 200):i8; } }");
    assert!(program.is_some());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].severity, Severity::Warning);
}

#[test]
fn spans_cover_the_construct() {
    let source = "module m { def main() { x:i32 = 1:i32; } }";
    let program = parse_ok(source);
    let Item::Function(f) = &program.modules[0].items[0] else {
        panic!()
    };
    let stmt = &f.body.stmts[0];
    assert_eq!(&source[stmt.span.start..stmt.span.end], "x:i32 = 1:i32;");
    assert_eq!(
        &source[f.span.start..f.span.end],
        "def main() { x:i32 = 1:i32; }"
    );
    assert_eq!(
        &source[program.modules[0].span.start..program.modules[0].span.end],
        source
    );
}

// ---- errors ----

#[test]
fn missing_semicolon_is_reported_after_the_statement() {
    assert_eq!(
        errors("module m {\n  def main() {\n    x:i32 = 1:i32\n  }\n}\n"),
        ["3:18: expected `;`, found `}`"]
    );
}

#[test]
fn each_bad_statement_gives_one_error() {
    assert_eq!(
        errors(
            "module m {\n  def main() {\n    x:i32 = = 1:i32;\n    y:i32 = 2:i32;\n    \
             z:i32 = @f(@g(1:i32));\n    return\n  }\n}\n"
        ),
        [
            "3:13: expected a name, a literal, `check_cast`, `(` or `@`, found `=`",
            "5:18: expected `)` or `,`, found `(`",
            "7:3: expected a name, a literal, `(` or `;`, found `}`"
        ]
    );
}

#[test]
fn untyped_and_mismatched_literals() {
    assert_eq!(
        errors("module m {\n  def main() {\n    x0:i32 = (0,1):str;\n    x1:i32 = 0;\n  }\n}\n"),
        [
            "3:15: literal `0` of type i64 cannot have type str",
            "3:17: literal `1` of type i64 cannot have type str",
            "4:14: literal has no type: a literal needs a type suffix, as in `0:i64`"
        ]
    );
}

#[test]
fn unknown_types() {
    assert_eq!(
        errors("module m { def f(x:i33, y:list<i32, i32>) {} }"),
        [
            "1:20: unknown type `i33`",
            "1:27: `list` takes 1 type argument, found 2"
        ]
    );
}

#[test]
fn lexical_errors_are_located() {
    assert_eq!(
        errors("module m {\n  def main() {\n    x:month = 20196-05:month;\n  }\n}\n"),
        ["3:15: malformed month literal `20196-05`: expected the form YYYY-MM"]
    );
    assert_eq!(
        errors("module m {\n  /* open\n}\n"),
        ["2:3: unterminated block comment: `/*` has no matching `*/`"]
    );
}

#[test]
fn empty_and_junk_input() {
    assert_eq!(errors(""), ["1:1: expected `module`, found end of file"]);
    assert_eq!(
        errors("\u{0}\u{1}"),
        [
            "1:1: unexpected characters `\\0\\u{1}`",
            "1:3: expected `module`, found end of file"
        ]
    );
    assert_eq!(
        errors("module m { } }"),
        ["1:14: expected `module`, found `}`"]
    );
}

#[test]
fn deep_nesting_is_refused_before_parsing() {
    let deep_braces = format!("module m {{ def main() {}", "{".repeat(10_000));
    let errs = errors(&deep_braces);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains(&format!(
        "nesting is too deep: more than {MAX_NESTING} levels"
    )));

    let deep_type = format!(
        "module m {{ def f(x:{}i32{}) {{}} }}",
        "list<".repeat(10_000),
        ">".repeat(10_000)
    );
    assert_eq!(errors(&deep_type).len(), 1);

    let deep_ifs = format!(
        "module m {{ def main() {{ {} x; }} }}",
        "if (c) ".repeat(10_000)
    );
    assert_eq!(errors(&deep_ifs).len(), 1);

    let else_ifs = format!(
        "module m {{ def main() {{ if (c) {{}} {} }} }}",
        "else if (c) {} ".repeat(10_000)
    );
    assert_eq!(errors(&else_ifs).len(), 1);

    // Moderate nesting is fine.
    let fine = format!(
        "module m {{ def main() {{ {} x; }} }}",
        "if (c) ".repeat(100)
    );
    parse_ok(&fine);
}

#[test]
fn many_errors_are_capped() {
    let body = "x:i32 = = 1:i32;\n".repeat(200);
    let errs = errors(&format!("module m {{ def main() {{\n{body}}} }}"));
    assert_eq!(errs.len(), 51);
    assert!(errs[50].contains("too many errors: 150 more not shown"));
}
