//! GPU time of hand-written variants of TPC-H q6's kernel on the real columns, by timestamps
//! around one dispatch of 1,024 workgroups (or the count a variant names), medians of RUNS:
//! the experiment behind coded inputs (`src/codegen/generate/coded.rs`) and behind the NaN
//! test of comparisons with a literal (`src/codegen/generate/elementwise.rs`).
//!
//!     cargo run --release -p horsec-runtime --example q6_kernel_variants -- [SF] [RUNS]
//!
//! - `eager`: the generated kernel's loop, each row's shipdate, quantity and discount read a
//!   row ahead (f64), the price only for rows that pass;
//! - `lazy`: each conjunct's column read only for the rows the earlier ones passed, one row
//!   or a batch of rows a step;
//! - `coded`: quantity and discount as byte codes into a dictionary in workgroup memory;
//! - the NaN test of each comparison with a literal: a `class_f64` of both operands (`class
//!   checks`), one test of the column's bits in 32-bit words or in one 64-bit word, or none.
//!
//! H200, SF 1 (µs): eager 38.5 with class checks, 37.0 with the 64-bit test; coded 33.0 and
//! 26.6; lazy in batches of 4, 37.5 and 35.2; lazy a row a step 43.8.
//! Each variant's sum is checked against the CPU's.
use horsec_runtime::data::Database;
use horsec_runtime::value::{Value, Vector};
use std::collections::BTreeMap;

const HEADER: &str = r#"
struct Params { zero: u32, n: u32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> shipdate: array<i32>;
@group(0) @binding(2) var<storage, read> quantity: array<f64>;
@group(0) @binding(3) var<storage, read> discount: array<f64>;
@group(0) @binding(4) var<storage, read> price: array<f64>;
@group(0) @binding(5) var<storage, read_write> partials: array<f64>;
@group(0) @binding(6) var<storage, read> qcodes: array<u32>;
@group(0) @binding(7) var<storage, read> dcodes: array<u32>;
@group(0) @binding(8) var<storage, read> dict: array<f64>;
const WORKGROUP_SIZE: u32 = 256u;
var<workgroup> shared_f64: array<f64, WORKGROUP_SIZE>;
var<workgroup> wdict: array<f64, 128>;
fn workgroup_sum_f64(local: u32, value: f64) -> f64 {
    shared_f64[local] = value;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {
        if local < half { shared_f64[local] = shared_f64[local] + shared_f64[local + half]; }
        workgroupBarrier();
    }
    let total = shared_f64[0];
    workgroupBarrier();
    return total;
}
fn class_f64(x: f64) -> u32 {
    let bits = bitcast<u64>(x);
    let hi = u32(bits >> 32u) & 0x7fffffffu;
    let lo = u32(bits & 4294967295lu);
    if hi >= 0x7ff00000u { return select(2u, 3u, hi > 0x7ff00000u || lo != 0u); }
    return select(1u, 0u, hi == 0u && lo == 0u);
}
fn unordered_f64(a: f64, b: f64) -> bool { return max(class_f64(a), class_f64(b)) == 3u; }
fn special_f64(bits: u64) -> f64 { return bitcast<f64>(bits | u64(params.zero)); }
fn date_ok(d: i32) -> bool { return d >= 8766i && d < 9131i; }
fn qty_ok(q: f64) -> bool { return q < special_f64(0x4038000000000000lu) && !unordered_f64(q, special_f64(0x4038000000000000lu)); }
fn disc_ok(x: f64) -> bool {
    let lo = special_f64(0x3fa999999999999alu);
    let hi = special_f64(0x3fb1eb851eb851eclu);
    return (x >= lo && !unordered_f64(x, lo)) && (x <= hi && !unordered_f64(x, hi));
}
fn is_nan_f64(x: f64) -> bool {
    let bits = bitcast<u64>(x);
    let hi = u32(bits >> 32u) & 0x7fffffffu;
    return hi > 0x7ff00000u || (hi == 0x7ff00000u && u32(bits & 4294967295lu) != 0u);
}
fn is_nan64_f64(x: f64) -> bool {
    return (bitcast<u64>(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu;
}
fn qty_ok1(q: f64) -> bool { return q < special_f64(0x4038000000000000lu) && !is_nan_f64(q); }
fn disc_ok1(x: f64) -> bool {
    let lo = special_f64(0x3fa999999999999alu);
    let hi = special_f64(0x3fb1eb851eb851eclu);
    return x >= lo && x <= hi && !is_nan_f64(x);
}
fn qty_ok2(q: f64) -> bool { return q < special_f64(0x4038000000000000lu) && !is_nan64_f64(q); }
fn disc_ok2(x: f64) -> bool {
    let lo = special_f64(0x3fa999999999999alu);
    let hi = special_f64(0x3fb1eb851eb851eclu);
    return x >= lo && x <= hi && !is_nan64_f64(x);
}
fn qty_ok0(q: f64) -> bool { return q < special_f64(0x4038000000000000lu); }
fn disc_ok0(x: f64) -> bool {
    return x >= special_f64(0x3fa999999999999alu) && x <= special_f64(0x3fb1eb851eb851eclu);
}
fn code(words: u32, i: u32) -> u32 { return (words >> ((i & 3u) * 8u)) & 0xffu; }
"#;

const ENTRY: &str = r#"
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(local_invocation_id) local_id: vec3<u32>,
        @builtin(workgroup_id) workgroup_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    let n = params.n;
    var acc: f64 = 0.0lf;
"#;

const TAIL: &str = r#"
    let total = workgroup_sum_f64(local_id.x, acc);
    if local_id.x == 0u { partials[workgroup_id.x] = total; }
}
"#;

/// The generated kernel's loop: every row's shipdate, quantity, discount read a row ahead.
const EAGER: &str = r#"
    var i = global_id.x;
    var n0: i32 = shipdate[min(i, n - 1u)];
    var n1: f64 = quantity[min(i, n - 1u)];
    var n2: f64 = discount[min(i, n - 1u)];
    loop {
        if i >= n { break; }
        let r0 = n0; n0 = shipdate[min(i + stride, n - 1u)];
        let r1 = n1; n1 = quantity[min(i + stride, n - 1u)];
        let r2 = n2; n2 = discount[min(i + stride, n - 1u)];
        if date_ok(r0) && qty_ok(r1) && disc_ok(r2) { acc = acc + price[i] * r2; }
        i = i + stride;
    }
"#;

/// Each conjunct's column read only for the rows the earlier ones passed, one row a step.
const LAZY1: &str = r#"
    for (var i = global_id.x; i < n; i = i + stride) {
        if date_ok(shipdate[i]) {
            let d = discount[i];
            if disc_ok(d) {
                if qty_ok(quantity[i]) { acc = acc + price[i] * d; }
            }
        }
    }
"#;

fn lazy_batch(k: u32, coded: bool) -> String {
    let mut s = String::new();
    s += &format!("    for (var base = global_id.x; base < n; base = base + {k}u * stride) {{\n");
    s += &format!("        var live: array<bool, {k}>;\n        var disc: array<f64, {k}>;\n");
    for j in 0..k {
        s += &format!("        let i{j} = base + {j}u * stride;\n        let s{j} = shipdate[min(i{j}, n - 1u)];\n");
    }
    for j in 0..k {
        s += &format!("        live[{j}] = i{j} < n && date_ok(s{j});\n");
    }
    for j in 0..k {
        if coded {
            s += &format!("        if live[{j}] {{ disc[{j}] = wdict[64u + code(dcodes[i{j} >> 2u], i{j})]; live[{j}] = disc_ok(disc[{j}]); }}\n");
        } else {
            s += &format!("        if live[{j}] {{ disc[{j}] = discount[i{j}]; live[{j}] = disc_ok(disc[{j}]); }}\n");
        }
    }
    for j in 0..k {
        if coded {
            s += &format!("        if live[{j}] {{ live[{j}] = qty_ok(wdict[code(qcodes[i{j} >> 2u], i{j})]); }}\n");
        } else {
            s += &format!("        if live[{j}] {{ live[{j}] = qty_ok(quantity[i{j}]); }}\n");
        }
    }
    for j in 0..k {
        s += &format!("        if live[{j}] {{ acc = acc + price[i{j}] * disc[{j}]; }}\n");
    }
    s += "    }\n";
    s
}

/// Quantity and discount as byte codes into a dictionary, read a row ahead as the generated
/// kernel reads its columns.
const CODED_EAGER: &str = r#"
    var i = global_id.x;
    var n0: i32 = shipdate[min(i, n - 1u)];
    var n1: u32 = qcodes[min(i, n - 1u) >> 2u];
    var n2: u32 = dcodes[min(i, n - 1u) >> 2u];
    loop {
        if i >= n { break; }
        let r0 = n0; n0 = shipdate[min(i + stride, n - 1u)];
        let r1 = n1; n1 = qcodes[min(i + stride, n - 1u) >> 2u];
        let r2 = n2; n2 = dcodes[min(i + stride, n - 1u) >> 2u];
        let q = wdict[code(r1, i)];
        let d = wdict[64u + code(r2, i)];
        if date_ok(r0) && qty_ok(q) && disc_ok(d) { acc = acc + price[i] * d; }
        i = i + stride;
    }
"#;

const LOAD_DICT: &str = r#"
    if local_id.x < 128u { wdict[local_id.x] = dict[local_id.x]; }
    workgroupBarrier();
"#;

type Error = Box<dyn std::error::Error>;

fn column<'a>(table: &'a horsec_runtime::value::Table, name: &str) -> Result<&'a Vector, Error> {
    match table.column(name) {
        Some(Value::Vector(v)) => Ok(v),
        _ => Err(format!("lineitem has no column {name}").into()),
    }
}

/// Byte codes of `values` (≤ 64 distinct), packed four to a word, and their dictionary.
fn codes(values: &[f64]) -> (Vec<u32>, Vec<f64>) {
    let mut distinct: BTreeMap<u64, u32> = BTreeMap::new();
    for v in values {
        let next = distinct.len() as u32;
        distinct.entry(v.to_bits()).or_insert(next);
    }
    assert!(distinct.len() <= 64, "{} distinct", distinct.len());
    let mut dict = vec![0.0; 64];
    for (bits, code) in &distinct {
        dict[*code as usize] = f64::from_bits(*bits);
    }
    let mut words = vec![0u32; values.len().div_ceil(4)];
    for (i, v) in values.iter().enumerate() {
        words[i / 4] |= distinct[&v.to_bits()] << ((i % 4) * 8);
    }
    (words, dict)
}

fn main() -> Result<(), Error> {
    use wgpu::util::DeviceExt;
    let args: Vec<String> = std::env::args().collect();
    let sf: f64 = args.get(1).map_or(Ok(1.0), |s| s.parse())?;
    let runs: usize = args.get(2).map_or(Ok(200), |s| s.parse::<usize>())?.max(1);
    let db = Database::tpch(sf, false)?;
    let lineitem = db.table("lineitem")?;
    let (Vector::Date(ship), Vector::F64(qty), Vector::F64(disc), Vector::F64(price)) = (
        column(&lineitem, "l_shipdate")?,
        column(&lineitem, "l_quantity")?,
        column(&lineitem, "l_discount")?,
        column(&lineitem, "l_extendedprice")?,
    ) else {
        return Err("lineitem's columns are not of TPC-H's types".into());
    };
    let n = ship.len();
    let expected: f64 = (0..n)
        .filter(|&i| {
            ship[i] >= 8766 && ship[i] < 9131 && qty[i] < 24.0 && disc[i] >= 0.05 && disc[i] <= 0.07
        })
        .map(|i| price[i] * disc[i])
        .sum();
    let (qcodes, qdict) = codes(qty);
    let (dcodes, ddict) = codes(disc);
    let dict: Vec<f64> = qdict.into_iter().chain(ddict).collect();

    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))?;
    let features =
        wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_INT64 | wgpu::Features::TIMESTAMP_QUERY;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: None,
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    let storage = |bytes: &[u8]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
    };
    let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&[0u32, n as u32, 0, 0]),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let bufs = [
        storage(bytemuck::cast_slice(ship)),
        storage(bytemuck::cast_slice(qty)),
        storage(bytemuck::cast_slice(disc)),
        storage(bytemuck::cast_slice(price)),
        storage(bytemuck::cast_slice(&vec![0f64; 8192])),
        storage(bytemuck::cast_slice(&qcodes)),
        storage(bytemuck::cast_slice(&dcodes)),
        storage(bytemuck::cast_slice(&dict)),
    ];
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 8192 * 8,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Timestamp,
        count: 2,
    });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let stamps = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let period = queue.get_timestamp_period() as f64;

    let mut variants: Vec<(String, String, u32)> = Vec::new();
    let flavour = |body: &str, k: &str| {
        body.replace("qty_ok(", &format!("qty_ok{k}("))
            .replace("disc_ok(", &format!("disc_ok{k}("))
    };
    for (label, k) in [
        ("class checks", ""),
        ("nan 32-bit", "1"),
        ("nan 64-bit", "2"),
        ("no nan check", "0"),
    ] {
        let wg = 1024;
        variants.push((format!("eager, {label}"), flavour(EAGER, k), wg));
        variants.push((format!("lazy 1 row, {label}"), flavour(LAZY1, k), wg));
        variants.push((
            format!("lazy batch 4, {label}"),
            flavour(&lazy_batch(4, false), k),
            wg,
        ));
        variants.push((
            format!("coded eager, {label}"),
            flavour(&format!("{LOAD_DICT}{CODED_EAGER}"), k),
            wg,
        ));
    }
    variants.push((
        "eager, nan 32-bit, wg 2048".into(),
        flavour(EAGER, "1"),
        2048,
    ));
    variants.push(("eager, nan 32-bit, wg 512".into(), flavour(EAGER, "1"), 512));
    variants.push((
        "eager (generated) wg1024, again".into(),
        EAGER.to_string(),
        1024,
    ));
    println!("rows {n}, expected {expected}");
    for (name, body, wg) in &variants {
        let source = format!("{HEADER}{ENTRY}{body}{TAIL}");
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            println!("{name}: {e}");
            continue;
        }
        let layout = pipeline.get_bind_group_layout(0);
        // Bind only what the variant uses: the auto layout holds the bindings it reads.
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        let body = source.find("fn main").map_or("", |at| &source[at..]);
        let used = |b: &str| body.contains(b);
        for (k, (b, name)) in bufs
            .iter()
            .zip([
                "shipdate", "quantity", "discount", "price", "partials", "qcodes", "dcodes", "dict",
            ])
            .enumerate()
        {
            if used(name) || (name == "dict" && used("wdict")) || name == "partials" {
                entries.push(wgpu::BindGroupEntry {
                    binding: k as u32 + 1,
                    resource: b.as_entire_binding(),
                });
            }
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let mut times = Vec::new();
        let mut sum = 0.0;
        for run in 0..runs + 10 {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &group, &[]);
                pass.dispatch_workgroups(*wg, 1, 1);
            }
            encoder.resolve_query_set(&queries, 0..2, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &stamps, 0, 16);
            let last = run + 1 == runs + 10;
            if last {
                encoder.copy_buffer_to_buffer(&bufs[4], 0, &readback, 0, u64::from(*wg) * 8);
            }
            queue.submit([encoder.finish()]);
            stamps.slice(..).map_async(wgpu::MapMode::Read, |_| {});
            if last {
                readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
            }
            device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })?;
            let t: Vec<u64> = bytemuck::cast_slice(&stamps.slice(..).get_mapped_range()?).to_vec();
            stamps.unmap();
            if run >= 10 {
                times.push((t[1] - t[0]) as f64 * period / 1000.0);
            }
            if last {
                let p: Vec<f64> =
                    bytemuck::cast_slice(&readback.slice(..).get_mapped_range()?).to_vec();
                sum = p[..*wg as usize].iter().sum();
                readback.unmap();
            }
        }
        times.sort_by(f64::total_cmp);
        let rel = ((sum - expected) / expected).abs();
        println!(
            "{name:<40} µs median {:7.1}  p10 {:7.1}  p90 {:7.1}   {}",
            times[times.len() / 2],
            times[times.len() / 10],
            times[times.len() * 9 / 10],
            if rel < 1e-9 {
                "ok".to_string()
            } else {
                format!("WRONG {sum} vs {expected}")
            }
        );
    }
    Ok(())
}
