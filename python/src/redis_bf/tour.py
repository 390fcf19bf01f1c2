"""``python -m redis_bf.tour``: the README's 30-second tour, run against a server with the module
that it starts (as ``redis-bf-server`` would, on a free port, its data in a temporary directory)
and stops: each command as ``redis-cli`` would be typed, then what ``redis-cli`` prints for it.

``python -m redis_bf.tour --port 6379`` runs it against a running server instead (it creates the
keys ``urls`` and ``seen`` there, and sets ``bf.error-rate``), with the password in
``$REDIS_BF_PASSWORD`` if that is set.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile

from .module import ModuleNotInstalledError
from .server import PASSWORD_VARIABLE, ServerError, free_port, start

# The tour: each command's arguments (a leading "-3" asks for RESP3, as redis-cli's option does),
# with the comment the README shows after it. The README's block is this tour's output.
TOUR: list[tuple[list[str], str]] = [
    (["BF.RESERVE", "urls", "0.001", "1000000"], "1M URLs at 0.1% false positives"),
    (["BF.ADD", "urls", "https://example.com/"], "1: it was new"),
    (["BF.ADD", "urls", "https://example.com/"], "0: seen before"),
    (["BF.EXISTS", "urls", "https://example.com/"], ""),
    (["BF.EXISTS", "urls", "https://example.org/"], "certainly never added"),
    (["BF.ADD", "seen", "item-42"], "a missing key gets a default filter"),
    (["BF.MADD", "urls", "a", "b", "a"], ""),
    (["BF.INFO", "urls"], ""),
    (["-3", "BF.MEXISTS", "urls", "a", "never-added"], "RESP3: booleans"),
    (["CONFIG", "SET", "bf.error-rate", "0.001"], "defaults for filters made by BF.ADD"),
]
# The column the comments start at, as the README aligns them.
COMMENT_COLUMN = 50


class Reply:
    """One reply as the server sent it: its RESP type (a first byte) and its value."""

    def __init__(self, kind: bytes, value: object):
        self.kind = kind
        self.value = value


class Connection:
    """The least of a RESP2/RESP3 client: sends a command, reads one reply with its types (what
    ``redis-cli`` shows depends on them: a status is printed bare, a string in quotes)."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.file = self.sock.makefile("rb")

    def call(self, args: list[str]) -> Reply:
        out = b"*%d\r\n" % len(args)
        for arg in args:
            data = arg.encode()
            out += b"$%d\r\n%s\r\n" % (len(data), data)
        self.sock.sendall(out)
        return self.read()

    def read(self) -> Reply:
        line = self.file.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b"-"):
            return Reply(kind, rest.decode())
        if kind in (b":", b","):
            return Reply(kind, rest.decode())
        if kind == b"#":
            return Reply(kind, rest == b"t")
        if kind == b"_":
            return Reply(kind, None)
        if kind in (b"$", b"="):
            length = int(rest)
            if length < 0:
                return Reply(b"_", None)
            data = self.file.read(length + 2)[:-2]
            return Reply(kind, data)
        if kind in (b"*", b"~", b">"):
            count = int(rest)
            return Reply(b"*", [self.read() for _ in range(max(count, 0))])
        if kind == b"%":
            count = int(rest)
            return Reply(b"%", [(self.read(), self.read()) for _ in range(count)])
        raise ValueError(f"unknown reply type {kind!r}")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def quoted(data: bytes) -> str:
    """A string as ``redis-cli`` quotes it."""
    out = []
    for byte in data:
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'


def formatted(reply: Reply, indent: int = 0) -> str:
    """What ``redis-cli`` prints for a reply on a terminal (its default, not ``--raw``)."""
    if reply.kind == b"+":
        return str(reply.value)
    if reply.kind == b"-":
        return f"(error) {reply.value}"
    if reply.kind == b":":
        return f"(integer) {reply.value}"
    if reply.kind == b",":
        return f"(double) {reply.value}"
    if reply.kind == b"#":
        return "(true)" if reply.value else "(false)"
    if reply.kind == b"_":
        return "(nil)"
    if reply.kind in (b"$", b"="):
        assert isinstance(reply.value, bytes)
        return quoted(reply.value)
    if reply.kind == b"*":
        assert isinstance(reply.value, list)
        if not reply.value:
            return "(empty array)"
        width = len(str(len(reply.value)))
        lines = []
        for number, element in enumerate(reply.value, 1):
            prefix = f"{number:>{width}}) "
            text = formatted(element, indent + len(prefix))
            pad = "" if number == 1 else " " * indent
            lines.append(pad + prefix + text)
        return "\n".join(lines)
    if reply.kind == b"%":
        assert isinstance(reply.value, list)
        width = len(str(len(reply.value)))
        lines = []
        for number, (key, value) in enumerate(reply.value, 1):
            prefix = f"{number:>{width}}# "
            text = f"{formatted(key)} => {formatted(value, indent + len(prefix))}"
            pad = "" if number == 1 else " " * indent
            lines.append(pad + prefix + text)
        return "\n".join(lines)
    raise ValueError(f"unknown reply type {reply.kind!r}")


def command_line(args: list[str], comment: str) -> str:
    """The ``$ redis-cli ...`` line the README shows for a command."""
    line = "$ redis-cli " + " ".join(args)
    if comment:
        line = line.ljust(COMMENT_COLUMN - 1) + " # " + comment
    return line


class TourError(Exception):
    """The tour cannot run against the server; the message says why in one line."""


def _connect(port: int, password: str | None, hello: list[str]) -> Connection:
    """A connection, authenticated if a password is given."""
    try:
        connection = Connection(port)
    except OSError as error:
        raise TourError(
            f"no server answers on 127.0.0.1:{port} ({error.strerror or error}): start one with "
            "redis-bf-server, or leave out --port to have the tour start its own"
        ) from None
    if password is not None:
        # HELLO 3 AUTH default <password> for RESP3, AUTH <password> for RESP2.
        hello = [*hello, "AUTH", "default", password] if hello else ["AUTH", password]
    if hello:
        reply = connection.call(hello)
        if reply.kind == b"-":
            connection.close()
            raise TourError(f"the server refused the connection: {reply.value}")
    return connection


def run(port: int, password: str | None = None) -> list[str]:
    """Runs the tour against the server on `port`: the lines it prints."""
    printed = []
    connections = {2: _connect(port, password, [])}
    try:
        for args, comment in TOUR:
            protocol, words = (3, args[1:]) if args[0] == "-3" else (2, args)
            if protocol not in connections:
                connections[protocol] = _connect(port, password, ["HELLO", "3"])
            reply = connections[protocol].call(words)
            if reply.kind == b"-" and str(reply.value).startswith("NOAUTH"):
                raise TourError(f"the server asks for a password: set {PASSWORD_VARIABLE}")
            printed.append(command_line(args, comment))
            printed.extend(formatted(reply).split("\n"))
    finally:
        for connection in connections.values():
            connection.close()
    return printed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m redis_bf.tour", description=__doc__)
    parser.add_argument("--port", type=int, help="run it against this running server instead")
    options = parser.parse_args(argv)
    if options.port is not None:
        try:
            print("\n".join(run(options.port, os.environ.get(PASSWORD_VARIABLE) or None)))
        except TourError as error:
            print(f"redis_bf.tour: {error}", file=sys.stderr)
            sys.exit(1)
        return
    with tempfile.TemporaryDirectory(prefix="redis-bf-tour-") as directory:
        try:
            server = start(
                port=free_port(),
                directory=directory,
                server_args=["--save", ""],
                die_with_parent=True,
            )
        except (ServerError, ModuleNotInstalledError) as error:
            print(f"redis_bf.tour: {error}", file=sys.stderr)
            sys.exit(1)
        try:
            print(
                f"# {server.version} ({server.binary.origin}) with the module, on port "
                f"{server.port}",
                file=sys.stderr,
            )
            print("\n".join(run(server.port)))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
