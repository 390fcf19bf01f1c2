//! A filter's byte size, asked of one place: what `BF.INFO` reports as `Size`, `MEMORY USAGE`
//! builds on, `INFO bf` sums and the size limits measure growth by.

use bf_filter::Filter;

/// What jemalloc with a 16-byte quantum charges for a block of `len` bytes: its size class (8,
/// then multiples of 16 up to 128, then four classes per doubling: 160, 192, 224, 256, 320, ...).
/// Filters are measured by this model rather than by asking the running allocator, so that `Size`
/// and `MEMORY USAGE` are a function of the filter alone, the same on every server. It is exactly
/// what Debian's jemalloc charges (Redis 7.0 from Debian 12, Valkey 8.0 from its backports). The
/// jemalloc that Redis and Valkey bundle in their own builds has an 8-byte quantum (classes 24, 40,
/// 56 below 64 as well), so there it charges up to 8 bytes less for such a small block (a bit
/// array's last piece, a bookkeeping array); a server built with libc malloc adds its own headers
/// and page rounding (glibc: up to a page for a block it maps, a few bytes otherwise, depending on
/// the process's history). Both show in `used_memory` only.
pub const fn charged(len: usize) -> usize {
    if len == 0 {
        0
    } else if len <= 8 {
        8
    } else if len <= 128 {
        len.next_multiple_of(16)
    } else {
        // Classes from 2^k + 1 to 2^(k+1) step by 2^(k-2).
        let k = usize::BITS - 1 - (len - 1).leading_zeros();
        len.next_multiple_of(1 << (k - 2))
    }
}

/// The bytes a filter occupies: every block it holds, at the size jemalloc charges for it (see
/// [`charged`]). `MEMORY USAGE` builds on this figure, and BF.INFO reports it as `Size`.
pub fn memory_usage(filter: &Filter) -> usize {
    // The value's own box: its size is one of the allocator's size classes (checked below), so
    // it is charged exactly; the filter need not be asked where it lives.
    let mut total = std::mem::size_of::<Filter>();
    filter.visit_allocations(&mut |_, len| total += charged(len));
    total
}

// Small jemalloc size classes are the multiples of 16 up to 128.
const _: () = assert!(
    std::mem::size_of::<Filter>().is_multiple_of(16) && std::mem::size_of::<Filter>() <= 128,
    "the value's box would be rounded up by the allocator"
);

#[cfg(test)]
mod tests {
    use super::charged;

    #[test]
    fn blocks_are_charged_jemallocs_size_classes() {
        // jemalloc's size classes (its manual's table). On Debian's Redis 7.0 (jemalloc 5.3.0), 120
        // filters of every shape gave the same Size by this model as by MallocSize (2026-11-24).
        let cases = [
            (0, 0),
            (1, 8),
            (8, 8),
            (9, 16),
            (96, 96),
            (100, 112),
            (128, 128),
            (129, 160),
            (144, 160),
            (257, 320),
            (576, 640),
            (1025, 1280),
            (4096, 4096),
            (4097, 5120),
            (1 << 20, 1 << 20),
            ((1 << 20) + 1, 1_310_720),
            (16 << 20, 16 << 20),
        ];
        for (len, class) in cases {
            assert_eq!(charged(len), class, "{len} bytes");
        }
        // Powers of two and the bit arrays' pieces are served exactly.
        for log2 in 4..30 {
            assert_eq!(charged(1 << log2), 1 << log2);
        }
    }
}
