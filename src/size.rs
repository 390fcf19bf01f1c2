//! A filter's byte size, asked of one place: what `BF.INFO` reports as `Size`, `MEMORY USAGE`
//! builds on, `INFO bf` sums and the size limits measure growth by.

use bf_filter::bytes::charged;
use bf_filter::Filter;

/// The bytes a filter occupies: every block it holds, at the size jemalloc charges for it (the
/// model of [`bf_filter::bytes`]). `MEMORY USAGE` builds on this figure, and BF.INFO reports it
/// as `Size`; it equals [`Filter::planned_size`], which the size limits bound.
pub fn memory_usage(filter: &Filter) -> usize {
    // The value's own box: its size is one of the allocator's size classes (checked with the
    // type), so it is charged exactly; the filter need not be asked where it lives.
    let mut total = std::mem::size_of::<Filter>();
    filter.visit_allocations(&mut |_, len| total += charged(len as u64) as usize);
    total
}
