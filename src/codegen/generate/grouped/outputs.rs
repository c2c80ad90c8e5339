//! A grouped kernel's outputs: each group's number, keys, results and epilogue values,
//! written by the settle only into the buffer the host maps, after the group count, and the
//! decline flag.

use super::*;
use crate::outline::kernel::GroupedAggregation;

/// What [`Generator::grouped_outputs`] gives the passes.
pub(super) struct GroupedOutputs {
    /// The kernel's outputs, the decline flag last.
    pub(super) outputs: Vec<KernelOutput>,
    /// The settle's lines writing group `g`'s values where the host maps them.
    pub(super) finish_lines: Vec<String>,
    /// The binding of the buffer the host maps (`group_results`).
    pub(super) results: String,
}

impl Generator<'_> {
    /// The outputs of a grouped kernel of `groups` groups, whose count is in `count_id`;
    /// `words` and `strides` decode a slot into its keys, and `slot_of_local` gives a value
    /// column's accumulator.
    pub(super) fn grouped_outputs(
        &mut self,
        grouped: &GroupedAggregation,
        groups: usize,
        count_id: ScratchId,
        words: &[KeyWord],
        strides: &[u64],
        slot_of_local: &dyn Fn(&LocalId) -> Option<(bool, usize)>,
    ) -> Result<GroupedOutputs, CodegenError> {
        // Outputs: each as long as the group count, the flag one element.
        let group_length = Length::Compacted(count_id);
        let mut outputs = Vec::new();
        // Each output as written: its index in `outputs`, element and value. An output has
        // no buffer of its own: the settle writes its values only where the host maps them
        // (after the group count), and the launch takes them from there as host values. A
        // grouped kernel ends a query's aggregation (TPC-H q1's and q8's feed only the
        // result table), and a buffer bound per output cost the host their allocation and
        // wgpu's tracking at encoding, submission and clean-up on every run.
        let mut written: Vec<(usize, GpuElement, String)> = Vec::new();
        let mut output =
            |g: &mut Self, local: LocalId, ty: Type, value: String| -> Result<(), CodegenError> {
                let element = g.output_element(local, &ty)?;
                written.push((outputs.len(), element, value));
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: group_length.clone(),
                        capacity: Length::Constant(groups as u64),
                    },
                    dictionary: None,
                });
                Ok(())
            };
        // Each group's values, as the finish pass writes them: its number, its keys, its
        // results.
        let mut per_group: Vec<(LocalId, Type, String)> = Vec::new();
        if let Some(first) = grouped.first {
            per_group.push((first, Type::I64, wgsl::u32_to_i64("g")));
        }
        for &key in &grouped.key_outputs {
            let k = grouped.keys.iter().position(|&c| c == key).ok_or_else(|| {
                CodegenError::malformed(&self.kernel.name, "a key output is no key")
            })?;
            let word = &words[k];
            let decoded = format!("((slot / {}u) % {}u)", strides[k], word.range);
            // Parenthesized: the epilogue's statements take it as an operand (`k * k` of
            // an i8 key was `i32(w) - 128i * i32(w) - 128i`).
            let value = match word.ty {
                Type::I8 => format!("(i32({decoded}) - 128i)"),
                Type::I16 => format!("(i32({decoded}) - 32768i)"),
                _ => decoded,
            };
            per_group.push((key, word.ty.clone(), value));
        }
        for result in &grouped.results {
            let value_ty = match &result.value {
                Some(Operand::Local(l, _)) => Some(self.grouped_value(*l)?.ty),
                _ => None,
            };
            let ty = result.reduction.result_type(value_ty.as_ref());
            let total = |(float, s): (bool, usize)| {
                if float {
                    format!("grouped_f[GROUPED_TOTALS + {s}u * GROUPED_GROUPS + g]")
                } else {
                    format!("grouped_i[GROUPED_TOTALS + {s}u * GROUPED_GROUPS + g]")
                }
            };
            let slot = match &result.value {
                Some(Operand::Local(l, _)) => slot_of_local(l),
                _ => None,
            };
            let value = match (result.reduction, slot) {
                (Reduction::Len, _) => "count".to_string(),
                (Reduction::Avg, Some(s)) => format!("(f64({}) / f64(count))", total(s)),
                (Reduction::Sum, Some(s)) if ty == Type::F64 && !s.0 => {
                    format!("f64({})", total(s))
                }
                (Reduction::Sum, Some(s)) => total(s),
                (_, None) => {
                    return Err(self.error(
                        None,
                        format!("`{}` without a value column", result.reduction.name()),
                    ))
                }
            };
            per_group.push((result.target, ty, value));
        }
        // Written where something besides the epilogue reads them.
        let mut finish_lines = Vec::new();
        for (local, ty, value) in &per_group {
            if self.kernel.outputs.contains(local) {
                output(self, *local, ty.clone(), value.clone())?;
            }
        }
        if !grouped.epilogue.is_empty() {
            let lines = self.grouped_epilogue(grouped, &per_group, &group_length)?;
            for (local, ty, line) in lines.outputs {
                output(self, local, ty, line)?;
            }
            finish_lines.extend(lines.statements);
            finish_lines.insert(0, "let i = g;".to_string());
        }
        // The values where the host maps them, after the group count and its flag (see
        // `ScratchPurpose::GroupResults`): the read-back after the kernel maps one buffer.
        let mut copies = Vec::with_capacity(written.len());
        let mut offset = 2u64;
        for (k, element, _) in &written {
            copies.push((*k, offset));
            offset += groups as u64 * (element.size() / 4);
        }
        self.use_type("u64");
        let (_, results) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(offset),
                purpose: ScratchPurpose::GroupResults {
                    count: count_id,
                    outputs: copies.clone(),
                },
            },
            "group_results".to_string(),
        );
        for ((_, element, value), (_, at)) in written.iter().zip(&copies) {
            // Through a variable of the stored type, so that a literal has that type too.
            let ty = element.wgsl();
            if element.size() == 8 {
                finish_lines.extend([
                    "{".to_string(),
                    format!("    let value: {ty} = {value};"),
                    "    let bits = bitcast<u64>(value);".to_string(),
                    format!("    {results}[{at}u + 2u * g] = u32(bits & 4294967295lu);"),
                    format!("    {results}[{at}u + 2u * g + 1u] = u32(bits >> 32u);"),
                    "}".to_string(),
                ]);
            } else {
                finish_lines.extend([
                    "{".to_string(),
                    format!("    let value: {ty} = {value};"),
                    format!("    {results}[{at}u + g] = bitcast<u32>(value);"),
                    "}".to_string(),
                ]);
            }
        }
        // The launch resolves parameters before the pass runs: one that is (or depends on)
        // the group count would read the count before this pass has written it, and the
        // launch would keep that stale count for the outputs' length too.
        let reads_count = self.params.iter().any(|p| {
            let ParamValue::Length(length) = &p.value else {
                return false;
            };
            let mut counts = Vec::new();
            length.compactions(&mut counts);
            counts.contains(&count_id)
        });
        if reads_count {
            return Err(self.error(None, "a parameter that needs the group count"));
        }
        // The decline flag: word 0 of the count buffer, read back with the count.
        outputs.push(KernelOutput {
            slot: Self::slot(grouped.declined),
            ty: Type::Bool,
            layout: OutputLayout::Flag {
                scratch: count_id,
                word: 0,
            },
            dictionary: None,
        });
        Ok(GroupedOutputs {
            outputs,
            finish_lines,
            results,
        })
    }
}
