"""The data directory of a server that ``redis_bf.server`` starts: made private (0700, its files
0600), never through a symbolic link, and held by one server at a time.

The hold is an ``flock`` on ``server.lock`` in the directory, taken before the server starts and
inherited by it: the lock lasts as long as either the starter or the server lives, so a second
start on the same directory is refused even after the starter was killed, while its server still
saves on its way out. The file says which server holds it, for the refusal.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

LOG_FILE = "server.log"
LOCK_FILE = "server.lock"
# What the server reads and writes in its directory: none may be a symbolic link.
SERVER_FILES = ("dump.rdb", "appendonlydir", "appendonly.aof", LOG_FILE, LOCK_FILE)
# Server options that name other files in the directory.
FILE_OPTIONS = ("--dbfilename", "--appenddirname", "--appendfilename")


class DataDirError(RuntimeError):
    """The directory cannot be used; the message says why in one line."""


def server_files(server_args: list[str]) -> list[str]:
    """The names the server reads and writes in its directory: the usual ones, and those its
    options give (``--dbfilename``, ``--appenddirname``, ``--appendfilename``)."""
    named = [
        server_args[at + 1]
        for at, word in enumerate(server_args[:-1])
        if word in FILE_OPTIONS and server_args[at + 1]
    ]
    return [*SERVER_FILES, *named]


def prepare(directory: str | Path, names: list[str] | tuple[str, ...] = SERVER_FILES) -> Path:
    """The data directory, absolute: created 0700 if missing; refused if it is not a directory,
    belongs to another user, or other users may write in it (they could plant a file the server
    reads or a link it writes through), or where one of ``names``, or a file in the append-only
    directory, is a symbolic link. The server's files already there are made private (0600, and
    0700 for the append-only directory): a server writes its new ones so itself."""
    path = Path(directory).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise DataDirError(f"--dir {path}: it is a file, not a directory")
    try:
        if not path.exists():
            path.mkdir(mode=0o700, parents=True)
            os.chmod(path, 0o700)  # whatever the umask took away
        info = path.stat()
        probe = path / f".redis-bf-server-{os.getpid()}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        probe.unlink()
    except OSError as error:
        raise DataDirError(f"cannot write to {path}: {error.strerror or error}") from None
    if info.st_uid != os.geteuid():
        raise DataDirError(f"--dir {path}: it belongs to another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.S_IMODE(info.st_mode)
        raise DataDirError(
            f"--dir {path}: other users may write in it (mode {mode:o}), and so plant files the "
            f"server would read: chmod 700 {path}, or choose another --dir"
        )
    for name in names:
        _private(path / name)
        if (path / name).is_dir():
            try:
                inside = list((path / name).iterdir())
            except FileNotFoundError:
                continue  # removed meanwhile (by a server running there: refused later)
            for each in inside:
                _private(each)
    return path


def _private(path: Path) -> None:
    """Refuses a symbolic link; makes a file 0600 and a directory 0700 (those an earlier server,
    or an earlier version of this package, left readable by all)."""
    if path.is_symlink():
        raise DataDirError(
            f"{path} is a symbolic link: the server does not follow links in its directory; "
            "remove it, or choose another --dir"
        )
    try:
        info = path.lstat()
        mode = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
        if stat.S_IMODE(info.st_mode) != mode and info.st_uid == os.geteuid():
            os.chmod(path, mode)
    except FileNotFoundError:
        pass  # not there, or removed meanwhile


def open_log(path: Path) -> int:
    """The server's log, opened for appending (the logs of earlier runs stay), private, never
    through a symbolic link: a file descriptor the server writes to as its stdout and stderr."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise DataDirError(
                f"{path} is a symbolic link: the server does not follow links in its directory; "
                "remove it, or choose another --dir"
            ) from None
        raise DataDirError(f"cannot write to {path}: {error.strerror or error}") from None
    os.fchmod(fd, 0o600)  # a log an earlier version left readable by all
    return fd


class DataLock:
    """The hold of one server on its data directory: ``acquire()`` or a ``DataDirError`` naming
    the server that holds it; ``owner()`` records ours; ``fd`` is passed to the server."""

    def __init__(self, directory: Path):
        self.path = directory / LOCK_FILE
        self.fd = -1

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise DataDirError(f"cannot write to {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").split()
            os.close(fd)
            raise DataDirError(self._in_use(holder)) from None
        self.fd = fd

    def _in_use(self, holder: list[str]) -> str:
        directory = self.path.parent
        fields = dict(word.split("=", 1) for word in holder if "=" in word)
        if "port" in fields and "pid" in fields:
            who = f"the server on port {fields['port']} (process {fields['pid']})"
        else:
            who = "another server, still starting"
        return (
            f"{directory} is in use by {who}: one server per data directory; stop it first, or "
            "choose another --dir"
        )

    def owner(self, port: int, pid: int) -> None:
        """Says in the lock file which server holds it."""
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"port={port} pid={pid} starter={os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Our hold ends (the server's inherited one ends with it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
