use std::time::Duration;

use iowatt_metrics::Handle;
use iowatt_replay::{Config, ErrorKind, Output, Plan, Replay, ReplayError, Status};

use crate::server::Server;

const WAIT: Duration = Duration::from_secs(60);

/// GET requests of `paths`, request i due `due_ms[i]` after the start, all from client 0.
fn plan(paths: &[&str], due_ms: &[u64]) -> Plan {
    let mut p = Plan {
        methods: vec!["GET".into()],
        target_offsets: vec![0],
        ..Plan::default()
    };
    for (path, &due) in paths.iter().zip(due_ms) {
        p.due_ns.push(due * 1_000_000);
        p.method.push(0);
        p.client.push(0);
        p.target_data.extend_from_slice(path.as_bytes());
        p.target_offsets.push(p.target_data.len());
    }
    p
}

fn config(server: &Server) -> Config {
    Config {
        target: server.url.clone(),
        ..Config::default()
    }
}

fn replay(plan: Plan, config: Config) -> Output {
    let handle = Handle::new(Replay::new(plan, config).unwrap());
    assert!(handle.start());
    assert!(handle.wait(WAIT), "the replay did not end");
    handle
        .with_outcome(|o| match o {
            Ok(out) => Output {
                records: out.records.clone(),
                histograms: Default::default(),
                t0_ns: out.t0_ns,
                status: out.status,
                elapsed_ns: out.elapsed_ns,
            },
            Err(e) => panic!("{e}"),
        })
        .unwrap()
}

#[test]
fn every_request_goes_out_in_order_never_before_it_is_due_and_is_timed_through() {
    let server = Server::start();
    let n = 200;
    let paths: Vec<String> = (0..n).map(|i| format!("/f{i}?bytes={}", 10 + i)).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let due: Vec<u64> = (0..n as u64).map(|i| i * 2).collect();
    let out = replay(plan(&paths, &due), config(&server));
    assert_eq!(out.status, Status::Complete);
    let r = &out.records;
    for i in 0..n {
        assert_eq!(
            (r.status[i], r.error[i]),
            (200, ErrorKind::None as u8),
            "request {i}"
        );
        assert!(
            r.sent[i] >= r.due[i],
            "request {i} left {} ns early",
            r.due[i] - r.sent[i]
        );
        assert!(r.connected[i] >= r.sent[i] && r.first_byte[i] >= r.connected[i]);
        assert!(r.done[i] >= r.first_byte[i]);
        assert_eq!(r.bytes[i], 10 + i as u64);
    }
    assert!(r.sent.windows(2).all(|w| w[0] <= w[1]), "sent out of order");
    // Its threads may take two requests sent 2 ms apart in either order.
    let mut seen = server.seen(|s| s.paths.clone());
    seen.sort_by_key(|p| paths.iter().position(|q| q == p));
    assert_eq!(seen, paths, "the server saw every request once");
    assert_eq!(
        server.seen(|s| s.connections),
        n,
        "one connection per request"
    );
}

#[test]
fn a_stalled_response_does_not_hold_back_the_requests_due_after_it() {
    // /after/6 answers only once the server has received six requests: a closed-loop client
    // (waiting for each answer before the next) never gets there.
    let server = Server::start();
    let paths = ["/after/6", "/a", "/b", "/c", "/d", "/e"];
    let out = replay(plan(&paths, &[0, 5, 10, 15, 20, 25]), config(&server));
    let r = &out.records;
    assert!(
        r.error.iter().all(|&e| e == ErrorKind::None as u8),
        "{:?}",
        r.error
    );
    for i in 1..6 {
        assert!(
            r.sent[i] < r.first_byte[0],
            "request {i} waited for the stalled one"
        );
    }
    // Latency from the due time includes the stall for the stalled request only.
    assert!(r.first_byte[0] - r.due[0] >= r.sent[5] - r.due[0]);
}

#[test]
fn at_the_connection_cap_requests_queue_in_order_and_stay_timed_from_their_due_time() {
    let server = Server::start();
    let paths = ["/hold", "/hold", "/a", "/b", "/c"];
    let handle = Replay::new(
        plan(&paths, &[0, 0, 1, 2, 3]),
        Config {
            max_conns: Some(2),
            ..config(&server)
        },
    )
    .map(Handle::new)
    .unwrap();
    handle.start();
    // The two held requests fill the cap; the other three wait for a slot.
    while server.seen(|s| s.requests) < 2 {
        assert!(!handle.wait(Duration::from_millis(5)));
    }
    let waiting = handle.progress().snapshot();
    server.release();
    assert!(handle.wait(WAIT));
    let out = handle
        .with_outcome(|o| o.as_ref().unwrap().records.clone())
        .unwrap();
    assert_eq!(waiting.issued, 2, "requests beyond the cap were sent");
    assert_eq!(server.seen(|s| s.max_open), 2);
    assert!(
        out.status.iter().all(|&s| s == 200),
        "nothing dropped: {:?}",
        out.status
    );
    for i in 2..5 {
        assert!(
            out.sent[i] >= out.first_byte[0].min(out.first_byte[1]),
            "{i} did not wait"
        );
        assert!(out.first_byte[i] - out.due[i] > out.first_byte[i] - out.sent[i]);
    }
}

#[test]
fn errors_are_told_apart_and_the_rest_of_the_trace_goes_on() {
    let server = Server::start();
    let paths = ["/missing", "/reset", "/hang", "/ok"];
    let out = replay(
        plan(&paths, &[0, 1, 2, 3]),
        Config {
            timeout: Duration::from_millis(300),
            ..config(&server)
        },
    );
    let r = &out.records;
    let kinds: Vec<u8> = r.error.clone();
    assert_eq!(
        kinds,
        [
            ErrorKind::None,
            ErrorKind::Reset,
            ErrorKind::Timeout,
            ErrorKind::None
        ]
        .map(|k| k as u8)
    );
    assert_eq!((r.status[0], r.status[3]), (404, 200));
    assert!(
        r.done[2] - r.sent[2] >= 300_000_000,
        "the timeout ended it: {}",
        r.done[2] - r.sent[2]
    );
    assert!(r.done[1] >= r.sent[1] && r.first_byte[1] == -1 && r.first_byte[2] == -1);
}

#[test]
fn keep_alive_reuses_one_connection_per_client_and_sends_the_host_header() {
    let server = Server::start();
    let mut p = plan(&["/a", "/b", "/c", "/d"], &[0, 30, 60, 90]);
    p.client = vec![7, 7, 8, 7];
    let out = replay(
        p,
        Config {
            keep_alive: true,
            host: Some("www.example.org".into()),
            ..config(&server)
        },
    );
    assert!(out.records.status.iter().all(|&s| s == 200));
    assert_eq!(
        server.seen(|s| s.connections),
        2,
        "one connection per client"
    );
    assert_eq!(
        out.records.connected[1], -1,
        "the second request reused the first's"
    );
    assert!(server.seen(|s| s.hosts.iter().all(|h| h == "www.example.org")));
}

#[test]
fn a_cancelled_replay_keeps_what_completed_and_marks_what_never_left() {
    let server = Server::start();
    let handle =
        Handle::new(Replay::new(plan(&["/a", "/b"], &[0, 600_000]), config(&server)).unwrap());
    handle.start();
    while handle.progress().snapshot().completed < 1 {
        assert!(!handle.wait(Duration::from_millis(5)));
    }
    handle.cancel();
    assert!(handle.wait(WAIT));
    handle.with_outcome(|o| {
        let out = o.as_ref().unwrap();
        assert_eq!(out.status, Status::Cancelled);
        assert_eq!(out.records.status[0], 200);
        assert_eq!(out.records.error[1], ErrorKind::NotSent as u8);
    });
}

#[test]
fn a_target_that_refuses_connections_is_named_before_anything_is_sent() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let handle = Replay::new(
        plan(&["/a"], &[0]),
        Config {
            target: format!("http://127.0.0.1:{port}"),
            ..Config::default()
        },
    )
    .map(Handle::new)
    .unwrap();
    handle.start();
    assert!(handle.wait(WAIT));
    handle.with_outcome(|o| match o {
        Err(ReplayError::Unreachable { addr, .. }) => {
            assert_eq!(addr, &format!("127.0.0.1:{port}"))
        }
        other => panic!("{other:?}"),
    });
}

#[test]
fn histograms_cover_the_window_only() {
    let server = Server::start();
    let paths = ["/a", "/b", "/c", "/d"];
    let handle = Replay::new(
        plan(&paths, &[0, 1, 2, 3]),
        Config {
            window: (1, 3),
            ..config(&server)
        },
    )
    .map(Handle::new)
    .unwrap();
    handle.start();
    assert!(handle.wait(WAIT));
    handle.with_outcome(|o| {
        let h = &o.as_ref().unwrap().histograms;
        assert!(h.all().iter().all(|h| h.count() == 2));
        assert!(h.ttfb.max() >= h.ttfb_sent.min());
    });
}

#[test]
fn plans_that_do_not_hold_together_are_refused() {
    let mut p = plan(&["/a", "/b"], &[5, 1]);
    let e = Replay::new(
        p,
        Config {
            target: "http://127.0.0.1:1".into(),
            ..Config::default()
        },
    );
    assert!(e.err().unwrap().to_string().contains("due before"));
    p = plan(&["/a"], &[0]);
    p.methods = vec!["GE T".into()];
    let e = Replay::new(
        p,
        Config {
            target: "http://127.0.0.1:1".into(),
            ..Config::default()
        },
    );
    assert!(e.err().unwrap().to_string().contains("not an HTTP method"));
}

#[test]
fn a_scrape_counts_every_answered_request_from_its_due_time_window_or_not() {
    // One connection: /b and /c wait behind /hang until its timeout, so their time from the
    // due time is far from their time from the send.
    let server = Server::start();
    let paths = ["/a", "/hang", "/b", "/c"];
    let handle = Replay::new(
        plan(&paths, &[0, 1, 2, 3]),
        Config {
            max_conns: Some(1),
            timeout: Duration::from_millis(200),
            window: (2, 4),
            ..config(&server)
        },
    )
    .map(Handle::new)
    .unwrap();
    handle.start();
    assert!(handle.wait(WAIT));
    let edges = [1_000_000, 100_000_000];
    let progress = handle.progress();
    let completion = progress.live().latency_so_far(&edges);
    let [("ttfb", ttfb), ("service", service)] = progress.live_beside(&edges) else {
        panic!("the histograms beside the latency are ttfb and service");
    };
    handle.with_outcome(|o| {
        let r = &o.as_ref().unwrap().records;
        let answered = [0, 2, 3];
        let sum = |from: &[i64], to: &[i64]| answered.iter().map(|&i| to[i] - from[i]).sum::<i64>();
        for (live, want) in [
            (&completion, sum(&r.due, &r.done)),
            (&ttfb, sum(&r.due, &r.first_byte)),
            (&service, sum(&r.sent, &r.done)),
        ] {
            assert_eq!(live.count, 3, "every answered request, the window's or not");
            // HDR keeps three significant digits.
            assert!(
                (live.sum_ns - want as f64).abs() <= want as f64 * 1e-3,
                "{live:?} {want}"
            );
        }
        assert!(
            r.sent[2] - r.due[2] >= 200_000_000,
            "/b waited behind /hang"
        );
    });
    assert!(
        completion.bands[2] >= 2,
        "/b and /c took 200 ms from their due time"
    );
    assert_eq!(progress.live().errors_by_kind().get("timeout"), Some(&1));
}
