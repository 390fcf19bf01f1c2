//! The fields of stored forms, as both families write them: the source and sink the module's RDB
//! callbacks (and the tests' byte strings) provide, the errors of reading them, and the bit
//! arrays (or cuckoo buckets) read piece by piece, each allocated only once its bytes arrived.

use crate::bits::{piece_lengths, BitStore};
use crate::error::FilterError;

/// Where stored fields come from. `None` means the input ended (or failed) before the field.
pub trait FieldSource {
    /// The next field, an unsigned number.
    fn unsigned(&mut self) -> Option<u64>;
    /// The next field, a double.
    fn double(&mut self) -> Option<f64>;
    /// The next field, a byte string, if it has exactly `expected` bytes (else
    /// [`LoadError::WrongLength`]); the source must not allocate for a string longer than what
    /// it actually holds.
    fn buffer(&mut self, expected: usize) -> Result<Box<[u8]>, LoadError>;
    /// The next field, a byte string of whatever length it has (RedisBloom's bit arrays, whose
    /// length the fields before it do not always give); the source must not allocate more than
    /// it actually holds.
    fn any_buffer(&mut self) -> Result<Box<[u8]>, LoadError>;
}

/// Where stored fields go.
pub trait FieldSink {
    fn unsigned(&mut self, value: u64);
    fn double(&mut self, value: f64);
    fn buffer(&mut self, bytes: &[u8]);
}

/// Why stored data could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The input ended before the chain did.
    Truncated,
    /// A field is inconsistent; the text says which.
    Corrupt(String),
    /// A string field of `len` bytes where the fields before it give `expected`; its reader
    /// names what the string holds ([`LoadError::naming`]).
    WrongLength { len: u64, expected: u64 },
}

impl LoadError {
    /// The error, a string of the wrong length named as `what` (`a bit-array piece`): each
    /// family speaks of its own strings.
    pub fn naming(self, what: &str) -> LoadError {
        match self {
            LoadError::WrongLength { len, expected } => {
                LoadError::Corrupt(format!("{what} of {len} bytes, not {expected}"))
            }
            other => other,
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Truncated => f.write_str("the data ends early"),
            LoadError::Corrupt(what) => f.write_str(what),
            LoadError::WrongLength { len, expected } => {
                write!(f, "a string of {len} bytes, not {expected}")
            }
        }
    }
}

impl From<FilterError> for LoadError {
    fn from(err: FilterError) -> LoadError {
        match err {
            FilterError::Corrupt(what) => LoadError::Corrupt(what.to_string()),
            other => LoadError::Corrupt(format!("{other:?}")),
        }
    }
}

/// The pieces of a bit array of `storage` bits, each allocated only once it was read.
pub(crate) fn read_pieces(
    source: &mut impl FieldSource,
    storage: u64,
) -> Result<BitStore, LoadError> {
    let mut pieces = Vec::new();
    for len in piece_lengths(storage) {
        pieces.push(
            source
                .buffer(len)
                .map_err(|err| err.naming("a bit-array piece"))?,
        );
    }
    BitStore::from_pieces(storage, pieces)
        .ok_or_else(|| LoadError::Corrupt("bad bit-array pieces".into()))
}

/// Fields as plain bytes, for tests and fuzzing: a tag byte (1 unsigned, 2 double, 3 string),
/// then the value (8 bytes little-endian, or an 8-byte length and the bytes).
#[derive(Debug, Default)]
pub struct ByteFields<'a> {
    input: &'a [u8],
}

impl<'a> ByteFields<'a> {
    /// Reads fields from `input`.
    pub fn new(input: &'a [u8]) -> ByteFields<'a> {
        ByteFields { input }
    }

    /// Bytes left unread.
    pub fn remaining(&self) -> usize {
        self.input.len()
    }

    fn tagged(&mut self, tag: u8) -> Option<u64> {
        let (&found, rest) = self.input.split_first()?;
        if found != tag {
            return None;
        }
        let (value, rest) = rest.split_first_chunk::<8>()?;
        self.input = rest;
        Some(u64::from_le_bytes(*value))
    }
}

impl FieldSource for ByteFields<'_> {
    fn unsigned(&mut self) -> Option<u64> {
        self.tagged(1)
    }

    fn double(&mut self) -> Option<f64> {
        self.tagged(2).map(f64::from_bits)
    }

    fn buffer(&mut self, expected: usize) -> Result<Box<[u8]>, LoadError> {
        let len = self.tagged(3).ok_or(LoadError::Truncated)?;
        if len != expected as u64 {
            return Err(LoadError::WrongLength {
                len,
                expected: expected as u64,
            });
        }
        // Checked against what is there before a byte is allocated.
        if self.input.len() < expected {
            return Err(LoadError::Truncated);
        }
        let (bytes, rest) = self.input.split_at(expected);
        self.input = rest;
        Ok(bytes.into())
    }

    fn any_buffer(&mut self) -> Result<Box<[u8]>, LoadError> {
        let len = self.tagged(3).ok_or(LoadError::Truncated)?;
        // Checked against what is there before a byte is allocated.
        let len = usize::try_from(len)
            .ok()
            .filter(|len| *len <= self.input.len())
            .ok_or(LoadError::Truncated)?;
        let (bytes, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(bytes.into())
    }
}

/// Writes fields as [`ByteFields`] reads them.
#[derive(Debug, Default)]
pub struct ByteSink {
    /// The bytes written so far.
    pub bytes: Vec<u8>,
}

impl FieldSink for ByteSink {
    fn unsigned(&mut self, value: u64) {
        self.bytes.push(1);
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    fn double(&mut self, value: f64) {
        self.bytes.push(2);
        self.bytes.extend_from_slice(&value.to_bits().to_le_bytes());
    }

    fn buffer(&mut self, bytes: &[u8]) {
        self.bytes.push(3);
        self.bytes
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_of_the_wrong_length_is_named_by_its_reader() {
        let expected = piece_lengths(1024).next().unwrap();
        let mut bytes = vec![3];
        bytes.extend(2u64.to_le_bytes());
        bytes.extend([0, 0]);
        let refused = read_pieces(&mut ByteFields::new(&bytes), 1024).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("a bit-array piece of 2 bytes, not {expected}")
        );
    }
}
