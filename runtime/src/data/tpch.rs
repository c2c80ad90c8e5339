//! The TPC-H schema as our programs read it, and the step every TPC-H source ends with:
//! turning raw columns into tables, resolving foreign keys into enumerations.
//!
//! Types follow rNdN's data registry (`src/Runtime/DataRegistry.cpp`) where the conformance
//! programs agree with it, and the programs where they do not: integer keys and counts are
//! `i32`, decimals `f64`, dates `date`, the one-letter flags `char`, every other text `sym`
//! (the programs `check_cast` `c_comment`, `o_comment` and `s_comment` to `sym`, so we load
//! every comment as `sym` rather than rNdN's `str`). A foreign key is an `enum<i32>` into the
//! referenced table's primary key — but only where the programs use it as one: `l_partkey`
//! and `l_suppkey` stay plain `i32`, as in rNdN, because the programs join them by value.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::bail;
use crate::data::columns::KeyIndex;
use crate::data::Database;
use crate::error::{Result, RuntimeError};
use crate::types::Type;
use crate::value::{Enumeration, Table, Value, Vector};

/// How a column is stored once loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    I32,
    F64,
    Date,
    Char,
    Sym,
    /// An `enum<i32>` whose domain is `table.column`, that table's primary key.
    ForeignKey {
        table: &'static str,
        column: &'static str,
    },
}

impl ColumnKind {
    /// The type `@column_value` returns for the column.
    pub fn value_type(&self) -> Type {
        match self {
            ColumnKind::ForeignKey { .. } => Type::Enum(Box::new(Type::I32)),
            other => other.raw_type(),
        }
    }

    /// The type of the column as read from a source, before foreign keys are resolved
    /// (a foreign key is read as its key values).
    pub fn raw_type(&self) -> Type {
        match self {
            ColumnKind::I32 | ColumnKind::ForeignKey { .. } => Type::I32,
            ColumnKind::F64 => Type::F64,
            ColumnKind::Date => Type::Date,
            ColumnKind::Char => Type::Char,
            ColumnKind::Sym => Type::Sym,
        }
    }
}

/// One column of a table schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub kind: ColumnKind,
}

/// One table of a schema, columns in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub name: &'static str,
    /// The single-column primary key that foreign keys resolve through (`partsupp` and
    /// `lineitem` have composite keys that nothing references, so none is indexed).
    pub primary_key: Option<&'static str>,
    pub columns: &'static [ColumnSpec],
}

impl TableSpec {
    pub fn column(&self, name: &str) -> Option<&'static ColumnSpec> {
        self.columns.iter().find(|column| column.name == name)
    }
}

const fn col(name: &'static str, kind: ColumnKind) -> ColumnSpec {
    ColumnSpec { name, kind }
}

const fn fk(name: &'static str, table: &'static str, column: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind: ColumnKind::ForeignKey { table, column },
    }
}

use ColumnKind::{Char, Date, Sym, F64, I32};

/// The eight TPC-H tables, each after the tables it references (the order they load in).
pub static TPCH_SCHEMA: [TableSpec; 8] = [
    TableSpec {
        name: "region",
        primary_key: Some("r_regionkey"),
        columns: &[
            col("r_regionkey", I32),
            col("r_name", Sym),
            col("r_comment", Sym),
        ],
    },
    TableSpec {
        name: "nation",
        primary_key: Some("n_nationkey"),
        columns: &[
            col("n_nationkey", I32),
            col("n_name", Sym),
            fk("n_regionkey", "region", "r_regionkey"),
            col("n_comment", Sym),
        ],
    },
    TableSpec {
        name: "supplier",
        primary_key: Some("s_suppkey"),
        columns: &[
            col("s_suppkey", I32),
            col("s_name", Sym),
            col("s_address", Sym),
            fk("s_nationkey", "nation", "n_nationkey"),
            col("s_phone", Sym),
            col("s_acctbal", F64),
            col("s_comment", Sym),
        ],
    },
    TableSpec {
        name: "customer",
        primary_key: Some("c_custkey"),
        columns: &[
            col("c_custkey", I32),
            col("c_name", Sym),
            col("c_address", Sym),
            fk("c_nationkey", "nation", "n_nationkey"),
            col("c_phone", Sym),
            col("c_acctbal", F64),
            col("c_mktsegment", Sym),
            col("c_comment", Sym),
        ],
    },
    TableSpec {
        name: "part",
        primary_key: Some("p_partkey"),
        columns: &[
            col("p_partkey", I32),
            col("p_name", Sym),
            col("p_mfgr", Sym),
            col("p_brand", Sym),
            col("p_type", Sym),
            col("p_size", I32),
            col("p_container", Sym),
            col("p_retailprice", F64),
            col("p_comment", Sym),
        ],
    },
    TableSpec {
        name: "partsupp",
        primary_key: None,
        columns: &[
            fk("ps_partkey", "part", "p_partkey"),
            fk("ps_suppkey", "supplier", "s_suppkey"),
            col("ps_availqty", I32),
            col("ps_supplycost", F64),
            col("ps_comment", Sym),
        ],
    },
    TableSpec {
        name: "orders",
        primary_key: Some("o_orderkey"),
        columns: &[
            col("o_orderkey", I32),
            fk("o_custkey", "customer", "c_custkey"),
            col("o_orderstatus", Char),
            col("o_totalprice", F64),
            col("o_orderdate", Date),
            col("o_orderpriority", Sym),
            col("o_clerk", Sym),
            col("o_shippriority", I32),
            col("o_comment", Sym),
        ],
    },
    TableSpec {
        name: "lineitem",
        primary_key: None,
        columns: &[
            fk("l_orderkey", "orders", "o_orderkey"),
            col("l_partkey", I32),
            col("l_suppkey", I32),
            col("l_linenumber", I32),
            col("l_quantity", F64),
            col("l_extendedprice", F64),
            col("l_discount", F64),
            col("l_tax", F64),
            col("l_returnflag", Char),
            col("l_linestatus", Char),
            col("l_shipdate", Date),
            col("l_commitdate", Date),
            col("l_receiptdate", Date),
            col("l_shipinstruct", Sym),
            col("l_shipmode", Sym),
            col("l_comment", Sym),
        ],
    },
];

/// The schema of the TPC-H table `name`.
pub fn tpch_table(name: &str) -> Option<&'static TableSpec> {
    TPCH_SCHEMA.iter().find(|table| table.name == name)
}

/// A loaded primary key: the key column (the domain of enums into it) and its index.
struct LoadedKey {
    column: &'static str,
    values: Vector,
    index: KeyIndex,
}

/// Which TPC-H tables to load so that the tables `wanted` can be built: those, and every
/// table their foreign keys reference, transitively (`lineitem` needs `orders`, which needs
/// `customer`, …). One flag per table of [`TPCH_SCHEMA`]; `None` wants them all. A name that
/// is not a TPC-H table is ignored here (the program's `@load_table` reports it).
pub fn tables_needed(wanted: Option<&[String]>) -> Vec<bool> {
    let Some(wanted) = wanted else {
        return vec![true; TPCH_SCHEMA.len()];
    };
    let mut needed: Vec<bool> = TPCH_SCHEMA
        .iter()
        .map(|spec| wanted.iter().any(|w| w == spec.name))
        .collect();
    // Foreign keys point at earlier tables, so one pass from the back closes the set.
    for i in (0..TPCH_SCHEMA.len()).rev() {
        if !needed[i] {
            continue;
        }
        for column in TPCH_SCHEMA[i].columns {
            if let ColumnKind::ForeignKey { table, .. } = column.kind {
                if let Some(j) = TPCH_SCHEMA.iter().position(|spec| spec.name == table) {
                    needed[j] = true;
                }
            }
        }
    }
    needed
}

/// Bytes of `table.tbl` at scale factor `sf`, as dbgen writes it (region and nation do not
/// grow): the basis of the disk and memory checks before generating or loading TPC-H.
pub fn tbl_bytes(table: &str, sf: f64) -> f64 {
    let per_sf = match table {
        "region" => return 389.0,
        "nation" => return 2_224.0,
        "supplier" => 1_409_184.0,
        "customer" => 24_346_144.0,
        "part" => 24_135_125.0,
        "partsupp" => 118_984_616.0,
        "orders" => 171_952_161.0,
        _ => 759_863_287.0,
    };
    per_sf * sf
}

/// Which columns of `spec` to load: those `used` names (every column when `None`), and the
/// primary key, which foreign keys into the table resolve through.
pub fn columns_needed(spec: &TableSpec, used: Option<&[String]>) -> Vec<bool> {
    spec.columns
        .iter()
        .map(|column| {
            used.is_none_or(|used| used.iter().any(|name| name == column.name))
                || spec.primary_key == Some(column.name)
        })
        .collect()
}

/// Builds the TPC-H database from raw columns (`raw[i]` holds the columns of
/// `TPCH_SCHEMA[i]` in schema order, foreign keys as key values, or `None` for a table not
/// loaded), resolving every foreign key through the referenced table's primary-key index.
pub(crate) fn assemble(raw: Vec<Option<Vec<Vector>>>) -> Result<Database> {
    assemble_columns(
        raw.into_iter()
            .map(|table| table.map(|columns| columns.into_iter().map(Some).collect()))
            .collect(),
    )
}

/// [`assemble`] of tables some of whose columns were not loaded (`None`): a table has the
/// columns that were. Every loaded table must have its primary key.
pub(crate) fn assemble_columns(raw: Vec<Option<Vec<Option<Vector>>>>) -> Result<Database> {
    if raw.len() != TPCH_SCHEMA.len() {
        bail!(
            "expected the {} TPC-H tables, got {}",
            TPCH_SCHEMA.len(),
            raw.len()
        );
    }
    let mut keys: HashMap<&'static str, LoadedKey> = HashMap::new();
    let mut database = Database::new();
    for (spec, columns) in TPCH_SCHEMA.iter().zip(raw) {
        let Some(columns) = columns else {
            continue;
        };
        let table = assemble_table(spec, columns, &keys)?;
        if let Some(key_name) = spec.primary_key {
            let values = match table.column(key_name) {
                Some(Value::Vector(values @ Vector::I32(_))) => values.clone(),
                _ => bail!(
                    "primary key `{}.{key_name}` is not an i32 column",
                    spec.name
                ),
            };
            let index = match &values {
                Vector::I32(keys) => KeyIndex::build(keys, spec.name, key_name)?,
                _ => bail!(
                    "primary key `{}.{key_name}` is not an i32 column",
                    spec.name
                ),
            };
            keys.insert(
                spec.name,
                LoadedKey {
                    column: key_name,
                    values,
                    index,
                },
            );
        }
        database.insert(spec.name, table);
    }
    Ok(database)
}

fn assemble_table(
    spec: &TableSpec,
    columns: Vec<Option<Vector>>,
    keys: &HashMap<&'static str, LoadedKey>,
) -> Result<Table> {
    if columns.len() != spec.columns.len() {
        bail!(
            "table `{}` has {} columns, expected {}",
            spec.name,
            columns.len(),
            spec.columns.len()
        );
    }
    let rows = columns.iter().flatten().next().map_or(0, Vector::len);
    let mut names = Vec::with_capacity(columns.len());
    let mut values = Vec::with_capacity(columns.len());
    for (column_spec, column) in spec.columns.iter().zip(columns) {
        let Some(column) = column else {
            continue;
        };
        let name = column_spec.name;
        if column.ty() != column_spec.kind.raw_type() {
            bail!(
                "column `{}.{name}` was read as {}, expected {}",
                spec.name,
                column.ty(),
                column_spec.kind.raw_type()
            );
        }
        if column.len() != rows {
            bail!(
                "column `{}.{name}` has {} rows, the table has {rows}",
                spec.name,
                column.len()
            );
        }
        let value = match (column_spec.kind, column) {
            (ColumnKind::ForeignKey { table, column }, Vector::I32(raw_keys)) => {
                let Some(key) = keys.get(table).filter(|key| key.column == column) else {
                    bail!(
                        "column `{}.{name}` references `{table}.{column}`, which is not a loaded primary key",
                        spec.name
                    );
                };
                // Resolved on every core; a dangling key is then looked for in row order, so
                // the error names the first.
                let resolved = raw_keys
                    .par_iter()
                    .map(|&value| key.index.row_of(value).map(i64::from))
                    .collect::<Option<Vec<i64>>>();
                let Some(index) = resolved else {
                    let dangling = raw_keys
                        .iter()
                        .find(|&&value| key.index.row_of(value).is_none())
                        .copied()
                        .unwrap_or_default();
                    return Err(RuntimeError::new(format!(
                        "table `{}`, column `{name}`: key {dangling} has no row in `{table}.{column}`",
                        spec.name
                    )));
                };
                Value::Enum(Enumeration {
                    domain: key.values.clone(),
                    index: Arc::new(index),
                })
            }
            (_, column) => Value::Vector(column),
        };
        names.push(Arc::from(name));
        values.push(value);
    }
    Ok(Table {
        names,
        columns: values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Strings;

    fn i32s(values: &[i32]) -> Vector {
        Vector::I32(Arc::new(values.to_vec()))
    }

    fn syms(values: &[&str]) -> Vector {
        Vector::Sym(Strings::from_strs(values))
    }

    #[test]
    fn every_foreign_key_points_at_an_earlier_tables_primary_key() {
        for (position, table) in TPCH_SCHEMA.iter().enumerate() {
            if let Some(key) = table.primary_key {
                assert_eq!(table.column(key).map(|c| c.kind), Some(I32), "{key}");
            }
            for column in table.columns {
                if let ColumnKind::ForeignKey {
                    table: target,
                    column: key,
                } = column.kind
                {
                    let target_position = TPCH_SCHEMA
                        .iter()
                        .position(|t| t.name == target)
                        .expect("referenced table is in the schema");
                    assert!(target_position < position, "{} loads too late", target);
                    assert_eq!(TPCH_SCHEMA[target_position].primary_key, Some(key));
                }
            }
        }
    }

    /// The region and nation tables of a tiny database, nation keys given by the caller.
    fn tiny_raw(nation_regions: &[i32]) -> Vec<Option<Vec<Vector>>> {
        let nations = nation_regions.len();
        let nation_keys: Vec<i32> = (0..nations as i32).collect();
        let names: Vec<String> = (0..nations).map(|n| format!("N{n}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut raw = vec![
            vec![i32s(&[0, 1]), syms(&["AFRICA", "ASIA"]), syms(&["c", "c"])],
            vec![
                i32s(&nation_keys),
                syms(&names),
                i32s(nation_regions),
                syms(&names),
            ],
        ];
        // The other tables empty, with columns of the right types.
        for spec in &TPCH_SCHEMA[2..] {
            raw.push(
                spec.columns
                    .iter()
                    .map(|c| match c.kind.raw_type() {
                        Type::F64 => Vector::F64(Arc::new(vec![])),
                        Type::Date => Vector::Date(Arc::new(vec![])),
                        Type::Char => Vector::Char(Arc::new(vec![])),
                        Type::Sym => syms(&[]),
                        _ => i32s(&[]),
                    })
                    .collect(),
            );
        }
        raw.into_iter().map(Some).collect()
    }

    #[test]
    fn foreign_keys_become_enums_into_the_referenced_key() {
        let database = assemble(tiny_raw(&[1, 0, 1])).expect("consistent data");
        let nation = database.table("nation").expect("loaded");
        let Some(Value::Enum(regions)) = nation.column("n_regionkey") else {
            panic!("n_regionkey is not an enum");
        };
        assert_eq!(regions.domain, i32s(&[0, 1]));
        assert_eq!(*regions.index, vec![1, 0, 1]);
    }

    #[test]
    fn a_dangling_foreign_key_is_an_error_naming_it() {
        let error = assemble(tiny_raw(&[1, 7])).unwrap_err();
        assert_eq!(
            error.message,
            "table `nation`, column `n_regionkey`: key 7 has no row in `region.r_regionkey`"
        );
    }

    #[test]
    fn a_column_of_the_wrong_type_is_an_error() {
        let mut raw = tiny_raw(&[0]);
        raw[0].as_mut().expect("region")[0] = Vector::F64(Arc::new(vec![0.0, 1.0]));
        let error = assemble(raw).unwrap_err();
        assert_eq!(
            error.message,
            "column `region.r_regionkey` was read as f64, expected i32"
        );
    }

    /// The conformance directory (env `HORSEC_CONFORMANCE`, default `../shared/conformance`
    /// from the workspace root), or `None` after saying loudly that the test is skipped.
    fn conformance_dir(test: &str) -> Option<std::path::PathBuf> {
        let dir = std::env::var_os("HORSEC_CONFORMANCE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance")
            });
        if dir.is_dir() {
            Some(dir)
        } else {
            eprintln!(
                "SKIPPED {test}: conformance directory `{}` not found (set HORSEC_CONFORMANCE)",
                dir.display()
            );
            None
        }
    }

    /// The type written in a `check_cast`: a basic type or `enum<basic>`.
    fn parse_cast_type(text: &str) -> Option<Type> {
        match text.strip_prefix("enum<").and_then(|t| t.strip_suffix('>')) {
            Some(inner) => Some(Type::Enum(Box::new(Type::from_basic_name(inner)?))),
            None => Type::from_basic_name(text),
        }
    }

    #[test]
    fn schema_agrees_with_every_check_cast_of_the_tpch_programs() {
        let Some(dir) = conformance_dir("schema_agrees_with_every_check_cast") else {
            return;
        };
        let queries = dir.join("tpch/queries");
        let mut files: Vec<_> = std::fs::read_dir(&queries)
            .expect("readable queries directory")
            .map(|entry| entry.expect("directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "hir"))
            .collect();
        files.sort();
        assert!(
            files.len() >= 22,
            "expected the 22 TPC-H programs in {queries:?}"
        );
        let mut checked = 0;
        for file in &files {
            let text = std::fs::read_to_string(file).expect("readable program");
            for (number, line) in text.lines().enumerate() {
                let at = format!("{}:{}", file.display(), number + 1);
                if let Some(rest) = line.split("@load_table(`").nth(1) {
                    let table = rest.split(':').next().unwrap_or_default();
                    assert!(tpch_table(table).is_some(), "{at}: unknown table `{table}`");
                }
                let Some(rest) = line.split("check_cast(@column_value(").nth(1) else {
                    continue;
                };
                let column = rest
                    .split('`')
                    .nth(1)
                    .and_then(|c| c.split(':').next())
                    .unwrap_or_else(|| panic!("{at}: no column name"));
                let cast = rest
                    .split("),")
                    .nth(1)
                    .and_then(|t| t.trim().strip_suffix(");"))
                    .unwrap_or_else(|| panic!("{at}: no cast type"));
                let expected = parse_cast_type(cast.trim())
                    .unwrap_or_else(|| panic!("{at}: cannot read type `{cast}`"));
                let spec = TPCH_SCHEMA
                    .iter()
                    .find_map(|table| table.column(column))
                    .unwrap_or_else(|| panic!("{at}: unknown column `{column}`"));
                assert_eq!(spec.kind.value_type(), expected, "{at}: `{column}`");
                checked += 1;
            }
        }
        assert!(checked >= 250, "only {checked} check_casts found");
    }

    #[test]
    fn a_table_needs_the_tables_its_foreign_keys_reference() {
        let names = |flags: Vec<bool>| -> Vec<&str> {
            TPCH_SCHEMA
                .iter()
                .zip(flags)
                .filter(|(_, needed)| *needed)
                .map(|(spec, _)| spec.name)
                .collect()
        };
        assert_eq!(
            names(tables_needed(Some(&["region".to_string()]))),
            ["region"]
        );
        assert_eq!(
            names(tables_needed(Some(&["customer".to_string()]))),
            ["region", "nation", "customer"]
        );
        assert_eq!(names(tables_needed(Some(&[]))), Vec::<&str>::new());
        assert_eq!(names(tables_needed(None)).len(), TPCH_SCHEMA.len());
    }

    #[test]
    fn tables_left_out_are_not_in_the_database() {
        let mut raw = tiny_raw(&[1, 0]);
        for table in raw.iter_mut().skip(2) {
            *table = None;
        }
        let database = assemble(raw).expect("region and nation alone");
        assert_eq!(database.names().collect::<Vec<_>>(), ["nation", "region"]);
    }
}
