"""The Redis Cluster harness (harness/redis_cluster.py): three masters with a third of the slots
and a replica each, the module on every node, filters through cluster clients on every master,
and a SIGKILLed master's replica taking over with the filter it had copied."""

from __future__ import annotations

import asyncio
import string

from redis.crc import key_slot

from redis_cluster import RedisCluster
from redis_server import RedisServer


def key_on(cluster: RedisCluster, master: RedisServer) -> str:
    """A key ``{tag}x`` whose slot ``master`` serves."""
    ranges = cluster.slots_of(master)
    for tag in string.ascii_lowercase + string.digits:
        key = f"{{{tag}}}x"
        slot = key_slot(key.encode())
        if any(low <= slot <= high for low, high in ranges):
            return key
    raise AssertionError(f"no one-character hash tag lands in {ranges}")


def test_three_masters_with_a_third_of_the_slots_and_a_replica_each(cluster: RedisCluster) -> None:
    masters = cluster.masters()
    assert [cluster.slots_of(master) for master in masters] == [
        [(0, 5460)],
        [(5461, 10922)],
        [(10923, 16383)],
    ]
    replicas = [cluster.replicas_of(master) for master in masters]
    assert [len(following) for following in replicas] == [1, 1, 1]
    everyone = masters + [replica for following in replicas for replica in following]
    assert sorted(node.port for node in everyone) == sorted(node.port for node in cluster.nodes)
    assert cluster.url == f"redis://127.0.0.1:{masters[0].port}"
    for node in cluster.nodes:
        with node.client(decode_responses=True) as direct:
            assert [module["name"] for module in direct.module_list()] == ["bf"]

    keys = [key_on(cluster, master) for master in masters]
    client = cluster.client()
    try:
        for master, key in zip(masters, keys, strict=True):
            assert cluster.master_of_slot(key_slot(key.encode())) is master
            assert client.execute_command("BF.ADD", key, "item") == 1
            assert client.execute_command("BF.ADD", key, "item") == 0
            assert client.execute_command("BF.EXISTS", key, "item") == 1
            assert client.execute_command("BF.EXISTS", key, "never added") == 0
            with master.client() as direct:  # the master that serves the slot, asked directly
                assert direct.execute_command("BF.EXISTS", key, "item") == 1
    finally:
        client.close()

    async def exists_through_the_async_client() -> list[int]:
        async_client = cluster.async_client(protocol=3)
        try:
            return [await async_client.execute_command("BF.EXISTS", key, "item") for key in keys]
        finally:
            await async_client.aclose()

    assert asyncio.run(exists_through_the_async_client()) == [1, 1, 1]


def test_a_killed_masters_replica_takes_over_with_its_filter(cluster: RedisCluster) -> None:
    dead = cluster.masters()[1]
    (replica,) = cluster.replicas_of(dead)
    key = key_on(cluster, dead)
    with dead.client(single_connection_client=True) as direct:
        assert direct.execute_command("BF.ADD", key, "before") == 1
        assert direct.execute_command("WAIT", 1, 2000) == 1  # the replica has it

    cluster.kill(dead)
    assert dead.process is None or dead.process.poll() is not None
    heir = cluster.wait_for_failover(dead, timeout=20)
    assert heir is replica
    masters = cluster.masters()
    assert len(masters) == 3
    assert masters[1] is heir
    assert all(master is not dead for master in masters)
    assert cluster.slots_of(heir) == [(5461, 10922)]
    assert cluster.replicas_of(heir) == []
    assert cluster.master_of_slot(key_slot(key.encode())) is heir

    client = cluster.client()  # a fresh one, started from a live master
    try:
        assert client.execute_command("BF.EXISTS", key, "before") == 1
        assert client.execute_command("BF.EXISTS", key, "never added") == 0
        assert client.execute_command("BF.ADD", key, "after") == 1
        assert client.execute_command("BF.EXISTS", key, "after") == 1
    finally:
        client.close()
