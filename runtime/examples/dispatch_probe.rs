//! Measures what a dispatch costs on this machine's first adapter, with raw wgpu: 200 small
//! dispatches of one kernel recorded each in a compute pass of its own, or all in one pass,
//! then submitted and waited for. The split (recording, submission, wait) says where the
//! time goes; `Commands` records a library step's dispatches in one pass because of it.
//!
//! Then the least a query's read-back costs: one small dispatch and a copy of 8 bytes into a
//! mappable buffer, submitted, mapped and read, the floor under every host wait of a query
//! (a warm TPC-H q6 waits once, q1 twice).
//!
//! `cargo run --release -p horsec-runtime --example dispatch_probe` (`SPIN=1`: wait by
//! polling, as `HORSEC_WAIT=spin` does, instead of blocking in the driver).

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
    println!("{}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let layout = pipeline.get_bind_group_layout(0);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1024,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 8,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
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
    let group = bind_group();
    let (mut record, mut submit, mut mapped) = (vec![], vec![], vec![]);
    for _ in 0..RUNS * 10 {
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        encoder.copy_buffer_to_buffer(&buffer, 0, &staging, 0, 8);
        let commands = encoder.finish();
        let recorded = Instant::now();
        queue.submit([commands]);
        let submitted = Instant::now();
        let (sender, receiver) = std::sync::mpsc::channel();
        staging
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |result| {
                let _ = sender.send(result);
            });
        // Polled as `HORSEC_WAIT=spin` waits (the default on GPUs), or blocking.
        let result = loop {
            if spin {
                device.poll(wgpu::PollType::Poll)?;
            } else {
                device.poll(wgpu::PollType::wait_indefinitely())?;
            }
            match receiver.try_recv() {
                Ok(result) => break result,
                Err(_) => std::thread::yield_now(),
            }
        };
        result?;
        let word = u64::from_le_bytes(
            staging.slice(..).get_mapped_range()?[..8]
                .try_into()
                .map_err(|_| "short mapping")?,
        );
        staging.unmap();
        std::hint::black_box(word);
        record.push(recorded - start);
        submit.push(submitted - recorded);
        mapped.push(submitted.elapsed());
    }
    println!(
        "one dispatch and an 8-byte read-back: record {:.0} us, submit {:.0} us, until read {:.0} us",
        median_us(record),
        median_us(submit),
        median_us(mapped)
    );
    Ok(())
}
