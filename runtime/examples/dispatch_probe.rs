//! Measures what a dispatch costs on this machine's first adapter, with raw wgpu: 200 small
//! dispatches of one kernel recorded each in a compute pass of its own, or all in one pass,
//! then submitted and waited for. The split (recording, submission, wait) says where the
//! time goes; `Commands` records a library step's dispatches in one pass because of it.
//!
//! Then the device's round trip, the floor under every host wait of a query (a warm TPC-H q6
//! waits once): one tiny piece of work submitted and waited for, `ROUND_TRIPS` times (3,000,
//! or the first argument), each kind printed with the 10th, 50th and 90th percentile of its
//! wall time in µs and the host's time in `finish` and `queue.submit`:
//!
//! - `empty`: a submission of no command buffer, waited for by spinning on non-blocking polls;
//! - `dispatch spin` / `dispatch wait`: one workgroup writing one word, waited for by spinning
//!   (as horsec waits) or by a blocking poll;
//! - `dispatch+copy+map`: the same, its word copied into a buffer the host maps, and read (a
//!   read-back of a one-element result, as TPC-H q6's);
//! - `2 dispatches+copy+map`: a second one-workgroup dispatch after the first in the same
//!   pass, reading what it wrote (as a reduction's pass that folds the partials);
//! - `clear+dispatch+copy+map`: a clear of a word before the dispatch (as a zeroed scratch
//!   buffer's);
//! - `dispatch->mapped`: the dispatch writes the mapped buffer itself (needs
//!   `MAPPABLE_PRIMARY_BUFFERS`).
//!
//! On the H200 lent to us (NVIDIA 580.159.04, a 16-vCPU VM), p50 in µs over 12 processes in
//! two calls (the second dispatch and the clear in the 3 of the second): `empty` 12;
//! `dispatch spin` 27–33 (of which `finish` 4.6–7.3 and `submit` 5–8.6 on the host);
//! `dispatch wait` 53–64 (so horsec spins); `dispatch+copy+map` 35–44; a second dispatch 3–7
//! more; a clear 6–9 more; `dispatch->mapped` 28–36. A process is fast or slow throughout, by
//! up to 1.5× in host time; in one, every round trip waiting on a map took about 35 µs more.
//! A warm TPC-H q6 at SF 1 (42 µs of kernels) took 86–114 µs in those calls: this floor is
//! most of the rest.
//!
//! `DEVICES=N` measures instead whether the round trip depends on the device or on the host's
//! moment: `dispatch spin` on each of N devices of the adapter in turn (with a spin-loop hint
//! between the polls in place of the yield), three rounds, each device's median. On the H200,
//! five processes of six devices and 400 round trips gave medians of 26.5 or 31.5 µs;
//! two processes showed both values, changing within a round, and no device stayed fast or
//! slow across rounds (one took 26.4, 31.2 and 27.0 µs): the host's state at the moment
//! decides, not the device, its queue or its channel.
//!
//! `cargo run --release -p horsec-runtime --example dispatch_probe [-- ROUND_TRIPS]` (`SPIN=1`:
//! the 200 dispatches are waited for by polling, as horsec waits, instead of blocking).

use horsec_runtime::gpu::wgpu;
use std::error::Error;
use std::time::{Duration, Instant};

const SOURCE: &str = r#"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) { data[id.x] = data[id.x] + 1u; }
}
"#;

const ROUND_TRIP_SHADER: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) local: vec3<u32>) {
    if local.x == 0u { out[0] = out[0] + 1u; }
}
";

const DISPATCHES: usize = 200;
const RUNS: usize = 21;

fn median_us(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn Error>> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .into_iter()
        .next()
        .ok_or("no adapter")?;
    if let Some(devices) = std::env::var_os("DEVICES") {
        let devices: usize = devices.to_str().ok_or("DEVICES: not a number")?.parse()?;
        return device_round_trips(&adapter, devices, round_trip_count()?);
    }
    println!("{}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    let pipeline = compute_pipeline(&device, SOURCE);
    let layout = pipeline.get_bind_group_layout(0);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1024,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind_group = || {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buffer.as_entire_binding(),
            }],
        })
    };
    let spin = std::env::var_os("SPIN").is_some();
    let wait = |index: wgpu::SubmissionIndex| -> Result<(), wgpu::PollError> {
        let timeout = spin.then_some(Duration::ZERO);
        loop {
            match device.poll(wgpu::PollType::Wait {
                submission_index: Some(index.clone()),
                timeout,
            }) {
                Err(wgpu::PollError::Timeout) => std::thread::yield_now(),
                done => return done.map(|_| ()),
            }
        }
    };
    for one_pass in [false, true] {
        let (mut record, mut submit, mut waited) = (vec![], vec![], vec![]);
        for _ in 0..RUNS {
            let start = Instant::now();
            let mut encoder = device.create_command_encoder(&Default::default());
            if one_pass {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                for _ in 0..DISPATCHES {
                    pass.set_bind_group(0, &bind_group(), &[]);
                    pass.dispatch_workgroups(1, 1, 1);
                }
            } else {
                for _ in 0..DISPATCHES {
                    let group = bind_group();
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&pipeline);
                    pass.set_bind_group(0, &group, &[]);
                    pass.dispatch_workgroups(1, 1, 1);
                }
            }
            let commands = encoder.finish();
            let recorded = Instant::now();
            let index = queue.submit([commands]);
            let submitted = Instant::now();
            wait(index)?;
            record.push(recorded - start);
            submit.push(submitted - recorded);
            waited.push(submitted.elapsed());
        }
        println!(
            "{DISPATCHES} dispatches, {}: record {:.0} us, submit {:.0} us, wait {:.0} us",
            if one_pass { "one pass" } else { "a pass each" },
            median_us(record),
            median_us(submit),
            median_us(waited)
        );
    }
    round_trips(&adapter)
}

struct Samples {
    wall: Vec<Duration>,
    finish: Vec<Duration>,
    submit: Vec<Duration>,
}

impl Samples {
    fn new(n: usize) -> Samples {
        Samples {
            wall: Vec::with_capacity(n),
            finish: Vec::with_capacity(n),
            submit: Vec::with_capacity(n),
        }
    }

    fn print(mut self, name: &str) {
        let q = |v: &mut Vec<Duration>, p: f64| -> f64 {
            if v.is_empty() {
                return f64::NAN;
            }
            v.sort();
            let at = ((v.len() - 1) as f64 * p).round() as usize;
            v[at].as_secs_f64() * 1e6
        };
        println!(
            "{name:<20} wall p10 {:>7.1} p50 {:>7.1} p90 {:>7.1}   finish p50 {:>6.1}   submit p50 {:>6.1}",
            q(&mut self.wall, 0.1),
            q(&mut self.wall, 0.5),
            q(&mut self.wall, 0.9),
            q(&mut self.finish, 0.5),
            q(&mut self.submit, 0.5),
        );
    }
}

/// Polls `device` without blocking until its queue is empty, calling `between` between
/// polls (`yield_now`, as horsec waits, or a spin-loop hint).
fn spin(device: &wgpu::Device, between: fn()) -> Result<(), Box<dyn std::error::Error>> {
    loop {
        if device.poll(wgpu::PollType::Poll)?.is_queue_empty() {
            return Ok(());
        }
        between();
    }
}

/// The round trips of the module's documentation, on a device of their own.
fn round_trips(adapter: &wgpu::Adapter) -> Result<(), Box<dyn Error>> {
    let iterations = round_trip_count()?;
    let mappable = adapter
        .features()
        .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    let features = if mappable {
        wgpu::Features::MAPPABLE_PRIMARY_BUFFERS
    } else {
        wgpu::Features::empty()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("round trip"),
        required_features: features,
        ..Default::default()
    }))?;
    let pipeline = compute_pipeline(&device, ROUND_TRIP_SHADER);
    let storage = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("word"),
        size: 256,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = |buffer: &wgpu::Buffer| {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buffer.as_entire_binding(),
            }],
        })
    };
    let group = bind(&storage);
    let mapped_storage = mappable.then(|| {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mapped word"),
            size: 256,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let group = bind(&buffer);
        (buffer, group)
    });

    // Records `dispatches` dispatches in one pass (after a clear of a word when `clear`) and
    // what `extra` adds, then submits them, timing finish and submit.
    let submit_dispatch = |samples: &mut Samples,
                           group: &wgpu::BindGroup,
                           dispatches: u32,
                           clear: bool,
                           extra: &dyn Fn(&mut wgpu::CommandEncoder)| {
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&Default::default());
        if clear {
            encoder.clear_buffer(&storage, 8, Some(8));
        }
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, group, &[]);
            for _ in 0..dispatches {
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
        extra(&mut encoder);
        let commands = encoder.finish();
        let finished = Instant::now();
        queue.submit([commands]);
        let submitted = Instant::now();
        samples.finish.push(finished - start);
        samples.submit.push(submitted - finished);
        start
    };
    let read_mapped = |buffer: &wgpu::Buffer| -> Result<u32, Box<dyn std::error::Error>> {
        let (sender, receiver) = std::sync::mpsc::channel();
        buffer.slice(0..8).map_async(wgpu::MapMode::Read, move |r| {
            let _ = sender.send(r);
        });
        let mapped = loop {
            device.poll(wgpu::PollType::Poll)?;
            if let Ok(mapped) = receiver.try_recv() {
                break mapped;
            }
            std::thread::yield_now();
        };
        mapped?;
        let word = {
            let view = buffer.slice(0..4).get_mapped_range()?;
            u32::from_le_bytes(view[..4].try_into()?)
        };
        buffer.unmap();
        Ok(word)
    };

    for round in 0..2 {
        let timed = round == 1;
        let n = if timed {
            iterations
        } else {
            iterations / 10 + 1
        };
        let mut empty = Samples::new(n);
        for _ in 0..n {
            let start = Instant::now();
            queue.submit(std::iter::empty());
            spin(&device, std::thread::yield_now)?;
            empty.wall.push(start.elapsed());
        }
        let mut dispatch_spin = Samples::new(n);
        for _ in 0..n {
            let start = submit_dispatch(&mut dispatch_spin, &group, 1, false, &|_| {});
            spin(&device, std::thread::yield_now)?;
            dispatch_spin.wall.push(start.elapsed());
        }
        let mut dispatch_wait = Samples::new(n);
        for _ in 0..n {
            let start = submit_dispatch(&mut dispatch_wait, &group, 1, false, &|_| {});
            device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })?;
            dispatch_wait.wall.push(start.elapsed());
        }
        let copy = |encoder: &mut wgpu::CommandEncoder| {
            encoder.copy_buffer_to_buffer(&storage, 0, &staging, 0, 8);
        };
        let mut copied = Samples::new(n);
        let mut twice = Samples::new(n);
        let mut cleared = Samples::new(n);
        for (samples, dispatches, clear) in [
            (&mut copied, 1, false),
            (&mut twice, 2, false),
            (&mut cleared, 1, true),
        ] {
            for _ in 0..n {
                let start = submit_dispatch(samples, &group, dispatches, clear, &copy);
                read_mapped(&staging)?;
                samples.wall.push(start.elapsed());
            }
        }
        let mut direct = Samples::new(n);
        if let Some((buffer, group)) = &mapped_storage {
            for _ in 0..n {
                let start = submit_dispatch(&mut direct, group, 1, false, &|_| {});
                read_mapped(buffer)?;
                direct.wall.push(start.elapsed());
            }
        }
        if timed {
            empty.print("empty");
            dispatch_spin.print("dispatch spin");
            dispatch_wait.print("dispatch wait");
            copied.print("dispatch+copy+map");
            twice.print("2 dispatches+copy+map");
            cleared.print("clear+dispatch+copy+map");
            direct.print("dispatch->mapped");
        }
    }
    Ok(())
}

/// `ROUND_TRIPS`, the first argument (3,000 by default).
fn round_trip_count() -> Result<usize, Box<dyn Error>> {
    Ok(std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3000))
}

/// A compute pipeline of `source`'s `main`, its layout derived from the shader.
fn compute_pipeline(device: &wgpu::Device, source: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// `DEVICES=N`: whether the round trip depends on the device (its queue, its channel in the
/// driver) or on the host's moment. Opens `devices` devices on the adapter and, in three
/// rounds, times `iterations` `dispatch spin` round trips on each in turn (a spin-loop hint
/// between the polls, as measured on the H200), printing each device's median in µs.
fn device_round_trips(
    adapter: &wgpu::Adapter,
    devices: usize,
    iterations: usize,
) -> Result<(), Box<dyn Error>> {
    let mut opened = Vec::with_capacity(devices);
    for _ in 0..devices {
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
        let pipeline = compute_pipeline(&device, ROUND_TRIP_SHADER);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 256,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buffer.as_entire_binding(),
            }],
        });
        opened.push((device, queue, pipeline, group));
    }
    for round in 0..3 {
        let mut line = format!("round {round}, median µs per device:");
        for (device, queue, pipeline, group) in &opened {
            let mut wall = Vec::with_capacity(iterations);
            for _ in 0..iterations {
                let start = Instant::now();
                let mut encoder = device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups(1, 1, 1);
                }
                queue.submit([encoder.finish()]);
                spin(device, std::hint::spin_loop)?;
                wall.push(start.elapsed());
            }
            line += &format!(" {:.1}", median_us(wall));
        }
        println!("{line}");
    }
    Ok(())
}
