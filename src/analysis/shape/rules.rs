//! The shape rule of every builtin: the shape of its result from the shapes of its arguments
//! (and, where a size is a literal argument, its value).

use horsec_runtime::builtin::Builtin;
use horsec_runtime::types::Type;

use crate::sema::typed::{Arg, Callee, Expr, ExprKind, Operand};
use crate::syntax::ast::{Literal, LiteralValue};

use super::{DynamicOrigin, LocalShapes, Mask, Shape, ShapeAnalysis, Size, TableDimension};
use crate::analysis::statements::StmtId;

/// What a rule knows about one argument.
#[derive(Clone, Debug)]
pub(super) struct ArgInfo<'e> {
    shape: Shape,
    /// The literal, when the argument is written as one.
    literal: Option<&'e Literal>,
    /// The mask identity, when the argument is a local with one reaching definition.
    mask: Option<Mask>,
    /// The function, when the argument is a function literal `@f`.
    function: Option<Callee>,
}

impl ArgInfo<'_> {
    fn shape_only(shape: Shape) -> ArgInfo<'static> {
        ArgInfo {
            shape,
            literal: None,
            mask: None,
            function: None,
        }
    }

    fn size(&self) -> Option<&Size> {
        self.shape.vector_size()
    }

    /// The single integer value of a literal argument.
    fn int_value(&self) -> Option<i64> {
        match self.literal?.values.as_slice() {
            [LiteralValue::Int(v)] => Some(*v),
            _ => None,
        }
    }

    /// The single symbol or string value of a literal argument.
    fn text_value(&self) -> Option<&str> {
        match self.literal?.values.as_slice() {
            [LiteralValue::Text(t)] => Some(t),
            _ => None,
        }
    }
}

/// Part numbers of the sizes one call makes (see [`DynamicOrigin::Call`]).
const PART_RESULT: u8 = 0;
const PART_CELLS: u8 = 1;
const PART_MERGE: u8 = 2;
const PART_CAST: u8 = 3;
/// Parts of a function applied by `@each*` start here (prefixing its own parts).
const PART_NESTED: u8 = 4;

impl ShapeAnalysis<'_> {
    /// The shapes of the values `expr` produces where statement `id` evaluates it.
    pub(super) fn expr_shapes(
        &mut self,
        id: StmtId,
        fact: &LocalShapes,
        expr: &Expr,
    ) -> Vec<Shape> {
        match &expr.kind {
            ExprKind::Operand(operand) => vec![self.operand_shape(id, fact, operand)],
            ExprKind::CheckCast { expr: inner, ty } => {
                let shapes = self.expr_shapes(id, fact, inner);
                shapes
                    .into_iter()
                    .take(1)
                    .map(|shape| self.conform(id, shape, ty))
                    .collect()
            }
            ExprKind::Call { callee, args } => {
                let infos: Vec<ArgInfo<'_>> = args
                    .iter()
                    .map(|arg| match arg {
                        Arg::Operand(operand) => ArgInfo {
                            shape: self.operand_shape(id, fact, operand),
                            literal: match operand {
                                Operand::Literal(literal) => Some(literal),
                                _ => None,
                            },
                            mask: self.mask_of(id, operand),
                            function: None,
                        },
                        Arg::Function(callee, _) => ArgInfo {
                            shape: Shape::Wildcard,
                            literal: None,
                            mask: None,
                            function: Some(*callee),
                        },
                    })
                    .collect();
                match callee {
                    Callee::Builtin(builtin) => {
                        let shape = self.builtin_shape(id, &[], *builtin, &infos);
                        match expr.types.first() {
                            Some(ty) => vec![self.conform(id, shape, ty)],
                            None => vec![shape],
                        }
                    }
                    // No interprocedural analysis yet: results follow the declared types.
                    Callee::Function(_) => expr
                        .types
                        .iter()
                        .enumerate()
                        .map(|(k, ty)| {
                            self.shape_of_type(
                                ty,
                                &|mut part| {
                                    part.insert(0, k as u8);
                                    DynamicOrigin::Call { stmt: id, part }
                                },
                                Vec::new(),
                            )
                        })
                        .collect(),
                }
            }
        }
    }

    /// Makes a shape agree with the static type (`check_cast` to `enum<i32>` turns the
    /// column vector into an enumeration of as many values).
    fn conform(&mut self, id: StmtId, shape: Shape, ty: &Type) -> Shape {
        let agrees = match (&shape, ty) {
            (_, Type::Wildcard | Type::Func) => true,
            (Shape::Vector(_), t) => t.is_basic(),
            (Shape::List(..), Type::List(_)) => true,
            (Shape::Dictionary(..), Type::Dict(..) | Type::KTable) => true,
            (Shape::Enumeration { .. }, Type::Enum(_)) => true,
            (Shape::Table { .. }, Type::Table) => true,
            _ => false,
        };
        if agrees {
            return shape;
        }
        if let (Shape::Vector(size), Type::Enum(_)) = (&shape, ty) {
            return Shape::Enumeration {
                keys: self.call_size(id, &[], PART_CAST),
                values: size.clone(),
            };
        }
        self.shape_of_type(
            ty,
            &|mut part| {
                part.insert(0, PART_CAST);
                DynamicOrigin::Call { stmt: id, part }
            },
            Vec::new(),
        )
    }

    fn call_size(&mut self, id: StmtId, prefix: &[u8], part: u8) -> Size {
        let mut path = prefix.to_vec();
        path.push(part);
        self.fresh(DynamicOrigin::Call {
            stmt: id,
            part: path,
        })
    }

    fn dynamic_vector(&mut self, id: StmtId, prefix: &[u8]) -> Shape {
        Shape::Vector(self.call_size(id, prefix, PART_RESULT))
    }

    /// Element-wise binary: equal sizes, or a length-1 operand broadcast to the other.
    fn broadcast(&mut self, id: StmtId, prefix: &[u8], a: &ArgInfo<'_>, b: &ArgInfo<'_>) -> Shape {
        match (a.size(), b.size()) {
            (Some(x), Some(y)) if x == y => Shape::Vector(x.clone()),
            (Some(x), Some(y)) if x.is_scalar() => Shape::Vector(y.clone()),
            (Some(x), Some(y)) if y.is_scalar() => Shape::Vector(x.clone()),
            // Unequal sizes the compiler cannot relate: checked when the kernel runs.
            _ => self.dynamic_vector(id, prefix),
        }
    }

    /// The shape of the cells of a list (or of a vector's elements: length-1 vectors).
    fn cells_of(shape: &Shape) -> Option<(Size, Shape)> {
        match shape {
            Shape::List(cells, cell) => Some((cells.clone(), (**cell).clone())),
            _ => None,
        }
    }

    /// Merges the shapes of the cells of one `@list` call.
    fn merge_cells(&mut self, id: StmtId, prefix: &[u8], shapes: &[Shape]) -> Shape {
        let mut iter = shapes.iter();
        let Some(first) = iter.next() else {
            return Shape::Wildcard;
        };
        let mut merged = first.clone();
        for shape in iter {
            let mut fresh = |part: Vec<u8>| {
                let mut path = prefix.to_vec();
                path.push(PART_MERGE);
                path.extend(part);
                self.fresh(DynamicOrigin::Call {
                    stmt: id,
                    part: path,
                })
            };
            merged = super::merge_shapes(&merged, shape, &mut fresh);
        }
        merged
    }

    /// The shape of `@builtin(args…)`. `prefix` tells apart the sizes of a builtin applied
    /// inside `@each*` from those of the outer call.
    pub(super) fn builtin_shape(
        &mut self,
        id: StmtId,
        prefix: &[u8],
        builtin: Builtin,
        args: &[ArgInfo<'_>],
    ) -> Shape {
        use Builtin as B;
        let arg = |k: usize| args.get(k);
        let same_as = |k: usize| args.get(k).map(|a| a.shape.clone());
        let shape = match builtin {
            // Unary element-wise (the catalogue's list), and `@reverse`: the input's shape.
            b if b.is_unary_elementwise() || b == B::Reverse => arg(0)
                .filter(|a| a.size().is_some())
                .map(|a| a.shape.clone()),
            // Binary element-wise with broadcasting (the catalogue's list, with the date
            // arithmetic).
            b if b.is_elementwise() => match (arg(0), arg(1)) {
                (Some(a), Some(b)) => Some(self.broadcast(id, prefix, a, b)),
                _ => None,
            },
            // Reductions and other scalars.
            B::Len
            | B::Count
            | B::Sum
            | B::Avg
            | B::Min
            | B::Max
            | B::Match
            | B::Str
            | B::Rand
            | B::Seed
            | B::Format
            | B::Print => Some(Shape::Vector(Size::Constant(1))),
            // Sizes given by a literal argument.
            B::Range | B::Randk | B::Vector => Some(match arg(0).and_then(ArgInfo::int_value) {
                Some(n) if n >= 0 => Shape::Vector(Size::Constant(n.unsigned_abs())),
                _ => self.dynamic_vector(id, prefix),
            }),
            // Taking more than there are gives all of them (the count is clamped), so the
            // length is the count's only where the argument's length is known.
            B::Take => Some(
                match (
                    arg(0).and_then(ArgInfo::int_value),
                    arg(1).and_then(ArgInfo::size),
                ) {
                    (Some(n), Some(Size::Constant(len))) => {
                        Shape::Vector(Size::Constant(n.unsigned_abs().min(*len)))
                    }
                    _ => self.dynamic_vector(id, prefix),
                },
            ),
            B::Drop => Some(
                match (
                    arg(0).and_then(ArgInfo::int_value),
                    arg(1).and_then(ArgInfo::size),
                ) {
                    (Some(n), Some(Size::Constant(len))) => {
                        Shape::Vector(Size::Constant(len.saturating_sub(n.unsigned_abs())))
                    }
                    _ => self.dynamic_vector(id, prefix),
                },
            ),
            // As many elements as the mask has true values.
            B::Where => arg(0).map(|mask| match (mask.size(), mask.mask) {
                (Some(size), Some(m)) => Shape::Vector(Size::compressed(size.clone(), m)),
                _ => self.dynamic_vector(id, prefix),
            }),
            // The mask and the data are equally long (checked when it runs), so the result is
            // named after the mask alone: compressing two columns by one mask gives one size.
            B::Compress => match (arg(0), arg(1)) {
                (Some(mask), Some(data)) => Some(match (mask.size().or(data.size()), mask.mask) {
                    (Some(size), Some(m)) => Shape::Vector(Size::compressed(size.clone(), m)),
                    _ => self.dynamic_vector(id, prefix),
                }),
                _ => None,
            },
            // Same length as the first argument.
            B::Like | B::Member | B::SubString | B::IndexA => same_as(0),
            // Same length as the second argument.
            B::IndexOf => same_as(1),
            B::Index => match (arg(0), arg(1)) {
                // A gather has one element per index.
                (Some(data), Some(index)) if data.size().is_some() => Some(index.shape.clone()),
                // A cell of a list.
                (Some(list), Some(_)) => Self::cells_of(&list.shape).map(|(_, cell)| cell),
                _ => None,
            },
            B::Unique => Some(self.dynamic_vector(id, prefix)),
            B::Order => arg(0).and_then(|keys| match &keys.shape {
                Shape::Vector(_) => Some(keys.shape.clone()),
                Shape::List(_, cell) => Some((**cell).clone()),
                _ => None,
            }),
            B::Group => {
                // Keys: one position per group; values: one list of row positions per group.
                let groups = self.call_size(id, prefix, PART_RESULT);
                let members = self.call_size(id, prefix, PART_CELLS);
                Some(Shape::Dictionary(
                    Box::new(Shape::Vector(groups.clone())),
                    Box::new(Shape::list(groups, Shape::Vector(members))),
                ))
            }
            B::SortedJoin => {
                // Two index vectors, one entry per matching pair.
                let pairs = self.call_size(id, prefix, PART_RESULT);
                Some(Shape::list(Size::Constant(2), Shape::Vector(pairs)))
            }
            // A relation of the arguments' arity (as many cells as the first argument), of
            // a length known only at run time.
            // One column per variable of the spec, of a length known only at run time.
            B::MultiwayJoin => {
                let rows = self.call_size(id, prefix, PART_RESULT);
                let columns = self.call_size(id, prefix, PART_CELLS);
                Some(Shape::list(columns, Shape::Vector(rows)))
            }
            // One column per pick, of a length known only at run time.
            B::JoinUnique => {
                let rows = self.call_size(id, prefix, PART_RESULT);
                let columns = self.call_size(id, prefix, PART_CELLS);
                Some(Shape::list(columns, Shape::Vector(rows)))
            }
            // One count.
            B::MultiwayCount => Some(Shape::Vector(Size::Constant(1))),
            // The groups' first rows and one vector per reduction, one element per group.
            B::GroupAggregate => {
                let groups = self.call_size(id, prefix, PART_RESULT);
                let results = self.call_size(id, prefix, PART_CELLS);
                Some(Shape::list(results, Shape::Vector(groups)))
            }
            B::TupleUnique | B::TupleDiff | B::TupleMerge => {
                let rows = self.call_size(id, prefix, PART_RESULT);
                let columns = match arg(0).map(|a| &a.shape) {
                    Some(Shape::List(cells, _)) => cells.clone(),
                    _ => self.call_size(id, prefix, PART_CELLS),
                };
                Some(Shape::list(columns, Shape::Vector(rows)))
            }
            B::JoinIndex => {
                // Two index vectors, one entry per matching pair.
                let pairs = self.call_size(id, prefix, PART_RESULT);
                Some(Shape::list(Size::Constant(2), Shape::Vector(pairs)))
            }
            B::Append => match (arg(0).map(|a| &a.shape), arg(1).map(|a| &a.shape)) {
                (Some(Shape::Vector(a)), Some(Shape::Vector(b))) => Some(match (a, b) {
                    (Size::Constant(x), Size::Constant(y)) => {
                        Shape::Vector(Size::Constant(x.saturating_add(*y)))
                    }
                    _ => self.dynamic_vector(id, prefix),
                }),
                (Some(Shape::List(a, c1)), Some(Shape::List(b, c2))) => {
                    let cells = match (a, b) {
                        (Size::Constant(x), Size::Constant(y)) => {
                            Size::Constant(x.saturating_add(*y))
                        }
                        _ => self.call_size(id, prefix, PART_RESULT),
                    };
                    let cell = self.merge_cells(id, prefix, &[(**c1).clone(), (**c2).clone()]);
                    Some(Shape::list(cells, cell))
                }
                _ => None,
            },
            B::Raze => arg(0)
                .and_then(|list| Self::cells_of(&list.shape))
                .map(|(cells, cell)| match (cells, cell) {
                    (cells, Shape::Vector(Size::Constant(1))) => Shape::Vector(cells),
                    (Size::Constant(k), Shape::Vector(Size::Constant(m))) => {
                        Shape::Vector(Size::Constant(k.saturating_mul(m)))
                    }
                    _ => self.dynamic_vector(id, prefix),
                }),
            B::List => {
                let shapes: Vec<Shape> = args.iter().map(|a| a.shape.clone()).collect();
                let cell = self.merge_cells(id, prefix, &shapes);
                Some(Shape::list(Size::Constant(args.len() as u64), cell))
            }
            B::Enlist => same_as(0).map(|cell| Shape::list(Size::Constant(1), cell)),
            B::ToList => arg(0)
                .and_then(ArgInfo::size)
                .map(|size| Shape::list(size.clone(), Shape::Vector(Size::Constant(1)))),
            B::Flip => same_as(0),
            B::Each | B::EachItem | B::EachLeft | B::EachRight => {
                self.each_shape(id, prefix, builtin, args)
            }
            B::Enum => match (
                arg(0).and_then(ArgInfo::size),
                arg(1).and_then(ArgInfo::size),
            ) {
                (Some(keys), Some(values)) => Some(Shape::Enumeration {
                    keys: keys.clone(),
                    values: values.clone(),
                }),
                _ => None,
            },
            B::Dict | B::KTable => match (same_as(0), same_as(1)) {
                (Some(keys), Some(values)) => {
                    Some(Shape::Dictionary(Box::new(keys), Box::new(values)))
                }
                _ => None,
            },
            B::Table => match (arg(0).and_then(ArgInfo::size), arg(1).map(|a| &a.shape)) {
                (Some(names), Some(Shape::List(_, cell))) => match &**cell {
                    Shape::Vector(rows) => Some(Shape::Table {
                        columns: names.clone(),
                        rows: rows.clone(),
                    }),
                    _ => None,
                },
                _ => None,
            },
            B::Keys => arg(0).and_then(|a| match &a.shape {
                Shape::Dictionary(keys, _) => Some((**keys).clone()),
                Shape::Table { columns, .. } => Some(Shape::Vector(columns.clone())),
                Shape::Enumeration { keys, .. } => Some(Shape::Vector(keys.clone())),
                _ => None,
            }),
            B::Values => arg(0).and_then(|a| match &a.shape {
                Shape::Dictionary(_, values) => Some((**values).clone()),
                Shape::Table { columns, rows } => {
                    Some(Shape::list(columns.clone(), Shape::Vector(rows.clone())))
                }
                Shape::Enumeration { values, .. } => Some(Shape::Vector(values.clone())),
                _ => None,
            }),
            B::Fetch => arg(0).and_then(|a| match &a.shape {
                Shape::Enumeration { values, .. } => Some(Shape::Vector(values.clone())),
                _ => None,
            }),
            // A graph: one cell of neighbours per vertex (`n` cells, a literal or not).
            B::Csr => {
                let vertices = match arg(2).and_then(ArgInfo::int_value) {
                    Some(n) if n >= 0 => Size::Constant(n.unsigned_abs()),
                    _ => self.call_size(id, prefix, PART_RESULT),
                };
                let neighbours = self.call_size(id, prefix, PART_CELLS);
                Some(Shape::list(vertices, Shape::Vector(neighbours)))
            }
            // A reachability index: a dictionary of 5 entries (components, DAG offsets and
            // targets, labels, label count) of sizes known only once it is built.
            B::ReachIndex => Some(Shape::Dictionary(
                Box::new(Shape::Vector(Size::Constant(5))),
                Box::new(Shape::list(
                    Size::Constant(5),
                    Shape::Vector(self.call_size(id, prefix, PART_CELLS)),
                )),
            )),
            // One answer per pair: as long as the sources (the destinations match them).
            B::ShortestPathLength | B::Reachable => arg(1).map(|sources| match &sources.shape {
                Shape::Vector(size) => Shape::Vector(size.clone()),
                Shape::Enumeration { values, .. } => Shape::Vector(values.clone()),
                _ => self.dynamic_vector(id, prefix),
            }),
            B::Meta | B::LoadCsv => Some(Shape::Table {
                columns: self.call_size(id, prefix, PART_RESULT),
                rows: self.call_size(id, prefix, PART_CELLS),
            }),
            B::LoadTable => Some(match arg(0).and_then(ArgInfo::text_value) {
                Some(table) => Shape::Table {
                    columns: Size::Symbol {
                        table: table.into(),
                        dimension: TableDimension::Columns,
                    },
                    rows: Size::rows(table),
                },
                None => Shape::Table {
                    columns: self.call_size(id, prefix, PART_RESULT),
                    rows: self.call_size(id, prefix, PART_CELLS),
                },
            }),
            B::ColumnValue => arg(0).and_then(|a| match &a.shape {
                Shape::Table { rows, .. } => Some(Shape::Vector(rows.clone())),
                _ => None,
            }),
            // The element-wise builtins, matched by the catalogue's predicates above.
            _ => None,
        };
        // Arguments of shapes the rule does not accept: the front end has checked the types,
        // so this is a shape only known at run time.
        shape.unwrap_or_else(|| self.dynamic_vector(id, prefix))
    }

    /// `@each(f, l)`, `@each_item(f, a, b)`, `@each_left(f, l, x)`, `@each_right(f, x, l)`:
    /// a list with one cell per cell of the list argument, each the shape of `f` on it.
    fn each_shape(
        &mut self,
        id: StmtId,
        prefix: &[u8],
        builtin: Builtin,
        args: &[ArgInfo<'_>],
    ) -> Option<Shape> {
        let function = args.first().and_then(|a| a.function)?;
        let list_position = match builtin {
            Builtin::EachRight => 2,
            _ => 1,
        };
        let (cells, _) = Self::cells_of(&args.get(list_position)?.shape)?;
        let nested: Vec<ArgInfo<'_>> = args
            .iter()
            .skip(1)
            .enumerate()
            .map(|(k, a)| {
                let per_cell = match builtin {
                    Builtin::Each | Builtin::EachItem => true,
                    Builtin::EachLeft => k == 0,
                    Builtin::EachRight => k == 1,
                    _ => false,
                };
                match (per_cell, Self::cells_of(&a.shape)) {
                    (true, Some((_, cell))) => ArgInfo::shape_only(cell),
                    _ => ArgInfo {
                        shape: a.shape.clone(),
                        literal: a.literal,
                        mask: a.mask,
                        function: a.function,
                    },
                }
            })
            .collect();
        let cell = match function {
            Callee::Builtin(inner) => {
                let mut inner_prefix = prefix.to_vec();
                inner_prefix.push(PART_NESTED);
                self.builtin_shape(id, &inner_prefix, inner, &nested)
            }
            Callee::Function(_) => Shape::Wildcard,
        };
        Some(Shape::list(cells, cell))
    }
}
