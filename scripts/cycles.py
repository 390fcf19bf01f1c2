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

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")
USE_GROUP = re.compile(r"\b(crate|super)::\{([^}]*)\}", re.S)


def module_of(src: Path, file: Path) -> list:
    """The module path of a file: src/a/b.rs and src/a/b/mod.rs are ["a", "b"]."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


TESTS = re.compile(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{")


def strip_comments(text: str) -> str:
    tests = TESTS.search(text)
    if tests:
        text = text[: tests.start()]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def targets(src: Path, files: dict, module: list, text: str) -> set:
    """The files `text` (of the file of `module`) names."""
    paths = []
    for root, group in USE_GROUP.findall(text):
        for item in group.split(","):
            item = item.strip()
            if item:
                paths.append((root, item.split("::")))
    for root, rest in PATH.findall(text):
        if rest != "::{":
            paths.append((root, rest.strip(":").split("::")))
    found = set()
    for root, names in paths:
        base = [] if root == "crate" else module[:-1]
        full = base + [name for name in names if name not in ("self", "{")]
        # The longest prefix that is a module of ours.
        for length in range(len(full), 0 if root == "crate" else len(base) - 1, -1):
            key = tuple(full[:length])
            if key in files:
                found.add(files[key])
                break
    return found


def cycles(src: Path) -> list:
    files = {tuple(module_of(src, f)): f for f in src.rglob("*.rs")}
    graph = {}
    for key, file in files.items():
        text = strip_comments(file.read_text())
        graph[file] = {t for t in targets(src, files, list(key), text) if t != file}
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
