"""redis-bf-server, redis-bf-module-path, the tour and the pytest plugin, against this checkout's
module (``$REDIS_BF_MODULE``) and the redis-server on the PATH: the server starts with the module
and stops cleanly, each refusal is one line, a platform with no module wheel is told why, and
the tour prints the README's. (tests/wheel.rs runs the same from the wheels, with the embedded
Valkey, in an environment with nothing else.)"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_bf import BloomFilter, module_path, server
from redis_bf.module import ModuleNotInstalledError
from redis_bf.tour import run as run_tour

from redis_server import _free_port

ROOT = Path(__file__).resolve().parents[2]


def readme_tour() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## A 30-second tour") :]
    block = section[section.index("```console\n") + 11 :]
    return block[: block.index("```")]


def test_module_path_is_the_module_named_by_the_environment() -> None:
    assert module_path() == str(Path(os.environ["REDIS_BF_MODULE"]).resolve())


@pytest.mark.parametrize(
    ("platform_name", "machine", "said"),
    [
        (
            "darwin",
            "arm64",
            "no redis-bf module is built for this platform (darwin aarch64): its wheels are for "
            "Linux x86_64 and aarch64 only; build it from source (make build in a checkout of "
            "redis-bf) and name it with REDIS_BF_MODULE=/path/to/libredis_bf.so or --module",
        ),
        (
            "linux",
            "x86_64",
            "the redis-bf module is not installed: pip install 'redis-bf[server]' (or, from a "
            "folder of wheels: pip install --find-links DIR 'redis-bf[server]') brings it (or set "
            "REDIS_BF_MODULE=/path/to/libredis_bf.so)",
        ),
    ],
)
def test_without_a_module_the_reason_is_one_line(
    monkeypatch: pytest.MonkeyPatch, platform_name: str, machine: str, said: str
) -> None:
    monkeypatch.delenv("REDIS_BF_MODULE")
    monkeypatch.setitem(sys.modules, "redis_bf_module", None)  # import fails
    monkeypatch.setattr(sys, "platform", platform_name)
    monkeypatch.setattr("platform.machine", lambda: machine)
    with pytest.raises(ModuleNotInstalledError) as raised:
        module_path()
    assert str(raised.value) == said


def test_redis_bf_module_path_prints_the_path_or_why_not() -> None:
    # The console script the package installs beside this interpreter.
    command = [str(Path(sys.executable).parent / "redis-bf-module-path")]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert done.stdout == module_path() + "\n"
    env = {**os.environ, "REDIS_BF_MODULE": "/nonexistent/libredis_bf.so"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert done.stderr == (
        "redis-bf-module-path: REDIS_BF_MODULE names /nonexistent/libredis_bf.so, which is not a "
        "file: build the module (make build) or unset REDIS_BF_MODULE\n"
    )


def start_command(args: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    """``python -m redis_bf.server args``, and what it printed up to ``... stops it.``"""
    child = subprocess.Popen(
        [sys.executable, "-m", "redis_bf.server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line.rstrip("\n"))
        if "stops it." in line:
            return child, lines
    raise AssertionError(f"it ended: {lines} {child.stderr.read() if child.stderr else ''}")


def test_the_server_runs_with_the_module_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = _free_port()
    child, lines = start_command(["--port", str(port), "--dir", str(tmp_path), "--", "--save", ""])
    try:
        version = redis.Redis(port=port).info("server")["redis_version"]
        assert lines == [
            f"redis-bf-server: Redis {version} (redis-server on the PATH) with the redis-bf module "
            f"on 127.0.0.1:{port}; data in {tmp_path} (log: {tmp_path}/server.log)",
            f"  try:  python -m redis_bf.tour --port {port}",
            f"  or:   redis-cli -p {port} BF.ADD seen hello",
            "  Ctrl-C (or SIGTERM) stops it.",
        ]
        assert redis.Redis(port=port).execute_command("BF.ADD", "seen", "hello") == 1
    finally:
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    assert out == (
        "redis-bf-server: stopping (Ctrl-C again stops it at once, without saving)\n"
        "redis-bf-server: stopped (the server exited with status 0)\n"
    )
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port).ping()


def test_module_arguments_and_server_options_reach_their_places(tmp_path: Path) -> None:
    port = _free_port()
    child, _ = start_command(
        ["--port", str(port), "--dir", str(tmp_path), "error-rate", "0.02", "--", "--save", "",
         "--maxmemory", "123mb"]
    )  # fmt: skip
    try:
        client = redis.Redis(port=port, decode_responses=True)
        assert client.config_get("bf.error-rate") == {"bf.error-rate": "0.02"}
        assert client.config_get("maxmemory") == {"maxmemory": str(123 * 1024 * 1024)}
        assert client.config_get("bind") == {"bind": "127.0.0.1"}
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    assert child.returncode == 0


def one_line_refusal(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "redis_bf.server", *args], capture_output=True, text=True
    )
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr.rstrip("\n")


def test_each_refusal_is_one_line(tmp_path: Path) -> None:
    port = _free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert one_line_refusal(["--port", str(port)]) == (
            f"redis-bf-server: port {port} is taken: choose another with --port"
        )
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert one_line_refusal(["--port", str(_free_port()), "--dir", str(blocker / "data")]) == (
        f"redis-bf-server: cannot write to {blocker / 'data'}: Not a directory"
    )
    assert one_line_refusal(["--port", str(_free_port()), "--dir", str(blocker)]) == (
        f"redis-bf-server: --dir {blocker}: it is a file, not a directory"
    )
    fake = tmp_path / "fake.so"
    fake.write_text("not a shared library")
    line = one_line_refusal(
        ["--port", str(_free_port()), "--dir", str(tmp_path / "d"), "--module", str(fake)]
    )
    assert line.startswith("redis-bf-server: the server refused the module: "), line
    assert one_line_refusal(["--server", "no-such-server"]) == (
        "redis-bf-server: --server no-such-server: no such executable"
    )
    line = one_line_refusal(
        ["--port", str(_free_port()), "--dir", str(tmp_path / "e"), "--", "--no-such-option", "1"]
    )
    assert line.startswith("redis-bf-server: the server refused its options: 'no-such-option"), line
    assert line.endswith(f" (see {tmp_path / 'e'}/server.log)"), line


def test_a_server_with_a_password_starts_and_a_running_one_is_not_taken_for_it(
    tmp_path: Path,
) -> None:
    port = _free_port()
    args = ["--save", "", "--requirepass", "secret"]
    running = server.start(port=port, directory=tmp_path / "a", server_args=args)
    # The password reached the server on its standard input, never in a command line.
    assert b"secret" not in Path(f"/proc/{running.process.pid}/cmdline").read_bytes()
    try:
        client = redis.Redis(port=port, password="secret")
        assert client.execute_command("BF.ADD", "k", "x") == 1
        # Another start on the same port finds it taken, never the running server.
        with pytest.raises(server.ServerError) as raised:
            server.start(port=port, directory=tmp_path / "b")
        assert str(raised.value) == f"port {port} is taken: choose another with --port"
    finally:
        running.stop()


def test_the_default_port_taken_moves_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    base = _free_port()
    monkeypatch.setattr(server, "DEFAULT_PORT", base)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base))
        taken.listen()
        port, note = server.choose_port(None)
    assert port > base
    assert note == f"port {base} is taken (another Redis?), using port {port}"
    assert server.choose_port(port) == (port, None)


def test_the_tour_prints_the_readme_s_tour(tmp_path: Path) -> None:
    running = server.start(port=_free_port(), directory=tmp_path, server_args=["--save", ""])
    try:
        assert "\n".join(run_tour(running.port)) + "\n" == readme_tour()
    finally:
        running.stop()


def test_the_pytest_plugin_gives_a_session_server(redis_bf_client: Any) -> None:
    # redis_bf.testing, loaded by pytest from the package's entry point.
    seen = BloomFilter(redis_bf_client, "seen", 1000, 0.001)
    assert seen.add("https://example.com/")
    assert not seen.add("https://example.com/")
    assert [module[b"name"] for module in redis_bf_client.module_list()] == [b"bf"]


def test_the_plugin_s_client_starts_each_test_with_empty_databases(redis_bf_client: Any) -> None:
    assert redis_bf_client.dbsize() == 0
    redis_bf_client.set("left", "behind")


def test_the_readme_s_pytest_example_passes_as_written(tmp_path: Path) -> None:
    """python/README.md's block after ``<!-- pytest plugin -->``, as a user's test file in a
    project of its own: pytest loads the plugin from the installed package's entry point."""
    text = (ROOT / "python" / "README.md").read_text()
    (code,) = re.findall(r"<!-- pytest plugin -->\n```python\n(.*?)```", text, flags=re.DOTALL)
    (tmp_path / "test_example.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "REDIS_BF_TESTING": "require"},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("1 passed"), done.stdout
