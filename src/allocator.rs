//! The global allocator the `horsec` binary installs.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The allocator of the `horsec` binary (and of the examples that time what it does):
/// mimalloc rather than the system allocator: compiling a query allocates many small values
/// (facts, shapes, WGSL strings), and glibc's malloc was a quarter of compile time.
///
/// The plain entry points serve every layout whose alignment mimalloc gives all its blocks
/// anyway; the `mimalloc` crate's allocator takes the aligned ones for every layout, which
/// cost about twice the instructions per allocation (callgrind, a warm TPC-H q1 run: 221
/// allocations, 13,100 instructions in them, a tenth of the run's host work).
pub struct Mimalloc;

/// The alignment of every mimalloc block (`MI_MAX_ALIGN_SIZE`).
const MIMALLOC_ALIGNMENT: usize = 16;

/// A block for `layout` from `plain` (which takes the size) where mimalloc's own alignment
/// is enough, else from `aligned` (which takes the size and the alignment).
///
/// # Safety
/// As [`GlobalAlloc::alloc`]: `layout`'s size is not 0.
#[inline]
unsafe fn new_block(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    let block = if layout.align() <= MIMALLOC_ALIGNMENT {
        unsafe { plain(layout.size()) }
    } else {
        unsafe { aligned(layout.size(), layout.align()) }
    };
    block.cast()
}

// SAFETY: mimalloc's functions are thread-safe, give blocks aligned to at least
// MIMALLOC_ALIGNMENT (the aligned variants to the layout's alignment), and free any of them
// with `mi_free`; sizes are never 0 (GlobalAlloc's contract).
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { new_block(layout, mi_malloc, mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { new_block(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let block = if layout.align() <= MIMALLOC_ALIGNMENT {
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            unsafe { mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }
        };
        block.cast()
    }
}
