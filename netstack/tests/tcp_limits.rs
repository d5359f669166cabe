//! What a TCP peer can make a stack hold, and for how long: the SYN backlog and SYN cookies, the handshake
//! timeout, the connection limit, keep-alive and the user timeout, the reset of a closed connection that keeps
//! receiving, and pausing Readable events. Frames are injected and read raw on the other end of a ring pair
//! (tests/common), or two stacks talk and one of them stops polling (a peer that vanished).

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use common::frames::{eth, parse_tcp, tcp, Seg};
use common::*;
use netstack::{Error, EventKind, Handle};
use pkthdr::{EtherType, TcpFlags};

const PORT: u16 = 6379;
const MSS_1460: [u8; 4] = [2, 4, 0x05, 0xb4];

fn client(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 9, 0, 10 + n)
}

#[allow(clippy::too_many_arguments)]
fn inject_tcp(w: &mut Wire, src: Ipv4Addr, sport: u16, seq: u32, ack: u32, flags: TcpFlags, opts: &[u8], data: &[u8]) {
    let mac = w.stack.config().mac;
    let frame = eth(mac, w.peer_mac, EtherType::IPV4, &tcp(src, A_IP, sport, PORT, seq, ack, flags, opts, data));
    w.inject(&frame);
}

/// Polls until the stack has sent segments to `dst` that satisfy `done`, returning every TCP segment seen.
fn poll_for(w: &mut Wire, what: &str, done: impl Fn(&[Seg]) -> bool) -> Vec<Seg> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut segs = Vec::new();
    loop {
        w.poll();
        segs.extend(w.sent().iter().filter_map(|f| parse_tcp(f)));
        if done(&segs) {
            return segs;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; sent: {segs:#?}");
    }
}

fn syn_acks_to(segs: &[Seg], dst: Ipv4Addr) -> Vec<&Seg> {
    segs.iter().filter(|s| s.dst == dst && s.flags.contains(TcpFlags::SYN) && s.flags.contains(TcpFlags::ACK)).collect()
}

#[test]
fn syns_past_the_backlog_get_cookies_and_a_cookie_ack_becomes_a_connection() {
    let mut w = Wire::new("lim-cookie", |c| {
        c.tcp_backlog = 2;
        c.tcp_syn_backlog = 3;
    });
    let listener = w.stack.listen(PORT).unwrap();
    w.poll();
    w.sent();
    for n in 0..8u8 {
        inject_tcp(&mut w, client(n), 40000 + n as u16, 1000 * n as u32, 0, TcpFlags::SYN, &MSS_1460, b"");
    }
    let segs = poll_for(&mut w, "8 SYN-ACKs", |s| (0..8).all(|n| !syn_acks_to(s, client(n)).is_empty()));
    assert!(segs.iter().all(|s| s.checksum_ok), "{segs:#?}");
    let c = *w.stack.counters();
    // Two fit the first poll's listening sockets, the third the next poll's; the rest are cookies.
    assert!(w.stack.half_open_connections() <= 3, "{}", w.stack.half_open_connections());
    assert_eq!(c.tcp_syn_cookies_sent + w.stack.half_open_connections() as u64, 8, "{c}");
    assert!(c.tcp_syn_cookies_sent >= 5, "{c}");
    // A cookie SYN-ACK: acknowledges the SYN, offers an MSS and nothing else (no window scale, SACK, timestamps).
    let n = 7u8;
    let cookie_ack = syn_acks_to(&segs, client(n))[0].clone();
    assert_eq!(cookie_ack.ack, 7001);
    assert_eq!(cookie_ack.options, [2, 4, 0x05, 0xb4], "MSS 1460 only");

    // The client completes the handshake with data in its ACK: the connection appears and reads it.
    let our_isn = cookie_ack.seq;
    inject_tcp(&mut w, client(n), 40007, 7001, our_isn + 1, TcpFlags::ACK.union(TcpFlags::PSH), &[], b"PING\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    let conn = loop {
        w.poll();
        if let Ok(h) = w.stack.accept(listener) {
            break h;
        }
        assert!(Instant::now() < deadline, "no connection from the cookie ACK: {}", w.stack.counters());
    };
    assert_eq!(w.stack.counters().tcp_syn_cookies_accepted, 1);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < 6 {
        w.poll();
        let mut buf = [0u8; 64];
        match w.stack.read(conn, &mut buf) {
            Ok(k) => got.extend_from_slice(&buf[..k]),
            Err(Error::WouldBlock) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "the ACK's data was not delivered");
    }
    assert_eq!(got, b"PING\r\n");
    // The reply is numbered in the client's space: right after the cookie, acknowledging the data.
    w.stack.write(conn, b"+PONG\r\n").unwrap();
    let segs = poll_for(&mut w, "the reply", |s| s.iter().any(|s| s.dst == client(n) && !s.payload.is_empty()));
    let reply = segs.iter().find(|s| s.dst == client(n) && !s.payload.is_empty()).unwrap();
    assert_eq!((reply.seq, reply.ack, reply.payload.as_slice()), (our_isn + 1, 7007, &b"+PONG\r\n"[..]));
    assert!(reply.checksum_ok);
    assert!(reply.flags.contains(TcpFlags::ACK) && !reply.flags.contains(TcpFlags::SYN));
    // The client acknowledges it and closes; the shifted numbers keep working both ways.
    inject_tcp(&mut w, client(n), 40007, 7007, our_isn + 8, TcpFlags::ACK.union(TcpFlags::FIN), &[], b"");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !w.events.iter().any(|e| e.handle == conn && e.kind == EventKind::PeerClosed) {
        w.poll();
        assert!(Instant::now() < deadline, "no PeerClosed through the shift");
    }
    w.stack.close(conn).unwrap();
    let segs = poll_for(&mut w, "our FIN", |s| s.iter().any(|s| s.dst == client(n) && s.flags.contains(TcpFlags::FIN)));
    let fin = segs.iter().find(|s| s.dst == client(n) && s.flags.contains(TcpFlags::FIN)).unwrap();
    assert_eq!((fin.seq, fin.ack), (our_isn + 8, 7008), "{fin:?}");

    // A forged cookie is refused with a reset.
    inject_tcp(
        &mut w,
        client(6),
        40006,
        6001,
        syn_acks_to(&segs, client(6)).first().map_or(12345, |s| s.seq + 2),
        TcpFlags::ACK,
        &[],
        b"",
    );
    let segs = poll_for(&mut w, "a reset", |s| s.iter().any(|s| s.dst == client(6) && s.flags.contains(TcpFlags::RST)));
    assert!(!segs.is_empty());
    assert_eq!(w.stack.counters().tcp_syn_cookies_rejected, 1);
    w.finish();
}

#[test]
fn half_open_connections_expire_and_the_connection_limit_drops_syns() {
    let mut w = Wire::new("lim-expire", |c| {
        c.tcp_backlog = 8;
        c.tcp_syn_backlog = 8;
        c.tcp_max_connections = 3;
        c.tcp_handshake_timeout = Duration::from_millis(300);
    });
    w.stack.listen(PORT).unwrap();
    w.poll();
    w.sent();
    for n in 0..5u8 {
        inject_tcp(&mut w, client(n), 41000 + n as u16, 1, 0, TcpFlags::SYN, &MSS_1460, b"");
    }
    let segs = poll_for(&mut w, "3 SYN-ACKs", |s| (0..3).all(|n| !syn_acks_to(s, client(n)).is_empty()));
    for n in 3..5 {
        assert!(syn_acks_to(&segs, client(n)).is_empty(), "SYN {n} past the limit was answered: {segs:#?}");
    }
    let c = *w.stack.counters();
    assert_eq!((w.stack.half_open_connections(), c.drops.tcp_connection_limit, c.tcp_syn_cookies_sent), (3, 2, 0));
    // Nobody completes the handshakes: they go, without a reset.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut resets = 0;
    while w.stack.half_open_connections() > 0 {
        w.poll();
        resets += w.sent().iter().filter_map(|f| parse_tcp(f)).filter(|s| s.flags.contains(TcpFlags::RST)).count();
        assert!(Instant::now() < deadline, "half-open connections did not expire");
    }
    assert_eq!((w.stack.counters().tcp_handshake_timeouts, resets), (3, 0));
    assert_eq!(w.stack.smoltcp_sockets(), 8, "only the listening sockets are left");
    w.finish();
}

#[test]
fn without_cookies_syns_past_the_backlog_are_dropped() {
    let mut w = Wire::new("lim-nocookie", |c| {
        c.tcp_backlog = 8;
        c.tcp_syn_backlog = 2;
        c.tcp_syn_cookies = false;
    });
    w.stack.listen(PORT).unwrap();
    w.poll();
    w.sent();
    for n in 0..4u8 {
        inject_tcp(&mut w, client(n), 42000 + n as u16, 1, 0, TcpFlags::SYN, &MSS_1460, b"");
    }
    let segs = poll_for(&mut w, "2 SYN-ACKs", |s| (0..2).all(|n| !syn_acks_to(s, client(n)).is_empty()));
    assert!((2..4).all(|n| syn_acks_to(&segs, client(n)).is_empty()), "{segs:#?}");
    assert_eq!(w.stack.counters().drops.tcp_syn_backlog_full, 2);
    w.finish();
}

/// A connected pair; returns (client handle on A, server handle on B).
fn connected(p: &mut Pair) -> (Handle, Handle) {
    let listener = p.b.listen(PORT).unwrap();
    let client = p.a.connect(SocketAddrV4::new(B_IP, PORT)).unwrap();
    let mut server = None;
    p.poll_until(5, "connected", |p| {
        if server.is_none() {
            server = p.b.accept(listener).ok();
        }
        server.is_some() && p.ev_a.iter().any(|e| e.handle == client && e.kind == EventKind::Connected)
            || server.is_some() && p.a.tcp_state(client).is_ok_and(|s| s == "ESTABLISHED")
    });
    (client, server.unwrap())
}

/// Polls only B (A vanished) until `done`.
fn poll_b_until(p: &mut Pair, secs: u64, what: &str, done: impl Fn(&Pair) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done(p) {
        p.b.poll(&mut p.ev_b);
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {}", p.b.counters());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn keepalive_finds_a_vanished_idle_peer() {
    let mut p = Pair::new("lim-keepalive", 4096, |c| {
        c.tcp_keepalive = Some(Duration::from_millis(100));
        c.tcp_user_timeout = Some(Duration::from_millis(400));
    });
    let (_client, _server) = connected(&mut p);
    assert_eq!(p.b.active_connections(), 1);
    // A stops answering; B's probes go unanswered and it gives up.
    let t0 = Instant::now();
    poll_b_until(&mut p, 10, "the idle connection to time out", |p| p.b.counters().tcp_timeouts == 1);
    assert!(t0.elapsed() >= Duration::from_millis(300), "gave up before the user timeout: {:?}", t0.elapsed());
    assert_eq!(p.b.counters().tcp_user_timeouts, 0);
    assert!(p.b.counters().tcp_keepalive_probes >= 2, "{}", p.b.counters());
    assert_eq!(p.b.counters().tcp_retransmissions, 0, "probes are not retransmissions");
    p.finish();
}

/// Probes are answered (smoltcp rate-limits its answers to out-of-window segments to one a second, as Linux
/// does to two), so an idle peer that is there survives the user timeout many times over.
#[test]
fn an_idle_live_peer_is_kept_by_keepalive() {
    let mut p = Pair::new("lim-alive", 4096, |c| {
        c.tcp_keepalive = Some(Duration::from_secs(1));
        c.tcp_user_timeout = Some(Duration::from_millis(2500));
    });
    let (client, server) = connected(&mut p);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(4000) {
        p.poll();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(p.b.tcp_state(server).unwrap(), "ESTABLISHED");
    assert_eq!(p.a.tcp_state(client).unwrap(), "ESTABLISHED");
    assert_eq!((p.a.counters().tcp_timeouts, p.b.counters().tcp_timeouts), (0, 0));
    p.finish();
}

#[test]
fn unacknowledged_data_times_out_without_keepalive() {
    let mut p = Pair::new("lim-usertimeout", 4096, |c| {
        c.tcp_keepalive = None;
        c.tcp_user_timeout = Some(Duration::from_millis(300));
    });
    let (_client, server) = connected(&mut p);
    // A vanishes with B's reply unacknowledged: B resets the connection after the user timeout.
    p.b.write(server, &[7u8; 3000]).unwrap();
    poll_b_until(&mut p, 10, "the user timeout", |p| p.b.counters().tcp_user_timeouts == 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !p.ev_b.iter().any(|e| e.handle == server && e.kind == EventKind::Closed) {
        p.b.poll(&mut p.ev_b);
        assert!(Instant::now() < deadline, "no Closed after the user timeout");
    }
    p.b.close(server).unwrap();
    poll_b_until(&mut p, 5, "the connection released", |p| p.b.active_connections() == 0);
    assert_eq!(p.b.counters().tcp_timeouts, 0, "counted once, as a user timeout");
    p.finish();
}

#[test]
fn a_closed_connection_that_keeps_receiving_is_reset() {
    let mut p = Pair::new("lim-abortdata", 4096, |_| {});
    let (client, server) = connected(&mut p);
    p.b.write(server, b"-ERR bye\r\n").unwrap();
    p.b.close(server).unwrap();
    // The client keeps sending after the server closed: once the server's reply is acknowledged, a reset.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    loop {
        let _ = p.a.write(client, &[b'x'; 1000]);
        p.poll();
        let mut buf = [0u8; 64];
        if let Ok(n) = p.a.read(client, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        if p.ev_a.iter().any(|e| e.handle == client && e.kind == EventKind::Closed) {
            break;
        }
        assert!(Instant::now() < deadline, "the client was not reset: {}", p.b.counters());
    }
    assert_eq!(got, b"-ERR bye\r\n", "the reply came before the reset");
    assert_eq!(p.b.counters().tcp_aborts_on_data, 1);
    assert!(p.a.counters().tcp_resets_received >= 1);
    p.a.close(client).unwrap();
    p.poll_until(5, "both released", |p| p.a.active_connections() == 0 && p.b.active_connections() == 0);
    p.finish();
}

#[test]
fn paused_reading_reports_no_readable_until_resumed() {
    let mut p = Pair::new("lim-pause", 4096, |_| {});
    let (client, server) = connected(&mut p);
    p.b.pause_reading(server).unwrap();
    p.a.write(client, b"hello").unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(200) {
        p.poll();
        assert!(!p.ev_b.iter().any(|e| e.handle == server && e.kind == EventKind::Readable), "Readable while paused");
    }
    assert!(p.b.idle_until().is_some(), "a paused connection with data does not keep the loop awake");
    p.b.resume_reading(server).unwrap();
    p.poll_until(5, "Readable after resume", |p| {
        p.ev_b.iter().any(|e| e.handle == server && e.kind == EventKind::Readable)
    });
    let mut buf = [0u8; 16];
    assert_eq!(p.b.read(server, &mut buf).unwrap(), 5);
    p.finish();
}
