//! Section `core`: the filter core against the `bloomfilter` crate, from criterion's results
//! (`cargo bench -p filters --bench core` must have run first).

use crate::report::Row;
use std::path::Path;

/// Measures this section and appends its rows.
pub fn rows(rows: &mut Vec<Row>) {
    for size in ["1MiB", "1GiB"] {
        for (op, per) in [
            ("add", 1.0),
            ("lookup", 1.0),
            ("add-batch100", 100.0),
            ("lookup-batch100", 100.0),
        ] {
            let ours = criterion_ns(size, &format!("{op}/ours"));
            let theirs = criterion_ns(size, &format!("{op}/bloomfilter"));
            if let (Some(ours), Some(theirs)) = (ours, theirs) {
                let name = format!("{op} {size}, ns per item");
                rows.push(
                    Row::new("core (criterion)", name, ours / per, "ns").against(
                        "bloomfilter crate",
                        theirs / per,
                        1.0,
                    ),
                );
            }
        }
    }
    if rows.is_empty() {
        eprintln!("(no criterion results: run `cargo bench -p filters --bench core` first)");
    }
}

/// The mean of a criterion benchmark, in ns, if it was run.
fn criterion_ns(group: &str, bench: &str) -> Option<f64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/criterion")
        .join(group)
        .join(bench.replace('/', "_"))
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
    estimates["mean"]["point_estimate"].as_f64()
}
