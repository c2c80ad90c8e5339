//! Assembly of the WGSL module and launch description from the generated lines: outputs,
//! compaction, reduction passes, list kernels.

use super::*;

impl Generator<'_> {
    // ----- assembly ------------------------------------------------------------------------

    pub(super) fn assemble(self) -> Result<KernelLaunch, CodegenError> {
        match &self.layout {
            Layout::Vector { .. } => self.assemble_vector(),
            Layout::List { .. } => self.assemble_list(),
        }
    }

    pub(super) fn output_element(
        &self,
        local: LocalId,
        ty: &Type,
    ) -> Result<GpuElement, CodegenError> {
        let cell = match ty {
            Type::List(cell) => (**cell).clone(),
            other => other.clone(),
        };
        GpuElement::of_type(&cell).ok_or_else(|| {
            self.error(
                None,
                format!("output {} of type {ty} has no GPU layout", self.name(local)),
            )
        })
    }

    /// The type of the value an output holds: what the kernel computed (the type of the
    /// builtin's result), which a declaration the type checker converted may not name.
    pub(super) fn output_type(&self, local: LocalId) -> Type {
        match self.values.get(&local) {
            Some(val) if val.list && !matches!(val.ty, Type::List(_)) => {
                Type::List(Box::new(val.ty.clone()))
            }
            Some(val) => val.ty.clone(),
            None => self.local_type(local),
        }
    }

    /// `i < <own length>` for a value (or a reduction's folded value) shorter than the
    /// launch, `None` when it spans the launch.
    pub(super) fn guard(&mut self, local: LocalId, launch: &Length) -> Option<String> {
        let own = if self.reductions.iter().any(|r| r.target == local) {
            self.reduced_lengths.get(&local)
        } else {
            self.lengths.get(&local)
        };
        let own = own.filter(|own| *own != launch).cloned()?;
        let name = cat!("len_v_", self.name(local));
        Some(cat!("i < ", self.param(name, ParamValue::Length(own))))
    }

    /// A failing check records element positions up to the launch's length, which the
    /// inputs of unproven length widen beyond the geometry's (a date minus a vector
    /// parameter): the buffers recording them were sized by the geometry.
    fn widen_recorded(&mut self, length: &Length) {
        if let Some(geometry) = self.geometry_length().filter(|g| g != length) {
            for scratch in &mut self.scratch {
                if scratch.purpose == ScratchPurpose::BadIndexes {
                    scratch.elements = scratch.elements.substitute(&geometry, length);
                }
            }
        }
    }

    /// The launch's length (a vector kernel's) and its param `n`, with the recording
    /// buffers of failing checks widened to it.
    pub(super) fn vector_launch(&mut self) -> Result<(Length, String), CodegenError> {
        let Some(length) = self.launch_length() else {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "not a vector kernel",
            ));
        };
        let n = self.param("n".to_string(), ParamValue::Length(length.clone()));
        self.widen_recorded(&length);
        Ok((length, n))
    }

    pub(super) fn assemble_vector(mut self) -> Result<KernelLaunch, CodegenError> {
        let (length, n) = self.vector_launch()?;
        // Values shorter than the launch (a broadcast side, a value of an unrelated input
        // length) are written and reduced only below their own length.
        let reduced: Vec<LocalId> = self.reductions.iter().map(|r| r.target).collect();
        for (k, target) in reduced.into_iter().enumerate() {
            if let Some(guard) = self.guard(target, &length) {
                self.reductions[k].active.insert(0, guard);
            }
        }
        // Outputs: full ones written at i, compressed ones grouped by activity and compacted.
        let mut outputs = Vec::new();
        let mut full_writes = Vec::new();
        let mut groups: BTreeMap<String, Vec<(LocalId, Val)>> = BTreeMap::new();
        let mut reduced = Vec::new();
        for &local in &self.kernel.outputs.clone() {
            let ty = self.output_type(local);
            if let Some(k) = self.reductions.iter().position(|r| r.target == local) {
                reduced.push((local, k));
                continue;
            }
            let Some(val) = self.values.get(&local).cloned() else {
                return Err(CodegenError::malformed(
                    &self.kernel.name,
                    &format!("output {} is not defined by the kernel", self.name(local)),
                ));
            };
            if val.level != Level::Element {
                self.current = self.statement_defining(local).unwrap_or(self.current);
                return Err(self.error(
                    None,
                    format!(
                        "output {} is one element computed per thread of a wider kernel",
                        self.name(local)
                    ),
                ));
            }
            let element = self.output_element(local, &ty)?;
            if val.active.is_empty() {
                let buffer = self.output_binding(local, ValuePart::Elements, element);
                full_writes.push(cat!(buffer, "[i] = ", wgsl::store(&val.expr, &val.ty), ";"));
                let own = self.lengths.get(&local).cloned().unwrap_or(length.clone());
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: own,
                        capacity: length.clone(),
                    },
                    dictionary: val.dictionary.clone(),
                });
            } else {
                let conjuncts: Vec<String> = self
                    .guard(local, &length)
                    .into_iter()
                    .chain(val.active.iter().cloned())
                    .collect();
                groups
                    .entry(conjuncts.join(" && "))
                    .or_default()
                    .push((local, val));
            }
        }
        let mut passes = Vec::new();
        let mut flag_writes = Vec::new();
        let mut compact_writes = Vec::new();
        for (g, (condition, members)) in groups.iter().enumerate() {
            let (flags, flags_name) = self.scratch_binding(
                Scratch {
                    element: GpuElement::U32,
                    elements: length.clone(),
                    purpose: ScratchPurpose::Flags,
                },
                format!("flags{g}"),
            );
            let offsets_length = match &length {
                Length::Constant(k) => Length::Constant(k + 1),
                other => other.clone(),
            };
            let (offsets, offsets_name) = self.scratch_binding(
                Scratch {
                    element: GpuElement::U32,
                    elements: offsets_length,
                    purpose: ScratchPurpose::Offsets,
                },
                format!("offsets{g}"),
            );
            flag_writes.push(format!("{flags_name}[i] = select(0u, 1u, {condition});"));
            passes.push(Pass::ExclusiveScan {
                flags,
                offsets,
                length: length.clone(),
            });
            let mut stores = Vec::new();
            for (local, val) in members {
                let ty = self.output_type(*local);
                let element = self.output_element(*local, &ty)?;
                let buffer = self.output_binding(*local, ValuePart::Elements, element);
                stores.push(cat!(
                    "    ",
                    buffer,
                    "[",
                    offsets_name,
                    "[i]] = ",
                    wgsl::store(&val.expr, &val.ty),
                    ";"
                ));
                outputs.push(KernelOutput {
                    slot: Self::slot(*local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: Length::Compacted(offsets),
                        capacity: length.clone(),
                    },
                    dictionary: val.dictionary.clone(),
                });
            }
            compact_writes.push(format!("if {condition} {{"));
            compact_writes.extend(stores);
            compact_writes.push("}".to_string());
        }
        // Reductions: partials per workgroup, then one workgroup folds them.
        let mut partial_names = Vec::new();
        for k in 0..self.reductions.len() {
            let acc = self.reductions[k].acc;
            let element = gpu_element(acc);
            let (_, sum_name) = self.scratch_binding(
                Scratch {
                    element,
                    elements: Length::Constant(u64::from(MAX_REDUCTION_WORKGROUPS)),
                    purpose: ScratchPurpose::Partials,
                },
                format!("partials{k}"),
            );
            let count_name = if self.reductions[k].counted {
                Some(
                    self.scratch_binding(
                        Scratch {
                            element: GpuElement::U32,
                            elements: Length::Constant(u64::from(MAX_REDUCTION_WORKGROUPS)),
                            purpose: ScratchPurpose::Partials,
                        },
                        format!("partial_counts{k}"),
                    )
                    .1,
                )
            } else {
                None
            };
            partial_names.push((sum_name, count_name));
        }
        let mut reduction_outputs = Vec::new();
        for (local, k) in &reduced {
            let reduction = self.reductions[*k].clone();
            let element = self.output_element(*local, &reduction.result)?;
            let buffer = self.output_binding(*local, ValuePart::Elements, element);
            let host = self.output_binding(*local, ValuePart::HostReadable, element);
            reduction_outputs.push((*k, buffer, host));
            outputs.push(KernelOutput {
                slot: Self::slot(*local),
                ty: reduction.result.clone(),
                layout: OutputLayout::Vector {
                    length: Length::Constant(1),
                    capacity: Length::Constant(1),
                },
                dictionary: reduction.dictionary.clone(),
            });
        }
        let has_reductions = !self.reductions.is_empty();
        // The main pass's workgroups done: the last folds the partials.
        let done = has_reductions.then(|| {
            self.scratch_binding(
                Scratch {
                    element: GpuElement::U32,
                    elements: Length::Constant(1),
                    purpose: ScratchPurpose::WorkgroupsDone,
                },
                "workgroups_done".to_string(),
            )
            .1
        });

        // Text.
        let mut entries = String::new();
        let body = indent(&self.element_lines, 2);
        if !groups.is_empty() {
            let mut text = self.entry_header("flags_pass");
            text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
            let _ = writeln!(
                text,
                "    for (var i = global_id.x; i < {n}; i = i + stride) {{"
            );
            text += &body;
            text += &indent(&flag_writes, 2);
            text += "    }\n}\n";
            entries += &text;
            entries += "\n";
            // The scans come after the flags pass.
            let scans = std::mem::take(&mut passes);
            passes.push(Pass::Entry {
                entry_point: "flags_pass".to_string(),
                dispatch: Dispatch::Elements {
                    length: length.clone(),
                    max_workgroups: MAX_DISPATCH_WORKGROUPS,
                },
            });
            passes.extend(scans);
        }
        let mut text = self.entry_header("main_pass");
        text += "    let stride = num_workgroups.x * WORKGROUP_SIZE;\n";
        for (k, r) in self.reductions.iter().enumerate() {
            let _ = writeln!(text, "    var acc{k}: {} = {};", r.acc, r.identity);
            if r.counted {
                let _ = writeln!(text, "    var count{k}: u32 = 0u;");
            }
        }
        let mut row = body.clone();
        row += &indent(&accumulate_lines(&self.reductions), 2);
        row += &indent(&full_writes, 2);
        row += &indent(&compact_writes, 2);
        // A reducing pass runs few workgroups, each invocation over many rows: it reads
        // the next row's columns (those every row reads) before it works on this one, so
        // their loads overlap this row's dependent loads and arithmetic instead of
        // starting after them. Rows are still added in the same order.
        //
        // Measured and rejected (H200, SF 1, GPU busy): evaluating `@and`'s right side only
        // under its left side's `if`, so that a filter's later conjuncts read their columns
        // only for the rows the earlier ones passed (q6's quantity for 15 % of the rows, its
        // discount for 7 %). It loses those columns' prefetch, and at these selectivities
        // nearly every 64-byte segment still holds a passing row: q6 went 40 → 43 µs,
        // q12 181 → 205 µs, q1, q14 and q19 unchanged. Also rejected: 2 or 4 rows a step
        // (their columns read a step ahead, as the grouped pass does), q6 40 → 42 and 45 µs,
        // and with 512 workgroups 48 and 47; no other query's GPU time moved.
        let prefetched = if has_reductions {
            self.unconditional_row_reads()
        } else {
            Vec::new()
        };
        if prefetched.is_empty() {
            let _ = writeln!(
                text,
                "    for (var i = global_id.x; i < {n}; i = i + stride) {{"
            );
            text += &row;
            text += "    }\n";
        } else {
            text += "    var i = global_id.x;\n";
            let last = format!("min(i, max({n}, 1u) - 1u)");
            for (k, (read, reg)) in prefetched.iter().enumerate() {
                let at = read.replacen("[i]", &format!("[{last}]"), 1);
                let _ = writeln!(text, "    var next{k}: {reg} = {at};");
            }
            let _ = writeln!(
                text,
                "    loop {{\n        if i >= {n} {{\n            break;\n        }}"
            );
            let following = format!("min(i + stride, {n} - 1u)");
            for (k, (read, reg)) in prefetched.iter().enumerate() {
                let _ = writeln!(text, "        let row{k}: {reg} = next{k};");
                let at = read.replacen("[i]", &format!("[{following}]"), 1);
                let _ = writeln!(text, "        next{k} = {at};");
                row = row.replace(read.as_str(), &format!("row{k}"));
            }
            text += &row;
            text += "        i = i + stride;\n    }\n";
        }
        for (k, r) in self.reductions.iter().enumerate() {
            let (sum_name, count_name) = &partial_names[k];
            let _ = writeln!(
                text,
                "    let total{k} = workgroup_{}_{}(local_id.x, acc{k});",
                combine_name(r.op),
                r.acc
            );
            let _ = writeln!(
                text,
                "    if local_id.x == 0u {{ {sum_name}[workgroup_id.x] = total{k}; }}"
            );
            if let Some(count_name) = count_name {
                let _ = writeln!(
                    text,
                    "    let total_count{k} = workgroup_sum_u32(local_id.x, count{k});"
                );
                let _ = writeln!(
                    text,
                    "    if local_id.x == 0u {{ {count_name}[workgroup_id.x] = total_count{k}; }}"
                );
            }
        }
        if let Some(done) = &done {
            text += &self.reduction_fold(&partial_names, &reduction_outputs, done);
            entries += "var<workgroup> reduction_ticket: u32;\n\n";
        }
        text += "}\n";
        entries += &text;
        passes.push(Pass::Entry {
            entry_point: "main_pass".to_string(),
            dispatch: Dispatch::Elements {
                length: length.clone(),
                max_workgroups: if has_reductions {
                    MAX_REDUCTION_WORKGROUPS
                } else {
                    MAX_DISPATCH_WORKGROUPS
                },
            },
        });
        self.finish(entries, passes, outputs, InputReads::CodedWherePossible)
    }

    /// The end of a reducing main pass: the last of its workgroups to finish folds their
    /// partials (in workgroup order, the same whichever is last) into the results. Each
    /// workgroup writes its partials before it counts itself done in `done` (the barrier
    /// orders them before the count, at device scope); the last reads them after its count,
    /// and sets the count back to zero for the next launch. No workgroup waits for another,
    /// and there is no second dispatch (a few microseconds of the device's round trip).
    /// Each result also goes where the host maps it (`ValuePart::HostReadable`): a query's
    /// sum is read without a copy on the device. On an H200 at SF 1, TPC-H q6 went from
    /// 0.085-0.103 ms a warm run to 0.075-0.077 with both (4 processes each, alternating).
    fn reduction_fold(
        &self,
        partial_names: &[(String, Option<String>)],
        reduction_outputs: &[(usize, String, String)],
        done: &str,
    ) -> String {
        let mut text = format!(
            "    storageBarrier();
    if local_id.x == 0u {{
        reduction_ticket = atomicAdd(&{done}[0], 1u);
    }}
    if workgroupUniformLoad(&reduction_ticket) + 1u != num_workgroups.x {{
        return;
    }}
    storageBarrier();
    if local_id.x == 0u {{
        atomicStore(&{done}[0], 0u);
    }}
"
        );
        // In a block of its own: its totals are named as the workgroup's own above.
        let mut fold = String::new();
        for (k, r) in self.reductions.iter().enumerate() {
            let (sum_name, count_name) = &partial_names[k];
            let _ = writeln!(fold, "    var fold{k}: {} = {};", r.acc, r.identity);
            if count_name.is_some() {
                let _ = writeln!(fold, "    var fold_count{k}: u32 = 0u;");
            }
            // Each invocation folds the partials local_id, local_id + 256, … in order.
            fold +=
                "    for (var p = local_id.x; p < num_workgroups.x; p = p + WORKGROUP_SIZE) {\n";
            let _ = writeln!(
                fold,
                "        fold{k} = {};",
                combine(r.op, r.acc, &format!("fold{k}"), &format!("{sum_name}[p]"))
            );
            if let Some(count_name) = count_name {
                let _ = writeln!(
                    fold,
                    "        fold_count{k} = fold_count{k} + {count_name}[p];"
                );
            }
            fold += "    }\n";
            let _ = writeln!(
                fold,
                "    let total{k} = workgroup_{}_{}(local_id.x, fold{k});",
                combine_name(r.op),
                r.acc
            );
            if r.counted {
                let _ = writeln!(
                    fold,
                    "    let total_count{k} = workgroup_sum_u32(local_id.x, fold_count{k});"
                );
            }
        }
        fold += "    if local_id.x == 0u {\n";
        for (k, buffer, host) in reduction_outputs {
            let r = &self.reductions[*k];
            let _ = writeln!(fold, "        let result{k} = {};", finish_value(r, *k));
            let _ = writeln!(fold, "        {buffer}[0] = result{k};");
            let _ = writeln!(fold, "        {host}[0] = result{k};");
        }
        for (k, r) in self.reductions.iter().enumerate() {
            if let Some(bit) = r.empty_bit {
                let _ = writeln!(
                    fold,
                    "        if total_count{k} == 0u {{ atomicOr(&status[0], {}u); }}",
                    1u32 << bit
                );
            }
        }
        fold += "    }\n";
        text += "    {\n";
        for line in fold.lines() {
            let _ = writeln!(text, "    {line}");
        }
        text += "    }\n";
        text
    }

    /// The row reads of the kernel's element statements that every row makes (outside any
    /// condition), with their register types: a reducing pass reads them a row ahead.
    pub(super) fn unconditional_row_reads(&self) -> Vec<(String, &'static str)> {
        let mut depth = 0usize;
        let mut found = BTreeSet::new();
        for line in &self.element_lines {
            let line = line.trim_start();
            if depth == 0 && !line.starts_with("if ") && !line.starts_with('}') {
                for read in self.row_reads.keys() {
                    if line.contains(read.as_str()) {
                        found.insert(read.clone());
                    }
                }
            }
            let opens = line.matches('{').count();
            let closes = line.matches('}').count();
            depth = (depth + opens).saturating_sub(closes);
        }
        found
            .into_iter()
            .filter_map(|read| self.row_reads.get(&read).map(|reg| (read, *reg)))
            .collect()
    }

    pub(super) fn finish(
        mut self,
        mut entries: String,
        mut passes: Vec<Pass>,
        outputs: Vec<KernelOutput>,
        reads: InputReads,
    ) -> Result<KernelLaunch, CodegenError> {
        // A kernel whose values nobody reads runs only for its checks: with none on the
        // device, the engine's launch checks are all there is to do.
        if outputs.is_empty() && self.checks.is_empty() {
            passes.clear();
        }
        let coded = match reads {
            InputReads::CodedWherePossible => self.coded_inputs(&mut entries),
            InputReads::Elements => String::new(),
        };
        // Sized once for the whole module (grown by doubling, the text was copied over and
        // over): the entry points and helpers as they are, about a line per declaration.
        let declarations = self.bindings.len() + self.params.len() + self.constants.len();
        let helpers: usize = self.helpers.iter().map(|h| h.source().len() + 1).sum();
        let mut text = String::with_capacity(entries.len() + helpers + 96 * declarations + 2048);
        let _ = write!(
            text,
            "// Kernel {} of {}: statements",
            self.kernel.name,
            self.function.qualified_name(),
        );
        for statement in &self.kernel.statements {
            text += " s";
            push_decimal(&mut text, statement.0 as u64);
        }
        text += ".\n";
        text += "// Generated by horsec; the launch description says how to bind and run it.\n\n";
        let _ = writeln!(
            text,
            "const WORKGROUP_SIZE: u32 = {KERNEL_WORKGROUP_SIZE}u;\n"
        );
        // Params: one u32 per field, padded to a multiple of four words.
        text += "struct Params {\n";
        for field in &self.params {
            push!(&mut text, "    ", field.name, ": u32,\n");
        }
        let padding = (4 - self.params.len() % 4) % 4;
        for k in 0..padding {
            let _ = writeln!(text, "    padding{k}: u32,");
        }
        text += "}\n\n";
        text += "@group(0) @binding(0) var<uniform> params: Params;\n";
        for binding in &self.bindings {
            let access = match binding.access {
                Access::Read => "read",
                Access::ReadWrite => "read_write",
            };
            let atomic = matches!(binding.buffer, BufferRef::Scratch(id)
                if self.scratch.get(id.0).is_some_and(|s| s.purpose.atomic()));
            let element = if atomic {
                "atomic<u32>"
            } else {
                binding.element.wgsl()
            };
            text += "@group(";
            push_decimal(&mut text, u64::from(binding.group));
            text += ") @binding(";
            push_decimal(&mut text, u64::from(binding.binding));
            push!(
                &mut text,
                ") var<storage, ",
                access,
                "> ",
                binding.name,
                ": array<",
                element,
                ">;\n"
            );
        }
        text += "\n";
        for (name, ty, value) in &self.constants {
            push!(
                &mut text,
                "var<private> ",
                name,
                ": ",
                ty,
                " = ",
                value,
                ";\n"
            );
        }
        if !self.constants.is_empty() {
            text += "\n";
        }
        // Workgroup reductions, one per (operation, type) used.
        let mut combiners: BTreeSet<(&'static str, &'static str)> = BTreeSet::new();
        for r in &self.reductions {
            combiners.insert((combine_name(r.op), r.acc));
            if r.counted {
                combiners.insert(("sum", "u32"));
            }
        }
        let types: BTreeSet<&str> = combiners.iter().map(|(_, t)| *t).collect();
        for ty in &types {
            let _ = writeln!(
                text,
                "var<workgroup> shared_{ty}: array<{ty}, WORKGROUP_SIZE>;"
            );
        }
        if !types.is_empty() {
            text += "\n";
        }
        for (op, ty) in &combiners {
            text += &workgroup_reduce(op, ty);
            text += "\n";
        }
        text += &coded;
        for helper in &self.helpers {
            text += helper.source();
            text += "\n";
        }
        text += &entries;
        let launch = KernelLaunch {
            name: self.kernel.name.clone(),
            wgsl: text,
            features: self.features,
            bindings: self.bindings,
            params: self.params,
            scratch: self.scratch,
            passes,
            outputs,
            requirements: self.requirements,
            checks: self.checks,
            launch_checks: self.launch_checks,
        };
        Ok(launch)
    }
}
