//! Every error a command can answer, and its exact text on the wire; and the size limit a
//! command's filter is held to, with the error it produces.
//!
//! The `Display` of [`BfError`] is the reply line, code first (`ERR`, `WRONGTYPE`). Tests assert
//! these texts literally; change one only together with its test and docs/commands.md.

mod cuckoo;

pub use cuckoo::CfError;
use filters::bloom::window::{MAX_WINDOW_SECONDS, MIN_WINDOWED_ERROR_RATE, MIN_WINDOW_SECONDS};
use filters::bloom::{sizing::MIN_ERROR_RATE, MAX_EXPANSION};
use filters::FilterError;
use std::ffi::CStr;
use std::fmt;

/// An error reply.
#[derive(Debug, Clone, PartialEq)]
pub enum BfError {
    /// The key holds a value of another type.
    WrongType,
    /// BF.RESERVE on a key that already holds a filter.
    ItemExists,
    /// A command that needs an existing filter found none (BF.INFO, BF.DEBUG, NOCREATE...).
    NotFound,
    /// A NONSCALING filter holds its capacity and the item is new.
    NonScalingFull,
    /// The error rate is not a number from `MIN_ERROR_RATE` (2^-1020) up to, not including, 1.
    BadErrorRate,
    /// The capacity is not a whole number from 1 to `i64::MAX` (what BF.INFO can report).
    BadCapacity,
    /// The expansion is not a whole number from 1 to 32768.
    BadExpansion,
    /// EXPANSION and NONSCALING in one command.
    ExpansionWithNonScaling,
    /// An option was given twice.
    DuplicateOption(&'static str),
    /// An option keyword was not followed by its value.
    MissingValue(&'static str),
    /// BF.INSERT without `ITEMS item...`.
    MissingItems,
    /// A SCANDUMP or LOADCHUNK iterator that is no chunk's.
    BadIterator,
    /// A SCANDUMP iterator of a dump begun before the filter changed under it (a windowed
    /// filter's oldest parts expired, or the key holds another filter).
    DumpChanged,
    /// A LOADCHUNK data chunk of another dump than the one whose header made the filter.
    ChunkOfAnotherDump,
    /// A LOADCHUNK chunk that does not fit the filter; the text says how.
    BadChunk(&'static str),
    /// A token the grammar does not know.
    UnknownArgument(String),
    /// The filter would take more than `bf.max-filter-bytes`.
    TooLarge { bytes: u64, limit: u64 },
    /// The server had no memory for the filter (the try-allocate API said so).
    OutOfMemory { bytes: u64 },
    /// The filter (or its growth) would need `bytes` more than `maxmemory` leaves, under a policy
    /// that refuses such a write (Redis's own `OOM` code).
    OverMaxMemory {
        bytes: u64,
        maxmemory: u64,
        used: u64,
    },
    /// The filter would take `bytes` in all, more than `maxmemory` itself: whatever the server
    /// evicts, it can never fit (`OOM`, under every policy).
    LargerThanMaxMemory { bytes: u64, maxmemory: u64 },
    /// A scaling filter cannot add another sub-filter.
    CannotGrow,
    /// A window outside 1 second to 10 years.
    BadWindow,
    /// A `LAYOUT` other than `CLASSIC` or `BLOCKED`.
    BadLayout,
    /// An error rate too small for a windowed filter's generations.
    BadWindowedErrorRate,
    /// An `AT` time that is not a whole number of milliseconds.
    BadTime,
    /// `AT` from a client: only a primary or the AOF may say what time it is.
    TimeFromClient,
    /// An add or lookup on a filter that `loadchunk` is still rebuilding: its family's
    /// (`BF.LOADCHUNK` or `CF.LOADCHUNK`), as its value type names it.
    BeingRestored {
        loadchunk: &'static CStr,
        loaded: u64,
        total: u64,
    },
    /// A BF.LOADCHUNK data chunk for a filter that is not being restored.
    NotRestoring,
    /// A BF.LOADCHUNK data chunk that is not the next one (out of order, or sent twice).
    ChunkOutOfOrder { expected: u64 },
    /// A cuckoo filter command's own error.
    Cf(CfError),
    /// A bug caught before it could take the server down.
    Internal,
}

/// `maxmemory`, when it is set, as a command's filter meets it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxMemory {
    pub maxmemory: u64,
    /// The memory in use.
    pub used: u64,
    /// The server makes room by evicting keys (an eviction policy with keys to evict): a filter
    /// is refused only if it is bigger than `maxmemory` itself. Otherwise it must fit in what
    /// `maxmemory` leaves.
    pub evicts: bool,
}

/// What a filter created or grown by one command may take: `bf.max-filter-bytes`, and what
/// `maxmemory` allows, if it is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeLimit {
    max_filter_bytes: u64,
    memory: Option<MaxMemory>,
    /// Bytes the filter already takes (counted in the memory used): growing it needs only what
    /// it adds.
    existing: u64,
}

impl SizeLimit {
    /// The limit for a command of a client: `bf.max-filter-bytes`, and the room under
    /// `maxmemory`.
    pub fn new(max_filter_bytes: u64, memory: Option<MaxMemory>) -> SizeLimit {
        SizeLimit {
            max_filter_bytes,
            memory,
            existing: 0,
        }
    }

    /// The same limit for growing a filter that already takes `existing` bytes.
    pub fn growing(self, existing: u64) -> SizeLimit {
        SizeLimit { existing, ..self }
    }

    /// No limit: for commands from a primary or an AOF, which must apply as they did where they
    /// were first run.
    pub fn unlimited() -> SizeLimit {
        SizeLimit {
            max_filter_bytes: u64::MAX,
            memory: None,
            existing: 0,
        }
    }

    /// The most bytes the filter may take in all.
    pub fn bytes(&self) -> u64 {
        let room = self.memory.map_or(u64::MAX, |memory| {
            if memory.evicts {
                memory.maxmemory
            } else {
                let left = memory.maxmemory.saturating_sub(memory.used);
                self.existing.saturating_add(left)
            }
        });
        self.max_filter_bytes.min(room)
    }

    /// Nothing, if a filter of `bytes` bytes fits this limit; else the refusal that names it (a
    /// restore's header is checked so before its filter is allocated).
    pub fn admit(&self, bytes: u64) -> Result<(), BfError> {
        if bytes > self.bytes() {
            Err(self.refusal(bytes))
        } else {
            Ok(())
        }
    }

    /// The error for a filter that would take `bytes` bytes in all, past the limit: the
    /// config's, or maxmemory's if that is the bound it passed.
    pub fn refusal(&self, bytes: u64) -> BfError {
        match self.memory {
            Some(memory) if bytes <= self.max_filter_bytes && memory.evicts => {
                BfError::LargerThanMaxMemory {
                    bytes,
                    maxmemory: memory.maxmemory,
                }
            }
            Some(memory) if bytes <= self.max_filter_bytes => BfError::OverMaxMemory {
                bytes: bytes.saturating_sub(self.existing),
                maxmemory: memory.maxmemory,
                used: memory.used,
            },
            _ => BfError::TooLarge {
                bytes,
                limit: self.max_filter_bytes,
            },
        }
    }
}

/// A `bf.max-filter-bytes` that takes `bytes`, as CONFIG SET reads it (whole gigabytes from 1
/// GiB up, whole megabytes below), if the config can be that large.
fn size_to_ask(bytes: u64) -> Option<String> {
    const MB: u64 = 1 << 20;
    const GB: u64 = 1 << 30;
    if bytes > i64::MAX as u64 - GB {
        None
    } else if bytes > GB {
        Some(format!("{}gb", bytes.div_ceil(GB)))
    } else {
        Some(format!("{}mb", bytes.div_ceil(MB)))
    }
}

impl BfError {
    /// The reply for a chunk BF.LOADCHUNK could not take.
    pub fn from_chunk(err: FilterError) -> BfError {
        BfError::from_filter(err, &SizeLimit::unlimited())
    }

    /// The reply for a core error, given the size limit that was in force.
    pub fn from_filter(err: FilterError, limit: &SizeLimit) -> BfError {
        match err {
            FilterError::BadErrorRate => BfError::BadErrorRate,
            FilterError::BadCapacity => BfError::BadCapacity,
            FilterError::BadExpansion => BfError::BadExpansion,
            FilterError::TooLarge { bytes } => limit.refusal(bytes),
            FilterError::Full => BfError::NonScalingFull,
            FilterError::OutOfMemory { bytes } => BfError::OutOfMemory { bytes },
            FilterError::CannotGrow => BfError::CannotGrow,
            FilterError::Corrupt(why) => BfError::BadChunk(why),
            FilterError::NotRestoring => BfError::NotRestoring,
            FilterError::BadWindow => BfError::BadWindow,
            FilterError::ChunkOutOfOrder { expected } => BfError::ChunkOutOfOrder { expected },
            FilterError::MaxExpansions => BfError::Cf(CfError::MaxExpansions),
            FilterError::TooManyCopies => BfError::Cf(CfError::TooManyCopies),
        }
    }
}

impl fmt::Display for BfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BfError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            BfError::ItemExists => f.write_str("ERR item exists"),
            BfError::NotFound => f.write_str("ERR not found"),
            BfError::NonScalingFull => f.write_str("ERR non scaling filter is full"),
            BfError::BadErrorRate => write!(
                f,
                "ERR bad error rate: must be a number from {MIN_ERROR_RATE:?} up to, not \
                 including, 1"
            ),
            BfError::BadCapacity => f.write_str(
                "ERR bad capacity: must be a whole number from 1 to 9223372036854775807",
            ),
            BfError::BadExpansion => write!(
                f,
                "ERR bad expansion: must be a whole number from 1 to {MAX_EXPANSION}"
            ),
            BfError::ExpansionWithNonScaling => {
                f.write_str("ERR EXPANSION cannot be used with NONSCALING")
            }
            BfError::DuplicateOption(name) => write!(f, "ERR option {name} given more than once"),
            BfError::MissingValue(name) => write!(f, "ERR option {name} needs a value"),
            BfError::MissingItems => f.write_str("ERR ITEMS and at least one item are required"),
            BfError::BadIterator => f.write_str("ERR invalid iterator"),
            BfError::BadChunk(why) => write!(f, "ERR invalid chunk: {why}"),
            BfError::UnknownArgument(token) => write!(f, "ERR unknown argument '{token}'"),
            BfError::TooLarge { .. }
            | BfError::OutOfMemory { .. }
            | BfError::OverMaxMemory { .. }
            | BfError::LargerThanMaxMemory { .. } => self.fmt_size(f),
            BfError::CannotGrow => f.write_str(
                "ERR filter cannot grow: the next sub-filter's capacity or error rate is out of \
                 range; add the items to a new filter reserved with more capacity (or a larger \
                 EXPANSION)",
            ),
            BfError::BadWindow
            | BfError::BadWindowedErrorRate
            | BfError::BadTime
            | BfError::TimeFromClient
            | BfError::BeingRestored { .. }
            | BfError::NotRestoring
            | BfError::ChunkOutOfOrder { .. }
            | BfError::DumpChanged
            | BfError::ChunkOfAnotherDump => self.fmt_time_or_dump(f),
            BfError::BadLayout => f.write_str("ERR bad layout: must be CLASSIC or BLOCKED"),
            BfError::Cf(err) => err.fmt(f),
            BfError::Internal => {
                f.write_str("ERR internal error in the bf module (see the server log)")
            }
        }
    }
}

impl BfError {
    /// The messages of the size limits and of memory.
    fn fmt_size(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A size that passes what 64 bits count (a capacity near 2^63 with wide slots) is
            // held at u64::MAX: said so in words, not as a size.
            BfError::TooLarge {
                bytes: u64::MAX,
                limit,
            } => write!(
                f,
                "ERR filter would use 2^64 bytes or more, over bf.max-filter-bytes ({limit}); no \
                 setting allows that much"
            ),
            BfError::TooLarge { bytes, limit } => {
                write!(
                    f,
                    "ERR filter would use {bytes} bytes, over bf.max-filter-bytes ({limit}); "
                )?;
                match size_to_ask(*bytes) {
                    Some(size) => write!(
                        f,
                        "if it is meant to be that big: CONFIG SET bf.max-filter-bytes {size}"
                    ),
                    None => f.write_str("no setting allows that much"),
                }
            }
            BfError::OutOfMemory { bytes } => write!(
                f,
                "ERR out of memory: the server could not allocate {bytes} bytes for the filter"
            ),
            BfError::OverMaxMemory {
                bytes,
                maxmemory,
                used,
            } => write!(
                f,
                "OOM filter would need {bytes} more bytes, more than maxmemory leaves \
                 ({used} of {maxmemory} bytes used)"
            ),
            BfError::LargerThanMaxMemory { bytes, maxmemory } => write!(
                f,
                "OOM filter would use {bytes} bytes, more than maxmemory ({maxmemory}): no \
                 eviction can make room for it"
            ),
            _ => Ok(()),
        }
    }

    /// The messages of windowed filters' time and of dumps and restores.
    fn fmt_time_or_dump(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BfError::BadWindow => write!(
                f,
                "ERR bad window: must be a whole number of seconds from {MIN_WINDOW_SECONDS} to \
                 {MAX_WINDOW_SECONDS} (ten years)"
            ),
            BfError::BadWindowedErrorRate => write!(
                f,
                "ERR bad error rate: must be a number from {MIN_WINDOWED_ERROR_RATE:?} up to, not \
                 including, 1 for a windowed filter"
            ),
            BfError::BadTime => {
                f.write_str("ERR bad time: AT takes a whole number of milliseconds")
            }
            BfError::TimeFromClient => f.write_str(
                "ERR AT is only taken from a primary or the AOF: a windowed filter keeps the \
                 primary's time",
            ),
            BfError::BeingRestored {
                loadchunk,
                loaded,
                total,
            } => write!(
                f,
                "ERR filter is being restored by {} ({loaded} of {total} bytes loaded): it \
                 answers once its last chunk has arrived",
                loadchunk.to_string_lossy()
            ),
            BfError::NotRestoring => f.write_str(
                "ERR invalid chunk: the filter is not being restored (data chunks only follow \
                 the header chunk that created it)",
            ),
            BfError::ChunkOutOfOrder { expected } => write!(
                f,
                "ERR invalid chunk: not the next one (loaded already, or out of order: the \
                 next chunk starts at byte {expected} of the data)"
            ),
            BfError::DumpChanged => f.write_str(
                "ERR the filter changed since this dump began (its oldest items expired, or the \
                 key holds another filter): start again at iterator 0",
            ),
            BfError::ChunkOfAnotherDump => f.write_str(
                "ERR invalid chunk: it belongs to another dump than the header's (the iterator's \
                 tag differs)",
            ),
            _ => f.write_str("ERR internal error in the bf module (see the server log)"),
        }
    }
}

/// The printable form of a client's token for an error message: at most 64 characters, with
/// anything but printable ASCII escaped, so the reply stays one line.
pub fn quote_token(token: &[u8]) -> String {
    let mut quoted = String::new();
    for &byte in token.iter().take(64) {
        match byte {
            b' '..=b'~' if byte != b'\'' && byte != b'\\' => quoted.push(byte as char),
            _ => quoted.push_str(&format!("\\x{byte:02x}")),
        }
    }
    if token.len() > 64 {
        quoted.push_str("...");
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_messages_stay_on_one_printable_line() {
        assert_eq!(quote_token(b"FOO"), "FOO");
        assert_eq!(quote_token(b"a\r\nb\0'"), "a\\x0d\\x0ab\\x00\\x27");
        assert_eq!(quote_token(&[b'x'; 100]).len(), 67);
    }

    #[test]
    fn a_size_past_64_bits_is_said_in_words() {
        let refused = BfError::TooLarge {
            bytes: u64::MAX,
            limit: 1 << 30,
        };
        assert_eq!(
            refused.to_string(),
            "ERR filter would use 2^64 bytes or more, over bf.max-filter-bytes (1073741824); no \
             setting allows that much"
        );
    }

    #[test]
    fn every_message_starts_with_a_code() {
        let all = [
            BfError::WrongType,
            BfError::ItemExists,
            BfError::NotFound,
            BfError::NonScalingFull,
            BfError::BadErrorRate,
            BfError::BadCapacity,
            BfError::BadExpansion,
            BfError::ExpansionWithNonScaling,
            BfError::DuplicateOption("EXPANSION"),
            BfError::MissingValue("EXPANSION"),
            BfError::MissingItems,
            BfError::BadIterator,
            BfError::BadChunk("why"),
            BfError::UnknownArgument("x".into()),
            BfError::TooLarge { bytes: 2, limit: 1 },
            BfError::OutOfMemory { bytes: 1 },
            BfError::OverMaxMemory {
                bytes: 3,
                maxmemory: 2,
                used: 1,
            },
            BfError::CannotGrow,
            BfError::BeingRestored {
                loadchunk: c"CF.LOADCHUNK",
                loaded: 1,
                total: 2,
            },
            BfError::NotRestoring,
            BfError::ChunkOutOfOrder { expected: 3 },
            BfError::BadWindow,
            BfError::BadWindowedErrorRate,
            BfError::BadTime,
            BfError::TimeFromClient,
            BfError::Internal,
        ];
        for err in all {
            let text = err.to_string();
            assert!(
                text.starts_with("ERR ")
                    || text.starts_with("WRONGTYPE ")
                    || text.starts_with("OOM "),
                "{text}"
            );
            assert!(!text.contains('\n') && !text.contains('\r'));
        }
    }
}
