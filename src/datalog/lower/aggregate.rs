//! Soufflé's aggregates (`count`, `sum`, `min`, `max`) in a rule body.

use super::*;

impl Lowering<'_, '_> {
    /// Binds the result of aggregate `i` of the clause on every row: one value over the
    /// tuples of its atom (the relation of an earlier stratum, filtered by the atom's
    /// constants and repeated variables). `min` and `max` of no tuple keep no row.
    pub(super) fn aggregate(
        &mut self,
        clause: &Clause,
        i: usize,
        aggregate: &Aggregate,
        rows: &mut Rows,
        code: &mut Code,
    ) {
        let counted = self.checked.ids[&aggregate.atom.relation];
        if self.count_only.contains_key(&counted) {
            // Counted where its rule ran (`counted_rule`), never built.
            let value = count_name(&aggregate.atom.relation);
            if rows.witness.is_empty() {
                rows.witness = value.clone();
                rows.columns.insert(aggregate.result.clone(), value);
            } else {
                let column = self.temp(&aggregate.result);
                code.line(&format!(
                    "{column}:i64 = @vector(@len({}), {value});",
                    rows.witness
                ));
                rows.columns.insert(aggregate.result.clone(), column);
            }
            return;
        }
        let inner = self.first_atom(clause, i, Version::Full, code);
        let value = self.temp(aggregate.kind.name());
        let target = aggregate
            .target
            .as_ref()
            .and_then(|(name, _)| inner.columns.get(name));
        match (aggregate.kind, target) {
            (AggregateKind::Count, _) | (_, None) => {
                code.line(&format!("{value}:i64 = @len({});", inner.witness));
            }
            (AggregateKind::Sum, Some(column)) => {
                code.line(&format!("{value}:i64 = @sum({column});"));
            }
            (kind, Some(column)) => {
                // `@min`/`@max` of no element is an error: reduce the column with the
                // identity appended (the row is dropped below when the column is empty).
                let identity = self.temp("identity");
                if kind == AggregateKind::Min {
                    code.line(&format!("{identity}:i64 = 9223372036854775807:i64;"));
                } else {
                    code.line(&format!(
                        "{identity}:i64 = @minus(-9223372036854775807:i64, 1:i64);"
                    ));
                }
                code.line(&format!(
                    "{value}:i64 = @{}(@append({column}, {identity}));",
                    kind.name()
                ));
            }
        }
        if matches!(aggregate.kind, AggregateKind::Min | AggregateKind::Max)
            && rows.witness.is_empty()
        {
            // The first row is the value; no tuple, no row.
            let nonempty = self.temp("nonempty");
            code.line(&format!(
                "{nonempty}:bool = @gt(@len({}), 0:i64);",
                inner.witness
            ));
            let kept = self.temp(&aggregate.result);
            code.line(&format!("{kept}:i64 = @compress({nonempty}, {value});"));
            rows.witness = kept.clone();
            rows.columns.insert(aggregate.result.clone(), kept);
            return;
        }
        if matches!(aggregate.kind, AggregateKind::Min | AggregateKind::Max) {
            let nonempty = self.temp("nonempty");
            code.line(&format!(
                "{nonempty}:bool = @gt(@len({}), 0:i64);",
                inner.witness
            ));
            let mask = format!("@vector(@len({}), {nonempty})", rows.witness);
            self.filter(vec![mask], rows, code);
        }
        if rows.witness.is_empty() {
            // The rule's first row: the value itself (one element).
            rows.witness = value.clone();
            rows.columns.insert(aggregate.result.clone(), value);
            return;
        }
        let column = self.temp(&aggregate.result);
        code.line(&format!(
            "{column}:i64 = @vector(@len({}), {value});",
            rows.witness
        ));
        rows.columns.insert(aggregate.result.clone(), column);
    }
}
