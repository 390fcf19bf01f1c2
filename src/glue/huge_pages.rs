//! Transparent huge pages for big filters (`bf.huge-pages`, on by default).
//!
//! A random probe of a big filter costs a cache miss and, with 4 KiB pages, a page walk as well
//! (on a virtual machine, several memory reads). Where the kernel's mode is `madvise` (Redis and
//! Valkey leave huge pages to the process then, and ask for none themselves), the module asks for
//! them on the blocks of [`MIN_BYTES`] and more that hold filters: every piece of a bit array of
//! 2 MiB or more (its pieces are at least an eighth of it, see `filters::bits`) and a cuckoo
//! sub-filter's buckets of that size. A new block asks before its first byte is touched, so
//! the kernel backs it with huge pages as it is filled in; a block loaded from an RDB file or a
//! RESTORE asks once read, and the kernel's khugepaged merges its pages in the background.
//!
//! Nothing changes in what a filter holds or what the allocator charges: the request is advice
//! about pages the block already has. A block gives it back before it is freed, so that the
//! allocator's later small blocks in the same memory do not inherit it. In the kernel's `always`
//! mode every range gets huge pages unless the server turned them off for itself (Redis does with
//! `disable-thp yes`); in `never`, none can be had: either way the module asks for nothing.
//! `INFO bf` tells which (`bf_huge_pages`) and how many bytes are on huge pages.

use super::kernel::{advise, Advice};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// Blocks from this size up ask for huge pages: the smallest piece of a 2 MiB bit array.
pub const MIN_BYTES: usize = 256 << 10;

/// The kernel's mode, as `/sys/kernel/mm/transparent_hugepage/enabled` says it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KernelMode {
    /// No such file: a kernel without transparent huge pages (or not Linux).
    Unsupported = 0,
    Never = 1,
    Madvise = 2,
    Always = 3,
}

/// The kernel's mode, read at load ([`read_kernel_mode`]).
static KERNEL: AtomicU8 = AtomicU8::new(KernelMode::Unsupported as u8);
/// True once a block has asked: from then on, freed blocks give the request back.
static ASKED: AtomicBool = AtomicBool::new(false);

/// Parses the `enabled` file: the word in brackets.
pub fn parse_mode(text: &str) -> KernelMode {
    let chosen = text
        .split_whitespace()
        .find_map(|word| word.strip_prefix('[')?.strip_suffix(']'));
    match chosen {
        Some("always") => KernelMode::Always,
        Some("madvise") => KernelMode::Madvise,
        Some("never") => KernelMode::Never,
        _ => KernelMode::Unsupported,
    }
}

/// Reads the kernel's mode (at load).
pub fn read_kernel_mode() {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map_or(KernelMode::Unsupported, |text| parse_mode(&text));
    KERNEL.store(mode as u8, Ordering::Relaxed);
}

fn kernel_mode() -> KernelMode {
    match KERNEL.load(Ordering::Relaxed) {
        1 => KernelMode::Never,
        2 => KernelMode::Madvise,
        3 => KernelMode::Always,
        _ => KernelMode::Unsupported,
    }
}

/// True if a new big block should ask now: the kernel grants on request and `bf.huge-pages` is
/// on.
pub fn asking() -> bool {
    kernel_mode() == KernelMode::Madvise && crate::config::huge_pages()
}

/// Asks for huge pages for a block of `len` bytes, if it is big enough and [`asking`].
///
/// # Safety
/// `block` must be a block of at least `len` bytes of the server's allocator that holds a filter's
/// array.
#[cfg_attr(any(test, feature = "standalone"), allow(dead_code))]
pub unsafe fn ask(block: *mut u8, len: usize) {
    if len >= MIN_BYTES && asking() {
        ASKED.store(true, Ordering::Relaxed);
        // SAFETY: the caller's block; the advice changes no byte of it.
        unsafe { advise(block, len, Advice::HugePage) };
    }
}

/// Takes the request back for a block of `len` bytes about to be freed (a no-op unless some
/// block asked: in the `madvise` mode, not asking is the same as never having asked).
///
/// # Safety
/// `block` must be a live block of at least `len` bytes of the server's allocator.
#[cfg_attr(any(test, feature = "standalone"), allow(dead_code))]
pub unsafe fn give_back(block: *mut u8, len: usize) {
    if len >= MIN_BYTES && ASKED.load(Ordering::Relaxed) {
        // SAFETY: the caller's block; the advice changes no byte of it.
        unsafe { advise(block, len, Advice::NoHugePage) };
    }
}

/// What `INFO bf` says in `bf_huge_pages`: `on` (the module asks), `off` (`bf.huge-pages no`),
/// `kernel-always`, `kernel-never`, or `unsupported` (the kernel has none).
pub fn status() -> &'static std::ffi::CStr {
    match kernel_mode() {
        KernelMode::Madvise if crate::config::huge_pages() => c"on",
        KernelMode::Madvise => c"off",
        KernelMode::Always => c"kernel-always",
        KernelMode::Never => c"kernel-never",
        KernelMode::Unsupported => c"unsupported",
    }
}

/// The server's anonymous memory on transparent huge pages, in bytes (`AnonHugePages` of
/// `/proc/self/smaps_rollup`, or the sum over `/proc/self/smaps` on kernels before 4.14): in
/// the kernel's `madvise` mode only ranges that asked have any, and the server asks for none.
/// 0 where the module never asked and the kernel's mode is not `always`.
///
/// The kernel counts it by walking the process's page tables, about 22 ms per GB of small pages
/// here: far too long for a command. So the reading is made by a short-lived thread of its own,
/// started by this call when none is running, and this call answers the last reading (at most a
/// moment old when INFO is read at any pace; 0 before the first).
pub fn bytes() -> u64 {
    let worth_reading = ASKED.load(Ordering::Relaxed) || kernel_mode() == KernelMode::Always;
    if worth_reading && !READING.swap(true, Ordering::AcqRel) {
        let spawned = std::thread::Builder::new()
            .name("bf-huge-pages".into())
            .spawn(|| {
                let read = |path: &str| std::fs::read_to_string(path).ok();
                let text = read("/proc/self/smaps_rollup").or_else(|| read("/proc/self/smaps"));
                ON_HUGE_PAGES.store(
                    text.map_or(0, |text| anon_huge_bytes(&text)),
                    Ordering::Relaxed,
                );
                READING.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            READING.store(false, Ordering::Release);
        }
    }
    ON_HUGE_PAGES.load(Ordering::Relaxed)
}

/// The last reading of [`bytes`].
static ON_HUGE_PAGES: AtomicU64 = AtomicU64::new(0);
/// True while a thread reads it.
static READING: AtomicBool = AtomicBool::new(false);

/// The sum of the `AnonHugePages:` lines of an smaps text, in bytes.
pub fn anon_huge_bytes(text: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.strip_prefix("AnonHugePages:"))
        .filter_map(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_mode_is_the_word_in_brackets() {
        assert_eq!(parse_mode("always [madvise] never\n"), KernelMode::Madvise);
        assert_eq!(parse_mode("[always] madvise never\n"), KernelMode::Always);
        assert_eq!(parse_mode("always madvise [never]\n"), KernelMode::Never);
        assert_eq!(parse_mode(""), KernelMode::Unsupported);
    }

    #[test]
    fn anon_huge_pages_are_summed_in_bytes() {
        let text = "Rss: 100 kB\nAnonHugePages:      4096 kB\nSwap: 0 kB\nAnonHugePages: 2048 kB\n";
        assert_eq!(anon_huge_bytes(text), 6144 * 1024);
        assert_eq!(anon_huge_bytes("Rss: 1 kB\n"), 0);
    }
}
