//! Reads of inputs at computed positions: gathers (`@index`, `@fetch`) with bounds checks,
//! `@append` and the cyclic fill of `@vector`.

use super::*;

impl Generator<'_> {
    /// `source[index]` for a vector input `source`; returns the value and the lines that
    /// check the index.
    pub(super) fn gather(
        &mut self,
        builtin: Builtin,
        source: &Operand,
        index: &Val,
        index_input: Option<LocalId>,
    ) -> Result<(Val, Vec<String>), CodegenError> {
        self.gather_named(builtin, builtin, source, index, index_input)
    }

    /// [`Generator::gather`] for `builtin`, whose index errors the CPU reports under the name
    /// `reported` (`@each_right: index 3 out of range for length 3` for a gather of
    /// `@each_right(@index, x, cells)`). `index_input` may be a list (of a list kernel).
    pub(super) fn gather_named(
        &mut self,
        builtin: Builtin,
        reported: Builtin,
        source: &Operand,
        index: &Val,
        index_input: Option<LocalId>,
    ) -> Result<(Val, Vec<String>), CodegenError> {
        let Operand::Local(local, _) = source else {
            return Err(self.error(Some(builtin), "gathering from a literal"));
        };
        if self.values.contains_key(local) {
            return Err(self.error(
                Some(builtin),
                format!(
                    "gathering from {}, a value of this kernel (needs a grid-wide barrier)",
                    self.name(*local)
                ),
            ));
        }
        let ty = self.local_type(*local);
        let Some(element) = GpuElement::of_type(&ty) else {
            return Err(self.error(Some(builtin), format!("gathering from a {ty} value")));
        };
        if !index.ty.is_integer() || index.ty == Type::Bool {
            return Err(self.error(Some(builtin), format!("an index of type {}", index.ty)));
        }
        let buffer = self.input_binding(*local, ValuePart::Elements, element);
        let length = self.length_param(*local, ValuePart::Elements);
        let message = cat!(
            "@",
            builtin.name(),
            ": index out of range reading ",
            self.name(*local)
        );
        let source_length = Length::Of {
            slot: Self::slot(*local),
            part: ValuePart::Elements,
        };
        // The engine names the first index out of range as the CPU does: from the host's
        // copy of an index input, or from what the kernel recorded of an index it computed
        // (or a literal); an index input may be a list (`@each_right(@index, x, cells)`).
        // Elsewhere (an index computed in a list kernel, a compressed index) the message
        // names the vector read.
        let mut recorded = None;
        let kernel_length = match &self.layout {
            Layout::Vector { length, .. } => Some(length.clone()),
            Layout::List { .. } => None,
        };
        let report = match (index_input, kernel_length) {
            (Some(index), _) => Some(CheckReport::Index(IndexReport {
                builtin: reported.name().to_string(),
                index: IndexSource::Input(Self::slot(index)),
                length: source_length,
            })),
            // Each recorded report costs two storage bindings, which the outliner counts
            // when it fuses (`outline::MAX_STORAGE_BINDINGS`).
            (None, Some(length)) if index.active.is_empty() => {
                let element = if index.ty == Type::I64 {
                    GpuElement::I64
                } else {
                    GpuElement::I32
                };
                let ((first, first_name), (values, values_name)) =
                    self.failure_record(length, element, 1, "bad_index");
                recorded = Some((first_name, values_name));
                Some(CheckReport::Index(IndexReport {
                    builtin: reported.name().to_string(),
                    index: IndexSource::Device {
                        first,
                        values,
                        element,
                    },
                    length: source_length,
                }))
            }
            _ => None,
        };
        let (val, mut prelude) =
            self.checked_gather(&buffer, &length, &ty, index, message, report)?;
        if let Some((first, values)) = recorded {
            // The line `let in_range_<j> = ...;` names the checked index `<j>`.
            let j = prelude
                .iter()
                .find_map(|line| line.strip_prefix("let in_range_"))
                .and_then(|rest| rest.split(' ').next())
                .map(str::to_string)
                .ok_or_else(|| self.error(Some(builtin), "an index check without its index"))?;
            prelude.push(format!(
                "if !in_range_{j} {{ atomicMax(&{first}[0], ~i); if i < {RECORDED_POSITIONS}u \
                 {{ {values}[i] = {j}; }} }}"
            ));
        }
        let dictionary = matches!(ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(*local)));
        Ok((Val { dictionary, ..val }, prelude))
    }

    /// Reads `buffer[index]` after checking `0 <= index < length`; an index out of range
    /// sets a status bit and reads element 0 instead (the read stays in bounds).
    pub(super) fn checked_gather(
        &mut self,
        buffer: &str,
        length: &str,
        ty: &Type,
        index: &Val,
        message: String,
        report: Option<CheckReport>,
    ) -> Result<(Val, Vec<String>), CodegenError> {
        let bit = self.status_bit(message, report)?;
        let wide = index.ty == Type::I64;
        let index_ty = if wide {
            self.use_type("i64");
            "i64"
        } else {
            "i32"
        };
        let position = wgsl::convert(
            &index.expr,
            &index.ty,
            if wide { &Type::I64 } else { &Type::I32 },
        )
        .unwrap_or_else(|| index.expr.clone());
        let zero = wgsl::zero(index_ty);
        let mut j = String::from("j");
        push_decimal(
            &mut j,
            (self.element_lines.len() + self.cell_lines.len()) as u64,
        );
        // An i64 index is checked through its two words: lavapipe (Mesa 22.3) miscompiles a
        // comparison of a constant i64 with a widened u32 (`28li < i64(25u)` is true).
        // (Built by concatenation: a kernel makes many of these checks.)
        let check = if wide {
            cat!(
                "let in_range_",
                j,
                " = u32(",
                j,
                " >> 32u) == 0u && u32(",
                j,
                ") < ",
                length,
                ";"
            )
        } else {
            cat!(
                "let in_range_",
                j,
                " = ",
                j,
                " >= ",
                zero,
                " && ",
                j,
                " < ",
                index_ty,
                "(",
                length,
                ");"
            )
        };
        let mut report = cat!("if !in_range_", j, " { atomicOr(&status[0], ");
        push_decimal(&mut report, u64::from(1u32 << bit));
        report += "u); }";
        let prelude = vec![
            cat!("let ", j, ": ", index_ty, " = ", position, ";"),
            check,
            report,
        ];
        let expr = wgsl::load(
            &cat!(buffer, "[select(0u, u32(", j, "), in_range_", j, ")]"),
            ty,
        );
        Ok((
            Val {
                expr,
                ty: ty.clone(),
                level: index.level,
                active: index.active.clone(),
                dictionary: None,
                text: None,
                list: index.list,
            },
            prelude,
        ))
    }

    /// `@append(x, y)` of two vector inputs: `x[i]` for `i < len(x)`, else `y[i - len(x)]`,
    /// both converted to the result type (numeric promotion).
    pub(super) fn append(
        &mut self,
        target: LocalId,
        first: &Operand,
        second: &Operand,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        if !matches!(self.layout, Layout::Vector { .. }) {
            return Err(self.error(Some(Builtin::Append), "@append inside a list kernel"));
        }
        let mut reads = Vec::new();
        let mut dictionaries = Vec::new();
        for operand in [first, second] {
            let Operand::Local(local, _) = operand else {
                return Err(self.error(Some(Builtin::Append), "@append of a literal"));
            };
            if self.values.contains_key(local) {
                return Err(self.error(
                    Some(Builtin::Append),
                    "@append of a value made in this kernel",
                ));
            }
            let ty = self.local_type(*local);
            let Some(element) = GpuElement::of_type(&ty) else {
                return Err(self.error(Some(Builtin::Append), format!("@append of {ty}")));
            };
            let buffer = self.input_binding(*local, ValuePart::Elements, element);
            let length = self.length_param(*local, ValuePart::Elements);
            if matches!(ty, Type::Sym | Type::Str) {
                dictionaries.push(Self::slot(*local));
            }
            reads.push((buffer, length, ty));
        }
        let [(a, len_a, ta), (b, _, tb)] = reads.as_slice() else {
            return Err(self.error(Some(Builtin::Append), "expects two arguments"));
        };
        // Both reads stay in bounds whichever side the position falls on.
        let mut side =
            |read: String, ty: &Type| self.convert_expr(&wgsl::load(&read, ty), ty, result_ty);
        let x = side(format!("{a}[min(i, max({len_a}, 1u) - 1u)]"), ta);
        let y = side(format!("{b}[i - min(i, {len_a})]"), tb);
        let (Some(x), Some(y)) = (x, y) else {
            return Err(self.error(Some(Builtin::Append), format!("@append of {ta} and {tb}")));
        };
        let dictionary = match dictionaries.as_slice() {
            [one] => Some(DictionarySource::Input(*one)),
            [p, q] => {
                if p != q {
                    self.requirements
                        .push(LaunchRequirement::SameDictionary(*p, *q));
                }
                Some(DictionarySource::Input(*p))
            }
            _ => None,
        };
        let reg = wgsl::register_type(result_ty).unwrap_or("u32");
        let var = format!("v_{}", self.name(target));
        self.element_lines.push(format!("var {var}: {reg};"));
        self.element_lines.push(format!(
            "if i < {len_a} {{ {var} = {x}; }} else {{ {var} = {y}; }}"
        ));
        self.values.insert(
            target,
            Val {
                expr: var,
                ty: result_ty.clone(),
                level: Level::Element,
                active: Vec::new(),
                dictionary,
                text: None,
                list: false,
            },
        );
        Ok(())
    }

    /// `@vector(n, v)` with `v` an input of any length: `v` repeated cyclically, as the CPU's
    /// `cycle_to` (an empty `v` is an error).
    pub(super) fn cyclic_fill(
        &mut self,
        target: LocalId,
        local: LocalId,
    ) -> Result<(), CodegenError> {
        if !matches!(self.layout, Layout::Vector { .. }) {
            return Err(self.error(Some(Builtin::Vector), "@vector inside a list kernel"));
        }
        let ty = self.local_type(local);
        let Some(element) = GpuElement::of_type(&ty) else {
            return Err(self.error(Some(Builtin::Vector), format!("@vector of {ty}")));
        };
        let name = self.name(local);
        let buffer = self.input_binding(local, ValuePart::Elements, element);
        let length = self.length_param(local, ValuePart::Elements);
        let bit = self.status_bit(format!("@vector: cannot fill from the empty {name}"), None)?;
        let prelude = vec![format!(
            "if {length} == 0u {{ atomicOr(&status[0], {}u); }}",
            1u32 << bit
        )];
        let dictionary = matches!(ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        let expr = wgsl::load(&format!("{buffer}[i % max({length}, 1u)]"), &ty);
        let val = Val::element(expr, ty, dictionary);
        self.define_with(target, val, Vec::new(), prelude)
    }

    /// `@reverse(x)` of an input vector: element i is `x`'s element `len - 1 - i`, where the
    /// kernel's elements are `x`'s.
    pub(super) fn reversed(&mut self, target: LocalId, local: LocalId) -> Result<(), CodegenError> {
        let builtin = Some(Builtin::Reverse);
        if self.values.contains_key(&local) {
            return Err(self.error(builtin, "@reverse of a value made in this kernel"));
        }
        let ty = self.local_type(local);
        let Some(element) = GpuElement::of_type(&ty) else {
            return Err(self.error(builtin, format!("@reverse of {ty}")));
        };
        let Layout::Vector { size, .. } = &self.layout else {
            return Err(self.error(builtin, "@reverse inside a list kernel"));
        };
        // As an input's elements are read (`x[i]`): a compacted input of the kernel's size
        // is its own positions too.
        let over_the_geometry = matches!(
            self.shape_before_kernel(local),
            Some(Shape::Vector(s)) if s == size
        );
        if !over_the_geometry {
            return Err(self.error(
                builtin,
                "@reverse of a vector that is not the kernel's elements",
            ));
        }
        let buffer = self.input_binding(local, ValuePart::Elements, element);
        let length = self.length_param(local, ValuePart::Elements);
        // A launch wider than the vector (inputs of sizes the compiler could not relate)
        // reads element 0 past its end; nothing writes those threads' values.
        let position = format!("select(0u, {length} - 1u - i, i < {length})");
        let dictionary = matches!(ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        let expr = wgsl::load(&format!("{buffer}[{position}]"), &ty);
        let val = Val::element(expr, ty, dictionary);
        self.define(target, val, Vec::new())
    }

    /// `@fetch(e)`: the referenced key of each row of an enum input.
    pub(super) fn fetch(
        &mut self,
        target: LocalId,
        local: LocalId,
        result_ty: &Type,
    ) -> Result<(), CodegenError> {
        if self.values.contains_key(&local) {
            return Err(self.error(
                Some(Builtin::Fetch),
                "@fetch of an enum made in this kernel",
            ));
        }
        let Type::Enum(key_ty) = self.local_type(local) else {
            return Err(self.error(
                Some(Builtin::Fetch),
                "@fetch of a value that is not an enum",
            ));
        };
        let Some(element) = GpuElement::of_type(&key_ty) else {
            return Err(self.error(Some(Builtin::Fetch), format!("an enum of {key_ty} keys")));
        };
        let Layout::Vector { size, .. } = &self.layout else {
            return Err(self.error(Some(Builtin::Fetch), "@fetch inside a list kernel"));
        };
        let rows_match = matches!(
            self.analysis.shapes.before.get(self.current.0).and_then(|f| f.get(&local)),
            Some(Shape::Enumeration { values, .. }) if values == size
        );
        if !rows_match {
            return Err(self.error(
                Some(Builtin::Fetch),
                "the enum's rows are not the kernel's geometry",
            ));
        }
        let index_buffer = self.input_binding(local, ValuePart::EnumIndex, GpuElement::I64);
        let keys = self.input_binding(local, ValuePart::EnumKeys, element);
        let length = self.length_param(local, ValuePart::EnumKeys);
        let index = Val {
            expr: format!("{index_buffer}[i]"),
            ty: Type::I64,
            level: Level::Element,
            active: Vec::new(),
            dictionary: None,
            text: None,
            list: false,
        };
        let name = self.name(local);
        let message = format!("@fetch: index out of range reading {name}");
        let (mut val, prelude) =
            self.checked_gather(&keys, &length, &key_ty, &index, message, None)?;
        val.ty = result_ty.clone();
        val.dictionary = matches!(*key_ty, Type::Sym | Type::Str)
            .then_some(DictionarySource::Input(Self::slot(local)));
        self.define_with(target, val, Vec::new(), prelude)
    }
}
