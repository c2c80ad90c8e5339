//! The sort after a grouping goes exactly where it is the identity: each test is one program
//! shape, the simplified `main` printed as the typed printer prints it.

use super::simplify_program;
use crate::driver::{compile, Stage};
use crate::sema::printer::print_typed;

/// `main`'s body after simplification, and how many sorts were dropped. The table `t` has
/// columns `a:i64`, `b:sym`, `f:f64` and `x:f64`.
fn simplified(body: &str) -> (String, usize) {
    let text = format!(
        "module m {{\n  import Builtin.*;\n  def main() : table {{\n    \
         t:table = @load_table(`t:sym);\n    \
         a:i64 = check_cast(@column_value(t, `a:sym), i64);\n    \
         b:sym = check_cast(@column_value(t, `b:sym), sym);\n    \
         f:f64 = check_cast(@column_value(t, `f:sym), f64);\n    \
         x:f64 = check_cast(@column_value(t, `x:sym), f64);\n\
         {body}\n  }}\n}}\n"
    );
    let compilation = compile("test.hir", &text, Stage::Analyze);
    assert!(
        !compilation.failed(),
        "{}",
        compilation.render_diagnostics()
    );
    let mut program = compilation.typed.expect("a typed program");
    let dropped = simplify_program(&mut program);
    (print_typed(&program), dropped)
}

/// Group by `(a, b)`, the groups' keys and sums of `x`, then `sort` and `uses`.
fn grouped_by_a_b(sort: &str, uses: &str) -> String {
    format!(
        "    keys:? = @list(a, b);\n    groups:? = @group(keys);\n    \
         first:i64 = @keys(groups);\n    rows:? = @values(groups);\n    \
         ka:i64 = @index(a, first);\n    kb:sym = @index(b, first);\n    \
         cells:? = @each_right(@index, x, rows);\n    sums:? = @each(@sum, cells);\n    \
         sum_x:f64 = @raze(sums);\n    counts:? = @each(@len, rows);\n    \
         count:i64 = @raze(counts);\n\
         {sort}\n{uses}\n    \
         columns:? = @list(out);\n    result:table = @table(`a:sym, columns);\n    return result;"
    )
}

#[test]
fn an_ascending_sort_by_the_group_keys_is_dropped_and_its_gathers_become_copies() {
    let (text, dropped) = simplified(&grouped_by_a_b(
        "    sort_keys:? = @list(ka, kb);\n    order:i64 = @order(sort_keys, (1,1):bool);",
        "    out_a:i64 = @index(ka, order);\n    out_sum:f64 = @index(sum_x, order);\n    \
         out_count:i64 = @index(count, order);\n    out:f64 = @plus(out_sum, out_count);",
    ));
    assert_eq!(dropped, 1, "{text}");
    assert!(!text.contains("@order"), "{text}");
    assert!(!text.contains("sort_keys"), "{text}");
    assert!(text.contains("out_a:i64 = ka;"), "{text}");
    assert!(text.contains("out_sum:f64 = sum_x;"), "{text}");
    assert!(text.contains("out_count:i64 = count;"), "{text}");
}

#[test]
fn a_sort_by_a_prefix_of_the_group_keys_with_one_direction_is_dropped() {
    let (text, dropped) = simplified(&grouped_by_a_b(
        "    order:i64 = @order(ka, 1:bool);",
        "    out:f64 = @index(sum_x, order);",
    ));
    assert_eq!(dropped, 1, "{text}");
    assert!(text.contains("out:f64 = sum_x;"), "{text}");
}

#[test]
fn element_wise_results_of_per_group_values_and_scalars_are_one_per_group() {
    let (text, dropped) = simplified(&grouped_by_a_b(
        "    share:f64 = @div(sum_x, count);\n    scaled:f64 = @mul(share, 100.0:f64);\n    \
         order:i64 = @order(ka, 1:bool);",
        "    out:f64 = @index(scaled, order);",
    ));
    assert_eq!(dropped, 1, "{text}");
    assert!(text.contains("out:f64 = scaled;"), "{text}");
}

#[test]
fn a_sort_that_is_not_the_identity_stays() {
    let descending = "    order:i64 = @order(ka, 0:bool);";
    let other_column_first =
        "    sort_keys:? = @list(kb, ka);\n    order:i64 = @order(sort_keys, (1,1):bool);";
    let by_an_aggregate = "    order:i64 = @order(sum_x, 1:bool);";
    let mixed = "    sort_keys:? = @list(ka, kb);\n    order:i64 = @order(sort_keys, (1,0):bool);";
    for sort in [descending, other_column_first, by_an_aggregate, mixed] {
        let (text, dropped) =
            simplified(&grouped_by_a_b(sort, "    out:f64 = @index(sum_x, order);"));
        assert_eq!(dropped, 0, "{text}");
        assert!(text.contains("@order"), "{text}");
    }
}

#[test]
fn a_sort_whose_result_is_used_otherwise_or_on_a_column_of_other_length_stays() {
    let sort = "    order:i64 = @order(ka, 1:bool);";
    let uses = [
        // The permutation itself is part of the result.
        "    out:i64 = @plus(order, 0:i64);",
        // `x` has a row per input row, not per group: the gather would fail, and must.
        "    out:f64 = @index(x, order);",
        // A per-group value combined with a column of any other length.
        "    mixed:f64 = @plus(sum_x, x);\n    out:f64 = @index(mixed, order);",
        // A use inside a nested body.
        "    out:f64 = @index(sum_x, order);\n    if (1:bool) { out = @index(sum_x, order); }",
        // A gather from a list, which sema types as a vector: with one group it is a cell.
        "    picked:? = @index(cells, first);\n    out:? = @index(picked, order);",
    ];
    for uses in uses {
        let (text, dropped) = simplified(&grouped_by_a_b(sort, uses));
        assert_eq!(dropped, 0, "{text}");
        assert!(text.contains("@order"), "{text}");
    }
}

/// Group by `k` (computed by `key`, then `after` runs), sort by `k` at the groups' first rows
/// and gather the groups' counts in that order.
fn grouped_by(key: &str, after: &str) -> String {
    format!(
        "    k = {key};\n    groups:? = @group(k);\n    first:i64 = @keys(groups);\n\
         {after}\n    kk:? = @index(k, first);\n    rows:? = @values(groups);\n    \
         counts:? = @each(@len, rows);\n    count:i64 = @raze(counts);\n    \
         order:i64 = @order(kk, 1:bool);\n    out:i64 = @index(count, order);\n    \
         columns:? = @list(out);\n    result:table = @table(`a:sym, columns);\n    \
         return result;"
    )
}

#[test]
fn a_sort_by_float_keys_or_by_keys_assigned_twice_stays() {
    let declare = |ty: &str| format!("    var k:{ty};\n");
    let cases = [
        (
            format!("{}{}", declare("i64"), grouped_by("@plus(a, 1:i64)", "")),
            1,
        ),
        (
            format!("{}{}", declare("f64"), grouped_by("@plus(f, 1.0:f64)", "")),
            0,
        ),
        (
            format!(
                "{}{}",
                declare("i64"),
                grouped_by("@plus(a, 1:i64)", "    k = @neg(a);")
            ),
            0,
        ),
    ];
    for (body, expected) in cases {
        let (text, dropped) = simplified(&body);
        assert_eq!(dropped, expected, "{text}");
    }
}
