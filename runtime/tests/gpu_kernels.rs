//! The GPU library kernels against CPU computations of the same results, on seeded random
//! data. Needs a GPU adapter (lavapipe will do); without one every test prints
//! "SKIPPED: no GPU adapter", and with HORSEC_REQUIRE_GPU=1 it fails instead.

use std::sync::OnceLock;
use std::time::Instant;

use horsec_runtime::gpu::compact::{compress, where_true};
use horsec_runtime::gpu::reduce::bitwise_or;
use horsec_runtime::gpu::scan::exclusive_scan;
use horsec_runtime::gpu::sort::radix_sort_u32;
use horsec_runtime::gpu::{require_gpu_or_skip, Device, GpuError, MAX_ELEMENTS};

/// One device for the whole test binary: opening one costs time on a software driver.
fn shared_device() -> Option<&'static Device> {
    static DEVICE: OnceLock<Option<Device>> = OnceLock::new();
    let device = DEVICE.get_or_init(require_gpu_or_skip).as_ref();
    if device.is_none() {
        eprintln!("SKIPPED: no GPU adapter");
    }
    device
}

/// A device of its own, for tests that change device settings (the workgroup cap).
fn own_device() -> Option<Device> {
    require_gpu_or_skip()
}

/// SplitMix64: small, seeded, good enough to make test data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn below(&mut self, bound: u32) -> u32 {
        self.next_u32() % bound
    }

    fn u32s(&mut self, n: usize, bound: u32) -> Vec<u32> {
        (0..n).map(|_| self.below(bound)).collect()
    }

    /// Flags that are true with probability `percent`%; true is any non-zero word.
    fn flags(&mut self, n: usize, percent: u32) -> Vec<u32> {
        (0..n)
            .map(|_| {
                if self.below(100) < percent {
                    1 + self.below(u32::MAX)
                } else {
                    0
                }
            })
            .collect()
    }
}

/// Lengths around the workgroup and tile sizes of `device`, and one of several tiles.
fn interesting_lengths(device: &Device) -> Vec<usize> {
    let tile = device.tile_size() as usize;
    let mut lengths = vec![
        0,
        1,
        2,
        255,
        256,
        257,
        tile - 1,
        tile,
        tile + 1,
        3 * tile + 17,
    ];
    lengths.dedup();
    lengths
}

/// A device with one item per invocation (tiles of 256), so that scans recurse three levels
/// deep on inputs of a few hundred thousand elements.
fn small_tile_device() -> Option<Device> {
    let device = own_device()?;
    device
        .set_items_per_thread(1)
        .expect("1 item per invocation is allowed");
    Some(device)
}

fn cpu_exclusive_scan(values: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len() + 1);
    let mut sum = 0u32;
    out.push(0);
    for &v in values {
        sum = sum.wrapping_add(v);
        out.push(sum);
    }
    // out[i] = sum of values[..i]; out[n] = total.
    out
}

fn cpu_where(flags: &[u32]) -> Vec<u32> {
    (0..flags.len() as u32)
        .filter(|&i| flags[i as usize] != 0)
        .collect()
}

fn cpu_stable_sort_permutation(keys: &[u32]) -> Vec<u32> {
    let mut permutation: Vec<u32> = (0..keys.len() as u32).collect();
    permutation.sort_by_key(|&i| keys[i as usize]);
    permutation
}

fn gpu_scan(device: &Device, values: &[u32]) -> Vec<u32> {
    let input = device.upload("input", values).expect("upload");
    let output = exclusive_scan(device, &input).expect("scan runs");
    device.download(&output).expect("download")
}

#[test]
fn device_describes_adapter_and_reports_features() {
    let Some(device) = shared_device() else {
        return;
    };
    let description = device.describe();
    assert!(
        description.contains(&device.adapter_info().name),
        "{description}"
    );
    eprintln!("adapter: {description}");
    eprintln!("features: {:?}", device.features());
    let limits = device.limits();
    eprintln!(
        "limits: storage binding {} B, storage buffers/stage {}, workgroups/dim {}",
        limits.max_storage_buffer_binding_size,
        limits.max_storage_buffers_per_shader_stage,
        limits.max_compute_workgroups_per_dimension
    );
    // The kernels bind up to 5 storage buffers; every real adapter allows at least 8.
    assert!(limits.max_storage_buffers_per_shader_stage >= 5);
}

#[test]
fn upload_then_download_round_trips() {
    let Some(device) = shared_device() else {
        return;
    };
    let values: Vec<i32> = vec![-3, 0, 7, i32::MIN, i32::MAX];
    let buffer = device.upload("ints", &values).expect("upload");
    assert_eq!(buffer.len(), 5);
    assert_eq!(device.download(&buffer).expect("download"), values);
    let empty = device
        .upload::<f32>("empty", &[])
        .expect("upload of nothing");
    assert!(empty.is_empty());
    assert_eq!(
        device.download(&empty).expect("download"),
        Vec::<f32>::new()
    );
    let zeros = device.zeroed::<u32>("zeros", 3).expect("zeroed");
    assert_eq!(device.download(&zeros).expect("download"), vec![0, 0, 0]);
    assert_eq!(
        device.download_range(&buffer, 3, 2).expect("range"),
        vec![i32::MIN, i32::MAX]
    );
    assert!(matches!(
        device.download_range(&buffer, 4, 2),
        Err(GpuError::Readback(_))
    ));
}

/// Held command buffers (`Device::hold`) run after host writes made later: a buffer the
/// held work reads and that is dropped before the work is submitted must not be handed to a
/// later upload, whose write would land first.
#[test]
fn held_work_sees_its_inputs_when_their_buffers_are_dropped_before_it_is_submitted() {
    let Some(device) = own_device() else { return };
    device.set_submit_bytes(u64::MAX);
    let wanted: Vec<u32> = (1..=1000).collect();
    let mut outputs = Vec::new();
    for round in 0..4u32 {
        let input = device.upload("held input", &wanted).unwrap();
        let output = device.zeroed::<u32>("held output", wanted.len()).unwrap();
        let mut commands = horsec_runtime::gpu::Commands::new(&device, "held copy");
        commands.copy(&input, output.raw()).unwrap();
        commands.submit().unwrap();
        drop(input);
        // Same size: the pool's candidate for the buffer just dropped.
        let other = device
            .upload("later upload", &vec![round + 7_000_000; wanted.len()])
            .unwrap();
        outputs.push((output, other));
    }
    assert!(
        device.held_commands() > 0,
        "the copies were submitted at once"
    );
    for (output, other) in &outputs {
        assert_eq!(device.download(output).unwrap(), wanted);
        assert!(device.download(other).unwrap()[0] >= 7_000_000);
    }
    assert_eq!(
        device.held_commands(),
        0,
        "a read-back submits the held work"
    );
}

/// A kernel launch's work past `submit_bytes` is due, not sent at once: the read-back that
/// follows it joins its submission, so that the host submits once and the device starts
/// once. Other work past it goes at once.
#[test]
fn due_work_goes_to_the_queue_with_the_read_back_that_follows_it() {
    let Some(device) = own_device() else { return };
    // Any work is past it.
    device.set_submit_bytes(1);
    let wanted: Vec<u32> = (1..=1000).collect();
    let input = device.upload("due input", &wanted).unwrap();
    let output = device.zeroed::<u32>("due output", wanted.len()).unwrap();
    device.flush().unwrap();
    let copy = |deferred: bool| {
        let mut commands = horsec_runtime::gpu::Commands::new(&device, "due copy");
        if deferred {
            commands.defer_submission();
        }
        commands.copy(&input, output.raw()).unwrap();
        commands.submit().unwrap();
    };
    let before = device.host_costs().submits.0;
    copy(true);
    assert_eq!(device.held_commands(), 1, "due work was submitted at once");
    assert_eq!(device.download(&output).unwrap(), wanted);
    assert_eq!(
        device.host_costs().submits.0 - before,
        1,
        "the copy and its read-back took more than one submission"
    );
    // Due work goes when the next step begins: `submit_due`.
    copy(true);
    device.submit_due().unwrap();
    assert_eq!(device.held_commands(), 0, "due work stayed held");
    copy(false);
    assert_eq!(device.held_commands(), 0, "work not deferred was held");
}

#[test]
fn too_many_elements_is_an_error_not_a_truncation() {
    let Some(device) = shared_device() else {
        return;
    };
    let result = device.zeroed::<u32>("huge", MAX_ELEMENTS + 1);
    assert!(
        matches!(result, Err(GpuError::BufferTooLarge { .. })),
        "{result:?}"
    );
}

#[test]
fn a_buffer_over_the_storage_binding_limit_is_refused_by_the_kernel() {
    let Some(device) = shared_device() else {
        return;
    };
    let limit = device.limits().max_storage_buffer_binding_size;
    // Only where the limit is small enough to allocate past it cheaply (128 MiB on lavapipe).
    if limit > 512 << 20 || limit + 4 > device.limits().max_buffer_size {
        eprintln!("skipping: storage binding limit {limit} B is too large to exceed in a test");
        return;
    }
    let elements = (limit / 4 + 1) as usize;
    let input = device
        .zeroed::<u32>("over the limit", elements)
        .expect("allocation");
    let result = exclusive_scan(device, &input);
    assert!(
        matches!(result, Err(GpuError::BindingTooLarge { .. })),
        "{result:?}"
    );
}

#[test]
fn scan_matches_cpu_on_interesting_lengths() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(1);
    for n in interesting_lengths(device).into_iter().chain([1_000_003]) {
        let values = rng.u32s(n, 1000);
        assert_eq!(
            gpu_scan(device, &values),
            cpu_exclusive_scan(&values),
            "length {n}"
        );
    }
}

#[test]
fn scan_recursing_over_three_levels_matches_cpu() {
    let Some(device) = small_tile_device() else {
        return;
    };
    let tile = device.tile_size() as usize;
    assert_eq!(tile, 256);
    let mut rng = Rng(9);
    for n in [
        tile * tile - 1,
        tile * tile,
        tile * tile + 1,
        2 * tile * tile + 12_345,
    ] {
        let values = rng.u32s(n, 1000);
        assert_eq!(
            gpu_scan(&device, &values),
            cpu_exclusive_scan(&values),
            "length {n}"
        );
    }
}

#[test]
fn items_per_thread_outside_the_supported_range_is_refused() {
    let Some(device) = own_device() else { return };
    let default = device.items_per_thread();
    assert!(device.set_items_per_thread(0).is_err());
    assert!(device.set_items_per_thread(65).is_err());
    assert_eq!(device.items_per_thread(), default);
    assert!(device.set_items_per_thread(64).is_ok());
    assert_eq!(device.tile_size(), 256 * 64);
}

#[test]
fn scan_wraps_modulo_two_to_the_32() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(2);
    let values: Vec<u32> = (0..5000).map(|_| rng.next_u32()).collect();
    assert_eq!(gpu_scan(device, &values), cpu_exclusive_scan(&values));
}

#[test]
fn scan_of_an_empty_input_is_a_single_zero_total() {
    let Some(device) = shared_device() else {
        return;
    };
    assert_eq!(gpu_scan(device, &[]), vec![0]);
}

#[test]
fn grid_stride_loops_cover_inputs_larger_than_the_dispatch() {
    // Three workgroups per dispatch must still cover every tile and element.
    let Some(device) = own_device() else { return };
    device.set_workgroup_cap(Some(3));
    assert_eq!(device.max_workgroups_per_dispatch(), 3);
    let mut rng = Rng(3);
    let n = 40 * device.tile_size() as usize + 77;
    let values = rng.u32s(n, 50);
    assert_eq!(gpu_scan(&device, &values), cpu_exclusive_scan(&values));

    let flags = rng.flags(n, 30);
    let flags_buffer = device.upload("flags", &flags).expect("upload");
    let positions = where_true(&device, &flags_buffer).expect("where");
    assert_eq!(
        device.download(&positions).expect("download"),
        cpu_where(&flags)
    );

    let keys = rng.u32s(n, 1 << 20);
    let keys_buffer = device.upload("keys", &keys).expect("upload");
    let sorted = radix_sort_u32(&device, &keys_buffer).expect("sort");
    let permutation = device.download(&sorted.permutation).expect("download");
    assert_eq!(permutation, cpu_stable_sort_permutation(&keys));
}

#[test]
fn where_matches_cpu_for_every_density() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(4);
    for n in interesting_lengths(device) {
        for percent in [0, 1, 50, 100] {
            let flags = rng.flags(n, percent);
            let buffer = device.upload("flags", &flags).expect("upload");
            let positions = where_true(device, &buffer).expect("where");
            assert_eq!(
                device.download(&positions).expect("download"),
                cpu_where(&flags),
                "length {n}, {percent}% true"
            );
        }
    }
}

#[test]
fn where_beyond_65535_workgroups_of_256() {
    // More elements than one dispatch of the maximum workgroup count has invocations.
    let Some(device) = shared_device() else {
        return;
    };
    let max_workgroups = device.limits().max_compute_workgroups_per_dimension as usize;
    let n = max_workgroups * 256 + 4097;
    let mut rng = Rng(5);
    let flags = rng.flags(n, 10);
    let buffer = device.upload("flags", &flags).expect("upload");
    let started = Instant::now();
    let positions = where_true(device, &buffer).expect("where");
    let result = device.download(&positions).expect("download");
    eprintln!(
        "where of {n} flags: {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(result, cpu_where(&flags));
}

fn check_compress<T>(device: &Device, values: Vec<T>, rng: &mut Rng)
where
    T: horsec_runtime::gpu::template::GpuScalar + PartialEq + std::fmt::Debug,
{
    let mask = rng.flags(values.len(), 40);
    let expected: Vec<T> = values
        .iter()
        .zip(&mask)
        .filter(|(_, &m)| m != 0)
        .map(|(&v, _)| v)
        .collect();
    let mask_buffer = device.upload("mask", &mask).expect("upload");
    let values_buffer = device.upload("values", &values).expect("upload");
    let compressed = compress(device, &mask_buffer, &values_buffer).expect("compress");
    assert_eq!(
        device.download(&compressed).expect("download"),
        expected,
        "{}",
        T::WGSL
    );
}

#[test]
fn compress_matches_cpu_for_each_element_type() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(6);
    for n in [0, 1, 1000, 3 * device.tile_size() as usize + 5] {
        let raw: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        check_compress(
            device,
            raw.iter().map(|&r| r as u32).collect::<Vec<u32>>(),
            &mut rng,
        );
        check_compress(
            device,
            raw.iter().map(|&r| r as i32).collect::<Vec<i32>>(),
            &mut rng,
        );
        check_compress(
            device,
            raw.iter()
                .map(|&r| (r % 10_000) as f32 / 7.0)
                .collect::<Vec<f32>>(),
            &mut rng,
        );
        if device.features().contains(wgpu::Features::SHADER_INT64) {
            check_compress(
                device,
                raw.iter().map(|&r| r as i64).collect::<Vec<i64>>(),
                &mut rng,
            );
            check_compress(device, raw.clone(), &mut rng);
        }
        if device.features().contains(wgpu::Features::SHADER_F64) {
            check_compress(
                device,
                raw.iter()
                    .map(|&r| (r % 1_000_000) as f64 / 3.0)
                    .collect::<Vec<f64>>(),
                &mut rng,
            );
        }
    }
}

#[test]
fn compress_refuses_a_mask_of_another_length() {
    let Some(device) = shared_device() else {
        return;
    };
    let mask = device.upload("mask", &[1u32, 0, 1]).expect("upload");
    let values = device.upload("values", &[1u32, 2]).expect("upload");
    assert!(matches!(
        compress(device, &mask, &values),
        Err(GpuError::Command { .. })
    ));
}

#[test]
fn radix_sort_is_a_stable_sort() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(7);
    for n in interesting_lengths(device) {
        // Full-range keys, keys with many duplicates (where stability shows), and key
        // ranges that take an odd and an even number of 4-bit passes.
        for bound in [u32::MAX, 1 << 12, 1 << 8, 16, 1] {
            let keys = rng.u32s(n, bound);
            let buffer = device.upload("keys", &keys).expect("upload");
            let sorted = radix_sort_u32(device, &buffer).expect("sort");
            let permutation = device.download(&sorted.permutation).expect("download");
            let sorted_keys = device.download(&sorted.keys).expect("download");
            let expected = cpu_stable_sort_permutation(&keys);
            let expected_keys: Vec<u32> = expected.iter().map(|&i| keys[i as usize]).collect();
            assert_eq!(permutation, expected, "length {n}, keys below {bound}");
            assert_eq!(sorted_keys, expected_keys, "length {n}, keys below {bound}");
        }
    }
}

#[test]
fn bitwise_or_matches_cpu() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(10);
    for n in interesting_lengths(device).into_iter().chain([300_001]) {
        let values: Vec<u32> = (0..n).map(|_| 1 << rng.below(32)).collect();
        let buffer = device.upload("values", &values).expect("upload");
        let expected = values.iter().fold(0, |acc, v| acc | v);
        assert_eq!(
            bitwise_or(device, &buffer).expect("or"),
            expected,
            "length {n}"
        );
    }
}

#[test]
fn pipelines_are_compiled_once() {
    let Some(device) = own_device() else { return };
    gpu_scan(&device, &[1, 2, 3]);
    let after_first = device.cached_pipelines();
    gpu_scan(&device, &[4, 5, 6, 7]);
    assert_eq!(device.cached_pipelines(), after_first);
    assert_eq!(after_first, 2, "reduce_tiles and scan_tiles");
}

#[test]
fn scan_and_sort_of_4m_report_their_time() {
    let Some(device) = shared_device() else {
        return;
    };
    let n = 4 << 20;
    let mut rng = Rng(8);
    let values = rng.u32s(n, 1 << 16);
    let input = device.upload("input", &values).expect("upload");
    // Warm-up compiles the pipelines; the second run is the measurement.
    exclusive_scan(device, &input).expect("scan");
    device.wait_idle().expect("idle");
    let started = Instant::now();
    let output = exclusive_scan(device, &input).expect("scan");
    device.wait_idle().expect("idle");
    let scan_ms = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(
        device.download(&output).expect("download"),
        cpu_exclusive_scan(&values)
    );

    radix_sort_u32(device, &input).expect("sort");
    device.wait_idle().expect("idle");
    let started = Instant::now();
    let sorted = radix_sort_u32(device, &input).expect("sort");
    device.wait_idle().expect("idle");
    let sort_ms = started.elapsed().as_secs_f64() * 1e3;
    let permutation = device.download(&sorted.permutation).expect("download");
    assert_eq!(permutation, cpu_stable_sort_permutation(&values));
    eprintln!(
        "on {}: exclusive scan of {n} u32 {scan_ms:.1} ms, radix sort {sort_ms:.1} ms",
        device.describe()
    );
}
