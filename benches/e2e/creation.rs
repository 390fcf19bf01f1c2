//! Section `creation`: creating a big filter, time per GiB of BF.RESERVE, against the server
//! zeroing the same bytes for a string (`SETRANGE` of 512 MB, Redis's largest string), which is
//! what creating a filter cost before its memory was zeroed lazily.

use crate::common::{Frame, Server};
use crate::measure::{seconds, size};
use crate::report::Row;

/// Measures this section and appends its rows.
pub fn rows(server: &Server, rows: &mut Vec<Row>) {
    let mut conn = server.conn();
    let items = size(800_000_000);
    let mut index = 0;
    let mut bytes = 0;
    let reserve = seconds(|| {
        index += 1;
        let key = format!("create:{index}");
        assert_eq!(
            conn.call(&["BF.RESERVE", &key, "0.01", &items.to_string(), "NONSCALING"]),
            Frame::ok()
        );
        bytes = conn.call(&["BF.INFO", &key, "SIZE"]).items()[0].int();
        conn.call(&["DEL", &key]);
    });
    let string_bytes = size(512 << 20) as i64;
    let zero = seconds(|| {
        assert!(!conn
            .call(&["SETRANGE", "zeros", &(string_bytes - 1).to_string(), "x"])
            .is_error());
        conn.call(&["DEL", "zeros"]);
    });
    let gib = f64::from(1u32 << 30);
    rows.push(
        Row::new(
            "creating a big filter, ms per GiB",
            format!("BF.RESERVE, {:.2} GB NONSCALING", bytes as f64 / 1e9),
            reserve * 1000.0 * gib / bytes as f64,
            "ms",
        )
        .against(
            "zeroing as many bytes (SETRANGE)",
            zero * 1000.0 * gib / string_bytes as f64,
            0.1,
        ),
    );
}
