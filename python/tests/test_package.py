"""The package as installed: redis-py its only dependency, Scrapy imported only by redis_bf.scrapy,
and the type hints hold (mypy --strict, the settings in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires, version
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
ROOT = PYTHON_DIR.parent


def test_redis_py_is_the_only_dependency() -> None:
    assert version("redis-bf") == "0.1.0"
    assert requires("redis-bf") == ["redis>=5.0"]


def test_the_core_does_not_import_scrapy() -> None:
    code = (
        "import sys, redis_bf, redis_bf.migrate; "
        "print(sorted(m for m in sys.modules if m.startswith('scrapy')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_typed() -> None:
    assert (PYTHON_DIR / "src/redis_bf/py.typed").exists()
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy",
            "--config-file", str(PYTHON_DIR / "pyproject.toml"),
            "--cache-dir", str(ROOT / "target/py-mypy-cache"),
            str(PYTHON_DIR / "src/redis_bf"),
        ],
        capture_output=True,
        text=True,
        cwd=PYTHON_DIR,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found in 5 source files")


def test_formatted_and_linted() -> None:
    """ruff, with the settings in pyproject.toml, over the package, tests, harness and bench."""
    for command in (["format", "--check", "--quiet"], ["check", "--quiet"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--no-cache", "."],
            capture_output=True,
            text=True,
            cwd=PYTHON_DIR,
        )
        assert done.returncode == 0, done.stdout + done.stderr
