//! The relation library kernels of Datalog (`@tuple_unique`, `@tuple_diff`, `@tuple_merge`,
//! `@sorted_join`) on the GPU against the CPU builtins, on seeded random relations
//! including empty and all-duplicate ones: results must be identical, errors too. Needs a
//! GPU adapter (lavapipe will do); HORSEC_REQUIRE_GPU=1 turns a missing one into a failure.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use horsec_runtime::builtin::Builtin as B;
use horsec_runtime::cpu::{call_builtin, ArgValue, Env};
use horsec_runtime::error::{Result, RuntimeError};
use horsec_runtime::gpu::library::run_library;
use horsec_runtime::gpu::relation::{
    tuple_diff_within, tuple_merge_within, tuple_unique_within, DeviceRelation, RelationError,
};
use horsec_runtime::gpu::{require_gpu_or_skip, Device};
use horsec_runtime::plan::Callee;
use horsec_runtime::value::{List, Table, Value, Vector};

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
        Err(RuntimeError::new(format!("no table {name}")))
    }
    fn invoke(&mut self, _: Callee, _: &[Value]) -> Result<Vec<Value>> {
        Err(RuntimeError::new("no functions"))
    }
    fn print(&mut self, _: &Value) -> Result<()> {
        Ok(())
    }
}

/// A relation value of `columns`.
fn relation(columns: Vec<Vec<i64>>) -> Value {
    let mut offsets = vec![0];
    let mut values = Vec::new();
    for c in columns {
        values.extend(c);
        offsets.push(values.len());
    }
    Value::List(List::Flat {
        values: Vector::I64(Arc::new(values)),
        offsets: Arc::new(offsets),
    })
}

/// A small xorshift generator, so the data is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `rows` random tuples of `arity` values in `-range..range`.
    fn relation(&mut self, rows: usize, arity: usize, range: i64) -> Vec<Vec<i64>> {
        (0..arity)
            .map(|_| {
                (0..rows)
                    .map(|_| (self.next() % (2 * range as u64)) as i64 - range)
                    .collect()
            })
            .collect()
    }
}

fn both(device: &Device, b: B, args: &[Value]) -> (Result<Value>, Result<Value>) {
    let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
    (
        call_builtin(b, &refs, &mut NoEnv),
        run_library(device, b, &refs).map(|v| on_host(device, &v)),
    )
}

/// A relation the GPU kernels return (its columns left on the device), downloaded into the
/// host relation value the CPU builtins return.
fn on_host(device: &Device, value: &Value) -> Value {
    let Value::List(List::Mixed(cells)) = value else {
        panic!("a GPU relation is a list of device columns, got {value:?}");
    };
    relation(
        cells
            .iter()
            .map(|cell| match cell {
                Value::Device(d) => {
                    assert_eq!(d.ty, horsec_runtime::types::Type::I64);
                    if d.len == 0 {
                        return Vec::new();
                    }
                    let words = device.download_range(&d.buffer, 0, 2 * d.len).unwrap();
                    bytemuck::pod_collect_to_vec(&words)
                }
                other => panic!("a GPU relation column is on the device, got {other:?}"),
            })
            .collect(),
    )
}

fn assert_same(device: &Device, b: B, args: &[Value]) -> Value {
    let (cpu, gpu) = both(device, b, args);
    match (cpu, gpu) {
        (Ok(c), Ok(g)) => {
            assert_eq!(c, g, "@{b}: GPU differs from CPU");
            c
        }
        (Err(c), Err(g)) => {
            // The GPU's message ends in " (GPU)" where the library adds it.
            assert_eq!(
                g.message.trim_end_matches(" (GPU)"),
                c.message,
                "@{b}: different errors"
            );
            Value::List(List::Mixed(Arc::new(Vec::new())))
        }
        (c, g) => panic!("@{b}: CPU {c:?} but GPU {g:?}"),
    }
}

/// A sorted duplicate-free relation (`@tuple_unique` on the CPU).
fn sorted(columns: Vec<Vec<i64>>) -> Value {
    let refs = [relation(columns)];
    let args: Vec<ArgValue<'_>> = refs.iter().map(ArgValue::Value).collect();
    call_builtin(B::TupleUnique, &args, &mut NoEnv).expect("sorts")
}

#[test]
fn tuple_unique_matches_the_cpu_on_random_empty_and_all_duplicate_relations() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0x5eed);
    for (rows, arity, range) in [
        (0, 2, 5),
        (1, 1, 5),
        (500, 2, 8),
        (3000, 3, 1 << 40),
        (777, 1, 3),
    ] {
        assert_same(
            device,
            B::TupleUnique,
            &[relation(rng.relation(rows, arity, range))],
        );
    }
    let duplicates = relation(vec![vec![7; 1000], vec![-3; 1000]]);
    let unique = assert_same(device, B::TupleUnique, &[duplicates]);
    assert_eq!(unique, relation(vec![vec![7], vec![-3]]));
}

/// `@tuple_unique` with its keys cut into column groups (each group's key matrix at most
/// `key_bytes`, as a relation whose keys pass one storage binding is) against the CPU.
fn assert_unique_split(device: &Device, columns: Vec<Vec<i64>>, key_bytes: u64, what: &str) {
    let cpu_result = cpu(B::TupleUnique, &[relation(columns.clone())]);
    let refs: Vec<&[i64]> = columns.iter().map(Vec::as_slice).collect();
    let uploaded = DeviceRelation::upload(device, &refs).expect("uploads");
    let unique = tuple_unique_within(device, &uploaded, key_bytes).expect("runs on the GPU");
    let gpu_result = relation(unique.download(device).expect("downloads"));
    assert_eq!(gpu_result, cpu_result, "{what}, {key_bytes} key bytes");
}

#[test]
fn tuple_unique_with_keys_in_column_groups_matches_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0xc0ffee);
    let mut cases: Vec<(String, Vec<Vec<i64>>)> = vec![
        ("empty".into(), vec![Vec::new(), Vec::new(), Vec::new()]),
        ("one row".into(), vec![vec![4], vec![-4], vec![0]]),
        (
            "all duplicates".into(),
            vec![vec![7; 900], vec![-3; 900], vec![1 << 40; 900]],
        ),
    ];
    for (rows, arity, range) in [(2000, 2, 6), (1500, 3, 4), (1200, 4, 1 << 40), (800, 3, 3)] {
        cases.push((
            format!("random {rows}x{arity} below {range}"),
            rng.relation(rows, arity, range),
        ));
    }
    // One first-column value holding most rows (the rest spread), and a constant middle
    // column: groups whose words are all equal sort nothing.
    let mut skewed = rng.relation(3000, 3, 50);
    for (i, v) in skewed[0].iter_mut().enumerate() {
        if i % 10 != 0 {
            *v = -17;
        }
    }
    skewed[1] = vec![i64::MIN; 3000];
    skewed[1][5] = i64::MAX;
    cases.push(("skewed".into(), skewed));
    for (what, columns) in cases {
        let rows = columns[0].len() as u64;
        // One column per group, two (and a last group of one), and all in one.
        for key_bytes in [1, 2 * 8 * rows.max(1), u64::MAX] {
            assert_unique_split(device, columns.clone(), key_bytes, &what);
        }
    }
}

#[test]
fn tuple_diff_and_merge_match_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(42);
    for (rows_a, rows_b, range) in [
        (0, 0, 4),
        (0, 50, 4),
        (50, 0, 4),
        (800, 600, 20),
        (2000, 2000, 1 << 33),
    ] {
        let a = sorted(rng.relation(rows_a, 2, range));
        let b = sorted(rng.relation(rows_b, 2, range));
        assert_same(device, B::TupleDiff, &[a.clone(), b.clone()]);
        assert_same(device, B::TupleMerge, &[a.clone(), b.clone()]);
        assert_same(device, B::TupleMerge, &[a.clone(), a.clone()]);
        assert_same(device, B::TupleDiff, &[a.clone(), a]);
    }
}

/// `@tuple_diff` or `@tuple_merge` on the GPU with no key matrix over `key_bytes`, as a
/// host relation, or the precondition's message.
fn diff_or_merge_within(
    device: &Device,
    b: B,
    a: &[Vec<i64>],
    other: &[Vec<i64>],
    key_bytes: u64,
) -> std::result::Result<Value, String> {
    let upload = |columns: &[Vec<i64>]| {
        let refs: Vec<&[i64]> = columns.iter().map(Vec::as_slice).collect();
        DeviceRelation::upload(device, &refs).expect("uploads")
    };
    let (a, other) = (upload(a), upload(other));
    let result = match b {
        B::TupleDiff => tuple_diff_within(device, &a, &other, key_bytes),
        _ => tuple_merge_within(device, &a, &other, key_bytes),
    };
    match result {
        Ok(r) => Ok(relation(r.download(device).expect("downloads"))),
        Err(RelationError::Precondition(m)) => Err(m),
        Err(RelationError::Gpu(e)) => panic!("@{b} failed on the GPU: {e}"),
    }
}

/// A relation's columns on the host.
type HostColumns = Vec<Vec<i64>>;

/// A relation's rows sorted and deduplicated, as columns.
fn sorted_columns(columns: Vec<Vec<i64>>) -> Vec<Vec<i64>> {
    let arity = columns.len();
    let rows: BTreeSet<Vec<i64>> = (0..columns.first().map_or(0, Vec::len))
        .map(|r| columns.iter().map(|c| c[r]).collect())
        .collect();
    (0..arity)
        .map(|c| rows.iter().map(|row| row[c]).collect())
        .collect()
}

#[test]
fn tuple_diff_and_merge_keyed_by_column_groups_match_the_cpu() {
    // Relations whose key matrix passes one storage binding (an H100's 2 GiB at 1.3·10^8
    // rows of two columns), scaled down: the same calls with every key matrix limited to
    // `key_bytes`, so that the operands are keyed one column (or two) per group.
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0x5eed);
    let empty = |arity: usize| vec![Vec::new(); arity];
    let mut cases: Vec<(String, HostColumns, HostColumns)> = vec![
        ("both empty".into(), empty(2), empty(2)),
        (
            "a empty".into(),
            empty(2),
            sorted_columns(rng.relation(300, 2, 9)),
        ),
        (
            "b empty".into(),
            sorted_columns(rng.relation(300, 2, 9)),
            empty(2),
        ),
        (
            "one row each".into(),
            vec![vec![1], vec![2]],
            vec![vec![1], vec![3]],
        ),
    ];
    for (rows_a, rows_b, arity, range) in [
        (900, 700, 2, 20),
        (3000, 40, 2, 1 << 40),
        (40, 3000, 3, 7),
        (1200, 1200, 3, 3),
        (2000, 1500, 4, 5),
    ] {
        let a = sorted_columns(rng.relation(rows_a, arity, range));
        let b = sorted_columns(rng.relation(rows_b, arity, range));
        cases.push((
            format!("random {rows_a}, {rows_b} of {arity} below {range}"),
            a,
            b,
        ));
    }
    // Rows equal on the first column everywhere, so the later groups decide everything.
    let mut first_equal = sorted_columns(rng.relation(1000, 2, 50));
    first_equal[0] = vec![-5; first_equal[0].len()];
    let first_equal = sorted_columns(first_equal);
    let mut other = sorted_columns(rng.relation(800, 2, 50));
    other[0] = vec![-5; other[0].len()];
    cases.push((
        "first column constant".into(),
        first_equal,
        sorted_columns(other),
    ));
    for (what, a, b) in cases {
        let rows = (a[0].len() + b[0].len()) as u64;
        for key_bytes in [1, 2 * 8 * rows.max(1), u64::MAX] {
            let case = format!("{what}, {key_bytes} key bytes");
            for (a, b) in [(&a, &b), (&b, &a), (&a, &a)] {
                for builtin in [B::TupleDiff, B::TupleMerge] {
                    let expected = cpu(builtin, &[relation(a.clone()), relation(b.clone())]);
                    let got = diff_or_merge_within(device, builtin, a, b, key_bytes);
                    assert_eq!(got, Ok(expected), "@{builtin}: {case}");
                }
            }
        }
    }
    // Unsorted and duplicated operands: the CPU's error, checked column group by group.
    let unsorted = vec![vec![1, 1, 2, 2], vec![5, 6, 4, 3]];
    let duplicated = vec![vec![1, 2, 2], vec![5, 6, 6]];
    let fine = vec![vec![0, 9], vec![0, 0]];
    for (a, b) in [
        (&unsorted, &fine),
        (&fine, &duplicated),
        (&duplicated, &unsorted),
    ] {
        for builtin in [B::TupleDiff, B::TupleMerge] {
            let refs = [relation(a.clone()), relation(b.clone())];
            let refs: Vec<ArgValue<'_>> = refs.iter().map(ArgValue::Value).collect();
            let expected = call_builtin(builtin, &refs, &mut NoEnv)
                .unwrap_err()
                .message;
            // The library prefixes the builtin's name; the kernels' message is the rest.
            let got = diff_or_merge_within(device, builtin, a, b, 1)
                .map_err(|m| format!("@{builtin}: {m}"));
            assert_eq!(got, Err(expected), "@{builtin}");
        }
    }
}

#[test]
fn semi_naive_steps_keyed_by_column_groups_chain_like_the_cpu() {
    // delta = new − full, full = full ∪ delta, over iterations, every key matrix in column
    // groups: the merge's group key matrices are kept and read by the next iteration.
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(99);
    let key_bytes = 1;
    let upload = |columns: &[Vec<i64>]| {
        let refs: Vec<&[i64]> = columns.iter().map(Vec::as_slice).collect();
        DeviceRelation::upload(device, &refs).expect("uploads")
    };
    let ok = |r: std::result::Result<DeviceRelation, RelationError>| match r {
        Ok(r) => r,
        Err(RelationError::Precondition(m)) => panic!("{m}"),
        Err(RelationError::Gpu(e)) => panic!("{e}"),
    };
    let mut full_cpu = relation(sorted_columns(rng.relation(200, 2, 30)));
    let mut full = upload(&full_cpu.clone().columns_i64());
    for step in 0..6 {
        let new = sorted_columns(rng.relation(150 * (step + 1), 2, 30));
        let delta_cpu = cpu(B::TupleDiff, &[relation(new.clone()), full_cpu.clone()]);
        full_cpu = cpu(B::TupleMerge, &[full_cpu.clone(), delta_cpu.clone()]);
        let delta = ok(tuple_diff_within(device, &upload(&new), &full, key_bytes));
        full = ok(tuple_merge_within(device, &full, &delta, key_bytes));
        assert_eq!(
            relation(delta.download(device).expect("downloads")),
            delta_cpu,
            "delta {step}"
        );
        assert_eq!(
            relation(full.download(device).expect("downloads")),
            full_cpu,
            "full {step}"
        );
    }
}

#[test]
fn sorted_join_matches_the_cpu_with_skewed_and_missing_keys() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(7);
    for (rows_p, rows_b, range) in [(0, 10, 4), (10, 0, 4), (300, 500, 6), (1000, 1000, 1000)] {
        let probe = relation(rng.relation(rows_p, 1, range));
        // Build keys: sorted, with duplicates (one key column of a sorted pair relation).
        let build = sorted(rng.relation(rows_b, 2, range));
        let Value::List(list) = &build else {
            unreachable!()
        };
        let key = relation(vec![list.cells()[0].clone().into_i64_column()]);
        assert_same(device, B::SortedJoin, &[probe, key]);
    }
    // Every probe row matches every build row.
    let all = assert_same(
        device,
        B::SortedJoin,
        &[relation(vec![vec![1; 40]]), relation(vec![vec![1; 30]])],
    );
    let Value::List(List::Flat { offsets, .. }) = all else {
        panic!("pairs")
    };
    assert_eq!(offsets.as_slice(), &[0, 1200, 2400]);
    // Two key columns, many distinct keys (the hash table's probing), some absent.
    let build = sorted(rng.relation(20_000, 2, 3000));
    let probe = relation(rng.relation(5_000, 2, 3500));
    assert_same(device, B::SortedJoin, &[probe, build]);
}

/// `@join_unique(probe, build, keys, picks[, full])` with its (column) arguments.
fn join_unique_args(
    probe: Value,
    build: Value,
    keys: i64,
    picks: &[i64],
    full: Option<Value>,
) -> Vec<Value> {
    let mut args = vec![
        probe,
        build,
        Value::from_i64s(vec![keys]),
        Value::from_i64s(picks.to_vec()),
    ];
    args.extend(full);
    args
}

/// The join's distinct picked tuples on the GPU equal the CPU's, in batches of any size
/// (forced small, so that small inputs are split, a probe row's matches across batches
/// too) and unbatched: random, empty and all-duplicate inputs, with and without tuples to
/// leave out. The GPU reports how many batches it ran.
#[test]
fn join_unique_matches_the_cpu_in_batches_of_any_size() {
    use horsec_runtime::gpu::relation::take_join_stats;
    use horsec_runtime::relation::set_join_batch_rows;
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(31);
    let empty2 = sorted(vec![Vec::new(), Vec::new()]);
    for batch in [Some(1), Some(7), Some(300), None] {
        set_join_batch_rows(batch);
        let mut cases: Vec<Vec<Value>> = Vec::new();
        // Inputs of some 50 pairs for the smallest batches, of about 12 000 for the others.
        let inputs: &[(usize, usize, i64)] = match batch {
            Some(rows) if rows < 100 => &[(0, 10, 4), (10, 0, 4), (20, 30, 6)],
            _ => &[(0, 10, 4), (300, 500, 6), (1000, 1000, 40)],
        };
        for &(rows_p, rows_b, range) in inputs {
            let probe = relation(rng.relation(rows_p, 2, range));
            let build = sorted(rng.relation(rows_b, 3, range));
            // (probe 1, build 1, build 2): the two sides' columns in any order.
            cases.push(join_unique_args(
                probe.clone(),
                build.clone(),
                1,
                &[3, 1, 4],
                None,
            ));
            cases.push(join_unique_args(
                probe.clone(),
                build.clone(),
                1,
                &[4, 3],
                None,
            ));
            // Tuples already known: half of the result, and some that are not in it.
            let result = cpu(
                B::JoinUnique,
                &join_unique_args(probe.clone(), build.clone(), 1, &[1, 3], None),
            );
            let Value::List(list) = &result else {
                unreachable!()
            };
            let known: Vec<Vec<i64>> = list
                .cells()
                .into_iter()
                .map(|c| c.into_i64_column().into_iter().step_by(2).collect())
                .collect();
            let mut extra = rng.relation(50, 2, range);
            for (column, more) in extra.iter_mut().zip(known) {
                column.extend(more);
            }
            let full = sorted(extra);
            cases.push(join_unique_args(
                probe.clone(),
                build.clone(),
                1,
                &[1, 3],
                Some(full),
            ));
            cases.push(join_unique_args(
                probe.clone(),
                build.clone(),
                1,
                &[1, 3],
                Some(result),
            ));
            cases.push(join_unique_args(
                probe,
                build.clone(),
                1,
                &[0, 3],
                Some(empty2.clone()),
            ));
            // Two key columns.
            let probe = relation(rng.relation(rows_p, 3, range));
            cases.push(join_unique_args(probe, build, 2, &[2, 5], None));
        }
        // All duplicates: every probe row matches every build row and every pair gives the
        // same tuple; one probe row's 50 matches span batches.
        cases.push(join_unique_args(
            relation(vec![vec![1; 40], vec![5; 40]]),
            relation(vec![vec![1; 30], vec![9; 30]]),
            1,
            &[1, 3],
            None,
        ));
        cases.push(join_unique_args(
            relation(vec![vec![2], vec![0]]),
            sorted(vec![vec![2; 50], (0..50).collect()]),
            1,
            &[3, 1],
            None,
        ));
        for args in &cases {
            let pairs = cpu(
                B::SortedJoin,
                &[
                    relation(vec![args[0].clone().cells_of(0)]),
                    relation(vec![args[1].clone().cells_of(0)]),
                ],
            );
            let Value::List(List::Flat { offsets, .. }) = pairs else {
                panic!("pairs")
            };
            let pairs = offsets[1];
            let _ = take_join_stats();
            assert_same(device, B::JoinUnique, args);
            if args[2] == Value::from_i64s(vec![1]) {
                let batches = take_join_stats().batches as usize;
                let expected = pairs.div_ceil(batch.unwrap_or(usize::MAX).min(pairs.max(1)));
                assert_eq!(batches, expected, "{pairs} pairs in batches of {batch:?}");
            }
        }
    }
    set_join_batch_rows(None);
    let unique = cpu(
        B::JoinUnique,
        &join_unique_args(
            relation(vec![vec![1; 40], vec![5; 40]]),
            relation(vec![vec![1; 30], vec![9; 30]]),
            1,
            &[1, 3],
            None,
        ),
    );
    assert_eq!(unique, relation(vec![vec![5], vec![9]]));
}

/// Broken preconditions and bad arguments of `@join_unique` are the same error on both
/// backends.
#[test]
fn join_unique_refuses_the_same_arguments_on_both_backends() {
    let Some(device) = shared_device() else {
        return;
    };
    let probe = relation(vec![vec![1, 2], vec![3, 4]]);
    let build = relation(vec![vec![1, 2], vec![5, 6]]);
    let unsorted = relation(vec![vec![2, 1], vec![5, 6]]);
    for (args, message) in [
        (
            join_unique_args(probe.clone(), unsorted.clone(), 1, &[1, 3], None),
            "argument 2 is not sorted",
        ),
        (
            join_unique_args(probe.clone(), build.clone(), 1, &[1, 3], Some(unsorted)),
            "argument 5 is not sorted and duplicate-free",
        ),
        (
            join_unique_args(probe.clone(), build.clone(), 1, &[1, 4], None),
            "argument 4: column 4 is past",
        ),
        (
            join_unique_args(probe.clone(), build.clone(), 3, &[1], None),
            "argument 3: 3 key columns",
        ),
        (
            join_unique_args(probe.clone(), build.clone(), 1, &[], None),
            "argument 4 (the result's columns) is empty",
        ),
        (
            join_unique_args(
                probe,
                build.clone(),
                1,
                &[1, 3],
                Some(relation(vec![vec![1]])),
            ),
            "different arities",
        ),
    ] {
        let (cpu, gpu) = both(device, B::JoinUnique, &args);
        let (cpu, gpu) = (cpu.unwrap_err(), gpu.unwrap_err());
        assert!(cpu.message.contains(message), "{}", cpu.message);
        assert_eq!(gpu.message.trim_end_matches(" (GPU)"), cpu.message);
    }
}

#[test]
fn relations_on_the_device_chain_from_kernel_to_kernel() {
    // A device of its own: the traffic counters are per device, and the other tests of this
    // binary run in parallel on the shared one.
    let Some(own_device) = require_gpu_or_skip() else {
        return;
    };
    let device = &own_device;
    let mut rng = Rng(99);
    let (a, b) = (rng.relation(3000, 2, 40), rng.relation(2000, 2, 40));
    let call = |builtin: B, args: &[Value]| -> Value {
        let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
        run_library(device, builtin, &refs).expect("runs on the GPU")
    };
    let (ua, ub) = (
        call(B::TupleUnique, &[relation(a.clone())]),
        call(B::TupleUnique, &[relation(b.clone())]),
    );
    assert!(
        ua.on_device() && ub.on_device(),
        "results stay on the device"
    );
    let before = device.traffic();
    let diff = call(B::TupleDiff, &[ua.clone(), ub.clone()]);
    let merged = call(B::TupleMerge, &[ua.clone(), diff.clone()]);
    let pairs = call(B::SortedJoin, &[merged.clone(), ub.clone()]);
    let moved = device.traffic() - before;
    // Device inputs are not uploaded again (the relations are 32 to 96 KB): what goes up is
    // kernel parameters (32 bytes per dispatch); only status words and sizes come back.
    assert!(moved.uploaded < 4096, "uploaded {} bytes", moved.uploaded);
    assert!(
        moved.downloaded < 256,
        "downloaded {} bytes",
        moved.downloaded
    );
    let (ha, hb) = (sorted(a), sorted(b));
    let host_diff = cpu(B::TupleDiff, &[ha.clone(), hb.clone()]);
    assert_eq!(on_host(device, &diff), host_diff);
    let host_merged = cpu(B::TupleMerge, &[ha, host_diff]);
    assert_eq!(on_host(device, &merged), host_merged);
    assert_eq!(
        on_host(device, &pairs),
        cpu(B::SortedJoin, &[host_merged, hb])
    );
}

/// The semi-naive step `full = @tuple_merge(full, @tuple_diff(new, full))` on the GPU,
/// chained (each merge's key matrix feeds the next diff and merge, and a delta known
/// disjoint from `full` is merged without dropping common rows), against the CPU's
/// `@tuple_merge(full, new)`; with a workgroup cap so the merge path's invocations loop.
#[test]
fn semi_naive_steps_chain_diff_and_merge_like_the_cpu() {
    // A device of its own: the workgroup cap is per device.
    let Some(own_device) = require_gpu_or_skip() else {
        return;
    };
    let device = &own_device;
    let call = |builtin: B, args: &[Value]| -> Value {
        let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
        run_library(device, builtin, &refs).expect("runs on the GPU")
    };
    let mut rng = Rng(2024);
    for cap in [None, Some(3)] {
        device.set_workgroup_cap(cap);
        for (start, step, arity, range) in [
            (0, 40, 2, 6),
            (1, 500, 2, 30),
            (700, 1, 2, 30),
            (2000, 300, 3, 9),
            (300, 2000, 1, 5000),
            (1500, 1500, 2, 1 << 35),
        ] {
            let mut host_full = sorted(rng.relation(start, arity, range));
            let mut full = call(B::TupleUnique, std::slice::from_ref(&host_full));
            for round in 0..4 {
                // Round 3: every new tuple is already in full (all duplicates).
                let new_host = if round == 3 {
                    host_full.clone()
                } else {
                    sorted(rng.relation(step, arity, range))
                };
                let new = call(B::TupleUnique, std::slice::from_ref(&new_host));
                let delta = call(B::TupleDiff, &[new.clone(), full.clone()]);
                let host_delta = cpu(B::TupleDiff, &[new_host.clone(), host_full.clone()]);
                assert_eq!(on_host(device, &delta), host_delta, "delta, round {round}");
                full = call(B::TupleMerge, &[full.clone(), delta]);
                host_full = cpu(B::TupleMerge, &[host_full.clone(), new_host]);
                assert_eq!(
                    on_host(device, &full),
                    host_full,
                    "full after round {round} ({start} + {step} rows, cap {cap:?})"
                );
            }
        }
    }
    device.set_workgroup_cap(None);
}

/// Merges whose second relation overlaps the first (not a diff's result): the common rows
/// are dropped first; all-duplicate and empty sides included.
#[test]
fn merges_of_overlapping_relations_match_the_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(77);
    for (rows_a, rows_b, range) in [(1, 1, 1), (100, 3000, 12), (3000, 100, 12), (900, 900, 3)] {
        let a = sorted(rng.relation(rows_a, 2, range));
        let b = sorted(rng.relation(rows_b, 2, range));
        assert_same(device, B::TupleMerge, &[a.clone(), b.clone()]);
        assert_same(device, B::TupleMerge, &[b.clone(), a.clone()]);
        let empty = sorted(vec![Vec::new(), Vec::new()]);
        assert_same(device, B::TupleMerge, &[a.clone(), empty.clone()]);
        assert_same(device, B::TupleMerge, &[empty.clone(), b.clone()]);
        assert_same(device, B::TupleDiff, &[empty, b]);
    }
}

fn cpu(b: B, args: &[Value]) -> Value {
    let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
    call_builtin(b, &refs, &mut NoEnv).expect("runs on the CPU")
}

#[test]
fn unsorted_inputs_are_the_same_error_on_both_backends() {
    let Some(device) = shared_device() else {
        return;
    };
    let unsorted = relation(vec![vec![3, 1, 2]]);
    let sorted_one = relation(vec![vec![1, 2]]);
    let duplicated = relation(vec![vec![1, 1, 2]]);
    for (b, args) in [
        (B::TupleDiff, vec![unsorted.clone(), sorted_one.clone()]),
        (B::TupleMerge, vec![sorted_one.clone(), duplicated.clone()]),
        (B::SortedJoin, vec![sorted_one.clone(), unsorted.clone()]),
    ] {
        let (cpu, gpu) = both(device, b, &args);
        let (cpu, gpu) = (cpu.unwrap_err(), gpu.unwrap_err());
        assert!(cpu.message.contains("is not sorted"), "{}", cpu.message);
        assert_eq!(gpu.message.trim_end_matches(" (GPU)"), cpu.message);
    }
    // Duplicates are fine on the build side of a join.
    assert_same(device, B::SortedJoin, &[sorted_one, duplicated]);
}

trait Columns {
    /// The i64 columns of a relation value.
    fn columns_i64(self) -> Vec<Vec<i64>>;
}

impl Columns for Value {
    fn columns_i64(self) -> Vec<Vec<i64>> {
        let Value::List(list) = self else {
            panic!("expected a relation")
        };
        list.cells()
            .iter()
            .map(|c| c.clone().into_i64_column())
            .collect()
    }
}

trait I64Column {
    /// Column `c` of a relation.
    fn cells_of(self, c: usize) -> Vec<i64>;
    fn into_i64_column(self) -> Vec<i64>;
}

impl I64Column for Value {
    fn cells_of(self, c: usize) -> Vec<i64> {
        let Value::List(list) = self else {
            panic!("expected a relation")
        };
        list.cells()[c].clone().into_i64_column()
    }

    fn into_i64_column(self) -> Vec<i64> {
        match self {
            Value::Vector(Vector::I64(v)) => v.to_vec(),
            other => panic!("expected i64, got {other:?}"),
        }
    }
}
