//! A small deterministic generator (xorshift64*) for the storm tests, and the damage they do to
//! valid payloads.

/// xorshift64*, seeded by the test: the same seed, the same storm.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }

    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Changes a few random bytes (or cuts, or extends) of some data.
pub fn mangle(rng: &mut Rng, data: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(3) {
        if data.is_empty() {
            data.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(data.len());
        match rng.below(4) {
            0 => data[at] = rng.next() as u8,
            1 => data.truncate(at),
            2 => data.insert(at, rng.next() as u8),
            _ => {
                let word = rng.next().to_le_bytes();
                let end = (at + 8).min(data.len());
                data[at..end].copy_from_slice(&word[..end - at]);
            }
        }
    }
}
