//! The sizing table (docs/commands.md) and the partitioning example (docs/cluster.md) are the
//! output of the sizing code, not typed by hand.

use filters::bloom::doc_tables::{markdown_table, TABLE_CAPACITIES, TABLE_ERRORS};

#[test]
fn the_documented_sizing_table_is_what_the_code_computes() {
    let readme = include_str!("../../../docs/commands.md");
    let table = markdown_table(&TABLE_ERRORS, &TABLE_CAPACITIES);
    assert!(
        readme.contains(&table),
        "docs/commands.md's sizing table is stale; regenerate it with \
         `cargo run -p filters --example sizing_table`:\n{table}"
    );
}

#[test]
fn the_documented_partitioning_example_is_what_the_code_computes() {
    use filters::bloom::doc_tables::{partition_example, PARTITION_EXAMPLE};
    let readme = include_str!("../../../docs/cluster.md");
    let (items, partitions, headroom, error) = PARTITION_EXAMPLE;
    let example = partition_example(items, partitions, headroom, error);
    assert!(
        readme.contains(&example),
        "docs/cluster.md's partitioning example is stale; regenerate it with \
         `cargo run -p filters --example partitioning`:\n{example}"
    );
}
