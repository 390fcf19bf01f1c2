//! Prints docs/commands.md's sizing table: `cargo run -p bf-filter --example sizing_table`.

use bf_filter::doc_tables::{markdown_table, TABLE_CAPACITIES, TABLE_ERRORS};

fn main() {
    print!("{}", markdown_table(&TABLE_ERRORS, &TABLE_CAPACITIES));
}
