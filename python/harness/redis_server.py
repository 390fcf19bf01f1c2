"""A redis-server of our own with the module, for the tests and the benchmark.

Each ``RedisServer`` runs on a free loopback port (never 6379), bound to 127.0.0.1, in a directory
of its own under ``target/py-servers/``, and is killed by its process id when stopped (also when
the test fails: the pytest fixture stops it in its teardown, and the kernel kills it if this
process dies first: ``setpriv --pdeathsig KILL``).

The module: ``$REDIS_BF_MODULE``, by default ``target/release/libredis_bf.so`` of this checkout.
The server: ``redis-server`` on the PATH, or another binary (``binary=``, or ``$REDIS_BF_SERVER``
for every server of a run), such as the newer servers of the repository's test matrix
(``NEWER_SERVERS``, unpacked by ``scripts/fetch-servers.sh`` and ``scripts/fetch-valkey.sh``).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]  # the repository
SERVERS_DIR = ROOT / "target" / "py-servers"
# The newer servers of the repository's server matrix (scripts/matrix.sh), where `make test` has
# unpacked them: Redis 8.2, Valkey 8.0, Valkey 9.1.
NEWER_SERVERS = {
    "redis-8.2": ROOT / "target/servers/redis-8.2.3/redis-server",
    "valkey-8.0": ROOT / "target/valkey/usr/bin/valkey-server",
    "valkey-9.1": ROOT / "target/servers/valkey-9.1.2/valkey-server",
}


def default_binary() -> str:
    """The server binary: ``$REDIS_BF_SERVER``, else ``redis-server`` on the PATH."""
    return os.environ.get("REDIS_BF_SERVER") or "redis-server"


def module_path() -> Path:
    path = Path(os.environ.get("REDIS_BF_MODULE") or ROOT / "target/release/libredis_bf.so")
    if not path.is_file():
        raise FileNotFoundError(
            f"the module is not at {path}: build it (make build) or set REDIS_BF_MODULE"
        )
    return path.resolve()


def _die_with_parent() -> list[str]:
    """A command prefix that makes the kernel SIGKILL the server when this process dies
    (util-linux's setpriv execs the server in place, so the process id stays the server's)."""
    return ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []


def _free_port() -> int:
    """A port that is free now, below Linux's ephemeral range (where outgoing connections get
    theirs), chosen at random so that concurrent runs rarely try the same one."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        if port == 6379:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port between 20000 and 32000")


def remove_unless_kept(directory: Path) -> None:
    """Removes a server's (or a cluster's) directory, unless REDIS_BF_KEEP_SERVERS=1 keeps it."""
    if os.environ.get("REDIS_BF_KEEP_SERVERS") != "1":
        shutil.rmtree(directory, ignore_errors=True)


class RedisServer:
    """``with RedisServer("name") as server: server.client()``."""

    _count = 0

    def __init__(
        self,
        name: str,
        *,
        module: bool = True,
        args: tuple[str, ...] = (),
        binary: str | Path | None = None,
    ):
        RedisServer._count += 1
        self.binary = str(binary or default_binary())
        self.name = name
        self.dir = SERVERS_DIR / f"{name}-{os.getpid()}-{RedisServer._count}"
        self.module = module_path() if module else None
        self.args = args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def client(self, protocol: int = 2, **kwargs: object) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, protocol=protocol, **kwargs)  # type: ignore[arg-type]

    def start(self) -> RedisServer:
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        for _attempt in range(5):
            self.port = _free_port()
            command = [
                *_die_with_parent(),
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.dir),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                "--logfile", "redis.log",
                *(["--loadmodule", str(self.module)] if self.module else []),
                *self.args,
            ]  # fmt: skip
            self.process = subprocess.Popen(
                command,
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._wait_ready():
                return self
            self._kill()
        raise RuntimeError(f"redis-server would not start; its log:\n{self.log()}")

    def _wait_ready(self) -> bool:
        """Ready once our process answers on our port (another one may have taken the port)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                info = self.client(socket_timeout=1).info("server")
                return int(info["process_id"]) == self.pid
            except redis.exceptions.RedisError:
                time.sleep(0.02)
        return False

    def log(self) -> str:
        try:
            return (self.dir / "redis.log").read_text(errors="replace")
        except OSError:
            return "(no log)"

    def _kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        """Kills the server (by its process id) and removes its directory."""
        self._kill()
        remove_unless_kept(self.dir)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
