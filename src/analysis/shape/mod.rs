//! Shape analysis: the structure and symbolic size of every value.
//!
//! A [`Shape`] is a vector, a list of cells, an enumeration, a dictionary or a table; its sizes
//! are [`Size`]s: a known constant, the rows (or columns) of a loaded table, a vector
//! compressed by a mask, or a dynamic size known only at run time. Two values have the same
//! number of elements when their sizes are equal, which is what the geometry analysis and the
//! outliner need to put statements into one kernel.
//!
//! The analysis runs forward on the data-flow framework with one `rules` entry per builtin.
//! At a join of control flow a local keeps its shape if both sides agree; otherwise it gets a
//! fresh dynamic size named after the join point and the local, so that joining again (in a
//! loop) gives the same name and the loop reaches a fixed point.

mod rules;

use rustc_hash::FxHashMap;
use std::fmt;

use horsec_runtime::types::Type;

use crate::sema::typed::{
    Function, FunctionId, LocalId, Operand, Stmt, StmtKind, Target, TypedProgram,
};

use super::dataflow::{solve, DataFlowAnalysis, Direction, JoinPoint, NoFixedPoint};
use super::defuse::{DefSite, UseDefChains};
use super::statements::{for_each_use, local_name, StatementTree, StmtId};

/// Names a dynamic size; [`ShapeResults::dynamic_origin`] says where it was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DynamicId(pub usize);

/// Which dimension of a loaded table a symbolic size stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableDimension {
    Rows,
    Columns,
}

/// The value a compression mask was computed as: a local, as defined at one place.
///
/// Naming the definition (not just the local) keeps two masks apart when a loop reassigns the
/// local.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mask {
    pub local: LocalId,
    pub def: DefSite,
}

/// The number of elements of a vector (or cells of a list).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    Constant(u64),
    /// The rows (or column count) of the table loaded by name.
    Symbol {
        /// Shared: shapes are copied into the fact of every statement.
        table: std::sync::Arc<str>,
        dimension: TableDimension,
    },
    /// As many elements as `mask` has true values, out of a vector of `size`.
    Compressed(Box<Size>, Mask),
    Dynamic(DynamicId),
}

impl Size {
    pub fn rows(table: &str) -> Size {
        Size::Symbol {
            table: table.into(),
            dimension: TableDimension::Rows,
        }
    }

    pub fn is_scalar(&self) -> bool {
        *self == Size::Constant(1)
    }

    pub fn compressed(size: Size, mask: Mask) -> Size {
        Size::Compressed(Box::new(size), mask)
    }
}

/// The structure and sizes of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    Vector(Size),
    /// A list of `Size` cells, each of the cell shape (cells of different shapes merge).
    List(Size, Box<Shape>),
    /// A foreign key: `keys` entries in the referenced column, `values` entries (rows).
    Enumeration {
        keys: Size,
        values: Size,
    },
    /// Keys and values (a keyed table is a dictionary of two tables).
    Dictionary(Box<Shape>, Box<Shape>),
    Table {
        columns: Size,
        rows: Size,
    },
    /// Nothing is known (a function value, a `?` that stayed unknown).
    Wildcard,
}

impl Shape {
    pub fn list(cells: Size, cell: Shape) -> Shape {
        Shape::List(cells, Box::new(cell))
    }

    /// The size of a vector shape.
    pub fn vector_size(&self) -> Option<&Size> {
        match self {
            Shape::Vector(size) => Some(size),
            _ => None,
        }
    }
}

/// Where a dynamic size was made.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DynamicOrigin {
    /// A result of the statement's call; `part` tells apart several sizes made by one call.
    Call { stmt: StmtId, part: Vec<u8> },
    /// The merge of differing shapes of `local` at a join of control flow.
    Join {
        point: JoinPoint,
        local: LocalId,
        part: Vec<u8>,
    },
    /// The sizes of a parameter.
    Parameter { local: LocalId, part: Vec<u8> },
    /// The merge of differing shapes of the `index`th returned value of several `return`s.
    Returned { index: usize, part: Vec<u8> },
    /// A local declared (`var x:T;`) or read before any assignment reaches it.
    Declared {
        stmt: StmtId,
        local: LocalId,
        part: Vec<u8>,
    },
}

impl DynamicOrigin {
    /// The statement that made it (for a join: the compound statement; none for parameters).
    fn stmt(&self) -> Option<StmtId> {
        match self {
            DynamicOrigin::Call { stmt, .. } | DynamicOrigin::Declared { stmt, .. } => Some(*stmt),
            DynamicOrigin::Join { point, .. } => match point {
                JoinPoint::IfMerge(s) | JoinPoint::LoopHead(s) | JoinPoint::LoopExit(s) => Some(*s),
                JoinPoint::FunctionExit => None,
            },
            DynamicOrigin::Parameter { .. } | DynamicOrigin::Returned { .. } => None,
        }
    }
}

/// Interns dynamic origins, so the same origin always gets the same id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynamicSizes {
    origins: Vec<DynamicOrigin>,
    /// Hashed with Fx, not SipHash: every call making a size interns its origin, and the
    /// origins come from the program being compiled.
    ids: FxHashMap<DynamicOrigin, DynamicId>,
}

impl DynamicSizes {
    pub fn intern(&mut self, origin: DynamicOrigin) -> DynamicId {
        if let Some(&id) = self.ids.get(&origin) {
            return id;
        }
        let id = DynamicId(self.origins.len());
        self.origins.push(origin.clone());
        self.ids.insert(origin, id);
        id
    }

    pub fn origin(&self, id: DynamicId) -> Option<&DynamicOrigin> {
        self.origins.get(id.0)
    }
}

/// The shapes of the locals one statement reads, before it runs, in local order.
///
/// A few entries each (the locals of one statement), kept in a sorted Vec: a tree map
/// allocated a node per statement, sized for eleven entries, and searched by pointer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapeFact {
    entries: Vec<(LocalId, Shape)>,
}

impl ShapeFact {
    pub fn new() -> ShapeFact {
        ShapeFact::default()
    }

    pub fn get(&self, local: &LocalId) -> Option<&Shape> {
        self.entries
            .iter()
            .find(|(at, _)| at == local)
            .map(|(_, shape)| shape)
    }

    /// Sets the shape of `local`, replacing the one it had.
    pub fn insert(&mut self, local: LocalId, shape: Shape) {
        match self.entries.binary_search_by_key(&local, |(at, _)| *at) {
            Ok(at) => self.entries[at].1 = shape,
            Err(at) => self.entries.insert(at, (local, shape)),
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The recorded shapes in local order.
    pub fn iter(&self) -> impl Iterator<Item = (&LocalId, &Shape)> {
        self.entries.iter().map(|(local, shape)| (local, shape))
    }
}

impl std::ops::Index<&LocalId> for ShapeFact {
    type Output = Shape;

    /// The shape of `local`; panics when none is recorded (as a map's index does).
    fn index(&self, local: &LocalId) -> &Shape {
        match self.get(local) {
            Some(shape) => shape,
            None => panic!("no shape recorded for local {}", local.0),
        }
    }
}

/// The shapes of the locals at one point while the analysis runs: dense, indexed by
/// [`LocalId`], so that binding a statement's targets is a store rather than a tree
/// insertion. Iterates in local order, as [`ShapeFact`] does, so joins name fresh sizes in
/// the same order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LocalShapes {
    shapes: Vec<Option<Shape>>,
}

impl LocalShapes {
    /// No shape known, for a function with `locals` locals.
    fn new(locals: usize) -> LocalShapes {
        LocalShapes {
            shapes: vec![None; locals],
        }
    }

    pub(crate) fn get(&self, local: &LocalId) -> Option<&Shape> {
        self.shapes.get(local.0).and_then(Option::as_ref)
    }

    fn insert(&mut self, local: LocalId, shape: Shape) {
        if local.0 >= self.shapes.len() {
            // Ids come from the function's locals; grow rather than panic on a bad one.
            self.shapes.resize(local.0 + 1, None);
        }
        self.shapes[local.0] = Some(shape);
    }

    /// The known shapes in local order.
    fn iter(&self) -> impl Iterator<Item = (LocalId, &Shape)> {
        self.shapes
            .iter()
            .enumerate()
            .filter_map(|(local, shape)| Some((LocalId(local), shape.as_ref()?)))
    }
}

/// The result of shape analysis on one function.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeResults {
    pub function: FunctionId,
    /// Per statement: the shapes of the values it produces (one per assignment target, the
    /// results of an expression statement, the returned operands) or, for `if`/`while`/
    /// `repeat`, of its condition or count.
    pub values: Vec<Vec<Shape>>,
    /// Per statement, the shapes of the locals it reads (for `if`/`while`/`repeat`: its
    /// condition or count), before it runs (see `FlowResults::before`). Only those: a copy
    /// of every local's shape per statement would make the analysis quadratic.
    pub before: Vec<ShapeFact>,
    /// The merged shapes of the returned values.
    pub returns: Vec<Shape>,
    pub dynamic: DynamicSizes,
}

impl ShapeResults {
    /// The shape of `operand` where statement `stmt` reads it.
    pub fn operand_shape(&self, program: &TypedProgram, stmt: StmtId, operand: &Operand) -> Shape {
        self.operand_shape_ref(program, stmt, operand).into_owned()
    }

    /// [`ShapeResults::operand_shape`], a local's shape borrowed where it is recorded: the
    /// outliner's legality checks ask for the shapes of every read of every kernel they try,
    /// and a copy of a compressed size allocates.
    pub fn operand_shape_ref(
        &self,
        program: &TypedProgram,
        stmt: StmtId,
        operand: &Operand,
    ) -> std::borrow::Cow<'_, Shape> {
        use std::borrow::Cow;
        match operand {
            Operand::Local(local, _) => self
                .before
                .get(stmt.0)
                .and_then(|fact| fact.get(local))
                .map_or(Cow::Owned(Shape::Wildcard), Cow::Borrowed),
            Operand::Literal(literal) => {
                Cow::Owned(Shape::Vector(Size::Constant(literal.values.len() as u64)))
            }
            Operand::Global(global, _) => Cow::Owned(
                program
                    .globals
                    .get(global.0)
                    .map(|g| Shape::Vector(Size::Constant(g.value.values.len() as u64)))
                    .unwrap_or(Shape::Wildcard),
            ),
        }
    }

    pub fn dynamic_origin(&self, id: DynamicId) -> Option<&DynamicOrigin> {
        self.dynamic.origin(id)
    }
}

/// Error of [`analyze`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    UnknownFunction(FunctionId),
    NoFixedPoint(NoFixedPoint),
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::UnknownFunction(id) => write!(f, "no function with id {}", id.0),
            ShapeError::NoFixedPoint(e) => write!(f, "shape analysis: {e}"),
        }
    }
}

impl std::error::Error for ShapeError {}

impl From<NoFixedPoint> for ShapeError {
    fn from(e: NoFixedPoint) -> ShapeError {
        ShapeError::NoFixedPoint(e)
    }
}

/// Runs shape analysis on `program.functions[id]`.
pub fn analyze(program: &TypedProgram, id: FunctionId) -> Result<ShapeResults, ShapeError> {
    let function = program
        .functions
        .get(id.0)
        .ok_or(ShapeError::UnknownFunction(id))?;
    let chains = UseDefChains::build(function)?;
    analyze_with(program, id, function, &chains)
}

/// Runs shape analysis with use-def chains already built.
pub fn analyze_with(
    program: &TypedProgram,
    id: FunctionId,
    function: &Function,
    chains: &UseDefChains,
) -> Result<ShapeResults, ShapeError> {
    let tree = StatementTree::new(function);
    let mut analysis = ShapeAnalysis {
        program,
        function,
        tree: &tree,
        chains,
        dynamic: DynamicSizes::default(),
        values: vec![Vec::new(); tree.len()],
        returns: Vec::new(),
    };
    let flow = solve(&mut analysis, function)?;
    Ok(ShapeResults {
        function: id,
        values: analysis.values,
        before: flow.before,
        returns: analysis.returns,
        dynamic: analysis.dynamic,
    })
}

pub(crate) struct ShapeAnalysis<'a> {
    program: &'a TypedProgram,
    function: &'a Function,
    tree: &'a StatementTree<'a>,
    chains: &'a UseDefChains,
    dynamic: DynamicSizes,
    values: Vec<Vec<Shape>>,
    returns: Vec<Shape>,
}

impl ShapeAnalysis<'_> {
    fn fresh(&mut self, origin: DynamicOrigin) -> Size {
        Size::Dynamic(self.dynamic.intern(origin))
    }

    /// The most general shape of a type, with dynamic sizes named by `origin(part)`.
    fn shape_of_type(
        &mut self,
        ty: &Type,
        origin: &dyn Fn(Vec<u8>) -> DynamicOrigin,
        part: Vec<u8>,
    ) -> Shape {
        let with = |mut p: Vec<u8>, k: u8| {
            p.push(k);
            p
        };
        match ty {
            Type::Wildcard | Type::Func => Shape::Wildcard,
            Type::List(cell) => {
                let cells = self.fresh(origin(with(part.clone(), 0)));
                let cell = self.shape_of_type(cell, origin, with(part, 1));
                Shape::list(cells, cell)
            }
            Type::Dict(key, value) => {
                let key = self.shape_of_type(key, origin, with(part.clone(), 0));
                let value = self.shape_of_type(value, origin, with(part, 1));
                Shape::Dictionary(Box::new(key), Box::new(value))
            }
            Type::Enum(_) => Shape::Enumeration {
                keys: self.fresh(origin(with(part.clone(), 0))),
                values: self.fresh(origin(with(part, 1))),
            },
            Type::Table => Shape::Table {
                columns: self.fresh(origin(with(part.clone(), 0))),
                rows: self.fresh(origin(with(part, 1))),
            },
            Type::KTable => {
                let key = self.shape_of_type(&Type::Table, origin, with(part.clone(), 0));
                let value = self.shape_of_type(&Type::Table, origin, with(part, 1));
                Shape::Dictionary(Box::new(key), Box::new(value))
            }
            _ => Shape::Vector(self.fresh(origin(part))),
        }
    }

    fn local_type(&self, local: LocalId) -> Type {
        self.function
            .locals
            .get(local.0)
            .map(|l| l.ty.clone())
            .unwrap_or(Type::Wildcard)
    }

    /// The shape of a local where `stmt` reads it.
    fn local_shape(&mut self, stmt: StmtId, fact: &LocalShapes, local: LocalId) -> Shape {
        if let Some(shape) = fact.get(&local) {
            return shape.clone();
        }
        // Read before any assignment reaches it (only after `var x:T;` in a valid program).
        let ty = self.local_type(local);
        self.shape_of_type(
            &ty,
            &|part| DynamicOrigin::Declared { stmt, local, part },
            Vec::new(),
        )
    }

    fn operand_shape(&mut self, stmt: StmtId, fact: &LocalShapes, operand: &Operand) -> Shape {
        match operand {
            Operand::Local(local, _) => self.local_shape(stmt, fact, *local),
            Operand::Literal(literal) => Shape::Vector(Size::Constant(literal.values.len() as u64)),
            Operand::Global(global, _) => match self.program.globals.get(global.0) {
                Some(g) => Shape::Vector(Size::Constant(g.value.values.len() as u64)),
                None => Shape::Wildcard,
            },
        }
    }

    /// The mask identity of an operand read at `stmt`: a local with one reaching definition.
    fn mask_of(&self, stmt: StmtId, operand: &Operand) -> Option<Mask> {
        match operand {
            Operand::Local(local, _) => self
                .chains
                .unique_def(stmt, *local)
                .map(|def| Mask { local: *local, def }),
            _ => None,
        }
    }

    /// Replaces, in a shape arriving at the head of `loop_stmt` over a back edge, every size
    /// made inside the loop by a size of the head: such a size names a value of the previous
    /// iteration, which must not be confused with the same statement's value in the next one.
    fn generalize_for_loop_head(
        &mut self,
        loop_stmt: StmtId,
        local: LocalId,
        shape: &Shape,
        part: Vec<u8>,
    ) -> Shape {
        let with = |mut p: Vec<u8>, k: u8| {
            p.push(k);
            p
        };
        match shape {
            Shape::Vector(size) => {
                Shape::Vector(self.generalize_size(loop_stmt, local, size, part))
            }
            Shape::List(cells, cell) => {
                let cells = self.generalize_size(loop_stmt, local, cells, with(part.clone(), 0));
                let cell = self.generalize_for_loop_head(loop_stmt, local, cell, with(part, 1));
                Shape::list(cells, cell)
            }
            Shape::Enumeration { keys, values } => Shape::Enumeration {
                keys: self.generalize_size(loop_stmt, local, keys, with(part.clone(), 0)),
                values: self.generalize_size(loop_stmt, local, values, with(part, 1)),
            },
            Shape::Dictionary(key, value) => Shape::Dictionary(
                Box::new(self.generalize_for_loop_head(
                    loop_stmt,
                    local,
                    key,
                    with(part.clone(), 0),
                )),
                Box::new(self.generalize_for_loop_head(loop_stmt, local, value, with(part, 1))),
            ),
            Shape::Table { columns, rows } => Shape::Table {
                columns: self.generalize_size(loop_stmt, local, columns, with(part.clone(), 0)),
                rows: self.generalize_size(loop_stmt, local, rows, with(part, 1)),
            },
            Shape::Wildcard => Shape::Wildcard,
        }
    }

    fn generalize_size(
        &mut self,
        loop_stmt: StmtId,
        local: LocalId,
        size: &Size,
        part: Vec<u8>,
    ) -> Size {
        if self.made_in_loop(loop_stmt, size) {
            self.fresh(DynamicOrigin::Join {
                point: JoinPoint::LoopHead(loop_stmt),
                local,
                part,
            })
        } else {
            size.clone()
        }
    }

    /// True when `size` names something made by a statement of the loop (or its head).
    fn made_in_loop(&self, loop_stmt: StmtId, size: &Size) -> bool {
        let inside = |stmt: StmtId| stmt == loop_stmt || self.tree.is_inside(stmt, loop_stmt);
        match size {
            Size::Constant(_) | Size::Symbol { .. } => false,
            Size::Compressed(inner, mask) => {
                matches!(mask.def, DefSite::Stmt(s) if inside(s))
                    || self.made_in_loop(loop_stmt, inner)
            }
            Size::Dynamic(id) => self
                .dynamic
                .origin(*id)
                .and_then(DynamicOrigin::stmt)
                .is_some_and(inside),
        }
    }

    /// Binds the shapes a statement produced to its targets.
    fn bind(&mut self, fact: &mut LocalShapes, targets: &[Target], shapes: &[Shape]) {
        for (target, shape) in targets.iter().zip(shapes) {
            if let Target::Local(local) = target {
                fact.insert(*local, shape.clone());
            }
        }
    }
}

/// Merges two shapes of the same value at a join: equal shapes are kept; differing sizes
/// become the dynamic size `fresh(part)` (`part` the position inside the shape).
pub fn merge_shapes(a: &Shape, b: &Shape, fresh: &mut dyn FnMut(Vec<u8>) -> Size) -> Shape {
    merge_shape_at(a, b, fresh, Vec::new())
}

fn merge_shape_at(
    a: &Shape,
    b: &Shape,
    fresh: &mut dyn FnMut(Vec<u8>) -> Size,
    part: Vec<u8>,
) -> Shape {
    if a == b {
        return a.clone();
    }
    let with = |mut p: Vec<u8>, k: u8| {
        p.push(k);
        p
    };
    match (a, b) {
        (Shape::Vector(x), Shape::Vector(y)) => Shape::Vector(merge_size(x, y, fresh, part)),
        (Shape::List(s1, c1), Shape::List(s2, c2)) => Shape::list(
            merge_size(s1, s2, fresh, with(part.clone(), 0)),
            merge_shape_at(c1, c2, fresh, with(part, 1)),
        ),
        (
            Shape::Enumeration {
                keys: k1,
                values: v1,
            },
            Shape::Enumeration {
                keys: k2,
                values: v2,
            },
        ) => Shape::Enumeration {
            keys: merge_size(k1, k2, fresh, with(part.clone(), 0)),
            values: merge_size(v1, v2, fresh, with(part, 1)),
        },
        (Shape::Dictionary(k1, v1), Shape::Dictionary(k2, v2)) => Shape::Dictionary(
            Box::new(merge_shape_at(k1, k2, fresh, with(part.clone(), 0))),
            Box::new(merge_shape_at(v1, v2, fresh, with(part, 1))),
        ),
        (
            Shape::Table {
                columns: c1,
                rows: r1,
            },
            Shape::Table {
                columns: c2,
                rows: r2,
            },
        ) => Shape::Table {
            columns: merge_size(c1, c2, fresh, with(part.clone(), 0)),
            rows: merge_size(r1, r2, fresh, with(part, 1)),
        },
        _ => Shape::Wildcard,
    }
}

/// Equal sizes are kept; otherwise the size is only known at run time.
pub fn merge_size(
    a: &Size,
    b: &Size,
    fresh: &mut dyn FnMut(Vec<u8>) -> Size,
    part: Vec<u8>,
) -> Size {
    if a == b {
        a.clone()
    } else {
        fresh(part)
    }
}

impl DataFlowAnalysis for ShapeAnalysis<'_> {
    type Fact = LocalShapes;
    type Record = ShapeFact;

    fn unrecorded(&mut self) -> ShapeFact {
        ShapeFact::new()
    }

    /// Users read the shapes where statements read operands: before them.
    fn records_after(&self) -> bool {
        false
    }

    /// Only the locals the statement reads (see [`ShapeResults::before`]).
    fn record_before(&self, stmt: &Stmt, fact: &LocalShapes, into: &mut ShapeFact) {
        into.clear();
        for_each_use(stmt, |used| {
            if let Some(shape) = fact.get(&used.local) {
                into.insert(used.local, shape.clone());
            }
        });
    }

    fn direction(&self) -> Direction {
        Direction::Forward
    }

    fn boundary(&mut self) -> LocalShapes {
        let mut fact = LocalShapes::new(self.function.locals.len());
        for &local in &self.function.params {
            let ty = self.local_type(local);
            let shape = self.shape_of_type(
                &ty,
                &|part| DynamicOrigin::Parameter { local, part },
                Vec::new(),
            );
            fact.insert(local, shape);
        }
        fact
    }

    fn unreachable(&mut self) -> LocalShapes {
        LocalShapes::new(self.function.locals.len())
    }

    fn join(&mut self, point: JoinPoint, into: &mut LocalShapes, other: &LocalShapes) {
        for (local, shape) in other.iter() {
            let incoming = match point {
                JoinPoint::LoopHead(loop_stmt) => {
                    self.generalize_for_loop_head(loop_stmt, local, shape, Vec::new())
                }
                _ => shape.clone(),
            };
            match into.get(&local) {
                None => {
                    into.insert(local, incoming);
                }
                Some(existing) => {
                    let existing = existing.clone();
                    let mut fresh =
                        |part: Vec<u8>| self.fresh(DynamicOrigin::Join { point, local, part });
                    let merged = merge_shapes(&existing, &incoming, &mut fresh);
                    into.insert(local, merged);
                }
            }
        }
    }

    fn transfer(&mut self, id: StmtId, stmt: &Stmt, fact: &LocalShapes) -> LocalShapes {
        let mut out = fact.clone();
        self.transfer_in_place(id, stmt, &mut out);
        out
    }

    fn transfer_in_place(&mut self, id: StmtId, stmt: &Stmt, out: &mut LocalShapes) {
        let produced: Vec<Shape> = match &stmt.kind {
            StmtKind::Declare(locals) => {
                let mut shapes = Vec::new();
                for &local in locals {
                    let ty = self.local_type(local);
                    let shape = self.shape_of_type(
                        &ty,
                        &|part| DynamicOrigin::Declared {
                            stmt: id,
                            local,
                            part,
                        },
                        Vec::new(),
                    );
                    out.insert(local, shape.clone());
                    shapes.push(shape);
                }
                shapes
            }
            StmtKind::Assign { targets, expr, .. } => {
                let mut shapes = self.expr_shapes(id, out, expr);
                // A call of a multi-result function may give fewer shapes than targets when it
                // is malformed; the missing ones follow the targets' types.
                for (k, target) in targets.iter().enumerate().skip(shapes.len()) {
                    let shape = match target {
                        Target::Local(local) => {
                            let ty = self.local_type(*local);
                            self.shape_of_type(
                                &ty,
                                &|mut part| {
                                    part.insert(0, k as u8);
                                    DynamicOrigin::Call { stmt: id, part }
                                },
                                Vec::new(),
                            )
                        }
                        Target::Discard => Shape::Wildcard,
                    };
                    shapes.push(shape);
                }
                shapes.truncate(targets.len());
                self.bind(out, targets, &shapes);
                shapes
            }
            StmtKind::Expr(expr) => self.expr_shapes(id, out, expr),
            StmtKind::Return(operands) => {
                let shapes: Vec<Shape> = operands
                    .iter()
                    .map(|operand| self.operand_shape(id, out, operand))
                    .collect();
                if self.returns.is_empty() {
                    self.returns = shapes.clone();
                } else {
                    let previous = std::mem::take(&mut self.returns);
                    self.returns = previous
                        .iter()
                        .zip(&shapes)
                        .enumerate()
                        .map(|(k, (a, b))| {
                            let mut fresh = |part: Vec<u8>| {
                                self.fresh(DynamicOrigin::Returned { index: k, part })
                            };
                            merge_shapes(a, b, &mut fresh)
                        })
                        .collect();
                }
                shapes
            }
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => {
                vec![self.operand_shape(id, out, cond)]
            }
            StmtKind::Repeat { count, .. } => vec![self.operand_shape(id, out, count)],
            StmtKind::Break | StmtKind::Continue => Vec::new(),
        };
        if let Some(slot) = self.values.get_mut(id.0) {
            *slot = produced;
        }
    }
}

/// Prints a size with the function's local names: `Compressed(Symbol(lineitem), t25)`.
pub struct SizeDisplay<'a> {
    pub size: &'a Size,
    pub function: &'a Function,
}

impl fmt::Display for SizeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.size {
            Size::Constant(k) => write!(f, "Constant({k})"),
            Size::Symbol { table, dimension } => match dimension {
                TableDimension::Rows => write!(f, "Symbol({table})"),
                TableDimension::Columns => write!(f, "Symbol({table}.columns)"),
            },
            Size::Compressed(inner, mask) => write!(
                f,
                "Compressed({}, {})",
                SizeDisplay {
                    size: inner,
                    function: self.function
                },
                local_name(self.function, mask.local)
            ),
            Size::Dynamic(id) => write!(f, "Dynamic({})", id.0),
        }
    }
}

/// Prints a shape with the function's local names: `Vector(Symbol(lineitem))`.
pub struct ShapeDisplay<'a> {
    pub shape: &'a Shape,
    pub function: &'a Function,
}

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = |size| SizeDisplay {
            size,
            function: self.function,
        };
        let shape = |shape| ShapeDisplay {
            shape,
            function: self.function,
        };
        match self.shape {
            Shape::Vector(s) => write!(f, "Vector({})", size(s)),
            Shape::List(s, cell) => write!(f, "List({}, {})", size(s), shape(cell)),
            Shape::Enumeration { keys, values } => {
                write!(f, "Enumeration({}, {})", size(keys), size(values))
            }
            Shape::Dictionary(k, v) => write!(f, "Dictionary({}, {})", shape(k), shape(v)),
            Shape::Table { columns, rows } => write!(f, "Table({}, {})", size(columns), size(rows)),
            Shape::Wildcard => write!(f, "Wildcard"),
        }
    }
}

/// One line per statement, indented by nesting: `t31 : Vector(Compressed(Symbol(lineitem), t25))`.
pub fn print_shapes(program: &TypedProgram, results: &ShapeResults) -> String {
    let Some(function) = program.functions.get(results.function.0) else {
        return String::new();
    };
    let tree = StatementTree::new(function);
    let mut out = String::new();
    for (id, entry) in tree.iter() {
        let shapes: Vec<String> = results
            .values
            .get(id.0)
            .map(|v| {
                v.iter()
                    .map(|shape| ShapeDisplay { shape, function }.to_string())
                    .collect()
            })
            .unwrap_or_default();
        let subject = statement_subject(function, entry.stmt);
        let indent = "  ".repeat(entry.depth);
        if shapes.is_empty() {
            out.push_str(&format!("{indent}{subject}\n"));
        } else {
            out.push_str(&format!("{indent}{subject} : {}\n", shapes.join(", ")));
        }
    }
    out
}

/// What a statement's line is about: its targets, `return`, `if t3`, …
pub(crate) fn statement_subject(function: &Function, stmt: &Stmt) -> String {
    let operand = |operand: &Operand| match operand {
        Operand::Local(local, _) => local_name(function, *local).to_string(),
        Operand::Global(..) => "global".to_string(),
        Operand::Literal(literal) => format!("literal:{}", literal.ty.ty),
    };
    match &stmt.kind {
        StmtKind::Declare(locals) => {
            let names: Vec<&str> = locals.iter().map(|l| local_name(function, *l)).collect();
            format!("var {}", names.join(", "))
        }
        StmtKind::Assign { targets, .. } => {
            super::statements::target_names(function, targets).replace(',', ", ")
        }
        StmtKind::Expr(_) => "_".to_string(),
        StmtKind::Return(_) => "return".to_string(),
        StmtKind::If { cond, .. } => format!("if {}", operand(cond)),
        StmtKind::While { cond, .. } => format!("while {}", operand(cond)),
        StmtKind::Repeat { count, .. } => format!("repeat {}", operand(count)),
        StmtKind::Break => "break".to_string(),
        StmtKind::Continue => "continue".to_string(),
    }
}

#[cfg(test)]
mod tests;
