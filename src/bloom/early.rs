//! A single `BF.ADD` or `BF.EXISTS`'s item, hashed before its key is opened: where a recent such
//! command kept where its key's filter lies (a big one: `filters::bloom::locator`), the item is hashed
//! as that filter hashes and its probe lines are asked for at once, so that the server's lookup of
//! the key runs while they come from memory (see [`crate::hint`], which the cuckoo commands'
//! `Early` uses the same way). The filter takes the early hash only if it hashes that way; a hint
//! gone stale costs a wasted prefetch, never an answer.
//!
//! How many lines a lookup asks for is learned from the key's own recent answers ([`HeldShare`]):
//! where most lookups find their item (a crawler's check of links mostly seen), all of its probes'
//! lines, which a held item reads every one of; where most do not, the first few, where an absent
//! item stops.

use crate::glue::call::Call;
use crate::hint::{self, Entry, Hints};
use filters::bloom::locator::{
    EarlyHash, Locator, EARLY_PROBES, LOOKUP_PROBES, PLACE_WORDS, WORDS,
};
use filters::bloom::window::Windowed;
use filters::bloom::{Chain, Filter};

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
    hint: Option<&'static Entry<WORDS>>,
}

/// The share of a key's recent lookups that found their item, in 256ths, kept in its hint
/// ([`Entry::learned`]): each answer moves it an eighth of the way towards all (held) or none
/// (absent), so that it follows about the last eight lookups. At [`HeldShare::ASK_ALL`] and above
/// a lookup asks for every probe's line early; below, for the first [`LOOKUP_PROBES`].
///
/// Measured on a 1e8 filter holding 20M items (`docs/performance.md`): asking for all seven lines
/// made a held item's lookup 0.17 us shorter (its last four lines no longer waited for after the
/// first three were read) and an absent one's 0.07 us longer (four lines it never reads, and the
/// arithmetic of their addresses); the two break even where about a third of the items are held.
pub struct HeldShare;

impl HeldShare {
    /// One answer's weight, in 256ths: an eighth.
    const STEP: u32 = 32;
    /// The share from which a lookup asks for all its lines: a third.
    pub const ASK_ALL: u32 = 86;

    /// The share after an answer: `held` or not.
    #[inline(always)]
    pub fn after(share: u32, held: bool) -> u32 {
        let share = share.min(256);
        share - share.div_ceil(8) + if held { HeldShare::STEP } else { 0 }
    }

    /// How many of its first probes' lines a lookup asks for early, where the key's share is
    /// `share`.
    #[inline(always)]
    fn lookup_probes(share: u32) -> u32 {
        if share >= HeldShare::ASK_ALL {
            EARLY_PROBES
        } else {
            LOOKUP_PROBES
        }
    }
}

impl Early {
    /// Before the key is opened: if a hint is kept for this key, hashes `item` as its filter does
    /// and asks for its probe lines there. One load and nothing more while no big filter has been
    /// used.
    /// An add asks for the lines of all its item's probes (up to 16: it writes them all); a
    /// lookup for as many as the key's recent answers say ([`HeldShare`]): all of them where
    /// most items were held, else its first few (`LOOKUP_PROBES`), and for the others once those
    /// are found set.
    #[inline(always)]
    pub fn hash(call: &Call, item: &[u8], purpose: Purpose) -> Early {
        if !HINTS.in_use() {
            return Early::NONE;
        }
        Early::hash_hinted(call, item, purpose)
    }

    /// [`Early::hash`] once hints are kept (out of line, so that a server of small filters runs
    /// none of it, nor makes room for it).
    #[inline(never)]
    fn hash_hinted(call: &Call, item: &[u8], purpose: Purpose) -> Early {
        let tag = hint::tag(call);
        let Some(hint) = HINTS.find(tag) else {
            return Early { tag, ..Early::NONE };
        };
        let probes = match purpose {
            Purpose::Add => EARLY_PROBES,
            Purpose::Lookup => HeldShare::lookup_probes(hint.learned()),
        };
        Early {
            tag,
            hash: Some(Locator::prefetch_from(|i| hint.word(i), item, probes)),
            hint: Some(hint),
        }
    }

    /// After a lookup: whether it found its item, learned by the key's hint for the next
    /// lookup's early request ([`HeldShare`]). Nothing for a command that found no hint.
    #[inline(always)]
    pub fn answered(self, held: bool) {
        if let Some(hint) = self.hint {
            hint.learn(HeldShare::after(hint.learned(), held));
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
fn place(hint: &Entry<WORDS>) -> [u64; PLACE_WORDS] {
    Locator::place_from(|i| hint.word(i))
}

#[cfg(test)]
mod tests {
    use super::HeldShare;

    /// The share after `answers`, from nothing.
    fn share_after(answers: impl IntoIterator<Item = bool>) -> u32 {
        answers.into_iter().fold(0, HeldShare::after)
    }

    #[test]
    fn the_held_share_follows_the_recent_answers() {
        // All held: up to (nearly) all of 256, and back to none after enough absent answers.
        let held = share_after([true; 64]);
        assert!((240..=256).contains(&held), "{held}");
        assert_eq!(
            (0..64).fold(held, |share, _| HeldShare::after(share, false)),
            0
        );
        // Never past 256, whatever it is given.
        assert!(HeldShare::after(u32::MAX, true) <= 256);
    }

    #[test]
    fn a_lookup_asks_for_all_its_lines_once_about_a_third_were_held() {
        let ask_all = |answers: Vec<bool>| share_after(answers) >= HeldShare::ASK_ALL;
        // One held in two, one in three: all; one in four, or none: the first few.
        let every = |n: usize| (0..64).map(|i| i % n == 0).collect::<Vec<_>>();
        assert!(ask_all(every(1)));
        assert!(ask_all(every(2)));
        assert!(ask_all(every(3)));
        assert!(!ask_all(every(4)));
        assert!(!ask_all(vec![false; 64]));
        // A key that turns from absent items to held ones asks for all within four lookups.
        let mut turning = vec![false; 64];
        turning.extend([true; 4]);
        assert!(ask_all(turning));
    }
}
