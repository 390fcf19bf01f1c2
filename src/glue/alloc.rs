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

use super::aligned::{over_aligned, over_aligned_base, MIN_ALIGN};
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
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const LAZY_ZERO_BYTES: usize = 256 << 10;

#[cfg(target_os = "linux")]
mod kernel {
    use std::os::raw::{c_int, c_long, c_void};

    /// `MADV_DONTNEED` (4 on every Linux architecture): the range reads as zeros from then on.
    pub const MADV_DONTNEED: c_int = 4;
    /// `_SC_PAGESIZE` in glibc and musl.
    pub const SC_PAGESIZE: c_int = 30;

    extern "C" {
        pub fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        pub fn sysconf(name: c_int) -> c_long;
    }
}

/// Zeroes `size` bytes at `block`, lazily where the block spans whole pages (see the module
/// documentation).
///
/// # Safety
/// `block` must be valid for writes of `size` bytes, and be a private anonymous mapping's memory
/// (what the server's allocator hands out for big blocks), so that released pages read as zeros.
unsafe fn zero(block: *mut u8, size: usize) {
    #[cfg(target_os = "linux")]
    if size >= LAZY_ZERO_BYTES {
        let page = usize::try_from(kernel::sysconf(kernel::SC_PAGESIZE)).unwrap_or(0);
        if page.is_power_of_two() {
            let start = (block as usize).next_multiple_of(page);
            let end = (block as usize + size) & !(page - 1);
            if end > start
                && kernel::madvise(start as *mut _, end - start, kernel::MADV_DONTNEED) == 0
            {
                block.write_bytes(0, start - block as usize);
                (end as *mut u8).write_bytes(0, block as usize + size - end);
                return;
            }
        }
    }
    block.write_bytes(0, size);
}

// SAFETY (for every method): the Redis allocator functions are filled in by RedisModule_Init
// before any Rust code of the module runs, and Redis calls module code only on threads where they
// are valid. Layouts the server's blocks are aligned for are padded as explained on `padded`;
// others go through `over_aligned`.
unsafe impl GlobalAlloc for RedisAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            return over_aligned(layout, |size| server_alloc(size));
        };
        server_alloc(size)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            let user = over_aligned(layout, |size| server_alloc(size));
            if !user.is_null() {
                zero(user, layout.size());
            }
            return user;
        };
        match (
            raw::RedisModule_TryCalloc,
            raw::RedisModule_TryAlloc,
            raw::RedisModule_Calloc,
        ) {
            (Some(try_calloc), _, _) => try_calloc(1, size).cast(),
            (None, Some(try_alloc), _) => {
                let block = try_alloc(size).cast::<u8>();
                if !block.is_null() {
                    zero(block, size);
                }
                block
            }
            (None, None, Some(calloc)) => calloc(1, size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let Some(size) = padded(new_layout) else {
            // A new block, the bytes copied, the old one freed (as GlobalAlloc's default).
            let user = self.alloc(new_layout);
            if !user.is_null() {
                std::ptr::copy_nonoverlapping(ptr, user, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            return user;
        };
        match (raw::RedisModule_TryRealloc, raw::RedisModule_Realloc) {
            (Some(try_realloc), _) => try_realloc(ptr.cast::<c_void>(), size).cast(),
            (None, Some(realloc)) => realloc(ptr.cast::<c_void>(), size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let block = if padded(layout).is_some() {
            ptr
        } else {
            over_aligned_base(ptr)
        };
        if let Some(free) = raw::RedisModule_Free {
            free(block.cast::<c_void>());
        }
    }
}

/// A block of `size` bytes from the server's allocator: `TryAlloc` where the server has it (a
/// failure is a null pointer), `Alloc` otherwise.
///
/// # Safety
/// The module API must be bound (see the impl's note).
unsafe fn server_alloc(size: usize) -> *mut u8 {
    match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
        (Some(try_alloc), _) => try_alloc(size).cast(),
        (None, Some(alloc)) => alloc(size).cast(),
        _ => std::ptr::null_mut(),
    }
}
