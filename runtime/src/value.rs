//! Runtime values: vectors of every HorseIR type, lists, dictionaries, enumerations, tables.
//!
//! Every value is a vector (a scalar is a vector of length 1). Buffers sit behind `Arc` so a
//! value is cheap to clone: the interpreter copies values between variables freely, and a
//! table's columns are shared with every `@column_value` that reads them.
//!
//! Encodings (the same the GPU uses, see DESIGN.md "Data on the GPU"):
//! - `date`: i32 days since 1970-01-01; `month`: i32 months since 0000-01 (`year*12 + month-1`);
//!   `minute`: i32 minutes since midnight; `second`: i32 seconds since midnight;
//!   `time`: i32 milliseconds since midnight; `dt`: i64 milliseconds since 1970-01-01T00:00.
//! - `sym`/`str`: [`Strings`], codes into a sorted dictionary of distinct strings, so code order
//!   is string order.
//! - `bool` as `bool`, `char` as a byte.

use std::sync::{Arc, OnceLock};

use crate::gpu::GpuBuffer;
use crate::types::Type;

/// A complex number (`complex`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Complex {
    pub re: f64,
    pub im: f64,
}

/// A sorted dictionary of distinct strings. Shared by every vector that codes into it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StrDict {
    /// Distinct strings in ascending byte order.
    pub strings: Vec<Arc<str>>,
}

impl StrDict {
    /// The code of `s`, if the dictionary holds it.
    pub fn code(&self, s: &str) -> Option<u32> {
        self.strings
            .binary_search_by(|p| p.as_ref().cmp(s))
            .ok()
            .map(|i| i as u32)
    }

    /// The number of dictionary strings that sort before `s` (its insertion rank): lets `<`
    /// against a literal that is not in the dictionary become an integer comparison.
    pub fn rank(&self, s: &str) -> u32 {
        self.strings.partition_point(|p| p.as_ref() < s) as u32
    }
}

/// Dictionary-encoded strings: one code per element into a shared sorted dictionary.
#[derive(Clone, Debug, PartialEq)]
pub struct Strings {
    pub dict: Arc<StrDict>,
    pub codes: Arc<Vec<u32>>,
}

impl Strings {
    /// Encodes `items`, building a sorted dictionary of their distinct values.
    pub fn from_strs<S: AsRef<str>>(items: &[S]) -> Strings {
        let mut distinct: Vec<&str> = items.iter().map(|s| s.as_ref()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let dict = StrDict {
            strings: distinct.iter().map(|s| Arc::<str>::from(*s)).collect(),
        };
        let codes = items
            .iter()
            .map(|s| dict.code(s.as_ref()).unwrap_or(0))
            .collect();
        Strings {
            dict: Arc::new(dict),
            codes: Arc::new(codes),
        }
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The string at position `i`.
    pub fn get(&self, i: usize) -> &str {
        &self.dict.strings[self.codes[i] as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.codes
            .iter()
            .map(move |&c| self.dict.strings[c as usize].as_ref())
    }

    /// The strings in order, each shared with the dictionary (no copy of its text).
    pub fn shared(&self) -> impl Iterator<Item = Arc<str>> + '_ {
        self.codes
            .iter()
            .map(move |&c| Arc::clone(&self.dict.strings[c as usize]))
    }
}

/// A flat typed array: the representation of every basic HorseIR type.
#[derive(Clone, Debug, PartialEq)]
pub enum Vector {
    Bool(Arc<Vec<bool>>),
    Char(Arc<Vec<u8>>),
    I8(Arc<Vec<i8>>),
    I16(Arc<Vec<i16>>),
    I32(Arc<Vec<i32>>),
    I64(Arc<Vec<i64>>),
    F32(Arc<Vec<f32>>),
    F64(Arc<Vec<f64>>),
    Complex(Arc<Vec<Complex>>),
    Sym(Strings),
    Str(Strings),
    Month(Arc<Vec<i32>>),
    Date(Arc<Vec<i32>>),
    Minute(Arc<Vec<i32>>),
    Second(Arc<Vec<i32>>),
    Time(Arc<Vec<i32>>),
    Dt(Arc<Vec<i64>>),
}

impl Vector {
    pub fn len(&self) -> usize {
        match self {
            Vector::Bool(v) => v.len(),
            Vector::Char(v) => v.len(),
            Vector::I8(v) => v.len(),
            Vector::I16(v) => v.len(),
            Vector::I32(v) | Vector::Month(v) | Vector::Date(v) => v.len(),
            Vector::Minute(v) | Vector::Second(v) | Vector::Time(v) => v.len(),
            Vector::I64(v) | Vector::Dt(v) => v.len(),
            Vector::F32(v) => v.len(),
            Vector::F64(v) => v.len(),
            Vector::Complex(v) => v.len(),
            Vector::Sym(s) | Vector::Str(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The HorseIR type of this vector.
    pub fn ty(&self) -> Type {
        match self {
            Vector::Bool(_) => Type::Bool,
            Vector::Char(_) => Type::Char,
            Vector::I8(_) => Type::I8,
            Vector::I16(_) => Type::I16,
            Vector::I32(_) => Type::I32,
            Vector::I64(_) => Type::I64,
            Vector::F32(_) => Type::F32,
            Vector::F64(_) => Type::F64,
            Vector::Complex(_) => Type::Complex,
            Vector::Sym(_) => Type::Sym,
            Vector::Str(_) => Type::Str,
            Vector::Month(_) => Type::Month,
            Vector::Date(_) => Type::Date,
            Vector::Minute(_) => Type::Minute,
            Vector::Second(_) => Type::Second,
            Vector::Time(_) => Type::Time,
            Vector::Dt(_) => Type::Dt,
        }
    }
}

/// A list: cells that are values themselves.
///
/// Cells that are all vectors of one type are stored flat (one values buffer plus offsets,
/// CSR), as the GPU stores them; anything else keeps one value per cell.
#[derive(Clone, Debug, PartialEq)]
pub enum List {
    /// Cell `i` is `values[offsets[i]..offsets[i+1]]`; `offsets.len() == cells + 1`.
    Flat {
        values: Vector,
        offsets: Arc<Vec<usize>>,
    },
    /// Cells of different types, or cells that are not vectors.
    Mixed(Arc<Vec<Value>>),
}

/// A dictionary: keys and values of equal length.
#[derive(Clone, Debug, PartialEq)]
pub struct Dict {
    pub keys: Box<Value>,
    pub values: Box<Value>,
}

/// An enumeration (foreign key): for each row, its key value and the position of the
/// referenced row in the target table.
#[derive(Clone, Debug, PartialEq)]
pub struct Enumeration {
    /// The referenced key column of the target table (the enum's domain), whole.
    pub domain: Vector,
    /// For each row, the position into `domain` (row index into the target table).
    pub index: Arc<Vec<i64>>,
}

/// A table: named columns of equal length.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub names: Vec<Arc<str>>,
    pub columns: Vec<Value>,
}

impl Table {
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&Value> {
        self.names
            .iter()
            .position(|n| n.as_ref() == name)
            .map(|i| &self.columns[i])
    }

    /// Number of rows (0 for a table without columns).
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Value::len)
    }
}

/// A vector whose elements live in device memory, in the kernels' word layout
/// (`crate::kernel::GpuElement`: bool/char/i8/i16 widened to 32-bit words, sym/str as codes
/// into `dict`). Kernel outputs and library results are these: the next kernel binds the
/// buffer as it is, and the host copy is made only when a host step needs the elements
/// (the engine's `location` module decides, and counts the bytes). Once made, the host copy
/// is kept with the value, so it lives in both places and is downloaded at most once.
#[derive(Clone)]
pub struct DeviceVector {
    /// The element type (a basic type).
    pub ty: Type,
    pub len: usize,
    /// The dictionary the codes of a sym/str vector index.
    pub dict: Option<Arc<StrDict>>,
    /// The elements: `len` elements of `ty`'s GPU element, as raw words.
    pub buffer: Arc<GpuBuffer<u32>>,
    /// The host copy, once some host step needed it.
    host: Arc<OnceLock<Vector>>,
    /// The same elements in a buffer the host maps, where the kernel that computed them
    /// wrote them there too ([`crate::kernel::ValuePart::HostReadable`]): the host reads
    /// them without a copy on the device.
    host_readable: Option<Arc<GpuBuffer<u32>>>,
}

impl DeviceVector {
    pub fn new(
        ty: Type,
        len: usize,
        dict: Option<Arc<StrDict>>,
        buffer: Arc<GpuBuffer<u32>>,
    ) -> DeviceVector {
        DeviceVector {
            ty,
            len,
            dict,
            buffer,
            host: Arc::new(OnceLock::new()),
            host_readable: None,
        }
    }

    /// The vector with `buffer` holding the same elements where the host maps them.
    pub fn with_host_readable(mut self, buffer: Arc<GpuBuffer<u32>>) -> DeviceVector {
        self.host_readable = Some(buffer);
        self
    }

    /// The buffer a read-back reads the elements from: the host-readable copy if the
    /// kernel wrote one, else the device's own.
    pub fn readable_buffer(&self) -> &Arc<GpuBuffer<u32>> {
        self.host_readable.as_ref().unwrap_or(&self.buffer)
    }

    /// The host copy, if one was made.
    pub fn host(&self) -> Option<&Vector> {
        self.host.get()
    }

    /// Records the host copy (made by the engine's download); returns it.
    pub fn set_host(&self, vector: Vector) -> &Vector {
        self.host.get_or_init(|| vector)
    }

    /// Bytes of the elements on the device.
    pub fn byte_len(&self) -> u64 {
        crate::kernel::GpuElement::of_type(&self.ty).map_or(0, |e| e.size()) * self.len as u64
    }
}

impl std::fmt::Debug for DeviceVector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceVector({} × {}", self.len, self.ty)?;
        if self.host().is_some() {
            write!(f, ", also on the host")?;
        }
        write!(f, ")")
    }
}

/// Two device vectors are the same value when they share their buffer; comparing elements
/// needs the host copies (see the engine's `location` module).
impl PartialEq for DeviceVector {
    fn eq(&self, other: &DeviceVector) -> bool {
        Arc::ptr_eq(&self.buffer, &other.buffer) && self.len == other.len && self.ty == other.ty
    }
}

/// A flat list in device memory: `values` and `cells + 1` u32 offsets (CSR), as kernels
/// bind a list. `@group`'s lists of rows and the lists kernels compute over them are these.
#[derive(Clone)]
pub struct DeviceList {
    /// Every cell's elements, one after another (`offsets` starts at 0 and ends at their
    /// number).
    pub values: DeviceVector,
    pub offsets: Arc<GpuBuffer<u32>>,
    pub cells: usize,
}

impl std::fmt::Debug for DeviceList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceList({} cells of {:?})", self.cells, self.values)
    }
}

impl PartialEq for DeviceList {
    fn eq(&self, other: &DeviceList) -> bool {
        self.values == other.values
            && Arc::ptr_eq(&self.offsets, &other.offsets)
            && self.cells == other.cells
    }
}

/// Any HorseIR value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Vector(Vector),
    /// A vector in device memory (GPU backend only; host steps never see one: the
    /// interpreter hands them the host copy).
    Device(DeviceVector),
    /// A flat list in device memory (GPU backend only, like [`Value::Device`]).
    DeviceList(DeviceList),
    List(List),
    Dict(Dict),
    Enum(Enumeration),
    Table(Arc<Table>),
    /// A keyed table: key columns and value columns.
    KTable(Arc<Table>, Arc<Table>),
}

impl Value {
    /// Length in HorseIR terms: elements of a vector, cells of a list, entries of a dict,
    /// rows of an enum, columns of a table.
    pub fn len(&self) -> usize {
        match self {
            Value::Vector(v) => v.len(),
            Value::Device(d) => d.len,
            Value::DeviceList(l) => l.cells,
            Value::List(List::Flat { offsets, .. }) => offsets.len().saturating_sub(1),
            Value::List(List::Mixed(cells)) => cells.len(),
            Value::Dict(d) => d.keys.len(),
            Value::Enum(e) => e.index.len(),
            Value::Table(t) => t.columns.len(),
            Value::KTable(k, v) => k.columns.len() + v.columns.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether some elements of this value are on the device only: a device vector, or a
    /// list or dictionary holding one. Host steps get such a value read back first.
    pub fn on_device(&self) -> bool {
        match self {
            Value::Device(_) | Value::DeviceList(_) => true,
            Value::List(List::Mixed(cells)) => cells.iter().any(Value::on_device),
            Value::Dict(d) => d.keys.on_device() || d.values.on_device(),
            _ => false,
        }
    }

    /// The HorseIR type of this value, as `check_cast` tests it. A list whose cells have
    /// different types is `list<?>`.
    pub fn ty(&self) -> Type {
        match self {
            Value::Vector(v) => v.ty(),
            Value::Device(d) => d.ty.clone(),
            Value::DeviceList(l) => Type::List(Box::new(l.values.ty.clone())),
            Value::List(List::Flat { values, .. }) => Type::List(Box::new(values.ty())),
            Value::List(List::Mixed(cells)) => {
                let mut types = cells.iter().map(Value::ty);
                let first = types.next().unwrap_or(Type::Wildcard);
                let cell = if types.all(|t| t == first) {
                    first
                } else {
                    Type::Wildcard
                };
                Type::List(Box::new(cell))
            }
            Value::Dict(d) => Type::Dict(Box::new(d.keys.ty()), Box::new(d.values.ty())),
            Value::Enum(e) => Type::Enum(Box::new(e.domain.ty())),
            Value::Table(_) => Type::Table,
            Value::KTable(..) => Type::KTable,
        }
    }
}
