//! The README's sizing table is the output of the sizing code, not typed by hand.

use bf_filter::sizing::{markdown_table, TABLE_CAPACITIES, TABLE_ERRORS};

#[test]
fn the_readme_sizing_table_is_what_the_code_computes() {
    let readme = include_str!("../../../README.md");
    let table = markdown_table(&TABLE_ERRORS, &TABLE_CAPACITIES);
    assert!(
        readme.contains(&table),
        "README.md's sizing table is stale; regenerate it with \
         `cargo run -p bf-filter --example sizing_table`:\n{table}"
    );
}
