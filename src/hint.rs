//! A few words a family keeps about the big filters its single-item commands used, each under a
//! tag of its key's name, in a small table of [`SLOTS`] entries (a key's slot is its tag's top
//! bits): where each filter lies in memory, so that the next command on one of those keys can ask
//! the CPU for its item's lines before the server has looked the key up. The server's lookup (a
//! few hundred instructions) then runs while the lines come from memory, where otherwise the wait
//! for them (most of a single command's time on a big filter) would follow it; a handful of busy
//! keys keep their hints side by side. The words are only ever prefetched from, never read
//! through: a hint gone stale (the key deleted, the filter grown or moved) or another key's (a tag
//! collision) costs a wasted load, never an answer. Commands run one at a time on the server's
//! main thread, so plain loads and stores (relaxed atomics, no locked instruction) are enough; a
//! mixed read could only mislead a prefetch.
//!
//! Beside the words, an entry keeps one number the family learns from its key's answers (the
//! Bloom family: how many of the key's recent lookups found their item, which decides how many
//! lines the next one asks for early). It belongs to the key: kept while the key keeps the entry
//! (its filter grown or moved), started again at 0 when another key takes the entry. Like the
//! words, it only ever decides what is prefetched, never an answer.

use crate::glue::call::Call;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The entries of a table: keys whose tags share their top bits share an entry.
pub const SLOTS: usize = 8;

/// The words kept for one key.
pub struct Entry<const N: usize> {
    /// The key's tag; 0 (no key's) while the entry is empty.
    tag: AtomicU64,
    /// What the family keeps of the key's filter.
    words: [AtomicU64; N],
    /// What the family learned of the key's recent answers (0 for a key new to the entry).
    learned: AtomicU32,
}

impl<const N: usize> Entry<N> {
    /// Word `index` of what the family keeps of the key's filter.
    #[inline(always)]
    pub fn word(&self, index: usize) -> u64 {
        self.words[index].load(Ordering::Relaxed)
    }

    /// What the family learned of the key's recent answers: 0 until it keeps something.
    #[inline(always)]
    pub fn learned(&self) -> u32 {
        self.learned.load(Ordering::Relaxed)
    }

    /// Keeps `value` as what the family learned of the key's recent answers.
    #[inline(always)]
    pub fn learn(&self, value: u32) {
        self.learned.store(value, Ordering::Relaxed);
    }
}

/// A family's table of hints.
pub struct Hints<const N: usize> {
    /// Whether words were ever kept: until then a command learns that there is nothing to find
    /// from one load, without making its key's tag (a server of small filters only).
    used: AtomicBool,
    entries: [Entry<N>; SLOTS],
}

impl<const N: usize> Hints<N> {
    /// Nothing kept yet.
    pub const fn new() -> Hints<N> {
        Hints {
            used: AtomicBool::new(false),
            entries: [const {
                Entry {
                    tag: AtomicU64::new(0),
                    words: [const { AtomicU64::new(0) }; N],
                    learned: AtomicU32::new(0),
                }
            }; SLOTS],
        }
    }

    /// The entry of the key tagged `tag`.
    #[inline(always)]
    fn entry(&self, tag: u64) -> &Entry<N> {
        &self.entries[(tag >> (64 - SLOTS.trailing_zeros())) as usize]
    }

    /// Whether words were ever kept.
    #[inline(always)]
    pub fn in_use(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// The words kept for the key tagged `tag`, if its entry holds them.
    #[inline(always)]
    pub fn get(&self, tag: u64) -> Option<[u64; N]> {
        let entry = self.entry(tag);
        if entry.tag.load(Ordering::Relaxed) != tag {
            return None;
        }
        Some(std::array::from_fn(|i| {
            entry.words[i].load(Ordering::Relaxed)
        }))
    }

    /// The entry of the key tagged `tag`, if it holds that key's words, to read one word at a time
    /// (a family that needs a few of many words reads those only) and to learn from its answers.
    #[inline(always)]
    pub fn find(&self, tag: u64) -> Option<&Entry<N>> {
        let entry = self.entry(tag);
        (entry.tag.load(Ordering::Relaxed) == tag).then_some(entry)
    }

    /// Keeps `words` for the key tagged `tag`, in place of what its entry held; what was learned
    /// of the key's answers stays if the entry was the key's already, else starts again.
    #[inline(always)]
    pub fn keep(&self, tag: u64, words: [u64; N]) {
        let entry = self.entry(tag);
        if entry.tag.load(Ordering::Relaxed) != tag {
            entry.learned.store(0, Ordering::Relaxed);
        }
        entry.tag.store(tag, Ordering::Relaxed);
        for (kept, word) in entry.words.iter().zip(words) {
            kept.store(word, Ordering::Relaxed);
        }
        self.used.store(true, Ordering::Relaxed);
    }

    /// Empties the entry of the key tagged `tag` if it holds that key's words (its filter is no
    /// longer worth a hint).
    #[inline(always)]
    pub fn forget(&self, tag: u64) {
        let entry = self.entry(tag);
        if entry.tag.load(Ordering::Relaxed) == tag {
            entry.tag.store(0, Ordering::Relaxed);
        }
    }
}

/// The tag of the call's key (argument 1). The same name in two databases has one tag: a
/// command that alternates between them wastes its prefetch, nothing more.
#[inline(always)]
pub fn tag(call: &Call) -> u64 {
    filters::hash::tag(call.args_key())
}

#[cfg(test)]
mod tests {
    use super::{Hints, SLOTS};

    /// A tag in slot `slot`, told apart from others there by `low`.
    fn tag(slot: usize, low: u64) -> u64 {
        ((slot as u64) << 61) | low | 1
    }

    #[test]
    fn keys_of_different_slots_keep_their_hints_side_by_side() {
        assert_eq!(SLOTS, 8);
        let hints: Hints<2> = Hints::new();
        assert!(!hints.in_use());
        assert_eq!(hints.get(tag(0, 2)), None);
        for slot in 0..SLOTS {
            hints.keep(tag(slot, 2), [slot as u64, 7]);
        }
        assert!(hints.in_use());
        for slot in 0..SLOTS {
            assert_eq!(hints.get(tag(slot, 2)), Some([slot as u64, 7]));
            assert_eq!(hints.get(tag(slot, 4)), None);
        }
    }

    #[test]
    fn a_key_of_the_same_slot_takes_the_entry_and_forgetting_spares_others() {
        let hints: Hints<1> = Hints::new();
        hints.keep(tag(3, 2), [1]);
        hints.keep(tag(3, 4), [2]);
        assert_eq!(hints.get(tag(3, 2)), None);
        assert_eq!(hints.get(tag(3, 4)), Some([2]));
        // Forgetting another key of the slot leaves the entry alone; its own key empties it.
        hints.forget(tag(3, 2));
        assert_eq!(hints.get(tag(3, 4)), Some([2]));
        hints.forget(tag(3, 4));
        assert_eq!(hints.get(tag(3, 4)), None);
    }

    #[test]
    fn what_was_learned_stays_with_its_key_and_starts_again_for_another() {
        let hints: Hints<1> = Hints::new();
        hints.keep(tag(5, 2), [1]);
        let entry = hints.find(tag(5, 2)).unwrap();
        assert_eq!(entry.learned(), 0);
        entry.learn(200);
        // The same key's filter kept again (grown, moved): what was learned stays.
        hints.keep(tag(5, 2), [2]);
        let entry = hints.find(tag(5, 2)).unwrap();
        assert_eq!((entry.word(0), entry.learned()), (2, 200));
        // Another key takes the entry: it starts from nothing.
        hints.keep(tag(5, 4), [3]);
        assert!(hints.find(tag(5, 2)).is_none());
        assert_eq!(hints.find(tag(5, 4)).unwrap().learned(), 0);
    }
}
