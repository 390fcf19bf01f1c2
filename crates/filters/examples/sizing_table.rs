//! Prints docs/commands.md's sizing table: `cargo run -p filters --example sizing_table`.

use filters::bloom::doc_tables::{markdown_table, TABLE_CAPACITIES, TABLE_ERRORS};

fn main() {
    print!("{}", markdown_table(&TABLE_ERRORS, &TABLE_CAPACITIES));
}
