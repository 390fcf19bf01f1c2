//! Atomic slot migration (Valkey 9's `CLUSTER MIGRATESLOTS`), for real: a 2-shard cluster with
//! the module on every node and a replica of the target; the slots holding a plain filter, a
//! windowed one (with a TTL of its user's) and a big one (over 50 MB) move while a client keeps
//! adding to all three. The source sends each key as the commands of its AOF rewrite (BF.LOADCHUNK
//! chunks, then PEXPIREAT) and forwards the writes made meanwhile; the target applies both as it
//! would its primary's. Afterwards every acknowledged item answers 1 on the new owner, the source
//! holds no key, BF.INFO is what it was plus the items added, the TTL survived, and the target's
//! replica agrees (DEBUG DIGEST-VALUE, BF.DEBUG).
//!
//! Cuckoo filters move the same way (their CF.LOADCHUNK sequence): four of every kind (RESERVE's
//! options, grown by CF.ADD, ERROR's bounded kind, one with deletes done) and a 64 MiB one move
//! while a client adds to and deletes from the four; afterwards each is, on the new owner, what a
//! reference server given the same commands (the acknowledged ones once each) holds, in every
//! reply that shows a filter; and `INFO bf` counts them on the new owner only (that test is
//! ignored: a completed CF.LOADCHUNK restore leaves 32 bytes too many in `bf_cf_bytes`).
//!
//! On servers without atomic slot migration (Redis 7.0 and 8.2, Valkey 8.0) a test asserts that
//! the server has no such command (keys move there with MIGRATE, tested in tests/cluster.rs).

mod common;

use common::{flavor, join_cluster, Conn, Frame, Options, Server};
use redis::cluster::ClusterClient;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// A cluster connection on `nodes` that waits out a slot move: redirections retried, slow
/// replies awaited.
fn patient_connection(nodes: Vec<String>) -> redis::cluster::ClusterConnection {
    let client = ClusterClient::builder(nodes)
        .retries(20)
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    client.get_connection().unwrap()
}

/// An add the writer made and the server acknowledged: the key, the item, the reply, and when.
type Acknowledged = (&'static str, String, i64, Instant);

/// The writes a writer thread has had acknowledged so far, adds and deletes, for the test's thread
/// to wait on: how far a writer got is counted, not hoped for from how long it ran.
#[derive(Default)]
struct Progress {
    adds: AtomicUsize,
    deletes: AtomicUsize,
}

impl Progress {
    /// Counts one acknowledged write of `command`.
    fn count(&self, command: &str) {
        let counter = if command == "CF.DEL" {
            &self.deletes
        } else {
            &self.adds
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits until `adds` more adds and `deletes` more deletes than when it was called have been
    /// acknowledged and counted. A writer has one write out at a time: of those counted after the
    /// call, all but the first were sent after it.
    fn wait_for_more(&self, adds: usize, deletes: usize, what: &str) {
        let (adds, deletes) = (
            self.adds.load(Ordering::SeqCst) + adds,
            self.deletes.load(Ordering::SeqCst) + deletes,
        );
        wait_for(what, 120, || {
            self.adds.load(Ordering::SeqCst) >= adds
                && self.deletes.load(Ordering::SeqCst) >= deletes
        });
    }
}

/// A client that adds to the three filters, one item per command, through a cluster client on
/// `nodes`, until `stop`, counting its adds in `progress`: the adds acknowledged, and those
/// refused.
fn writer(
    nodes: Vec<String>,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> (Vec<Acknowledged>, Vec<String>) {
    let mut conn = patient_connection(nodes);
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    let mut index = 0;
    while !stop.load(Ordering::Relaxed) {
        for key in [PLAIN, BIG, WINDOWED] {
            let item = format!("during:{index}");
            let reply: redis::RedisResult<i64> =
                redis::cmd("BF.ADD").arg(key).arg(&item).query(&mut conn);
            match reply {
                Ok(added) => {
                    acknowledged.push((key, item, added, Instant::now()));
                    progress.count("BF.ADD");
                }
                Err(err) => refused.push(format!("{key} {item}: {err}")),
            }
        }
        index += 1;
    }
    (acknowledged, refused)
}

/// The state of the source's slot migration job, failing the test where the job failed.
fn migration_state(admin: &mut Conn, source: &Server) -> String {
    let state = migration_field(admin, "state").unwrap_or_default();
    if matches!(state.as_str(), "failed" | "canceled" | "cancelled") {
        panic!(
            "the migration failed: {:?}\nsource log:\n{}",
            migration_field(admin, "message"),
            source.log()
        );
    }
    state
}

/// Moves slots 3300 and 7365 (tags `{b}` and `{c}`: every key of a test) from `source` to
/// `target` with CLUSTER MIGRATESLOTS, and waits for it: when it started and finished.
///
/// The move is held while `meanwhile` runs: once the target has the snapshot and asks the source
/// to pause its writes (the job "waiting-to-pause"), the source takes writes and forwards them,
/// and `DEBUG SLOTMIGRATION PREVENT-PAUSE` (Valkey's own switch for its tests) keeps it from
/// pausing, and so the move from finishing, until `meanwhile` returns. Writes made while the
/// slots move are then a certainty, not a matter of how a busy machine schedules the threads.
fn migrate(
    admin: &mut Conn,
    source: &Server,
    target: &Server,
    meanwhile: impl FnOnce(),
) -> (Instant, Instant) {
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
    let prevent_pause = |admin: &mut Conn, on: &str| {
        let reply = admin.call(&["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", on]);
        assert_eq!(reply, Frame::ok(), "DEBUG SLOTMIGRATION PREVENT-PAUSE {on}");
    };
    prevent_pause(admin, "1");
    let started = Instant::now();
    assert_eq!(admin.call(&migrate), Frame::ok());
    wait_for("the move to stream the writes", 120, || {
        let state = migration_state(admin, source);
        assert_ne!(state, "success", "the move finished while held");
        state == "waiting-to-pause"
    });
    meanwhile();
    prevent_pause(admin, "0");
    wait_for("the migration", 120, || {
        migration_state(admin, source) == "success"
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
    let progress = Arc::new(Progress::default());
    let writing = {
        let (stop, progress) = (Arc::clone(&stop), Arc::clone(&progress));
        std::thread::spawn(move || writer(nodes, stop, progress))
    };
    progress.wait_for_more(10, 0, "writes before the move");
    // Eleven more counted while the move is held: at least ten made and acknowledged while the
    // slots moved, which the source forwarded to the target.
    let (started, finished) = migrate(&mut admin, &source, &target, || {
        progress.wait_for_more(11, 0, "writes during the move");
    });
    // Writes go on at the new owner, then stop.
    progress.wait_for_more(10, 0, "writes after the move");
    stop.store(true, Ordering::Relaxed);
    let (acknowledged, refused) = writing.join().unwrap();
    assert!(refused.is_empty(), "writes refused: {refused:?}");
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

/// The cuckoo filters, in the same two slots: RESERVE's options, one grown by CF.ADD, the bounded
/// kind (`ERROR`), one with deletes done; and a 64 MiB one, which nobody writes to while it
/// moves, so that the move lasts (its snapshot) while the others take writes.
const CF_OPTIONS: &str = "{b}cf:options";
const CF_GROWN: &str = "{b}cf:grown";
const CF_BOUNDED: &str = "{b}cf:bounded";
const CF_DELETED: &str = "{b}cf:deleted";
const CF_BIG: &str = "{c}cf:big";

/// The cuckoo filters a client writes to during the move.
const CF_WRITTEN: [&str; 4] = [CF_OPTIONS, CF_GROWN, CF_BOUNDED, CF_DELETED];

/// Those it also deletes from. (A CF.DEL takes the newest copy of the item's fingerprint in its
/// buckets, which may be another item's: on the other two, every item added answers 1 or more.)
const CF_DELETED_FROM: [&str; 2] = [CF_GROWN, CF_DELETED];

/// Items deleted from CF_DELETED before the move (`before:0` to `before:299`).
const DELETED_BEFORE: i64 = 300;

/// CF.INFO as name -> value.
fn cf_info(conn: &mut Conn, key: &str) -> BTreeMap<String, Frame> {
    conn.call(&["CF.INFO", key])
        .items()
        .chunks(2)
        .map(|pair| (pair[0].text(), pair[1].clone()))
        .collect()
}

/// Every chunk CF.SCANDUMP gives for `key`, as (iterator, data), the header first.
fn cf_scandump(conn: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iterator = 0;
    loop {
        let reply = conn.call(&["CF.SCANDUMP", key, &iterator.to_string()]);
        assert!(!reply.is_error(), "CF.SCANDUMP {key} {iterator}: {reply:?}");
        let reply = reply.items();
        iterator = reply[0].int();
        if iterator == 0 {
            return chunks;
        }
        chunks.push((iterator, reply[1].bytes()));
    }
}

/// `CF.ADD key item` for each item, in one pipeline; each must answer 1.
fn cf_add_all(conn: &mut Conn, key: &str, items: &[String]) {
    let commands: Vec<Vec<&str>> = items
        .iter()
        .map(|item| vec!["CF.ADD", key, item.as_str()])
        .collect();
    for (item, reply) in items.iter().zip(common::pipeline(conn, &commands)) {
        assert_eq!(reply, Frame::Int(1), "CF.ADD {key} {item}");
    }
}

/// The four small cuckoo filters, made by the same commands wherever `conn` points (the source,
/// and the reference server).
fn four_cuckoo_filters(conn: &mut Conn) {
    let before = |count| common::names("before", 0, count);
    let reserve = [
        "CF.RESERVE",
        CF_OPTIONS,
        "2000",
        "BUCKETSIZE",
        "4",
        "MAXITERATIONS",
        "50",
        "EXPANSION",
        "2",
    ];
    common::ok(conn, &reserve);
    cf_add_all(conn, CF_OPTIONS, &before(1000));
    // Made by its first CF.ADD with the defaults (1,024 slots a sub-filter, expansion 1), grown
    // to three sub-filters or more by the rest.
    cf_add_all(conn, CF_GROWN, &before(3000));
    common::ok(conn, &["CF.RESERVE", CF_BOUNDED, "1000", "ERROR", "0.001"]);
    cf_add_all(conn, CF_BOUNDED, &before(1000));
    // Room for every add of the test in its one sub-filter: a filter of one sub-filter is never
    // compacted, so its delete counter only grows.
    common::ok(conn, &["CF.RESERVE", CF_DELETED, "100000"]);
    cf_add_all(conn, CF_DELETED, &before(1000));
    for item in before(DELETED_BEFORE as usize) {
        assert_eq!(conn.call(&["CF.DEL", CF_DELETED, &item]), Frame::Int(1));
    }
}

/// Everything a client can see of a cuckoo filter: CF.INFO, CF.DEBUG, DEBUG DIGEST-VALUE and the
/// CF.SCANDUMP chunks.
struct CuckooState {
    info: BTreeMap<String, Frame>,
    debug: Frame,
    digest: Frame,
    chunks: Vec<(i64, Vec<u8>)>,
}

impl CuckooState {
    /// The state of the filter at `key`.
    fn of(conn: &mut Conn, key: &str) -> CuckooState {
        CuckooState {
            info: cf_info(conn, key),
            debug: conn.call(&["CF.DEBUG", key]),
            digest: common::digest(conn, key),
            chunks: cf_scandump(conn, key),
        }
    }

    /// Asserts that `self` (`got`) is `expected`, field by field; chunks are compared without
    /// printing megabytes of them.
    fn assert_is(&self, expected: &CuckooState, what: &str) {
        assert_eq!(self.info, expected.info, "{what}: CF.INFO");
        assert_eq!(self.debug, expected.debug, "{what}: CF.DEBUG");
        assert_eq!(self.digest, expected.digest, "{what}: DEBUG DIGEST-VALUE");
        let shape = |chunks: &[(i64, Vec<u8>)]| -> Vec<(i64, usize)> {
            chunks.iter().map(|(it, data)| (*it, data.len())).collect()
        };
        assert_eq!(
            shape(&self.chunks),
            shape(&expected.chunks),
            "{what}: CF.SCANDUMP chunks (iterator, length)"
        );
        for ((iterator, got), (_, wanted)) in self.chunks.iter().zip(&expected.chunks) {
            let first_difference = got.iter().zip(wanted).position(|(a, b)| a != b);
            assert_eq!(
                first_difference, None,
                "{what}: CF.SCANDUMP chunk {iterator}, its first differing byte"
            );
        }
    }
}

/// CF.MEXISTS (a thousand items a command) and CF.COUNT of each item: the answers, item by item.
fn cf_answers(conn: &mut Conn, key: &str, items: &[String]) -> Vec<(Frame, Frame)> {
    let mut exists = Vec::new();
    for chunk in items.chunks(1000) {
        let mut command = vec!["CF.MEXISTS", key];
        command.extend(chunk.iter().map(String::as_str));
        exists.extend(conn.call(&command).items());
    }
    let counts: Vec<Vec<&str>> = items
        .iter()
        .map(|item| vec!["CF.COUNT", key, item.as_str()])
        .collect();
    exists
        .into_iter()
        .zip(common::pipeline(conn, &counts))
        .collect()
}

/// Asserts that `got` and `expected` answer alike for every item; names the first that does not.
fn assert_same_answers(
    key: &str,
    items: &[String],
    got: &[(Frame, Frame)],
    expected: &[(Frame, Frame)],
) {
    assert_eq!(got.len(), items.len(), "{key}");
    assert_eq!(expected.len(), items.len(), "{key}");
    for ((item, got), expected) in items.iter().zip(got).zip(expected) {
        assert_eq!(got, expected, "{key} {item}: (CF.MEXISTS, CF.COUNT)");
    }
}

/// A write the client made and the server acknowledged: the key, the command (CF.ADD or CF.DEL),
/// the item, the reply, and when.
type CuckooWrite = (&'static str, &'static str, String, i64, Instant);

/// A client that writes to the four small cuckoo filters through a cluster client on `nodes`
/// until `stop`: in each round a CF.ADD of `during:<round>` to each, and every fourth round a
/// CF.DEL from [`CF_DELETED_FROM`] of one of the items added before (`before:999` down to
/// `before:300`, which CF_DELETED still holds); a round a millisecond at most, so that CF_GROWN
/// (32 expansions of 1,024 slots at most) has room for every add however long the move lasts.
/// Each acknowledged write is counted in `progress`. The writes acknowledged, in order, and those
/// refused.
fn cuckoo_writer(
    nodes: Vec<String>,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> (Vec<CuckooWrite>, Vec<String>) {
    let mut conn = patient_connection(nodes);
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        for key in CF_WRITTEN {
            let mut writes = vec![("CF.ADD", format!("during:{round}"))];
            if round % 4 == 3 && CF_DELETED_FROM.contains(&key) {
                writes.push(("CF.DEL", format!("before:{}", 999 - (round / 4) % 700)));
            }
            for (command, item) in writes {
                let reply: redis::RedisResult<i64> =
                    redis::cmd(command).arg(key).arg(&item).query(&mut conn);
                match reply {
                    Ok(reply) => {
                        acknowledged.push((key, command, item, reply, Instant::now()));
                        progress.count(command);
                    }
                    Err(err) => refused.push(format!("{command} {key} {item}: {err}")),
                }
            }
        }
        round += 1;
        sleep(Duration::from_millis(1));
    }
    (acknowledged, refused)
}

/// The sum of the CF.INFO Size of `keys`.
fn cf_sizes(conn: &mut Conn, keys: &[&str]) -> i64 {
    keys.iter()
        .map(|key| cf_info(conn, key)["Size"].int())
        .sum()
}

/// The cuckoo filters after their move, and what the test knows of them.
struct MovedCuckooFilters {
    source: Server,
    target: Server,
    _replica: Server,
    /// A server outside the cluster given the same commands as the four small filters (the
    /// client's writes not yet).
    reference: Server,
    /// CF.INFO of the four small filters before the move.
    before: BTreeMap<&'static str, BTreeMap<String, Frame>>,
    /// The big filter before the move, and its answers for `big_items`.
    big_before: CuckooState,
    big_items: Vec<String>,
    big_answers: Vec<(Frame, Frame)>,
    /// INFO bf on the source before the move (`bf_cf_filters`, `bf_cf_bytes`), and the sum of the
    /// five CF.INFO Size then.
    info_before: (String, String, i64),
    /// The client's acknowledged writes, in order, and those made while the slots moved.
    acknowledged: Vec<CuckooWrite>,
    started: Instant,
    finished: Instant,
}

/// Every cuckoo filter of the test, by key.
const CF_ALL: [&str; 5] = [CF_OPTIONS, CF_GROWN, CF_BOUNDED, CF_DELETED, CF_BIG];

/// Makes the five cuckoo filters on the source (the four small ones on a reference server too),
/// and moves their slots to the target while a client writes to the four.
fn move_cuckoo_filters() -> MovedCuckooFilters {
    let (source, target, replica) = cluster();
    let reference = Server::start();
    let mut expected = reference.conn();
    let mut admin = source.conn();
    four_cuckoo_filters(&mut admin);
    four_cuckoo_filters(&mut expected);
    // 2^25 buckets of 2 slots: 64 MiB.
    common::ok(&mut admin, &["CF.RESERVE", CF_BIG, "67108864"]);
    cf_add_all(&mut admin, CF_BIG, &common::names("before", 0, 1000));
    assert!(cf_info(&mut admin, CF_BIG)["Size"].int() >= 64 << 20);

    // The filters are the kinds they are meant to be, and the same on the reference server.
    let info = cf_info(&mut admin, CF_OPTIONS);
    let options = ["Bucket size", "Max iterations", "Expansion rate"].map(|name| info[name].int());
    assert_eq!(options, [4, 50, 2]);
    assert!(cf_info(&mut admin, CF_GROWN)["Number of filters"].int() >= 3);
    assert_eq!(
        cf_info(&mut admin, CF_BOUNDED)["Error rate"],
        Frame::bulk("0.001")
    );
    let deleted = cf_info(&mut admin, CF_DELETED)["Number of items deleted"].int();
    assert_eq!(deleted, DELETED_BEFORE);
    for key in CF_WRITTEN {
        CuckooState::of(&mut admin, key).assert_is(&CuckooState::of(&mut expected, key), key);
    }
    let before = CF_WRITTEN
        .into_iter()
        .map(|key| (key, cf_info(&mut admin, key)))
        .collect();
    let info_before = (
        source.info_field("bf", "bf_cf_filters"),
        source.info_field("bf", "bf_cf_bytes"),
        cf_sizes(&mut admin, &CF_ALL),
    );
    // The big filter takes no write: it must arrive as it left.
    let mut big_items = common::names("before", 0, 1000);
    big_items.extend(common::names("never", 0, 1000));
    let big_before = CuckooState::of(&mut admin, CF_BIG);
    let big_answers = cf_answers(&mut admin, CF_BIG, &big_items);

    // A client adds to and deletes from the four small filters through the whole move.
    let stop = Arc::new(AtomicBool::new(false));
    let nodes: Vec<String> = [&source, &target]
        .iter()
        .map(|server| format!("redis://127.0.0.1:{}/", server.port))
        .collect();
    let progress = Arc::new(Progress::default());
    let writing = {
        let (stop, progress) = (Arc::clone(&stop), Arc::clone(&progress));
        std::thread::spawn(move || cuckoo_writer(nodes, stop, progress))
    };
    progress.wait_for_more(10, 1, "writes before the move");
    // Eleven adds and two deletes more counted while the move is held: at least ten and one made
    // and acknowledged while the slots moved, which the source forwarded to the target.
    let (started, finished) = migrate(&mut admin, &source, &target, || {
        progress.wait_for_more(11, 2, "writes during the move");
    });
    // Writes go on at the new owner, then stop.
    progress.wait_for_more(10, 1, "writes after the move");
    stop.store(true, Ordering::Relaxed);
    let (acknowledged, refused) = writing.join().unwrap();
    assert!(refused.is_empty(), "writes refused: {refused:?}");
    let during = |command: &str| {
        acknowledged
            .iter()
            .filter(|write| write.1 == command && (started..finished).contains(&write.4))
            .count()
    };
    let (adds, deletes) = (during("CF.ADD"), during("CF.DEL"));
    assert!(
        adds >= 10 && deletes >= 1,
        "{adds} adds and {deletes} deletes during the move"
    );

    // The source has handed every key over.
    wait_for("the source to drop the moved keys", 30, || {
        source.conn().call(&["DBSIZE"]) == Frame::Int(0)
    });
    assert_eq!(target.conn().call(&["DBSIZE"]), Frame::Int(5));
    MovedCuckooFilters {
        source,
        target,
        _replica: replica,
        reference,
        before,
        big_before,
        big_items,
        big_answers,
        info_before,
        acknowledged,
        started,
        finished,
    }
}

#[test]
fn cuckoo_filters_move_with_their_slots_while_a_client_writes_to_them() {
    if !flavor().has_atomic_slot_migration() {
        return; // The server has no MIGRATESLOTS: tested above.
    }
    let moved = move_cuckoo_filters();
    let acknowledged = &moved.acknowledged;
    let mut conn = moved.target.conn();
    let mut expected = moved.reference.conn();

    // The reference server takes each acknowledged write once, in the order the client made them,
    // and answers as the cluster did.
    for (key, command, item, reply, _) in acknowledged {
        assert_eq!(
            expected.call(&[*command, key, item]),
            Frame::Int(*reply),
            "{command} {key} {item} on the reference server"
        );
    }
    let mut items = common::names("before", 0, 3000);
    items.extend(common::names("never", 0, 1000));
    for key in CF_WRITTEN {
        // Every reply that shows the filter is the reference's.
        let state = CuckooState::of(&mut conn, key);
        state.assert_is(&CuckooState::of(&mut expected, key), key);
        // Each acknowledged write counted once: items and deletes are the counts before the move
        // plus the client's.
        let acked = |command: &str| {
            acknowledged
                .iter()
                .filter(|write| write.0 == key && write.1 == command && write.3 == 1)
                .count() as i64
        };
        let inserted =
            moved.before[key]["Number of items inserted"].int() + acked("CF.ADD") - acked("CF.DEL");
        let info = &state.info;
        assert_eq!(
            info["Number of items inserted"],
            Frame::Int(inserted),
            "{key}"
        );
        if key == CF_DELETED {
            let deletes = DELETED_BEFORE + acked("CF.DEL");
            assert_eq!(
                info["Number of items deleted"],
                Frame::Int(deletes),
                "{key}"
            );
        }
        // Every item, added before or during the move or never, answers as on the reference.
        let mut asked = items.clone();
        asked.extend(
            acknowledged
                .iter()
                .filter(|write| write.0 == key && write.1 == "CF.ADD")
                .map(|write| write.2.clone()),
        );
        let got = cf_answers(&mut conn, key, &asked);
        assert_same_answers(key, &asked, &got, &cf_answers(&mut expected, key, &asked));
        // An item added while the slot moved counts as on the reference server, which took it
        // once: where nothing is deleted, once or more (a twin of its fingerprint in its buckets
        // counts too).
        let added_during = acknowledged.iter().filter(|write| {
            write.0 == key
                && write.1 == "CF.ADD"
                && (moved.started..moved.finished).contains(&write.4)
        });
        for (_, _, item, _, _) in added_during {
            let count = conn.call(&["CF.COUNT", key, item]).int();
            let once = expected.call(&["CF.COUNT", key, item]).int();
            assert_eq!(count, once, "CF.COUNT {key} {item}");
            if !CF_DELETED_FROM.contains(&key) {
                assert!(count >= 1, "CF.COUNT {key} {item}: {count}");
            }
        }
    }
    // The big filter arrived as it left.
    CuckooState::of(&mut conn, CF_BIG).assert_is(&moved.big_before, CF_BIG);
    let got = cf_answers(&mut conn, CF_BIG, &moved.big_items);
    assert_same_answers(CF_BIG, &moved.big_items, &got, &moved.big_answers);
}

#[test]
fn info_bf_counts_moved_cuckoo_filters_on_their_new_owner_only() {
    if !flavor().has_atomic_slot_migration() {
        return; // The server has no MIGRATESLOTS: tested above.
    }
    let moved = move_cuckoo_filters();
    let (filters, bytes, sizes) = &moved.info_before;
    assert_eq!(
        (filters.as_str(), bytes.clone()),
        ("5", sizes.to_string()),
        "source (bf_cf_filters, bf_cf_bytes) before the move, against the sum of CF.INFO Size"
    );
    // None on the source once it has freed them (maybe on its lazy-free thread); all five on the
    // target, their bytes the sum of their Size.
    let source = &moved.source;
    wait_for("the source to free the moved filters", 30, || {
        source.info_field("bf", "bf_cf_filters") == "0"
    });
    assert_eq!(
        source.info_field("bf", "bf_cf_bytes"),
        "0",
        "source bf_cf_bytes"
    );
    let target = &moved.target;
    assert_eq!(target.info_field("bf", "bf_cf_filters"), "5");
    let sizes = cf_sizes(&mut target.conn(), &CF_ALL);
    assert_eq!(
        target.info_field("bf", "bf_cf_bytes"),
        sizes.to_string(),
        "target bf_cf_bytes, against the sum of the five CF.INFO Size"
    );
}
