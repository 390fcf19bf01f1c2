//! Redis Cluster, for real: three primaries and three replicas on loopback, each with the module,
//! joined by `redis-cli --cluster create`. A cluster-aware client (the `redis` crate) spreads
//! 1,000 filters over the shards; the replicas hold copies that answer; a primary dies by SIGKILL
//! and its replica takes over with every filter intact; a range of slots holding filters moves to
//! another primary with `redis-cli --cluster reshard` (MIGRATE of module keys) and the filters
//! answer on their new owner. Each test makes and fills its own cluster, one cluster at a time; the
//! slots move onto the replica a failover promoted.

mod common;

use common::{Frame, Options, Server};
use redis::cluster::{ClusterClient, ClusterConnection};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::sleep;
use std::time::{Duration, Instant};

const FILTERS: usize = 1000;
const ITEMS: usize = 10;

fn key(filter: usize) -> String {
    format!("filter:{filter}")
}

fn items(filter: usize) -> Vec<String> {
    (0..ITEMS)
        .map(|item| format!("item:{filter}:{item}"))
        .collect()
}

/// The filter number of a key written by this test.
fn filter_of(key: &str) -> usize {
    key.strip_prefix("filter:")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a key this test did not write: {key}"))
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
struct Node {
    id: String,
    port: u16,
    primary: bool,
    failed: bool,
    /// Flagged `fail?`: a peer has not answered within the node timeout.
    suspected: bool,
    /// For a replica, the id of its primary.
    replica_of: Option<String>,
    /// Slot ranges, inclusive.
    slots: Vec<(u16, u16)>,
}

impl Node {
    fn slot_count(&self) -> usize {
        self.slots
            .iter()
            .map(|(low, high)| usize::from(high - low) + 1)
            .sum()
    }

    fn owns(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|(low, high)| (*low..=*high).contains(&slot))
    }
}

/// The cluster as `server` sees it.
fn nodes(server: &Server) -> Vec<Node> {
    let text = server.conn().call(&["CLUSTER", "NODES"]).text();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let address = fields[1].split('@').next().unwrap();
            let port = address.rsplit(':').next().unwrap().parse().unwrap();
            let flags: Vec<&str> = fields[2].split(',').collect();
            let slots = fields[8..]
                .iter()
                .filter(|field| !field.starts_with('['))
                .map(|field| match field.split_once('-') {
                    Some((low, high)) => (low.parse().unwrap(), high.parse().unwrap()),
                    None => (field.parse().unwrap(), field.parse().unwrap()),
                })
                .collect();
            Node {
                id: fields[0].to_string(),
                port,
                primary: flags.contains(&"master"),
                failed: flags.contains(&"fail"),
                suspected: flags.contains(&"fail?"),
                replica_of: (fields[3] != "-").then(|| fields[3].to_string()),
                slots,
            }
        })
        .collect()
}

fn my_id(server: &Server) -> String {
    server.conn().call(&["CLUSTER", "MYID"]).text()
}

fn cluster_state(server: &Server) -> String {
    let info = server.conn().call(&["CLUSTER", "INFO"]).text();
    info.lines()
        .find_map(|line| line.strip_prefix("cluster_state:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Waits for `done`, or fails with what it was waiting for.
fn wait_for(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        sleep(Duration::from_millis(100));
    }
}

/// Runs `redis-cli --cluster ...`; its output, or a failure that shows it.
fn redis_cli_cluster(args: &[String]) -> String {
    let output = Command::new("redis-cli")
        .arg("--cluster")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run redis-cli (make test installs redis-tools)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "redis-cli --cluster {args:?} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

/// A cluster-aware client that starts from the given nodes.
fn client(servers: &[&Server]) -> ClusterConnection {
    ClusterClient::builder(
        servers
            .iter()
            .map(|server| format!("redis://127.0.0.1:{}/", server.port)),
    )
    .connection_timeout(Duration::from_secs(2))
    .response_timeout(Duration::from_secs(10))
    .retries(10)
    .build()
    .expect("cluster client")
    .get_connection()
    .expect("connect to the cluster")
}

/// The keys a node holds (a few hundred here).
fn keys_on(server: &Server) -> Vec<String> {
    let mut keys: Vec<String> = server
        .conn()
        .call(&["KEYS", "*"])
        .items()
        .iter()
        .map(Frame::text)
        .collect();
    keys.sort();
    keys
}

fn key_slot(server: &Server, key: &str) -> u16 {
    let slot = server.conn().call(&["CLUSTER", "KEYSLOT", key]).int();
    u16::try_from(slot).unwrap()
}

/// Asks a node directly (no redirection) for every item of every filter it holds; a replica is
/// asked in READONLY mode. Returns how many filters it answered for.
fn answers_directly(server: &Server, replica: bool) -> usize {
    let keys = keys_on(server);
    let mut conn = server.conn();
    if replica {
        assert_eq!(conn.call(&["READONLY"]), Frame::ok());
    }
    for key in &keys {
        let filter = filter_of(key);
        let mut command = vec!["BF.MEXISTS".to_string(), key.clone()];
        command.extend(items(filter));
        assert_eq!(
            conn.call(&command),
            Frame::Array(vec![Frame::Int(1); ITEMS]),
            "{key} on port {}",
            server.port
        );
        assert_eq!(
            conn.call(&["BF.CARD", key]),
            Frame::Int(ITEMS as i64),
            "{key} on port {}",
            server.port
        );
    }
    keys.len()
}

/// Every filter answers every one of its items through the cluster client, and INFO counts them.
fn all_filters_answer(conn: &mut ClusterConnection, extra_item: Option<&str>) {
    for filter in 0..FILTERS {
        let mut wanted = items(filter);
        wanted.extend(extra_item.map(str::to_string));
        let found: Vec<i64> = redis::cmd("BF.MEXISTS")
            .arg(key(filter))
            .arg(&wanted)
            .query(conn)
            .unwrap_or_else(|err| panic!("BF.MEXISTS {}: {err}", key(filter)));
        assert_eq!(found, vec![1; wanted.len()], "{}", key(filter));
        let one: i64 = redis::cmd("BF.EXISTS")
            .arg(key(filter))
            .arg(&wanted[0])
            .query(conn)
            .unwrap();
        assert_eq!(one, 1, "{}", key(filter));
    }
}

/// One cluster at a time: nodes time out after 3 s (the harness's setting, made for failover), and
/// two clusters side by side on a busy 2-core machine could trip that.
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

/// A cluster of six nodes holding the test's filters: three primaries, each with a replica.
struct Cluster {
    servers: Vec<Server>,
    /// The nodes as the first one saw them once the cluster was healthy.
    topology: Vec<Node>,
    primaries: Vec<Node>,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Cluster {
    /// The index in `servers` of the node on `port`.
    fn by_port(&self, port: u16) -> usize {
        self.servers.iter().position(|s| s.port == port).unwrap()
    }

    /// The index in `servers` of the replica of `primary`.
    fn replica_of(&self, primary: &Node) -> usize {
        let replica = self
            .topology
            .iter()
            .find(|n| n.replica_of.as_deref() == Some(primary.id.as_str()))
            .unwrap_or_else(|| panic!("no replica of {primary:?}"));
        self.by_port(replica.port)
    }
}

/// Six nodes joined by redis-cli, which makes the first three primaries and gives each a replica;
/// then 1,000 filters, made four ways, each with ten items.
fn filled_cluster() -> Cluster {
    let one_at_a_time = ONE_CLUSTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let servers: Vec<Server> = (0..6)
        .map(|_| Server::with(Options::cluster_node()))
        .collect();
    let addresses: Vec<String> = servers
        .iter()
        .map(|server| format!("127.0.0.1:{}", server.port))
        .collect();
    let mut create = vec!["create".to_string()];
    create.extend(addresses.iter().cloned());
    create.extend(["--cluster-replicas", "1", "--cluster-yes"].map(String::from));
    let output = redis_cli_cluster(&create);
    assert!(output.contains("[OK] All 16384 slots covered."), "{output}");
    // redis-cli returns before every node has taken its role: wait for what the tests assert.
    wait_for(
        "three primaries and three linked replicas, seen alike by all",
        60,
        || settled(&servers),
    );

    let topology = nodes(&servers[0]);
    let primaries: Vec<Node> = topology.iter().filter(|n| n.primary).cloned().collect();
    assert_eq!(primaries.len(), 3, "{topology:?}");
    assert_eq!(primaries.iter().map(Node::slot_count).sum::<usize>(), 16384);
    let mut conn = client(&servers.iter().collect::<Vec<_>>());
    for filter in 0..FILTERS {
        make_filter(&mut conn, filter);
    }
    Cluster {
        servers,
        topology,
        primaries,
        _one_at_a_time: one_at_a_time,
    }
}

/// True once the six nodes agree on three primaries owning every slot and three replicas, one
/// of each, none failed or suspected, each replica's link to its primary up.
fn settled(servers: &[Server]) -> bool {
    let views: Vec<Vec<Node>> = servers.iter().map(nodes).collect();
    let roles = |view: &[Node]| -> Vec<(String, Option<String>)> {
        let mut roles: Vec<_> = view
            .iter()
            .map(|n| (n.id.clone(), n.replica_of.clone()))
            .collect();
        roles.sort();
        roles
    };
    let first = &views[0];
    let primaries: Vec<&Node> = first.iter().filter(|n| n.primary).collect();
    let replicas: Vec<&Node> = first.iter().filter(|n| !n.primary).collect();
    let shape_ok = first.len() == 6
        && primaries.len() == 3
        && primaries.iter().map(|n| n.slot_count()).sum::<usize>() == 16384
        && replicas.len() == 3
        && primaries.iter().all(|p| {
            replicas
                .iter()
                .filter(|r| r.replica_of.as_deref() == Some(p.id.as_str()))
                .count()
                == 1
        });
    shape_ok
        && views.iter().all(|view| {
            roles(view) == roles(first) && view.iter().all(|n| !n.failed && !n.suspected)
        })
        && servers.iter().all(|server| {
            cluster_state(server) == "ok"
                && (server.info_field("replication", "role") == "master"
                    || server.info_field("replication", "master_link_status") == "up")
        })
        && replicas.iter().all(|r| {
            servers
                .iter()
                .find(|server| server.port == r.port)
                .is_some_and(|server| server.info_field("replication", "role") == "slave")
        })
}

/// Makes filter number `filter` with its ten items, one of four ways by its number.
fn make_filter(conn: &mut ClusterConnection, filter: usize) {
    let key = key(filter);
    let items = items(filter);
    match filter % 4 {
        0 => {
            let reply: String = redis::cmd("BF.RESERVE")
                .arg(&key)
                .arg("0.001")
                .arg(1000)
                .query(conn)
                .unwrap();
            assert_eq!(reply, "OK");
            let added: Vec<i64> = redis::cmd("BF.MADD")
                .arg(&key)
                .arg(&items)
                .query(conn)
                .unwrap();
            assert_eq!(added, vec![1; ITEMS], "{key}");
        }
        1 => {
            for item in &items {
                let added: i64 = redis::cmd("BF.ADD")
                    .arg(&key)
                    .arg(item)
                    .query(conn)
                    .unwrap();
                assert_eq!(added, 1, "{key} {item}");
            }
        }
        2 => {
            let added: Vec<i64> = redis::cmd("BF.MADD")
                .arg(&key)
                .arg(&items)
                .query(conn)
                .unwrap();
            assert_eq!(added, vec![1; ITEMS], "{key}");
        }
        _ => {
            let added: Vec<i64> = redis::cmd("BF.INSERT")
                .arg(&key)
                .arg("CAPACITY")
                .arg(500)
                .arg("ERROR")
                .arg("0.0001")
                .arg("ITEMS")
                .arg(&items)
                .query(conn)
                .unwrap();
            assert_eq!(added, vec![1; ITEMS], "{key}");
        }
    }
    let inserted: Vec<i64> = redis::cmd("BF.INFO")
        .arg(&key)
        .arg("ITEMS")
        .query(conn)
        .unwrap();
    assert_eq!(inserted, vec![ITEMS as i64], "{key}");
    let capacity: Vec<i64> = redis::cmd("BF.INFO")
        .arg(&key)
        .arg("CAPACITY")
        .query(conn)
        .unwrap();
    let wanted = match filter % 4 {
        0 => 1000,
        3 => 500,
        _ => 100, // bf.initial-size
    };
    assert_eq!(capacity, vec![wanted], "{key}");
}

#[test]
fn filters_spread_over_every_shard_and_answer_through_a_cluster_client() {
    let cluster = filled_cluster();
    let servers = &cluster.servers;
    let mut conn = client(&servers.iter().collect::<Vec<_>>());
    all_filters_answer(&mut conn, None);
    let absent: i64 = redis::cmd("BF.EXISTS")
        .arg(key(0))
        .arg("never added")
        .query(&mut conn)
        .unwrap();
    assert_eq!(absent, 0);

    // Spread over every shard, each key on the primary that owns its slot.
    let mut held = 0;
    for primary in &cluster.primaries {
        let server = &servers[cluster.by_port(primary.port)];
        let keys = keys_on(server);
        assert!(
            keys.len() > FILTERS / 6,
            "only {} filters on the primary with slots {:?}",
            keys.len(),
            primary.slots
        );
        for key in &keys {
            assert!(primary.owns(key_slot(server, key)), "{key}");
        }
        held += answers_directly(server, false);
    }
    assert_eq!(held, FILTERS);
}

#[test]
fn replicas_hold_copies_that_answer() {
    let cluster = filled_cluster();
    let servers = &cluster.servers;
    for primary in &cluster.primaries {
        let primary_server = &servers[cluster.by_port(primary.port)];
        let replica = &servers[cluster.replica_of(primary)];
        replica.catch_up(primary_server);
        assert_eq!(keys_on(replica), keys_on(primary_server));
        answers_directly(replica, true);
    }
}

/// After a failover: the index (in `servers`) of the replica that took the primary's place, the
/// indexes of the nodes still running, and a cluster client on them.
struct FailedOver {
    heir: usize,
    survivors: Vec<usize>,
    conn: ClusterConnection,
}

/// SIGKILLs the first primary and waits for its replica to take over: the replica owns the
/// primary's slots and holds its keys, and the cluster marks the primary failed.
fn fail_over(cluster: &mut Cluster) -> FailedOver {
    let victim = cluster.primaries[0].clone();
    let heir = cluster.replica_of(&victim);
    let victim_index = cluster.by_port(victim.port);
    let servers = &mut cluster.servers;
    let victim_keys = keys_on(&servers[victim_index]);
    // A replica still in its first sync holds nothing to take over with: on a loaded machine
    // the handshake can take seconds. Kill the primary once its replica has every key.
    wait_for("the replica to hold its primary's keys", 60, || {
        keys_on(&servers[heir]) == victim_keys
    });
    servers[heir].catch_up(&servers[victim_index]);
    servers[victim_index].kill();
    let survivors: Vec<usize> = (0..servers.len())
        .filter(|&index| servers[index].port != victim.port)
        .collect();
    wait_for("the replica to take over", 60, || {
        servers[heir].info_field("replication", "role") == "master"
            && survivors
                .iter()
                .all(|&index| cluster_state(&servers[index]) == "ok")
    });
    let after_failover = nodes(&servers[heir]);
    let promoted = after_failover
        .iter()
        .find(|n| n.port == servers[heir].port)
        .unwrap();
    assert!(promoted.primary);
    assert_eq!(promoted.slots, victim.slots);
    assert!(after_failover
        .iter()
        .any(|n| n.port == victim.port && n.failed));
    assert_eq!(keys_on(&servers[heir]), victim_keys);

    let conn = client(
        &survivors
            .iter()
            .map(|&index| &servers[index])
            .collect::<Vec<_>>(),
    );
    FailedOver {
        heir,
        survivors,
        conn,
    }
}

/// Adds the item "after failover" to every filter through the cluster client.
fn add_after_failover(conn: &mut ClusterConnection) {
    for filter in 0..FILTERS {
        let added: i64 = redis::cmd("BF.ADD")
            .arg(key(filter))
            .arg("after failover")
            .query(conn)
            .unwrap();
        assert_eq!(added, 1, "{}", key(filter));
    }
}

#[test]
fn a_killed_primarys_replica_takes_over_with_every_filter_answering_reads_and_writes() {
    let mut cluster = filled_cluster();
    let mut failed_over = fail_over(&mut cluster);
    let conn = &mut failed_over.conn;
    all_filters_answer(conn, None);
    add_after_failover(conn);
    all_filters_answer(conn, Some("after failover"));
}

/// Moves the lowest slots of the second primary, enough to carry at least 20 filters, to the
/// node at `heir` (redis-cli moves a source's slots in ascending order, with MIGRATE), and waits
/// for the nodes at `survivors` to agree; the index of the source, and the keys moved.
fn reshard_onto(cluster: &Cluster, heir: usize, survivors: &[usize]) -> (usize, Vec<String>) {
    let servers = &cluster.servers;
    let source = &cluster.primaries[1];
    let source_server = cluster.by_port(source.port);
    let mut source_slots: Vec<u16> = keys_on(&servers[source_server])
        .iter()
        .map(|key| key_slot(&servers[source_server], key))
        .collect();
    source_slots.sort_unstable();
    let last_moved_slot = source_slots[19];
    let moved_slots = source
        .slots
        .iter()
        .flat_map(|(low, high)| *low..=*high)
        .filter(|slot| *slot <= last_moved_slot)
        .count();
    let moving: Vec<String> = keys_on(&servers[source_server])
        .into_iter()
        .filter(|key| key_slot(&servers[source_server], key) <= last_moved_slot)
        .collect();
    assert!(moving.len() >= 20);
    let output = redis_cli_cluster(&[
        "reshard".to_string(),
        format!("127.0.0.1:{}", servers[source_server].port),
        "--cluster-from".to_string(),
        my_id(&servers[source_server]),
        "--cluster-to".to_string(),
        my_id(&servers[heir]),
        "--cluster-slots".to_string(),
        moved_slots.to_string(),
        "--cluster-yes".to_string(),
    ]);
    assert!(output.contains("Moving slot"), "{output}");
    wait_for("every node to agree on the new owner", 60, || {
        survivors.iter().all(|&index| {
            let view = nodes(&servers[index]);
            view.iter()
                .find(|n| n.port == servers[heir].port)
                .is_some_and(|n| n.owns(last_moved_slot))
        })
    });
    (source_server, moving)
}

#[test]
fn resharding_onto_the_promoted_replica_moves_filters_whole() {
    let mut cluster = filled_cluster();
    let FailedOver {
        heir,
        survivors,
        mut conn,
    } = fail_over(&mut cluster);
    add_after_failover(&mut conn);
    let servers = &cluster.servers;
    let (source_server, moving) = reshard_onto(&cluster, heir, &survivors);

    // The moved filters are on the new owner, whole, and gone from the old one.
    let source_keys = keys_on(&servers[source_server]);
    let heir_keys = keys_on(&servers[heir]);
    for key in &moving {
        assert!(!source_keys.contains(key), "{key} is still on the source");
        assert!(heir_keys.contains(key), "{key} did not arrive");
    }
    let mut direct = servers[heir].conn();
    for key in &moving {
        let filter = filter_of(key);
        let mut command = vec!["BF.MEXISTS".to_string(), key.clone()];
        command.extend(items(filter));
        command.push("after failover".to_string());
        assert_eq!(
            direct.call(&command),
            Frame::Array(vec![Frame::Int(1); ITEMS + 1]),
            "{key}"
        );
        assert_eq!(
            direct.call(&["BF.CARD", key]),
            Frame::Int(ITEMS as i64 + 1),
            "{key}"
        );
    }
    // And the client, redirected, still finds every filter.
    all_filters_answer(&mut conn, Some("after failover"));
    let counts: BTreeMap<u16, usize> = survivors
        .iter()
        .filter(|&&index| servers[index].info_field("replication", "role") == "master")
        .map(|&index| (servers[index].port, keys_on(&servers[index]).len()))
        .collect();
    assert_eq!(counts.values().sum::<usize>(), FILTERS, "{counts:?}");
}
