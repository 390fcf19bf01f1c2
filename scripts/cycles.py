#!/usr/bin/env python3
"""Fails if the modules of a crate import each other in a cycle (`make lint` runs it on both crates).

A module is a file. A file depends on another when it names it through `crate::` (in a `use` line
or a path in the code) or through `super::` (a child module using its parent's items); a parent
naming its own child by its bare name is how Rust nests modules, not a dependency, and is not
counted. Doc comments, comments and a file's unit tests (a `#[cfg(test)] mod` block, which this
project keeps at the end of a file) are ignored: a test may build its input with a higher layer.
Prints each cycle it finds and exits 1; prints nothing and exits 0 when there is none.

Usage: scripts/cycles.py SRC_DIR [SRC_DIR ...]   (each the `src` of one crate)
"""

import re
import sys
from pathlib import Path

ROOT = re.compile(r"\b(crate|super)::")
TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|::|\{|\}|,|\*)")


def use_tree(text: str, at: int):
    """The paths of the use tree (or plain path) starting at `at`: `a::b::C`, `a::{b, c::{D, E}}`.
    Returns (paths, end)."""
    paths, prefix = [], []
    while True:
        token = TOKEN.match(text, at)
        if not token:
            return paths + ([prefix] if prefix else []), at
        word = token.group(1)
        if word == "{":
            at = token.end()
            while True:
                inner, at = use_tree(text, at)
                paths += [prefix + path for path in inner]
                close = TOKEN.match(text, at)
                if not close or close.group(1) == "}":
                    return paths, close.end() if close else at
                at = close.end()  # a comma
        if word in ("::",):
            at = token.end()
            continue
        if word in ("}", ",", "*"):
            return paths + ([prefix] if prefix else []), at
        # An identifier continues the path only right after `::` (or at the start).
        if prefix and not text[:token.start()].rstrip().endswith("::"):
            return paths + [prefix], at
        prefix = prefix + [word]
        at = token.end()


def module_of(src: Path, file: Path) -> list:
    """The module path of a file: src/a/b.rs and src/a/b/mod.rs are ["a", "b"]."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def reexports(src: Path, files: dict) -> dict:
    """The names each module re-exports (`pub use a::b::{X, Y}` in lib.rs or a folder's mod.rs),
    as (the module's path, the name) -> the module path the name is defined in."""
    found = {}
    for key, file in files.items():
        text = strip_comments(file.read_text())
        for use in re.finditer(r"\bpub\s+use\s+", text):
            for path in use_tree(text, use.end())[0]:
                if path and path[0] == "crate":
                    full = [part for part in path[1:] if part != "self"]
                elif path and path[0] == "super":
                    full = list(key[:-1]) + [part for part in path[1:] if part != "self"]
                else:
                    full = list(key) + [part for part in path if part != "self"]
                if len(full) >= 2 and tuple(full[:-1]) in files:
                    found[(key, full[-1])] = full[:-1]
    return found


TESTS = re.compile(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{")


def strip_comments(text: str) -> str:
    tests = TESTS.search(text)
    if tests:
        text = text[: tests.start()]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def targets(src: Path, files: dict, names: dict, module: list, text: str) -> set:
    """The files `text` (of the file of `module`) names, through `crate::` and `super::` paths
    (nested groups too) and the modules' re-exports (`crate::bloom::Chain` is bloom/chain.rs's)."""
    found = set()
    for root in ROOT.finditer(text):
        base = [] if root.group(1) == "crate" else module[:-1]
        for names_in_path in use_tree(text, root.end())[0]:
            full = base + [name for name in names_in_path if name != "self"]
            # A name a module re-exports (`crate::bloom::Chain` is bloom/chain.rs's).
            for at in range(len(full) - 1, -1, -1):
                owner = tuple(full[:at])
                if (owner, full[at]) in names and tuple(full[: at + 1]) not in files:
                    full = names[(owner, full[at])] + full[at + 1 :]
                    break
            # The longest prefix that is a module of ours.
            for length in range(len(full), 0, -1):
                key = tuple(full[:length])
                if key in files:
                    found.add(files[key])
                    break
    return found


def cycles(src: Path) -> list:
    files = {tuple(module_of(src, f)): f for f in src.rglob("*.rs")}
    names = reexports(src, files)
    graph = {}
    for key, file in files.items():
        text = strip_comments(file.read_text())
        graph[file] = {t for t in targets(src, files, names, list(key), text) if t != file}
    # Tarjan's strongly connected components: every one of more than one file is a cycle.
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for next_node in graph[node]:
            if next_node not in index:
                visit(next_node)
                low[node] = min(low[node], low[next_node])
            elif next_node in on_stack:
                low[node] = min(low[node], index[next_node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(str(member) for member in component))

    sys.setrecursionlimit(10000)
    for node in graph:
        if node not in index:
            visit(node)
    return found


def main() -> int:
    status = 0
    for src in sys.argv[1:]:
        for cycle in cycles(Path(src)):
            print("import cycle: " + " <-> ".join(cycle))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
