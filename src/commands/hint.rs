//! A few words a family keeps about the filter its last single-item command used, under a tag of
//! that key's name: where the filter lies in memory, so that the next command on
//! the same key can ask the CPU for its item's lines before the server has looked the key up.
//! The server's lookup (a few hundred instructions) then runs while the lines come from memory,
//! where otherwise the wait for them (most of a single command's time on a big filter) would
//! follow it. The words are only ever prefetched from, never read through: a hint gone stale
//! (the key deleted, the filter grown or moved) or another key's (a tag collision) costs a wasted
//! load, never an answer. Commands run one at a time on the server's main thread, so plain loads
//! and stores (relaxed atomics, no locked instruction) are enough; a mixed read could only mislead
//! a prefetch.

use crate::glue::call::Call;
use std::sync::atomic::{AtomicU64, Ordering};

/// The words kept for one key.
pub struct Hint<const N: usize> {
    /// The key's tag; 0 (no key's) until words are kept.
    tag: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> Hint<N> {
    /// Nothing kept yet.
    pub const fn new() -> Hint<N> {
        Hint {
            tag: AtomicU64::new(0),
            words: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Whether words are kept for some key.
    #[inline]
    pub fn is_kept(&self) -> bool {
        self.tag.load(Ordering::Relaxed) != 0
    }

    /// Keeps nothing (the last filter used gains nothing from a hint).
    #[inline]
    pub fn forget(&self) {
        self.tag.store(0, Ordering::Relaxed);
    }

    /// The words kept for the key tagged `tag`, if the last command kept them for it.
    #[inline]
    pub fn get(&self, tag: u64) -> Option<[u64; N]> {
        if self.tag.load(Ordering::Relaxed) != tag {
            return None;
        }
        Some(std::array::from_fn(|i| {
            self.words[i].load(Ordering::Relaxed)
        }))
    }

    /// Keeps `words` for the key tagged `tag`.
    #[inline]
    pub fn keep(&self, tag: u64, words: [u64; N]) {
        self.tag.store(tag, Ordering::Relaxed);
        for (kept, word) in self.words.iter().zip(words) {
            kept.store(word, Ordering::Relaxed);
        }
    }
}

/// The tag of the call's key (argument 1). The same name in two databases has one tag: a
/// command that alternates between them wastes its prefetch, nothing more.
#[inline(always)]
pub fn tag(call: &Call) -> u64 {
    bf_filter::hash::tag(call.args_key())
}
