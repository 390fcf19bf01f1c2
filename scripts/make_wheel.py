#!/usr/bin/env python3
"""Writes the wheel of the redis-bf-module distribution for one platform: the package
python/module/redis_bf_module with a built libredis_bf.so in it, and the metadata a wheel needs
(PEP 427, core metadata 2.4). Standard library only; the same inputs give the same bytes (fixed
timestamps and order).

    scripts/make_wheel.py --module path/to/libredis_bf.so --arch x86_64 --out target/wheels

Prints the wheel's path.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "redis-bf-module"
PACKAGE = "redis_bf_module"
SUMMARY = "The redis-bf Redis module (Bloom and cuckoo filters, RedisBloom's commands), built for Linux"
# manylinux2014 is glibc 2.17: what make dist builds against.
TAGS = {
    "x86_64": ["manylinux_2_17_x86_64", "manylinux2014_x86_64"],
    "aarch64": ["manylinux_2_17_aarch64", "manylinux2014_aarch64"],
}
# 1980-01-01, the earliest a zip can say: the same bytes on every build.
EPOCH = (1980, 1, 1, 0, 0, 0)


def version() -> str:
    """The module package's version (its __init__), which must be the crate's."""
    text = (ROOT / "python/module" / PACKAGE / "__init__.py").read_text()
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    crate = re.search(r'^version = "([^"]+)"$', (ROOT / "Cargo.toml").read_text(), re.M)
    if not found or not crate or found.group(1) != crate.group(1):
        raise SystemExit("python/module's __version__ is not Cargo.toml's version")
    return found.group(1)


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def metadata(ver: str) -> str:
    readme = (ROOT / "python/module/README.md").read_text()
    return (
        "Metadata-Version: 2.4\n"
        f"Name: {NAME}\n"
        f"Version: {ver}\n"
        f"Summary: {SUMMARY}\n"
        "Author: the redis-bf authors\n"
        "License-Expression: BSD-3-Clause\n"
        "License-File: LICENSE\n"
        "Classifier: Development Status :: 4 - Beta\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Topic :: Database\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def write(module: Path, arch: str, out: Path) -> Path:
    ver = version()
    tags = TAGS[arch]
    platform = ".".join(tags)
    wheel = out / f"{PACKAGE}-{ver}-py3-none-{platform}.whl"
    info = f"{PACKAGE}-{ver}.dist-info"
    files: list[tuple[str, bytes, int]] = [
        (f"{PACKAGE}/__init__.py", (ROOT / "python/module" / PACKAGE / "__init__.py").read_bytes(), 0o644),
        (f"{PACKAGE}/libredis_bf.so", module.read_bytes(), 0o755),
        (f"{info}/METADATA", metadata(ver).encode(), 0o644),
        (
            f"{info}/WHEEL",
            (
                "Wheel-Version: 1.0\nGenerator: redis-bf scripts/make_wheel.py\n"
                "Root-Is-Purelib: false\n" + "".join(f"Tag: py3-none-{tag}\n" for tag in tags)
            ).encode(),
            0o644,
        ),
        (f"{info}/top_level.txt", f"{PACKAGE}\n".encode(), 0o644),
        (f"{info}/licenses/LICENSE", (ROOT / "LICENSE").read_bytes(), 0o644),
    ]
    record = "".join(record_line(name, data) + "\n" for name, data, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))
    out.mkdir(parents=True, exist_ok=True)
    partial = wheel.with_suffix(".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in files:
            entry = zipfile.ZipInfo(name, EPOCH)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    partial.replace(wheel)
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", type=Path, required=True, help="the built libredis_bf.so")
    parser.add_argument("--arch", choices=sorted(TAGS), required=True)
    parser.add_argument("--out", type=Path, required=True, help="the directory to write it to")
    options = parser.parse_args()
    print(write(options.module, options.arch, options.out))


if __name__ == "__main__":
    main()
