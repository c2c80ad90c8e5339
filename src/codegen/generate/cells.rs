//! List kernels: per-element work over the flat values of a list and per-cell work
//! (reductions, then the statements that read them), in one of the strategies of
//! [`CellStrategy`] the engine picks from the geometry at launch time. Every strategy folds
//! with the same operations, so the results differ only in the order of float additions.

use super::*;
use horsec_runtime::kernel::{CellPasses, MAX_CELL_PARTIALS, THREAD_CELL_MAX};

impl Generator<'_> {
    pub(super) fn assemble_list(mut self) -> Result<KernelLaunch, CodegenError> {
        let Layout::List { offsets_of, .. } = &self.layout else {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "not a list kernel",
            ));
        };
        let offsets_of = *offsets_of;
        let cells_length = Length::Of {
            slot: Self::slot(offsets_of),
            part: ValuePart::ListOffsets,
        };
        let values_length = Length::Of {
            slot: Self::slot(offsets_of),
            part: ValuePart::ListValues,
        };
        let cells = self.param(
            "cells".to_string(),
            ParamValue::Length(cells_length.clone()),
        );
        let offsets = self.input_binding(offsets_of, ValuePart::ListOffsets, GpuElement::U32);
        let mut outputs = Vec::new();
        let mut element_writes = Vec::new();
        let mut cell_writes = Vec::new();
        for &local in &self.kernel.outputs.clone() {
            let ty = self.output_type(local);
            let element = self.output_element(local, &ty)?;
            let is_list = matches!(ty, Type::List(_));
            if let Some(k) = self.reductions.iter().position(|r| r.target == local) {
                let r = self.reductions[k].clone();
                let part = if is_list {
                    ValuePart::ListValues
                } else {
                    ValuePart::Elements
                };
                let buffer = self.output_binding(local, part, element);
                cell_writes.push(format!("{buffer}[c] = {};", finish_value(&r, k)));
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: if is_list {
                        OutputLayout::ListOfScalars {
                            cells: cells_length.clone(),
                        }
                    } else {
                        OutputLayout::Vector {
                            length: cells_length.clone(),
                            capacity: cells_length.clone(),
                        }
                    },
                    dictionary: r.dictionary.clone(),
                });
                continue;
            }
            let Some(val) = self.values.get(&local).cloned() else {
                return Err(CodegenError::malformed(
                    &self.kernel.name,
                    &format!("output {} is not defined by the kernel", self.name(local)),
                ));
            };
            let part = if is_list {
                ValuePart::ListValues
            } else {
                ValuePart::Elements
            };
            let buffer = self.output_binding(local, part, element);
            let stored = wgsl::store(&val.expr, &val.ty);
            let layout = match (val.level, is_list) {
                (Level::Element, true) => {
                    element_writes.push(format!("{buffer}[e] = {stored};"));
                    OutputLayout::List {
                        offsets_of: Self::slot(offsets_of),
                        values: values_length.clone(),
                    }
                }
                (Level::Element, false) => {
                    element_writes.push(format!("{buffer}[e] = {stored};"));
                    OutputLayout::Vector {
                        length: values_length.clone(),
                        capacity: values_length.clone(),
                    }
                }
                (Level::Cell, true) => {
                    cell_writes.push(format!("{buffer}[c] = {stored};"));
                    OutputLayout::ListOfScalars {
                        cells: cells_length.clone(),
                    }
                }
                (Level::Cell, false) => {
                    cell_writes.push(format!("{buffer}[c] = {stored};"));
                    OutputLayout::Vector {
                        length: cells_length.clone(),
                        capacity: cells_length.clone(),
                    }
                }
                (Level::Scalar, _) => {
                    return Err(self.error(
                        None,
                        format!(
                            "output {} is one element inside a list kernel",
                            self.name(local)
                        ),
                    ))
                }
            };
            outputs.push(KernelOutput {
                slot: Self::slot(local),
                ty,
                layout,
                dictionary: val.dictionary.clone(),
            });
        }
        if self.values.values().any(|v| !v.active.is_empty())
            || self.reductions.iter().any(|r| !r.active.is_empty())
        {
            return Err(self.error(
                None,
                "compressed values inside a list kernel are not generated yet",
            ));
        }
        let listed = self.param("long_cells_listed".to_string(), ParamValue::LongCellsListed);
        let (_, long_cells) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Sum(
                    Box::new(cells_length.clone()),
                    Box::new(Length::Constant(1)),
                ),
                purpose: ScratchPurpose::LongCells,
            },
            LONG_CELLS.to_string(),
        );
        let splits = self.param("cell_splits".to_string(), ParamValue::CellSplits);
        let partials = self.cell_partials();
        let header = vec![
            format!("let cell_start = {offsets}[c];"),
            format!("let cell_end = {offsets}[c + 1u];"),
        ];
        let accumulators = self.accumulator_lines();
        let mut element_loop_body = self.element_lines.clone();
        element_loop_body.extend(accumulate_lines(&self.reductions));
        element_loop_body.extend(element_writes);
        let element_loop = |start: &str, end: &str, step: &str| {
            let mut lines = vec![format!(
                "for (var e = {start}; e < {end}; e = e + {step}) {{"
            )];
            lines.extend(element_loop_body.iter().map(|l| format!("    {l}")));
            lines.push("}".to_string());
            lines
        };
        let workgroup_totals = self.workgroup_total_lines();
        let own_totals = self.own_total_lines();
        let finish = |this: &Self, guard: Option<&str>| {
            let mut lines = this.reduced_lines();
            lines.extend(this.cell_lines.iter().cloned());
            let mut stores = cell_writes.clone();
            stores.extend(this.empty_cell_checks());
            match guard {
                Some(guard) => {
                    lines.push(format!("if {guard} {{"));
                    lines.extend(stores.into_iter().map(|l| format!("    {l}")));
                    lines.push("}".to_string());
                }
                None => lines.extend(stores),
            }
            lines
        };

        // A workgroup per cell: every cell, or only the cells the thread pass listed as too
        // long for one thread. The count is made uniform through workgroup memory, so the
        // workgroup runs its tree reductions together.
        let mut body = vec![
            "var c = i;".to_string(),
            format!("if {listed} != 0u {{"),
            format!("    c = atomicLoad(&{long_cells}[1u + i]);"),
            "}".to_string(),
        ];
        body.extend(header.clone());
        body.extend(accumulators.clone());
        body.extend(element_loop(
            "cell_start + local_id.x",
            "cell_end",
            "WORKGROUP_SIZE",
        ));
        body.extend(workgroup_totals.clone());
        body.extend(finish(&self, Some("local_id.x == 0u")));
        let mut text = "var<workgroup> cells_to_reduce: u32;\n\n".to_string();
        text += &self.entry_header(WORKGROUP_ENTRY);
        text += "    if local_id.x == 0u {\n";
        let _ = writeln!(
            text,
            "        cells_to_reduce = select({cells}, atomicLoad(&{long_cells}[0]), {listed} != 0u);"
        );
        text += "    }\n";
        text += "    let count = workgroupUniformLoad(&cells_to_reduce);\n";
        text += "    for (var i = workgroup_id.x; i < count; i = i + num_workgroups.x) {\n";
        text += &indent(&body, 2);
        text += "    }\n}\n\n";

        // A thread per cell of at most THREAD_CELL_MAX elements, folded in order.
        let mut body = header.clone();
        body.push(format!("if cell_end - cell_start <= {THREAD_CELL_MAX}u {{"));
        let mut inner = accumulators.clone();
        inner.extend(element_loop("cell_start", "cell_end", "1u"));
        inner.extend(own_totals.clone());
        inner.extend(finish(&self, None));
        body.extend(inner.into_iter().map(|l| format!("    {l}")));
        // Longer cells are listed for the workgroup pass.
        body.push("} else {".to_string());
        body.push(format!(
            "    let listed_at = atomicAdd(&{long_cells}[0], 1u);"
        ));
        body.push(format!(
            "    atomicStore(&{long_cells}[1u + listed_at], c);"
        ));
        body.push("}".to_string());
        text += &self.entry_header(THREAD_ENTRY);
        text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
        let _ = writeln!(
            text,
            "    for (var c = global_id.x; c < {cells}; c = c + stride) {{"
        );
        text += &indent(&body, 2);
        text += "    }\n}\n\n";

        // A workgroup per piece of a cell: `cell_splits` pieces of equal length per cell.
        let mut body = vec![
            format!("let c = w / {splits};"),
            format!("let piece = w % {splits};"),
        ];
        body.extend(header.clone());
        body.push(format!(
            "let piece_length = (cell_end - cell_start + {splits} - 1u) / {splits};"
        ));
        body.push(
            "let piece_start = min(cell_start + piece * piece_length, cell_end);".to_string(),
        );
        body.push("let piece_end = min(piece_start + piece_length, cell_end);".to_string());
        body.extend(accumulators.clone());
        body.extend(element_loop(
            "piece_start + local_id.x",
            "piece_end",
            "WORKGROUP_SIZE",
        ));
        body.extend(workgroup_totals);
        let stores: Vec<String> = partials
            .iter()
            .map(|p| format!("{}[{}] = {};", p.buffer, p.index("w"), p.total))
            .collect();
        if !stores.is_empty() {
            body.push("if local_id.x == 0u {".to_string());
            body.extend(stores.into_iter().map(|l| format!("    {l}")));
            body.push("}".to_string());
        }
        text += &self.entry_header(SPLIT_ENTRY);
        let _ = writeln!(
            text,
            "    for (var w = workgroup_id.x; w < {cells} * {splits}; w = w + num_workgroups.x) {{"
        );
        text += &indent(&body, 2);
        text += "    }\n}\n\n";

        // A thread per cell: its pieces' partials folded in piece order, then the cell's
        // statements.
        let mut body = header;
        body.extend(accumulators);
        body.push(format!(
            "for (var piece = 0u; piece < {splits}; piece = piece + 1u) {{"
        ));
        body.push(format!("    let w = c * {splits} + piece;"));
        for p in &partials {
            let read = format!("{}[{}]", p.buffer, p.index("w"));
            let fold = match p.op {
                Some(op) => combine(op, p.ty, &p.accumulator, &read),
                None => format!("{} + {read}", p.accumulator),
            };
            body.push(format!("    {} = {fold};", p.accumulator));
        }
        body.push("}".to_string());
        body.extend(own_totals);
        body.extend(finish(&self, None));
        text += &self.entry_header(COMBINE_ENTRY);
        text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
        let _ = writeln!(
            text,
            "    for (var c = global_id.x; c < {cells}; c = c + stride) {{"
        );
        text += &indent(&body, 2);
        text += "    }\n}\n";

        let passes = vec![Pass::Cells(CellPasses {
            cells: cells_length,
            values: values_length,
            per_workgroup: WORKGROUP_ENTRY.to_string(),
            per_thread: THREAD_ENTRY.to_string(),
            split: SPLIT_ENTRY.to_string(),
            combine: COMBINE_ENTRY.to_string(),
        })];
        self.finish(text, passes, outputs, InputReads::CodedWherePossible)
    }

    /// `var acc{k}` (and `var count{k}`) at their identities.
    fn accumulator_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            lines.push(format!("var acc{k}: {} = {};", r.acc, r.identity));
            if r.counted {
                lines.push(format!("var count{k}: u32 = 0u;"));
            }
        }
        lines
    }

    /// `total{k}` (and `total_count{k}`) by the workgroup's tree reductions.
    fn workgroup_total_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            lines.push(format!(
                "let total{k} = workgroup_{}_{}(local_id.x, acc{k});",
                combine_name(r.op),
                r.acc
            ));
            if r.counted {
                lines.push(format!(
                    "let total_count{k} = workgroup_sum_u32(local_id.x, count{k});"
                ));
            }
        }
        lines
    }

    /// `total{k}` (and `total_count{k}`) as the invocation's own accumulators.
    fn own_total_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            lines.push(format!("let total{k} = acc{k};"));
            if r.counted {
                lines.push(format!("let total_count{k} = count{k};"));
            }
        }
        lines
    }

    /// The cell's reductions as the locals the cell-level statements read.
    fn reduced_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            let name = self.name(r.target);
            let ty = wgsl::register_type(&r.result).unwrap_or("f64");
            // A bool extreme accumulates as a u32 word.
            let value = if r.result == Type::Bool {
                format!("({} != 0u)", finish_value(r, k))
            } else {
                finish_value(r, k)
            };
            lines.push(format!("let v_{name}: {ty} = {value};"));
        }
        lines
    }

    /// Status bits of the cell's reductions that had no elements.
    fn empty_cell_checks(&self) -> Vec<String> {
        self.reductions
            .iter()
            .enumerate()
            .filter_map(|(k, r)| {
                r.empty_bit.map(|bit| {
                    format!(
                        "if total_count{k} == 0u {{ atomicOr(&status[0], {}u); }}",
                        1u32 << bit
                    )
                })
            })
            .collect()
    }

    /// Scratch for the split strategy's partials: one buffer per accumulator type, each
    /// holding [`MAX_CELL_PARTIALS`] partials per accumulator of that type (counts are u32).
    fn cell_partials(&mut self) -> Vec<CellPartial> {
        let mut accumulators: Vec<(&'static str, String, String, Option<ReduceOp>)> = Vec::new();
        for (k, r) in self.reductions.iter().enumerate() {
            accumulators.push((r.acc, format!("acc{k}"), format!("total{k}"), Some(r.op)));
            if r.counted {
                accumulators.push(("u32", format!("count{k}"), format!("total_count{k}"), None));
            }
        }
        let types: BTreeSet<&'static str> = accumulators.iter().map(|a| a.0).collect();
        let mut buffers = HashMap::default();
        for ty in types {
            let slots = accumulators.iter().filter(|a| a.0 == ty).count() as u64;
            let (_, name) = self.scratch_binding(
                Scratch {
                    element: gpu_element(ty),
                    elements: Length::Constant(slots * u64::from(MAX_CELL_PARTIALS)),
                    purpose: ScratchPurpose::Partials,
                },
                format!("cell_partials_{ty}"),
            );
            buffers.insert(ty, name);
        }
        let mut next: HashMap<&'static str, u32> = HashMap::default();
        accumulators
            .into_iter()
            .map(|(ty, accumulator, total, op)| {
                let slot = next.entry(ty).or_insert(0);
                let partial = CellPartial {
                    ty,
                    buffer: buffers[ty].clone(),
                    slot: *slot,
                    accumulator,
                    total,
                    op,
                };
                *slot += 1;
                partial
            })
            .collect()
    }
}

/// The scratch of the cells the thread pass leaves to the workgroup pass: their count, then
/// their indexes (bound as atomics).
pub(super) const LONG_CELLS: &str = "long_cells";

/// Entry points of a list kernel (see [`CellPasses`]).
const WORKGROUP_ENTRY: &str = "cells_pass";
const THREAD_ENTRY: &str = "cell_thread_pass";
const SPLIT_ENTRY: &str = "cell_split_pass";
const COMBINE_ENTRY: &str = "cell_combine_pass";

/// Where the split strategy keeps one accumulator's partials.
struct CellPartial {
    /// The accumulator's WGSL type.
    ty: &'static str,
    buffer: String,
    /// The accumulator's block of [`MAX_CELL_PARTIALS`] in `buffer`.
    slot: u32,
    /// `acc{k}` or `count{k}`.
    accumulator: String,
    /// `total{k}` or `total_count{k}`.
    total: String,
    /// How partials fold (a count's add when `None`).
    op: Option<ReduceOp>,
}

impl CellPartial {
    /// The element of piece `w` (`cell × splits + piece`).
    fn index(&self, w: &str) -> String {
        if self.slot == 0 {
            w.to_string()
        } else {
            format!("{}u + {w}", self.slot * MAX_CELL_PARTIALS)
        }
    }
}
