//! Classic analyses on the data-flow framework: reaching definitions (and from them use-def
//! and def-use chains), reaching uses (for anti dependences) and live variables (backward).

use std::collections::BTreeSet;

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

/// Use-def and def-use chains of one function, in flat sorted arrays indexed by statement
/// and by local: the outliner asks for the definitions of every read of every kernel it
/// tries, and a tree of one set per read cost an allocation each to build and a search
/// through the tree each time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UseDefChains {
    /// Per statement (by id): its range of `reads`.
    read_ranges: Vec<(usize, usize)>,
    /// Each local a statement reads (sorted per statement) and its range of `sites`.
    reads: Vec<(LocalId, usize, usize)>,
    /// The definitions that may supply each read's value, sorted.
    sites: Vec<DefSite>,
    /// Per local (by id): its range of `definitions`.
    definition_ranges: Vec<(usize, usize)>,
    /// Each definition that some statement reads (sorted per local) and its range of
    /// `readers`.
    definitions: Vec<(DefSite, usize, usize)>,
    /// The statements that may read each definition, in id order.
    readers: Vec<StmtId>,
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
        let mut chains = UseDefChains {
            read_ranges: Vec::with_capacity(tree.len()),
            ..UseDefChains::default()
        };
        // One statement's reads and (read, definition) pairs, sorted and grouped.
        let mut stmt_reads: Vec<LocalId> = Vec::new();
        let mut stmt_sites: Vec<(LocalId, DefSite)> = Vec::new();
        // The readers of each definition, bucketed by local.
        let mut readers: Vec<Vec<(DefSite, StmtId)>> = vec![Vec::new(); function.locals.len()];
        // Statements come in id order, so each one's range follows the previous one's.
        for (id, entry) in tree.iter() {
            let start = chains.reads.len();
            if let Some(before) = reaching.before(id) {
                stmt_reads.clear();
                stmt_sites.clear();
                for_each_use(entry.stmt, |used| {
                    // Every read has an entry, also one no definition reaches.
                    stmt_reads.push(used.local);
                    for def in definitions_of(before, used.local) {
                        stmt_sites.push((used.local, def.site));
                        if def.local.0 >= readers.len() {
                            readers.resize(def.local.0 + 1, Vec::new());
                        }
                        readers[def.local.0].push((def.site, id));
                    }
                });
                stmt_reads.sort_unstable();
                stmt_reads.dedup();
                stmt_sites.sort_unstable();
                stmt_sites.dedup();
                let mut pairs = stmt_sites.iter().peekable();
                for &local in &stmt_reads {
                    let first = chains.sites.len();
                    while let Some((_, site)) = pairs.next_if(|(read, _)| *read == local) {
                        chains.sites.push(*site);
                    }
                    chains.reads.push((local, first, chains.sites.len()));
                }
            }
            chains.read_ranges.push((start, chains.reads.len()));
        }
        chains.definition_ranges.reserve(readers.len());
        for of_local in &mut readers {
            // A few reads, in id order per definition already.
            of_local.sort_unstable();
            of_local.dedup();
            let start = chains.definitions.len();
            for group in of_local.chunk_by(|a, b| a.0 == b.0) {
                let first = chains.readers.len();
                chains.readers.extend(group.iter().map(|&(_, id)| id));
                chains
                    .definitions
                    .push((group[0].0, first, chains.readers.len()));
            }
            chains
                .definition_ranges
                .push((start, chains.definitions.len()));
        }
        chains
    }

    /// The definitions that may supply `local` where `stmt` reads it, sorted (empty when
    /// none reaches the read); `None` when `stmt` does not read `local`.
    pub fn defs_of(&self, stmt: StmtId, local: LocalId) -> Option<&[DefSite]> {
        let &(start, end) = self.read_ranges.get(stmt.0)?;
        let reads = self.reads.get(start..end)?;
        let k = reads.binary_search_by_key(&local, |read| read.0).ok()?;
        let (_, first, last) = reads[k];
        self.sites.get(first..last)
    }

    /// The statements that may read `definition`, in id order; `None` when none does.
    pub fn readers_of(&self, definition: &Definition) -> Option<&[StmtId]> {
        let &(start, end) = self.definition_ranges.get(definition.local.0)?;
        let definitions = self.definitions.get(start..end)?;
        let k = definitions
            .binary_search_by_key(&definition.site, |d| d.0)
            .ok()?;
        let (_, first, last) = definitions[k];
        self.readers.get(first..last)
    }

    /// The only definition reaching the read of `local` at `stmt`, if there is exactly one.
    pub fn unique_def(&self, stmt: StmtId, local: LocalId) -> Option<DefSite> {
        match self.defs_of(stmt, local)? {
            [only] => Some(*only),
            _ => None,
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
        assert!(chains.readers_of(&first).is_none());
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
        let defs: Vec<DefSite> = chains.defs_of(StmtId(4), x).unwrap().to_vec();
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
        let expected = [DefSite::Stmt(StmtId(0)), DefSite::Stmt(StmtId(3))];
        assert_eq!(chains.defs_of(StmtId(2), x), Some(&expected[..]));
        assert_eq!(chains.defs_of(StmtId(4), x), Some(&expected[..]));
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
        let expected = [
            DefSite::Stmt(StmtId(0)),
            DefSite::Stmt(StmtId(2)),
            DefSite::Stmt(StmtId(5)),
        ];
        assert_eq!(chains.defs_of(StmtId(7), x), Some(&expected[..]));
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
