//! Database builtins: `@load_table @column_value @fetch @keys @values @enum @dict @table
//! @ktable @meta @flip`.

use std::sync::Arc;

use super::keys::paired_keys;
use super::{Args, Env};
use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::value::{Dict, Enumeration, List, Strings, Table, Value, Vector};

/// Dispatches a database builtin.
pub(crate) fn call(b: Builtin, args: &Args<'_, '_>, env: &mut dyn Env) -> Result<Value> {
    match b {
        Builtin::LoadTable => {
            args.exactly(1)?;
            let names = args.vector(0)?;
            let name = symbol(&names, "the table name")?;
            Ok(Value::Table(env.load_table(name)?))
        }
        Builtin::ColumnValue => {
            args.exactly(2)?;
            column_value(
                args.value(0)?,
                symbol(&*args.vector(1)?, "the column name")?,
            )
        }
        Builtin::Fetch => {
            args.exactly(1)?;
            match args.value(0)? {
                e @ Value::Enum(_) => Ok(Value::Vector(super::as_vector(e)?.into_owned())),
                other => bail!("expected an enum, got a {}", other.ty()),
            }
        }
        Builtin::Keys => {
            args.exactly(1)?;
            Ok(match args.value(0)? {
                Value::Dict(d) => (*d.keys).clone(),
                Value::Enum(e) => Value::Vector(e.domain.clone()),
                Value::Table(t) => names_of(t),
                Value::KTable(k, _) => Value::Table(k.clone()),
                other => bail!("a {} has no keys", other.ty()),
            })
        }
        Builtin::Values => {
            args.exactly(1)?;
            Ok(match args.value(0)? {
                Value::Dict(d) => (*d.values).clone(),
                Value::Enum(e) => Value::Vector(Vector::I64(e.index.clone())),
                Value::Table(t) => Value::List(List::from_cells(t.columns.clone())),
                Value::KTable(_, v) => Value::Table(v.clone()),
                other => bail!("a {} has no values", other.ty()),
            })
        }
        Builtin::Enum => {
            args.exactly(2)?;
            make_enum(&*args.vector(0)?, &*args.vector(1)?)
        }
        Builtin::Dict => {
            args.exactly(2)?;
            let (keys, values) = (args.value(0)?, args.value(1)?);
            if keys.len() != values.len() {
                bail!("{} keys for {} values", keys.len(), values.len());
            }
            Ok(Value::Dict(Dict {
                keys: Box::new(keys.clone()),
                values: Box::new(values.clone()),
            }))
        }
        Builtin::Table => {
            args.exactly(2)?;
            let names = args.vector(0)?;
            let columns = match args.value(1)? {
                Value::List(l) => l.cells(),
                other => vec![other.clone()],
            };
            Ok(Value::Table(Arc::new(make_table(&names, columns)?)))
        }
        Builtin::KTable => {
            args.exactly(2)?;
            match (args.value(0)?, args.value(1)?) {
                (Value::Table(k), Value::Table(v)) if k.rows() == v.rows() => {
                    Ok(Value::KTable(k.clone(), v.clone()))
                }
                (Value::Table(k), Value::Table(v)) => {
                    bail!("key table has {} rows, value table {}", k.rows(), v.rows())
                }
                (k, v) => bail!("expected two tables, got a {} and a {}", k.ty(), v.ty()),
            }
        }
        Builtin::Meta => {
            args.exactly(1)?;
            let tables: Vec<&Arc<Table>> = match args.value(0)? {
                Value::Table(t) => vec![t],
                Value::KTable(k, v) => vec![k, v],
                other => bail!("expected a table, got a {}", other.ty()),
            };
            let names: Vec<&str> = tables
                .iter()
                .flat_map(|t| t.names.iter().map(|n| n.as_ref()))
                .collect();
            let types: Vec<String> = tables
                .iter()
                .flat_map(|t| t.columns.iter().map(|c| c.ty().to_string()))
                .collect();
            let keys = Table {
                names: vec![Arc::from("c")],
                columns: vec![Value::Vector(Vector::Sym(Strings::from_strs(&names)))],
            };
            let values = Table {
                names: vec![Arc::from("t")],
                columns: vec![Value::Vector(Vector::Sym(Strings::from_strs(&types)))],
            };
            Ok(Value::KTable(Arc::new(keys), Arc::new(values)))
        }
        Builtin::Flip => {
            args.exactly(1)?;
            match args.value(0)? {
                Value::Table(t) => Ok(Value::Dict(Dict {
                    keys: Box::new(names_of(t)),
                    values: Box::new(Value::List(List::from_cells(t.columns.clone()))),
                })),
                Value::Dict(d) => {
                    let names = super::as_vector(&d.keys)?;
                    let columns = match &*d.values {
                        Value::List(l) => l.cells(),
                        other => bail!("a dict of {} values is not a table", other.ty()),
                    };
                    Ok(Value::Table(Arc::new(make_table(&names, columns)?)))
                }
                other => bail!("cannot flip a {}", other.ty()),
            }
        }
        other => bail!("@{other} is not a database builtin"),
    }
}

/// The one string of a length-1 `sym`/`str` vector.
fn symbol<'v>(v: &'v Vector, what: &str) -> Result<&'v str> {
    match v.as_strings() {
        Some(s) if s.len() == 1 => Ok(s.get(0)),
        _ => bail!(
            "{what} must be one symbol, got {} element(s) of {}",
            v.len(),
            v.ty()
        ),
    }
}

fn names_of(t: &Table) -> Value {
    let names: Vec<&str> = t.names.iter().map(|n| n.as_ref()).collect();
    Value::Vector(Vector::Sym(Strings::from_strs(&names)))
}

/// `@column_value(t, name)` on a table or keyed table.
fn column_value(t: &Value, name: &str) -> Result<Value> {
    // No vector of the tables: this runs for every column a query reads, on every run.
    let (first, second) = match t {
        Value::Table(t) => (t, None),
        Value::KTable(k, v) => (k, Some(v)),
        other => bail!("expected a table, got a {}", other.ty()),
    };
    let tables = || std::iter::once(first).chain(second);
    if let Some(column) = tables().find_map(|t| t.column(name)) {
        return Ok(column.clone());
    }
    let names: Vec<&str> = tables()
        .flat_map(|t| t.names.iter().map(|n| n.as_ref()))
        .collect();
    bail!(
        "no column `{name}` in the table (its columns: {})",
        names.join(", ")
    )
}

/// `@table(names, columns)`: named columns of equal length.
fn make_table(names: &Vector, columns: Vec<Value>) -> Result<Table> {
    let Some(names) = names.as_strings() else {
        bail!("column names must be sym, got {}", names.ty());
    };
    if names.len() != columns.len() {
        bail!("{} names for {} columns", names.len(), columns.len());
    }
    if let Some(first) = columns.first() {
        if let Some((i, c)) = columns
            .iter()
            .enumerate()
            .find(|(_, c)| c.len() != first.len())
        {
            bail!(
                "column `{}` has {} rows, column `{}` has {}",
                names.get(i),
                c.len(),
                names.get(0),
                first.len()
            );
        }
    }
    Ok(Table {
        names: names.shared().collect(),
        columns,
    })
}

/// `@enum(keys, values)`: each value as a position into the key column.
fn make_enum(domain: &Vector, values: &Vector) -> Result<Value> {
    let (kd, kv) = paired_keys(domain, values)?;
    let mut position = rustc_hash::FxHashMap::default();
    for (i, &k) in kd.iter().enumerate().rev() {
        position.insert(k, i as i64);
    }
    let index = kv
        .iter()
        .enumerate()
        .map(|(row, k)| {
            position.get(k).copied().ok_or_else(|| {
                RuntimeError::new(format!("value at row {row} is not in the key column"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Enum(Enumeration {
        domain: domain.clone(),
        index: Arc::new(index),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{call_builtin, ArgValue};
    use crate::builtin::Builtin as B;
    use crate::value::{Enumeration, Table, Value, Vector};
    use std::sync::Arc;

    fn nation() -> Arc<Table> {
        let region = Vector::I32(Arc::new(vec![0, 1]));
        Arc::new(Table {
            names: vec![Arc::from("n_name"), Arc::from("n_regionkey")],
            columns: vec![
                syms(&["FRANCE", "CHINA", "JAPAN"]),
                Value::Enum(Enumeration {
                    domain: region,
                    index: Arc::new(vec![0, 1, 1]),
                }),
            ],
        })
    }

    fn call(env: &mut TestEnv, b: B, args: &[Value]) -> crate::error::Result<Value> {
        let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
        call_builtin(b, &refs, env)
    }

    #[test]
    fn loads_tables_and_reads_columns_and_enums() {
        let mut env = TestEnv {
            tables: vec![("nation".into(), nation())],
            ..TestEnv::default()
        };
        let t = call(&mut env, B::LoadTable, &[syms(&["nation"])]).unwrap();
        let names = call(&mut env, B::ColumnValue, &[t.clone(), syms(&["n_name"])]).unwrap();
        assert_eq!(texts(&names), ["FRANCE", "CHINA", "JAPAN"]);
        let fk = call(
            &mut env,
            B::ColumnValue,
            &[t.clone(), syms(&["n_regionkey"])],
        )
        .unwrap();
        assert_eq!(
            call(&mut env, B::Fetch, std::slice::from_ref(&fk)).unwrap(),
            i32s(&[0, 1, 1])
        );
        assert_eq!(
            call(&mut env, B::Values, std::slice::from_ref(&fk)).unwrap(),
            i64s(&[0, 1, 1])
        );
        assert_eq!(call(&mut env, B::Keys, &[fk]).unwrap(), i32s(&[0, 1]));
        let err = call(&mut env, B::ColumnValue, &[t, syms(&["n_comment"])]).unwrap_err();
        assert_eq!(
            err.message,
            "@column_value: no column `n_comment` in the table (its columns: n_name, n_regionkey)"
        );
        let err = call(&mut env, B::LoadTable, &[syms(&["nowhere"])]).unwrap_err();
        assert_eq!(err.message, "@load_table: no table `nowhere`");
    }

    #[test]
    fn builds_tables_dicts_and_enums() {
        let t = run(
            B::Table,
            &[
                syms(&["a", "b"]),
                list(vec![i64s(&[1, 2]), f64s(&[0.5, 1.5])]),
            ],
        )
        .unwrap();
        let Value::Table(table) = &t else {
            panic!("not a table")
        };
        assert_eq!(table.rows(), 2);
        assert!(run(
            B::Table,
            &[syms(&["a", "b"]), list(vec![i64s(&[1, 2]), f64s(&[0.5])])]
        )
        .is_err());
        assert!(run(
            B::Table,
            &[syms(&["a"]), list(vec![i64s(&[1]), i64s(&[2])])]
        )
        .is_err());
        assert_eq!(
            texts(&run(B::Keys, std::slice::from_ref(&t)).unwrap()),
            ["a", "b"]
        );
        let flipped = run(B::Flip, std::slice::from_ref(&t)).unwrap();
        assert_eq!(run(B::Flip, &[flipped]).unwrap(), t);
        let d = run(B::Dict, &[i64s(&[1, 2]), syms(&["x", "y"])]).unwrap();
        assert_eq!(run(B::Values, &[d]).unwrap(), syms(&["x", "y"]));
        assert!(run(B::Dict, &[i64s(&[1]), syms(&["x", "y"])]).is_err());
        let e = run(B::Enum, &[i32s(&[10, 20]), i32s(&[20, 20, 10])]).unwrap();
        assert_eq!(
            run(B::Values, std::slice::from_ref(&e)).unwrap(),
            i64s(&[1, 1, 0])
        );
        assert_eq!(run(B::Fetch, &[e]).unwrap(), i32s(&[20, 20, 10]));
        assert!(run(B::Enum, &[i32s(&[10]), i32s(&[30])]).is_err());
        let m = run(B::Meta, &[t]).unwrap();
        assert!(matches!(m, Value::KTable(..)));
    }
}
