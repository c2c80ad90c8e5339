//! Geometry analysis: the thread layout each statement needs on the GPU.
//!
//! A GPU statement runs either one thread per element of a vector (`Vector(size)`) or one
//! group of threads per cell of a list (`List(cells, cell)`). The operating geometry is not
//! always the result's shape: `@compress` and `@where` run over their full input (the mask is
//! applied lazily), reductions over their input, `@each*` and `@raze` over the list's cells.
//! Library kernels choose their own layout; host statements have none. Statements with equal
//! geometry (or a compressed one inside a full one) may share a kernel.

use std::fmt;

use horsec_runtime::builtin::Builtin;

use crate::sema::typed::{Arg, Callee, ExprKind, Function, Stmt, StmtKind, TypedProgram};

use super::device::{statement_device, Context, Device};
use super::shape::{statement_subject, Shape, ShapeResults, Size, SizeDisplay};
use super::statements::{expr_call, StatementTree, StmtId};

/// The thread layout of one statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Geometry {
    /// One thread per element.
    Vector(Size),
    /// `cells` cells, each of `cell` elements.
    List { cells: Size, cell: Size },
    /// A library kernel with a layout of its own.
    Library,
    /// Runs on the host.
    Cpu,
}

impl Geometry {
    /// The geometry of operating on a value of `shape`: vectors and lists of vectors only.
    pub fn of_shape(shape: &Shape) -> Option<Geometry> {
        match shape {
            Shape::Vector(size) => Some(Geometry::Vector(size.clone())),
            Shape::List(cells, cell) => match &**cell {
                Shape::Vector(size) => Some(Geometry::List {
                    cells: cells.clone(),
                    cell: size.clone(),
                }),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The geometry of every statement of a function, indexed by [`StmtId`].
#[derive(Clone, Debug, PartialEq)]
pub struct GeometryResults {
    pub geometries: Vec<Geometry>,
}

impl GeometryResults {
    pub fn get(&self, stmt: StmtId) -> Option<&Geometry> {
        self.geometries.get(stmt.0)
    }
}

/// Computes the geometry of every statement of `function` from its shapes.
pub fn analyze(
    program: &TypedProgram,
    function: &Function,
    shapes: &ShapeResults,
) -> GeometryResults {
    let cx = Context { program, function };
    let tree = StatementTree::new(function);
    let geometries = tree
        .iter()
        .map(|(id, entry)| statement_geometry(cx, shapes, id, entry.stmt))
        .collect();
    GeometryResults { geometries }
}

fn statement_geometry(cx: Context<'_>, shapes: &ShapeResults, id: StmtId, stmt: &Stmt) -> Geometry {
    match statement_device(cx, stmt) {
        Device::Cpu => return Geometry::Cpu,
        Device::Library => return Geometry::Library,
        Device::Gpu => {}
    }
    let result = || shapes.values.get(id.0).and_then(|v| v.first()).cloned();
    let operating = match &stmt.kind {
        StmtKind::Assign { expr, .. } | StmtKind::Expr(expr) => match expr_call(expr) {
            Some((Callee::Builtin(builtin), args)) => {
                let argument = |k: usize| match args.get(k) {
                    Some(Arg::Operand(operand)) => {
                        Some(shapes.operand_shape(cx.program, id, operand))
                    }
                    _ => None,
                };
                match input_position(builtin) {
                    Some(k) => argument(k),
                    None => result(),
                }
            }
            Some((Callee::Function(_), _)) => None,
            None => match &expr.kind {
                // A copy runs over the value copied.
                ExprKind::Operand(_) => result(),
                _ => None,
            },
        },
        _ => None,
    };
    operating
        .as_ref()
        .and_then(Geometry::of_shape)
        .unwrap_or(Geometry::Cpu)
}

/// The argument whose shape a builtin runs over, when it is not the result's.
fn input_position(builtin: Builtin) -> Option<usize> {
    use Builtin as B;
    match builtin {
        // The mask's full length: the compression itself is lazy.
        B::Compress | B::Where => Some(0),
        // Reductions, list operations and the cell-wise functions run over their input.
        B::Len | B::Count | B::Sum | B::Avg | B::Min | B::Max | B::Raze => Some(0),
        B::Each | B::EachItem | B::EachLeft => Some(1),
        B::EachRight => Some(2),
        B::Take | B::Drop => Some(1),
        _ => None,
    }
}

impl Geometry {
    pub fn display<'a>(&'a self, function: &'a Function) -> GeometryDisplay<'a> {
        GeometryDisplay {
            geometry: self,
            function,
        }
    }
}

/// Prints a geometry with the function's local names.
pub struct GeometryDisplay<'a> {
    geometry: &'a Geometry,
    function: &'a Function,
}

impl fmt::Display for GeometryDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = |size| SizeDisplay {
            size,
            function: self.function,
        };
        match self.geometry {
            Geometry::Vector(s) => write!(f, "Vector({})", size(s)),
            Geometry::List { cells, cell } => write!(f, "List({}, {})", size(cells), size(cell)),
            Geometry::Library => f.write_str("Library"),
            Geometry::Cpu => f.write_str("Cpu"),
        }
    }
}

/// One line per statement, indented by nesting: `t42 : Vector(Compressed(Symbol(lineitem), t25))`.
pub fn print_geometry(function: &Function, results: &GeometryResults) -> String {
    let tree = StatementTree::new(function);
    let mut out = String::new();
    for (id, entry) in tree.iter() {
        let indent = "  ".repeat(entry.depth);
        let subject = statement_subject(function, entry.stmt);
        match results.get(id) {
            Some(geometry) => out.push_str(&format!(
                "{indent}{subject} : {}\n",
                geometry.display(function)
            )),
            None => out.push_str(&format!("{indent}{subject}\n")),
        }
    }
    out
}
