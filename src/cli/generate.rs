//! `horsec gen-tpch` and `horsec gen-graph`: generated data written to files.

use super::*;

pub(super) fn gen_graph(args: &GenGraphArgs) -> bool {
    use horsec_runtime::graph::facts::{cspa, grid, power_law, write_pairs};
    let written = match args.kind {
        GraphKind::PowerLaw | GraphKind::Grid => {
            let generate = if args.kind == GraphKind::Grid {
                grid
            } else {
                power_law
            };
            generate(args.vertices, args.edges, args.seed).and_then(|edges| {
                write_pairs(&args.out, &edges, Some(("src", "dst"))).map(|_| edges.len())
            })
        }
        GraphKind::Cspa => std::fs::create_dir_all(&args.out)
            .map_err(|e| {
                horsec_runtime::error::RuntimeError::new(format!("{}: {e}", args.out.display()))
            })
            .and_then(|_| cspa(args.vertices, args.assign, args.dereference, args.seed))
            .and_then(|(assign, dereference)| {
                write_pairs(&args.out.join("assign.facts"), &assign, None)?;
                write_pairs(&args.out.join("dereference.facts"), &dereference, None)?;
                Ok(assign.len() + dereference.len())
            }),
    };
    match written {
        Ok(n) => {
            report!("wrote {n} tuples to {}", args.out.display());
            true
        }
        Err(e) => {
            report!("error: {e}");
            false
        }
    }
}

pub(super) fn gen_tpch(sf: f64, out: &Path, format: TableFormat) -> bool {
    use horsec_runtime::data::{write_tpch_files, write_tpch_tbl, ArrowFileFormat};
    let start = std::time::Instant::now();
    let written = match format {
        TableFormat::Tbl => write_tpch_tbl(sf, out, true),
        TableFormat::Parquet => write_tpch_files(sf, out, ArrowFileFormat::Parquet, true),
        TableFormat::Arrow => write_tpch_files(sf, out, ArrowFileFormat::ArrowIpc, true),
    };
    match written {
        Ok(()) => {
            report!(
                "wrote TPC-H SF {sf} to {} in {:.1} s",
                out.display(),
                start.elapsed().as_secs_f64()
            );
            true
        }
        Err(e) => {
            report!("error: {e}");
            false
        }
    }
}
