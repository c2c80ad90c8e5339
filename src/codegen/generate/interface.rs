//! The kernel's interface with the engine: buffer bindings, parameter words and status bits
//! for the errors a kernel detects.

use super::*;

impl Generator<'_> {
    pub(super) fn input_binding(
        &mut self,
        local: LocalId,
        part: ValuePart,
        element: GpuElement,
    ) -> String {
        if let Some(name) = self.binding_names.get(&(local, part, false)) {
            return name.clone();
        }
        let suffix = match part {
            ValuePart::Elements => "",
            ValuePart::ListValues => "_values",
            ValuePart::ListOffsets => "_offsets",
            ValuePart::EnumKeys => "_keys",
            ValuePart::EnumIndex => "_index",
            ValuePart::HostReadable => "_host",
            ValuePart::Coded => "_coded",
        };
        let name = cat!("in_", self.name(local), suffix);
        self.use_type(element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Input {
                slot: Self::slot(local),
                part,
            },
            element,
            access: Access::Read,
        });
        self.binding_names
            .insert((local, part, false), name.clone());
        name
    }

    pub(super) fn output_binding(
        &mut self,
        local: LocalId,
        part: ValuePart,
        element: GpuElement,
    ) -> String {
        let suffix = match part {
            ValuePart::ListValues => "_values",
            ValuePart::HostReadable => "_host",
            _ => "",
        };
        let name = cat!("out_", self.name(local), suffix);
        self.use_type(element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Output {
                slot: Self::slot(local),
                part,
            },
            element,
            access: Access::ReadWrite,
        });
        self.binding_names.insert((local, part, true), name.clone());
        name
    }

    /// The two scratch buffers of a check that names its first failing element: `first`
    /// (one word, the first failing position as `atomicMax(first[0], ~i)`) and a buffer of
    /// `per_element` elements of `element` per position, for positions below the kernel's
    /// `length` and [`RECORDED_POSITIONS`]; `what` names the latter (`bad_index`, …).
    /// Returns their ids and WGSL names.
    pub(super) fn failure_record(
        &mut self,
        length: Length,
        element: GpuElement,
        per_element: u64,
        what: &str,
    ) -> ((ScratchId, String), (ScratchId, String)) {
        let n = self.scratch.len();
        let first = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(1),
                purpose: ScratchPurpose::Status,
            },
            format!("status_first{n}"),
        );
        let per_position = match per_element {
            1 => length,
            k => (1..k).fold(length.clone(), |sum, _| {
                Length::Sum(Box::new(sum), Box::new(length.clone()))
            }),
        };
        let recorded = self.scratch_binding(
            Scratch {
                element,
                elements: Length::Min(
                    Box::new(per_position),
                    Box::new(Length::Constant(per_element * RECORDED_POSITIONS)),
                ),
                purpose: ScratchPurpose::BadIndexes,
            },
            format!("{what}{n}"),
        );
        (first, recorded)
    }

    pub(super) fn scratch_binding(
        &mut self,
        scratch: Scratch,
        name: String,
    ) -> (ScratchId, String) {
        let id = ScratchId(self.scratch.len());
        self.use_type(scratch.element.wgsl());
        self.bindings.push(Binding {
            group: 0,
            binding: self.bindings.len() as u32 + 1,
            name: name.clone(),
            buffer: BufferRef::Scratch(id),
            element: scratch.element,
            access: Access::ReadWrite,
        });
        self.scratch.push(scratch);
        (id, name)
    }

    /// A param word, once per name; returns `params.<name>`.
    pub(super) fn param(&mut self, name: String, value: ParamValue) -> String {
        let text = cat!("params.", name);
        if !self.param_names.contains_key(&name) {
            self.param_names.insert(name.clone(), ());
            self.params.push(ParamField { name, value });
        }
        text
    }

    pub(super) fn length_param(&mut self, local: LocalId, part: ValuePart) -> String {
        let suffix = match part {
            ValuePart::EnumKeys => "_keys",
            ValuePart::ListValues => "_values",
            ValuePart::ListOffsets => "_cells",
            _ => "",
        };
        let name = cat!("len_", self.name(local), suffix);
        self.param(
            name,
            ParamValue::Length(Length::Of {
                slot: Self::slot(local),
                part,
            }),
        )
    }

    /// Where the current statement is, for the errors its checks report.
    pub(super) fn site(&self) -> CheckSite {
        CheckSite {
            offset: self
                .tree
                .stmt(self.current)
                .map_or(0, |stmt| stmt.span.start),
            at: None,
        }
    }

    /// A status bit for an error the kernel detects in the current statement; returns the
    /// bit. Checks of one statement with one message share it; another statement's get
    /// their own, since the engine reports the first failing statement in the source (two
    /// empty `@min`s sharing a bit named the first where only the second failed, ahead of
    /// an `@avg` between them).
    pub(super) fn status_bit(
        &mut self,
        message: String,
        report: Option<CheckReport>,
    ) -> Result<u32, CodegenError> {
        let site = self.site();
        if let Some(check) = self
            .checks
            .iter()
            .find(|c| c.message == message && c.report == report && c.site == site)
        {
            return Ok(check.bit);
        }
        let status = match self.status {
            Some(id) => id,
            None => {
                let (id, _) = self.scratch_binding(
                    Scratch {
                        element: GpuElement::U32,
                        elements: Length::Constant(1),
                        purpose: ScratchPurpose::Status,
                    },
                    "status".to_string(),
                );
                self.status = Some(id);
                id
            }
        };
        let bit = self.checks.len() as u32;
        if bit >= 32 {
            return Err(self.error(None, "more than 32 error checks in one kernel"));
        }
        self.checks.push(StatusCheck {
            status,
            bit,
            message,
            site,
            report,
        });
        Ok(bit)
    }

    // ----- operands ------------------------------------------------------------------------
}
