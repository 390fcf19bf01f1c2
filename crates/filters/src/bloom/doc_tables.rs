//! The Bloom filter figures the docs quote, computed by the code that sizes real filters: docs/commands.md's
//! sizing table and docs/cluster.md's partitioning example (`cargo run -p filters --example
//! sizing_table` / `partitioning` print them; tests/readme_sizing.rs checks the docs against them).
//! Docs tooling, above the filters it measures.

use crate::bloom::sizing::Shape;
use crate::bloom::Chain;

/// Error rates (rows) and capacities (columns) of the sizing table of docs/commands.md.
pub const TABLE_ERRORS: [f64; 5] = [0.1, 0.01, 0.001, 0.0001, 0.00001];
/// See [`TABLE_ERRORS`].
pub const TABLE_CAPACITIES: [u64; 6] = [
    1_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// A Markdown table of what `BF.RESERVE key error capacity` costs for each error rate (rows) and
/// capacity (columns): the bytes the new filter takes (bits and bookkeeping) and its hash count.
/// Computed by the code that sizes real filters; docs/commands.md's sizing table is this output.
pub fn markdown_table(errors: &[f64], capacities: &[u64]) -> String {
    let mut table = String::from("| error rate |");
    for capacity in capacities {
        table.push_str(&format!(" {} items |", count_text(*capacity)));
    }
    table.push_str("\n|---|");
    table.push_str(&"---|".repeat(capacities.len()));
    for &error in errors {
        table.push_str(&format!("\n| {error} |"));
        for &capacity in capacities {
            // A scaling filter's first sub-filter is built for half the error rate.
            let cell = match Shape::new(capacity, error / 2.0) {
                Ok(shape) => format!(
                    "{} ({} hashes)",
                    bytes_text(Chain::planned_bytes([&shape])),
                    shape.hash_count
                ),
                Err(err) => format!("{err:?}"),
            };
            table.push_str(&format!(" {cell} |"));
        }
    }
    table.push('\n');
    table
}

/// docs/cluster.md's worked example: ten billion URLs at 0.1% over 32 partitions with 5% headroom.
pub const PARTITION_EXAMPLE: (u64, u64, f64, f64) = (10_000_000_000, 32, 0.05, 0.001);

/// docs/cluster.md's worked example of partitioning one set too big for a shard over `partitions`
/// NONSCALING filters, each reserved for its share of `items` plus `headroom` (0.05 for 5%), with
/// the arithmetic of its false-positive rate. Computed by the sizing code that builds real filters.
pub fn partition_example(items: u64, partitions: u64, headroom: f64, error: f64) -> String {
    let one = Shape::new(items, error / 2.0).map_or(0, |shape| Chain::planned_bytes([&shape]));
    let share = items as f64 / partitions as f64;
    let capacity = (share * (1.0 + headroom)).ceil() as u64;
    let Ok(shape) = Shape::new(capacity, error) else {
        return format!("no shape for {capacity} items at {error}");
    };
    let bytes = Chain::planned_bytes([&shape]);
    // Items per partition are binomial(items, 1 / partitions).
    let p = 1.0 / partitions as f64;
    let sigma = (items as f64 * p * (1.0 - p)).sqrt();
    let rate_at = |fill: f64| {
        let k = f64::from(shape.hash_count);
        (1.0 - (-k * fill / shape.bits as f64).exp()).powf(k)
    };
    let all = 1.0 - (1.0 - rate_at(share)).powi(partitions as i32);
    format!(
        "- One scaling filter for all {items_text} items at {error} would take {one_text} on one \
         shard.\n\
         - {partitions} NONSCALING partitions, each reserved for {capacity_text} items ({share_text} \
         expected, plus {headroom_pct}% headroom), take {bytes_text} each ({hashes} hashes), \
         {total_text} in all, spread over the shards by their key names.\n\
         - A partition's item count varies by {sigma_text} (one standard deviation); the headroom is \
         {margin:.0} standard deviations, so no partition overflows.\n\
         - A lookup of an absent item asks one partition, so its false-positive rate is that \
         partition's: {expected_rate:.4}% at the expected fill, {full_rate:.4}% were a partition \
         filled to its reserved capacity.\n\
         - Asking all {partitions} partitions instead (no routing by hash) would compound them to \
         {all_rate:.2}%.\n",
        one_text = bytes_text(one),
        items_text = grouped(items),
        capacity_text = grouped(capacity),
        sigma_text = grouped(sigma.round() as u64),
        share_text = grouped(share.round() as u64),
        headroom_pct = (headroom * 100.0).round() as u64,
        bytes_text = bytes_text(bytes),
        hashes = shape.hash_count,
        total_text = bytes_text(bytes * partitions),
        margin = (capacity as f64 - share) / sigma,
        expected_rate = rate_at(share) * 100.0,
        full_rate = rate_at(capacity as f64) * 100.0,
        all_rate = all * 100.0,
    )
}

/// 10000000 as "10,000,000".
fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

fn count_text(count: u64) -> String {
    match count {
        c if c >= 1_000_000_000 && c % 1_000_000_000 == 0 => format!("{}B", c / 1_000_000_000),
        c if c >= 1_000_000 && c % 1_000_000 == 0 => format!("{}M", c / 1_000_000),
        c if c >= 1_000 && c % 1_000 == 0 => format!("{}K", c / 1_000),
        c => c.to_string(),
    }
}

fn bytes_text(bytes: u64) -> String {
    const UNITS: [(&str, f64); 3] = [("GiB", 1073741824.0), ("MiB", 1048576.0), ("KiB", 1024.0)];
    for (unit, size) in UNITS {
        if bytes as f64 >= size {
            return format!("{:.1} {unit}", bytes as f64 / size);
        }
    }
    format!("{bytes} B")
}
