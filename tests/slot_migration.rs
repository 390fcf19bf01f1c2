//! Atomic slot migration (Valkey 9's `CLUSTER MIGRATESLOTS`), for real: a 2-shard cluster with
//! the module on every node and a replica of the target; the slots holding a plain filter, a
//! windowed one (with a TTL of its user's) and a big one (over 50 MB) move while a client keeps
//! adding to all three. The source sends each key as the commands of its AOF rewrite (BF.LOADCHUNK
//! chunks, then PEXPIREAT) and forwards the writes made meanwhile; the target applies both as it
//! would its primary's. Afterwards every acknowledged item answers 1 on the new owner, the source
//! holds no key, BF.INFO is what it was plus the items added, the TTL survived, and the target's
//! replica agrees (DEBUG DIGEST-VALUE, BF.DEBUG).
//!
//! On servers without atomic slot migration (Redis 7.0 and 8.2, Valkey 8.0) a test asserts that
//! the server has no such command (keys move there with MIGRATE, tested in tests/cluster.rs).

mod common;

use common::{flavor, join_cluster, Conn, Frame, Options, Server};
use redis::cluster::ClusterClient;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The keys, in two slots (3300 and 7365) of the source's range 0-8191.
const PLAIN: &str = "{b}plain";
const BIG: &str = "{b}big";
const WINDOWED: &str = "{c}windowed";

fn wait_for(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        sleep(Duration::from_millis(50));
    }
}

/// BF.INFO as name -> value.
fn bf_info(conn: &mut Conn, key: &str) -> BTreeMap<String, Frame> {
    conn.call(&["BF.INFO", key])
        .items()
        .chunks(2)
        .map(|pair| (pair[0].text(), pair[1].clone()))
        .collect()
}

/// One field of the source's entry in `CLUSTER GETSLOTMIGRATIONS` (a flat map per job).
fn migration_field(conn: &mut Conn, field: &str) -> Option<String> {
    let jobs = conn.call(&["CLUSTER", "GETSLOTMIGRATIONS"]).items();
    let job = jobs.last()?.items();
    job.chunks(2)
        .find(|pair| pair[0].text() == field)
        .map(|pair| pair[1].text())
}

/// Three nodes: the source owns slots 0-8191, the target 8192-16383, and a replica follows the
/// target.
fn cluster() -> (Server, Server, Server) {
    // A node timeout of 15 s, not the harness's 1 s (made for failover tests): forking for the
    // 69 MB snapshot on a busy 2-core machine must not get a node marked failing mid-move.
    let node = Options::cluster_node().config("cluster-node-timeout", "15000");
    let servers: Vec<Server> = (0..3).map(|_| Server::with(node.clone())).collect();
    join_cluster(
        &servers,
        &[Some(("0", "8191")), Some(("8192", "16383")), None],
    );
    let mut conns: Vec<Conn> = servers.iter().map(Server::conn).collect();
    let ok = Frame::ok();
    let target_id = conns[1].call(&["CLUSTER", "MYID"]).text();
    assert_eq!(conns[2].call(&["CLUSTER", "REPLICATE", &target_id]), ok);
    let healthy = |conn: &mut Conn| {
        conn.call(&["CLUSTER", "INFO"])
            .text()
            .contains("cluster_state:ok")
    };
    wait_for("a healthy cluster", 30, || conns.iter_mut().all(healthy));
    let mut servers = servers.into_iter();
    let source = servers.next().unwrap();
    let target = servers.next().unwrap();
    let replica = servers.next().unwrap();
    wait_for("the replica's sync", 30, || {
        replica.info_field("replication", "master_link_status") == "up"
    });
    (source, target, replica)
}

/// The options the module declared, as `INFO modules` lists them.
fn module_options(server: &Server) -> String {
    let info = server.conn().call(&["INFO", "modules"]).text();
    let line = info
        .lines()
        .find(|line| line.starts_with("module:name=bf,"))
        .unwrap_or_else(|| panic!("no bf in INFO modules:\n{info}"));
    line.split("options=").nth(1).unwrap().trim().to_string()
}

/// The module declares atomic slot migration where the server has it (Valkey 9), and only there.
#[test]
fn the_module_declares_atomic_slot_migration_only_where_the_server_has_it() {
    let server = Server::start();
    let expected = if flavor().has_atomic_slot_migration() {
        "[handle-io-errors|handle-repl-async-load|handle-atomic-slot-migration]"
    } else {
        "[handle-io-errors|handle-repl-async-load]"
    };
    assert_eq!(module_options(&server), expected);
}

/// Waits for the next slot (a quarter of the window, counted from the epoch) unless the current
/// one has `margin` left.
fn wait_unless_a_slot_has(window_seconds: u64, margin: Duration) {
    let slot = Duration::from_secs(window_seconds) / 4;
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let into_slot = Duration::from_nanos((since_epoch.as_nanos() % slot.as_nanos()) as u64);
    let left = slot - into_slot;
    if left < margin {
        sleep(left + Duration::from_millis(100));
    }
}

#[test]
fn migrateslots_is_an_unknown_subcommand_where_the_server_has_no_atomic_slot_migration() {
    if flavor().has_atomic_slot_migration() {
        return; // The migration itself is tested below.
    }
    let server = Server::with(Options::cluster_node());
    let reply = server
        .conn()
        .call(&["CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "0"]);
    let text = common::error_text(&reply);
    assert!(
        text.starts_with("ERR unknown subcommand 'MIGRATESLOTS'"),
        "{text}"
    );
}

/// Each key's BF.INFO, by key.
type Infos = BTreeMap<&'static str, BTreeMap<String, Frame>>;

/// The three filters on the source, 1,000 items in each, the windowed one with a TTL of its user's;
/// their BF.INFO.
fn three_filters(admin: &mut Conn) -> Infos {
    let ok = Frame::ok();
    // The windowed key's adds, before and during the move, must fall in one slot: one in the
    // next would start a new generation, which BF.INFO shows (this test once ran over 19:30:00).
    wait_unless_a_slot_has(3600, Duration::from_secs(60));
    assert_eq!(admin.call(&["BF.RESERVE", PLAIN, "0.001", "1000000"]), ok);
    // 50,000,000 items at 1%: 69 MB (Size 68,923,840).
    assert_eq!(admin.call(&["BF.RESERVE", BIG, "0.01", "50000000"]), ok);
    let reserve = ["BF.RESERVE", WINDOWED, "0.01", "1000000", "WINDOW", "3600"];
    assert_eq!(admin.call(&reserve), ok);
    for key in [PLAIN, BIG, WINDOWED] {
        let items: Vec<String> = (0..1000).map(|i| format!("before:{i}")).collect();
        let mut command = vec!["BF.MADD".to_string(), key.to_string()];
        command.extend(items);
        assert_eq!(admin.call(&command).items().len(), 1000);
    }
    assert_eq!(admin.call(&["EXPIRE", WINDOWED, "100000"]), Frame::Int(1));
    assert!(common::bf_size(admin, BIG) > 50 << 20);
    [PLAIN, BIG, WINDOWED]
        .into_iter()
        .map(|key| (key, bf_info(admin, key)))
        .collect()
}

/// An add the writer made and the server acknowledged: the key, the item, the reply, and when.
type Acknowledged = (&'static str, String, i64, Instant);

/// A client that adds to the three filters, one item per command, through a cluster client on
/// `nodes`, until `stop`: the adds acknowledged, and those refused.
fn writer(nodes: Vec<String>, stop: Arc<AtomicBool>) -> (Vec<Acknowledged>, Vec<String>) {
    let client = ClusterClient::builder(nodes)
        .retries(20)
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut conn = client.get_connection().unwrap();
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    let mut index = 0;
    while !stop.load(Ordering::Relaxed) {
        for key in [PLAIN, BIG, WINDOWED] {
            let item = format!("during:{index}");
            let reply: redis::RedisResult<i64> =
                redis::cmd("BF.ADD").arg(key).arg(&item).query(&mut conn);
            match reply {
                Ok(added) => acknowledged.push((key, item, added, Instant::now())),
                Err(err) => refused.push(format!("{key} {item}: {err}")),
            }
        }
        index += 1;
    }
    (acknowledged, refused)
}

/// Moves slots 3300 and 7365 (the three keys) from `source` to `target` with CLUSTER
/// MIGRATESLOTS, and waits for it: when it started and finished.
fn migrate(admin: &mut Conn, source: &Server, target: &Server) -> (Instant, Instant) {
    let target_id = target.conn().call(&["CLUSTER", "MYID"]).text();
    // The target holds its own clients to 1 MiB filters: what the source sends (the 69 MB filter's
    // chunks, the adds made meanwhile) is applied as sent, as a primary's stream is.
    let limit = ["CONFIG", "SET", "bf.max-filter-bytes", "1mb"];
    assert_eq!(target.conn().call(&limit), Frame::ok());
    let migrate = [
        "CLUSTER",
        "MIGRATESLOTS",
        "SLOTSRANGE",
        "3300",
        "3300",
        "7365",
        "7365",
        "NODE",
        &target_id,
    ];
    let started = Instant::now();
    assert_eq!(admin.call(&migrate), Frame::ok());
    wait_for("the migration", 120, || {
        match migration_field(admin, "state").as_deref() {
            Some("success") => true,
            Some("failed" | "canceled") => panic!(
                "the migration failed: {:?}\nsource log:\n{}",
                migration_field(admin, "message"),
                source.log()
            ),
            _ => false,
        }
    });
    (started, Instant::now())
}

/// On the new owner (`conn`): every acknowledged item answers 1, BF.INFO is what it was `before`
/// with the items the client added counted, and the windowed key kept its TTL and its window.
fn the_new_owner_holds_every_item(conn: &mut Conn, before: &Infos, acknowledged: &[Acknowledged]) {
    for (key, item, _, _) in acknowledged {
        assert_eq!(
            conn.call(&["BF.EXISTS", key, item]),
            Frame::Int(1),
            "{key} {item}"
        );
    }
    for key in [PLAIN, BIG, WINDOWED] {
        assert_eq!(conn.call(&["BF.EXISTS", key, "before:999"]), Frame::Int(1));
        // BF.INFO is what it was, with the items the client added counted.
        let added = acknowledged
            .iter()
            .filter(|(k, _, added, _)| *k == key && *added == 1)
            .count() as i64;
        let mut expected = before[key].clone();
        let items = expected.get_mut("Number of items inserted").unwrap();
        *items = Frame::Int(items.int() + added);
        assert_eq!(bf_info(conn, key), expected, "{key}");
    }
    // The windowed key's TTL came along (PEXPIREAT), and it is still windowed.
    let ttl = conn.call(&["TTL", WINDOWED]).int();
    assert!((99_000..=100_000).contains(&ttl), "TTL {ttl}");
    assert_eq!(
        conn.call(&["BF.INFO", WINDOWED, "WINDOW"]).items()[0],
        Frame::Int(3600)
    );
}

/// The target's replica holds the same filters as the target (`conn`), and the windowed key's TTL.
fn the_replica_agrees(conn: &mut Conn, replica: &Server) {
    assert_eq!(conn.call(&["WAIT", "1", "10000"]), Frame::Int(1));
    let mut copy = replica.conn();
    assert_eq!(copy.call(&["READONLY"]), Frame::ok());
    for key in [PLAIN, BIG, WINDOWED] {
        assert_eq!(
            common::digest(&mut copy, key),
            common::digest(conn, key),
            "{key}"
        );
        assert_eq!(
            common::debug_lines(&mut copy, key),
            common::debug_lines(conn, key),
            "{key}"
        );
    }
    let replica_ttl = copy.call(&["TTL", WINDOWED]).int();
    assert!(
        (99_000..=100_000).contains(&replica_ttl),
        "replica TTL {replica_ttl}"
    );
}

#[test]
fn filters_move_with_their_slots_while_a_client_adds_to_them() {
    if !flavor().has_atomic_slot_migration() {
        return; // The server has no MIGRATESLOTS: tested above.
    }
    let (source, target, replica) = cluster();
    // The new owner and its replica make blocked filters by default; the moved classic ones stay
    // classic there (their BF.INFO, compared below, would gain a Layout field).
    for server in [&target, &replica] {
        let set = server
            .conn()
            .call(&["CONFIG", "SET", "bf.layout", "blocked"]);
        assert_eq!(set, Frame::ok());
    }
    let mut admin = source.conn();
    let before = three_filters(&mut admin);

    // A client adds to the three filters, one item per command, through the whole move.
    let stop = Arc::new(AtomicBool::new(false));
    let nodes: Vec<String> = [&source, &target]
        .iter()
        .map(|server| format!("redis://127.0.0.1:{}/", server.port))
        .collect();
    let writing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || writer(nodes, stop))
    };
    sleep(Duration::from_millis(300));
    let (started, finished) = migrate(&mut admin, &source, &target);
    // Writes go on at the new owner for a while, then stop.
    sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (acknowledged, refused) = writing.join().unwrap();
    assert!(refused.is_empty(), "writes refused: {refused:?}");
    // Some were made while the slots moved (the big filter's snapshot alone takes a few hundred
    // milliseconds), which the source forwarded to the target.
    let during = acknowledged
        .iter()
        .filter(|(_, _, _, at)| (started..finished).contains(at))
        .count();
    assert!(during >= 10, "{during} writes during the move");

    // The source has handed every key over.
    wait_for("the source to drop the moved keys", 30, || {
        source.conn().call(&["DBSIZE"]) == Frame::Int(0)
    });
    let mut conn = target.conn();
    assert_eq!(conn.call(&["DBSIZE"]), Frame::Int(3));
    the_new_owner_holds_every_item(&mut conn, &before, &acknowledged);
    the_replica_agrees(&mut conn, &replica);
}
