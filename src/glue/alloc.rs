//! The global allocator inside Redis: every byte goes through the server's allocator, so
//! `used_memory`, `maxmemory` and `MEMORY USAGE` see it.
//!
//! Where the running server has the try-allocate API (`RedisModule_TryAlloc`: Redis 7.0 has it;
//! `TryCalloc` and `TryRealloc` came later), a failed allocation comes back as a null pointer
//! instead of aborting the server: the filter code allocates its bit arrays fallibly and answers
//! an error. Other allocations failing abort as Redis's own do; realloc can grow in place.
//!
//! Zeroed allocations (the bit arrays of new filters) use `TryCalloc` when the server has it.
//! Redis 7.0 has none, and zeroing a big block by hand would stall the server (about 1.2 s for a
//! 1 GiB filter here) and make its resident memory jump by the whole size at once: instead the
//! page-aligned interior of a big block is handed back to the kernel with
//! `madvise(MADV_DONTNEED)`, after which it reads as zeros and is filled in page by page as bits
//! are set, and only the edges are zeroed by hand. The allocator still charges the whole block, so
//! `used_memory`, `MEMORY USAGE` and `maxmemory` count every byte of it.
//!
//! Big zeroed blocks (a filter's array) ask for transparent huge pages before their first byte is
//! touched, and every big block gives the request back before it is freed ([`super::huge_pages`]).

use super::aligned::{over_aligned, over_aligned_base, MIN_ALIGN};
use super::huge_pages;
use super::kernel::{advise, Advice};
use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::c_void;

/// Allocates through the Redis module API. Usable only once the module is loaded.
pub struct RedisAllocator;

/// The size to ask the server for a layout its blocks' own alignment serves, or `None` if the
/// layout needs more (then [`over_aligned`] serves it).
fn padded(layout: Layout) -> Option<usize> {
    (layout.align() <= MIN_ALIGN).then(|| layout.size().next_multiple_of(layout.align()))
}

/// Blocks from this size up are zeroed by giving their pages back to the kernel; smaller ones
/// (a few pages at most) by hand.
const LAZY_ZERO_BYTES: usize = 256 << 10;

/// Zeroes `size` bytes at `block`, lazily where the block spans whole pages (see the module
/// documentation).
///
/// # Safety
/// `block` must be valid for writes of `size` bytes, and be a private anonymous mapping's memory
/// (what the server's allocator hands out for big blocks), so that released pages read as zeros.
unsafe fn zero(block: *mut u8, size: usize) {
    if size >= LAZY_ZERO_BYTES {
        // SAFETY: the caller's block, whose whole pages then read as zeros (the caller's
        // contract).
        if let Some((start, len)) = unsafe { advise(block, size, Advice::DontNeed) } {
            // SAFETY: the edges before and after those pages, inside the block too.
            unsafe {
                block.write_bytes(0, start - block as usize);
                ((start + len) as *mut u8).write_bytes(0, block as usize + size - start - len);
            }
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { block.write_bytes(0, size) };
}

/// A zeroed block of `size` bytes (at least [`huge_pages::MIN_BYTES`]) that asks for huge pages
/// before any of its pages is touched, so that they are huge from the first: allocated, advised,
/// then zeroed lazily (its pages handed back to the kernel), whatever zeroed allocation the
/// server has.
fn zeroed_on_huge_pages(size: usize) -> *mut u8 {
    let block = server_alloc(size);
    if !block.is_null() {
        // SAFETY: a block of `size` bytes from the server's allocator, for a filter's array.
        unsafe {
            huge_pages::ask(block, size);
            zero(block, size);
        }
    }
    block
}

/// The server's allocation functions, read from the module API table. RedisModule_Init fills
/// the table in before any Rust code of the module runs (nothing is allocated before it:
/// `super::module::load`), and nothing changes it afterwards; an entry is `None` where the
/// server lacks the function.
macro_rules! api {
    ($name:ident) => {
        // SAFETY: a read of the bound API table (see above), on a thread Redis runs module code on.
        unsafe { raw::$name }
    };
}

// SAFETY: every block comes from the server's allocator (see `api!`), with a size and alignment
// that serve the layout: layouts the server's blocks are aligned for are padded as explained on
// `padded`, others go through `over_aligned`; each block is freed the way it was allocated.
unsafe impl GlobalAlloc for RedisAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            // SAFETY: server_alloc returns null or a block aligned to MIN_ALIGN.
            return unsafe { over_aligned(layout, server_alloc) };
        };
        server_alloc(size)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            // SAFETY: as in `alloc`.
            let user = unsafe { over_aligned(layout, server_alloc) };
            if !user.is_null() {
                // SAFETY: a block of at least `layout.size()` bytes from the server's allocator.
                unsafe { zero(user, layout.size()) };
            }
            return user;
        };
        if size >= huge_pages::MIN_BYTES && huge_pages::asking() {
            return zeroed_on_huge_pages(size);
        }
        match (
            api!(RedisModule_TryCalloc),
            api!(RedisModule_TryAlloc),
            api!(RedisModule_Calloc),
        ) {
            // SAFETY: the server's allocator, asked for one block of `size` bytes.
            (Some(try_calloc), _, _) => unsafe { try_calloc(1, size) }.cast(),
            (None, Some(try_alloc), _) => {
                // SAFETY: as above.
                let block = unsafe { try_alloc(size) }.cast::<u8>();
                if !block.is_null() {
                    // SAFETY: a block of `size` bytes from the server's allocator.
                    unsafe { zero(block, size) };
                }
                block
            }
            // SAFETY: as above.
            (None, None, Some(calloc)) => unsafe { calloc(1, size) }.cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract: `new_size`, rounded up to `layout.align()`, does not
        // overflow, and the alignment is a valid one (it is the layout's).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let Some(size) = padded(new_layout) else {
            // A new block, the bytes copied, the old one freed (as GlobalAlloc's default).
            // SAFETY: a layout of non-zero size (GlobalAlloc's contract for realloc).
            let user = unsafe { self.alloc(new_layout) };
            if !user.is_null() {
                // SAFETY: both blocks hold at least the bytes copied, and are distinct; `ptr`
                // was allocated here with `layout`.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, user, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            return user;
        };
        match (api!(RedisModule_TryRealloc), api!(RedisModule_Realloc)) {
            // SAFETY: `ptr` is a block of the server's allocator (padded layouts are allocated
            // unshifted), resized to `size` bytes.
            (Some(try_realloc), _) => unsafe { try_realloc(ptr.cast::<c_void>(), size) }.cast(),
            // SAFETY: as above.
            (None, Some(realloc)) => unsafe { realloc(ptr.cast::<c_void>(), size) }.cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a live block of at least `layout.size()` bytes at `ptr`, freed just below.
        unsafe { huge_pages::give_back(ptr, layout.size()) };
        let block = if padded(layout).is_some() {
            ptr
        } else {
            // SAFETY: an over-aligned layout's block came from over_aligned.
            unsafe { over_aligned_base(ptr) }
        };
        if let Some(free) = api!(RedisModule_Free) {
            // SAFETY: the block the server's allocator handed out for `ptr`.
            unsafe { free(block.cast::<c_void>()) };
        }
    }
}

/// A block of `size` bytes from the server's allocator: `TryAlloc` where the server has it (a
/// failure is a null pointer), `Alloc` otherwise; aligned to at least [`MIN_ALIGN`].
fn server_alloc(size: usize) -> *mut u8 {
    match (api!(RedisModule_TryAlloc), api!(RedisModule_Alloc)) {
        // SAFETY: the server's allocator, asked for `size` bytes (null if it has none to give).
        (Some(try_alloc), _) => unsafe { try_alloc(size) }.cast(),
        // SAFETY: as above (this one aborts the server instead).
        (None, Some(alloc)) => unsafe { alloc(size) }.cast(),
        _ => std::ptr::null_mut(),
    }
}
