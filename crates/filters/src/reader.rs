//! Reading the fixed-width little-endian fields of a dump header (ours and RedisBloom's) off the
//! front of a byte slice, each read failing cleanly where the header ends early.

use crate::error::FilterError;

/// The unread rest of a header.
pub(crate) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// Reads from the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader(bytes)
    }

    /// The next `N` bytes.
    pub(crate) fn take<const N: usize>(&mut self) -> Result<[u8; N], FilterError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(FilterError::Corrupt("header ends early"))?;
        self.0 = rest;
        Ok(*head)
    }

    /// How many bytes are left.
    pub(crate) fn remaining(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FilterError> {
        Ok(self.take::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, FilterError> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, FilterError> {
        Ok(u64::from_le_bytes(self.take()?))
    }

    pub(crate) fn f64(&mut self) -> Result<f64, FilterError> {
        Ok(f64::from_bits(self.u64()?))
    }
}
