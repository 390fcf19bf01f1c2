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
    /// It is being freed (on the server's main thread, or on a lazy-free thread).
    fn left(&self);
    /// It came into a key without a command of this module: RDB loading or RESTORE read it, or
    /// COPY made it (after [`Value::entered`]).
    fn arrived(&self, _arrival: &Arrival) {}
}

/// Where a value came into the keyspace without a command of this module, as far as the server
/// tells its callback.
pub struct Arrival<'a> {
    /// The key's name, when the server names it (RDB loading and RESTORE do, as COPY does).
    pub name: Option<&'a [u8]>,
    /// The key's database, when the server tells it (not a COPY's on servers before 7.2).
    pub db: Option<i32>,
    /// The address of the value it was copied from (COPY).
    pub copied_from: Option<usize>,
    /// The callback's context, to start a timer with (null in a COPY, which has none):
    /// `Background::of_arrival` wraps it.
    pub(in crate::glue) ctx: *mut raw::RedisModuleCtx,
}
