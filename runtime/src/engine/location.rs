//! Where each value lives, and the only place data crosses between host and device.
//!
//! A value is on the host ([`Value::Vector`] and the containers), on the device
//! ([`Value::Device`]: kernel outputs and library results), or both (a device vector whose
//! host copy was made, kept inside the value; a host column with a device copy here).
//!
//! - [`Location::buffer`] gives a kernel the device words of a value: a device vector's own
//!   buffer, or the upload of a host value. Host values are uploaded once per allocation:
//!   a table's columns are `Arc`s shared by every `@column_value` that reads them, so the
//!   address identifies the data, and the copy is kept (with a clone of the value, so the
//!   address cannot be reused) for every later kernel and run that reads the same column.
//! - [`Location::host`] gives a host step the elements of a value: a host value as it is, a
//!   device vector's host copy, downloading it the first time.
//!
//! Every byte either way is counted by the device (`Device::traffic`), which `--time` prints.

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::encode::{vector_from_download, words_of, Downloaded};
use crate::error::{Result, RuntimeError};
use crate::gpu::{Device, GpuBuffer};
use crate::kernel::{GpuElement, ValuePart, CODED_DICTIONARY};
use crate::value::{DeviceVector, List, Value, Vector};

/// Identity of one part of one host value's data.
type Key = (usize, ValuePart, GpuElement);

#[derive(Default)]
pub(crate) struct Location {
    /// Device copies of host values, and the codes of those coded (see [`Location::coded`]).
    uploaded: FxHashMap<Key, (Arc<GpuBuffer<u32>>, Kept)>,
    /// Host vectors found to have too many distinct elements to code, so that no later
    /// launch counts them again.
    uncodable: FxHashMap<Key, Kept>,
    /// Bytes of those copies.
    uploaded_bytes: u64,
    /// One-element integer vectors that kernels computed on the device since the last read
    /// of such a scalar (see [`Location::host_scalar`]).
    scalars: Vec<DeviceVector>,
}

/// Device scalars kept for [`Location::host_scalar`] at most: a query's counts and lengths
/// between two reads are a handful.
const KEPT_SCALARS: usize = 32;

/// What one move between host and device cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Moved {
    pub bytes: u64,
    pub time: Duration,
}

impl Location {
    /// The device words of `part` of `value` as a kernel binds them (`element` checked), and
    /// the bytes uploaded to get them (none for a device vector or a host value already
    /// uploaded).
    pub(crate) fn buffer(
        &mut self,
        device: &Device,
        value: &Value,
        part: ValuePart,
        element: GpuElement,
    ) -> Result<(Arc<GpuBuffer<u32>>, Moved)> {
        match (value, part) {
            (Value::Device(d), _) => {
                return device_buffer(d, part, element).map(|b| (b, Moved::default()))
            }
            (Value::DeviceList(l), ValuePart::ListValues) => {
                let values = device_buffer(&l.values, ValuePart::Elements, element)?;
                return Ok((values, Moved::default()));
            }
            (Value::DeviceList(l), ValuePart::ListOffsets) => {
                return Ok((l.offsets.clone(), Moved::default()))
            }
            (Value::DeviceList(_), part) => {
                return Err(RuntimeError::new(format!(
                    "a kernel reads the {part:?} of a list"
                )))
            }
            _ => {}
        }
        let key = key_of(value, part, element);
        if let Some(k) = key {
            if let Some((buffer, _)) = self.uploaded.get(&k) {
                return Ok((buffer.clone(), Moved::default()));
            }
        }
        let start = Instant::now();
        let mut words = words_of(value, part, element)?;
        // A binding of 8-byte elements needs 8 bytes even when empty.
        if words.len() < 2 {
            words.resize(2, 0);
        }
        let buffer = Arc::new(
            device
                .upload("input", &words)
                .map_err(|e| RuntimeError::new(format!("uploading an input: {e}")))?,
        );
        let bytes = (words.len() * 4) as u64;
        if let (Some(k), Some(kept)) = (key, kept_part(value, part)) {
            self.uploaded_bytes += bytes;
            self.uploaded.insert(k, (buffer.clone(), kept));
        }
        let time = start.elapsed();
        Ok((buffer, Moved { bytes, time }))
    }

    /// The codes of a host vector's elements (stored as `element`) as a kernel binds them
    /// (the layout of `ValuePart::Coded`), made and uploaded the first time, or None where
    /// the vector has more distinct elements than a byte codes, is short, or is not a host
    /// vector. Like an upload, the codes are kept for every later launch and run.
    pub(crate) fn coded(
        &mut self,
        device: &Device,
        value: &Value,
        element: GpuElement,
    ) -> Result<(Option<Arc<GpuBuffer<u32>>>, Moved)> {
        let Value::Vector(vector) = value else {
            return Ok((None, Moved::default()));
        };
        // A vector only this launch holds (strings re-coded for it) would be coded again on
        // every run: it is uploaded as it is.
        if vector.len() < MIN_CODED_ELEMENTS || vector_owners(vector) < 2 {
            return Ok((None, Moved::default()));
        }
        let key = (vector_address(vector), ValuePart::Coded, element);
        if let Some((buffer, _)) = self.uploaded.get(&key) {
            return Ok((Some(Arc::clone(buffer)), Moved::default()));
        }
        if self.uncodable.contains_key(&key) {
            return Ok((None, Moved::default()));
        }
        let start = Instant::now();
        let per = element.size() as usize / 4;
        // A column of many distinct elements (a price) shows it in its first ones, before
        // the whole of it is converted to words: 48 MB for an f64 column at TPC-H SF 1.
        let prefix_fits = vector.len() <= CODED_PREFIX || {
            let prefix = Value::Vector(vector.slice(0..CODED_PREFIX)?);
            byte_codes_fit(&words_of(&prefix, ValuePart::Elements, element)?, per)
        };
        let codes = if prefix_fits {
            code_words(&words_of(value, ValuePart::Elements, element)?, per)
        } else {
            None
        };
        let Some(codes) = codes else {
            self.uncodable.insert(key, Kept::Vector(vector.clone()));
            let time = start.elapsed();
            return Ok((None, Moved { bytes: 0, time }));
        };
        let buffer = Arc::new(
            device
                .upload("coded input", &codes)
                .map_err(|e| RuntimeError::new(format!("uploading a coded input: {e}")))?,
        );
        let bytes = (codes.len() * 4) as u64;
        self.uploaded_bytes += bytes;
        self.uploaded
            .insert(key, (Arc::clone(&buffer), Kept::Vector(vector.clone())));
        let time = start.elapsed();
        Ok((Some(buffer), Moved { bytes, time }))
    }

    /// Notes a kernel's output: a one-element integer vector on the device (a count or a
    /// length: `@len` of a compacted vector, a sum) may be read on the host by a later
    /// launch's checks or sizes, and is then read with the others (see
    /// [`Location::host_scalar`]).
    pub(crate) fn computed(&mut self, value: &Value) {
        let Value::Device(d) = value else { return };
        if d.len == 1 && d.host().is_none() && d.ty.is_integer() {
            // Those held only here are dead: their buffers go back to the pool.
            self.scalars
                .retain(|s| s.host().is_none() && Arc::strong_count(&s.buffer) > 1);
            if self.scalars.len() == KEPT_SCALARS {
                self.scalars.remove(0);
            }
            self.scalars.push(d.clone());
        }
    }

    /// [`host`] for a launch's check or size: a device scalar not yet on the host is read
    /// back together with every scalar noted by [`Location::computed`] that something besides
    /// this map still holds and that is not on the host yet, in one wait. TPC-H q7 computes
    /// four counts in one kernel, and four kernels then each read one to size their output:
    /// one wait instead of four, for a few bytes more.
    pub(crate) fn host_scalar(&mut self, device: &Device, value: &Value) -> Result<(Value, Moved)> {
        let mut moved = Moved::default();
        if let Value::Device(d) = value {
            if d.len == 1 && d.host().is_none() {
                // Held only here: nothing can ask for it any more.
                self.scalars
                    .retain(|s| s.host().is_none() && Arc::strong_count(&s.buffer) > 1);
                let others: Vec<Value> = self
                    .scalars
                    .iter()
                    .filter(|s| !Arc::ptr_eq(&s.buffer, &d.buffer))
                    .map(|s| Value::Device(s.clone()))
                    .collect();
                if !others.is_empty() {
                    let mut values: Vec<&Value> = vec![value];
                    values.extend(others.iter());
                    moved = prefetch(device, &values)?;
                }
                self.scalars.clear();
            }
        }
        let (hosted, more) = host(device, value)?;
        moved.bytes += more.bytes;
        moved.time += more.time;
        Ok((hosted, moved))
    }

    /// Bytes of the device copies of host values held.
    pub(crate) fn uploaded_bytes(&self) -> u64 {
        self.uploaded_bytes
    }

    /// Adds one to `counts` at the address of each part's data this map keeps.
    pub(crate) fn count_kept(&self, counts: &mut FxHashMap<usize, usize>) {
        let kept = self.uploaded.values().map(|(_, kept)| kept);
        for kept in kept.chain(self.uncodable.values()) {
            *counts.entry(kept.address()).or_default() += 1;
        }
    }

    /// Drops the device copies of host values nothing but this map holds any more (a run
    /// is over): a value computed on the host in one run is never asked for again, and its
    /// copy would otherwise hold a device buffer for the engine's life and make every run
    /// take a new one. Table columns are held by their table, and their copies stay.
    pub(crate) fn sweep(&mut self) {
        self.scalars.clear();
        let mut freed = 0;
        // The entries' own holds of each address, counted in a sorted vector: a run keeps a
        // handful of copies, and a map per run showed in its host time.
        let kept = self.uploaded.values().map(|(_, k)| k);
        let mut own: Vec<usize> = kept
            .chain(self.uncodable.values())
            .map(Kept::address)
            .collect();
        own.sort_unstable();
        let own_holds = |address: usize| {
            own.partition_point(|&a| a <= address) - own.partition_point(|&a| a < address)
        };
        self.uploaded.retain(|_, (buffer, kept)| {
            let held = kept.owners() > own_holds(kept.address());
            if !held {
                freed += buffer.byte_len();
            }
            held
        });
        self.uploaded_bytes = self.uploaded_bytes.saturating_sub(freed);
        self.uncodable
            .retain(|_, kept| kept.owners() > own_holds(kept.address()));
    }
}

/// Host vectors shorter than this are not coded: a kernel reads them in microseconds either
/// way, and each coded input of a kernel doubles the pipelines it may need.
const MIN_CODED_ELEMENTS: usize = 1024;

/// Elements of a longer vector whose distinct count is checked before the whole vector is
/// converted and coded (see [`Location::coded`]).
const CODED_PREFIX: usize = 1 << 16;

/// Whether elements stored as `per` words each have at most [`CODED_DICTIONARY`] distinct
/// values.
fn byte_codes_fit(elements: &[u32], per: usize) -> bool {
    let mut codes = vec![0u32; (elements.len() / per).div_ceil(4)];
    code_chunk(elements, per, &mut codes).is_some()
}

/// The coded form (`ValuePart::Coded`) of elements stored as `per` words each: a dictionary
/// of [`CODED_DICTIONARY`] elements, the distinct ones in the order first met, then a byte
/// code per element, four to a word. None with more distinct elements than that.
///
/// Chunks of the elements are coded on as many threads as the host has, each with a
/// dictionary of its own, which are then merged in chunk order (the order first met, as one
/// thread would find it) and each chunk's codes mapped to the merged ones: a TPC-H SF 1
/// column of 6 M elements was 100 ms with one hash map look-up per element on one thread.
fn code_words(words: &[u32], per: usize) -> Option<Vec<u32>> {
    let n = words.len() / per;
    let dictionary_words = CODED_DICTIONARY * per;
    // Whole words, and an even count (a binding of 8-byte elements reads it too).
    let mut coded = vec![0u32; (dictionary_words + n.div_ceil(4)).next_multiple_of(2)];
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    // Chunks of whole code words, at least 64 Ki elements each.
    let chunk = n.div_ceil(threads).max(1 << 16).next_multiple_of(4);
    let (dictionary_part, codes) = coded.split_at_mut(dictionary_words);
    let chunks: Vec<(&[u32], &mut [u32])> = words
        .chunks(chunk * per)
        .zip(codes.chunks_mut(chunk / 4))
        .collect();
    let local: Vec<Option<Vec<u64>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|(elements, codes)| scope.spawn(move || code_chunk(elements, per, codes)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    // The merged dictionary, and each chunk's codes in it.
    let mut dictionary = SmallDictionary::default();
    let mut remaps: Vec<Option<[u8; CODED_DICTIONARY]>> = Vec::with_capacity(local.len());
    for chunk_dictionary in local {
        let chunk_dictionary = chunk_dictionary?;
        let mut remap = [0u8; CODED_DICTIONARY];
        let mut identity = true;
        for (k, bits) in chunk_dictionary.iter().enumerate() {
            let code = dictionary.code(*bits)?;
            remap[k] = code;
            identity &= usize::from(code) == k;
        }
        remaps.push((!identity).then_some(remap));
    }
    std::thread::scope(|scope| {
        for (codes, remap) in codes.chunks_mut(chunk / 4).zip(&remaps) {
            if let Some(remap) = remap {
                scope.spawn(move || {
                    for word in codes.iter_mut() {
                        let b = word.to_le_bytes().map(|c| remap[usize::from(c)]);
                        *word = u32::from_le_bytes(b);
                    }
                });
            }
        }
    });
    for (k, bits) in dictionary.elements.iter().enumerate() {
        let at = k * per;
        let element = [*bits as u32, (*bits >> 32) as u32];
        dictionary_part[at..at + per].copy_from_slice(&element[..per]);
    }
    Some(coded)
}

/// Codes `elements` (of `per` words each) into `codes` (four a word) by a dictionary of the
/// chunk's own, which it returns; None with more than [`CODED_DICTIONARY`] distinct ones.
fn code_chunk(elements: &[u32], per: usize, codes: &mut [u32]) -> Option<Vec<u64>> {
    let mut dictionary = SmallDictionary::default();
    let mut last = (u64::MAX, u8::MAX, false);
    for (word, four) in codes.iter_mut().zip(elements.chunks(4 * per)) {
        let mut packed = 0u32;
        for (k, element) in four.chunks_exact(per).enumerate() {
            let bits = element
                .iter()
                .rev()
                .fold(0u64, |bits, w| (bits << 32) | u64::from(*w));
            // Sorted and clustered columns repeat their elements.
            let code = if last.2 && last.0 == bits {
                last.1
            } else {
                let code = dictionary.code(bits)?;
                last = (bits, code, true);
                code
            };
            packed |= u32::from(code) << (k * 8);
        }
        *word = packed;
    }
    Some(dictionary.elements)
}

/// Up to [`CODED_DICTIONARY`] distinct elements (their storage bits) and their codes, in an
/// open-addressed table of four times as many places.
struct SmallDictionary {
    elements: Vec<u64>,
    places: Box<[(u64, u16)]>,
}

impl Default for SmallDictionary {
    fn default() -> SmallDictionary {
        SmallDictionary {
            elements: Vec::with_capacity(CODED_DICTIONARY),
            // (bits, code + 1); 0: free.
            places: vec![(0, 0); 4 * CODED_DICTIONARY].into_boxed_slice(),
        }
    }
}

impl SmallDictionary {
    /// The code of `bits`, given the next code when new; None when the dictionary is full.
    fn code(&mut self, bits: u64) -> Option<u8> {
        let mask = self.places.len() - 1;
        let mut at = (bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize & mask;
        loop {
            let (held, code) = self.places[at];
            if code == 0 {
                let next = self.elements.len();
                let code = u8::try_from(next).ok()?;
                self.elements.push(bits);
                self.places[at] = (bits, u16::from(code) + 1);
                return Some(code);
            }
            if held == bits {
                return u8::try_from(code - 1).ok();
            }
            at = (at + 1) & mask;
        }
    }
}

/// The data of one part of a host value, kept with its device copy so that its address
/// stays its own (each part on its own: an entry holding the whole value would keep the
/// data of the value's other parts owned, and no entry could ever be found unused).
enum Kept {
    Vector(Vector),
    Offsets(Arc<Vec<usize>>),
    Index(Arc<Vec<i64>>),
}

impl Kept {
    /// Owners of the data, this entry included.
    fn owners(&self) -> usize {
        match self {
            Kept::Vector(v) => vector_owners(v),
            Kept::Offsets(o) => Arc::strong_count(o),
            Kept::Index(i) => Arc::strong_count(i),
        }
    }

    fn address(&self) -> usize {
        match self {
            Kept::Vector(v) => vector_address(v),
            Kept::Offsets(o) => Arc::as_ptr(o) as usize,
            Kept::Index(i) => Arc::as_ptr(i) as usize,
        }
    }
}

/// The data of `part` of `value` that its key names (see `key_of`).
fn kept_part(value: &Value, part: ValuePart) -> Option<Kept> {
    Some(match (value, part) {
        (Value::Vector(v), ValuePart::Elements) => Kept::Vector(v.clone()),
        (Value::List(List::Flat { values, .. }), ValuePart::ListValues) => {
            Kept::Vector(values.clone())
        }
        (Value::List(List::Flat { offsets, .. }), ValuePart::ListOffsets) => {
            Kept::Offsets(offsets.clone())
        }
        (Value::Enum(e), ValuePart::EnumKeys) => Kept::Vector(e.domain.clone()),
        (Value::Enum(e), ValuePart::EnumIndex) => Kept::Index(e.index.clone()),
        _ => return None,
    })
}

/// Owners of a host vector's elements.
pub(super) fn vector_owners(v: &Vector) -> usize {
    match v {
        Vector::Bool(x) => Arc::strong_count(x),
        Vector::Char(x) => Arc::strong_count(x),
        Vector::I8(x) => Arc::strong_count(x),
        Vector::I16(x) => Arc::strong_count(x),
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => Arc::strong_count(x),
        Vector::I64(x) | Vector::Dt(x) => Arc::strong_count(x),
        Vector::F32(x) => Arc::strong_count(x),
        Vector::F64(x) => Arc::strong_count(x),
        Vector::Complex(x) => Arc::strong_count(x),
        Vector::Sym(s) | Vector::Str(s) => Arc::strong_count(&s.codes),
    }
}

/// `value` with its elements on the host: itself, or a device vector's host copy
/// (downloaded the first time and kept with the value), or a list or dictionary with such
/// copies. Also returns what the downloads moved (nothing when all was on the host).
pub(crate) fn host(device: &Device, value: &Value) -> Result<(Value, Moved)> {
    if !value.on_device() {
        return Ok((value.clone(), Moved::default()));
    }
    let mut moved = Moved::default();
    let mut add = |m: Moved| {
        moved.bytes += m.bytes;
        moved.time += m.time;
    };
    let hosted = match value {
        Value::Device(d) => {
            let (v, m) = host_vector(device, d)?;
            add(m);
            Value::Vector(v)
        }
        Value::List(List::Mixed(cells)) => {
            let mut hosted = Vec::with_capacity(cells.len());
            for cell in cells.iter() {
                let (v, m) = host(device, cell)?;
                add(m);
                hosted.push(v);
            }
            // As the CPU builds it: vectors of one type become a flat list.
            Value::List(List::from_cells(hosted))
        }
        Value::DeviceList(l) => {
            let (values, mv) = host_vector(device, &l.values)?;
            add(mv);
            let start = Instant::now();
            let offsets = device
                .download_range(&l.offsets, 0, l.cells + 1)
                .map_err(|e| RuntimeError::new(format!("downloading a list: {e}")))?;
            add(Moved {
                bytes: 4 * (l.cells as u64 + 1),
                time: start.elapsed(),
            });
            let offsets = offsets.into_iter().map(|o| o as usize).collect();
            Value::List(List::flat(values, offsets)?)
        }
        Value::Dict(d) => {
            let (keys, mk) = host(device, &d.keys)?;
            let (values, mv) = host(device, &d.values)?;
            add(mk);
            add(mv);
            Value::Dict(crate::value::Dict {
                keys: Box::new(keys),
                values: Box::new(values),
            })
        }
        other => other.clone(),
    };
    Ok((hosted, moved))
}

/// A device vector's host copy, downloaded the first time.
/// Reads back, in one copy and one wait, every device vector of `values` (cells of lists
/// included) whose elements are not on the host yet, so that the reads of [`host`] that
/// follow find them there: a host step taking several device values (`@table` of a
/// query's result columns) waits once instead of once per value.
pub(crate) fn prefetch(device: &Device, values: &[&Value]) -> Result<Moved> {
    fn collect<'v>(value: &'v Value, out: &mut Vec<&'v DeviceVector>) {
        match value {
            Value::Device(d) if d.host().is_none() => out.push(d),
            Value::List(List::Mixed(cells)) => cells.iter().for_each(|c| collect(c, out)),
            _ => {}
        }
    }
    let mut vectors = Vec::new();
    for value in values {
        collect(value, &mut vectors);
    }
    if vectors.len() < 2 {
        return Ok(Moved::default());
    }
    let mut ranges = Vec::with_capacity(vectors.len());
    for d in &vectors {
        let element = GpuElement::of_type(&d.ty)
            .ok_or_else(|| RuntimeError::new(format!("{} values have no GPU layout", d.ty)))?;
        ranges.push((d.readable_buffer().raw(), 0, d.len as u64 * element.size()));
    }
    let start = Instant::now();
    let bytes = device
        .download_ranges(&ranges)
        .map_err(|e| RuntimeError::new(format!("downloading values: {e}")))?;
    let mut moved = Moved {
        bytes: 0,
        time: start.elapsed(),
    };
    for (d, bytes) in vectors.iter().zip(bytes) {
        keep_host_copy(d, &bytes)?;
        moved.bytes += d.byte_len();
    }
    Ok(moved)
}

/// Most bytes of one kernel output that [`read_with_count`] reads back with its count.
const READ_WITH_COUNT_BYTES: u64 = 256;

/// Whether a kernel output of at most `capacity` elements of `element`, whose length is a
/// count that the engine reads back right after the kernel, is read back in that same read.
/// A grouped kernel's results are a handful of rows, and a query's result or a host step
/// reads them next: read later, they cost a wait on the device of their own (some 50 us on
/// an H100, as much as TPC-H q1's other host work). Larger outputs stay on the device until
/// something asks for them.
pub(crate) fn read_with_count(capacity: u64, element: GpuElement) -> bool {
    capacity.saturating_mul(element.size()) <= READ_WITH_COUNT_BYTES
}

/// Keeps `bytes`, the first elements of `d`'s buffer read back, as its host copy (at most
/// `d.len` of them are kept).
pub(crate) fn keep_host_copy(d: &DeviceVector, bytes: &[u8]) -> Result<()> {
    d.set_host(vector_from_bytes(&d.ty, d.len, d.dict.clone(), bytes)?);
    Ok(())
}

/// The host vector of `len` elements of `ty` whose device words are the first bytes of
/// `bytes` (read back with a count, see [`keep_host_copy`]): a value that lives only on the
/// host, for outputs a kernel wrote only where the host maps them (a grouped kernel's, see
/// `ScratchPurpose::GroupResults`). A kernel that binds it later uploads it.
pub(crate) fn vector_from_bytes(
    ty: &crate::types::Type,
    len: usize,
    dict: Option<Arc<crate::value::StrDict>>,
    bytes: &[u8],
) -> Result<Vector> {
    let element = GpuElement::of_type(ty)
        .ok_or_else(|| RuntimeError::new(format!("{ty} values have no GPU layout")))?;
    let size = len * element.size() as usize;
    let bytes = bytes.get(..size).ok_or_else(|| {
        RuntimeError::new(format!(
            "a read-back of {} bytes for {len} elements of {ty}",
            bytes.len(),
        ))
    })?;
    let data = if element.size() == 8 {
        Downloaded::Wide(bytemuck::pod_collect_to_vec(bytes))
    } else {
        Downloaded::Words(bytemuck::pod_collect_to_vec(bytes))
    };
    vector_from_download(ty, data, dict)
}

fn host_vector(device: &Device, d: &DeviceVector) -> Result<(Vector, Moved)> {
    if let Some(v) = d.host() {
        return Ok((v.clone(), Moved::default()));
    }
    let start = Instant::now();
    let vector = download(device, d)?;
    let moved = Moved {
        bytes: d.byte_len(),
        time: start.elapsed(),
    };
    Ok((d.set_host(vector).clone(), moved))
}

/// Reads the elements of a device vector.
fn download(device: &Device, d: &DeviceVector) -> Result<Vector> {
    let element = GpuElement::of_type(&d.ty)
        .ok_or_else(|| RuntimeError::new(format!("{} values have no GPU layout", d.ty)))?;
    let failed = |e: crate::gpu::GpuError| RuntimeError::new(format!("downloading a value: {e}"));
    let buffer = d.readable_buffer();
    let data = if element.size() == 8 {
        // The same device buffer seen as 8-byte words: one copy from the staging memory
        // straight into the vector's allocation.
        let wide = GpuBuffer::<u64>::wrap(buffer.raw().clone(), buffer.len() / 2);
        Downloaded::Wide(device.download_range(&wide, 0, d.len).map_err(failed)?)
    } else {
        Downloaded::Words(device.download_range(buffer, 0, d.len).map_err(failed)?)
    };
    vector_from_download(&d.ty, data, d.dict.clone())
}

/// The buffer of a device vector, bound as `part` with elements `element`.
fn device_buffer(
    d: &DeviceVector,
    part: ValuePart,
    element: GpuElement,
) -> Result<Arc<GpuBuffer<u32>>> {
    if part != ValuePart::Elements {
        return Err(RuntimeError::new(format!(
            "a kernel reads the {part:?} of a {} vector",
            d.ty
        )));
    }
    let want = GpuElement::of_type(&d.ty)
        .ok_or_else(|| RuntimeError::new(format!("{} values have no GPU layout", d.ty)))?;
    if want != element {
        return Err(RuntimeError::new(format!(
            "a kernel binds a {} vector as {}, but it is {} on the GPU",
            d.ty,
            element.wgsl(),
            want.wgsl()
        )));
    }
    Ok(d.buffer.clone())
}

/// The address of the data behind `part` of host `value` (None for values without one).
fn key_of(value: &Value, part: ValuePart, element: GpuElement) -> Option<Key> {
    let address = match (value, part) {
        (Value::Vector(v), ValuePart::Elements) => vector_address(v),
        (Value::List(List::Flat { values, .. }), ValuePart::ListValues) => vector_address(values),
        (Value::List(List::Flat { offsets, .. }), ValuePart::ListOffsets) => {
            Arc::as_ptr(offsets) as usize
        }
        (Value::Enum(e), ValuePart::EnumKeys) => vector_address(&e.domain),
        (Value::Enum(e), ValuePart::EnumIndex) => Arc::as_ptr(&e.index) as usize,
        _ => return None,
    };
    Some((address, part, element))
}

pub(super) fn vector_address(v: &Vector) -> usize {
    match v {
        Vector::Bool(x) => Arc::as_ptr(x) as usize,
        Vector::Char(x) => Arc::as_ptr(x) as usize,
        Vector::I8(x) => Arc::as_ptr(x) as usize,
        Vector::I16(x) => Arc::as_ptr(x) as usize,
        Vector::I32(x)
        | Vector::Month(x)
        | Vector::Date(x)
        | Vector::Minute(x)
        | Vector::Second(x)
        | Vector::Time(x) => Arc::as_ptr(x) as usize,
        Vector::I64(x) | Vector::Dt(x) => Arc::as_ptr(x) as usize,
        Vector::F32(x) => Arc::as_ptr(x) as usize,
        Vector::F64(x) => Arc::as_ptr(x) as usize,
        Vector::Complex(x) => Arc::as_ptr(x) as usize,
        Vector::Sym(s) | Vector::Str(s) => Arc::as_ptr(&s.codes) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::{byte_codes_fit, code_words, CODED_DICTIONARY};

    #[test]
    fn a_byte_codes_at_most_a_dictionary_of_distinct_elements_of_one_or_two_words() {
        let words: Vec<u32> = (0..CODED_DICTIONARY as u32).flat_map(|k| [k, k]).collect();
        assert!(byte_codes_fit(&words, 1));
        assert!(byte_codes_fit(&words, 2));
        let mut more = words.clone();
        more.extend([7, 7]);
        assert!(byte_codes_fit(&more, 1), "7 again: still as many distinct");
        more.extend([u32::MAX, u32::MAX]);
        assert!(!byte_codes_fit(&more, 1));
        assert!(!byte_codes_fit(&more, 2));
        // Two-word elements that differ only in their high word are distinct.
        let high: Vec<u32> = (0..=CODED_DICTIONARY as u32).flat_map(|k| [5, k]).collect();
        assert!(!byte_codes_fit(&high, 2));
        assert!(byte_codes_fit(&high[..2 * CODED_DICTIONARY], 2));
    }

    /// The elements (as storage bits) that coded words say, `n` of them.
    fn decoded(coded: &[u32], per: usize, n: usize) -> Vec<u64> {
        let dictionary = CODED_DICTIONARY * per;
        (0..n)
            .map(|i| {
                let code = (coded[dictionary + i / 4] >> ((i % 4) * 8)) as usize & 0xff;
                let words = &coded[code * per..code * per + per];
                words
                    .iter()
                    .rev()
                    .fold(0u64, |b, w| (b << 32) | u64::from(*w))
            })
            .collect()
    }

    #[test]
    fn few_distinct_words_become_a_dictionary_in_the_order_met_and_a_byte_each() {
        let words = [7u32, 9, 7, 7, 3, 9];
        let coded = code_words(&words, 1).expect("three distinct");
        assert_eq!(&coded[..3], &[7, 9, 3]);
        assert_eq!(coded[CODED_DICTIONARY], u32::from_le_bytes([0, 1, 0, 0]));
        assert_eq!(
            coded[CODED_DICTIONARY + 1],
            u32::from_le_bytes([2, 1, 0, 0])
        );
        assert_eq!(coded.len() % 2, 0);
    }

    #[test]
    fn two_word_elements_keep_their_words_low_first() {
        let values = [0.05f64, 0.07, -0.0, 0.05, 24.0];
        let words: Vec<u32> = values
            .iter()
            .flat_map(|v| [v.to_bits() as u32, (v.to_bits() >> 32) as u32])
            .collect();
        let coded = code_words(&words, 2).expect("four distinct");
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(decoded(&coded, 2, values.len()), bits);
    }

    #[test]
    fn more_distinct_elements_than_a_byte_codes_are_not_coded() {
        let words: Vec<u32> = (0..=CODED_DICTIONARY as u32).collect();
        assert!(code_words(&words, 1).is_none());
        assert!(code_words(&words[..CODED_DICTIONARY], 1).is_some());
    }

    #[test]
    fn chunks_coded_apart_share_one_dictionary_in_the_order_a_single_pass_meets_it() {
        // Chunks of at least 64 Ki elements (as many as the host has threads): the parts
        // meet the values in other orders, and the last meets 253 more, for 256 in all.
        let n = 5 << 16;
        let words: Vec<u32> = (0..n as u32)
            .map(|i| match i >> 16 {
                0 => 10 + i % 2,
                1 => 11 - i % 2,
                2 => 12,
                3 => 10 + i % 3,
                _ => 12 + i % 254,
            })
            .collect();
        let coded = code_words(&words, 1).expect("256 distinct");
        let mut first_met: Vec<u32> = Vec::new();
        for w in &words {
            if !first_met.contains(w) {
                first_met.push(*w);
            }
        }
        assert_eq!(&coded[..CODED_DICTIONARY], first_met.as_slice());
        let expected: Vec<u64> = words.iter().map(|w| u64::from(*w)).collect();
        assert_eq!(decoded(&coded, 1, n), expected);
        let one_more: Vec<u32> = words.iter().copied().chain([999]).collect();
        assert!(code_words(&one_more, 1).is_none());
    }
}
