//! The `MBbloom--` data type: what a filter is in RDB (and so DUMP/RESTORE and replication), in an
//! AOF rewrite and in DEBUG DIGEST. The server's side of it (the type's registration and its
//! callbacks) is `crate::glue::datatype`'s; this file decides what they read and write.
//!
//! The stored form is `filters::bloom::stored`'s, in encoding version 103 (blocked filters marked
//! within it; 100 to 102, from before the restoring state, windowed filters and their parts, are
//! still read); versions 0 to 4 are
//! RedisBloom's own layouts (its type has the same name), read by `filters::bloom::redisbloom`.

use crate::glue::background::Background;
use crate::glue::value::{Arrival, Digest, Loading, Value};
use crate::glue::Origin;
use filters::bloom::dump;
use filters::bloom::redisbloom;
use filters::bloom::stored::{self, FieldSink, FieldSource, Revision};
use filters::bloom::window::{Rule, Settled};
use filters::bloom::{Chain, Filter, Format, Growth, SubFilter};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::sync::atomic::AtomicPtr;

/// The encoding version this module writes: the newest revision of the stored form.
pub const ENCODING_VERSION: i32 = Revision::NEWEST as i32;

/// The type's name: RedisBloom's, so `TYPE key` answers the same after a switch.
pub const TYPE_NAME: &str = "MBbloom--";

/// The type, registered at load time.
pub static BLOOM_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
    ENCODING_VERSION,
    crate::glue::datatype::methods::<Filter>(),
);

/// The type's handle, once the server has made it.
static HANDLE: AtomicPtr<raw::RedisModuleType> = AtomicPtr::new(std::ptr::null_mut());

impl Value for Filter {
    fn data_type() -> &'static RedisType {
        &BLOOM_TYPE
    }

    fn handle() -> &'static AtomicPtr<raw::RedisModuleType> {
        &HANDLE
    }

    const LOADCHUNK: &'static std::ffi::CStr = c"BF.LOADCHUNK";

    fn load(source: &mut impl FieldSource, encver: i32, loading: Loading) -> Result<Self, String> {
        let filter = load(source, encver)?;
        settle_loaded(filter, loading.origin, loading.now, loading.warn)
    }

    fn save(&self, sink: &mut impl FieldSink) {
        stored::save(self, sink);
    }

    fn rewrite(&self, emit: &mut dyn FnMut(u64, &[u8])) {
        rewrite(self, emit);
    }

    fn digest(&self, out: &mut impl Digest) {
        digest(self, out);
    }

    fn memory_usage(&self) -> usize {
        crate::size::memory_usage(self)
    }

    fn visit_allocations(&self, visit: &mut dyn FnMut(*const u8, usize)) {
        Filter::visit_allocations(self, visit);
    }

    fn try_clone(&self) -> Option<Self> {
        Filter::try_clone(self).ok()
    }

    fn entered(&self) {
        crate::stats::filter_added(self);
    }

    fn left(&self) {
        crate::stats::filter_freed(self);
        if self.window().is_some() {
            crate::bloom::sweep::forget(crate::bloom::sweep::id_of(self));
        }
    }

    fn arrived(&self, arrival: &Arrival) {
        register_arrival(self, arrival);
    }
}

/// Reads a filter written in encoding version `encver`: ours, or RedisBloom's (0 to 4).
pub fn load(source: &mut impl FieldSource, encver: i32) -> Result<Filter, String> {
    if let Some(revision) = Revision::of_encoding(encver) {
        stored::load(source, revision).map_err(|err| err.to_string())
    } else if let Ok(encver @ 0..=4) = u32::try_from(encver) {
        // Written by RedisBloom, whose type has the same name.
        redisbloom::load_rdb(source, encver)
            .map(Filter::Chain)
            .map_err(|err| err.to_string())
    } else {
        Err(format!(
            "encoding version {encver} is not one this module reads"
        ))
    }
}

/// Settles a loaded filter against the clock (`now`) as its `origin` allows. A windowed filter
/// from more than a window ahead of this server's clock would hold its items past their time: a
/// client's RESTORE of one is refused, as every loader refuses it. The server's own file is
/// brought back to the clock instead (refusing it would stop the server from starting over a
/// clock that stepped back), and a primary's data is kept as it is; `warn` is told either.
pub fn settle_loaded(
    mut filter: Filter,
    origin: Origin,
    now: u64,
    warn: &mut dyn FnMut(&str),
) -> Result<Filter, String> {
    if let Filter::Windowed(windowed) = &mut filter {
        let settled = windowed
            .settle_clock(now, origin.clock_trust())
            .map_err(|err| stored::LoadError::from(err).to_string())?;
        if let Some(why) = clock_warning(settled, now) {
            warn(&why);
        }
    }
    Ok(filter)
}

/// The warning for a windowed filter a loader found ahead of the clock and kept, if one is due
/// (at most one every ten seconds: a full sync can hold many).
pub fn clock_warning(settled: Settled, now: u64) -> Option<String> {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let what = match settled {
        Settled::OnTime => return None,
        Settled::KeptAhead => "kept it as its primary sent it".to_string(),
        Settled::BroughtBack { millis } => format!(
            "moved it {} seconds back, so that its items expire on this clock",
            millis.div_ceil(1000)
        ),
    };
    crate::glue::log::rarely(&LAST, now).then(|| {
        format!(
            "a windowed filter starts more than a window after this server's clock (did the clock \
             step back?): {what}"
        )
    })
}

/// Registers a windowed filter that came into a key without a command of this module (RDB
/// loading, RESTORE, COPY) with the sweep, for its first look (`Filter::first_look`).
fn register_arrival(filter: &Filter, arrival: &Arrival) {
    if filter.window().is_none() || filter.restoring().is_some() {
        return;
    }
    if let Some(due) = filter.first_look() {
        crate::bloom::sweep::arrived(
            Background::of_arrival(arrival).as_ref(),
            crate::bloom::sweep::id_of(filter),
            (arrival.db, arrival.name),
            arrival.copied_from,
            due,
        );
    }
}

/// The BF.LOADCHUNK sequence of one filter, each as `emit(iterator, bytes)`: its header, then its
/// data chunks (for a filter being restored, the ones that have arrived, so the replay is
/// restoring at the same point).
pub fn rewrite(filter: &Filter, emit: &mut dyn FnMut(u64, &[u8])) {
    let tag = dump::dump_tag(filter);
    emit(dump::tagged(tag, 1), &dump::header(filter));
    for (offset, chunk) in filter.loaded_chunks() {
        emit(
            dump::tagged(tag, dump::next_iterator(offset, chunk.len())),
            &chunk,
        );
    }
}

/// Feeds a filter's parameters and bits to DEBUG DIGEST.
pub fn digest(filter: &Filter, out: &mut impl Digest) {
    match filter {
        Filter::Chain(chain) => digest_chain(chain, out),
        Filter::Windowed(windowed) => {
            // A windowed filter's parameters, then each generation: its slot, rule and first
            // part's number, and each part with its expiry.
            let shape = windowed.shape();
            out.number(3 << 32);
            if shape.layout == filters::bloom::sizing::Layout::Blocked {
                out.number(2 << 32);
            }
            out.number(shape.window.as_seconds());
            out.number(shape.capacity);
            out.number(shape.error.to_bits());
            out.number(growth_number(shape.growth));
            for generation in windowed.generations() {
                out.number(generation.slot());
                out.number(match generation.rule() {
                    Rule::Budget(budget) => budget,
                    Rule::Legacy => u64::MAX,
                });
                out.number(u64::from(generation.first()));
                for part in generation.parts() {
                    out.number(part.expires_at());
                    digest_sub_filter(part.filter(), out);
                }
            }
        }
    }
    // A filter being restored differs from the finished one. (Filters in use digest as they
    // always did.)
    if let Some(next) = filter.restoring() {
        out.number(u64::MAX);
        out.number(next);
    }
    out.end_sequence();
}

/// A growth as DEBUG DIGEST takes it: the expansion, or 0 for NONSCALING.
fn growth_number(growth: Growth) -> u64 {
    match growth {
        Growth::Scaling { expansion } => u64::from(expansion),
        Growth::Fixed => 0,
    }
}

/// Feeds a chain's parameters and bits to DEBUG DIGEST.
fn digest_chain(chain: &Chain, out: &mut impl Digest) {
    // An imported filter's hashing changes every answer: it is part of the value. (Native
    // filters digest as they always did.)
    match chain.format() {
        Format::RedisBloom(options) => out.number(1 << 32 | u64::from(options.flags())),
        Format::Blocked => out.number(2 << 32),
        Format::Native => {}
    }
    out.number(growth_number(chain.growth()));
    for filter in chain.filters() {
        digest_sub_filter(filter, out);
    }
}

/// Feeds a sub-filter's shape, items and bits to DEBUG DIGEST.
fn digest_sub_filter(filter: &SubFilter, out: &mut impl Digest) {
    let shape = filter.shape();
    out.number(shape.capacity);
    out.number(shape.error.to_bits());
    out.number(u64::from(shape.hash_count));
    out.number(shape.bits);
    out.number(filter.items());
    for piece in filter.bits().pieces() {
        out.bytes(piece);
    }
}
