"""A Redis Cluster of our own for the tests: three masters and three replicas, each node a
``RedisServer`` with the module, joined by ``redis-cli --cluster create``.

The nodes live in one directory under ``target/py-servers/`` (one subdirectory each), listen on
127.0.0.1 only, never on 6379, and are killed by their process ids when the cluster stops. Each
node's cluster bus port is chosen like its client port (below Linux's ephemeral range) and passed
as ``--cluster-port``, rather than left at client port + 10000.

``redis-cli --cluster create`` decides which node becomes a master and which replica follows
which master, so the harness never assumes a layout: it reads it from ``CLUSTER NODES``
(``masters()``, ``replicas_of()``, ``master_of_slot()``, ``slots_of()``).

``kill()`` SIGKILLs one node; ``wait_for_failover()`` waits until a replica of that (master)
node has taken its slots and every live node agrees, with ``cluster_state:ok``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio.cluster
import redis.cluster

from redis_server import SERVERS_DIR, RedisServer, _free_port, remove_unless_kept

SLOTS = 16384
MASTERS = 3
REPLICAS_PER_MASTER = 1

SlotRange = tuple[int, int]  # inclusive


@dataclass(frozen=True)
class ClusterNode:
    """One line of ``CLUSTER NODES``, as one node sees another (or itself)."""

    id: str
    port: int
    flags: frozenset[str]
    master_id: str | None  # a replica's master
    slots: tuple[SlotRange, ...]

    @property
    def is_master(self) -> bool:
        return "master" in self.flags

    @property
    def failing(self) -> bool:
        """Marked failed by the cluster (``fail``) or suspected by this node (``fail?``)."""
        return "fail" in self.flags or "fail?" in self.flags

    def owns(self, slot: int) -> bool:
        return any(low <= slot <= high for low, high in self.slots)


def parse_cluster_nodes(text: str) -> list[ClusterNode]:
    nodes = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        address = fields[1].split(",")[0].split("@")[0]  # ip:port@cport[,hostname]
        slots = []
        for field in fields[8:]:
            if field.startswith("["):  # a slot being imported or migrated
                continue
            low, _, high = field.partition("-")
            slots.append((int(low), int(high or low)))
        nodes.append(
            ClusterNode(
                id=fields[0],
                port=int(address.rsplit(":", 1)[1]),
                flags=frozenset(fields[2].split(",")) - {"myself"},
                master_id=None if fields[3] == "-" else fields[3],
                slots=tuple(sorted(slots)),
            )
        )
    return nodes


@dataclass(frozen=True)
class _Killed:
    """What a killed node was when it died."""

    was_master: bool
    slots: tuple[SlotRange, ...]
    replica_ids: frozenset[str]


class RedisCluster:
    """``with RedisCluster("name") as cluster: cluster.client()``."""

    _count = 0

    def __init__(
        self,
        name: str = "cluster",
        *,
        node_timeout_ms: int = 1000,
        args: tuple[str, ...] = (),
        binary: str | None = None,
    ) -> None:
        RedisCluster._count += 1
        self.name = name
        self.dir = SERVERS_DIR / f"{name}-{os.getpid()}-{RedisCluster._count}"
        self.node_timeout_ms = node_timeout_ms
        self.args = args
        self.nodes: list[RedisServer] = []
        for index in range(MASTERS * (1 + REPLICAS_PER_MASTER)):
            node = RedisServer(f"{name}-node{index}", binary=binary)
            node.dir = self.dir / f"node{index}"
            self.nodes.append(node)
        self.create_output = ""  # what redis-cli --cluster create printed
        self._ids: dict[str, RedisServer] = {}  # node id -> node
        self._admin: dict[int, redis.Redis] = {}  # id(node) -> a plain client on it
        self._killed: dict[int, _Killed] = {}  # id(node) -> what it was

    # Starting and stopping.

    def start(self) -> RedisCluster:
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        try:
            for node in self.nodes:
                self._start_node(node)
                self._ids[self._command(node, "CLUSTER", "MYID")] = node
            self._create()
            self._wait("the cluster to form", 30.0, self._formed)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, node: RedisServer) -> None:
        """Starts a node with a bus port of its own choosing (a new one if that was taken)."""
        for attempt in range(3):
            node.args = (
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-port", str(_free_port()),
                # A replica may always take over, however long since it heard from its master.
                "--cluster-replica-validity-factor", "0",
                # Replicas sync at once (Redis 7 waits 5 s for more replicas by default).
                "--repl-diskless-sync-delay", "0",
                "--appendonly", "no",
                *self.args,
            )  # fmt: skip
            try:
                node.start()
                return
            except RuntimeError:
                if attempt == 2:
                    raise

    def _create(self) -> None:
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        command = [
            "redis-cli", "--cluster", "create", *addresses,
            "--cluster-replicas", str(REPLICAS_PER_MASTER), "--cluster-yes",
        ]  # fmt: skip
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
        )
        # redis-cli colours its output even into a pipe.
        self.create_output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
        (self.dir / "create.log").write_text(self.create_output)
        if done.returncode != 0 or f"[OK] All {SLOTS} slots covered." not in self.create_output:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{self.create_output}")

    def stop(self) -> None:
        """Kills every node (by its process id) and removes the directory."""
        for admin in self._admin.values():
            admin.close()
        self._admin.clear()
        for node in self.nodes:
            node.stop()
        remove_unless_kept(self.dir)

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Clients.

    @property
    def url(self) -> str:
        """A startup node's URL: the current master of slot 0."""
        return self.masters()[0].url

    def client(self, protocol: int = 2, **kwargs: Any) -> redis.cluster.RedisCluster:
        start = self.masters()[0]
        return redis.cluster.RedisCluster(
            host="127.0.0.1", port=start.port, protocol=protocol, **kwargs
        )

    def async_client(self, protocol: int = 2, **kwargs: Any) -> redis.asyncio.cluster.RedisCluster:
        """Unconnected: it reads the slots on its first command (or ``await initialize()``)."""
        start = self.masters()[0]
        return redis.asyncio.cluster.RedisCluster(
            host="127.0.0.1", port=start.port, protocol=protocol, **kwargs
        )

    # The layout, as a live node sees it now.

    def alive(self, node: RedisServer) -> bool:
        return node.process is not None and node.process.poll() is None

    def node_id(self, node: RedisServer) -> str:
        for node_id, known in self._ids.items():
            if known is node:
                return node_id
        raise ValueError(f"not a node of this cluster: {node.url}")

    def view(self, node: RedisServer | None = None) -> list[ClusterNode]:
        """``CLUSTER NODES`` as ``node`` (by default the first live node) sees the cluster."""
        if node is None:
            node = next((node for node in self.nodes if self.alive(node)), None)
            if node is None:
                raise RuntimeError("no node of the cluster is running")
        return parse_cluster_nodes(self._command(node, "CLUSTER", "NODES"))

    def masters(self) -> list[RedisServer]:
        """The live masters that serve slots, the one with the lowest slot first."""
        masters = [seen for seen in self.view() if self._serving(seen)]
        masters.sort(key=lambda seen: seen.slots[0])
        return [self._ids[seen.id] for seen in masters]

    def replicas_of(self, master: RedisServer) -> list[RedisServer]:
        """The live replicas that follow ``master``."""
        master_id = self.node_id(master)
        view = self.view()
        return [
            self._ids[seen.id] for seen in view if seen.master_id == master_id and self._live(seen)
        ]

    def master_of_slot(self, slot: int) -> RedisServer:
        for seen in self.view():
            if self._serving(seen) and seen.owns(slot):
                return self._ids[seen.id]
        raise LookupError(f"no live master serves slot {slot}")

    def slots_of(self, master: RedisServer) -> list[SlotRange]:
        """The slot ranges (inclusive) that ``master`` serves."""
        master_id = self.node_id(master)
        return next((list(seen.slots) for seen in self.view() if seen.id == master_id), [])

    def _live(self, seen: ClusterNode) -> bool:
        """A node of ours, running, that the viewer does not suspect."""
        node = self._ids.get(seen.id)
        return node is not None and self.alive(node) and not seen.failing

    def _serving(self, seen: ClusterNode) -> bool:
        return seen.is_master and bool(seen.slots) and self._live(seen)

    # Failures.

    def kill(self, node: RedisServer) -> None:
        """SIGKILLs ``node`` (by its process id) and reaps it; its directory stays until stop()."""
        view = self.view()
        seen = next(seen for seen in view if seen.id == self.node_id(node))
        replica_ids = frozenset(
            other.id for other in view if other.master_id == seen.id and not other.failing
        )
        self._killed[id(node)] = _Killed(seen.is_master, seen.slots, replica_ids)
        assert node.process is not None, "not running"
        os.kill(node.pid, signal.SIGKILL)
        node.process.wait()
        admin = self._admin.pop(id(node), None)
        if admin is not None:
            admin.close()

    def wait_for_failover(self, dead: RedisServer, timeout: float = 30.0) -> RedisServer:
        """Waits until a replica of ``dead`` (a master killed by ``kill()``) serves its slots and
        every live node agrees, says ``cluster_state:ok`` and sees all 16384 slots served by live
        masters (``dead`` marked failed); returns the promoted replica."""
        killed = self._killed.get(id(dead))
        if killed is None or not killed.was_master or not killed.slots:
            raise ValueError(f"{dead.url} was not a master with slots killed by kill()")
        heirs: list[RedisServer] = []

        def failed_over() -> str | None:
            unhealthy = self._healthy()
            if unhealthy:
                return unhealthy
            view = self.view()
            heir = next(seen for seen in view if seen.owns(killed.slots[0][0]))
            if heir.id not in killed.replica_ids:
                return f"slot {killed.slots[0][0]} is on {heir.port}, not on a replica of the dead"
            if heir.slots != killed.slots:
                return f"the heir on {heir.port} has slots {heir.slots}, not {killed.slots}"
            heirs[:] = [self._ids[heir.id]]
            return None

        self._wait(f"a replica of {dead.url} to take over", timeout, failed_over)
        return heirs[0]

    # Waiting for the cluster to agree.

    def _formed(self) -> str | None:
        unhealthy = self._healthy()
        if unhealthy:
            return unhealthy
        view = self.view()
        masters = [seen for seen in view if self._serving(seen)]
        if len(masters) != MASTERS:
            return f"{len(masters)} masters, not {MASTERS}"
        for master in masters:
            replicas = [seen for seen in view if seen.master_id == master.id]
            if len(replicas) != REPLICAS_PER_MASTER:
                return f"the master on {master.port} has {len(replicas)} replicas"
        return None

    def _healthy(self) -> str | None:
        """None once every live node says ``cluster_state:ok``, knows every node, sees the same
        masters, slots and replicas, sees every dead node as failed, all 16384 slots served by
        live masters, and each live replica is in sync with its master; else what is missing."""
        live = [node for node in self.nodes if self.alive(node)]
        layouts = set()
        for node in live:
            info = self._command(node, "CLUSTER", "INFO")
            if "cluster_state:ok" not in info.split():
                return f"{node.url} says the cluster is not ok"
            view = self.view(node)
            if len(view) != len(self.nodes) or {seen.id for seen in view} != set(self._ids):
                return f"{node.url} knows {len(view)} nodes"
            layout = []
            covered = 0
            for seen in view:
                if not self.alive(self._ids[seen.id]):
                    if "fail" not in seen.flags:
                        return f"{node.url} does not yet see {seen.port} as failed"
                    continue
                if seen.failing:
                    return f"{node.url} suspects {seen.port}, which is alive"
                layout.append((seen.id, seen.is_master, seen.master_id, seen.slots))
                if seen.is_master:
                    covered += sum(high - low + 1 for low, high in seen.slots)
            if covered != SLOTS:
                return f"{node.url} sees {covered} slots served by live masters"
            layouts.add(tuple(sorted(layout, key=repr)))
            replication = self._admin_client(node).info("replication")
            if replication["role"] != "master" and replication["master_link_status"] != "up":
                return f"{node.url} is a replica not in sync with its master"
        if len(layouts) != 1:
            return "the live nodes disagree on the layout"
        return None

    def _wait(self, what: str, timeout: float, missing: Callable[[], str | None]) -> None:
        """Polls ``missing`` (what is still missing, or None when done) until done or timeout."""
        deadline = time.monotonic() + timeout
        reason: str | None = "not checked"
        while True:
            try:
                reason = missing()
            except redis.exceptions.RedisError as error:
                reason = f"{type(error).__name__}: {error}"
            if reason is None:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up after {timeout} s waiting for {what}: {reason}")
            time.sleep(0.1)

    def _admin_client(self, node: RedisServer) -> redis.Redis:
        admin = self._admin.get(id(node))
        if admin is None:
            admin = node.client(decode_responses=True, socket_timeout=5)
            self._admin[id(node)] = admin
        return admin

    def _command(self, node: RedisServer, *args: str) -> str:
        """A command on one node directly, its reply as text (CLUSTER MYID, INFO, NODES)."""
        return str(self._admin_client(node).execute_command(*args))
