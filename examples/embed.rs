//! Embedding horsec: compile a query once, run it on tables built in memory as Arrow record
//! batches, and read the result back as a record batch.
//!
//!     cargo run --release --example embed            # the CPU backend
//!     cargo run --release --example embed -- gpu     # the GPU (the best adapter)

use std::sync::Arc;

use horsec::api::{Engine, Error, Tables};
use horsec::arrow_array::{Array, Date32Array, Float64Array, RecordBatch, StringArray};
use horsec::arrow_schema::{DataType, Field, Schema};

/// Revenue per ship mode of the orders shipped from a date on.
const QUERY: &str = "module revenue {
  import Builtin.*;
  def main() : table {
    orders:table = @load_table(`orders:sym);
    mode:sym = check_cast(@column_value(orders, `mode:sym), sym);
    price:f64 = check_cast(@column_value(orders, `price:sym), f64);
    shipped:date = check_cast(@column_value(orders, `shipped:sym), date);
    recent:bool = @geq(shipped, 2024-01-01:date);
    r_mode:sym = @compress(recent, mode);
    r_price:f64 = @compress(recent, price);
    groups:? = @group(r_mode);
    first:i64 = @keys(groups);
    rows:? = @values(groups);
    modes:sym = @index(r_mode, first);
    prices:? = @each_right(@index, r_price, rows);
    sums:? = @each(@sum, prices);
    revenue:f64 = @raze(sums);
    order:i64 = @order(modes, 1:bool);
    out_mode:sym = @index(modes, order);
    out_revenue:f64 = @index(revenue, order);
    columns:? = @list(out_mode, out_revenue);
    result:table = @table((`mode, `revenue):sym, columns);
    return result;
  }
}";

/// A batch of orders: ship mode, price, ship date (days since 1970-01-01).
fn orders(
    modes: &[&str],
    prices: &[f64],
    shipped: &[i32],
) -> Result<RecordBatch, Box<dyn std::error::Error>> {
    let schema = Schema::new(vec![
        Field::new("mode", DataType::Utf8, false),
        Field::new("price", DataType::Float64, false),
        Field::new("shipped", DataType::Date32, false),
    ]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from(modes.to_vec())),
            Arc::new(Float64Array::from(prices.to_vec())),
            Arc::new(Date32Array::from(shipped.to_vec())),
        ],
    )?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = match std::env::args().nth(1).as_deref() {
        Some("gpu") => Engine::gpu(None)?,
        _ => Engine::cpu(),
    };
    // Compiled once, run on two different tables.
    let query = engine.compile("revenue.hir", QUERY)?;
    let days_2024 = 19_723; // 2024-01-01
    let batches = [
        orders(
            &["AIR", "MAIL", "AIR"],
            &[10.0, 5.5, 2.5],
            &[days_2024, days_2024 + 3, days_2024 - 1],
        )?,
        orders(
            &["SHIP", "SHIP"],
            &[100.0, 1.0],
            &[days_2024 + 10, days_2024 + 20],
        )?,
    ];
    for (run, batch) in batches.iter().enumerate() {
        let mut tables = Tables::new();
        tables.insert_batches("orders", std::slice::from_ref(batch))?;
        let output = engine.run(&query, &tables)?;
        let result = output.record_batch()?;
        println!("run {run}: {} rows", result.num_rows());
        let modes = result.column(0);
        let revenue = result
            .column(1)
            .as_any()
            .downcast_ref::<Float64Array>()
            .ok_or("revenue is not f64")?;
        for row in 0..result.num_rows() {
            let mode = horsec::arrow_array::cast::AsArray::as_dictionary::<
                horsec::arrow_array::types::Int32Type,
            >(modes.as_ref());
            let name = mode
                .values()
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or("modes are not text")?
                .value(mode.keys().value(row) as usize);
            println!("  {name:<5} {:>8.2}", revenue.value(row));
        }
        // The `--time` profile, as a value.
        print!("{}", output.profile.report());
    }
    // Errors are values: a query calling a builtin that does not exist does not compile.
    match engine.compile(
        "bad.hir",
        "module m { import Builtin.*; def main() : i64 { x:i64 = @nope(1:i64); return x; } }",
    ) {
        Err(Error { kind, message }) => println!("{kind:?} error, as expected:\n{message}"),
        Ok(_) => return Err("an unknown builtin compiled".into()),
    }
    Ok(())
}

/// `cargo test` runs the example (its `[[example]]` entry sets `test = true`).
#[test]
fn the_example_runs() {
    if let Err(e) = main() {
        panic!("the embedding example failed: {e}");
    }
}
