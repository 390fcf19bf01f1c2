//! Every input the fuzzers kept (and every crash they ever found, under `fuzz/regressions`) runs
//! through the decoders again in `make test`.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = 0;
    for dir in [
        root.join("corpus").join(target),
        root.join("regressions").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            run(&data);
            inputs += 1;
        }
    }
    assert!(
        inputs > 3,
        "the {target} corpus is missing: {inputs} inputs"
    );
}

#[test]
fn the_chunks_corpus_decodes_without_panicking() {
    replay("chunks", filters::fuzzing::chunks);
}

#[test]
fn the_stored_corpus_decodes_without_panicking() {
    replay("stored", filters::fuzzing::stored);
}

#[test]
fn the_older_stored_corpus_decodes_without_panicking() {
    replay("older_stored", filters::fuzzing::older_stored);
    // Its first seed is a windowed filter of the first release: it loads.
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/older_stored");
    let data = std::fs::read(seeds.join("seed-0")).unwrap();
    let mut fields = filters::bloom::stored::ByteFields::new(&data[1..]);
    let loaded =
        filters::bloom::stored::load(&mut fields, filters::bloom::stored::Revision::Windowed);
    assert!(loaded.is_ok(), "{loaded:?}");
}

#[test]
fn the_redisbloom_corpus_decodes_without_panicking() {
    replay("redisbloom", filters::fuzzing::redisbloom);
    // Its seeds, one per encoding version, are real filters (so the fuzzer starts from inputs
    // that get past the first checks).
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/redisbloom");
    for encver in 0..5u32 {
        let data = std::fs::read(seeds.join(format!("seed-{encver}"))).unwrap();
        let mut fields = filters::bloom::stored::ByteFields::new(&data[1..]);
        let loaded = filters::bloom::redisbloom::load_rdb(&mut fields, encver);
        assert!(loaded.is_ok(), "seed {encver}: {loaded:?}");
    }
}

#[test]
fn the_cuckoo_stored_corpus_decodes_without_panicking() {
    replay("cuckoo_stored", filters::fuzzing::cuckoo_stored);
    // Its seeds are real filters, of both kinds, two of them being restored: each loads.
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/cuckoo_stored");
    for index in 0..9 {
        let data = std::fs::read(seeds.join(format!("seed-{index}"))).unwrap();
        let mut fields = filters::bloom::stored::ByteFields::new(&data);
        let loaded = filters::cuckoo::stored::load(&mut fields, 4);
        assert!(loaded.is_ok(), "seed {index}: {loaded:?}");
    }
}

#[test]
fn the_cuckoo_header_corpus_decodes_without_panicking() {
    replay("cuckoo_header", filters::fuzzing::cuckoo_header);
    // Its seeds parse: RedisBloom's 38 bytes and this module's 58.
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/cuckoo_header");
    for name in ["seed-0", "seed-5", "seed-100"] {
        let data = std::fs::read(seeds.join(name)).unwrap();
        let parsed = filters::cuckoo::dump::Header::parse(&data);
        assert!(parsed.is_ok(), "{name}: {parsed:?}");
    }
}

#[test]
fn the_cuckoo_chunks_corpus_decodes_without_panicking() {
    replay("cuckoo_chunks", filters::fuzzing::cuckoo_chunks);
}
