//! A single `BF.ADD` or `BF.EXISTS`'s item, hashed before its key is opened: where a recent such
//! command kept where its key's filter lies (a big one: `filters::bloom::locator`), the item is hashed
//! as that filter hashes and its probe lines are asked for at once, so that the server's lookup of
//! the key runs while they come from memory (see [`crate::hint`], which the cuckoo commands'
//! `Early` uses the same way). The filter takes the early hash only if it hashes that way; a hint
//! gone stale costs a wasted prefetch, never an answer.

use crate::glue::call::Call;
use crate::hint::{self, Hints};
use filters::bloom::locator::{
    EarlyHash, Locator, EARLY_PROBES, LOOKUP_PROBES, PLACE_WORDS, WORDS,
};
use filters::bloom::window::Windowed;
use filters::bloom::{Chain, Filter};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the big filters of recent single-item commands (BF.ADD, BF.EXISTS) lie.
static HINTS: Hints<WORDS> = Hints::new();

/// What a single-item command does with its item.
#[derive(Clone, Copy)]
pub enum Purpose {
    /// BF.ADD: it reads and writes every probe's bit.
    Add,
    /// BF.EXISTS: it reads probes until one is unset.
    Lookup,
}

/// A single-item command's item, hashed before its key is opened if a hint is kept for the key.
#[derive(Clone, Copy)]
pub struct Early {
    /// The key's tag, if it was made (0 if not).
    tag: u64,
    /// The item's hash, made as the hinted filter hashes, if a hint was kept for the key.
    hash: Option<EarlyHash>,
    /// The hint it was made from (commands run one at a time: it is unchanged until this one
    /// keeps another).
    hint: Option<&'static [AtomicU64; WORDS]>,
}

/// A word of a hint.
#[inline(always)]
fn word(hint: &[AtomicU64; WORDS], index: usize) -> u64 {
    hint[index].load(Ordering::Relaxed)
}

impl Early {
    /// Before the key is opened: if a hint is kept for this key, hashes `item` as its filter does
    /// and asks for its probe lines there. One load and nothing more while no big filter has been
    /// used.
    /// An add asks for the lines of all its item's probes (up to 16: it writes them all); a
    /// lookup for its first few (`LOOKUP_PROBES`), and for the others once those are found set.
    #[inline(always)]
    pub fn hash(call: &Call, item: &[u8], purpose: Purpose) -> Early {
        if !HINTS.in_use() {
            return Early::NONE;
        }
        let probes = match purpose {
            Purpose::Add => EARLY_PROBES,
            Purpose::Lookup => LOOKUP_PROBES,
        };
        Early::hash_hinted(call, item, probes)
    }

    /// [`Early::hash`] once hints are kept (out of line, so that a server of small filters runs
    /// none of it, nor makes room for it).
    #[inline(never)]
    fn hash_hinted(call: &Call, item: &[u8], probes: u32) -> Early {
        let tag = hint::tag(call);
        let Some(hint) = HINTS.find(tag) else {
            return Early { tag, ..Early::NONE };
        };
        Early {
            tag,
            hash: Some(Locator::prefetch_from(|i| word(hint, i), item, probes)),
            hint: Some(hint),
        }
    }

    /// No early hash: for a command that has no single item.
    pub const NONE: Early = Early {
        tag: 0,
        hash: None,
        hint: None,
    };

    /// The early hash for `filter` (which takes it only if it hashes items that way); keeps where
    /// the filter lies for the next command on its key if it is big enough to wait for (at `now`,
    /// for a windowed filter), forgets it if not. Kept before the add: after one that grows the
    /// filter (or a windowed filter's new part), the next command's prefetch is wasted once.
    /// Where the hint is the filter's as it is (the usual case: a busy key), nothing is kept
    /// again, and the filter is told that its newest sub-filter's lines were asked for.
    #[inline(always)]
    pub fn take(self, call: &Call, filter: &Filter, now: u64) -> Option<EarlyHash> {
        match filter {
            Filter::Chain(chain) => self.take_for_chain(call, chain),
            Filter::Windowed(windowed) => self.take_for_windowed(call, windowed, now),
        }
    }

    /// [`Early::take`] for a key that holds `chain`.
    #[inline(always)]
    pub fn take_for_chain(self, call: &Call, chain: &Chain) -> Option<EarlyHash> {
        match (self.hash, self.hint) {
            (Some(hash), Some(hint)) if chain.is_at(&place(hint)) => Some(hash.asked()),
            _ => self.keep(call, chain.locator()),
        }
    }

    /// [`Early::take`] for a key that holds `windowed`, at `now`.
    #[inline(always)]
    pub fn take_for_windowed(
        self,
        call: &Call,
        windowed: &Windowed,
        now: u64,
    ) -> Option<EarlyHash> {
        match (self.hash, self.hint) {
            (Some(hash), Some(hint)) if windowed.is_at(&place(hint), now) => Some(hash.asked()),
            _ => self.keep(call, windowed.locator(now)),
        }
    }

    /// Keeps `locator` as the key's hint, or forgets the key's hint if there is none; the early
    /// hash (for the filter to take if it hashes that way).
    #[inline(always)]
    fn keep(self, call: &Call, locator: Option<Locator>) -> Option<EarlyHash> {
        match locator {
            Some(locator) => {
                let tag = match self.tag {
                    0 => hint::tag(call),
                    tag => tag,
                };
                HINTS.keep(tag, locator.to_words());
            }
            None if self.tag != 0 => HINTS.forget(self.tag),
            None => {}
        }
        self.hash
    }
}

/// Which sub-filter a hint locates.
#[inline(always)]
fn place(hint: &[AtomicU64; WORDS]) -> [u64; PLACE_WORDS] {
    Locator::place_from(|i| word(hint, i))
}
