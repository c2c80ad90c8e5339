//! The builtin type rules, family by family, as the TPC-H programs use them.

use super::*;

fn v(t: Type) -> ArgType {
    ArgType::Value(t)
}

fn f(b: Builtin) -> ArgType {
    ArgType::Function(FunctionType::Builtin(b))
}

fn one(b: Builtin, args: &[ArgType]) -> Type {
    match builtin_result(b, args) {
        Ok(types) if types.len() == 1 => types[0].clone(),
        other => panic!("@{b}: expected one result, got {other:?}"),
    }
}

fn fails(b: Builtin, args: &[ArgType]) -> RuleError {
    match builtin_result(b, args) {
        Err(e) => e,
        Ok(types) => panic!("@{b} accepted {args:?} giving {types:?}"),
    }
}

fn enum_of(t: Type) -> Type {
    Type::Enum(Box::new(t))
}

#[test]
fn arithmetic_promotes_to_the_wider_operand() {
    assert_eq!(one(Builtin::Plus, &[v(Type::I32), v(Type::F64)]), Type::F64);
    assert_eq!(
        one(Builtin::Minus, &[v(Type::I32), v(Type::F64)]),
        Type::F64
    );
    assert_eq!(one(Builtin::Mul, &[v(Type::I16), v(Type::I32)]), Type::I32);
    assert_eq!(
        one(Builtin::Plus, &[v(Type::Bool), v(Type::Bool)]),
        Type::I16
    );
    let e = fails(Builtin::Plus, &[v(Type::Sym), v(Type::I32)]);
    assert_eq!(e.message, "`@plus` cannot be applied to sym and i32");
}

#[test]
fn division_is_always_floating() {
    assert_eq!(one(Builtin::Div, &[v(Type::I64), v(Type::I64)]), Type::F64);
    assert_eq!(one(Builtin::Div, &[v(Type::F64), v(Type::I64)]), Type::F64);
    assert_eq!(one(Builtin::Div, &[v(Type::I32), v(Type::F32)]), Type::F32);
    assert_eq!(
        one(Builtin::Power, &[v(Type::I32), v(Type::I32)]),
        Type::F32
    );
}

#[test]
fn dates_add_integers_and_compare_with_dates() {
    assert_eq!(
        one(Builtin::Plus, &[v(Type::Date), v(Type::I32)]),
        Type::Date
    );
    assert_eq!(
        one(Builtin::Minus, &[v(Type::Date), v(Type::Date)]),
        Type::I32
    );
    assert_eq!(
        one(Builtin::Geq, &[v(Type::Date), v(Type::Date)]),
        Type::Bool
    );
    fails(Builtin::Lt, &[v(Type::Date), v(Type::I32)]);
    assert_eq!(one(Builtin::DateYear, &[v(Type::Date)]), Type::I16);
    fails(Builtin::DateYear, &[v(Type::I32)]);
}

#[test]
fn comparisons_give_bool_and_need_comparable_operands() {
    assert_eq!(one(Builtin::Eq, &[v(Type::Sym), v(Type::Sym)]), Type::Bool);
    assert_eq!(one(Builtin::Neq, &[v(Type::I32), v(Type::F64)]), Type::Bool);
    assert_eq!(
        one(Builtin::Lt, &[v(Type::Char), v(Type::Char)]),
        Type::Bool
    );
    assert_eq!(
        one(Builtin::Member, &[v(Type::Sym), v(Type::Str)]),
        Type::Bool
    );
    fails(Builtin::Eq, &[v(Type::Sym), v(Type::I32)]);
    fails(Builtin::Lt, &[v(Type::Sym), v(Type::Str)]);
    assert_eq!(
        one(Builtin::And, &[v(Type::Bool), v(Type::Bool)]),
        Type::Bool
    );
    let e = fails(Builtin::And, &[v(Type::Bool), v(Type::I32)]);
    assert_eq!(e.arg, Some(1));
    assert_eq!(
        e.message,
        "`@and` expects a bool vector as argument 2, found i32"
    );
}

#[test]
fn reductions() {
    assert_eq!(one(Builtin::Sum, &[v(Type::I32)]), Type::I64);
    assert_eq!(one(Builtin::Sum, &[v(Type::F32)]), Type::F64);
    assert_eq!(one(Builtin::Avg, &[v(Type::I32)]), Type::F64);
    assert_eq!(one(Builtin::Min, &[v(Type::F64)]), Type::F64);
    assert_eq!(one(Builtin::Max, &[v(Type::Date)]), Type::Date);
    assert_eq!(one(Builtin::Len, &[v(Type::Table)]), Type::I64);
    fails(Builtin::Sum, &[v(Type::Sym)]);
}

#[test]
fn selection_and_indexing() {
    assert_eq!(
        one(Builtin::Compress, &[v(Type::Bool), v(Type::F64)]),
        Type::F64
    );
    fails(Builtin::Compress, &[v(Type::I32), v(Type::F64)]);
    assert_eq!(one(Builtin::Where, &[v(Type::Bool)]), Type::I64);
    assert_eq!(
        one(Builtin::Index, &[v(Type::Char), v(Type::I64)]),
        Type::Char
    );
    // A join result is a list of two i64 vectors; `@index(l, 0:i64)` takes a cell.
    let join = Type::List(Box::new(Type::I64));
    assert_eq!(one(Builtin::Index, &[v(join), v(Type::I64)]), Type::I64);
    fails(Builtin::Index, &[v(Type::F64), v(Type::F64)]);
    assert_eq!(
        one(Builtin::IndexA, &[v(Type::F64), v(Type::I64), v(Type::F64)]),
        Type::F64
    );
    assert_eq!(
        one(Builtin::Vector, &[v(Type::I64), v(Type::Sym)]),
        Type::Sym
    );
    assert_eq!(one(Builtin::Unique, &[v(Type::I32)]), Type::I64);
    assert_eq!(
        one(Builtin::Member, &[v(Type::Sym), v(Type::Sym)]),
        Type::Bool
    );
    assert_eq!(
        one(
            Builtin::Order,
            &[v(Type::List(Box::new(Type::Wildcard))), v(Type::Bool)]
        ),
        Type::I64
    );
}

#[test]
fn strings() {
    assert_eq!(
        one(Builtin::Like, &[v(Type::Sym), v(Type::Sym)]),
        Type::Bool
    );
    assert_eq!(
        one(Builtin::Like, &[v(Type::Str), v(Type::Str)]),
        Type::Bool
    );
    fails(Builtin::Like, &[v(Type::I32), v(Type::Sym)]);
    assert_eq!(
        one(Builtin::SubString, &[v(Type::Sym), v(Type::I32)]),
        Type::Sym
    );
}

#[test]
fn tables_enums_and_dicts() {
    assert_eq!(one(Builtin::LoadTable, &[v(Type::Sym)]), Type::Table);
    assert_eq!(
        one(Builtin::ColumnValue, &[v(Type::Table), v(Type::Sym)]),
        Type::Wildcard
    );
    assert_eq!(one(Builtin::Fetch, &[v(enum_of(Type::I32))]), Type::I32);
    assert_eq!(one(Builtin::Keys, &[v(enum_of(Type::I32))]), Type::I32);
    assert_eq!(one(Builtin::Values, &[v(enum_of(Type::I32))]), Type::I64);
    let grouped = one(Builtin::Group, &[v(Type::List(Box::new(Type::Char)))]);
    assert_eq!(grouped.to_string(), "dict<i64,list<i64>>");
    assert_eq!(one(Builtin::Keys, &[v(grouped.clone())]), Type::I64);
    assert_eq!(one(Builtin::Values, &[v(grouped)]).to_string(), "list<i64>");
    let columns = Type::List(Box::new(Type::Wildcard));
    assert_eq!(
        one(Builtin::Table, &[v(Type::Sym), v(columns)]),
        Type::Table
    );
    fails(Builtin::Table, &[v(Type::Sym), v(Type::I32)]);
    fails(Builtin::Fetch, &[v(Type::I32)]);
}

#[test]
fn lists_have_the_common_cell_type_or_wildcard() {
    assert_eq!(
        one(Builtin::List, &[v(Type::Char), v(Type::Char)]).to_string(),
        "list<char>"
    );
    assert_eq!(
        one(Builtin::List, &[v(Type::Char), v(Type::F64)]).to_string(),
        "list<?>"
    );
    let l = Type::List(Box::new(Type::F64));
    assert_eq!(one(Builtin::Raze, &[v(l)]), Type::F64);
}

#[test]
fn higher_order_builtins_apply_their_function_to_the_cells() {
    let groups = Type::List(Box::new(Type::I64));
    let parts = one(
        Builtin::EachRight,
        &[f(Builtin::Index), v(Type::F64), v(groups.clone())],
    );
    assert_eq!(parts.to_string(), "list<f64>");
    assert_eq!(
        one(Builtin::Each, &[f(Builtin::Sum), v(parts.clone())]).to_string(),
        "list<f64>"
    );
    assert_eq!(
        one(Builtin::Each, &[f(Builtin::Len), v(groups)]).to_string(),
        "list<i64>"
    );
    let e = fails(
        Builtin::Each,
        &[f(Builtin::Sum), v(Type::List(Box::new(Type::Sym)))],
    );
    assert_eq!(e.arg, Some(0));
    assert!(
        e.message.contains("`@each` applies @sum to (sym)"),
        "{}",
        e.message
    );
    let e = fails(Builtin::Each, &[v(Type::I64), v(parts)]);
    assert_eq!(
        e.message,
        "`@each` expects a function literal as argument 1, found i64"
    );
}

#[test]
fn user_functions_are_typed_by_their_declaration() {
    let double = FunctionType::User {
        name: "m.double".to_string(),
        params: vec![Type::I64],
        returns: vec![Type::I64],
    };
    let each = builtin_result(
        Builtin::Each,
        &[
            ArgType::Function(double.clone()),
            v(Type::List(Box::new(Type::I64))),
        ],
    );
    assert_eq!(each, Ok(vec![Type::List(Box::new(Type::I64))]));
    let e = apply(&double, &[v(Type::Sym)]).unwrap_err();
    assert_eq!(
        e.message,
        "`@m.double` expects i64 as argument 1, found sym"
    );
}

#[test]
fn join_index_takes_predicates_and_two_vectors_or_two_lists() {
    let list_i32 = Type::List(Box::new(Type::I32));
    assert_eq!(
        one(
            Builtin::JoinIndex,
            &[f(Builtin::Eq), v(Type::I32), v(Type::I32)]
        )
        .to_string(),
        "list<i64>"
    );
    assert_eq!(
        one(
            Builtin::JoinIndex,
            &[
                f(Builtin::Eq),
                f(Builtin::Neq),
                v(list_i32.clone()),
                v(list_i32)
            ]
        )
        .to_string(),
        "list<i64>"
    );
    fails(
        Builtin::JoinIndex,
        &[f(Builtin::Plus), v(Type::I32), v(Type::I32)],
    );
    fails(
        Builtin::JoinIndex,
        &[f(Builtin::Eq), v(Type::I32), v(Type::Sym)],
    );
}

#[test]
fn argument_counts_are_checked() {
    let e = fails(Builtin::Plus, &[v(Type::I32)]);
    assert_eq!(e.message, "`@plus` takes 2 arguments, found 1");
    let e = fails(Builtin::JoinIndex, &[v(Type::I32), v(Type::I32)]);
    assert_eq!(
        e.message,
        "`@join_index` takes at least 3 arguments, found 2"
    );
}

#[test]
fn unknown_arguments_give_unknown_results_not_errors() {
    assert_eq!(
        one(Builtin::Plus, &[v(Type::Wildcard), v(Type::Sym)]),
        Type::Wildcard
    );
    assert_eq!(one(Builtin::Fetch, &[v(Type::Wildcard)]), Type::Wildcard);
    assert_eq!(one(Builtin::Len, &[v(Type::Wildcard)]), Type::I64);
}

#[test]
fn every_builtin_has_a_rule_that_accepts_some_arguments() {
    // One plausible call per builtin: the table covers every catalogue entry.
    for &b in Builtin::ALL {
        let candidates: Vec<Vec<ArgType>> = match arity(b) {
            Arity::Exactly(1) => [
                Type::I64,
                Type::F64,
                Type::Bool,
                Type::Dt,
                Type::Time,
                Type::Complex,
                Type::Sym,
                Type::List(Box::new(Type::I64)),
                enum_of(Type::I32),
                Type::Table,
            ]
            .into_iter()
            .map(|t| vec![v(t)])
            .collect(),
            _ => vec![
                vec![v(Type::I64), v(Type::I64)],
                vec![v(Type::Bool), v(Type::Bool)],
                vec![v(Type::Sym), v(Type::Sym)],
                vec![v(Type::Table), v(Type::Sym)],
                vec![v(Type::Table), v(Type::Table)],
                vec![v(Type::Sym), v(Type::List(Box::new(Type::I64)))],
                vec![v(Type::Date), v(Type::Date)],
                vec![v(Type::Sym), v(Type::I32)],
                vec![f(Builtin::Neg), v(Type::List(Box::new(Type::I64)))],
                vec![
                    f(Builtin::Plus),
                    v(Type::I64),
                    v(Type::List(Box::new(Type::I64))),
                ],
                vec![
                    f(Builtin::Plus),
                    v(Type::List(Box::new(Type::I64))),
                    v(Type::I64),
                ],
                vec![f(Builtin::Eq), v(Type::I64), v(Type::I64)],
                vec![v(Type::I64), v(Type::I64), v(Type::I64)],
                vec![v(Type::Date), v(Type::I64), v(Type::Sym)],
                // Relations: @tuple_diff(a, b), @sorted_join(probe, build).
                vec![
                    v(Type::List(Box::new(Type::I64))),
                    v(Type::List(Box::new(Type::I64))),
                ],
                // A graph search: @shortest_path_length(g, sources, destinations).
                vec![
                    v(Type::List(Box::new(Type::I64))),
                    v(Type::I64),
                    v(Type::I64),
                ],
                // A batched join: @join_unique(probe, build, keys, picks).
                vec![
                    v(Type::List(Box::new(Type::I64))),
                    v(Type::List(Box::new(Type::I64))),
                    v(Type::I64),
                    v(Type::I64),
                ],
                // A reachability index: @reach_index(g, d).
                vec![v(Type::List(Box::new(Type::I64))), v(Type::I64)],
                vec![],
            ],
        };
        assert!(
            candidates
                .iter()
                .any(|args| builtin_result(b, args).is_ok()),
            "no candidate call type-checks for @{b}"
        );
    }
}

#[test]
fn graph_builtins_take_integer_or_enum_vertices() {
    let graph = Type::List(Box::new(Type::I64));
    assert_eq!(
        one(Builtin::Csr, &[v(Type::I64), v(Type::I32), v(Type::I64)]),
        graph
    );
    assert_eq!(
        one(
            Builtin::Csr,
            &[v(enum_of(Type::I32)), v(enum_of(Type::I32)), v(Type::I64)]
        ),
        graph
    );
    assert_eq!(
        one(
            Builtin::ShortestPathLength,
            &[v(graph.clone()), v(Type::I64), v(enum_of(Type::Sym))]
        ),
        Type::I64
    );
    assert_eq!(
        one(
            Builtin::Reachable,
            &[v(graph.clone()), v(Type::I32), v(Type::I64)]
        ),
        Type::Bool
    );
    let e = fails(Builtin::Csr, &[v(Type::F64), v(Type::I64), v(Type::I64)]);
    assert_eq!(
        e.message,
        "`@csr` expects integer vertex indexes or an enum as argument 1, found f64"
    );
    let e = fails(Builtin::Csr, &[v(Type::I64), v(Type::I64), v(Type::Sym)]);
    assert_eq!(e.arg, Some(2));
    let e = fails(
        Builtin::ShortestPathLength,
        &[v(Type::I64), v(Type::I64), v(Type::I64)],
    );
    assert_eq!(
        e.message,
        "`@shortest_path_length` expects a graph (list<i64> from @csr) as argument 1, found i64"
    );
    let e = fails(Builtin::Reachable, &[v(graph), v(Type::I64), v(Type::Str)]);
    assert_eq!(e.arg, Some(2));
    let e = fails(Builtin::Reachable, &[v(Type::I64)]);
    assert_eq!(e.message, "`@reachable` takes 3 arguments, found 1");
}

#[test]
fn reach_index_of_a_graph_is_a_dictionary_that_reachable_accepts() {
    let graph = Type::List(Box::new(Type::I64));
    let index = Type::Dict(Box::new(Type::Sym), Box::new(graph.clone()));
    assert_eq!(
        one(Builtin::ReachIndex, &[v(graph.clone()), v(Type::I64)]),
        index
    );
    assert_eq!(
        one(
            Builtin::Reachable,
            &[v(index.clone()), v(Type::I64), v(Type::I32)]
        ),
        Type::Bool
    );
    let e = fails(Builtin::ReachIndex, &[v(Type::I64), v(Type::I64)]);
    assert_eq!(
        e.message,
        "`@reach_index` expects a graph (list<i64> from @csr) as argument 1, found i64"
    );
    let e = fails(Builtin::ReachIndex, &[v(graph.clone()), v(Type::F64)]);
    assert_eq!(e.arg, Some(1));
    // Only @reachable takes an index: path lengths need the graph.
    let e = fails(
        Builtin::ShortestPathLength,
        &[v(index), v(Type::I64), v(Type::I64)],
    );
    assert_eq!(e.arg, Some(0));
    let e = fails(Builtin::ReachIndex, &[v(graph)]);
    assert_eq!(e.message, "`@reach_index` takes 2 arguments, found 1");
}

#[test]
fn complex_numbers_are_not_keys_nor_multiplied() {
    fails(Builtin::Eq, &[v(Type::Complex), v(Type::Complex)]);
    fails(Builtin::Member, &[v(Type::Complex), v(Type::Complex)]);
    fails(Builtin::Unique, &[v(Type::Complex)]);
    fails(Builtin::Mul, &[v(Type::Complex), v(Type::F64)]);
    fails(Builtin::Like, &[v(Type::Char), v(Type::Char)]);
    assert_eq!(one(Builtin::Pi, &[v(Type::Complex)]), Type::Complex);
    assert_eq!(one(Builtin::Conj, &[v(Type::Complex)]), Type::Complex);
}
