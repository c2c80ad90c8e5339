//! The GPU library kernels (`gpu::library::run_library`) against the CPU builtins on seeded
//! random data: results must be identical, order included. Needs a GPU adapter (lavapipe
//! will do); without one every test prints "SKIPPED: no GPU adapter", and with
//! HORSEC_REQUIRE_GPU=1 it fails instead.

use std::sync::{Arc, OnceLock};

use horsec_runtime::builtin::Builtin as B;
use horsec_runtime::cpu::{call_builtin, ArgValue, Env};
use horsec_runtime::engine::read_back;
use horsec_runtime::error::Result;
use horsec_runtime::gpu::group_aggregate::{AggregatePath, Ranking, MAX_DIRECT_GROUPS};
use horsec_runtime::gpu::hash::GroupStrategy;
use horsec_runtime::gpu::library::{
    each_library, each_unique, run_group, run_group_aggregate, run_library,
};
use horsec_runtime::gpu::{require_gpu_or_skip, Device};
use horsec_runtime::plan::Callee;
use horsec_runtime::value::{List, Strings, Table, Value, Vector};
use proptest::prelude::*;

fn shared_device() -> Option<&'static Device> {
    static DEVICE: OnceLock<Option<Device>> = OnceLock::new();
    let device = DEVICE.get_or_init(require_gpu_or_skip).as_ref();
    if device.is_none() {
        eprintln!("SKIPPED: no GPU adapter");
    }
    device
}

struct NoEnv;

impl Env for NoEnv {
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>> {
        Err(horsec_runtime::error::RuntimeError::new(format!(
            "no table {name}"
        )))
    }
    fn invoke(&mut self, _: Callee, _: &[Value]) -> Result<Vec<Value>> {
        Err(horsec_runtime::error::RuntimeError::new("no functions"))
    }
    fn print(&mut self, _: &Value) -> Result<()> {
        Ok(())
    }
}

fn arg_list<'a>(functions: &[B], values: &'a [Value]) -> Vec<ArgValue<'a>> {
    let mut list: Vec<ArgValue<'a>> = functions
        .iter()
        .map(|&f| ArgValue::Function(Callee::Builtin(f)))
        .collect();
    list.extend(values.iter().map(ArgValue::Value));
    list
}

/// Runs `b` on the CPU and on the GPU and checks that both agree (both results, or both
/// errors). Returns the CPU result.
fn same(device: &Device, b: B, functions: &[B], values: &[Value]) -> Option<Value> {
    let args = arg_list(functions, values);
    let cpu = call_builtin(b, &args, &mut NoEnv);
    let gpu = run_library(device, b, &args).and_then(|v| read_back(device, &v));
    match (&cpu, &gpu) {
        (Ok(c), Ok(g)) => {
            // NaN != NaN under PartialEq: values with NaNs compare by their printed form.
            if c != g {
                assert_eq!(
                    format!("{c:?}"),
                    format!("{g:?}"),
                    "@{b}: GPU differs from CPU on {values:?}"
                );
            }
            Some(c.clone())
        }
        (Err(_), Err(e)) => {
            assert!(e.message.starts_with(&format!("@{}", b.name())), "{e}");
            None
        }
        _ => panic!("@{b}: CPU gave {cpu:?}, GPU gave {gpu:?}"),
    }
}

/// [`same`], where both must succeed.
fn ok(device: &Device, b: B, functions: &[B], values: &[Value]) -> Option<Value> {
    let result = same(device, b, functions, values);
    assert!(
        result.is_some(),
        "@{b} failed on both backends for {values:?}"
    );
    result
}

/// [`same`], where both must fail.
fn fails(device: &Device, b: B, functions: &[B], values: &[Value]) {
    assert!(
        same(device, b, functions, values).is_none(),
        "@{b} should fail"
    );
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
    fn i32s(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        let span = (i64::from(hi) - i64::from(lo) + 1) as u64;
        (0..n)
            .map(|_| (i64::from(lo) + self.below(span) as i64) as i32)
            .collect()
    }
    fn i64s(&mut self, n: usize, distinct: u64) -> Vec<i64> {
        // Few distinct values spread over the whole 64-bit range (high words differ).
        let base: Vec<i64> = (0..distinct.max(1))
            .map(|_| self.next_u64() as i64)
            .collect();
        (0..n)
            .map(|_| base[self.below(distinct) as usize])
            .collect()
    }
    fn f64s(&mut self, n: usize) -> Vec<f64> {
        let specials = [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.5,
            -1.5,
            1e300,
            -1e-300,
        ];
        (0..n)
            .map(|_| {
                if self.below(4) == 0 {
                    specials[self.below(specials.len() as u64) as usize]
                } else {
                    (self.below(200) as f64 - 100.0) / 4.0
                }
            })
            .collect()
    }
    fn words(&mut self, n: usize, distinct: u64) -> Vec<String> {
        let pool = [
            "PROMO BRUSHED",
            "STANDARD",
            "PROMO PLATED",
            "ECONOMY",
            "forest green",
            "ü_x",
            "Ärger",
            "",
            "a",
            "ab",
            "special requests",
            "SPECIAL",
            "xyz%",
            "naïve café",
        ];
        let k = distinct.min(pool.len() as u64);
        (0..n)
            .map(|_| pool[self.below(k) as usize].to_string())
            .collect()
    }
    fn bools(&mut self, n: usize) -> Vec<bool> {
        (0..n).map(|_| self.below(2) == 1).collect()
    }
}

fn i32s(v: Vec<i32>) -> Value {
    Value::Vector(Vector::I32(Arc::new(v)))
}
fn i64s(v: Vec<i64>) -> Value {
    Value::from_i64s(v)
}
fn f64s(v: Vec<f64>) -> Value {
    Value::from_f64s(v)
}
fn dates(v: Vec<i32>) -> Value {
    Value::Vector(Vector::Date(Arc::new(v)))
}
fn bools(v: Vec<bool>) -> Value {
    Value::from_bools(v)
}
fn syms(v: &[String]) -> Value {
    Value::Vector(Vector::Sym(Strings::from_strs(v)))
}
fn strs(v: &[String]) -> Value {
    Value::Vector(Vector::Str(Strings::from_strs(v)))
}
fn list(cells: Vec<Value>) -> Value {
    Value::List(List::from_cells(cells))
}

/// Sizes around the workgroup (256) and tile sizes, plus the empty and single cases.
const SIZES: &[usize] = &[0, 1, 7, 255, 257, 1000, 4099];

/// Key columns of every supported type, `n` rows, few or many distinct values.
fn columns(rng: &mut Rng, n: usize, distinct: u64) -> Vec<Value> {
    let d = distinct as i32;
    vec![
        i32s(rng.i32s(n, -d, d)),
        i64s(rng.i64s(n, distinct)),
        f64s(rng.f64s(n)),
        dates(rng.i32s(n, 8000, 8000 + d)),
        bools(rng.bools(n)),
        syms(&rng.words(n, distinct)),
        Value::Vector(Vector::Char(Arc::new(
            (0..n).map(|_| b'A' + rng.below(4) as u8).collect(),
        ))),
        Value::Vector(Vector::F32(Arc::new(
            rng.f64s(n).into_iter().map(|x| x as f32).collect(),
        ))),
    ]
}

#[test]
fn order_single_columns_of_every_type_both_directions() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(1);
    for &n in SIZES {
        for distinct in [1, 5, 1 << 20] {
            for column in columns(&mut rng, n, distinct) {
                for dir in [true, false] {
                    ok(device, B::Order, &[], &[column.clone(), bools(vec![dir])]);
                }
            }
        }
    }
}

#[test]
fn order_several_columns_with_mixed_directions() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(2);
    for &n in SIZES {
        let c = columns(&mut rng, n, 4);
        let keys = list(vec![c[5].clone(), c[1].clone(), c[2].clone(), c[0].clone()]);
        for dirs in [
            vec![true, false, true, false],
            vec![false, true, false, true],
            vec![true, true, true, true],
        ] {
            ok(device, B::Order, &[], &[keys.clone(), bools(dirs)]);
        }
        ok(device, B::Order, &[], &[keys.clone(), bools(vec![false])]);
        // Wrong direction count: both error.
        fails(device, B::Order, &[], &[keys, bools(vec![true, false])]);
    }
}

/// Large buckets without other predicates are written one pair per invocation (a binary
/// search over the offsets finds each pair's row): rows of a without a match, repeated keys
/// on both sides and buckets of hundreds of rows keep the CPU's pairs and order, as do the
/// same buckets walked with another predicate.
#[test]
fn join_index_large_buckets_written_per_pair_keep_the_cpu_order() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(23);
    // Keys 40..50 of a have no match in b.
    let a = i32s(rng.i32s(500, 0, 49));
    let b = i32s(rng.i32s(20_000, 0, 39));
    ok(device, B::JoinIndex, &[B::Eq], &[a.clone(), b.clone()]);
    ok(device, B::JoinIndex, &[B::Eq], &[b.clone(), a.clone()]);
    let (xa, xb) = (
        i32s(rng.i32s(500, 0, 1000)),
        i32s(rng.i32s(20_000, 0, 1000)),
    );
    ok(
        device,
        B::JoinIndex,
        &[B::Eq, B::Lt],
        &[list(vec![a, xa]), list(vec![b, xb])],
    );
}

/// `@order` sorts up to 4096 rows in one workgroup (a bitonic sort, `small_sort.wgsl`), up
/// to 2^18 by merging such chunks, and more with the radix sort: each side of both limits,
/// with many ties (the order must stay stable) and every direction, agrees with the CPU.
#[test]
fn order_on_both_sides_of_the_one_workgroup_and_merge_sort_limits() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(21);
    let merge_limit = horsec_runtime::gpu::order::MERGE_SORT_ROWS;
    for &n in [merge_limit, merge_limit + 1].iter() {
        let keys = list(vec![i32s(rng.i32s(n, -40, 40)), i64s(rng.i64s(n, 1 << 20))]);
        ok(device, B::Order, &[], &[keys, bools(vec![false, true])]);
    }
    for n in [2, 3, 5, 64, 4095, 4096, 4097, 3 * 4096 + 5] {
        for distinct in [1, 3, 1 << 20] {
            let c = columns(&mut rng, n, distinct);
            let keys = list(vec![c[1].clone(), c[5].clone(), c[0].clone()]);
            for dirs in [vec![true], vec![false], vec![false, true, false]] {
                ok(device, B::Order, &[], &[keys.clone(), bools(dirs)]);
            }
            for column in &c {
                ok(device, B::Order, &[], &[column.clone(), bools(vec![false])]);
            }
        }
    }
}

#[test]
fn group_and_unique_match_the_cpu_with_both_strategies() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(3);
    for &n in SIZES {
        for distinct in [1, 3, 50, 1 << 20] {
            let c = columns(&mut rng, n, distinct);
            let mut cases: Vec<Value> = c.clone();
            cases.push(list(vec![c[0].clone(), c[5].clone()]));
            cases.push(list(vec![c[1].clone(), c[2].clone(), c[4].clone()]));
            for k in cases {
                let expected = ok(device, B::Group, &[], std::slice::from_ref(&k));
                for strategy in [
                    GroupStrategy::Dense,
                    GroupStrategy::Hash,
                    GroupStrategy::Sort,
                ] {
                    let got = run_group(device, &k, strategy)
                        .and_then(|v| read_back(device, &v))
                        .expect("group runs");
                    assert_eq!(Some(got), expected, "{strategy:?} on {k:?}");
                }
                ok(device, B::Unique, &[], &[k]);
            }
        }
    }
}

/// `@group_aggregate` against the CPU's, exactly: the float columns hold small integers, so
/// every order of addition gives the same sums. Both GPU paths run (few groups: one pass
/// with per-workgroup partials; many: rows bucketed by group, small groups per invocation
/// and large ones per workgroup), ranked both by slot in a small key domain and by hashing,
/// and rows span many workgroups of the one-pass kernel.
#[test]
fn group_aggregate_matches_the_cpu_on_both_paths() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(11);
    // Many rows only with few groups: lavapipe runs a bucketed group per workgroup slowly.
    let cases = SIZES
        .iter()
        .flat_map(|&n| [1u64, 3, 16, 50, 5000].map(|d| (n, d)))
        .chain([(100_003, 4)]);
    let mut rankings = Vec::new();
    for (n, distinct) in cases {
        {
            let c = columns(&mut rng, n, distinct);
            let keys = [
                c[0].clone(),
                list(vec![c[0].clone(), c[5].clone()]),
                list(vec![c[1].clone(), c[2].clone()]),
            ];
            let small = f64s(
                rng.i32s(n, -1000, 1000)
                    .into_iter()
                    .map(f64::from)
                    .collect(),
            );
            let ints = i32s(rng.i32s(n, i32::MIN, i32::MAX));
            let wide = i64s(rng.i64s(n, 40));
            let flags = bools(rng.bools(n));
            let ops = syms(
                &[
                    "sum", "avg", "len", "sum", "avg", "sum", "sum", "avg", "sum", "len",
                ]
                .map(String::from),
            );
            for k in keys {
                let values = vec![
                    k.clone(),
                    ops.clone(),
                    small.clone(),
                    small.clone(),
                    ints.clone(),
                    ints.clone(),
                    wide.clone(),
                    flags.clone(),
                    flags.clone(),
                    small.clone(),
                ];
                let expected = ok(device, B::GroupAggregate, &[], &values);
                let args = arg_list(&[], &values);
                let (value, path, ranking) =
                    run_group_aggregate(device, &args).expect("group_aggregate runs");
                rankings.push(ranking);
                let got = read_back(device, &value).expect("read back");
                assert_eq!(
                    Some(got),
                    expected,
                    "{path:?} {ranking:?}, {n} rows, key {k:?}"
                );
                let groups = expected.map_or(0, |v| match v {
                    Value::List(l) => l.cells().first().map_or(0, Value::len),
                    _ => 0,
                });
                let want = if groups <= MAX_DIRECT_GROUPS {
                    AggregatePath::Direct
                } else {
                    AggregatePath::Bucketed
                };
                assert_eq!(path, want, "{groups} groups");
                // Integer columns only (no float slot in use).
                let int_ops = syms(&["sum", "len", "sum", "avg"].map(String::from));
                let values = vec![
                    k.clone(),
                    int_ops,
                    ints.clone(),
                    flags.clone(),
                    wide.clone(),
                ];
                ok(device, B::GroupAggregate, &[], &values);
            }
        }
    }
    // Short integer ranges rank by slot; the f64 keys' range is far too wide for that.
    for ranking in [Ranking::Dense, Ranking::Hash] {
        assert!(rankings.contains(&ranking), "{ranking:?} never taken");
    }
    // Checks shared with the CPU: both fail.
    let k = i32s(vec![1, 1, 2]);
    let sum = syms(&["sum".to_string()]);
    fails(device, B::GroupAggregate, &[], &[k.clone(), sum.clone()]);
    fails(
        device,
        B::GroupAggregate,
        &[],
        &[k.clone(), sum.clone(), i32s(vec![1, 2])],
    );
    fails(
        device,
        B::GroupAggregate,
        &[],
        &[k, sum, syms(&["a".into(), "b".into(), "c".into()])],
    );
}

#[test]
fn member_matches_the_cpu_including_mixed_widths_and_dictionaries() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(4);
    for &n in SIZES {
        for &m in &[0usize, 1, 300] {
            let x = i32s(rng.i32s(n, -50, 50));
            let y = i32s(rng.i32s(m, -50, 50));
            ok(device, B::Member, &[], &[x.clone(), y]);
            let y64 = i64s(rng.i32s(m, -50, 50).into_iter().map(i64::from).collect());
            ok(device, B::Member, &[], &[x, y64]);
            let xs = syms(&rng.words(n, 10));
            let ys = strs(&rng.words(m, 5));
            ok(device, B::Member, &[], &[xs, ys]);
            let xf = f64s(rng.f64s(n));
            let yf = f64s(rng.f64s(m));
            ok(device, B::Member, &[], &[xf, yf]);
            let xd = i64s(rng.i64s(n, 20));
            let yd = i64s(rng.i64s(m, 20));
            ok(device, B::Member, &[], &[xd, yd]);
        }
    }
}

#[test]
fn join_index_equality_single_and_multi_column() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(5);
    for &(na, nb) in &[
        (0, 10),
        (10, 0),
        (1, 1),
        (300, 40),
        (40, 300),
        (1000, 1000),
        (257, 5),
    ] {
        let a = i32s(rng.i32s(na, 0, 30));
        let b = i64s(rng.i32s(nb, 0, 30).into_iter().map(i64::from).collect());
        ok(device, B::JoinIndex, &[B::Eq], &[a.clone(), b]);
        let b32 = i32s(rng.i32s(nb, 0, 30));
        ok(device, B::JoinIndex, &[B::Eq], &[a, b32]);
        // Strings across dictionaries, and a two-column key under one @eq.
        let la = list(vec![syms(&rng.words(na, 4)), i64s(rng.i64s(na, 3))]);
        let lb = list(vec![strs(&rng.words(nb, 6)), i64s(rng.i64s(nb, 3))]);
        ok(device, B::JoinIndex, &[B::Eq], &[la, lb]);
        // All-equal keys: every pair.
        let ones_a = i32s(vec![7; na.min(100)]);
        let ones_b = i32s(vec![7; nb.min(100)]);
        ok(device, B::JoinIndex, &[B::Eq], &[ones_a, ones_b]);
    }
}

#[test]
fn join_index_pairs_keep_the_cpu_order_for_buckets_on_both_sides_of_the_small_bucket_limit() {
    // Buckets up to SMALL_BUCKET rows are scattered unordered and each row sorts its own
    // pairs; a larger bucket makes the join sort the buckets instead. Keys are shuffled so
    // that an unsorted walk would show.
    let Some(device) = shared_device() else {
        return;
    };
    let limit = horsec_runtime::gpu::join::SMALL_BUCKET as usize;
    let mut rng = Rng(8);
    for size in [limit - 1, limit, limit + 1] {
        let mut keys: Vec<i32> = (0..3 * size).map(|r| (r % 3) as i32).collect();
        for r in (1..keys.len()).rev() {
            keys.swap(r, rng.below(r as u64 + 1) as usize);
        }
        let a = i32s(vec![2, 0, 1, 2]);
        ok(
            device,
            B::JoinIndex,
            &[B::Eq],
            &[a.clone(), i32s(keys.clone())],
        );
        ok(device, B::JoinIndex, &[B::Eq], &[i32s(keys), a]);
    }
}

#[test]
fn join_index_checks_other_predicates_on_probe() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(6);
    for &(na, nb) in &[(0, 5), (50, 70), (300, 20), (20, 300)] {
        for op in [B::Lt, B::Gt, B::Leq, B::Geq, B::Neq, B::Eq] {
            let a = list(vec![f64s(rng.f64s(na)), i32s(rng.i32s(na, 0, 5))]);
            let b = list(vec![f64s(rng.f64s(nb)), i32s(rng.i32s(nb, 0, 5))]);
            ok(device, B::JoinIndex, &[op, B::Eq], &[a, b]);
            let a = list(vec![i32s(rng.i32s(na, 0, 5)), dates(rng.i32s(na, 0, 9))]);
            let b = list(vec![i32s(rng.i32s(nb, 0, 5)), dates(rng.i32s(nb, 0, 9))]);
            ok(device, B::JoinIndex, &[B::Eq, op], &[a, b]);
        }
        // No equality: every pair is checked.
        let a = i64s(rng.i64s(na, 8));
        let b = i64s(rng.i64s(nb, 8));
        ok(device, B::JoinIndex, &[B::Gt], &[a, b]);
        let a = syms(&rng.words(na, 8));
        let b = strs(&rng.words(nb, 8));
        ok(device, B::JoinIndex, &[B::Leq], &[a, b]);
    }
}

#[test]
fn index_assign_last_writer_wins_and_errors_match() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(7);
    for &n in &[1usize, 7, 300, 2000] {
        let m = n * 2;
        let idx: Vec<i64> = (0..m).map(|_| rng.below(n as u64) as i64).collect();
        let idx32 = i32s(idx.iter().map(|&i| i as i32).collect());
        let idx = i64s(idx);
        let x = f64s(rng.f64s(n));
        let v = f64s(rng.f64s(m));
        ok(device, B::IndexA, &[], &[x.clone(), idx.clone(), v]);
        ok(device, B::IndexA, &[], &[x, idx32.clone(), f64s(vec![2.5])]);
        let x = i32s(rng.i32s(n, -9, 9));
        let v = i32s(rng.i32s(m, -9, 9));
        ok(device, B::IndexA, &[], &[x, idx.clone(), v]);
        let x = i64s(rng.i64s(n, 50));
        let v = i64s(rng.i64s(m, 50));
        ok(device, B::IndexA, &[], &[x, idx32, v]);
        let x = bools(rng.bools(n));
        let v = bools(rng.bools(m));
        ok(device, B::IndexA, &[], &[x, idx.clone(), v]);
        let x = syms(&rng.words(n, 3));
        let v = syms(&rng.words(m, 12));
        ok(device, B::IndexA, &[], &[x, idx, v]);
    }
    // Out of range (the first bad index is reported) and length mismatch.
    let x = i32s(vec![1, 2, 3]);
    fails(
        device,
        B::IndexA,
        &[],
        &[x.clone(), i64s(vec![0, 5, -1]), i32s(vec![9])],
    );
    fails(
        device,
        B::IndexA,
        &[],
        &[x.clone(), i32s(vec![-1]), i32s(vec![9])],
    );
    fails(
        device,
        B::IndexA,
        &[],
        &[x.clone(), i64s(vec![0, 1]), i32s(vec![9, 8, 7])],
    );
    ok(device, B::IndexA, &[], &[x, i64s(vec![]), i32s(vec![])]);
}

#[test]
fn like_and_sub_string_run_on_the_dictionary() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(8);
    let patterns = [
        "PROMO%",
        "%D",
        "%special%requests%",
        "a_c",
        "_",
        "%",
        "",
        "%a%a",
        "ü_%",
        "%_r%",
        "naïve%",
        "%é",
        "__",
        "Ä%",
        "%%",
        "xyz%",
    ];
    for &n in &[0usize, 1, 300, 1000] {
        let s = syms(&rng.words(n, 14));
        for p in patterns {
            ok(device, B::Like, &[], &[s.clone(), syms(&[p.to_string()])]);
        }
        let s = strs(&rng.words(n, 14));
        for (pos, len) in [(1, 2), (2, 3), (0, 2), (-3, 5), (5, 0), (3, 100)] {
            ok(
                device,
                B::SubString,
                &[],
                &[s.clone(), i64s(vec![pos, len])],
            );
            ok(
                device,
                B::SubString,
                &[],
                &[s.clone(), i32s(vec![pos as i32]), i32s(vec![len as i32])],
            );
        }
        fails(device, B::SubString, &[], &[s, i64s(vec![1, -1])]);
    }
}

#[test]
fn unsupported_arguments_are_errors_that_name_the_builtin() {
    let Some(device) = shared_device() else {
        return;
    };
    // Any two reals compare through their promoted type, as on the CPU (the type rules
    // accept every pair): i64 against f64 is compared as f64.
    let args = [i64s(vec![1, 2]), f64s(vec![1.0])];
    let list = arg_list(&[], &args);
    let mixed = run_library(device, B::Member, &list)
        .and_then(|v| read_back(device, &v))
        .expect("i64 vs f64");
    assert_eq!(mixed, bools(vec![true, false]));
    let text_and_number = [syms(&["a".to_string()]), f64s(vec![1.0])];
    let error =
        run_library(device, B::Member, &arg_list(&[], &text_and_number)).expect_err("sym vs f64");
    assert!(error.message.starts_with("@member: "), "{error}");
    let error = run_library(device, B::Sum, &list).expect_err("not a library kernel");
    assert!(error.message.contains("@sum"), "{error}");
    let complex = [Value::Vector(Vector::Complex(Arc::new(vec![])))];
    let error = run_library(device, B::Group, &arg_list(&[], &complex)).expect_err("complex");
    assert!(error.message.starts_with("@group: "), "{error}");
}

/// A flat list of `values` cut into cells of the given lengths (which must sum to its length).
fn flat_list(values: Value, lengths: &[usize]) -> Value {
    let Value::Vector(values) = values else {
        panic!("flat_list takes a vector");
    };
    let mut offsets = vec![0usize];
    for &l in lengths {
        offsets.push(offsets.last().copied().unwrap_or(0) + l);
    }
    assert_eq!(offsets.last().copied(), Some(values.len()), "lengths sum");
    Value::List(List::Flat {
        values,
        offsets: Arc::new(offsets),
    })
}

/// Cell lengths summing to `n`: random lengths up to `max_len`, some of them empty.
fn cell_lengths(rng: &mut Rng, n: usize, max_len: u64) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut left = n;
    while left > 0 {
        let l = (rng.below(max_len + 1) as usize).min(left);
        lengths.push(l);
        left -= l;
    }
    // Empty cells at the end too.
    lengths.push(0);
    lengths
}

/// `@each(@unique, l)`: the CPU builtin against [`each_unique`] (and [`each_library`]).
fn each_unique_same(device: &Device, l: &Value) {
    let args = arg_list(&[B::Unique], std::slice::from_ref(l));
    let cpu = call_builtin(B::Each, &args, &mut NoEnv).expect("CPU @each(@unique) runs");
    let Value::List(list) = l else {
        panic!("a list");
    };
    let gpu = each_unique(device, list).expect("GPU @each(@unique) runs");
    assert_eq!(cpu, gpu, "@each(@unique) on {l:?}");
    let routed = each_library(device, &args).expect("routed @each(@unique) runs");
    assert_eq!(cpu, routed);
}

#[test]
fn each_unique_matches_the_cpu_per_cell() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(11);
    // No cells at all, and only empty cells.
    each_unique_same(device, &flat_list(i64s(vec![]), &[]));
    each_unique_same(device, &flat_list(i64s(vec![]), &[0, 0, 0]));
    each_unique_same(device, &flat_list(syms(&[]), &[0]));
    for &n in SIZES {
        for distinct in [1, 3, 50, 1 << 20] {
            for column in columns(&mut rng, n, distinct) {
                // One cell holding everything, many small cells, a few large ones.
                each_unique_same(device, &flat_list(column.clone(), &[n]));
                for max_len in [3, 40, 700] {
                    let lengths = cell_lengths(&mut rng, n, max_len);
                    each_unique_same(device, &flat_list(column.clone(), &lengths));
                }
            }
            // One value per cell.
            let c = i64s(rng.i64s(n, distinct));
            each_unique_same(device, &flat_list(c, &vec![1; n]));
        }
        // All values equal.
        let lengths = cell_lengths(&mut rng, n, 30);
        each_unique_same(device, &flat_list(i64s(vec![7; n]), &lengths));
        each_unique_same(device, &flat_list(f64s(vec![-0.0; n]), &lengths));
        let words = vec!["PROMO".to_string(); n];
        each_unique_same(device, &flat_list(strs(&words), &lengths));
    }
    // Many cells over a larger input (q16's shape: few distinct values per cell).
    let n = 60_000;
    let lengths = cell_lengths(&mut rng, n, 12);
    each_unique_same(device, &flat_list(i32s(rng.i32s(n, 0, 10_000)), &lengths));
    each_unique_same(device, &flat_list(syms(&rng.words(n, 14)), &lengths));
}

#[test]
fn each_other_than_unique_or_of_a_mixed_list_is_not_a_gpu_kernel() {
    let Some(device) = shared_device() else {
        return;
    };
    let l = flat_list(i64s(vec![1, 2, 2]), &[1, 2]);
    let error = each_library(device, &arg_list(&[B::Sum], std::slice::from_ref(&l)))
        .expect_err("@each(@sum) is not a library kernel");
    assert!(error.message.starts_with("@each"), "{error}");
    let mixed = Value::List(List::Mixed(Arc::new(vec![i64s(vec![1]), f64s(vec![1.0])])));
    let Value::List(mixed) = mixed else {
        unreachable!()
    };
    let error = each_unique(device, &mixed).expect_err("mixed lists are not flat");
    assert!(error.message.starts_with("@each(@unique)"), "{error}");
}

#[test]
fn index_of_matches_the_cpu_including_mixed_widths_and_dictionaries() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(12);
    for &n in SIZES {
        for &m in &[0usize, 1, 300, 1000] {
            for distinct in [1u64, 5, 1 << 20] {
                let d = distinct.min(1 << 16) as i32;
                let x = i32s(rng.i32s(n, -d, d));
                let y = i32s(rng.i32s(m, -d, d));
                ok(device, B::IndexOf, &[], &[x.clone(), y]);
                let y64 = i64s(rng.i32s(m, -d, d).into_iter().map(i64::from).collect());
                ok(device, B::IndexOf, &[], &[x.clone(), y64]);
                let yf = f64s(rng.i32s(m, -d, d).into_iter().map(f64::from).collect());
                ok(device, B::IndexOf, &[], &[x, yf]);
                let xs = syms(&rng.words(n, distinct));
                ok(
                    device,
                    B::IndexOf,
                    &[],
                    &[xs.clone(), syms(&rng.words(m, distinct))],
                );
                ok(device, B::IndexOf, &[], &[xs, strs(&rng.words(m, 14))]);
                ok(
                    device,
                    B::IndexOf,
                    &[],
                    &[f64s(rng.f64s(n)), f64s(rng.f64s(m))],
                );
                let xd = i64s(rng.i64s(n, distinct));
                let yd = if n > 0 {
                    // Half of the probes drawn from x itself.
                    let Value::Vector(Vector::I64(xv)) = &xd else {
                        unreachable!()
                    };
                    let mut v = rng.i64s(m, distinct);
                    for (j, e) in v.iter_mut().enumerate() {
                        if j % 2 == 0 {
                            *e = xv[rng.below(n as u64) as usize];
                        }
                    }
                    i64s(v)
                } else {
                    i64s(rng.i64s(m, distinct))
                };
                ok(device, B::IndexOf, &[], &[xd, yd]);
                let dx = dates(rng.i32s(n, 8000, 8000 + d));
                ok(
                    device,
                    B::IndexOf,
                    &[],
                    &[dx, dates(rng.i32s(m, 8000, 8000 + d))],
                );
            }
        }
        // All equal: every probe finds position 0.
        ok(
            device,
            B::IndexOf,
            &[],
            &[i64s(vec![3; n]), i64s(vec![3, 4, 3])],
        );
    }
    // Larger: a table of many slots.
    let x = i64s(rng.i64s(100_000, 30_000));
    let y = i64s(rng.i64s(50_000, 30_000));
    ok(device, B::IndexOf, &[], &[x, y]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn order_and_group_agree_with_the_cpu_on_small_random_keys(
        a in prop::collection::vec(-3i64..3, 0..80),
        seed in any::<u64>(),
        up in any::<bool>(),
    ) {
        let Some(device) = shared_device() else { return Ok(()) };
        let mut rng = Rng(seed);
        let n = a.len();
        let b = f64s(rng.f64s(n));
        let keys = list(vec![i64s(a), b]);
        ok(device, B::Order, &[], &[keys.clone(), bools(vec![up, !up])]);
        ok(device, B::Group, &[], &[keys]);
    }
}

/// Results do not depend on the workgroup count or the tile size: a device capped at 3
/// workgroups with one item per invocation makes every grid-stride loop run many rounds
/// and every scan several levels.
#[test]
fn results_do_not_depend_on_workgroup_count_or_tile_size() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    device.set_workgroup_cap(Some(3));
    device
        .set_items_per_thread(1)
        .expect("1 item per invocation is allowed");
    let mut rng = Rng(9);
    // More chunks of @order's merge sort than workgroups.
    let long = columns(&mut rng, 5 * 4096 + 7, 40);
    ok(
        &device,
        B::Order,
        &[],
        &[
            list(vec![long[5].clone(), long[0].clone()]),
            bools(vec![true, false]),
        ],
    );
    let n = 3000;
    let c = columns(&mut rng, n, 40);
    let keys = list(vec![c[5].clone(), c[1].clone(), c[2].clone()]);
    ok(
        &device,
        B::Order,
        &[],
        &[keys.clone(), bools(vec![false, true, false])],
    );
    ok(&device, B::Group, &[], std::slice::from_ref(&keys));
    ok(&device, B::Unique, &[], std::slice::from_ref(&keys));
    ok(
        &device,
        B::Member,
        &[],
        &[c[0].clone(), i32s(rng.i32s(100, -40, 40))],
    );
    let b = list(vec![c[0].clone(), c[3].clone()]);
    let a = list(vec![
        i32s(rng.i32s(500, -40, 40)),
        dates(rng.i32s(500, 8000, 8040)),
    ]);
    ok(&device, B::JoinIndex, &[B::Eq, B::Lt], &[a, b]);
    ok(
        &device,
        B::IndexOf,
        &[],
        &[c[1].clone(), i64s(rng.i64s(700, 40))],
    );
    let lengths = cell_lengths(&mut rng, n, 50);
    each_unique_same(&device, &flat_list(c[5].clone(), &lengths));
    each_unique_same(&device, &flat_list(c[2].clone(), &lengths));
}

/// Larger inputs: several radix-sort tiles and a hash table of many slots.
#[test]
fn larger_inputs_match_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(10);
    let n = 150_000;
    let a = i64s(rng.i64s(n, 20_000));
    let d = dates(rng.i32s(n, 8000, 10_000));
    let keys = list(vec![d.clone(), a.clone()]);
    ok(
        device,
        B::Order,
        &[],
        &[keys.clone(), bools(vec![true, false])],
    );
    ok(device, B::Group, &[], std::slice::from_ref(&keys));
    ok(device, B::Unique, &[], std::slice::from_ref(&a));
    let probe = i64s(rng.i64s(20_000, 20_000));
    ok(device, B::Member, &[], &[probe.clone(), a.clone()]);
    ok(device, B::JoinIndex, &[B::Eq], &[probe, a]);
}
