//! Prints docs/cluster.md's worked example of partitioning a set over many filters:
//! `cargo run -p bf-filter --example partitioning`.

use bf_filter::doc_tables::{partition_example, PARTITION_EXAMPLE};

fn main() {
    let (items, partitions, headroom, error) = PARTITION_EXAMPLE;
    print!("{}", partition_example(items, partitions, headroom, error));
}
