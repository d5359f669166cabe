//! In-process rate of the protocol logic alone, no network: redis-benchmark-like SET and GET pipelines (16 per
//! feed) through `kv::Session::feed`, and wrk-like GETs through `http::Session::feed`. An upper bound for what the
//! servers can do per core once netstack carries the bytes.
//!
//! Usage: cargo run --release -p servers --example feed_rate [commands]

use std::time::Instant;

use servers::http::{self, Site};
use servers::kv::{Session, Store};

fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let depth = 16;
    for cmd in ["SET", "GET"] {
        let mut batch = Vec::new();
        for _ in 0..depth {
            encode(&[cmd.as_bytes(), b"key:__rand_int__", b"xxx"][..if cmd == "SET" { 3 } else { 2 }], &mut batch);
        }
        let mut store = Store::new();
        let mut session = Session::new(1);
        let mut out = Vec::with_capacity(4096);
        let start = Instant::now();
        for _ in 0..n / depth {
            out.clear();
            session.feed(&batch, 0, &mut store, &mut out);
        }
        let secs = start.elapsed().as_secs_f64();
        println!("kv {cmd} -P {depth}: {:.0} commands/s", (n / depth * depth) as f64 / secs);
    }
    let site = Site::new(1024);
    let req = b"GET / HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n\r\n";
    let mut session = http::Session::new();
    let mut out = Vec::with_capacity(4096);
    let start = Instant::now();
    for _ in 0..n {
        out.clear();
        session.feed(req, &site, &[], &mut out);
    }
    println!("http GET / (1024 B page): {:.0} requests/s", n as f64 / start.elapsed().as_secs_f64());
}
