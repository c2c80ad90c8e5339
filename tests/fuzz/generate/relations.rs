//! Groups with `@each` reductions, joins, and foreign keys.

use super::*;

impl Gen<'_> {
    pub(super) fn group(&mut self) {
        let Some(k) = self.rows_var(|v| v.ty.is_basic() && !v.reordered) else {
            return;
        };
        let class = self.class_of(k);
        let k2 = self.rows_var(|v| {
            v.shape == Shape::Rows(class)
                && v.ty.is_basic()
                && v.ty != Type::Complex
                && !v.reordered
        });
        let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(class)) else {
            return;
        };
        let reducer = *self
            .rng
            .pick(&[B::Sum, B::Sum, B::Avg, B::Min, B::Max, B::Len]);
        let x_ty = self.p.vars[x].ty.clone();
        let cells_ty = Type::List(Box::new(x_ty.clone()));
        let Some(agg_ty) = each_result(reducer, &cells_ty) else {
            return;
        };
        let max = self.max_len(Shape::Rows(class));
        let groups = self.new_class(max);
        let g = self.new_var("g", Type::Wildcard, Shape::Scalar);
        let g = self.name(g);
        let key = self.new_var("gk", self.p.vars[k].ty.clone(), Shape::Rows(groups));
        let first = self.new_var("gf", Type::I64, Shape::Rows(groups));
        let agg = self.new_var("ga", agg_ty.clone(), Shape::Rows(groups));
        let (kn, xn) = (self.name(k).to_string(), self.name(x).to_string());
        let mut lines = Vec::new();
        let mut uses = vec![k, x];
        match k2 {
            Some(k2) if self.rng.chance(0.4) => {
                lines.push(format!("{g}_k:? = @list({kn}, {});", self.name(k2)));
                lines.push(format!("{g}:? = @group({g}_k);"));
                uses.push(k2);
            }
            _ => lines.push(format!("{g}:? = @group({kn});")),
        }
        lines.push(format!("{}:i64 = @keys({g});", self.name(first)));
        lines.push(format!("{g}_rows:? = @values({g});"));
        lines.push(format!(
            "{}:{} = @index({kn}, {});",
            self.name(key),
            self.p.vars[k].ty,
            self.name(first)
        ));
        lines.push(format!(
            "{g}_cells:? = @each_right(@index, {xn}, {g}_rows);"
        ));
        lines.push(format!(
            "{g}_aggs:? = @each(@{}, {g}_cells);",
            reducer.name()
        ));
        lines.push(format!("{}:{agg_ty} = @raze({g}_aggs);", self.name(agg)));
        self.index_vars.insert(first, class);
        self.p.vars[agg].reordered |= sums_floats(reducer, &x_ty);
        self.push(
            Stmt {
                lines,
                defs: vec![key, first, agg],
                uses,
                calls: Vec::new(),
            },
            &[key, first, agg],
        );
        // The group's key is the key column's values: it depends on a summation order only
        // where that column does (`push` marks every float of the statement when the
        // aggregated column does).
        self.p.vars[key].reordered = self.p.vars[k].reordered;
    }

    /// Each element its own cell (`@tolist`), reduced per cell and razed: the list
    /// kernels after it take their cells from the list `@tolist` makes (on the device, its
    /// offsets by a kernel).
    pub(super) fn tolist_each(&mut self) {
        // Not a reordered float: `@min` and `@max` of its cells would decide on it, as
        // `tests/fuzz/bound.rs` reads them.
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && v.ty != Type::Complex && !v.reordered)
        else {
            return;
        };
        let shape = self.p.vars[x].shape;
        let reducer = *self.rng.pick(&[B::Sum, B::Avg, B::Min, B::Max, B::Len]);
        let x_ty = self.p.vars[x].ty.clone();
        let Some(agg_ty) = each_result(reducer, &Type::List(Box::new(x_ty.clone()))) else {
            return;
        };
        let agg = self.new_var("tl", agg_ty.clone(), shape);
        let (v, xn) = (self.name(agg).to_string(), self.name(x).to_string());
        let lines = vec![
            format!("{v}_cells:? = @tolist({xn});"),
            format!("{v}_each:? = @each(@{}, {v}_cells);", reducer.name()),
            format!("{v}:{agg_ty} = @raze({v}_each);"),
        ];
        self.push(
            Stmt {
                lines,
                defs: vec![agg],
                uses: vec![x],
                calls: Vec::new(),
            },
            &[agg],
        );
    }

    /// The shape the outliner turns into one grouped kernel (`outline::grouped`): a key
    /// of a small domain (a bool, i8 or i16 computed from an i32 column, and at times a
    /// char column beside it), the rows kept by a mask (all, most or none), grouped, with
    /// `@sum`, `@len` and at times `@avg` per group and each group's key read back.
    /// [`Gen::group`] rarely builds it (its keys are any column, its values loaded ones):
    /// random programs formed a grouped kernel about once in 4,000.
    pub(super) fn grouped_aggregation(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty == Type::I32 && !v.reordered) else {
            return;
        };
        let class = self.class_of(x);
        let numeric = |t: &Type| matches!(t, Type::I32 | Type::I64 | Type::F64);
        let Some(y) = self.rows_var(|v| v.shape == Shape::Rows(class) && numeric(&v.ty)) else {
            return;
        };
        let second = self.rows_var(|v| v.shape == Shape::Rows(class) && v.ty == Type::Char);
        let second = second.filter(|_| self.rng.chance(0.3));
        let y_ty = self.p.vars[y].ty.clone();
        let cells_ty = Type::List(Box::new(y_ty.clone()));
        let (Some(sum_ty), Some(avg_ty)) = (
            each_result(B::Sum, &cells_ty),
            each_result(B::Avg, &cells_ty),
        ) else {
            return;
        };
        let modulus = *self.rng.pick(&[2, 3, 5, 7]);
        let key_ty = self.rng.pick(&[Type::Bool, Type::I8, Type::I16]).clone();
        let keep = *self.rng.pick(&[
            "@geq({m}, -100:i32)",
            "@neq({m}, 1:i32)",
            "@lt({m}, -100:i32)",
        ]);
        let max = self.max_len(Shape::Rows(class));
        let groups = self.new_class(max);
        let g = self.new_var("g", Type::Wildcard, Shape::Scalar);
        let g = self.name(g);
        let key = self.new_var("gk", key_ty.clone(), Shape::Rows(groups));
        let first = self.new_var("gf", Type::I64, Shape::Rows(groups));
        let sum = self.new_var("ga", sum_ty.clone(), Shape::Rows(groups));
        let n = self.new_var("ga", Type::I64, Shape::Rows(groups));
        let (xn, yn) = (self.name(x), self.name(y));
        let m = format!("{g}_m");
        let mut lines = vec![format!("{m}:i32 = @mod({xn}, {modulus}:i32);")];
        lines.push(match key_ty {
            Type::Bool => format!("{g}_key:bool = @eq({m}, 0:i32);"),
            _ => format!("{g}_key:{key_ty} = @minus({m}, 1:i32);"),
        });
        lines.push(format!("{g}_keep:bool = {};", keep.replace("{m}", &m)));
        lines.push(format!("{g}_ck:{key_ty} = @compress({g}_keep, {g}_key);"));
        lines.push(format!("{g}_cy:{y_ty} = @compress({g}_keep, {yn});"));
        let mut uses = vec![x, y];
        let mut defs = vec![key, first, sum, n];
        let mut second_out = None;
        match second {
            Some(c) => {
                lines.push(format!(
                    "{g}_cc:char = @compress({g}_keep, {});",
                    self.name(c)
                ));
                lines.push(format!("{g}_k:? = @list({g}_ck, {g}_cc);"));
                lines.push(format!("{g}:? = @group({g}_k);"));
                uses.push(c);
                let out = self.new_var("gk", Type::Char, Shape::Rows(groups));
                defs.push(out);
                second_out = Some(out);
            }
            None => lines.push(format!("{g}:? = @group({g}_ck);")),
        }
        let (key, first, sum, n) = (
            self.name(key),
            self.name(first),
            self.name(sum),
            self.name(n),
        );
        lines.push(format!("{first}:i64 = @keys({g});"));
        lines.push(format!("{g}_rows:? = @values({g});"));
        lines.push(format!("{key}:{key_ty} = @index({g}_ck, {first});"));
        if let Some(out) = second_out {
            lines.push(format!(
                "{}:char = @index({g}_cc, {first});",
                self.name(out)
            ));
        }
        lines.push(format!(
            "{g}_cells:? = @each_right(@index, {g}_cy, {g}_rows);"
        ));
        lines.push(format!("{g}_sums:? = @each(@sum, {g}_cells);"));
        lines.push(format!("{sum}:{sum_ty} = @raze({g}_sums);"));
        lines.push(format!("{g}_lens:? = @each(@len, {g}_rows);"));
        lines.push(format!("{n}:i64 = @raze({g}_lens);"));
        let sums_floats = sums_floats(B::Sum, &y_ty);
        self.p.vars[defs[2]].reordered |= sums_floats;
        if self.rng.chance(0.5) {
            let avg = self.new_var("ga", avg_ty.clone(), Shape::Rows(groups));
            let name = self.name(avg);
            lines.push(format!("{g}_avgs:? = @each(@avg, {g}_cells);"));
            lines.push(format!("{name}:{avg_ty} = @raze({g}_avgs);"));
            self.p.vars[avg].reordered |= sums_floats;
            defs.push(avg);
        }
        let pooled = defs.clone();
        self.push(
            Stmt {
                lines,
                defs,
                uses,
                calls: Vec::new(),
            },
            &pooled,
        );
    }

    pub(super) fn join(&mut self) {
        let Some(a) = self.rows_var(|v| v.ty.is_basic() && !v.reordered) else {
            return;
        };
        let a_ty = self.p.vars[a].ty.clone();
        let a_len = self.max_len(self.p.vars[a].shape);
        let b = self.rows_var(|v| {
            v.ty.is_basic()
                && !v.reordered
                && result_type(B::Eq, &[value(&a_ty), value(&v.ty)]).is_some()
        });
        let Some(b) = b else {
            return;
        };
        let b_len = self.max_len(self.p.vars[b].shape);
        let pairs = a_len.saturating_mul(b_len);
        // Joins stay small: an equality join on a key gives at most one match per row of
        // the other side; other joins only on small inputs.
        let predicate = if pairs <= 20_000 && self.rng.chance(0.4) {
            *self.rng.pick(&[B::Lt, B::Neq, B::Geq])
        } else {
            B::Eq
        };
        let keyed = self.keys.contains(&a) || self.keys.contains(&b);
        if !(pairs <= 50_000 || predicate == B::Eq && keyed) {
            return;
        }
        let fits = result_type(predicate, &[value(&a_ty), value(&self.p.vars[b].ty)]).is_some();
        if !fits {
            return;
        }
        let (ca, cb) = (self.class_of(a), self.class_of(b));
        let out = self.new_class(a_len.saturating_mul(b_len).min(1 << 24));
        let j = self.new_var("j", Type::Wildcard, Shape::Scalar);
        let j = self.name(j);
        let ia = self.new_var("ja", Type::I64, Shape::Rows(out));
        let ib = self.new_var("jb", Type::I64, Shape::Rows(out));
        let lines = vec![
            format!(
                "{j}:? = @join_index(@{}, {}, {});",
                predicate.name(),
                self.name(a),
                self.name(b)
            ),
            format!("{}:i64 = @index({j}, 0:i64);", self.name(ia)),
            format!("{}:i64 = @index({j}, 1:i64);", self.name(ib)),
        ];
        self.index_vars.insert(ia, ca);
        self.index_vars.insert(ib, cb);
        self.push(
            Stmt {
                lines,
                defs: vec![ia, ib],
                uses: vec![a, b],
                calls: Vec::new(),
            },
            &[ia, ib],
        );
    }

    pub(super) fn foreign_key(&mut self) {
        let fks: Vec<(usize, &'static str, &'static str)> = self
            .schema
            .tables
            .iter()
            .enumerate()
            .flat_map(|(t, info)| {
                info.columns
                    .iter()
                    .filter_map(move |(name, kind)| match kind {
                        ColumnKind::ForeignKey { table, .. } => Some((t, *name, *table)),
                        _ => None,
                    })
            })
            .collect();
        let (child, column, parent) = *self.rng.pick(&fks);
        let Some(parent) = self.schema.tables.iter().position(|t| t.name == parent) else {
            return;
        };
        let table_var = self.table_var(child);
        let rows = self.new_var("fk", Type::I64, Shape::Rows(child));
        let e = self.new_var("e", Type::Wildcard, Shape::Scalar);
        let e = self.name(e);
        let lines = vec![
            format!(
                "{e}:enum<i32> = check_cast(@column_value({}, `{column}:sym), enum<i32>);",
                self.name(table_var)
            ),
            format!("{}:i64 = @values({e});", self.name(rows)),
        ];
        self.index_vars.insert(rows, parent);
        self.push(
            Stmt {
                lines,
                defs: vec![rows],
                uses: vec![table_var],
                calls: Vec::new(),
            },
            &[rows],
        );
    }
}

/// The type of one result of `@each(@reducer, cells)` (`@each` gives a list of them).
fn each_result(reducer: B, cells: &Type) -> Option<Type> {
    match result_type(
        B::Each,
        &[
            ArgType::Function(FunctionType::Builtin(reducer)),
            value(cells),
        ],
    ) {
        Some(Type::List(t)) => Some(*t),
        _ => None,
    }
}
