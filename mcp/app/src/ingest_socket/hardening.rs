//! Issue 20's scenarios against the ingest socket: a long database path, a socket linked
//! to another database's, a stalled producer, a daemon gone mid-transfer, a removed socket
//! file at shutdown.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use super::*;

/// A new database in `dir`, held by this process.
pub(super) fn open(dir: &Path) -> Store {
    Store::open(
        dir,
        strata_store::OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap()
}

fn edges(dir: &Path, name: &str, text: &str) -> (PathBuf, DumpSpec) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let spec = DumpSpec {
        label: name.to_owned(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    (path, spec)
}

#[test]
fn issue20_socket_long_database_path() {
    let root = tempfile::tempdir().unwrap();
    let mut db = root.path().to_owned();
    while db.join(SOCKET_FILE).as_os_str().len() < 160 {
        db.push("a-rather-long-directory-name");
    }
    std::fs::create_dir_all(&db).unwrap();
    let store = open(&db);
    let listener = IngestListener::bind(store.clone()).unwrap();
    assert!(socket_path(&db).exists());
    assert!(server_listens(&db));
    let file = edges(root.path(), "x.edges.tsv", "a\tIMPORTS\tb\n");
    let s = send_batch(&db, &BatchOptions::default(), &[file]).unwrap();
    assert_eq!(s.new, 1);
    assert_eq!(store.snapshot().unwrap().seq(), s.seq);
    drop(listener);
    assert!(!socket_path(&db).exists());
}

#[test]
fn issue20_socket_linked_to_another_database() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let store_b = open(b.path());
    let _listener = IngestListener::bind(store_b.clone()).unwrap();
    let before = store_b.snapshot().unwrap().seq();
    std::os::unix::fs::symlink(socket_path(b.path()), socket_path(a.path())).unwrap();
    let file = edges(a.path(), "x.edges.tsv", "a\tIMPORTS\tb\n");
    let e = send_batch(a.path(), &BatchOptions::default(), &[file]).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, SendError::Refused(_)), "{m}");
    assert!(m.contains("belongs to the server of"), "{m}");
    assert!(m.contains(&b.path().display().to_string()), "{m}");
    assert_eq!(store_b.snapshot().unwrap().seq(), before);
}

#[test]
fn issue20_socket_stalled_producer() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let options = ListenerOptions {
        idle_timeout: Duration::from_secs(2),
        ..ListenerOptions::default()
    };
    let _listener = IngestListener::bind_with(store.clone(), options).unwrap();
    // A producer that sends its header and half a frame, then nothing.
    let mut slow = UnixStream::connect(socket_path(dir.path())).unwrap();
    let spec = edges(dir.path(), "slow.edges.tsv", "").1;
    let header = Header::new(
        DatabaseId::of(dir.path()).unwrap(),
        &BatchOptions::default(),
        &[spec],
    );
    let mut line = serde_json::to_vec(&header).unwrap();
    line.push(b'\n');
    slow.write_all(&line).unwrap();
    slow.write_all(&100u64.to_le_bytes()).unwrap();
    slow.write_all(b"a\tIMPORTS\t").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // Another batch is not held up by it.
    let started = Instant::now();
    let file = edges(dir.path(), "x.edges.tsv", "a\tIMPORTS\tb\n");
    let s = send_batch(dir.path(), &BatchOptions::default(), &[file]).unwrap();
    assert_eq!(s.new, 1);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The stalled one is dropped with a message naming the limit.
    let mut answer = String::new();
    BufReader::new(slow).read_line(&mut answer).unwrap();
    assert!(
        answer.contains("no bytes from the client for 2 s"),
        "{answer}"
    );
    assert!(
        answer.contains("nothing of the batch was stored"),
        "{answer}"
    );
    assert_eq!(store.snapshot().unwrap().seq(), s.seq);
}

#[test]
fn issue_30_slow_loris_clients_lose_their_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // No byte ever waits long enough for the idle timeout: only the frame deadline ends
    // these clients.
    let options = ListenerOptions {
        idle_timeout: Duration::from_secs(30),
        frame_timeout: Duration::from_millis(300),
        ..ListenerOptions::default()
    };
    let _listener = IngestListener::bind_with(store.clone(), options).unwrap();
    let spec = edges(dir.path(), "slow.edges.tsv", "").1;
    let header = Header::new(
        DatabaseId::of(dir.path()).unwrap(),
        &BatchOptions::default(),
        &[spec],
    );
    let mut line = serde_json::to_vec(&header).unwrap();
    line.push(b'\n');
    // Every slot taken by a client trickling a byte every 20 ms, half of them inside their
    // header line, half inside a frame.
    let slow: Vec<_> = (0..MAX_CONNECTIONS)
        .map(|i| {
            let conn = UnixStream::connect(socket_path(dir.path())).unwrap();
            let mut w = conn.try_clone().unwrap();
            let line = line.clone();
            let stop = Arc::new(AtomicBool::new(false));
            let trickle = {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut bytes: Vec<u8> = if i % 2 == 0 {
                        line
                    } else {
                        let _ = w.write_all(&line);
                        let _ = w.write_all(&1_000u64.to_le_bytes());
                        b"a\tIMPORTS\tb\n".repeat(100)
                    };
                    bytes.reverse();
                    while let Some(b) = bytes.pop() {
                        if stop.load(Ordering::SeqCst) || w.write_all(&[b]).is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            };
            (conn, stop, trickle, i)
        })
        .collect();
    for (conn, stop, trickle, i) in slow {
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut answer = String::new();
        BufReader::new(conn).read_line(&mut answer).unwrap();
        stop.store(true, Ordering::SeqCst);
        trickle.join().unwrap();
        let what = if i % 2 == 0 {
            "the request's header: "
        } else {
            "slow.edges.tsv: "
        };
        assert!(answer.contains(what), "{answer}");
        assert!(answer.contains("the client was too slow"), "{answer}");
        assert!(
            answer.contains("0.3 s (the server's frame deadline)"),
            "{answer}"
        );
        assert!(
            answer.contains("nothing of the batch was stored"),
            "{answer}"
        );
    }
    // Their slots are free: a batch is taken and committed.
    let file = edges(dir.path(), "x.edges.tsv", "a\tIMPORTS\tb\n");
    let s = send_batch(dir.path(), &BatchOptions::default(), &[file]).unwrap();
    assert_eq!(s.new, 1);
    assert_eq!(store.snapshot().unwrap().seq(), s.seq);
}

/// A fake daemon on `dir`'s socket that reads the header line, answers `lines`, and
/// closes the connection.
fn fake_daemon(dir: &Path, lines: &'static str) -> JoinHandle<()> {
    let listener = UnixListener::bind(socket_path(dir)).unwrap();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut w = conn.try_clone().unwrap();
        let mut r = BufReader::new(conn);
        read_line(&mut r, MAX_HEADER_BYTES, DEFAULT_FRAME_TIMEOUT).unwrap();
        w.write_all(lines.as_bytes()).unwrap();
        // Ends without an answer, as a killed daemon does.
        drop(r);
    })
}

#[test]
fn issue20_socket_server_gone_mid_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let big = "a\tIMPORTS\tb\n".repeat(200_000);
    let file = edges(dir.path(), "x.edges.tsv", &big);
    // Gone while receiving: not stored.
    let fake = fake_daemon(dir.path(), "");
    let e = send_batch(
        dir.path(),
        &BatchOptions::default(),
        std::slice::from_ref(&file),
    )
    .unwrap_err();
    fake.join().unwrap();
    assert!(matches!(e, SendError::NotStored { .. }), "{e}");
    assert!(
        e.to_string().contains("nothing of the batch was stored"),
        "{e}"
    );
    std::fs::remove_file(socket_path(dir.path())).unwrap();
    // Gone after it said the commit began: may have landed, and which batch id to check.
    let small = edges(dir.path(), "y.edges.tsv", "a\tIMPORTS\tb\n");
    let fake = fake_daemon(dir.path(), "\"committing\"\n");
    let options = BatchOptions {
        batch_id: Some("b-7".to_owned()),
        ..Default::default()
    };
    let e = send_batch(dir.path(), &options, &[small]).unwrap_err();
    fake.join().unwrap();
    let m = e.to_string();
    assert!(matches!(e, SendError::MayHaveLanded { .. }), "{m}");
    assert!(
        m.contains("may have") && m.contains("landed") && m.contains("\"b-7\""),
        "{m}"
    );
}

#[test]
fn issue20_listener_stops_without_its_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let listener = IngestListener::bind(store).unwrap();
    std::fs::remove_file(socket_path(dir.path())).unwrap();
    let started = Instant::now();
    drop(listener);
    assert!(started.elapsed() < Duration::from_secs(2));
    // The database is released: it opens again in this process.
    drop(open(dir.path()));
}
