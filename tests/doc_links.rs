//! Every link between the repository's own pages leads somewhere: each relative link of every
//! Markdown file (README.md, docs/, python/README.md, ARCHITECTURE.md, SECURITY.md, CHANGELOG.md,
//! the examples' and the packaging's READMEs) names a file that exists, and its `#anchor`, if any,
//! one that GitHub makes for a heading of that page. No server is needed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files of the repository: not under build output (`target`), dependencies or
/// hidden directories.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = ["target", "node_modules", "__pycache__", "build"];
            if !name.starts_with('.') && !skipped.contains(&name.as_str()) {
                markdown_files(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The page's lines, those of fenced code blocks blanked (a `#` there is a comment, a `](` code).
fn prose_lines(text: &str) -> Vec<String> {
    let mut fence: Option<String> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        match &fence {
            Some(open) => {
                if trimmed.starts_with(open.as_str()) {
                    fence = None;
                }
                lines.push(String::new());
            }
            None if marker.len() >= 3 => {
                fence = Some(marker);
                lines.push(String::new());
            }
            None => lines.push(line.to_string()),
        }
    }
    lines
}

/// `text` without its inline code spans (a link's text may hold one: `[`X`](#x)` keeps `[](#x)`).
fn without_code(text: &str) -> String {
    let mut out = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// The anchor GitHub gives a heading: its text as shown (a link's text, not its target),
/// lowercased, without anything but letters, digits, `_`, `-` and spaces, each space a `-`.
fn slug(heading: &str) -> String {
    let mut shown = String::new();
    let mut rest = heading;
    // [text](target) shows as text.
    while let Some(open) = rest.find("](") {
        let close = rest[open..]
            .find(')')
            .map_or(rest.len(), |at| open + at + 1);
        shown.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    shown.push_str(rest);
    shown
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page: one per heading (a repeated one gets `-1`, `-2`, ... as on GitHub),
/// and any `<a name="...">` or `<a id="...">`.
fn anchors(page: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(page).unwrap_or_else(|err| panic!("{page:?}: {err}"));
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut anchors = HashSet::new();
    for line in prose_lines(&text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let heading = line[hashes..].trim().trim_end_matches('#').trim_end();
            let base = slug(heading);
            let count = seen.entry(base.clone()).or_insert(0);
            anchors.insert(match *count {
                0 => base.clone(),
                n => format!("{base}-{n}"),
            });
            *count += 1;
        }
        for attribute in ["<a name=\"", "<a id=\""] {
            for (at, _) in line.match_indices(attribute) {
                let value = &line[at + attribute.len()..];
                anchors.insert(value[..value.find('"').unwrap_or(0)].to_string());
            }
        }
    }
    anchors
}

/// The destinations of the page's inline links, each with its line number.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(text).iter().enumerate() {
        let line = without_code(line);
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            found.push((number + 1, rest[..end].to_string()));
        }
    }
    found
}

#[test]
fn github_anchors_are_made_as_github_makes_them() {
    assert_eq!(
        slug("Cuckoo filters (`CF.*`): membership that can forget an item"),
        "cuckoo-filters-cf-membership-that-can-forget-an-item"
    );
    assert_eq!(
        slug("CF.SCANDUMP key iterator / CF.LOADCHUNK key iterator bytes"),
        "cfscandump-key-iterator--cfloadchunk-key-iterator-bytes"
    );
    assert_eq!(
        slug("Single commands and huge pages (2026-11-26)"),
        "single-commands-and-huge-pages-2026-11-26"
    );
    assert_eq!(
        slug("See [the README](../README.md) first"),
        "see-the-readme-first"
    );
}

#[test]
fn every_link_between_the_pages_leads_to_a_file_and_a_heading_that_exist() {
    let mut pages = Vec::new();
    markdown_files(root(), &mut pages);
    for page in [
        "README.md",
        "docs/performance.md",
        "python/README.md",
        "CHANGELOG.md",
    ] {
        assert!(pages.contains(&root().join(page)), "{page} not found");
    }
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for (line, destination) in links(&text) {
            // Links out of the repository are not checked here.
            if destination.contains("://") || destination.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match destination.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (destination.as_str(), None),
            };
            let target = match path {
                "" => page.clone(),
                path => page.parent().unwrap().join(path),
            };
            if !target.exists() {
                broken.push(format!("{name}:{line}: {destination}: no such file"));
                continue;
            }
            let markdown = target.extension().is_some_and(|ext| ext == "md");
            if let (Some(anchor), true) = (anchor, markdown) {
                if !anchors(&target).contains(anchor) {
                    broken.push(format!("{name}:{line}: {destination}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The links were found at all (about a hundred).
    assert!(checked >= 90, "only {checked} links found");
}
