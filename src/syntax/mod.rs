//! Front end: lexer (logos), parser (lalrpop grammar in `grammar/`), AST and its printer.

pub mod ast;
