//! The HorsePower unit programs that compute a value give the value their comments state,
//! on the CPU backend: recursion, if/else, while, repeat, break and continue.

mod common;

use common::{conformance_dir, run_tsv, tpch};

fn answer(test: &str) -> Option<String> {
    let dir = conformance_dir()?;
    let path = dir.join(format!("horsepower-unit/pass/{test}.hir"));
    let out = run_tsv(&path, &tpch(0.01)).unwrap_or_else(|e| panic!("{test} failed:\n{e}"));
    Some(out.lines().collect::<Vec<_>>().join(","))
}

macro_rules! expect {
    ($($name:ident: $test:literal => $value:literal,)*) => {
        $(#[test]
        fn $name() {
            if let Some(got) = answer($test) {
                assert_eq!(got, $value, "{}", $test);
            }
        })*
    };
}

expect! {
    if_else_takes_the_else_branch: "t16" => "4",
    fibonacci_of_11_is_144: "t17" => "144",
    while_counts_to_5: "t18" => "5",
    repeat_runs_10_times: "t19" => "10",
    break_leaves_the_loop_at_8: "t20" => "8",
    continue_skips_to_13: "t21" => "13",
    return_inside_while_returns_5: "t22" => "5",
    plus_broadcasts_over_a_vector: "t33" => "12,13,14",
}
