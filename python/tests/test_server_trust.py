"""What redis-bf-server and the pytest plugin promise about data and processes: one server per
data directory, a stop that ends even when its save fails, no server left behind by a killed
starter or pytest session, no secret in a command line, a private directory with no link
followed, and refusals that quote the server's own reason.

Each test ends every process it started; a time bound here only catches a hang, with a wide
margin."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from redis_bf import server
from redis_bf._secrets import refusal as _secrets_refusal

from redis_server import _free_port

# Far longer than any of these steps takes (a pytest session starts in about 5 s here; a CI run
# starved of CPU once took over 60 s to end one): a bound that only catches a hang.
HANG = 180.0


def launch(
    args: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], list[str]]:
    """``python -m redis_bf.server args`` and its banner, up to ``... stops it.``"""
    child = subprocess.Popen(
        [sys.executable, "-m", "redis_bf.server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line.rstrip("\n"))
        if "stops it." in line:
            return child, lines
    child.wait()
    raise AssertionError(f"it ended: {lines} {child.stderr.read() if child.stderr else ''}")


def refusal(args: list[str]) -> str:
    """The one line ``redis-bf-server args`` says on stderr when it refuses to start."""
    done = subprocess.run(
        [sys.executable, "-m", "redis_bf.server", *args],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr.rstrip("\n")


def server_pid(directory: Path) -> int:
    """The pid of the server that holds the directory, from its lock file."""
    fields = dict(word.split("=") for word in (directory / "server.lock").read_text().split())
    return int(fields["pid"])


def gone(pid: int) -> bool:
    """Whether the process has ended (reaped, or a zombie of a parent that is gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_logged(directory: Path, text: str) -> None:
    """Waits until the server's log says ``text``."""
    deadline = time.monotonic() + HANG
    while text not in (directory / "server.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, f"the server did not log {text!r}"
        time.sleep(0.05)


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + HANG
    while not gone(pid):
        assert time.monotonic() < deadline, f"process {pid} still runs"
        time.sleep(0.05)


def finish(child: subprocess.Popen[str]) -> tuple[str, str]:
    """Stops a redis-bf-server that a test left running, and what it printed after its banner."""
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    return child.communicate(timeout=HANG)


def test_a_second_server_on_a_directory_in_use_is_refused_and_no_write_is_lost(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    first_port, second_port = _free_port(), _free_port()
    first, _ = launch(["--port", str(first_port), "--dir", str(data)])
    try:
        pid = server_pid(data)
        redis.Redis(port=first_port).execute_command("BF.ADD", "orders-a", "o1")
        # Any port, the default included: the directory decides.
        for port_args in (["--port", str(second_port)], []):
            assert refusal([*port_args, "--dir", str(data)]) == (
                f"redis-bf-server: {data} is in use by the server on port {first_port} (process "
                f"{pid}): one server per data directory; stop it first, or choose another --dir"
            )
        with pytest.raises(server.ServerError) as raised:
            server.start(port=second_port, directory=data)
        assert str(raised.value).startswith(f"{data} is in use by the server on port {first_port}")
    finally:
        out, _ = finish(first)
    assert first.returncode == 0, out
    # The refused starts left the log and the data alone: a restart finds what the first saved.
    log = (data / "server.log").read_text()
    assert log.count("Ready to accept connections") == 1
    again = server.start(port=second_port, directory=data)
    try:
        client = redis.Redis(port=second_port)
        assert client.execute_command("BF.EXISTS", "orders-a", "o1") == 1
    finally:
        again.stop()
    # Each run appended to the log: the first run's lines are still there.
    assert (data / "server.log").read_text().startswith(log)


def test_the_directory_stays_held_while_a_killed_starter_s_server_saves(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = _free_port()
    # A save that takes a while (the server's own test delay, per key).
    child, _ = launch(["--port", str(port), "--dir", str(data), "--", "--rdb-key-save-delay",
                       "1000000"])  # fmt: skip
    pid = server_pid(data)
    client = redis.Redis(port=port)
    for key in range(10):  # a save of 10 s
        client.execute_command("BF.ADD", f"k{key}", "x")
    child.kill()  # SIGKILL: the starter has no say; the kernel tells the server (SIGTERM)
    child.communicate(timeout=HANG)
    wait_logged(data, "Saving the final RDB snapshot")
    line = refusal(["--port", str(_free_port()), "--dir", str(data)])
    assert line.startswith(f"redis-bf-server: {data} is in use by the server on port {port}"), line
    wait_gone(pid)
    again = server.start(port=port, directory=data, server_args=["--save", ""])
    try:
        assert redis.Redis(port=port).execute_command("BF.EXISTS", "k9", "x") == 1
    finally:
        again.stop()


def test_a_stop_whose_save_fails_says_so_in_one_line_and_ends(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = _free_port()
    child, _ = launch(["--port", str(port), "--dir", str(data)])
    pid = server_pid(data)
    redis.Redis(port=port).execute_command("BF.ADD", "k", "x")
    (data / "dump.rdb").mkdir()  # the save's rename fails, as on a full disk its write would
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=HANG)
    assert child.returncode == 1
    assert out.splitlines()[-1] == (
        "redis-bf-server: stopping (Ctrl-C again stops it at once, without saving)"
    )
    assert err.count("\n") == 1, err
    assert err.startswith(
        "redis-bf-server: the server could not save its data on the way out (Error moving temp DB "
        "file temp-"
    ), err
    assert err.endswith(
        f"Is a directory), and stopped without it: the writes since its last save are lost "
        f"(see {data}/server.log)\n"
    ), err
    wait_gone(pid)


def test_a_killed_starter_leaves_no_server_even_when_its_save_fails(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = _free_port()
    child, _ = launch(["--port", str(port), "--dir", str(data)])
    pid = server_pid(data)
    redis.Redis(port=port).execute_command("BF.ADD", "k", "x")
    (data / "dump.rdb").mkdir()
    child.kill()
    child.communicate(timeout=HANG)
    wait_gone(pid)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port).ping()


def test_a_second_ctrl_c_stops_a_long_save_at_once_and_a_signal_is_never_ignored(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    port = _free_port()
    child, _ = launch(["--port", str(port), "--dir", str(data), "--", "--rdb-key-save-delay",
                       "1000000"])  # fmt: skip
    pid = server_pid(data)
    client = redis.Redis(port=port)
    for key in range(100):  # a save of 100 s
        client.execute_command("BF.ADD", f"k{key}", "x")
    child.send_signal(signal.SIGINT)
    wait_logged(data, "Saving the final RDB snapshot")  # the server was told, and saves
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=HANG)
    assert out.splitlines()[-3:-1] == [
        "redis-bf-server: stopping (Ctrl-C again stops it at once, without saving)",
        "redis-bf-server: stopping at once, without saving",
    ]
    assert out.splitlines()[-1].startswith("redis-bf-server: stopped (the server exited with")
    assert child.returncode == 1
    wait_gone(pid)


def test_a_password_is_in_no_command_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = _free_port()
    env = {server.PASSWORD_VARIABLE: "hunter2-secret"}
    child, lines = launch(["--port", str(port), "--dir", str(data)], env=env)
    try:
        for pid in (child.pid, server_pid(data)):
            assert b"hunter2" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).execute_command("BF.ADD", "k", "x")
        assert (
            redis.Redis(port=port, password="hunter2-secret").execute_command("BF.ADD", "k", "x")
            == 1
        )
        cli = f'REDISCLI_AUTH="$REDIS_BF_PASSWORD" redis-cli -p {port} BF.ADD seen hello'
        assert f"  or:   {cli}" in lines
        tour = subprocess.run(
            [sys.executable, "-m", "redis_bf.tour", "--port", str(port)],
            capture_output=True, text=True, env={**os.environ, **env}, timeout=HANG,
        )  # fmt: skip
        assert tour.returncode == 0, tour.stderr
        assert tour.stdout.startswith("$ redis-cli BF.RESERVE urls 0.001 1000000")
        without = subprocess.run(
            [sys.executable, "-m", "redis_bf.tour", "--port", str(port)],
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert (without.returncode, without.stderr) == (
            1, "redis_bf.tour: the server asks for a password: set REDIS_BF_PASSWORD\n"
        )  # fmt: skip
    finally:
        finish(child)
    assert refusal(["--dir", str(data), "--", "--requirepass", "hunter2"]) == (
        "redis-bf-server: --requirepass on the command line can be read by every user of this "
        "machine (ps): set REDIS_BF_PASSWORD in the environment instead"
    )


def test_other_secrets_are_in_no_command_line(tmp_path: Path) -> None:
    user = ["--user", "alice", "on", ">alice-s3cret", "~*", "+@all"]
    running = server.start(
        port=_free_port(),
        directory=tmp_path / "data",
        server_args=["--masterauth", "m4ster-s3cret", *user, "--save", ""],
    )
    try:
        command_line = Path(f"/proc/{running.process.pid}/cmdline").read_bytes()
        assert b"s3cret" not in command_line and b"alice" not in command_line, command_line
        alice = redis.Redis(port=running.port, username="alice", password="alice-s3cret")
        assert alice.execute_command("BF.ADD", "k", "x") == 1
        config = redis.Redis(port=running.port, decode_responses=True).config_get("masterauth")
        assert config == {"masterauth": "m4ster-s3cret"}
    finally:
        running.stop()
    data = str(tmp_path / "other")
    config_file = "start the server yourself with a configuration file "
    for option in (["--masterauth", "x"], ["--tls-key-file-pass", "x"], user):
        assert refusal(["--dir", data, "--", *option]) == (
            f"redis-bf-server: {option[0]} on the command line can be read by every user of this "
            f'machine (ps): {config_file}(loadmodule "$(redis-bf-module-path)")'
        )
    # A user with no password has nothing to hide.
    assert _secrets_refusal(["--user", "bob", "on", "nopass", "--save", ""]) is None


def test_files_left_readable_are_made_private_and_links_under_any_name_refused(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    running = server.start(port=_free_port(), directory=data, server_args=["--appendonly", "yes"])
    redis.Redis(port=running.port).execute_command("BF.ADD", "k", "x")
    assert running.stop() == 0
    # Files an earlier server, or an earlier version, left readable by all.
    for path in (data / "dump.rdb", *(data / "appendonlydir").iterdir()):
        path.chmod(0o644)
    (data / "appendonlydir").chmod(0o755)
    running = server.start(port=_free_port(), directory=data, server_args=["--appendonly", "yes"])
    try:
        assert redis.Redis(port=running.port).execute_command("BF.EXISTS", "k", "x") == 1
        assert stat.S_IMODE((data / "dump.rdb").stat().st_mode) == 0o600
        assert stat.S_IMODE((data / "appendonlydir").stat().st_mode) == 0o700
        for path in (data / "appendonlydir").iterdir():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        running.stop()
    # The directory the user chose keeps its own mode: it is theirs, and no other user may write.
    assert stat.S_IMODE(data.stat().st_mode) == 0o755
    victim = tmp_path / "victim"
    victim.write_text("not yours\n")
    planted = next((data / "appendonlydir").iterdir())
    planted.unlink()
    planted.symlink_to(victim)
    args = ["--port", str(_free_port()), "--dir", str(data), "--", "--appendonly", "yes"]
    assert refusal(args) == (
        f"redis-bf-server: {planted} is a symbolic link: the server does not follow links in its "
        "directory; remove it, or choose another --dir"
    )
    planted.unlink()
    (data / "mine.rdb").symlink_to(victim)
    args = ["--port", str(_free_port()), "--dir", str(data), "--", "--dbfilename", "mine.rdb"]
    assert refusal(args) == (
        f"redis-bf-server: {data}/mine.rdb is a symbolic link: the server does not follow links "
        "in its directory; remove it, or choose another --dir"
    )
    assert victim.read_text() == "not yours\n"


def test_the_directory_is_private_and_no_planted_link_is_followed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    running = server.start(port=_free_port(), directory=data)
    redis.Redis(port=running.port).execute_command("BF.ADD", "k", "x")
    assert running.stop() == 0
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("dump.rdb", "server.log", "server.lock"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    victim = tmp_path / "victim"
    victim.write_text("not yours\n")
    (data / "server.log").unlink()
    (data / "server.log").symlink_to(victim)
    assert refusal(["--port", str(_free_port()), "--dir", str(data)]) == (
        f"redis-bf-server: {data}/server.log is a symbolic link: the server does not follow links "
        "in its directory; remove it, or choose another --dir"
    )
    assert victim.read_text() == "not yours\n"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert refusal(["--port", str(_free_port()), "--dir", str(shared)]) == (
        f"redis-bf-server: --dir {shared}: other users may write in it (mode 777), and so plant "
        f"files the server would read: chmod 700 {shared}, or choose another --dir"
    )


def test_refusals_quote_the_server_s_reason_and_name_the_log(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    assert refusal(["--port", str(_free_port()), "--dir", str(data), "error-rate", "7"]) == (
        "redis-bf-server: the server refused the module: bad value '7' for error-rate: must be a "
        "number from 8.900295434028806e-308 up to, not including, 1 "
        f"(see {data}/server.log)"
    )
    (data / "dump.rdb").write_bytes(b"VALKEY080" + bytes(20))  # what Valkey 8 and 9 write
    line = refusal(["--port", str(_free_port()), "--dir", str(data)])
    assert line == (
        f"redis-bf-server: the server could not load the data in {data}: Wrong signature trying "
        "to load DB from file; Fatal error loading the DB: Invalid argument. Exiting. (its "
        "dump.rdb was written by Valkey, header VALKEY080, which Redis cannot read: start Valkey "
        f"on it with --server, or choose another --dir) (see {data}/server.log)"
    ), line


def test_the_tour_against_no_server_says_so_in_one_line() -> None:
    port = _free_port()
    done = subprocess.run(
        [sys.executable, "-m", "redis_bf.tour", "--port", str(port)],
        capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"redis_bf.tour: no server answers on 127.0.0.1:{port} (Connection refused): start one "
        "with redis-bf-server, or leave out --port to have the tour start its own\n"
    )


PLUGIN_SESSION = """
import os, time
from pathlib import Path

def test_holds_the_server(redis_bf_server):
    Path(os.environ["SERVER_FILE"]).write_text(
        f"{redis_bf_server.port} {redis_bf_server.process.pid}"
    )
    time.sleep(300)
"""


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGABRT])
def test_the_plugin_s_server_ends_with_its_session_however_it_ends(
    tmp_path: Path, how: signal.Signals
) -> None:
    (tmp_path / "test_session.py").write_text(PLUGIN_SESSION)
    told = tmp_path / "server"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_session.py"],
        cwd=tmp_path,
        env={**os.environ, "SERVER_FILE": str(told), "REDIS_BF_TESTING": "require"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # A session whose SIGINT is ignored (inherited: a shell script starts its background
        # jobs so, and a CI run started as one passed it down) never hears a Ctrl-C: Python
        # installs its KeyboardInterrupt handler only over the default action.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + HANG
        while not told.exists() or not told.read_text():
            assert session.poll() is None, "the session ended before its test ran"
            assert time.monotonic() < deadline, "the session's test did not start"
            time.sleep(0.05)
        port, pid = (int(word) for word in told.read_text().split())
        assert redis.Redis(port=port).ping()
        session.send_signal(how)  # killed, interrupted (Ctrl-C), crashed
        session.wait(timeout=HANG)
        wait_gone(pid)
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=port).ping()
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
