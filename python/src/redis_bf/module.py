"""Where the redis-bf module is: ``module_path()`` and the ``redis-bf-module-path`` command.

The module itself (``libredis_bf.so``) comes in its own distribution, ``redis-bf-module``, built
for Linux x86_64 and aarch64 (glibc 2.17 or newer); ``pip install 'redis-bf[server]'`` brings it
there (``pip install --find-links DIR 'redis-bf[server]'`` from a folder of wheels, ``make
wheel``'s, while no index has them). On any other platform this package still installs and works
against a server that has the module; only the module's path cannot be given, and
``ModuleNotInstalledError`` says why in one line.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from pathlib import Path

# Where a module built from source may be named instead (make build's target/release/...).
MODULE_VARIABLE = "REDIS_BF_MODULE"

# The platforms redis-bf-module has wheels for: (sys.platform, platform.machine()).
WHEEL_PLATFORMS = {("linux", "x86_64"), ("linux", "aarch64")}


class ModuleNotInstalledError(RuntimeError):
    """No redis-bf module is installed for this platform; the message says why, and what to do,
    in one line."""


def install_hint(extra: str = "server") -> str:
    """How to install the package with an extra: from an index, or from a folder of wheels (such
    as the ``target/wheels`` that ``make wheel`` writes in a checkout of redis-bf)."""
    return (
        f"pip install 'redis-bf[{extra}]' (or, from a folder of wheels: pip install "
        f"--find-links DIR 'redis-bf[{extra}]')"
    )


def module_path() -> str:
    """The absolute path of the redis-bf module, for a ``loadmodule`` line:
    ``$REDIS_BF_MODULE`` if set, else the one the ``redis-bf-module`` wheel installed.
    Raises ``ModuleNotInstalledError`` if there is none."""
    named = os.environ.get(MODULE_VARIABLE)
    if named:
        path = Path(named)
        if not path.is_file():
            raise ModuleNotInstalledError(
                f"{MODULE_VARIABLE} names {named}, which is not a file: build the module (make "
                f"build) or unset {MODULE_VARIABLE}"
            )
        return str(path.resolve())
    try:
        package = importlib.import_module("redis_bf_module")
    except ImportError:
        raise ModuleNotInstalledError(_why_missing()) from None
    return str(package.path())


def _why_missing() -> str:
    """Why no module is installed: the platform has no wheel, or the extra was not installed."""
    system, machine = sys.platform, platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if (system, machine) not in WHEEL_PLATFORMS:
        return (
            f"no redis-bf module is built for this platform ({system} {machine}): its wheels are "
            "for Linux x86_64 and aarch64 only; build it from source (make build in a checkout of "
            f"redis-bf) and name it with {MODULE_VARIABLE}=/path/to/libredis_bf.so or --module"
        )
    return (
        f"the redis-bf module is not installed: {install_hint()} brings it (or set "
        f"{MODULE_VARIABLE}=/path/to/libredis_bf.so)"
    )


def main(argv: list[str] | None = None) -> None:
    """``redis-bf-module-path``: prints the module's path (for
    ``redis-server --loadmodule "$(redis-bf-module-path)"``), or why there is none, and exits 1."""
    import argparse

    argparse.ArgumentParser(
        prog="redis-bf-module-path",
        description=(
            "Prints the path of the redis-bf module (libredis_bf.so), for a loadmodule line: "
            f"${MODULE_VARIABLE} if set, else the one the redis-bf-module wheel installed."
        ),
        epilog='redis-server --loadmodule "$(redis-bf-module-path)"',
    ).parse_args(sys.argv[1:] if argv is None else argv)
    try:
        print(module_path())
    except ModuleNotInstalledError as error:
        print(f"redis-bf-module-path: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
