//! Analyses of the typed program that the GPU compiler's outliner consumes: a data-flow
//! framework over structured control flow ([`dataflow`]) with reaching definitions, use-def
//! chains and liveness ([`defuse`]); the data-dependence graph with per-edge synchronization
//! ([`dependence`], device rules in [`device`]); shape analysis ([`shape`]); and the thread
//! geometry of every statement ([`geometry`]). The design follows rNdN (Krolik's thesis).
//!
//! Entry point: [`analyze_function`]; printers: [`DependenceGraph::to_text`],
//! [`DependenceGraph::to_dot`], [`print_shapes`], [`print_geometry`].

pub mod dataflow;
pub mod defuse;
pub mod dependence;
pub mod device;
pub mod geometry;
pub mod mismatch;
pub mod shape;
pub mod statements;

#[cfg(test)]
pub(crate) mod testing;

use std::fmt;

use crate::sema::typed::{FunctionId, TypedProgram};

pub use dataflow::NoFixedPoint;
pub use defuse::UseDefChains;
pub use dependence::DependenceGraph;
pub use geometry::{print_geometry, Geometry, GeometryResults};
pub use shape::{print_shapes, Shape, ShapeResults, Size};
pub use statements::StmtId;

/// Everything the outliner needs to know about one function.
#[derive(Clone, Debug)]
pub struct FunctionAnalysis {
    pub function: FunctionId,
    pub chains: UseDefChains,
    pub dependence: DependenceGraph,
    pub shapes: ShapeResults,
    pub geometry: GeometryResults,
}

/// Why a function could not be analysed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisError {
    UnknownFunction(FunctionId),
    NoFixedPoint(NoFixedPoint),
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalysisError::UnknownFunction(id) => write!(f, "no function with id {}", id.0),
            AnalysisError::NoFixedPoint(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AnalysisError {}

impl From<NoFixedPoint> for AnalysisError {
    fn from(e: NoFixedPoint) -> AnalysisError {
        AnalysisError::NoFixedPoint(e)
    }
}

impl From<shape::ShapeError> for AnalysisError {
    fn from(e: shape::ShapeError) -> AnalysisError {
        match e {
            shape::ShapeError::UnknownFunction(id) => AnalysisError::UnknownFunction(id),
            shape::ShapeError::NoFixedPoint(e) => AnalysisError::NoFixedPoint(e),
        }
    }
}

/// Runs every analysis on `program.functions[id]`.
pub fn analyze_function(
    program: &TypedProgram,
    id: FunctionId,
) -> Result<FunctionAnalysis, AnalysisError> {
    let function = program
        .functions
        .get(id.0)
        .ok_or(AnalysisError::UnknownFunction(id))?;
    let reaching = dataflow::solve(&mut defuse::ReachingDefinitions::new(function), function)?;
    let chains = UseDefChains::from_reaching(function, &reaching);
    let dependence = DependenceGraph::from_reaching(program, id, function, &reaching)?;
    let shapes = shape::analyze_with(program, id, function, &chains)?;
    let geometry = geometry::analyze(program, function, &shapes);
    Ok(FunctionAnalysis {
        function: id,
        chains,
        dependence,
        shapes,
        geometry,
    })
}

/// Runs every analysis on every function of `program`, in function order.
pub fn analyze_program(program: &TypedProgram) -> Vec<Result<FunctionAnalysis, AnalysisError>> {
    (0..program.functions.len())
        .map(|index| analyze_function(program, FunctionId(index)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::device::Device;
    use crate::analysis::testing::*;
    use horsec_runtime::builtin::Builtin;
    use horsec_runtime::types::Type;

    #[test]
    fn analyze_function_runs_every_analysis_on_one_function() {
        let mut f = FunctionBuilder::new("main");
        let x = f.param("x", Type::F64);
        let m = f.local("m", Type::Bool);
        let y = f.local("y", Type::F64);
        let s = f.local("s", Type::F64);
        f.assign(m, call(Builtin::Gt, vec![var(x), lit_f64(&[0.0])])); // s0
        f.assign(y, call(Builtin::Compress, vec![var(m), var(x)])); // s1
        f.assign(s, call(Builtin::Sum, vec![var(y)])); // s2
        f.ret(vec![var(s)]); // s3
        let program = program(f.finish());
        let analysis = analyze_function(&program, FunctionId(0)).unwrap();
        let function = &program.functions[0];
        assert!(analysis
            .dependence
            .to_text(&program, function)
            .contains("s2 -> s3 true s sync(write)"));
        assert!(analysis
            .dependence
            .to_dot(&program, function)
            .contains("2 -> 3 [ label = \"true s\", color = red, penwidth = 2]"));
        assert_eq!(
            print_shapes(&program, &analysis.shapes),
            "m : Vector(Dynamic(0))\ny : Vector(Compressed(Dynamic(0), m))\n\
             s : Vector(Constant(1))\nreturn : Vector(Constant(1))\n"
        );
        assert_eq!(
            print_geometry(function, &analysis.geometry),
            "m : Vector(Dynamic(0))\ny : Vector(Dynamic(0))\n\
             s : Vector(Compressed(Dynamic(0), m))\nreturn : Cpu\n"
        );
        assert_eq!(analysis.dependence.device(StmtId(2)), Some(Device::Gpu));
        assert_eq!(
            analysis.shapes.values[2],
            vec![Shape::Vector(Size::Constant(1))]
        );
        assert_eq!(analysis.geometry.get(StmtId(3)), Some(&Geometry::Cpu));
        assert!(analysis.chains.unique_def(StmtId(2), y).is_some());
    }

    #[test]
    fn an_unknown_function_is_an_error() {
        let program = program(FunctionBuilder::new("main").finish());
        assert_eq!(
            analyze_function(&program, FunctionId(3)).err(),
            Some(AnalysisError::UnknownFunction(FunctionId(3)))
        );
    }
}
