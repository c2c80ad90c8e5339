//! Selection and indexing: `@compress`, `@where`, `@index`, `@index_a`, `@index_of`,
//! reductions, `@member`, `@unique`, `@order`, `@like`, `@sub_string`, `@vector`, `@range`,
//! `@append`, `@len`.

use super::*;

impl Gen<'_> {
    pub(super) fn mask_class(&mut self, mask: VarId) -> ClassId {
        if let Some(&c) = self.masked_classes.get(&mask) {
            return c;
        }
        let max = self.max_len(self.p.vars[mask].shape);
        let c = self.new_class(max);
        self.masked_classes.insert(mask, c);
        c
    }

    pub(super) fn compress(&mut self) {
        let Some(mask) = self.rows_var(|v| v.ty == Type::Bool) else {
            return;
        };
        let class = self.class_of(mask);
        let wrong = self.deliberate();
        let Some(x) = self.rows_var(|v| (v.shape == Shape::Rows(class)) != wrong) else {
            return;
        };
        let out = self.mask_class(mask);
        let (m, x) = (self.var_operand(mask), self.var_operand(x));
        self.simple_call(B::Compress, &[m, x], Shape::Rows(out), "k");
    }

    pub(super) fn where_(&mut self) {
        let Some(mask) = self.rows_var(|v| v.ty == Type::Bool) else {
            return;
        };
        let class = self.class_of(mask);
        let out = self.mask_class(mask);
        let m = self.var_operand(mask);
        if let Some(v) = self.simple_call(B::Where, &[m], Shape::Rows(out), "w") {
            self.index_vars.insert(v, class);
        }
    }

    pub(super) fn index(&mut self) {
        let wrong = self.deliberate();
        let indexes: Vec<(VarId, ClassId)> = self
            .index_vars
            .iter()
            .map(|(&v, &c)| (v, c))
            .filter(|(v, _)| self.pool.contains(v))
            .collect();
        if !wrong && !indexes.is_empty() && self.rng.chance(0.85) {
            let mut indexes = indexes;
            indexes.sort();
            let (i, target) = *self.rng.pick(&indexes);
            let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(target)) else {
                return;
            };
            let shape = self.p.vars[i].shape;
            let (x, i) = (self.var_operand(x), self.var_operand(i));
            self.simple_call(B::Index, &[x, i], shape, "i");
        } else {
            // Literal positions: out of range on purpose now and then.
            let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                return;
            };
            // Now and then more positions than a host step reads back one by one (a
            // device vector's are gathered on the device).
            let len = self.max_len(self.p.vars[x].shape).max(1) as i64;
            let (n, highest) = if self.rng.chance(0.15) {
                (17 + self.rng.below(8), (len - 1).min(64))
            } else {
                (1 + self.rng.below(4), (len - 1).min(4))
            };
            let items: Vec<String> = (0..n)
                .map(|_| {
                    if wrong {
                        format!("{}", if self.rng.chance(0.5) { -1 } else { len + 3 })
                    } else {
                        format!("{}", self.rng.range(0, highest))
                    }
                })
                .collect();
            let class = self.literal_class(n);
            let i = Operand {
                text: format!("({}):i64", items.join(", ")),
                ty: Type::I64,
                shape: Shape::Rows(class),
                uses: Vec::new(),
            };
            let x = self.var_operand(x);
            self.simple_call(B::Index, &[x, i], Shape::Rows(class), "i");
        }
    }

    /// `@index_a(x, i, v)`: a copy of `x` with `x[i] = v`.
    pub(super) fn index_assign(&mut self) {
        let wrong = self.deliberate();
        let mut indexes: Vec<(VarId, ClassId)> = self
            .index_vars
            .iter()
            .map(|(&v, &c)| (v, c))
            .filter(|(v, _)| self.pool.contains(v))
            .collect();
        indexes.sort();
        if indexes.is_empty() {
            return;
        }
        let (i, target) = *self.rng.pick(&indexes);
        let Some(x) = self.rows_var(|v| v.shape == Shape::Rows(target) && v.ty.is_basic()) else {
            return;
        };
        let x_ty = self.p.vars[x].ty.clone();
        let i_shape = self.p.vars[i].shape;
        let i_op = if wrong {
            let len = self.max_len(Shape::Rows(target)) as i64;
            Operand {
                text: format!("({}):i64", len + 2),
                ty: Type::I64,
                shape: Shape::Scalar,
                uses: Vec::new(),
            }
        } else {
            self.var_operand(i)
        };
        let values = match self.rows_var(|v| v.shape == i_shape && v.ty == x_ty) {
            Some(v) if !wrong && self.rng.chance(0.5) => Some(self.var_operand(v)),
            _ => self.scalar_literal_or_skip(&x_ty),
        };
        let Some(values) = values else {
            return;
        };
        let x = self.var_operand(x);
        self.simple_call(B::IndexA, &[x, i_op, values], Shape::Rows(target), "ia");
    }

    /// `@index_of(x, y)`: for each element of `y`, its first position in `x` (or `len(x)`).
    pub(super) fn index_of(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && !v.reordered) else {
            return;
        };
        let x_ty = self.p.vars[x].ty.clone();
        let Some(y) = self.rows_var(|v| {
            v.ty.is_basic()
                && !v.reordered
                && result_type(B::IndexOf, &[value(&x_ty), value(&v.ty)]).is_some()
        }) else {
            return;
        };
        let shape = self.p.vars[y].shape;
        let (x, y) = (self.var_operand(x), self.var_operand(y));
        self.simple_call(B::IndexOf, &[x, y], shape, "io");
    }

    /// A scalar literal of `ty` when the generator writes literals of that type.
    pub(super) fn scalar_literal_or_skip(&mut self, ty: &Type) -> Option<Operand> {
        LITERAL_TYPES
            .iter()
            .any(|(t, _)| t == ty)
            .then(|| self.scalar_literal(ty))
    }

    pub(super) fn reduction(&mut self) {
        let b = *self
            .rng
            .pick(&[B::Sum, B::Sum, B::Avg, B::Min, B::Max, B::Len]);
        let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
            return;
        };
        let x = self.var_operand(x);
        let sums = sums_floats(b, &x.ty);
        if let Some(r) = self.simple_call(b, &[x], Shape::Scalar, "r") {
            self.p.vars[r].reordered |= sums;
        }
    }

    pub(super) fn member(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && !v.reordered) else {
            return;
        };
        let x = self.var_operand(x);
        let y = match self.rows_var(|v| v.ty == x.ty && !v.reordered) {
            Some(y) if self.rng.chance(0.5) => self.var_operand(y),
            _ => {
                let ty = self.related_type(&x.ty);
                let n = 1 + self.rng.below(4);
                let class = self.literal_class(n);
                Operand {
                    text: self.vector_literal_text(&ty, n),
                    ty,
                    shape: Shape::Rows(class),
                    uses: Vec::new(),
                }
            }
        };
        let shape = x.shape;
        self.simple_call(B::Member, &[x, y], shape, "m");
    }

    pub(super) fn unique(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && !v.reordered) else {
            return;
        };
        let class_of_x = self.class_of(x);
        let max = self.max_len(self.p.vars[x].shape);
        let out = self.new_class(max);
        let xo = self.var_operand(x);
        let Some(u) = self.simple_call(B::Unique, std::slice::from_ref(&xo), Shape::Rows(out), "u")
        else {
            return;
        };
        self.index_vars.insert(u, class_of_x);
        let uo = self.var_operand(u);
        self.simple_call(B::Index, &[xo, uo], Shape::Rows(out), "uv");
    }

    pub(super) fn order(&mut self) {
        let Some(x) = self.rows_var(|v| v.ty.is_basic() && v.ty != Type::Complex && !v.reordered)
        else {
            return;
        };
        let class = self.class_of(x);
        let xo = self.var_operand(x);
        let second =
            self.rows_var(|v| v.shape == Shape::Rows(class) && v.ty.is_basic() && !v.reordered);
        let o = self.new_var("o", Type::I64, Shape::Rows(class));
        let mut lines = Vec::new();
        let mut uses = xo.uses.clone();
        match second {
            Some(y) if self.rng.chance(0.5) => {
                let keys = self.new_var("ok", Type::Wildcard, Shape::Scalar);
                let dirs = format!("({}, {}):bool", self.rng.below(2), self.rng.below(2));
                lines.push(format!(
                    "{}:? = @list({}, {});",
                    self.name(keys),
                    xo.text,
                    self.name(y)
                ));
                lines.push(format!(
                    "{}:i64 = @order({}, {dirs});",
                    self.name(o),
                    self.name(keys)
                ));
                uses.push(y);
            }
            _ => {
                let dir = self.rng.below(2);
                lines.push(format!(
                    "{}:i64 = @order({}, {dir}:bool);",
                    self.name(o),
                    xo.text
                ));
            }
        }
        // The values in sorted order.
        let sorted = self.new_var("sv", xo.ty.clone(), Shape::Rows(class));
        lines.push(format!(
            "{}:{} = @index({}, {});",
            self.name(sorted),
            xo.ty,
            xo.text,
            self.name(o)
        ));
        self.index_vars.insert(o, class);
        self.push(
            Stmt {
                lines,
                defs: vec![o, sorted],
                uses,
                calls: Vec::new(),
            },
            &[o, sorted],
        );
    }

    pub(super) fn like(&mut self) {
        let Some(s) = self.rows_var(|v| matches!(v.ty, Type::Sym | Type::Str | Type::Char)) else {
            return;
        };
        let pattern = self.rng.pick(LIKE_PATTERNS).to_string();
        let ty = if self.rng.chance(0.7) { "str" } else { "sym" };
        let text = if ty == "str" {
            format!("\"{pattern}\":str")
        } else {
            format!("`\"{pattern}\":sym")
        };
        let p = Operand {
            text,
            ty: if ty == "str" { Type::Str } else { Type::Sym },
            shape: Shape::Scalar,
            uses: Vec::new(),
        };
        let so = self.var_operand(s);
        let shape = so.shape;
        self.simple_call(B::Like, &[so, p], shape, "lk");
    }

    pub(super) fn sub_string(&mut self) {
        let Some(s) = self.rows_var(|v| is_text(&v.ty)) else {
            return;
        };
        let wrong = self.deliberate();
        let (pos, len) = if wrong {
            (self.rng.range(-2, 0), self.rng.range(-3, 2))
        } else {
            (self.rng.range(1, 6), self.rng.range(0, 8))
        };
        let range = Operand {
            text: format!("({pos}, {len}):i32"),
            ty: Type::I32,
            shape: Shape::Rows(usize::MAX),
            uses: Vec::new(),
        };
        let so = self.var_operand(s);
        let shape = so.shape;
        self.simple_call(B::SubString, &[so, range], shape, "ss");
    }

    pub(super) fn misc(&mut self) {
        match self.rng.below(8) {
            0 => {
                let wrong = self.deliberate();
                let n = if wrong { -1 } else { self.rng.range(0, 5) };
                let ty = weighted(&mut self.rng, LITERAL_TYPES);
                let value = self.scalar_literal(&ty);
                let class = self.literal_class(n.max(0) as usize);
                let count = Operand {
                    text: format!("{n}:i64"),
                    ty: Type::I64,
                    shape: Shape::Scalar,
                    uses: Vec::new(),
                };
                self.simple_call(B::Vector, &[count, value], Shape::Rows(class), "vec");
            }
            1 => {
                let n = self.rng.range(0, 6);
                let class = self.literal_class(n as usize);
                let count = Operand {
                    text: format!("{n}:i64"),
                    ty: Type::I64,
                    shape: Shape::Scalar,
                    uses: Vec::new(),
                };
                self.simple_call(B::Range, &[count], Shape::Rows(class), "rg");
            }
            2 => {
                let Some(a) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let a = self.var_operand(a);
                let Some(b) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let b = self.var_operand(b);
                let max = self.max_len(a.shape) + self.max_len(b.shape);
                let class = self.new_class(max);
                self.simple_call(B::Append, &[a, b], Shape::Rows(class), "ap");
            }
            3 => {
                // The positions of a value's rows: `@range(@len(x))`, valid indexes into them.
                let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let class = self.class_of(x);
                let x = self.var_operand(x);
                let Some(n) = self.simple_call(B::Len, &[x], Shape::Scalar, "n") else {
                    return;
                };
                let n = self.var_operand(n);
                if let Some(positions) = self.simple_call(B::Range, &[n], Shape::Rows(class), "rg")
                {
                    self.index_vars.insert(positions, class);
                }
            }
            4 => {
                let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let class = self.class_of(x);
                let x = self.var_operand(x);
                self.simple_call(B::Reverse, &[x], Shape::Rows(class), "rv");
            }
            5 | 6 => {
                // The first or last few, all but those, or more than there are (clamped).
                let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let builtin = *self.rng.pick(&[B::Take, B::Drop]);
                let n = if self.rng.chance(0.3) {
                    100_000 * if self.rng.chance(0.5) { 1 } else { -1 }
                } else {
                    self.rng.range(-8, 8)
                };
                let x = self.var_operand(x);
                let max = self.max_len(x.shape);
                let class = match builtin {
                    B::Take => self.new_class(max.min(n.unsigned_abs() as usize)),
                    _ => self.new_class(max),
                };
                let count = Operand {
                    text: format!("{n}:i64"),
                    ty: Type::I64,
                    shape: Shape::Scalar,
                    uses: Vec::new(),
                };
                let Some(sliced) = self.simple_call(builtin, &[count, x], Shape::Rows(class), "tk")
                else {
                    return;
                };
                // Its length, which a clamped count makes shorter than the count.
                if self.rng.chance(0.5) {
                    let sliced = self.var_operand(sliced);
                    self.simple_call(B::Len, &[sliced], Shape::Scalar, "n");
                }
            }
            _ => {
                let Some(x) = self.rows_var(|v| v.ty.is_basic()) else {
                    return;
                };
                let x = self.var_operand(x);
                self.simple_call(B::Len, &[x], Shape::Scalar, "n");
            }
        }
    }
}
