//! Graceful shutdown of `medialib serve` (DECISIONS.md §1): on SIGTERM it stops accepting,
//! finishes the requests in flight, and exits 0.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::ServeProcess;

/// Starts a PUT whose body the server is waiting for: the head carries
/// `Expect: 100-continue`, and the server's `100 Continue` proves it has read the head and is
/// reading the body (a request still in a socket buffer is not in flight yet). Then half the
/// body goes out: the request is in flight until the rest comes.
fn start_request(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = "title=in-flight&type=catalog";
    write!(
        s,
        "PUT /api/describe/c/0/o/0 HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len(),
    )
    .unwrap();
    s.flush().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the server closed the connection before 100 Continue"
        );
        seen.push(buf[0]);
    }
    let interim = String::from_utf8_lossy(&seen);
    assert!(
        interim.starts_with("HTTP/1.1 100"),
        "expected 100 Continue, got {interim:?}"
    );
    s.write_all(&body.as_bytes()[..10]).unwrap();
    s.flush().unwrap();
    s
}

/// Sends the rest of the body and reads the whole answer.
fn finish_request(mut s: TcpStream) -> String {
    let body = "title=in-flight&type=catalog";
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
    answer
}

#[cfg(unix)]
#[test]
fn sigterm_finishes_requests_in_flight_and_refuses_new_connections() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServeProcess::start(&format!("sqlite://{}/m.db", dir.path().display()));
    let addr = server.address.trim_start_matches("http://").to_owned();
    let in_flight: Vec<TcpStream> = (0..3).map(|_| start_request(&addr)).collect();

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

    // Every request that was in flight gets its whole answer (a 401: no token).
    for s in in_flight {
        let answer = finish_request(s);
        assert!(
            answer.starts_with("HTTP/1.1 401"),
            "an in-flight request was not finished: {answer:?}"
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
