//! A filter's byte size, asked of one place: what `BF.INFO` reports as `Size`, `MEMORY USAGE`
//! builds on, `INFO bf` sums and the size limits measure growth by.

use filters::bloom::Filter;
use filters::bytes::charged;
use filters::cuckoo::Cuckoo;

/// The bytes a filter occupies: every block it holds, at the size jemalloc charges for it (the
/// model of [`filters::bytes`]). `MEMORY USAGE` builds on this figure, and BF.INFO reports it
/// as `Size`; it equals [`Filter::planned_size`], which the size limits bound.
pub fn memory_usage(filter: &Filter) -> usize {
    // The value's own box: its size is one of the allocator's size classes (checked with the
    // type), so it is charged exactly; the filter need not be asked where it lives.
    let mut total = std::mem::size_of::<Filter>();
    filter.visit_allocations(&mut |_, len| total += charged(len as u64) as usize);
    total
}

/// The bytes a cuckoo filter occupies: its value's box and every block it holds, at the size
/// jemalloc charges for it. It equals `Cuckoo::planned_size`, which the size limits bound.
pub fn cuckoo_memory_usage(filter: &Cuckoo) -> usize {
    let mut total = charged(std::mem::size_of::<Cuckoo>() as u64) as usize;
    filter.visit_allocations(&mut |_, len| total += charged(len as u64) as usize);
    total
}
