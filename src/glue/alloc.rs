//! The global allocator inside Redis: every byte goes through the server's allocator, so
//! `used_memory`, `maxmemory` and `MEMORY USAGE` see it.
//!
//! Where the running server has the try-allocate API (`RedisModule_TryAlloc`: Redis 7.0 has it;
//! `TryCalloc` and `TryRealloc` came later), a failed allocation comes back as a null pointer
//! instead of aborting the server: the filter code allocates its bit arrays fallibly and answers
//! an error. Other allocations failing abort as Redis's own do. Zeroed allocations use
//! `TryCalloc` when there is one, otherwise `TryAlloc` and zeroing (so the pages are touched, and
//! the memory Redis counts is the memory the process holds); realloc can grow in place.

use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::c_void;

/// Allocates through the Redis module API. Usable only once the module is loaded.
pub struct RedisAllocator;

/// Every layout is served by jemalloc size classes, which are aligned to their size's largest
/// power-of-two divisor up to a page; padding the size to a multiple of the alignment is
/// therefore enough to get an aligned block. Larger alignments (no type here asks for one) are
/// refused, which Rust reports as an allocation failure rather than a misaligned block.
fn padded(layout: Layout) -> Option<usize> {
    (layout.align() <= 4096).then(|| layout.size().next_multiple_of(layout.align()))
}

// SAFETY (for every method): the Redis allocator functions are filled in by RedisModule_Init
// before any Rust code of the module runs, and Redis calls module code only on threads where they
// are valid. Sizes are padded to the alignment as explained on `padded`.
unsafe impl GlobalAlloc for RedisAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            return std::ptr::null_mut();
        };
        match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
            (Some(try_alloc), _) => try_alloc(size).cast(),
            (None, Some(alloc)) => alloc(size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let Some(size) = padded(layout) else {
            return std::ptr::null_mut();
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
                    block.write_bytes(0, size);
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
            return std::ptr::null_mut();
        };
        match (raw::RedisModule_TryRealloc, raw::RedisModule_Realloc) {
            (Some(try_realloc), _) => try_realloc(ptr.cast::<c_void>(), size).cast(),
            (None, Some(realloc)) => realloc(ptr.cast::<c_void>(), size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if let Some(free) = raw::RedisModule_Free {
            free(ptr.cast::<c_void>());
        }
    }
}
