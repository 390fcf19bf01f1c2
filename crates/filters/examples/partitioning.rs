//! Prints docs/cluster.md's worked example of partitioning a set over many filters:
//! `cargo run -p filters --example partitioning`.

use filters::bloom::doc_tables::{partition_example, PARTITION_EXAMPLE};

fn main() {
    let (items, partitions, headroom, error) = PARTITION_EXAMPLE;
    print!("{}", partition_example(items, partitions, headroom, error));
}
