//! Blocks aligned beyond what the server's allocator guarantees, carved out of bigger ones: the
//! arithmetic of the module's global allocator ([`super::alloc`]) for such layouts, kept apart from
//! the server's API so that unit tests can run it on the system's allocator.

use std::alloc::Layout;

/// The alignment every block of the server's allocator has, on every build: jemalloc's is at
/// least 8 (Redis's bundled build has an 8-byte quantum), glibc's malloc 16, and a server built
/// with libc malloc where its zmalloc keeps a size prefix (musl) hands out blocks 8 past malloc's.
pub const MIN_ALIGN: usize = 8;

/// Serves a layout aligned beyond [`MIN_ALIGN`] (no type of the module asks for one today, but
/// jemalloc's size classes are no guarantee on every server): a block `align` bytes larger, whose
/// first aligned address with room for a word before it is handed out, the block's own address
/// in that word. `alloc` is the server's allocation function; null if it fails (or if the size
/// overflowed, which no valid layout's can).
///
/// # Safety
/// `alloc` must return null or a block of at least the asked size aligned to [`MIN_ALIGN`].
pub unsafe fn over_aligned(layout: Layout, alloc: impl FnOnce(usize) -> *mut u8) -> *mut u8 {
    let Some(size) = layout.size().checked_add(layout.align()) else {
        return std::ptr::null_mut();
    };
    let base = alloc(size);
    if base.is_null() {
        return base;
    }
    // The first multiple of `align` past the word: at most `align` bytes in (align > 8).
    let offset = layout.align() - (base as usize) % layout.align();
    let offset = if offset < std::mem::size_of::<usize>() {
        offset + layout.align()
    } else {
        offset
    };
    // SAFETY: `offset` <= `align`, and the block has `align` bytes more than the layout, so the
    // handed-out range and the word before it lie inside it; the word is aligned to 8 as both
    // `base` (MIN_ALIGN) and `offset` (a multiple of 8 here) are.
    unsafe {
        let user = base.add(offset);
        user.cast::<usize>().sub(1).write(base as usize);
        user
    }
}

/// The block [`over_aligned`] allocated for `user`.
///
/// # Safety
/// `user` must come from [`over_aligned`] and not have been freed.
pub unsafe fn over_aligned_base(user: *mut u8) -> *mut u8 {
    // SAFETY: over_aligned wrote the block's address in the word before `user`.
    unsafe { user.cast::<usize>().sub(1).read() as *mut u8 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, System};

    #[test]
    fn over_aligned_blocks_are_aligned_writable_and_lead_back_to_their_base() {
        for align in [16, 32, 64, 256, 4096, 1 << 16] {
            for size in [1, 7, 64, 1000, 5000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let mut base = std::ptr::null_mut();
                // SAFETY: System's blocks of MIN_ALIGN alignment stand for the server's.
                let user = unsafe {
                    over_aligned(layout, |size| {
                        base = System.alloc(Layout::from_size_align(size, MIN_ALIGN).unwrap());
                        base
                    })
                };
                assert!(!user.is_null());
                assert_eq!(user as usize % align, 0, "{size} bytes at {align}");
                assert!(user as usize >= base as usize + std::mem::size_of::<usize>());
                assert!(user as usize + size <= base as usize + size + align);
                // SAFETY: `user` came from over_aligned, with `size` bytes of its own.
                unsafe {
                    user.write_bytes(0xAB, size);
                    assert_eq!(over_aligned_base(user), base);
                    System.dealloc(
                        base,
                        Layout::from_size_align(size + align, MIN_ALIGN).unwrap(),
                    );
                }
            }
        }
    }

    #[test]
    fn a_failed_allocation_is_null() {
        let layout = Layout::from_size_align(64, 64).unwrap();
        // SAFETY: the allocation function fails.
        assert!(unsafe { over_aligned(layout, |_| std::ptr::null_mut()) }.is_null());
    }
}
