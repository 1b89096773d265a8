//! Graceful shutdown of `medialib serve` (DECISIONS.md §1): on SIGTERM it stops accepting,
//! finishes the requests in flight, and exits 0.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::ServeProcess;

/// The body of the paused request: the token endpoint reads the whole body before it decides
/// anything (client credentials may ride in it), so its answer (401 `invalid_client`) cannot
/// come before the rest is sent. (A describe PUT without a token would answer 401 from the
/// head alone and close with the body unread: the client could then lose that answer to the
/// reset, which has nothing to do with shutdown.)
const IN_FLIGHT_BODY: &str =
    "grant_type=refresh_token&refresh_token=mlr_x&client_id=nobody&client_secret=wrong";

/// How a paused request was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    Plain,
    /// With `Expect: 100-continue`, as curl sends a large upload: actix-web answers
    /// `100 Continue` before the rest of the body comes.
    ExpectContinue,
}

/// Opens a connection that a server worker has taken up (a first request answered on it, so
/// it is not waiting in the listen backlog), then sends the head of a POST and part of its
/// body: that request is in flight until the rest comes.
fn start_request(addr: &str, head: Head) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("\"ok\"}") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed the first request's connection");
        seen.extend_from_slice(&buf[..n]);
    }
    let body = IN_FLIGHT_BODY;
    write!(
        s,
        "POST /api/oauth/access_token HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n{}Content-Length: {}\r\n\r\n",
        match head {
            Head::Plain => "",
            Head::ExpectContinue => "Expect: 100-continue\r\n",
        },
        body.len(),
    )
    .unwrap();
    s.write_all(&body.as_bytes()[..10]).unwrap();
    s.flush().unwrap();
    s
}

/// Sends the rest of the body and reads the whole answer (after a `100 Continue`, if one came).
fn finish_request(mut s: TcpStream) -> String {
    let body = IN_FLIGHT_BODY;
    s.write_all(&body.as_bytes()[10..]).unwrap();
    let mut answer = String::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                answer.push_str(&String::from_utf8_lossy(&buf[..n]));
                // The JSON body of the 401 ends the answer; the server closes after it.
                if answer.contains("\r\n\r\n") && answer.trim_end().ends_with('}') {
                    break;
                }
            }
            Err(e) => panic!("reading the answer failed: {e}; so far: {answer:?}"),
        }
    }
    match answer.strip_prefix("HTTP/1.1 100 Continue\r\n\r\n") {
        Some(rest) => rest.to_owned(),
        None => answer,
    }
}

#[cfg(unix)]
#[test]
fn sigterm_finishes_requests_in_flight_and_refuses_new_connections() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServeProcess::start(&format!("sqlite://{}/m.db", dir.path().display()));
    let addr = server.address.trim_start_matches("http://").to_owned();
    let heads = [Head::Plain, Head::ExpectContinue, Head::Plain];
    let in_flight: Vec<(Head, TcpStream)> = heads
        .iter()
        .map(|&head| (head, start_request(&addr, head)))
        .collect();
    // Let the server read the heads, so the requests are really in progress.
    std::thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );

    // New connections are refused once the listener is closed (within a moment of the signal).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect(&addr) {
            Err(_) => break,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(_) => panic!("the server still accepts connections 5 s after SIGTERM"),
        }
    }

    // Every request that was in flight gets its whole answer (a 401: unknown client): the
    // first two get the rest of their bodies at once, while the workers are stopping (actix-
    // server before 2.9.1 could end a worker there with its connections open, unanswered;
    // docs/reliability.md), the last two seconds later, as from a client mid-upload.
    for (i, (head, s)) in in_flight.into_iter().enumerate() {
        if i == 2 {
            std::thread::sleep(Duration::from_secs(2));
        }
        let answer = finish_request(s);
        assert!(
            answer.starts_with("HTTP/1.1 401"),
            "an in-flight request ({head:?}) was not finished: {answer:?}"
        );
        assert!(answer.contains("\"message\""), "{answer:?}");
    }

    // And the process exits cleanly.
    let mut server = server;
    let deadline = Instant::now() + Duration::from_secs(35);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "medialib serve did not exit after draining"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
    println!("drained and exited {:?} after SIGTERM", signalled.elapsed());
}
