//! Parquet and Arrow IPC files, read into HorseIR columns and written from results.
//!
//! A Parquet file is read row group by row group on every core, an Arrow IPC file batch by
//! batch; only the columns asked for are decoded. Types are mapped as
//! [`crate::data::arrow_convert`] documents. Results are written as one record batch, to
//! Parquet with Snappy compression (what DuckDB and tpchgen write by default) or to an Arrow
//! IPC file.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use indicatif::ProgressBar;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use crate::bail;
use crate::data::arrow_convert::columns_from_batches;
use crate::data::phases;
use crate::error::{Result, RuntimeError};
use crate::value::Vector;

/// Columns read from a file: names and vectors in file order.
pub(crate) struct FileColumns {
    pub names: Vec<Arc<str>>,
    pub columns: Vec<Vector>,
}

/// The positions of the fields of `schema` that `wanted` names (all when `None`).
fn projection(schema: &SchemaRef, wanted: Option<&[String]>) -> Vec<usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, field)| wanted.is_none_or(|w| w.iter().any(|name| name == field.name())))
        .map(|(i, _)| i)
        .collect()
}

fn in_file(path: &Path) -> impl Fn(String) -> RuntimeError + '_ {
    move |message| RuntimeError::new(format!("{}: {message}", path.display()))
}

/// Reads the columns `wanted` names (all when `None`) of the Parquet file `path`, its row
/// groups in parallel; `bar` counts rows.
pub(crate) fn read_parquet(
    path: &Path,
    wanted: Option<&[String]>,
    bar: &ProgressBar,
) -> Result<FileColumns> {
    let fail = in_file(path);
    let file = File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
    let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
        .map_err(|e| fail(format!("not a readable Parquet file: {e}")))?;
    let metadata = with_text_as_views(metadata);
    let schema = metadata.schema().clone();
    let fields = projection(&schema, wanted);
    let mask = ProjectionMask::roots(metadata.parquet_schema(), fields.iter().copied());
    let projected = Arc::new(
        schema
            .project(&fields)
            .map_err(|e| fail(format!("cannot select columns: {e}")))?,
    );
    let groups = metadata.metadata().row_groups();
    bar.set_length(groups.iter().map(|g| g.num_rows().max(0) as u64).sum());
    let decoded: Vec<Result<Vec<RecordBatch>>> = phases::time("decode", || {
        (0..groups.len())
            .into_par_iter()
            .map(|group| {
                // A file of its own: clones of one handle share its offset, and parallel
                // seek-and-read through them would read each other's bytes.
                let file = File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
                let reader =
                    ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
                        .with_row_groups(vec![group])
                        .with_projection(mask.clone())
                        .with_batch_size(64 * 1024)
                        .build()
                        .map_err(|e| fail(format!("row group {group}: {e}")))?;
                let mut batches = Vec::new();
                for batch in reader {
                    let batch = batch.map_err(|e| fail(format!("row group {group}: {e}")))?;
                    bar.inc(batch.num_rows() as u64);
                    batches.push(batch);
                }
                Ok(batches)
            })
            .collect()
    });
    let mut batches = Vec::new();
    for group in decoded {
        batches.extend(group?);
    }
    finish(&batches, &projected).map_err(|e| fail(e.message))
}

/// The reader of `metadata`'s file set to read text columns as string views: a view points
/// into the page it was decoded from (or the column's dictionary), so no text is copied.
/// Read as Arrow dictionaries instead, a column chunk whose writer fell back from dictionary
/// to plain pages (any large one of distinct texts) is hashed into a new dictionary, row by
/// row, before horsec hashes it again. Left as it is if the reader refuses the views.
fn with_text_as_views(metadata: ArrowReaderMetadata) -> ArrowReaderMetadata {
    use arrow_schema::{DataType, Schema};
    let schema = metadata.schema();
    let is_text = |ty: &DataType| matches!(ty, DataType::Utf8 | DataType::LargeUtf8);
    let viewed = |ty: &DataType| match ty {
        DataType::Dictionary(_, values) => is_text(values),
        other => is_text(other),
    };
    if !schema.fields().iter().any(|f| viewed(f.data_type())) {
        return metadata;
    }
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|field| {
            if viewed(field.data_type()) {
                Arc::new(field.as_ref().clone().with_data_type(DataType::Utf8View))
            } else {
                Arc::clone(field)
            }
        })
        .collect();
    let views = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    ArrowReaderMetadata::try_new(
        Arc::clone(metadata.metadata()),
        ArrowReaderOptions::new().with_schema(views),
    )
    .unwrap_or(metadata)
}

/// Reads the columns `wanted` names of the Arrow IPC file (or stream) `path`.
pub(crate) fn read_arrow_ipc(
    path: &Path,
    wanted: Option<&[String]>,
    bar: &ProgressBar,
) -> Result<FileColumns> {
    let fail = in_file(path);
    let open = || File::open(path).map_err(|e| fail(format!("cannot open: {e}")));
    let (schema, batches): (SchemaRef, Vec<RecordBatch>) =
        phases::time("decode", || -> Result<(SchemaRef, Vec<RecordBatch>)> {
            Ok(
                match arrow_ipc::reader::FileReader::try_new(open()?, None) {
                    Ok(reader) => {
                        let full = reader.schema();
                        let fields = projection(&full, wanted);
                        let schema = Arc::new(
                            full.project(&fields)
                                .map_err(|e| fail(format!("cannot select columns: {e}")))?,
                        );
                        let reader = arrow_ipc::reader::FileReader::try_new(open()?, Some(fields))
                            .map_err(|e| fail(format!("not a readable Arrow IPC file: {e}")))?;
                        let batches = reader
                            .collect::<std::result::Result<Vec<_>, _>>()
                            .map_err(|e| fail(format!("not a readable Arrow IPC file: {e}")))?;
                        (schema, batches)
                    }
                    // Not the file format: maybe the stream format (`.arrows`, some writers' `.arrow`).
                    Err(file_error) => {
                        let reader = arrow_ipc::reader::StreamReader::try_new(
                            std::io::BufReader::new(open()?),
                            None,
                        )
                        .map_err(|_| {
                            fail(format!("not a readable Arrow IPC file: {file_error}"))
                        })?;
                        let full = reader.schema();
                        let fields = projection(&full, wanted);
                        let batches = reader
                            .map(|batch| batch.and_then(|b| b.project(&fields)))
                            .collect::<std::result::Result<Vec<_>, _>>()
                            .map_err(|e| fail(format!("not a readable Arrow IPC stream: {e}")))?;
                        let schema = Arc::new(
                            full.project(&fields)
                                .map_err(|e| fail(format!("cannot select columns: {e}")))?,
                        );
                        (schema, batches)
                    }
                },
            )
        })?;
    bar.set_length(batches.iter().map(|b| b.num_rows() as u64).sum());
    let read = finish(&batches, &schema).map_err(|e| fail(e.message));
    bar.inc(batches.iter().map(|b| b.num_rows() as u64).sum());
    read
}

/// The columns of `batches` (of `schema`), joined.
fn finish(batches: &[RecordBatch], schema: &SchemaRef) -> Result<FileColumns> {
    let columns = columns_from_batches(schema, batches)?;
    if columns.len() != schema.fields().len() {
        bail!(
            "read {} columns, the schema has {}",
            columns.len(),
            schema.fields().len()
        );
    }
    Ok(FileColumns {
        names: schema
            .fields()
            .iter()
            .map(|f| Arc::from(f.name().as_str()))
            .collect(),
        columns,
    })
}

/// Rows of a Parquet row group as horsec writes them: DuckDB's size, small enough that a
/// large table has a row group per core to read in parallel.
const ROWS_PER_ROW_GROUP: usize = 122_880;

/// The file formats results and tables are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrowFileFormat {
    /// Parquet, Snappy-compressed.
    Parquet,
    /// An Arrow IPC file (Feather v2).
    ArrowIpc,
}

/// Writes `batches` (one schema) to `path` in `format`, through a temporary file beside it
/// renamed into place, so a failed write leaves no partial file at `path`.
pub fn write_batches(path: &Path, batches: &[RecordBatch], format: ArrowFileFormat) -> Result<()> {
    let Some(first) = batches.first() else {
        bail!("{}: nothing to write", path.display());
    };
    let fail = in_file(path);
    let partial = path.with_extension(format!(
        "{}.partial",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let written = (|| -> std::result::Result<(), String> {
        let file = File::create(&partial).map_err(|e| format!("cannot create: {e}"))?;
        match format {
            ArrowFileFormat::Parquet => {
                let properties = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .set_max_row_group_size(ROWS_PER_ROW_GROUP)
                    .build();
                let mut writer = ArrowWriter::try_new(file, first.schema(), Some(properties))
                    .map_err(|e| e.to_string())?;
                for batch in batches {
                    writer.write(batch).map_err(|e| e.to_string())?;
                }
                writer.close().map_err(|e| e.to_string())?;
            }
            ArrowFileFormat::ArrowIpc => {
                let mut writer =
                    arrow_ipc::writer::FileWriter::try_new(file, first.schema().as_ref())
                        .map_err(|e| e.to_string())?;
                for batch in batches {
                    writer.write(batch).map_err(|e| e.to_string())?;
                }
                writer.finish().map_err(|e| e.to_string())?;
            }
        }
        std::fs::rename(&partial, path).map_err(|e| format!("cannot rename into place: {e}"))
    })();
    if let Err(message) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(fail(message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Database;
    use crate::value::{Table, Value};

    fn every_type_batch() -> (Table, RecordBatch) {
        let table = crate::data::arrow_convert::tests::every_type();
        let batch =
            crate::data::arrow_convert::value_to_batch(&Value::Table(Arc::new(table.clone())))
                .expect("writable");
        (table, batch)
    }

    #[test]
    fn parquet_and_arrow_files_read_back_the_table_written() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (table, batch) = every_type_batch();
        for (file, format) in [
            ("t.parquet", ArrowFileFormat::Parquet),
            ("t.arrow", ArrowFileFormat::ArrowIpc),
            ("t.feather", ArrowFileFormat::ArrowIpc),
        ] {
            let path = dir.path().join(file);
            write_batches(&path, &[batch.clone(), batch.slice(1, 1)], format).expect("written");
            let mut database = Database::new();
            database.load_file("t", &path).expect("readable");
            let read = database.table("t").expect("loaded");
            assert_eq!(read.names, table.names, "{file}");
            for (name, column) in table.names.iter().zip(&table.columns) {
                let (Some(Value::Vector(read)), Value::Vector(written)) =
                    (read.column(name), column)
                else {
                    panic!("{file}: `{name}` is not a vector");
                };
                // Both batches, one after the other.
                let expected = crate::data::columns::concat_vectors(vec![
                    written.clone(),
                    written.gather(&[1]).expect("in range"),
                ])
                .expect("same types");
                assert_eq!(read, &expected, "{file}: `{name}`");
            }
        }
    }

    #[test]
    fn only_the_columns_asked_for_are_read() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (_, batch) = every_type_batch();
        let wanted = ["date".to_string(), "sym".to_string()];
        for (file, format) in [
            ("t.parquet", ArrowFileFormat::Parquet),
            ("t.arrow", ArrowFileFormat::ArrowIpc),
        ] {
            let path = dir.path().join(file);
            write_batches(&path, std::slice::from_ref(&batch), format).expect("written");
            let read = match format {
                ArrowFileFormat::Parquet => {
                    read_parquet(&path, Some(&wanted), &ProgressBar::hidden())
                }
                ArrowFileFormat::ArrowIpc => {
                    read_arrow_ipc(&path, Some(&wanted), &ProgressBar::hidden())
                }
            }
            .expect("readable");
            let names: Vec<&str> = read.names.iter().map(|n| n.as_ref()).collect();
            assert_eq!(names, ["sym", "date"], "{file}: file order");
            assert_eq!(read.columns.len(), 2, "{file}");
            assert_eq!(read.columns[1].ty(), crate::types::Type::Date, "{file}");
        }
    }

    #[test]
    fn a_parquet_file_of_many_row_groups_reads_back_whole() {
        use arrow_array::{Float64Array, Int64Array};
        use arrow_schema::{DataType, Field, Schema};
        let rows = 3 * ROWS_PER_ROW_GROUP + 17;
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("x", DataType::Float64, false),
        ]));
        let keys: Vec<i64> = (0..rows as i64).map(|k| k * 7919 % 1_000_003).collect();
        let values: Vec<f64> = keys.iter().map(|&k| k as f64 / 3.0).collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(keys.clone())),
                Arc::new(Float64Array::from(values.clone())),
            ],
        )
        .expect("valid batch");
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("t.parquet");
        write_batches(&path, &[batch], ArrowFileFormat::Parquet).expect("written");
        // Row groups are read in parallel: each must read its own bytes, every time.
        for _ in 0..3 {
            let read = read_parquet(&path, None, &ProgressBar::hidden()).expect("readable");
            assert_eq!(read.columns[0], Vector::I64(Arc::new(keys.clone())));
            assert_eq!(read.columns[1], Vector::F64(Arc::new(values.clone())));
        }
    }

    #[test]
    fn a_truncated_parquet_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (_, batch) = every_type_batch();
        let path = dir.path().join("t.parquet");
        write_batches(&path, &[batch], ArrowFileFormat::Parquet).expect("written");
        let bytes = std::fs::read(&path).expect("written");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("writable");
        let error = Database::new().load_file("t", &path).unwrap_err();
        assert!(
            error
                .message
                .starts_with(&format!("{}: not a readable Parquet file", path.display())),
            "{}",
            error.message
        );
        let arrow = dir.path().join("t.arrow");
        std::fs::write(&arrow, b"ARROW1\0\0garbage").expect("writable");
        let error = Database::new().load_file("t", &arrow).unwrap_err();
        assert!(
            error
                .message
                .starts_with(&format!("{}: not a readable Arrow IPC", arrow.display())),
            "{}",
            error.message
        );
    }
}
