//! WGSL code generation on the 22 TPC-H programs of the conformance suite: every kernel the
//! outliner makes is generated and validated by naga, and each query's WGSL is snapshot.

mod common;

use common::tpch_queries_dir as queries_dir;

use horsec::codegen::{self, KernelModule};
use horsec::driver::{compile, Stage};

/// The generated kernels of query `q`, or the error that stopped generation.
fn generate(dir: &std::path::Path, q: u32) -> Result<Vec<KernelModule>, String> {
    let path = dir.join(format!("q{q}.hir"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let c = compile(&path.display().to_string(), &text, Stage::Outline);
    let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
        panic!("q{q} does not compile:\n{}", c.render_diagnostics());
    };
    codegen::generate_program(typed, outlined).map_err(|e| e.to_string())
}

/// All of a query's modules as one text, each after a header line.
fn query_text(modules: &[KernelModule]) -> String {
    let mut text = String::new();
    for module in modules {
        text += &format!("// ===== {} =====\n", module.name);
        text += &module.wgsl;
        text += "\n";
    }
    text
}

#[test]
fn every_tpch_kernel_generates_and_validates() {
    let Some(dir) = queries_dir() else {
        return;
    };
    let mut failures = Vec::new();
    let mut kernels = 0;
    for q in 1..=22 {
        match generate(&dir, q) {
            Ok(modules) => {
                for module in &modules {
                    // generate_program validated already; validate again the text as written.
                    if let Err(e) = codegen::validate(&module.name, &module.wgsl) {
                        failures.push(format!("q{q}: {e}"));
                    }
                }
                kernels += modules.len();
            }
            Err(e) => failures.push(format!("q{q}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 22 queries failed ({kernels} kernels generated):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn tpch_wgsl_snapshots() {
    let Some(dir) = queries_dir() else {
        return;
    };
    for q in 1..=22 {
        let Ok(modules) = generate(&dir, q) else {
            // Reported by every_tpch_kernel_generates_and_validates.
            continue;
        };
        insta::assert_snapshot!(format!("codegen_q{q:02}"), query_text(&modules));
    }
}

#[test]
fn q6_is_one_kernel_with_one_reduction() {
    let Some(dir) = queries_dir() else {
        return;
    };
    let modules = generate(&dir, 6).expect("q6 generates");
    assert_eq!(modules.len(), 1);
    let entries: Vec<String> = modules[0]
        .passes
        .iter()
        .filter_map(|p| match p {
            horsec_runtime::kernel::Pass::Entry { entry_point, .. } => Some(entry_point.clone()),
            _ => None,
        })
        .collect();
    // The last of its workgroups to finish folds the partials: one dispatch.
    assert_eq!(entries, ["main_pass"]);
}

#[test]
fn q1_writes_its_group_count_and_results_only_into_one_buffer_the_host_maps() {
    use horsec_runtime::kernel::{BufferRef, GpuElement, Length, OutputLayout, ScratchPurpose};
    let Some(dir) = queries_dir() else {
        return;
    };
    let modules = generate(&dir, 1).expect("q1 generates");
    let grouped = modules
        .iter()
        .find(|m| {
            m.scratch
                .iter()
                .any(|s| s.purpose == ScratchPurpose::GroupCount)
        })
        .expect("q1 has a grouped kernel");
    let copies: Vec<_> = grouped
        .scratch
        .iter()
        .filter_map(|s| match &s.purpose {
            ScratchPurpose::GroupResults { count, outputs } => Some((s, *count, outputs)),
            _ => None,
        })
        .collect();
    let [(scratch, count, outputs)] = copies.as_slice() else {
        panic!("one group results buffer, not {}", copies.len());
    };
    assert_eq!(grouped.scratch[count.0].purpose, ScratchPurpose::GroupCount);
    // Every output the group count sizes, in order, after the flag and the count, each at
    // its capacity.
    let sized: Vec<usize> = (0..grouped.outputs.len())
        .filter(|&k| matches!(grouped.outputs[k].layout, OutputLayout::Vector { .. }))
        .collect();
    assert_eq!(sized.len(), 10, "q1's two keys and eight aggregates");
    assert_eq!(outputs.iter().map(|(k, _)| *k).collect::<Vec<_>>(), sized);
    let mut at = 2;
    for &(k, offset) in outputs.iter() {
        assert_eq!(offset, at, "output {k}");
        let output = &grouped.outputs[k];
        let OutputLayout::Vector {
            capacity: Length::Constant(capacity),
            ..
        } = &output.layout
        else {
            panic!("output {k} has a constant capacity");
        };
        let element = GpuElement::of_type(&output.ty).expect("a GPU layout");
        at += capacity * element.size() / 4;
    }
    assert_eq!(scratch.elements, Length::Constant(at));
    // No output has a buffer of its own: the launch takes each from that one.
    let bound: Vec<&str> = grouped
        .bindings
        .iter()
        .filter(|b| matches!(b.buffer, BufferRef::Output { .. }))
        .map(|b| b.name.as_str())
        .collect();
    assert!(bound.is_empty(), "output buffers bound: {bound:?}");
}
