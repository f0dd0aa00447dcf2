//! The etcd client (`liza::blackboard::etcd`) against a real etcd 3.4.23 — the brick the
//! etcd store is built on (specs/shared-store.md): compare-and-swap txns under 16 writers, leases that
//! expire, and a watch that survives `kill -9` of etcd without missing or repeating a
//! change.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use liza::blackboard::etcd::{
    Change, Client, Condition, EtcdError, Event, TxnOutcome, WatchItem, prefix_end,
};

use crate::common::etcd::{Etcd, available};

const TIMEOUT: Duration = Duration::from_secs(5);

fn client(etcd: &Etcd) -> Client {
    Client::new(&[etcd.endpoint()], TIMEOUT).unwrap()
}

/// A started etcd and a client of it; `None` (the test skips) where etcd is not installed.
fn started() -> Option<(Etcd, Client)> {
    if !available() {
        return None;
    }
    let etcd = Etcd::start();
    let c = client(&etcd);
    Some((etcd, c))
}

fn put(key: &str, value: &str) -> Change {
    Change::Put {
        key: key.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
        lease: 0,
    }
}

/// Polls `done` every 50 ms for at most `limit` (a bound against hangs, not a timing
/// assertion).
fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[test]
fn keys_and_values_round_trip_byte_for_byte_and_prefix_ranges_come_back_in_key_order() {
    let Some((_etcd, c)) = started() else {
        return;
    };
    let binary: Vec<u8> = (0u8..=255).collect();
    c.put(b"p/tasks/t-2", &binary, 0).unwrap();
    c.put(b"p/tasks/t-1", b"", 0).unwrap();
    c.put(b"p/head", b"{}", 0).unwrap();
    c.put(b"q/other", b"x", 0).unwrap();
    let (kvs, revision) = c.range(b"p/tasks/", &prefix_end(b"p/tasks/"), 0).unwrap();
    let keys: Vec<&[u8]> = kvs.iter().map(|kv| kv.key.as_slice()).collect();
    assert_eq!(keys, [&b"p/tasks/t-1"[..], b"p/tasks/t-2"]);
    assert_eq!(kvs[0].value, b"");
    assert_eq!(kvs[1].value, binary);
    assert!(revision >= 5, "{revision}");
    assert_eq!(c.get(b"p/none").unwrap(), None);
    assert_eq!(prefix_end(b"a\xff"), b"b");
}

#[test]
fn a_txn_applies_only_while_every_key_it_read_is_unchanged() {
    let Some((_etcd, c)) = started() else {
        return;
    };
    // Create only if absent (mod revision 0).
    let created = c
        .txn(
            &[Condition::ModRevision(b"k".to_vec(), 0)],
            &[put("k", "1")],
        )
        .unwrap();
    let TxnOutcome::Applied { revision } = created else {
        panic!("{created:?}");
    };
    let again = c
        .txn(
            &[Condition::ModRevision(b"k".to_vec(), 0)],
            &[put("k", "2")],
        )
        .unwrap();
    assert!(matches!(again, TxnOutcome::Conflict { .. }), "{again:?}");
    // Two keys read (k at `revision`, other at `read`): k becomes 3, other goes.
    let move_both = |read: i64| {
        c.txn(
            &[
                Condition::ModRevision(b"k".to_vec(), revision),
                Condition::ModRevision(b"other".to_vec(), read),
            ],
            &[put("k", "3"), Change::Delete(b"other".to_vec())],
        )
        .unwrap()
    };
    // One of them changed meanwhile: nothing applies.
    c.put(b"other", b"a", 0).unwrap();
    let other = c.get(b"other").unwrap().unwrap();
    c.put(b"other", b"b", 0).unwrap();
    let stale = move_both(other.mod_revision);
    assert!(matches!(stale, TxnOutcome::Conflict { .. }), "{stale:?}");
    assert_eq!(c.get(b"k").unwrap().unwrap().value, b"1");
    assert_eq!(c.get(b"other").unwrap().unwrap().value, b"b");
    // With the revisions as they are, both changes land at one revision.
    let applied = move_both(c.get(b"other").unwrap().unwrap().mod_revision);
    let TxnOutcome::Applied { revision: at } = applied else {
        panic!("{applied:?}");
    };
    let k = c.get(b"k").unwrap().unwrap();
    assert_eq!((k.value.as_slice(), k.mod_revision), (&b"3"[..], at));
    assert_eq!(c.get(b"other").unwrap(), None);
}

#[test]
fn one_compare_guards_everything_read_under_a_prefix() {
    let Some((_etcd, c)) = started() else {
        return;
    };
    c.put(b"p/head", b"h1", 0).unwrap();
    c.put(b"p/task/t-1", b"a", 0).unwrap();
    let (_, read_at) = c.range(b"p/", &prefix_end(b"p/"), 0).unwrap();
    let guard = |revision| Condition::UnchangedSince {
        key: b"p/".to_vec(),
        range_end: prefix_end(b"p/"),
        revision,
    };
    // A change outside the prefix does not matter.
    c.put(b"q/elsewhere", b"x", 0).unwrap();
    let first = c.txn(&[guard(read_at)], &[put("p/head", "h2")]).unwrap();
    let TxnOutcome::Applied { revision: written } = first else {
        panic!("{first:?}");
    };
    // A second writer that read at the same revision: any key under the prefix changed
    // since (here the head) refuses it.
    let second = c.txn(&[guard(read_at)], &[put("p/task/t-1", "b")]).unwrap();
    assert!(matches!(second, TxnOutcome::Conflict { .. }), "{second:?}");
    assert_eq!(c.get(b"p/task/t-1").unwrap().unwrap().value, b"a");
    // Read again: it applies.
    let again = c.txn(&[guard(written)], &[put("p/task/t-1", "b")]).unwrap();
    assert!(matches!(again, TxnOutcome::Applied { .. }), "{again:?}");
}

#[test]
fn sixteen_writers_with_revision_compare_and_swap_lose_no_update() {
    if !available() {
        return;
    }
    let etcd = Etcd::start();
    let c = Arc::new(client(&etcd));
    c.put(b"counter", b"0", 0).unwrap();
    let writers: Vec<_> = (0..16)
        .map(|_| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                let mut conflicts = 0;
                for _ in 0..25 {
                    loop {
                        let kv = c.get(b"counter").unwrap().unwrap();
                        let n: u64 = std::str::from_utf8(&kv.value).unwrap().parse().unwrap();
                        let next = (n + 1).to_string();
                        match c
                            .txn(
                                &[Condition::ModRevision(b"counter".to_vec(), kv.mod_revision)],
                                &[put("counter", &next)],
                            )
                            .unwrap()
                        {
                            TxnOutcome::Applied { .. } => break,
                            TxnOutcome::Conflict { .. } => conflicts += 1,
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let counter = c.get(b"counter").unwrap().unwrap();
    assert_eq!(counter.value, b"400");
    // One revision per applied txn: exactly 400 after the first put.
    assert_eq!(counter.version, 401);
    eprintln!("16 writers × 25: {conflicts} conflicts retried");
}

#[test]
fn a_lease_not_kept_alive_takes_its_keys_with_it_and_a_revoked_one_at_once() {
    let Some((_etcd, c)) = started() else {
        return;
    };
    let lease = c.grant_lease(2).unwrap();
    c.put(b"agents/coder-1", b"alive", lease).unwrap();
    assert_eq!(c.get(b"agents/coder-1").unwrap().unwrap().lease, lease);
    // Kept alive for longer than its TTL, it stays.
    let kept_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < kept_until {
        assert!(c.keep_alive(lease).unwrap().is_some());
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(c.get(b"agents/coder-1").unwrap().is_some());
    // Left alone, it expires and its key goes.
    assert!(eventually(Duration::from_secs(15), || {
        c.get(b"agents/coder-1").unwrap().is_none()
    }));
    assert_eq!(c.keep_alive(lease).unwrap(), None);
    let other = c.grant_lease(60).unwrap();
    c.put(b"agents/coder-2", b"alive", other).unwrap();
    c.revoke_lease(other).unwrap();
    assert_eq!(c.get(b"agents/coder-2").unwrap(), None);
    c.revoke_lease(other).unwrap();
}

fn collect_until(
    watch: &liza::blackboard::etcd::Watch,
    last_key: &[u8],
    limit: Duration,
) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match watch.recv_timeout(Duration::from_millis(200)) {
            Some(WatchItem::Events(events)) => {
                let done = events.iter().any(|e| match e {
                    Event::Put(kv) => kv.key == last_key,
                    Event::Delete { key, .. } => key == last_key,
                });
                seen.extend(events);
                if done {
                    return seen;
                }
            }
            Some(other) => panic!("{other:?}"),
            None => {}
        }
    }
    panic!("the watch never delivered {last_key:?}; it delivered {seen:?}");
}

#[test]
fn a_watch_resumes_after_etcd_is_killed_and_restarted_without_missing_or_repeating_a_change() {
    let Some((mut etcd, c)) = started() else {
        return;
    };
    let start = c.put(b"p/a", b"1", 0).unwrap();
    let watch = c.watch(b"p/", &prefix_end(b"p/"), start);
    c.put(b"p/b", b"2", 0).unwrap();
    c.put(b"other/x", b"not watched", 0).unwrap();
    let before = collect_until(&watch, b"p/b", Duration::from_secs(20));
    etcd.kill();
    etcd.restart();
    // Changes made while the watch reconnects, and after.
    c.put(b"p/c", b"3", 0).unwrap();
    c.txn(&[], &[Change::Delete(b"p/a".to_vec())]).unwrap();
    c.put(b"p/d", b"4", 0).unwrap();
    let after = collect_until(&watch, b"p/d", Duration::from_secs(30));
    let all: Vec<Event> = before.into_iter().chain(after).collect();
    let described: Vec<String> = all
        .iter()
        .map(|e| match e {
            Event::Put(kv) => format!("put {}", String::from_utf8_lossy(&kv.key)),
            Event::Delete { key, .. } => format!("delete {}", String::from_utf8_lossy(key)),
        })
        .collect();
    assert_eq!(
        described,
        ["put p/a", "put p/b", "put p/c", "delete p/a", "put p/d"]
    );
    let revisions: Vec<i64> = all.iter().map(Event::revision).collect();
    let distinct: BTreeSet<i64> = revisions.iter().copied().collect();
    assert_eq!(distinct.len(), revisions.len(), "{revisions:?}");
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
}

#[test]
fn a_watch_from_a_compacted_revision_says_so_and_ends() {
    let Some((_etcd, c)) = started() else {
        return;
    };
    let first = c.put(b"p/a", b"1", 0).unwrap();
    let last = c.put(b"p/a", b"2", 0).unwrap();
    c.compact(last).unwrap();
    let watch = c.watch(b"p/", &prefix_end(b"p/"), first);
    let item = watch.recv_timeout(Duration::from_secs(20));
    assert_eq!(
        item,
        Some(WatchItem::Compacted {
            compact_revision: last
        })
    );
    let read_old = c.range(b"p/a", &[], first).unwrap_err();
    assert!(read_old.is_compacted(), "{read_old}");
}

#[test]
fn errors_say_what_went_wrong_and_a_dead_endpoint_hands_over_to_the_next() {
    if !available() {
        return;
    }
    let etcd = Etcd::start();
    // Nothing listens on a port just released.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let nowhere = Client::new(std::slice::from_ref(&dead), TIMEOUT).unwrap();
    let err = nowhere.get(b"k").unwrap_err();
    assert!(matches!(err, EtcdError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&dead), "{err}");
    // A dead endpoint first: the live one answers.
    let both = Client::new(&[dead, etcd.endpoint()], TIMEOUT).unwrap();
    both.put(b"k", b"v", 0).unwrap();
    assert_eq!(both.get(b"k").unwrap().unwrap().value, b"v");
    // Over etcd's request limit (1.5 MiB): refused by etcd (code 3); over gRPC's message
    // limit (2 MiB), by etcd's gRPC server (code 8). Both are a refusal, never a
    // partial write.
    for (size, expected_code) in [(1_600_000, 3), (3 * 1024 * 1024, 8)] {
        let err = both.put(b"big", &vec![b'x'; size], 0).unwrap_err();
        match &err {
            EtcdError::Refused { code, message } => {
                eprintln!("{size} bytes: code {code}: {message}");
                assert_eq!(*code, expected_code, "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(both.get(b"big").unwrap(), None);
}

/// A proxy in front of `upstream` that passes requests on at once and holds each answer
/// back for `delay`: a member that applies a change and answers too late.
fn slow_proxy(upstream: String, delay: Duration) -> String {
    proxy(upstream, delay).0
}

/// A proxy in front of `upstream` that holds each answer back for `delay` (none: zero),
/// and counts the connections made through it.
fn proxy(upstream: String, delay: Duration) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                continue;
            };
            let (mut client_in, mut server_out) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut client_in, &mut server_out);
            });
            let (mut server_in, mut client_out) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = server_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    std::thread::sleep(delay);
                    if client_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    (address, count)
}

#[test]
fn a_change_whose_answer_never_came_is_not_sent_to_another_member() {
    if !available() {
        return;
    }
    let etcd = Etcd::start();
    let direct = client(&etcd);
    let late = slow_proxy(etcd.endpoint(), Duration::from_millis(1500));
    let c = Client::new(&[late, etcd.endpoint()], Duration::from_millis(500)).unwrap();
    let outcome = c.txn(
        &[Condition::ModRevision(b"k".to_vec(), 0)],
        &[put("k", "mine")],
    );
    // Applied by the first member, unanswered in time: the client says it does not know,
    // rather than sending it again (which would come back as a conflict with itself).
    assert!(
        matches!(outcome, Err(EtcdError::Indeterminate { .. })),
        "{outcome:?}"
    );
    assert!(eventually(Duration::from_secs(10), || direct
        .get(b"k")
        .unwrap()
        .is_some()));
    let k = direct.get(b"k").unwrap().unwrap();
    assert_eq!((k.value.as_slice(), k.version), (&b"mine"[..], 1));
    // Reads are safe to send again: the same client reads through the other member.
    assert_eq!(c.get(b"k").unwrap().unwrap().value, b"mine");
}

/// A process that will call etcd connects ahead (`warm`), while it does its other work;
/// a call made while that connection is being made waits for it rather than make a
/// second one.
#[test]
fn a_connection_made_ahead_is_the_one_the_first_call_uses() {
    let Some((etcd, _)) = started() else { return };
    let connections =
        |c: &std::sync::atomic::AtomicUsize| c.load(std::sync::atomic::Ordering::SeqCst);
    let (through, count) = proxy(etcd.endpoint(), Duration::ZERO);
    let c = Client::new(std::slice::from_ref(&through), TIMEOUT).unwrap();
    assert_eq!(connections(&count), 0, "nothing is sent by making a client");
    c.warm();
    assert!(
        eventually(Duration::from_secs(10), || connections(&count) == 1),
        "warm made no connection"
    );
    c.put(b"k", b"v", 0).unwrap();
    assert_eq!(c.get(b"k").unwrap().unwrap().value, b"v");
    assert_eq!(connections(&count), 1);
    // A call right behind the warm-up, many times over: one connection each.
    for round in 0..20 {
        let (through, count) = proxy(etcd.endpoint(), Duration::ZERO);
        let c = Client::new(std::slice::from_ref(&through), TIMEOUT).unwrap();
        c.warm();
        assert_eq!(c.get(b"k").unwrap().unwrap().value, b"v");
        assert_eq!(connections(&count), 1, "round {round}");
    }
}

/// A member speaking HTTP/2 that resets every call's stream with REFUSED_STREAM — as a
/// gRPC server does when it takes no more streams — before processing any of it.
fn refusing_member() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut connection) = h2::server::handshake(socket).await else {
                        return;
                    };
                    while let Some(Ok((_, mut respond))) = connection.accept().await {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                    }
                });
            }
        });
    });
    address
}

/// A change whose stream a member refused was never applied there: it goes to the next
/// member (were it taken for unanswered, the client could not say whether it applied).
#[test]
fn a_change_a_member_refused_unprocessed_goes_to_the_next_member() {
    let Some((etcd, direct)) = started() else {
        return;
    };
    let refusing = refusing_member();
    let c = Client::new(&[refusing.clone(), etcd.endpoint()], TIMEOUT).unwrap();
    let outcome = c.txn(
        &[Condition::ModRevision(b"k".to_vec(), 0)],
        &[put("k", "mine")],
    );
    assert!(
        matches!(outcome, Ok(TxnOutcome::Applied { .. })),
        "{outcome:?}"
    );
    let k = direct.get(b"k").unwrap().unwrap();
    assert_eq!((k.value.as_slice(), k.version), (&b"mine"[..], 1));
    // Refused by the only member: a refusal saying so, not an unknown outcome.
    let alone = Client::new(std::slice::from_ref(&refusing), TIMEOUT).unwrap();
    let err = alone.put(b"k", b"again", 0).unwrap_err();
    assert!(matches!(err, EtcdError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("refused"), "{err}");
    assert_eq!(direct.get(b"k").unwrap().unwrap().value, b"mine");
}
