"""Reading a server's log for ``redis_bf.server``: why a server that exited at start did, and why
a stop could not save, each as one line that quotes the server's own words and names the log.

The log is appended to by every run; a run reads only what it wrote, from the offset where it
began.
"""

from __future__ import annotations

import re
from pathlib import Path

# A shutdown's save that failed: Redis 7 and Valkey say one of these after the reason.
_SAVE_FAILED = re.compile(r"Error trying to save the DB|Errors trying to shut down|can't exit")
# What a server says when it cannot load its data set at start.
_LOAD_FAILED = re.compile(
    r"loading the DB|Wrong signature|Short read|Bad file format|Can't handle RDB format|"
    r"Unrecoverable error|reading the append only file|Fatal error"
)


def read_since(log: Path, offset: int) -> list[str]:
    """The log's non-empty lines from ``offset`` on, without the server's prefix."""
    try:
        with open(log, "rb") as file:
            file.seek(offset)
            text = file.read().decode(errors="replace")
    except OSError:
        return []
    return [strip_prefix(line.strip()) for line in text.splitlines() if line.strip()]


def strip_prefix(line: str) -> str:
    """A log line without its pid, role and time (``1234:M 28 Nov 2026 10:00:00.000 #``)."""
    parts = line.split(" ", 5)
    if len(parts) == 6 and ":" in parts[0] and parts[4].count(":") == 2:
        return parts[5].lstrip("#*-. ").strip()
    return line


def size(log: Path) -> int:
    """Where the next run's lines will begin."""
    try:
        return log.stat().st_size
    except OSError:
        return 0


def why_it_stopped(lines: list[str], log: Path, port: int, status: int | None) -> str:
    """One line: why a server that exited at start did, in its own words."""
    see = f"(see {log})"
    # A refused option: the server names it on a ">>> 'option ...'" line, and why on the next.
    for at, line in enumerate(lines):
        if line.startswith(">>>"):
            reason = lines[at + 1] if at + 1 < len(lines) else ""
            said = f"{line[3:].strip()}: {reason}".rstrip(": ")
            return f"the server refused its options: {said} {see}"
    for line in lines:
        if "address already in use" in line.lower():
            return f"port {port} is taken: choose another with --port"
    for line in lines:
        if line.startswith("<bf> refusing to load: "):
            return f"the server refused the module: {line[len('<bf> refusing to load: ') :]} {see}"
    for line in lines:
        if line.startswith("Module ") and ("failed" in line or "not loaded" in line.lower()):
            return f"the server refused the module: {line} {see}"
    loading = [line for line in lines if _LOAD_FAILED.search(line)]
    if loading:
        data = log.parent
        said = "; ".join(loading[-2:])
        return f"the server could not load the data in {data}: {said}{_written_by(data)} {see}"
    for line in lines:
        lowered = line.lower()
        if "bad directive" in lowered or "fatal config" in lowered:
            return f"the server refused its options: {line} {see}"
    last = lines[-1] if lines else "(no output)"
    return f"the server exited at start (status {status}): {last} {see}"


def _written_by(directory: Path) -> str:
    """A hint when the dump was written by a server of the other kind, which cannot read it."""
    try:
        with open(directory / "dump.rdb", "rb") as file:
            header = file.read(9)
    except OSError:
        return ""
    if header.startswith(b"VALKEY"):
        return (
            f" (its dump.rdb was written by Valkey, header {header.decode(errors='replace')}, "
            "which Redis cannot read: start Valkey on it with --server, or choose another --dir)"
        )
    return ""


def save_failure(lines: list[str]) -> str | None:
    """Why a shutdown could not save, if it could not: the server's own reason."""
    for at, line in enumerate(lines):
        if _SAVE_FAILED.search(line):
            before = [
                earlier
                for earlier in lines[:at]
                if not earlier.startswith(("User requested", "Received", "Saving the final"))
                and ("rror" in earlier or "ailed" in earlier)
            ]
            return before[-1] if before else line
    return None


def tail(lines: list[str], log: Path) -> str:
    """The last line, or where to look."""
    return lines[-1] if lines else f"see {log}"
