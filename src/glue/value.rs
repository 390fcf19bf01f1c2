//! What the glue needs of a value the module keeps in the keyspace under one of its data types
//! (the Bloom filter's `MBbloom--`, the cuckoo filter's `MBbloomCF`): the type's handle, how a
//! value is read, written, rewritten, digested, measured, copied and counted. Each family
//! implements it in its own file (`crate::bloom::datatype`, `crate::cuckoo::datatype`); the callbacks
//! (`super::datatype`) and key access (`super::key`) are written once for both.

use super::Origin;
use filters::fields::{FieldSink, FieldSource};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::CStr;
use std::sync::atomic::AtomicPtr;

/// What DEBUG DIGEST is fed.
pub trait Digest {
    /// A number (the server takes it as a signed 64-bit integer).
    fn number(&mut self, number: u64);
    /// A string of bytes.
    fn bytes(&mut self, bytes: &[u8]);
    /// The end of the value's sequence.
    fn end_sequence(&mut self);
}

/// Where a value being loaded comes from, and how to warn about it.
pub struct Loading<'a> {
    /// Whose data it is (a client's RESTORE, the server's own file, its primary's).
    pub origin: Origin,
    /// The server's clock, in milliseconds since the epoch.
    pub now: u64,
    /// Logs a warning against the stream being read.
    pub warn: &'a mut dyn FnMut(&str),
}

/// A value of one of the module's data types.
pub trait Value: Sized + 'static {
    /// The data type, registered at load.
    fn data_type() -> &'static RedisType;
    /// Where the type's handle is kept for the command path (no RefCell).
    fn handle() -> &'static AtomicPtr<raw::RedisModuleType>;
    /// The family's `LOADCHUNK`: the command its AOF rewrite emits, and the one an add or lookup
    /// on a value being restored names.
    const LOADCHUNK: &'static CStr;
    /// Reads a value written in encoding version `encver`.
    fn load(source: &mut impl FieldSource, encver: i32, loading: Loading) -> Result<Self, String>;
    /// Writes the value's fields (RDB, DUMP, full syncs).
    fn save(&self, sink: &mut impl FieldSink);
    /// The value as `LOADCHUNK` calls, each as `emit(iterator, bytes)`: the AOF rewrite.
    fn rewrite(&self, emit: &mut dyn FnMut(u64, &[u8]));
    /// Feeds DEBUG DIGEST.
    fn digest(&self, out: &mut impl Digest);
    /// The bytes it occupies (`MEMORY USAGE`'s figure, `Size`).
    fn memory_usage(&self) -> usize;
    /// Calls `visit` with every heap block it owns.
    fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize));
    /// A copy (COPY), or `None` if the allocator has no memory for it.
    fn try_clone(&self) -> Option<Self>;
    /// It entered the keyspace (created, loaded, copied): `INFO bf` counts it.
    fn entered(&self);
    /// It is being freed.
    fn left(&self);
    /// RDB loading just read it (before the `loaded` event that names its key).
    fn loaded(&self) {}
}
