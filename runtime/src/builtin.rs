//! The catalogue of HorseIR builtin functions (the `Builtin` module).
//!
//! One enum shared by the compiler (name resolution, type rules) and the runtime (the CPU
//! implementation of each builtin). Names follow HorsePower's `functions.md` and rNdN's
//! additions (`join_index`, `each_right`, …).

use std::fmt;

macro_rules! builtins {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// A builtin function of the `Builtin` module.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Builtin {
            $($variant),*
        }

        impl Builtin {
            /// Every builtin, in catalogue order.
            pub const ALL: &'static [Builtin] = &[$(Builtin::$variant),*];

            /// The name as written after `@` (without the `Builtin.` qualifier).
            pub fn name(self) -> &'static str {
                match self {
                    $(Builtin::$variant => $name),*
                }
            }

            /// The name with its `@`, as steps and errors name the builtin.
            pub fn step_name(self) -> &'static str {
                match self {
                    $(Builtin::$variant => concat!("@", $name)),*
                }
            }

            /// Looks a builtin up by its source name.
            pub fn from_name(name: &str) -> Option<Builtin> {
                match name {
                    $($name => Some(Builtin::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

builtins! {
    // unary element-wise
    Abs => "abs", Neg => "neg", Ceil => "ceil", Floor => "floor", Round => "round",
    Conj => "conj", Recip => "recip", Signum => "signum", Pi => "pi", Not => "not",
    Log => "log", Exp => "exp", Log2 => "log2", Log10 => "log10", Sqrt => "sqrt",
    Cos => "cos", Sin => "sin", Tan => "tan", Acos => "acos", Asin => "asin", Atan => "atan",
    Cosh => "cosh", Sinh => "sinh", Tanh => "tanh", Acosh => "acosh", Asinh => "asinh",
    Atanh => "atanh",
    // dates and times
    Date => "date", DateYear => "date_year", DateMonth => "date_month", DateDay => "date_day",
    Time => "time", TimeHour => "time_hour", TimeMinute => "time_minute",
    TimeSecond => "time_second", TimeMill => "time_mill",
    DatetimeAdd => "datetime_add", DatetimeSub => "datetime_sub",
    DatetimeDiff => "datetime_diff",
    // binary element-wise
    Lt => "lt", Gt => "gt", Leq => "leq", Geq => "geq", Eq => "eq", Neq => "neq",
    Plus => "plus", Minus => "minus", Mul => "mul", Div => "div", Power => "power",
    Logb => "logb", Mod => "mod", And => "and", Or => "or", Nand => "nand", Nor => "nor",
    Xor => "xor",
    // algebraic, unary
    Unique => "unique", Str => "str", Len => "len", Range => "range", Fact => "fact",
    Rand => "rand", Seed => "seed", Flip => "flip", Reverse => "reverse", Where => "where",
    Group => "group",
    // algebraic, binary
    Append => "append", Like => "like", Compress => "compress", Randk => "randk",
    IndexOf => "index_of", Take => "take", Drop => "drop", Order => "order",
    Member => "member", Vector => "vector",
    // reductions
    Count => "count", Sum => "sum", Avg => "avg", Min => "min", Max => "max",
    // lists
    Raze => "raze", List => "list", Enlist => "enlist", ToList => "tolist",
    Each => "each", EachItem => "each_item", EachLeft => "each_left",
    EachRight => "each_right", Match => "match",
    // database
    Enum => "enum", Dict => "dict", Table => "table", KTable => "ktable", Keys => "keys",
    Values => "values", Meta => "meta", ColumnValue => "column_value",
    LoadTable => "load_table", Fetch => "fetch", JoinIndex => "join_index",
    // indexing
    Index => "index", IndexA => "index_a",
    // strings
    SubString => "sub_string",
    // other
    LoadCsv => "load_csv", Print => "print", Format => "format",
    // graphs
    Csr => "csr", ShortestPathLength => "shortest_path_length", Reachable => "reachable",
    ReachIndex => "reach_index",
    // relations (Datalog): `list<i64>` of equally long columns, tuples sorted
    TupleUnique => "tuple_unique", TupleDiff => "tuple_diff", TupleMerge => "tuple_merge",
    SortedJoin => "sorted_join", JoinUnique => "join_unique", MultiwayJoin => "multiway_join",
    MultiwayCount => "multiway_count",
    // fused grouping: `@group` and per-group reductions in one pass (the outliner's rewrite
    // of `@raze(@each(@sum, @each_right(@index, x, @values(@group(k)))))` and kin)
    GroupAggregate => "group_aggregate",
}

impl Builtin {
    /// One input, one output element per input element: arithmetic, math, logic and the
    /// parts of dates and times.
    pub fn is_unary_elementwise(self) -> bool {
        use Builtin as B;
        matches!(
            self,
            B::Abs
                | B::Neg
                | B::Ceil
                | B::Floor
                | B::Round
                | B::Conj
                | B::Recip
                | B::Signum
                | B::Pi
                | B::Not
                | B::Log
                | B::Exp
                | B::Log2
                | B::Log10
                | B::Sqrt
                | B::Cos
                | B::Sin
                | B::Tan
                | B::Acos
                | B::Asin
                | B::Atan
                | B::Cosh
                | B::Sinh
                | B::Tanh
                | B::Acosh
                | B::Asinh
                | B::Atanh
                | B::Fact
                | B::Date
                | B::DateYear
                | B::DateMonth
                | B::DateDay
                | B::Time
                | B::TimeHour
                | B::TimeMinute
                | B::TimeSecond
                | B::TimeMill
        )
    }

    /// Element-wise with broadcasting: the result has one element per position of its (one
    /// or two) data arguments, a length-1 argument standing for every position. The binary
    /// element-wise builtins, the date arithmetic (whose third argument of `@datetime_add`
    /// and `@datetime_sub` is a unit, not data) and the unary element-wise builtins. The one
    /// list that the shape analysis and the code generator read.
    pub fn is_elementwise(self) -> bool {
        use Builtin as B;
        self.is_unary_elementwise()
            || self.is_binary_elementwise()
            || matches!(self, B::DatetimeAdd | B::DatetimeSub | B::DatetimeDiff)
    }

    /// Two inputs of equal length (or one of length 1, broadcast), one output element per
    /// pair: comparisons, arithmetic and logic.
    pub fn is_binary_elementwise(self) -> bool {
        use Builtin as B;
        matches!(
            self,
            B::Lt
                | B::Gt
                | B::Leq
                | B::Geq
                | B::Eq
                | B::Neq
                | B::Plus
                | B::Minus
                | B::Mul
                | B::Div
                | B::Power
                | B::Logb
                | B::Mod
                | B::And
                | B::Or
                | B::Nand
                | B::Nor
                | B::Xor
        )
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(b));
            assert_eq!(b.step_name(), format!("@{}", b.name()));
        }
        assert_eq!(Builtin::from_name("join_index"), Some(Builtin::JoinIndex));
        assert_eq!(Builtin::from_name("no_such_builtin"), None);
    }

    #[test]
    fn binary_element_wise_builtins_are_the_comparisons_arithmetic_and_logic() {
        assert!(Builtin::Plus.is_binary_elementwise());
        assert!(Builtin::Leq.is_binary_elementwise());
        assert!(Builtin::Xor.is_binary_elementwise());
        assert!(!Builtin::Sqrt.is_binary_elementwise());
        assert!(!Builtin::Compress.is_binary_elementwise());
    }

    #[test]
    fn element_wise_builtins_are_the_unary_and_binary_ones_and_date_arithmetic() {
        assert!(Builtin::Log.is_elementwise());
        assert!(Builtin::Cos.is_elementwise());
        assert!(Builtin::Mod.is_elementwise());
        assert!(Builtin::DatetimeAdd.is_elementwise());
        assert!(Builtin::TimeHour.is_unary_elementwise());
        assert!(!Builtin::Reverse.is_elementwise());
        assert!(!Builtin::Index.is_elementwise());
        assert!(!Builtin::Sum.is_elementwise());
    }
}
