//! The global allocator inside Redis: every byte goes through the server's allocator, so
//! `used_memory`, `maxmemory` and `MEMORY USAGE` see it.
//!
//! Unlike the allocator redis-module ships, this one forwards zeroed allocations to
//! `RedisModule_Calloc` (a fresh filter's pages stay untouched until bits are set, instead of being
//! written with zeros first) and reallocations to `RedisModule_Realloc` (which can grow in place).

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
        match (raw::RedisModule_Alloc, padded(layout)) {
            (Some(alloc), Some(size)) => alloc(size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match (raw::RedisModule_Calloc, padded(layout)) {
            (Some(calloc), Some(size)) => calloc(1, size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (raw::RedisModule_Realloc, padded(new_layout)) {
            (Some(realloc), Some(size)) => realloc(ptr.cast::<c_void>(), size).cast(),
            _ => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if let Some(free) = raw::RedisModule_Free {
            free(ptr.cast::<c_void>());
        }
    }
}
