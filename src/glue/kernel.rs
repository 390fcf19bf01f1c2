//! The two calls of the kernel the module makes itself: `madvise` on the whole pages inside a
//! block (to zero it lazily, to ask for huge pages or take the request back) and the page size.
//! Linux only; elsewhere every advice is refused and nothing changes.

use std::os::raw::c_int;

/// An advice to the kernel about a range of memory.
#[cfg_attr(any(test, feature = "standalone"), allow(dead_code))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Advice {
    /// `MADV_DONTNEED` (4): the pages are handed back; the range reads as zeros from then on.
    DontNeed,
    /// `MADV_HUGEPAGE` (14): back the range with transparent huge pages where the kernel can.
    HugePage,
    /// `MADV_NOHUGEPAGE` (15): do not. In the kernel's `madvise` mode this is what a range that
    /// never asked gets.
    NoHugePage,
}

impl Advice {
    /// Its number, the same on every Linux architecture.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn number(self) -> c_int {
        match self {
            Advice::DontNeed => 4,
            Advice::HugePage => 14,
            Advice::NoHugePage => 15,
        }
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use std::os::raw::{c_int, c_long, c_void};

    /// `_SC_PAGESIZE` in glibc and musl.
    pub const SC_PAGESIZE: c_int = 30;

    extern "C" {
        pub fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        pub fn sysconf(name: c_int) -> c_long;
    }
}

/// The page size, if the system says one that is a power of two.
pub fn page_size() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf reads a constant of the system.
        let page = usize::try_from(unsafe { sys::sysconf(sys::SC_PAGESIZE) }).ok()?;
        page.is_power_of_two().then_some(page)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// The whole pages inside `len` bytes at `start`: their first address and their length (0 if
/// the block holds no whole page).
pub fn whole_pages(start: usize, len: usize, page: usize) -> (usize, usize) {
    let first = start.next_multiple_of(page);
    let end = (start + len) & !(page - 1);
    (first, end.saturating_sub(first))
}

/// Gives `advice` for the whole pages inside `len` bytes at `block`; the range it applied to
/// (first address and length), or `None` if there was none or the kernel refused.
///
/// # Safety
/// `block` must be valid for `len` bytes, and the caller must want `advice` for every whole page
/// inside them (a `DontNeed` page reads as zeros afterwards).
pub unsafe fn advise(block: *mut u8, len: usize, advice: Advice) -> Option<(usize, usize)> {
    let page = page_size()?;
    let (first, pages) = whole_pages(block as usize, len, page);
    if pages == 0 {
        return None;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: whole pages inside the caller's block, given the caller's advice.
        let answer = unsafe { sys::madvise(first as *mut _, pages, advice.number()) };
        (answer == 0).then_some((first, pages))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = advice;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_pages_lie_inside_the_block() {
        assert_eq!(whole_pages(4096, 8192, 4096), (4096, 8192));
        assert_eq!(whole_pages(4097, 8192, 4096), (8192, 4096));
        assert_eq!(whole_pages(4097, 4095, 4096), (8192, 0));
        assert_eq!(whole_pages(100, 50, 4096), (4096, 0));
        assert_eq!(whole_pages(0, 1 << 21, 1 << 21), (0, 1 << 21));
    }
}
