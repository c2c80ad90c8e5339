//! Classic analyses on the data-flow framework: reaching definitions (and from them use-def
//! and def-use chains), reaching uses (for anti dependences) and live variables (backward).

use std::collections::{BTreeMap, BTreeSet};

use crate::sema::typed::{Function, LocalId, Stmt};

use super::dataflow::{solve, DataFlowAnalysis, Direction, FlowResults, JoinPoint, NoFixedPoint};
use super::statements::{defined_locals, definitions, for_each_use, uses, StatementTree, StmtId};

/// Where a value of a local comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DefSite {
    /// The value the function received for a parameter.
    Entry,
    /// An assignment statement.
    Stmt(StmtId),
}

/// One definition: `local` assigned at `site`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Definition {
    pub local: LocalId,
    pub site: DefSite,
}

/// A may-set of items per local, indexed by [`LocalId`]: the facts of reaching definitions
/// and reaching uses. Dense rather than one ordered set of pairs because the transfer of a
/// statement touches only the locals it reads and writes: overwriting a local clears its
/// list, a read appends to one, neither searches a tree nor allocates a node.
#[derive(Clone, Debug, PartialEq)]
pub struct PerLocal<T> {
    /// For each local, its items sorted and without duplicates (so equal sets compare equal).
    items: Vec<Vec<T>>,
}

impl<T: Copy + Ord> PerLocal<T> {
    /// The empty set for a function with `locals` locals.
    fn new(locals: usize) -> PerLocal<T> {
        PerLocal {
            items: vec![Vec::new(); locals],
        }
    }

    /// The items of `local` (none for an id the function does not have).
    pub fn of(&self, local: LocalId) -> &[T] {
        self.items.get(local.0).map_or(&[], Vec::as_slice)
    }

    fn slot(&mut self, local: LocalId) -> &mut Vec<T> {
        if local.0 >= self.items.len() {
            // Ids come from the function's locals; grow rather than panic on a bad one.
            self.items.resize(local.0 + 1, Vec::new());
        }
        &mut self.items[local.0]
    }

    fn insert(&mut self, local: LocalId, item: T) {
        let items = self.slot(local);
        // Items mostly arrive in increasing order (statement ids): the search ends at once.
        if items.last().is_none_or(|last| *last < item) {
            items.push(item);
        } else if let Err(at) = items.binary_search(&item) {
            items.insert(at, item);
        }
    }

    /// Makes `item` the only item of `local`.
    fn replace(&mut self, local: LocalId, item: T) {
        let items = self.slot(local);
        items.clear();
        items.push(item);
    }

    fn clear(&mut self, local: LocalId) {
        if let Some(items) = self.items.get_mut(local.0) {
            items.clear();
        }
    }

    fn union_with(&mut self, other: &PerLocal<T>) {
        for (local, items) in other.items.iter().enumerate() {
            for &item in items {
                self.insert(LocalId(local), item);
            }
        }
    }
}

/// The definitions of `local` in a record of reaching definitions.
pub(super) fn definitions_of(
    record: &[Definition],
    local: LocalId,
) -> impl Iterator<Item = Definition> + '_ {
    record.iter().filter(move |def| def.local == local).copied()
}

/// The reads of `local` in a record of reaching uses.
pub(super) fn reads_of(
    record: &[(LocalId, StmtId)],
    local: LocalId,
) -> impl Iterator<Item = (LocalId, StmtId)> + '_ {
    record
        .iter()
        .filter(move |(read, _)| *read == local)
        .copied()
}

/// What [`solve`] gives for [`ReachingDefinitions`].
pub type ReachingDefinitionResults = FlowResults<PerLocal<DefSite>, Vec<Definition>>;

/// What [`solve`] gives for [`ReachingUses`].
pub type ReachingUseResults = FlowResults<PerLocal<StmtId>, Vec<(LocalId, StmtId)>>;

/// Forward, may-analysis: the definitions that reach each point without being overwritten.
pub struct ReachingDefinitions {
    params: Vec<LocalId>,
    locals: usize,
}

impl ReachingDefinitions {
    pub fn new(function: &Function) -> ReachingDefinitions {
        ReachingDefinitions {
            params: function.params.clone(),
            locals: function.locals.len(),
        }
    }
}

impl DataFlowAnalysis for ReachingDefinitions {
    /// Per local, where its reaching values were assigned.
    type Fact = PerLocal<DefSite>;
    /// The definitions reaching the statement of the locals it reads or writes, sorted.
    type Record = Vec<Definition>;

    fn direction(&self) -> Direction {
        Direction::Forward
    }

    fn boundary(&mut self) -> Self::Fact {
        let mut fact = PerLocal::new(self.locals);
        for &local in &self.params {
            fact.insert(local, DefSite::Entry);
        }
        fact
    }

    fn unreachable(&mut self) -> Self::Fact {
        PerLocal::new(self.locals)
    }

    fn unrecorded(&mut self) -> Self::Record {
        Vec::new()
    }

    fn join(&mut self, _point: JoinPoint, into: &mut Self::Fact, other: &Self::Fact) {
        into.union_with(other);
    }

    fn transfer(&mut self, id: StmtId, stmt: &Stmt, fact: &Self::Fact) -> Self::Fact {
        let mut out = fact.clone();
        self.transfer_in_place(id, stmt, &mut out);
        out
    }

    fn transfer_in_place(&mut self, id: StmtId, stmt: &Stmt, fact: &mut Self::Fact) {
        for local in defined_locals(stmt) {
            fact.replace(local, DefSite::Stmt(id));
        }
    }

    /// Users (use-def chains, dependences) read only before statements.
    fn records_after(&self) -> bool {
        false
    }

    /// Only the definitions of the locals the statement reads or writes: all that use-def
    /// chains and true and output dependences ask of the point before a statement.
    fn record_before(&self, stmt: &Stmt, fact: &Self::Fact, into: &mut Self::Record) {
        into.clear();
        let mut add = |local: LocalId| {
            into.extend(
                fact.of(local)
                    .iter()
                    .map(|&site| Definition { local, site }),
            );
        };
        for_each_use(stmt, |read| add(read.local));
        defined_locals(stmt).for_each(add);
        // A local read twice, or read and written, was added twice.
        into.sort_unstable();
        into.dedup();
    }
}

/// Forward, may-analysis: the reads `(local, statement)` that reach each point without the
/// local being overwritten since. A write of `x` after a reaching read of `x` is an anti
/// (write-after-read) dependence.
pub struct ReachingUses {
    locals: usize,
}

impl ReachingUses {
    pub fn new(function: &Function) -> ReachingUses {
        ReachingUses {
            locals: function.locals.len(),
        }
    }
}

impl DataFlowAnalysis for ReachingUses {
    /// Per local, the statements whose reads of it reach.
    type Fact = PerLocal<StmtId>;
    /// The reaching reads of the locals the statement writes, sorted.
    type Record = Vec<(LocalId, StmtId)>;

    fn direction(&self) -> Direction {
        Direction::Forward
    }

    fn boundary(&mut self) -> Self::Fact {
        PerLocal::new(self.locals)
    }

    fn unreachable(&mut self) -> Self::Fact {
        PerLocal::new(self.locals)
    }

    fn unrecorded(&mut self) -> Self::Record {
        Vec::new()
    }

    fn join(&mut self, _point: JoinPoint, into: &mut Self::Fact, other: &Self::Fact) {
        into.union_with(other);
    }

    fn transfer(&mut self, id: StmtId, stmt: &Stmt, fact: &Self::Fact) -> Self::Fact {
        let mut out = fact.clone();
        self.transfer_in_place(id, stmt, &mut out);
        out
    }

    fn transfer_in_place(&mut self, id: StmtId, stmt: &Stmt, fact: &mut Self::Fact) {
        // The statement reads its operands before it writes its targets, so its own reads of
        // a local it also writes are overwritten at once.
        for_each_use(stmt, |read| fact.insert(read.local, id));
        for local in defined_locals(stmt) {
            fact.clear(local);
        }
    }

    /// Users (anti dependences) read only before statements.
    fn records_after(&self) -> bool {
        false
    }

    /// Only the reads of the locals the statement writes: all that anti dependences ask.
    fn record_before(&self, stmt: &Stmt, fact: &Self::Fact, into: &mut Self::Record) {
        into.clear();
        for local in defined_locals(stmt) {
            into.extend(fact.of(local).iter().map(|&reader| (local, reader)));
        }
        // A statement writing one local twice added its reads twice.
        into.sort_unstable();
        into.dedup();
    }
}

/// Backward, may-analysis: the locals whose current value may still be read.
pub struct LiveVariables;

impl DataFlowAnalysis for LiveVariables {
    type Fact = BTreeSet<LocalId>;
    type Record = BTreeSet<LocalId>;

    fn direction(&self) -> Direction {
        Direction::Backward
    }

    fn boundary(&mut self) -> Self::Fact {
        BTreeSet::new()
    }

    fn unreachable(&mut self) -> Self::Fact {
        BTreeSet::new()
    }

    fn unrecorded(&mut self) -> Self::Record {
        BTreeSet::new()
    }

    fn record_before(&self, _stmt: &Stmt, fact: &Self::Fact, into: &mut Self::Record) {
        into.clone_from(fact);
    }

    fn join(&mut self, _point: JoinPoint, into: &mut Self::Fact, other: &Self::Fact) {
        into.extend(other.iter().copied());
    }

    fn transfer(&mut self, _id: StmtId, stmt: &Stmt, fact: &Self::Fact) -> Self::Fact {
        let mut live = fact.clone();
        for local in definitions(stmt) {
            live.remove(&local);
        }
        live.extend(uses(stmt).into_iter().map(|u| u.local));
        live
    }
}

/// Use-def and def-use chains of one function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UseDefChains {
    /// For each statement and each local it reads: the definitions that may supply the value.
    pub use_defs: BTreeMap<(StmtId, LocalId), BTreeSet<DefSite>>,
    /// For each definition: the statements that may read it.
    pub def_uses: BTreeMap<Definition, BTreeSet<StmtId>>,
}

impl UseDefChains {
    /// Builds the chains from reaching definitions.
    pub fn build(function: &Function) -> Result<UseDefChains, NoFixedPoint> {
        let reaching = solve(&mut ReachingDefinitions::new(function), function)?;
        Ok(UseDefChains::from_reaching(function, &reaching))
    }

    pub fn from_reaching(
        function: &Function,
        reaching: &ReachingDefinitionResults,
    ) -> UseDefChains {
        let tree = StatementTree::new(function);
        // Pairs are collected, sorted and grouped, then each map is built from its sorted
        // keys in one pass: cheaper than one tree insertion per pair.
        let mut reads: Vec<(StmtId, LocalId)> = Vec::new();
        let mut read_sites: Vec<((StmtId, LocalId), DefSite)> = Vec::new();
        // The readers of each definition, bucketed by local: definitions order by local
        // first, so the buckets in turn are the definitions in order.
        let mut readers: Vec<Vec<(DefSite, StmtId)>> = vec![Vec::new(); function.locals.len()];
        for (id, entry) in tree.iter() {
            let Some(before) = reaching.before(id) else {
                continue;
            };
            let (reads_start, sites_start) = (reads.len(), read_sites.len());
            for_each_use(entry.stmt, |used| {
                // Every read has an entry, also one no definition reaches.
                reads.push((id, used.local));
                for def in definitions_of(before, used.local) {
                    read_sites.push(((id, used.local), def.site));
                    if def.local.0 >= readers.len() {
                        readers.resize(def.local.0 + 1, Vec::new());
                    }
                    readers[def.local.0].push((def.site, id));
                }
            });
            // Statements come in id order, so sorting each one's few reads sorts them all.
            reads[reads_start..].sort_unstable();
            read_sites[sites_start..].sort_unstable();
        }
        reads.dedup();
        read_sites.dedup();

        let mut sites = read_sites.into_iter().peekable();
        let use_defs = reads
            .into_iter()
            .map(|read| {
                let mut of_read = BTreeSet::new();
                while let Some((_, site)) = sites.next_if(|(key, _)| *key == read) {
                    of_read.insert(site);
                }
                (read, of_read)
            })
            .collect();
        let mut def_uses = Vec::new();
        for (local, of_local) in readers.iter_mut().enumerate() {
            // A few reads, in id order per definition already.
            of_local.sort_unstable();
            of_local.dedup();
            for group in of_local.chunk_by(|a, b| a.0 == b.0) {
                let definition = Definition {
                    local: LocalId(local),
                    site: group[0].0,
                };
                def_uses.push((definition, group.iter().map(|&(_, id)| id).collect()));
            }
        }
        let def_uses = def_uses.into_iter().collect();
        UseDefChains { use_defs, def_uses }
    }

    /// The definitions that may supply `local` where `stmt` reads it.
    pub fn defs_of(&self, stmt: StmtId, local: LocalId) -> Option<&BTreeSet<DefSite>> {
        self.use_defs.get(&(stmt, local))
    }

    /// The only definition reaching the read of `local` at `stmt`, if there is exactly one.
    pub fn unique_def(&self, stmt: StmtId, local: LocalId) -> Option<DefSite> {
        let defs = self.defs_of(stmt, local)?;
        if defs.len() == 1 {
            defs.iter().next().copied()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::*;
    use horsec_runtime::builtin::Builtin;
    use horsec_runtime::types::Type;

    #[test]
    fn a_use_after_straight_line_code_sees_only_the_last_assignment() {
        let mut f = FunctionBuilder::new("main");
        let x = f.local("x", Type::I64);
        let y = f.local("y", Type::I64);
        f.assign(x, lit_i64(&[1])); // s0
        f.assign(x, lit_i64(&[2])); // s1
        f.assign(y, call(Builtin::Plus, vec![var(x), lit_i64(&[1])])); // s2
        let function = f.finish();
        let chains = UseDefChains::build(&function).unwrap();
        assert_eq!(
            chains.unique_def(StmtId(2), x),
            Some(DefSite::Stmt(StmtId(1)))
        );
        let first = Definition {
            local: x,
            site: DefSite::Stmt(StmtId(0)),
        };
        assert!(!chains.def_uses.contains_key(&first));
    }

    #[test]
    fn both_branches_of_an_if_reach_the_merge() {
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let x = f.local("x", Type::I64);
        let y = f.local("y", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
                                    // s1 if, s2 then, s3 else
        f.if_else(
            var(c),
            |b| b.assign(x, lit_i64(&[1])),
            |b| b.assign(x, lit_i64(&[2])),
        );
        f.assign(y, copy(x)); // s4
        let function = f.finish();
        let chains = UseDefChains::build(&function).unwrap();
        let defs: Vec<DefSite> = chains
            .defs_of(StmtId(4), x)
            .unwrap()
            .iter()
            .copied()
            .collect();
        assert_eq!(
            defs,
            vec![DefSite::Stmt(StmtId(2)), DefSite::Stmt(StmtId(3))]
        );
        assert_eq!(chains.unique_def(StmtId(1), c), Some(DefSite::Entry));
    }

    #[test]
    fn an_if_without_else_lets_the_earlier_definition_through() {
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let x = f.local("x", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
        f.if_(var(c), |b| b.assign(x, lit_i64(&[1])));
        f.ret(vec![var(x)]); // s3
        let function = f.finish();
        let chains = UseDefChains::build(&function).unwrap();
        assert_eq!(chains.defs_of(StmtId(3), x).unwrap().len(), 2);
    }

    #[test]
    fn a_definition_at_the_end_of_a_loop_body_reaches_its_head_and_top() {
        // x = 0; while (c) { y = x + 1; x = y; } return x;
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let x = f.local("x", Type::I64);
        let y = f.local("y", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
        f.while_(var(c), |b| {
            // s1
            b.assign(y, call(Builtin::Plus, vec![var(x), lit_i64(&[1])])); // s2
            b.assign(x, copy(y)); // s3
        });
        f.ret(vec![var(x)]); // s4
        let function = f.finish();
        let chains = UseDefChains::build(&function).unwrap();
        let expected: BTreeSet<DefSite> =
            [DefSite::Stmt(StmtId(0)), DefSite::Stmt(StmtId(3))].into();
        assert_eq!(chains.defs_of(StmtId(2), x), Some(&expected));
        assert_eq!(chains.defs_of(StmtId(4), x), Some(&expected));
    }

    #[test]
    fn break_carries_its_definitions_to_the_loop_exit_and_continue_to_the_head() {
        // x = 0; while (c) { x = 1; if (c) { break; } x = 2; continue; } return x;
        let mut f = FunctionBuilder::new("main");
        let c = f.param("c", Type::Bool);
        let x = f.local("x", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
        f.while_(var(c), |b| {
            // s1
            b.assign(x, lit_i64(&[1])); // s2
            b.if_(var(c), |t| t.brk()); // s3, s4
            b.assign(x, lit_i64(&[2])); // s5
            b.cont(); // s6
        });
        f.ret(vec![var(x)]); // s7
        let function = f.finish();
        let chains = UseDefChains::build(&function).unwrap();
        // Exit through the condition: x from before the loop or from the continue path (s5);
        // exit through break: x = 1 (s2).
        let expected: BTreeSet<DefSite> = [
            DefSite::Stmt(StmtId(0)),
            DefSite::Stmt(StmtId(2)),
            DefSite::Stmt(StmtId(5)),
        ]
        .into();
        assert_eq!(chains.defs_of(StmtId(7), x), Some(&expected));
    }

    #[test]
    fn live_variables_flow_backward_through_loops() {
        // x = 0; n = 5; repeat (n) { x = x + 1; } return x;
        let mut f = FunctionBuilder::new("main");
        let x = f.local("x", Type::I64);
        let n = f.local("n", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
        f.assign(n, lit_i64(&[5])); // s1
        f.repeat(var(n), |b| {
            // s2
            b.assign(x, call(Builtin::Plus, vec![var(x), lit_i64(&[1])])); // s3
        });
        f.ret(vec![var(x)]); // s4
        let function = f.finish();
        let live = solve(&mut LiveVariables, &function).unwrap();
        assert_eq!(live.before[1], BTreeSet::from([x]));
        assert_eq!(live.before[2], BTreeSet::from([x, n]));
        // x is live around the body because the next iteration (or the return) reads it.
        assert_eq!(live.after[3], BTreeSet::from([x]));
        assert_eq!(live.before[0], BTreeSet::new());
    }

    #[test]
    fn nothing_is_live_after_a_return() {
        let mut f = FunctionBuilder::new("main");
        let x = f.local("x", Type::I64);
        let y = f.local("y", Type::I64);
        f.assign(x, lit_i64(&[0])); // s0
        f.assign(y, lit_i64(&[1])); // s1
        f.ret(vec![var(x)]); // s2
        let function = f.finish();
        let live = solve(&mut LiveVariables, &function).unwrap();
        assert_eq!(live.after[1], BTreeSet::from([x]));
        assert!(!live.after[1].contains(&y));
    }
}
