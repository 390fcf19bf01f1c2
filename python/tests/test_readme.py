"""The README's examples run as written: each Python block after an ``<!-- example: cluster -->``
line runs in a fresh interpreter against a real cluster (``REDIS_URL``), and prints what its
comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from redis_cluster import RedisCluster

README = Path(__file__).resolve().parents[1] / "README.md"


def examples(kind: str) -> list[str]:
    text = README.read_text()
    pattern = rf"<!-- example: {kind} -->\n```python\n(.*?)```"
    return re.findall(pattern, text, flags=re.DOTALL)


def printed(code: str) -> list[str]:
    """What the block's comments say its prints print: a ``# ...`` line after a ``print(...)``
    line, or the comment at the end of one."""
    lines = code.splitlines()
    said = []
    for number, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        if "#" in line:
            said.append(line.split("#", 1)[1].strip())
        elif number + 1 < len(lines) and lines[number + 1].startswith("# "):
            said.append(lines[number + 1][2:].strip())
    return said


def test_the_cluster_examples_run_as_written(cluster: RedisCluster) -> None:
    blocks = examples("cluster")
    assert len(blocks) == 2
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "REDIS_URL": cluster.url},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == printed(code), code
    client = cluster.client()
    try:
        assert client.dbsize(target_nodes=client.PRIMARIES) == 0  # each example deletes its filter
    finally:
        client.close()
