//! The data-dependence graph of a function: one node per statement, tagged with its
//! [`Device`]; one edge per dependence through a local: true (def → use), anti (use → later
//! def) and output (def → later def), each true dependence marked with the
//! [`Synchronization`] it needs (see [`super::device`] for the rules).
//!
//! Dependences come from reaching definitions and reaching uses over the structured control
//! flow, so a loop gives *loop-carried* edges that point backward in program order.

use std::fmt::{self, Write as _};

use petgraph::dot::{Config, Dot};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use petgraph::Direction as EdgeDirection;

use crate::sema::typed::{Function, FunctionId, LocalId, TypedProgram};

use super::dataflow::{solve, NoFixedPoint};
use super::defuse::{
    definitions_of, reads_of, DefSite, ReachingDefinitionResults, ReachingDefinitions,
    ReachingUseResults, ReachingUses,
};
use super::device::{edge_synchronization, statement_device, Context, Device, Synchronization};
use super::statements::{defined_locals, for_each_use, label, local_name, StatementTree, StmtId};

/// The kind of a data dependence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DependenceKind {
    /// Read after write: the child reads the value the parent wrote.
    True,
    /// Write after read: the child overwrites a value the parent read.
    Anti,
    /// Write after write: the child overwrites the parent's value.
    Output,
}

impl fmt::Display for DependenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DependenceKind::True => "true",
            DependenceKind::Anti => "anti",
            DependenceKind::Output => "output",
        })
    }
}

/// A statement of the function.
#[derive(Clone, Debug, PartialEq)]
pub struct DependenceNode {
    pub stmt: StmtId,
    pub device: Device,
    /// The innermost `if`/`while`/`repeat` around the statement.
    pub parent: Option<StmtId>,
}

/// A dependence through `local`.
#[derive(Clone, Debug, PartialEq)]
pub struct DependenceEdge {
    pub kind: DependenceKind,
    pub local: LocalId,
    /// For true dependences: whether the parent and child must be separated by a barrier.
    /// Always none for anti and output dependences (they order, they move no data).
    pub sync: Synchronization,
    /// The dependence crosses a loop back edge (the child comes first in program order).
    pub loop_carried: bool,
}

/// The dependence graph of one function.
#[derive(Clone, Debug)]
pub struct DependenceGraph {
    pub function: FunctionId,
    pub graph: StableDiGraph<DependenceNode, DependenceEdge>,
    /// The node of each statement, indexed by [`StmtId`].
    nodes: Vec<NodeIndex>,
}

impl DependenceGraph {
    /// Builds the graph of `program.functions[id]`.
    pub fn build(
        program: &TypedProgram,
        id: FunctionId,
        function: &Function,
    ) -> Result<DependenceGraph, NoFixedPoint> {
        let reaching_defs = solve(&mut ReachingDefinitions::new(function), function)?;
        Self::from_reaching(program, id, function, &reaching_defs)
    }

    /// [`DependenceGraph::build`] with the reaching definitions already solved (they also
    /// give the use-def chains: see `analysis::analyze_function`).
    pub fn from_reaching(
        program: &TypedProgram,
        id: FunctionId,
        function: &Function,
        reaching_defs: &ReachingDefinitionResults,
    ) -> Result<DependenceGraph, NoFixedPoint> {
        let reaching_uses = solve(&mut ReachingUses::new(function), function)?;
        Ok(Self::from_flow(
            program,
            id,
            function,
            reaching_defs,
            &reaching_uses,
        ))
    }

    fn from_flow(
        program: &TypedProgram,
        id: FunctionId,
        function: &Function,
        reaching_defs: &ReachingDefinitionResults,
        reaching_uses: &ReachingUseResults,
    ) -> DependenceGraph {
        let cx = Context { program, function };
        let tree = StatementTree::new(function);
        // Sized once: growing the graph's node and edge lists by doubling copies them.
        let mut graph = StableDiGraph::with_capacity(tree.len(), 0);
        let nodes: Vec<NodeIndex> = tree
            .iter()
            .map(|(stmt, entry)| {
                graph.add_node(DependenceNode {
                    stmt,
                    device: statement_device(cx, entry.stmt),
                    parent: entry.parent,
                })
            })
            .collect();

        // Edges are collected in one list, then sorted by parent and deduplicated, so that
        // each (parent, child, kind, local) appears once and in a stable order (one list,
        // not one per parent: a Vec per statement was most of the allocations here). A
        // repeated key always comes with the same synchronization (it is computed from the
        // key's statements and the child's reads of the local), so which copy is kept does
        // not matter.
        let statements = tree.len();
        // (A few per statement: most read one or two values.)
        let mut edges: Vec<(StmtId, StmtId, DependenceKind, LocalId, Synchronization)> =
            Vec::with_capacity(4 * statements);
        let mut add = |parent: StmtId, (child, kind, local, sync)| {
            // A parent outside the function has no node: no edge.
            if parent.0 < statements {
                edges.push((parent, child, kind, local, sync));
            }
        };
        // The argument positions at which the child reads each local, grouped by local.
        let mut reads: Vec<(LocalId, Option<usize>)> = Vec::new();
        let mut positions: Vec<Option<usize>> = Vec::new();
        for (child, entry) in tree.iter() {
            let defs_before = reaching_defs.before(child).map_or(&[][..], Vec::as_slice);
            let uses_before = reaching_uses.before(child).map_or(&[][..], Vec::as_slice);

            // True dependences: every definition reaching a read.
            reads.clear();
            for_each_use(entry.stmt, |read| reads.push((read.local, read.argument)));
            // Stable: each local's positions stay in argument order.
            reads.sort_by_key(|&(local, _)| local);
            for group in reads.chunk_by(|a, b| a.0 == b.0) {
                let local = group[0].0;
                positions.clear();
                positions.extend(group.iter().map(|&(_, at)| at));
                for def in definitions_of(defs_before, local) {
                    let DefSite::Stmt(parent) = def.site else {
                        continue; // parameters have no statement
                    };
                    let Some(parent_stmt) = tree.stmt(parent) else {
                        continue;
                    };
                    let sync = edge_synchronization(cx, parent_stmt, entry.stmt, &positions);
                    add(parent, (child, DependenceKind::True, local, sync));
                }
            }

            for local in defined_locals(entry.stmt) {
                // Output dependences: earlier definitions this one overwrites.
                for def in definitions_of(defs_before, local) {
                    if let DefSite::Stmt(parent) = def.site {
                        add(
                            parent,
                            (
                                child,
                                DependenceKind::Output,
                                local,
                                Synchronization::default(),
                            ),
                        );
                    }
                }
                // Anti dependences: earlier reads of the value this one overwrites.
                for (_, reader) in reads_of(uses_before, local) {
                    add(
                        reader,
                        (
                            child,
                            DependenceKind::Anti,
                            local,
                            Synchronization::default(),
                        ),
                    );
                }
            }
        }
        edges.sort_unstable_by_key(|&(parent, child, kind, local, _)| (parent, child, kind, local));
        edges.dedup_by_key(|&mut (parent, child, kind, local, _)| (parent, child, kind, local));
        graph.reserve_edges(edges.len());
        for (parent, child, kind, local, sync) in edges {
            let (Some(&from), Some(&to)) = (nodes.get(parent.0), nodes.get(child.0)) else {
                continue;
            };
            graph.add_edge(
                from,
                to,
                DependenceEdge {
                    kind,
                    local,
                    sync,
                    loop_carried: parent >= child,
                },
            );
        }
        DependenceGraph {
            function: id,
            graph,
            nodes,
        }
    }

    /// The node of a statement.
    pub fn node(&self, stmt: StmtId) -> Option<NodeIndex> {
        self.nodes.get(stmt.0).copied()
    }

    /// The statement of a node.
    pub fn stmt(&self, node: NodeIndex) -> Option<StmtId> {
        self.graph.node_weight(node).map(|n| n.stmt)
    }

    pub fn device(&self, stmt: StmtId) -> Option<Device> {
        let node = self.node(stmt)?;
        self.graph.node_weight(node).map(|n| n.device)
    }

    /// Places `stmt`, a statement that could be fused into a kernel, on the host instead:
    /// the driver does this for a statement the code generator cannot translate, so that
    /// outlining again leaves the rest of its kernel on the GPU. False when the statement was
    /// not a GPU statement (nothing changes).
    pub fn run_on_host(&mut self, stmt: StmtId) -> bool {
        let Some(node) = self.node(stmt) else {
            return false;
        };
        match self.graph.node_weight_mut(node) {
            Some(weight) if weight.device == Device::Gpu => {
                weight.device = Device::Cpu;
                true
            }
            _ => false,
        }
    }

    /// The edges from `parent` to `child`.
    pub fn edges_between(&self, parent: StmtId, child: StmtId) -> Vec<&DependenceEdge> {
        let (Some(from), Some(to)) = (self.node(parent), self.node(child)) else {
            return Vec::new();
        };
        self.graph
            .edges_connecting(from, to)
            .map(|edge| edge.weight())
            .collect()
    }

    /// The statements whose values `stmt` reads (true dependences only).
    pub fn data_parents(&self, stmt: StmtId) -> Vec<StmtId> {
        self.neighbours(stmt, EdgeDirection::Incoming)
    }

    /// The statements that read the values `stmt` writes (true dependences only).
    pub fn data_children(&self, stmt: StmtId) -> Vec<StmtId> {
        self.neighbours(stmt, EdgeDirection::Outgoing)
    }

    fn neighbours(&self, stmt: StmtId, direction: EdgeDirection) -> Vec<StmtId> {
        let Some(node) = self.node(stmt) else {
            return Vec::new();
        };
        let mut out: Vec<StmtId> = self
            .graph
            .edges_directed(node, direction)
            .filter(|edge| edge.weight().kind == DependenceKind::True)
            .filter_map(|edge| {
                let other = match direction {
                    EdgeDirection::Incoming => edge.source(),
                    EdgeDirection::Outgoing => edge.target(),
                };
                self.stmt(other)
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The graph as text: one line per statement, then one line per edge, in program order.
    pub fn to_text(&self, program: &TypedProgram, function: &Function) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "dependences of {}", function.qualified_name());
        let tree = StatementTree::new(function);
        for &node in &self.nodes {
            if let Some(n) = self.graph.node_weight(node) {
                let label = statement_label(program, function, &tree, n.stmt);
                let _ = writeln!(out, "  {} [{}] {label}", n.stmt, n.device);
            }
        }
        let mut edges: Vec<(StmtId, StmtId, &DependenceEdge)> = (&self.graph)
            .edge_references()
            .filter_map(|e| Some((self.stmt(e.source())?, self.stmt(e.target())?, e.weight())))
            .collect();
        edges.sort_by_key(|(from, to, e)| (*from, *to, e.kind, e.local));
        for (from, to, edge) in edges {
            let _ = write!(
                out,
                "  {from} -> {to} {} {}",
                edge.kind,
                local_name(function, edge.local)
            );
            if edge.sync.is_synchronized() {
                let _ = write!(out, " sync({})", edge.sync);
            }
            if edge.loop_carried {
                let _ = write!(out, " loop-carried");
            }
            out.push('\n');
        }
        out
    }

    /// The graph in Graphviz dot: boxes coloured by device, synchronized edges red, anti
    /// edges dashed, output edges dotted.
    pub fn to_dot(&self, program: &TypedProgram, function: &Function) -> String {
        let tree = StatementTree::new(function);
        let edge_attributes =
            |_, edge: petgraph::stable_graph::EdgeReference<'_, DependenceEdge>| {
                let e = edge.weight();
                let mut attributes = format!(
                    "label = \"{}\"",
                    escape(&format!("{} {}", e.kind, local_name(function, e.local)))
                );
                match e.kind {
                    DependenceKind::True => {}
                    DependenceKind::Anti => attributes.push_str(", style = dashed"),
                    DependenceKind::Output => attributes.push_str(", style = dotted"),
                }
                if e.sync.is_synchronized() {
                    attributes.push_str(", color = red, penwidth = 2");
                }
                attributes
            };
        let node_attributes = |_, (_, node): (NodeIndex, &DependenceNode)| {
            let fill = match node.device {
                Device::Gpu => "palegreen",
                Device::Library => "lightblue",
                Device::Cpu => "lightgrey",
            };
            format!(
                "label = \"{}: {}\", shape = box, style = filled, fillcolor = {fill}",
                node.stmt,
                escape(&statement_label(program, function, &tree, node.stmt))
            )
        };
        let dot = Dot::with_attr_getters(
            &self.graph,
            &[Config::EdgeNoLabel, Config::NodeNoLabel],
            &edge_attributes,
            &node_attributes,
        );
        format!("{dot:?}")
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A one-line summary of statement `stmt` for the printers, `t17 = @geq(t11,literal:date)`
/// (made when printed: most compilations print nothing).
pub(crate) fn statement_label(
    program: &TypedProgram,
    function: &Function,
    tree: &StatementTree<'_>,
    stmt: StmtId,
) -> String {
    tree.stmt(stmt)
        .map(|s| label(program, function, s))
        .unwrap_or_else(|| stmt.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::*;
    use crate::sema::typed::FunctionId;
    use horsec_runtime::builtin::Builtin;
    use horsec_runtime::types::Type;

    fn graph_of(function: crate::sema::typed::Function) -> (TypedProgram, DependenceGraph) {
        let program = program(function);
        let graph = DependenceGraph::build(&program, FunctionId(0), &program.functions[0]).unwrap();
        (program, graph)
    }

    fn kinds(graph: &DependenceGraph, from: usize, to: usize) -> Vec<DependenceKind> {
        let mut kinds: Vec<DependenceKind> = graph
            .edges_between(StmtId(from), StmtId(to))
            .iter()
            .map(|e| e.kind)
            .collect();
        kinds.sort();
        kinds
    }

    fn sync(graph: &DependenceGraph, from: usize, to: usize) -> Synchronization {
        graph
            .edges_between(StmtId(from), StmtId(to))
            .iter()
            .find(|e| e.kind == DependenceKind::True)
            .map(|e| e.sync)
            .expect("a true dependence")
    }

    /// x:f64 (param), m:bool (param): the statements under test read them.
    fn vectors(f: &mut FunctionBuilder) -> (LocalId, LocalId) {
        (f.param("x", Type::F64), f.param("m", Type::Bool))
    }

    #[test]
    fn true_anti_and_output_dependences_on_straight_line_code() {
        let mut f = FunctionBuilder::new("main");
        let a = f.local("a", Type::I64);
        let b = f.local("b", Type::I64);
        f.assign(a, lit_i64(&[1])); // s0
        f.assign(b, call(Builtin::Plus, vec![var(a), lit_i64(&[1])])); // s1 reads a
        f.assign(a, lit_i64(&[2])); // s2 overwrites a
        let (_, graph) = graph_of(f.finish());
        assert_eq!(kinds(&graph, 0, 1), vec![DependenceKind::True]);
        assert_eq!(kinds(&graph, 1, 2), vec![DependenceKind::Anti]);
        assert_eq!(kinds(&graph, 0, 2), vec![DependenceKind::Output]);
        assert!(graph.edges_between(StmtId(0), StmtId(1))[0].sync == Synchronization::default());
    }

    #[test]
    fn loops_give_loop_carried_dependences() {
        // s = 0; while (c) { s = s + 1; }
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let s = f.local("s", Type::I64);
        f.assign(s, lit_i64(&[0])); // s0
        f.while_(var(c), |b| {
            b.assign(s, call(Builtin::Plus, vec![var(s), lit_i64(&[1])])); // s2
        });
        let (_, graph) = graph_of(f.finish());
        // No anti self-dependence: each iteration's read is overwritten by its own write
        // before the next iteration writes again.
        assert_eq!(
            kinds(&graph, 2, 2),
            vec![DependenceKind::True, DependenceKind::Output]
        );
        assert!(graph
            .edges_between(StmtId(2), StmtId(2))
            .iter()
            .all(|e| e.loop_carried));
        assert_eq!(
            kinds(&graph, 0, 2),
            vec![DependenceKind::True, DependenceKind::Output]
        );
        assert!(!graph.edges_between(StmtId(0), StmtId(2))[0].loop_carried);
    }

    #[test]
    fn a_read_overwritten_in_the_next_iteration_is_a_loop_carried_anti_dependence() {
        // while (c) { y = x; x = @plus(y, 1); }
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let x = f.param("x", Type::I64);
        let y = f.local("y", Type::I64);
        f.while_(var(c), |b| {
            // s0
            b.assign(y, copy(x)); // s1
            b.assign(x, call(Builtin::Plus, vec![var(y), lit_i64(&[1])])); // s2
        });
        let (_, graph) = graph_of(f.finish());
        let edge = |from, to, kind| {
            graph
                .edges_between(StmtId(from), StmtId(to))
                .into_iter()
                .find(|e| e.kind == kind)
                .cloned()
                .expect("an edge")
        };
        let anti = edge(1, 2, DependenceKind::Anti);
        assert_eq!((anti.local, anti.loop_carried), (x, false));
        let carried_anti = edge(2, 1, DependenceKind::Anti);
        assert_eq!((carried_anti.local, carried_anti.loop_carried), (y, true));
        let carried_true = edge(2, 1, DependenceKind::True);
        assert_eq!((carried_true.local, carried_true.loop_carried), (x, true));
    }

    #[test]
    fn compress_is_applied_lazily_and_is_not_a_synchronization() {
        let mut f = FunctionBuilder::new("main");
        let (x, m) = vectors(&mut f);
        let y = f.local("y", Type::F64);
        let z = f.local("z", Type::F64);
        f.assign(y, call(Builtin::Compress, vec![var(m), var(x)])); // s0
        f.assign(z, call(Builtin::Mul, vec![var(y), var(y)])); // s1
        let (_, graph) = graph_of(f.finish());
        assert!(!sync(&graph, 0, 1).is_synchronized());
        assert_eq!(graph.device(StmtId(0)), Some(Device::Gpu));
    }

    #[test]
    fn a_reduction_is_a_write_synchronization() {
        let mut f = FunctionBuilder::new("main");
        let (x, _) = vectors(&mut f);
        let total = f.local("total", Type::F64);
        let scaled = f.local("scaled", Type::F64);
        f.assign(total, call(Builtin::Sum, vec![var(x)])); // s0
        f.assign(scaled, call(Builtin::Div, vec![var(x), var(total)])); // s1
        let (_, graph) = graph_of(f.finish());
        assert_eq!(
            sync(&graph, 0, 1),
            Synchronization {
                write: true,
                read: false
            }
        );
    }

    #[test]
    fn a_gather_is_a_read_synchronization_on_the_gathered_vector_only() {
        let mut f = FunctionBuilder::new("main");
        let (x, m) = vectors(&mut f);
        let doubled = f.local("doubled", Type::F64);
        let positions = f.local("positions", Type::I64);
        let gathered = f.local("gathered", Type::F64);
        f.assign(doubled, call(Builtin::Plus, vec![var(x), var(x)])); // s0
        f.assign(positions, call(Builtin::Where, vec![var(m)])); // s1
        f.assign(
            gathered,
            call(Builtin::Index, vec![var(doubled), var(positions)]),
        ); // s2
        let (_, graph) = graph_of(f.finish());
        assert_eq!(
            sync(&graph, 0, 2),
            Synchronization {
                write: false,
                read: true
            }
        );
        assert!(!sync(&graph, 1, 2).is_synchronized());
    }

    #[test]
    fn a_reduction_over_cells_followed_by_raze_writes_in_place() {
        // l = @values(@group(k)); s = @each(@sum, @each_right(@index, x, l)); r = @raze(s)
        let mut f = FunctionBuilder::new("main");
        let (x, _) = vectors(&mut f);
        let cells = f.param("cells", Type::List(Box::new(Type::I64)));
        let parts = f.local("parts", Type::List(Box::new(Type::F64)));
        let sums = f.local("sums", Type::List(Box::new(Type::F64)));
        let razed = f.local("razed", Type::F64);
        let after = f.local("after", Type::F64);
        f.assign(
            parts,
            call_args(
                Builtin::EachRight,
                vec![fun(Builtin::Index), arg(var(x)), arg(var(cells))],
            ),
        ); // s0
        f.assign(
            sums,
            call_args(Builtin::Each, vec![fun(Builtin::Sum), arg(var(parts))]),
        ); // s1
        f.assign(razed, call(Builtin::Raze, vec![var(sums)])); // s2
        f.assign(
            after,
            call(Builtin::Plus, vec![var(razed), lit_f64(&[1.0])]),
        ); // s3
        let (_, graph) = graph_of(f.finish());
        assert!(!sync(&graph, 1, 2).is_synchronized(), "reduction then raze");
        assert!(sync(&graph, 2, 3).write, "raze itself writes a new vector");
        assert!(
            !sync(&graph, 0, 1).read,
            "each(@sum) reads its cells in order"
        );
        assert_eq!(graph.device(StmtId(0)), Some(Device::Gpu));
    }

    #[test]
    fn declarations_and_printing_stay_on_the_host() {
        let mut f = FunctionBuilder::new("main");
        let (x, _) = vectors(&mut f);
        let y = f.local("y", Type::F64);
        f.declare(&[y]); // s0
        f.assign(y, call(Builtin::Neg, vec![var(x)])); // s1
        f.expr(call(Builtin::Print, vec![var(y)])); // s2
        let (_, graph) = graph_of(f.finish());
        assert_eq!(graph.device(StmtId(0)), Some(Device::Cpu));
        assert_eq!(graph.device(StmtId(1)), Some(Device::Gpu));
        assert_eq!(graph.device(StmtId(2)), Some(Device::Cpu));
        assert_eq!(kinds(&graph, 1, 2), vec![DependenceKind::True]);
        // A declaration assigns nothing, so nothing depends on it.
        assert!(graph.data_children(StmtId(0)).is_empty());
    }

    #[test]
    fn library_and_host_statements_are_tagged() {
        let mut f = FunctionBuilder::new("main");
        let (x, _) = vectors(&mut f);
        let t = f.local("t", Type::Table);
        let col = f.local("col", Type::F64);
        let perm = f.local("perm", Type::I64);
        f.assign(t, call(Builtin::LoadTable, vec![lit_sym(&["lineitem"])])); // s0
        f.assign(
            col,
            cast(
                call(Builtin::ColumnValue, vec![var(t), lit_sym(&["l_tax"])]),
                Type::F64,
            ),
        ); // s1
        f.assign(perm, call(Builtin::Order, vec![var(x), lit_bool(&[true])])); // s2
        f.ret(vec![var(perm)]); // s3
        let (program, graph) = graph_of(f.finish());
        assert_eq!(graph.device(StmtId(0)), Some(Device::Cpu));
        assert_eq!(graph.device(StmtId(1)), Some(Device::Cpu));
        assert_eq!(graph.device(StmtId(2)), Some(Device::Library));
        assert_eq!(graph.device(StmtId(3)), Some(Device::Cpu));
        assert_eq!(graph.data_children(StmtId(0)), vec![StmtId(1)]);
        assert_eq!(graph.data_parents(StmtId(3)), vec![StmtId(2)]);

        let text = graph.to_text(&program, &program.functions[0]);
        assert!(
            text.contains("s2 [library] perm = @order(x,1:bool)"),
            "{text}"
        );
        assert!(text.contains("s0 -> s1 true t"), "{text}");
        let dot = graph.to_dot(&program, &program.functions[0]);
        assert!(dot.starts_with("digraph {"), "{dot}");
        assert!(dot.contains("fillcolor = lightblue"), "{dot}");
    }
}
