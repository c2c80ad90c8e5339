//! The epilogue of a grouped kernel: the element-wise statements after the aggregation, run
//! once per group in the settle over the group's values.

use super::*;

impl Generator<'_> {
    /// The epilogue's statements at group `i` (see [`GroupedAggregation::epilogue`]), over
    /// the group's values `per_group` (local, type, value as stored), and the values of its
    /// outputs as stored.
    pub(super) fn grouped_epilogue(
        &mut self,
        grouped: &crate::outline::kernel::GroupedAggregation,
        per_group: &[(LocalId, Type, String)],
        group_length: &Length,
    ) -> Result<Epilogue, CodegenError> {
        // The row function's values and variables are not in scope here.
        self.computed.clear();
        let row_lines = std::mem::take(&mut self.element_lines);
        for (local, ty, value) in per_group {
            let mut val = Val::scalar(wgsl::load(value, ty), ty.clone());
            val.level = Level::Element;
            self.values.insert(*local, val);
            self.lengths.insert(*local, group_length.clone());
        }
        let checks = self.launch_checks.len();
        self.in_epilogue = true;
        let generated = self.epilogue_statements(grouped, group_length);
        self.in_epilogue = false;
        generated?;
        if self.launch_checks.len() != checks {
            return Err(self.error(None, "an epilogue that needs checks at launch"));
        }
        let mut outputs = Vec::new();
        let epilogue_outputs: Vec<LocalId> = self
            .kernel
            .outputs
            .iter()
            .copied()
            .filter(|o| !per_group.iter().any(|(local, ..)| local == o))
            .collect();
        for local in epilogue_outputs {
            let ty = self.output_type(local);
            let val = match self.values.get(&local) {
                Some(val) if val.active.is_empty() && !val.list && val.level != Level::Cell => {
                    val.clone()
                }
                _ => {
                    return Err(self.error(
                        None,
                        format!(
                            "epilogue output {} is not one value per group",
                            self.name(local)
                        ),
                    ))
                }
            };
            outputs.push((local, ty, wgsl::store(&val.expr, &val.ty)));
        }
        let statements = std::mem::replace(&mut self.element_lines, row_lines);
        Ok(Epilogue {
            statements,
            outputs,
        })
    }

    /// The epilogue's statements, in order (see [`Generator::grouped_epilogue`]).
    fn epilogue_statements(
        &mut self,
        grouped: &crate::outline::kernel::GroupedAggregation,
        group_length: &Length,
    ) -> Result<(), CodegenError> {
        for &id in &grouped.epilogue {
            self.current = id;
            // `@index(key, first)` is the group's key.
            if let Some((target, key)) = self.key_of_group(id, grouped) {
                let val = self.values.get(&key).cloned().ok_or_else(|| {
                    CodegenError::malformed(&self.kernel.name, "a key output has no value")
                })?;
                self.values.insert(target, val);
                self.lengths.insert(target, group_length.clone());
                continue;
            }
            self.statement(id)?;
        }
        Ok(())
    }

    /// `(target, key)` when statement `id` is `target = @index(key, first)` of the grouped
    /// aggregation.
    fn key_of_group(
        &self,
        id: StmtId,
        grouped: &crate::outline::kernel::GroupedAggregation,
    ) -> Option<(LocalId, LocalId)> {
        let StmtKind::Assign { targets, expr, .. } = &self.tree.stmt(id)?.kind else {
            return None;
        };
        let [Target::Local(target)] = targets.as_slice() else {
            return None;
        };
        let (
            Callee::Builtin(Builtin::Index),
            [Arg::Operand(Operand::Local(key, _)), Arg::Operand(Operand::Local(first, _))],
        ) = expr_call(expr)?
        else {
            return None;
        };
        (grouped.first == Some(*first) && grouped.key_outputs.contains(key))
            .then_some((*target, *key))
    }
}
