//! The byte-size model: what the allocator charges for each block a filter holds. `Size`,
//! `MEMORY USAGE`, `INFO bf` and the size limits (`bf.max-filter-bytes`, `maxmemory`) all count
//! by it, so a filter refused for passing a limit would really have passed it, and one accepted
//! reports a `Size` within it.
//!
//! Blocks are counted at jemalloc's size classes with a 16-byte quantum, rather than by asking the
//! running allocator, so that the figures are a function of the filter alone, the same on every
//! server. It is exactly what Debian's jemalloc charges (Redis 7.0 from Debian 12, Valkey 8.0 from
//! its backports). The jemalloc that Redis and Valkey bundle in their own builds has an 8-byte
//! quantum (classes 24, 40, 56 below 64 as well), so there it charges up to 8 bytes less for such a
//! small block (a bit array's last piece, a bookkeeping array); a server built with libc malloc
//! adds its own headers and page rounding (glibc: up to a page for a block it maps, a few bytes
//! otherwise, depending on the process's history). Both show in `used_memory` only.

/// The bytes of a key's value itself (the box the server keeps a Bloom filter's value in: one size
/// class exactly, checked where the type is defined).
pub const VALUE_BYTES: u64 = 32;

/// What jemalloc with a 16-byte quantum charges for a block of `len` bytes: its size class (8,
/// then multiples of 16 up to 128, then four classes per doubling: 160, 192, 224, 256, 320, ...),
/// saturating at `u64::MAX`.
pub const fn charged(len: u64) -> u64 {
    if len == 0 {
        0
    } else if len <= 8 {
        8
    } else if len <= 128 {
        len.next_multiple_of(16)
    } else {
        // Classes from 2^k + 1 to 2^(k+1) step by 2^(k-2).
        let k = u64::BITS - 1 - (len - 1).leading_zeros();
        let step = 1u64 << (k - 2);
        match len.checked_next_multiple_of(step) {
            Some(class) => class,
            None => u64::MAX,
        }
    }
}

/// What the allocator charges for an array of `count` values of `T`, allocated to the exact
/// count (nothing for an empty one, which allocates nothing).
pub fn charged_array<T>(count: u64) -> u64 {
    charged(count.saturating_mul(std::mem::size_of::<T>() as u64))
}

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
        // Powers of two are served exactly.
        for log2 in 3..63 {
            assert_eq!(charged(1 << log2), 1 << log2);
        }
        assert_eq!(charged(u64::MAX), u64::MAX);
    }
}
