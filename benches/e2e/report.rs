//! The report: one row per measure, printed as a table, written as `target/bench/report.json`
//! and as a bar chart of the ratios, `target/bench/report.svg`.

use crate::measure::{median, quick};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// One row of the report.
pub struct Row {
    pub group: &'static str,
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    /// What the value is compared with, and the ratio it must stay at or under.
    pub target: Option<Target>,
    /// For side-by-side rows: the ratio of each pair of alternating runs. The row's ratio is then
    /// their median, not the ratio of the two medians.
    pub pairs: Vec<f64>,
}

/// What a row is measured against.
pub struct Target {
    /// The baseline's name ("SET", "bloomfilter crate").
    pub name: String,
    /// The baseline's value, in the row's unit.
    pub value: f64,
    /// The ratio the row must stay at or under; infinite for a comparison without a target.
    pub limit: f64,
}

impl Row {
    /// A row without a baseline.
    pub fn new(
        group: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Row {
        Row {
            group,
            name: name.into(),
            value,
            unit,
            target: None,
            pairs: Vec::new(),
        }
    }

    /// The row measured against `baseline`'s `value`, held to at most `limit` times it.
    pub fn against(mut self, baseline: impl Into<String>, value: f64, limit: f64) -> Row {
        self.target = Some(Target {
            name: baseline.into(),
            value,
            limit,
        });
        self
    }

    /// The ratios of the pairs of alternating runs behind a side-by-side row.
    pub fn with_pairs(mut self, pairs: Vec<f64>) -> Row {
        self.pairs = pairs;
        self
    }

    fn ratio(&self) -> Option<f64> {
        if !self.pairs.is_empty() {
            return Some(median(self.pairs.clone()));
        }
        self.target.as_ref().map(|target| self.value / target.value)
    }

    fn met(&self) -> Option<bool> {
        let ratio = self.ratio()?;
        self.target.as_ref().map(|target| ratio <= target.limit)
    }

    /// The target, its ratio and whether it was met, when the row has a target.
    fn versus(&self) -> Option<(&Target, f64, bool)> {
        Some((self.target.as_ref()?, self.ratio()?, self.met()?))
    }
}

/// Prints the table, each row beside its value in the previous run's report when there is one
/// (of the same kind: quick or not), and writes `report.json` and `report.svg` into `out` (the
/// previous `report.json` kept as `report.previous.json`).
pub fn write(rows: &[Row], out: &Path) {
    let machine = machine();
    let report = out.join("report.json");
    let previous = previous_values(&report);
    print_table(rows, &machine, &previous);
    if report.exists() {
        std::fs::rename(&report, out.join("report.previous.json")).unwrap();
    }
    let json = serde_json::to_string_pretty(&report_json(rows, &machine)).unwrap() + "\n";
    std::fs::write(&report, json).unwrap();
    std::fs::write(out.join("report.svg"), svg(rows, &machine)).unwrap();
    println!(
        "\nwrote {} and {}",
        out.join("report.json").display(),
        out.join("report.svg").display()
    );
}

/// "2026-11-24, AMD EPYC, 2 cores, Redis 7.0.15".
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let redis = Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .nth(2)
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    format!(
        "{date}, {cpu}, {cores} cores, Redis {}",
        redis.trim_start_matches("v=")
    )
}

/// A row's key among the previous run's values: its group, its name and what it is measured
/// against (rows of one workload against two baselines share a group and a name).
fn key(group: &str, name: &str, baseline: Option<&str>) -> String {
    format!("{group}\n{name}\n{}", baseline.unwrap_or(""))
}

/// The values of the previous run's report at `path`, by row; none if there is no report, or it
/// was a quick run and this one is not (or the other way round).
fn previous_values(path: &Path) -> HashMap<String, f64> {
    let Some(report) = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    else {
        return HashMap::new();
    };
    if report["quick"].as_bool() != Some(quick()) {
        return HashMap::new();
    }
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    rows.iter()
        .filter_map(|row| {
            let key = key(
                row["group"].as_str()?,
                row["name"].as_str()?,
                row["baseline"].as_str(),
            );
            Some((key, row["value"].as_f64()?))
        })
        .collect()
}

fn print_table(rows: &[Row], machine: &str, previous: &HashMap<String, f64>) {
    println!(
        "\nredis-bf benchmark: {machine}{}\n",
        if quick() {
            " (BENCH_QUICK: not for numbers)"
        } else {
            ""
        }
    );
    let mut group = "";
    for row in rows {
        if row.group != group {
            group = row.group;
            println!("{group}");
        }
        let versus = match row.versus() {
            Some((target, ratio, met)) => {
                let limit = if target.limit.is_finite() {
                    format!(
                        " (target <= {}x: {})",
                        target.limit,
                        if met { "met" } else { "MISSED" }
                    )
                } else {
                    String::new()
                };
                format!(
                    "  vs {} {:.3}: {ratio:.2}x{limit}",
                    target.name, target.value
                )
            }
            None => String::new(),
        };
        let baseline = row.target.as_ref().map(|target| target.name.as_str());
        let before = match previous.get(&key(row.group, &row.name, baseline)) {
            Some(&value) if value > 0.0 => {
                format!(
                    "  [previous run {value:.3}: {:+.0}%]",
                    (row.value / value - 1.0) * 100.0
                )
            }
            _ => String::new(),
        };
        println!(
            "  {:<58} {:>14.3} {:<5}{versus}{before}",
            row.name, row.value, row.unit
        );
        if !row.pairs.is_empty() {
            let pairs: Vec<String> = row.pairs.iter().map(|r| format!("{r:.2}")).collect();
            println!("  {:<58} ratio of each pair: {}", "", pairs.join(" "));
        }
    }
}

/// The report as JSON: the machine, whether it was a quick run, and every row with its baseline,
/// ratio and target when it has one (`target_ratio` null for a comparison without a target).
fn report_json(rows: &[Row], machine: &str) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mut entry = json!({
                "group": row.group,
                "name": row.name,
                "value": row.value,
                "unit": row.unit,
            });
            if let Some((target, ratio, met)) = row.versus() {
                entry["baseline"] = json!(target.name);
                entry["baseline_value"] = json!(target.value);
                entry["ratio"] = json!(ratio);
                entry["target_ratio"] = json!(target.limit.is_finite().then_some(target.limit));
                entry["met"] = json!(met);
            }
            entry
        })
        .collect();
    json!({ "machine": machine, "quick": quick(), "rows": rows })
}

/// A bar chart of every ratio against its baseline (1.0), with the target marked.
fn svg(rows: &[Row], machine: &str) -> String {
    let rated: Vec<&Row> = rows.iter().filter(|r| r.ratio().is_some()).collect();
    let height = 70.0 + rated.len() as f64 * (BAR + GAP);
    let max = rated
        .iter()
        .filter_map(|r| r.ratio())
        .chain(
            rated
                .iter()
                .filter_map(|r| r.target.as_ref().map(|t| t.limit))
                .filter(|l| l.is_finite()),
        )
        .fold(1.5f64, f64::max);
    let x = |ratio: f64| LEFT + ratio / max * WIDTH;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"14\">redis-bf: each measure over its baseline (lower is better; | marks the target)</text>\n\
         <text x=\"10\" y=\"38\" fill=\"#555\">{}</text>\n",
        LEFT + WIDTH + 80.0,
        escape_xml(machine)
    );
    let _ = writeln!(out, "<line x1=\"{0}\" y1=\"50\" x2=\"{0}\" y2=\"{1}\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>", x(1.0), height - 10.0);
    for (index, row) in rated.iter().enumerate() {
        let y = 55.0 + index as f64 * (BAR + GAP);
        svg_bar(&mut out, row, y, &x);
    }
    out.push_str("</svg>\n");
    out
}

/// The chart's geometry: the labels' column, the bars' full width, a bar's height, the gap.
const LEFT: f64 = 420.0;
const WIDTH: f64 = 420.0;
const BAR: f64 = 18.0;
const GAP: f64 = 8.0;

/// One row's label, bar, ratio and target mark, at height `y`; `x` places a ratio.
fn svg_bar(out: &mut String, row: &Row, y: f64, x: &impl Fn(f64) -> f64) {
    let ratio = row.ratio().unwrap_or(0.0);
    let color = match row.met() {
        Some(true) => "#3a7d44",
        _ => "#b33",
    };
    let label = format!(
        "{} ({})",
        row.name,
        row.target.as_ref().map_or("", |t| t.name.as_str())
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        LEFT - 8.0,
        y + 13.0,
        escape_xml(&label)
    );
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{y}\" width=\"{:.1}\" height=\"{BAR}\" fill=\"{color}\"/>",
        x(ratio) - LEFT
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{}\">{ratio:.2}x</text>",
        x(ratio) + 4.0,
        y + 13.0
    );
    if let Some(target) = &row.target {
        if target.limit.is_finite() {
            let _ = writeln!(out, "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\"/>", x(target.limit), y - 2.0, y + BAR + 2.0);
        }
    }
}

/// Text safe inside an SVG element.
fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;")
}
