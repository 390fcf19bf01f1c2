//! The `MBbloomCF` data type: what a cuckoo filter is in RDB (and DUMP/RESTORE and full syncs), in
//! an AOF rewrite and in DEBUG DIGEST. Its stored form is RedisBloom's encoding version 4, field
//! for field (`filters::cuckoo::stored`), so RedisBloom's files load here and it reads ours
//! back; the callbacks the server calls are `crate::glue::datatype`'s, as for the Bloom filter.

use crate::glue::value::{Digest, Loading, Value};
use filters::chunks::next_iterator;
use filters::cuckoo::{dump, stored, Cuckoo};
use filters::fields::{FieldSink, FieldSource};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::sync::atomic::AtomicPtr;

/// The type's name: RedisBloom's, so `TYPE key` answers the same after a switch.
pub const TYPE_NAME: &str = "MBbloomCF";

/// The type, registered at load time, in RedisBloom's encoding version.
pub static CUCKOO_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
    stored::ENCODING_VERSION as i32,
    crate::glue::datatype::methods::<Cuckoo>(),
);

/// The type's handle, once the server has made it.
static HANDLE: AtomicPtr<raw::RedisModuleType> = AtomicPtr::new(std::ptr::null_mut());

impl Value for Cuckoo {
    fn data_type() -> &'static RedisType {
        &CUCKOO_TYPE
    }

    fn handle() -> &'static AtomicPtr<raw::RedisModuleType> {
        &HANDLE
    }

    const LOADCHUNK: &'static std::ffi::CStr = c"CF.LOADCHUNK";

    fn load(source: &mut impl FieldSource, encver: i32, _: Loading) -> Result<Self, String> {
        let encver = u32::try_from(encver).map_err(|_| format!("encoding version {encver}"))?;
        stored::load(source, encver).map_err(|err| err.to_string())
    }

    fn save(&self, sink: &mut impl FieldSink) {
        stored::save(self, sink);
    }

    /// The CF.LOADCHUNK sequence: the header, then the data chunks that have arrived.
    fn rewrite(&self, emit: &mut dyn FnMut(u64, &[u8])) {
        emit(1, &dump::header(self));
        for (offset, chunk) in self.loaded_chunks() {
            emit(next_iterator(offset, chunk.len()), &chunk);
        }
    }

    fn digest(&self, out: &mut impl Digest) {
        let params = self.params();
        out.number(u64::from(params.bucket_size));
        out.number(u64::from(params.max_iterations));
        out.number(u64::from(params.expansion));
        out.number(self.items());
        out.number(self.deletes());
        for table in self.tables() {
            out.number(table.buckets());
            out.bytes(table.bytes());
        }
        if let Some(next) = self.restoring() {
            out.number(u64::MAX);
            out.number(next);
        }
        out.end_sequence();
    }

    fn memory_usage(&self) -> usize {
        crate::size::cuckoo_memory_usage(self)
    }

    fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        Cuckoo::visit_allocations(self, visit);
    }

    fn try_clone(&self) -> Option<Self> {
        Cuckoo::try_clone(self).ok()
    }

    fn entered(&self) {
        crate::stats::cuckoo_added(self);
    }

    fn left(&self) {
        crate::stats::cuckoo_freed(self);
    }
}
