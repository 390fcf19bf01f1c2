//! Writes seed inputs for the fuzzers (`fuzz/corpus/stored`, `fuzz/corpus/chunks`): the stored
//! form and the dump of a few real chains. `cargo run -p bf-filter --example fuzz_seeds`.

use bf_filter::dump::{header, next_iterator};
use bf_filter::stored::to_bytes;
use bf_filter::{Chain, Growth};
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let chains = [
        (100, 0.01, Growth::Scaling { expansion: 2 }, 0),
        (10, 0.01, Growth::Scaling { expansion: 2 }, 40),
        (5, 0.1, Growth::Scaling { expansion: 1 }, 30),
        (50, 0.001, Growth::Fixed, 50),
    ];
    for (index, (capacity, error, growth, items)) in chains.into_iter().enumerate() {
        let mut chain = Chain::new(capacity, error, growth, u64::MAX).unwrap();
        for i in 0..items {
            chain.add(format!("item:{i}").as_bytes(), u64::MAX).unwrap();
        }
        write(&root.join("stored"), index, &to_bytes(&chain));
        // The chunks target's framing: u16 header length, header, then (u64 iterator, u16 length,
        // bytes) per data chunk.
        let head = header(&chain);
        let mut input = (head.len() as u16).to_le_bytes().to_vec();
        input.extend_from_slice(&head);
        let mut offset = 0;
        while let Some(chunk) = chain.chunk(offset).filter(|c| !c.is_empty()) {
            input.extend_from_slice(&next_iterator(offset, chunk.len()).to_le_bytes());
            input.extend_from_slice(&(chunk.len() as u16).to_le_bytes());
            input.extend_from_slice(&chunk);
            offset += chunk.len() as u64;
        }
        write(&root.join("chunks"), index, &input);
    }
}

fn write(dir: &Path, index: usize, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("seed-{index}")), bytes).unwrap();
}
