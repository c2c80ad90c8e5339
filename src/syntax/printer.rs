//! Prints an AST back as HorseIR, in a canonical layout: four-space indentation, one
//! statement per line, every `if`/`while`/`repeat` body braced. Parsing the output gives the
//! same AST again (spans aside).

use horsec_runtime::temporal::{civil_from_days, month_from_code};
use horsec_runtime::types::Type;

use super::ast::*;

/// The program as HorseIR source text.
pub fn print_program(program: &Program) -> String {
    let mut printer = Printer::default();
    for (index, module) in program.modules.iter().enumerate() {
        if index > 0 {
            printer.out.push('\n');
        }
        printer.module(module);
    }
    printer.out
}

/// A literal as HorseIR source text (`1:i32`, `` (`a,`b):sym ``).
pub fn print_literal(literal: &Literal) -> String {
    let values: Vec<String> = literal
        .values
        .iter()
        .map(|value| print_value(value, &literal.ty.ty))
        .collect();
    if literal.parenthesized || values.len() != 1 {
        format!("({}):{}", values.join(", "), literal.ty.ty)
    } else {
        format!("{}:{}", values.join(""), literal.ty.ty)
    }
}

#[derive(Default)]
struct Printer {
    out: String,
    depth: usize,
}

impl Printer {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn module(&mut self, module: &Module) {
        self.line(&format!("module {} {{", module.name.name));
        self.depth += 1;
        for item in &module.items {
            match item {
                Item::Import(import) => self.line(&import_text(import)),
                Item::Global(global) => self.line(&format!(
                    "global {}:{} = {};",
                    global.name.name,
                    global.ty.ty,
                    operand(&global.value)
                )),
                Item::Function(function) => self.function(function),
            }
        }
        self.depth -= 1;
        self.line("}");
    }

    fn function(&mut self, function: &Function) {
        let kind = match function.kind {
            FunctionKind::Def => "def",
            FunctionKind::Kernel => "kernel",
        };
        let params: Vec<String> = function
            .params
            .iter()
            .map(|p| format!("{}:{}", p.name.name, p.ty.ty))
            .collect();
        let returns = if function.returns.is_empty() {
            String::new()
        } else {
            let types: Vec<String> = function.returns.iter().map(|t| t.ty.to_string()).collect();
            format!(" : {}", types.join(", "))
        };
        let header = format!(
            "{kind} {}({}){returns} {{",
            function.name.name,
            params.join(", ")
        );
        self.block(&header, &function.body, "}");
    }

    /// `header` line, the block's statements one level deeper, then `footer`.
    fn block(&mut self, header: &str, block: &Block, footer: &str) {
        self.line(header);
        self.depth += 1;
        for stmt in &block.stmts {
            self.stmt(stmt);
        }
        self.depth -= 1;
        self.line(footer);
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Var { names, ty } => {
                let names: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
                self.line(&format!("var {}:{};", names.join(", "), ty.ty));
            }
            StmtKind::Assign { targets, expr } => {
                let targets: Vec<String> = targets.iter().map(target).collect();
                self.line(&format!("{} = {};", targets.join(", "), expression(expr)));
            }
            StmtKind::Expr(expr) => self.line(&format!("{};", expression(expr))),
            StmtKind::Return(values) if values.is_empty() => self.line("return;"),
            StmtKind::Return(values) => {
                let values: Vec<String> = values.iter().map(operand).collect();
                self.line(&format!("return {};", values.join(", ")));
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let header = format!("if ({}) {{", operand(cond));
                match else_block {
                    Some(else_block) => {
                        self.block(&header, then_block, "}");
                        self.block("else {", else_block, "}");
                    }
                    None => self.block(&header, then_block, "}"),
                }
            }
            StmtKind::While { cond, body } => {
                self.block(&format!("while ({}) {{", operand(cond)), body, "}");
            }
            StmtKind::Repeat { count, body } => {
                self.block(&format!("repeat ({}) {{", operand(count)), body, "}");
            }
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
        }
    }
}

fn import_text(import: &Import) -> String {
    match &import.names {
        ImportNames::All => format!("import {}.*;", import.module.name),
        ImportNames::Some(names) if names.len() == 1 => {
            format!("import {}.{};", import.module.name, names[0].name)
        }
        ImportNames::Some(names) => {
            let names: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
            format!("import {}.{{{}}};", import.module.name, names.join(", "))
        }
    }
}

fn target(target: &Target) -> String {
    match target {
        Target::Name { name, ty: Some(ty) } => format!("{}:{}", name.name, ty.ty),
        Target::Name { name, ty: None } => name.name.clone(),
        Target::Discard { ty: Some(ty), .. } => format!("_:{}", ty.ty),
        Target::Discard { ty: None, .. } => "_".to_string(),
    }
}

fn expression(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Call(call) => {
            let args: Vec<String> = call
                .args
                .iter()
                .map(|arg| match arg {
                    Arg::Operand(o) => operand(o),
                    Arg::Function(f) => format!("@{}", qualified(f)),
                })
                .collect();
            format!("@{}({})", qualified(&call.callee), args.join(", "))
        }
        ExprKind::CheckCast(inner, ty) => format!("check_cast({}, {})", expression(inner), ty.ty),
        ExprKind::Operand(o) => operand(o),
    }
}

fn qualified(name: &QualifiedName) -> String {
    match &name.module {
        Some(module) => format!("{}.{}", module.name, name.name.name),
        None => name.name.name.clone(),
    }
}

fn operand(operand: &Operand) -> String {
    match operand {
        Operand::Name(name) => name.name.clone(),
        Operand::Literal(literal) => print_literal(literal),
    }
}

fn print_value(value: &LiteralValue, ty: &Type) -> String {
    match value {
        LiteralValue::Bool(b) => u8::from(*b).to_string(),
        LiteralValue::Char(c) => format!("'{}'", escape_char(*c)),
        LiteralValue::Int(i) => i.to_string(),
        LiteralValue::Float(f) => float(*f),
        LiteralValue::Complex { re, im } => {
            // `{im}` carries its own `-`; a `+` is needed otherwise.
            let sign = if im.is_sign_negative() { "" } else { "+" };
            format!("{}{sign}{}i", float(*re), float(*im))
        }
        LiteralValue::Text(text) if *ty == Type::Sym && is_plain_symbol(text) => {
            format!("`{text}")
        }
        LiteralValue::Text(text) if *ty == Type::Sym => format!("`{}", quoted(text)),
        LiteralValue::Text(text) => quoted(text),
        LiteralValue::Date(days) => date(*days),
        LiteralValue::Month(code) => {
            let (year, month) = month_from_code(*code);
            format!("{year:04}-{month:02}")
        }
        LiteralValue::Minute(m) => format!("{:02}:{:02}", m / 60, m % 60),
        LiteralValue::Second(s) => format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60),
        LiteralValue::Time(ms) => clock_millis(i64::from(*ms)),
        LiteralValue::Dt(ms) => {
            let days = ms.div_euclid(86_400_000);
            let rest = ms.rem_euclid(86_400_000);
            let days = i32::try_from(days).unwrap_or_default();
            format!("{}T{}", date(days), clock_millis(rest))
        }
    }
}

fn date(days: i32) -> String {
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

fn clock_millis(ms: i64) -> String {
    let seconds = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        ms % 1000
    )
}

/// A float that lexes back to the same value: Rust's `Display` gives the shortest exact
/// digits and never an exponent (which HorseIR lacks).
fn float(value: f64) -> String {
    let text = value.to_string();
    if text.contains('.') {
        text
    } else {
        text + ".0"
    }
}

fn escape_char(c: u8) -> String {
    match c {
        b'\'' => "\\'".to_string(),
        other => escape_common(char::from(other)),
    }
}

/// The escapes shared by chars and strings; printable characters stay as they are.
fn escape_common(c: char) -> String {
    match c {
        '\\' => "\\\\".to_string(),
        '\u{7}' => "\\a".to_string(),
        '\u{8}' => "\\b".to_string(),
        '\u{c}' => "\\f".to_string(),
        '\n' => "\\n".to_string(),
        '\r' => "\\r".to_string(),
        '\t' => "\\t".to_string(),
        '\u{b}' => "\\v".to_string(),
        other => other.to_string(),
    }
}

fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            other => out.push_str(&escape_common(other)),
        }
    }
    out.push('"');
    out
}

fn is_plain_symbol(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;

    fn reprint(source: &str) -> String {
        let (program, diags) = parse(source);
        let program = program.unwrap_or_else(|| panic!("{source}: {diags:?}"));
        print_program(&program)
    }

    #[test]
    fn canonical_layout() {
        let source = "module m{import Builtin.*;global g:i32=1:i32;\
            def f(x:i32,y:list<?>):i32,? {if(x) break; else {y = @plus(x, 1:i32);}\
            while(x){continue;} repeat(3:i64) x:i32, _ = @g(@sum, x); return x, y;}}";
        assert_eq!(
            reprint(source),
            "module m {\n    import Builtin.*;\n    global g:i32 = 1:i32;\n    \
             def f(x:i32, y:list<?>) : i32, ? {\n        if (x) {\n            break;\n        \
             }\n        else {\n            y = @plus(x, 1:i32);\n        }\n        \
             while (x) {\n            continue;\n        }\n        repeat (3:i64) {\n            \
             x:i32, _ = @g(@sum, x);\n        }\n        return x, y;\n    }\n}\n"
        );
    }

    #[test]
    fn literals_print_in_source_form() {
        let source = r#"module m { def main() {
            a:? = (1, 2):i8; b:? = (5):i32; c:? = ():f64; d:? = 0.5:f64; e:? = 1.5-2i:complex;
            f:? = 'x':char; g:? = "a\"b\n":str; h:? = (`abc, `"x y"):sym;
            i:? = 2019-02-28:date; j:? = 2019-12:month; k:? = 01:02:minute;
            l:? = 23:59:58:second; n:? = 00:00:01.500:time; o:? = 1969-12-31T23:59:59.999:dt;
            p:? = (1, 0):bool; q:? = 0.0000001:f64; r:? = check_cast(@Builtin.f(), i32);
        } }"#;
        let printed = reprint(source);
        for expected in [
            "(1, 2):i8",
            "(5):i32",
            "():f64",
            "0.5:f64",
            "1.5-2.0i:complex",
            "'x':char",
            r#""a\"b\n":str"#,
            r#"(`abc, `"x y"):sym"#,
            "2019-02-28:date",
            "2019-12:month",
            "01:02:minute",
            "23:59:58:second",
            "00:00:01.500:time",
            "1969-12-31T23:59:59.999:dt",
            "(1, 0):bool",
            "0.0000001:f64",
            "check_cast(@Builtin.f(), i32)",
        ] {
            assert!(
                printed.contains(expected),
                "{expected} missing in\n{printed}"
            );
        }
        assert_eq!(reprint(&printed), printed);
    }
}
