//! Two stacks over a ring pair: ARP resolution, TCP connect/accept/read/write/close both ways, and 1,000
//! connections opening and closing with nothing left behind.

mod common;

use std::net::SocketAddrV4;

use common::*;
use netstack::{Error, Event, EventKind, Handle};

fn has(events: &[Event], h: Handle, kind: EventKind) -> bool {
    events.iter().any(|e| e.handle == h && e.kind == kind)
}

fn read_all(stack: &mut netstack::Stack, h: Handle, out: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match stack.read(h, &mut buf) {
            Ok(0) => return true,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Error::WouldBlock) => return false,
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[test]
fn tcp_data_both_ways_then_close() {
    let mut p = Pair::new("tcp-both", 4096, |_| {});
    let listener = p.b.listen(6379).unwrap();
    let client = p.a.connect(SocketAddrV4::new(B_IP, 6379)).unwrap();
    p.poll_until(5, "connected", |p| has(&p.ev_a, client, EventKind::Connected));
    assert!(has(&p.ev_a, client, EventKind::Writable), "a new connection is writable: {:?}", p.ev_a);
    assert!(matches!(p.a.accept(client), Err(Error::BadHandle(_))), "a connection is not a listener");
    p.poll_until(5, "accepted", |p| has(&p.ev_b, listener, EventKind::Accepted) || p.b.active_connections() > 0);
    let server = p.b.accept(listener).unwrap();
    assert!(matches!(p.b.accept(listener), Err(Error::WouldBlock)));
    assert_eq!(p.b.tcp_state(server).unwrap(), "ESTABLISHED");
    // A's ARP entry for B was learned, and B learned A from A's request.
    assert!(p.a.arp_entries().iter().any(|e| e.ip == B_IP && e.mac == p.b.config().mac));
    assert!(p.b.arp_entries().iter().any(|e| e.ip == A_IP && e.mac == p.a.config().mac));

    // 200 KB each way, more than either send buffer, so writes must wait for room.
    let up: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let down: Vec<u8> = (0..200_000u32).map(|i| (i * 13 + 1) as u8).collect();
    let (mut sent_up, mut sent_down) = (0, 0);
    let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
    p.poll_until(20, "200 KB both ways", |p| {
        if sent_up < up.len() {
            sent_up +=
                p.a.write(client, &up[sent_up..])
                    .or_else(|e| if matches!(e, Error::WouldBlock) { Ok(0) } else { Err(e) })
                    .unwrap();
        }
        if sent_down < down.len() {
            sent_down +=
                p.b.write(server, &down[sent_down..])
                    .or_else(|e| if matches!(e, Error::WouldBlock) { Ok(0) } else { Err(e) })
                    .unwrap();
        }
        read_all(&mut p.b, server, &mut got_up);
        read_all(&mut p.a, client, &mut got_down);
        got_up.len() == up.len() && got_down.len() == down.len()
    });
    assert!(got_up == up, "client to server bytes differ");
    assert!(got_down == down, "server to client bytes differ");

    // The client closes: the server sees end of stream, then closes too; both release their sockets.
    p.a.close(client).unwrap();
    assert!(matches!(p.a.read(client, &mut [0; 4]), Err(Error::BadHandle(_))), "a closed handle is refused");
    p.poll_until(5, "peer close seen", |p| has(&p.ev_b, server, EventKind::PeerClosed));
    let mut rest = Vec::new();
    assert!(read_all(&mut p.b, server, &mut rest), "end of stream after PeerClosed");
    assert!(rest.is_empty());
    assert!(matches!(p.b.write(server, b"late"), Ok(4)), "half-closed: the server may still send");
    p.b.close(server).unwrap();
    p.poll_until(5, "both released", |p| p.a.active_connections() == 0 && p.b.active_connections() == 0);
    for s in [&p.a, &p.b] {
        let c = s.counters();
        assert_eq!((c.connections_opened, c.connections_closed), (1, 1), "{c}");
        assert!(c.tcp_tx_segments > 100 && c.tcp_rx_segments > 100, "{c}");
        assert_eq!(c.total_drops(), 0, "{c}");
    }
    p.b.close(listener).unwrap();
    p.poll();
    assert_eq!(p.b.smoltcp_sockets(), 0);
    p.finish();
}

#[test]
fn connect_to_closed_port_is_reset() {
    let mut p = Pair::new("tcp-refused", 1024, |_| {});
    let c = p.a.connect(SocketAddrV4::new(B_IP, 9)).unwrap();
    p.poll_until(5, "reset", |p| has(&p.ev_a, c, EventKind::Closed));
    assert!(matches!(p.a.write(c, b"x"), Err(Error::NotConnected)));
    p.a.close(c).unwrap();
    p.poll();
    assert_eq!(p.a.active_connections(), 0);
    assert_eq!(p.a.counters().connections_opened, 0);
    p.finish();
}

#[test]
fn thousand_connections_open_and_close() {
    const N: usize = 1000;
    let mut p = Pair::new("tcp-1000", 8192, |c| {
        c.tcp_rx_buffer = 2048;
        c.tcp_tx_buffer = 2048;
    });
    let polls = 200;
    let t = std::time::Instant::now();
    for _ in 0..polls {
        p.poll();
    }
    eprintln!("idle poll of two stacks with no connection: {:?}", t.elapsed() / polls);
    let listener = p.b.listen(80).unwrap();
    let clients: Vec<Handle> = (0..N).map(|_| p.a.connect(SocketAddrV4::new(B_IP, 80)).unwrap()).collect();
    let mut servers = Vec::new();
    let mut connected = std::collections::HashSet::new();
    p.poll_until(30, "1000 connections established", |p| {
        for e in &p.ev_a {
            if e.kind == EventKind::Connected {
                connected.insert(e.handle);
            }
            assert_ne!(e.kind, EventKind::Closed, "a connection was refused or reset");
        }
        while let Ok(h) = p.b.accept(listener) {
            servers.push(h);
        }
        connected.len() == N && servers.len() == N
    });
    assert_eq!(p.a.active_connections(), N);
    assert_eq!(p.b.active_connections(), N);
    // What an idle poll costs with 1,000 connections: smoltcp walks every socket on every egress pass.
    let t = std::time::Instant::now();
    for _ in 0..polls {
        p.poll();
    }
    eprintln!("idle poll of two stacks with {N} connections each: {:?}", t.elapsed() / polls);
    // Each client sends its index; each server echoes what it got and closes; clients close on end of stream.
    for (i, &c) in clients.iter().enumerate() {
        assert_eq!(p.a.write(c, &(i as u32).to_be_bytes()).unwrap(), 4);
    }
    let mut echoed = 0;
    let mut open_servers: std::collections::HashSet<Handle> = servers.iter().copied().collect();
    let mut open_clients: std::collections::HashMap<Handle, u32> =
        clients.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
    p.poll_until(60, "1000 echoes and closes", |p| {
        for &s in open_servers.clone().iter() {
            let mut buf = [0u8; 4];
            if let Ok(4) = p.b.read(s, &mut buf) {
                assert_eq!(p.b.write(s, &buf).unwrap(), 4);
                p.b.close(s).unwrap();
                open_servers.remove(&s);
            }
        }
        for (&c, &i) in open_clients.clone().iter() {
            let mut buf = [0u8; 4];
            match p.a.read(c, &mut buf) {
                Ok(4) => {
                    assert_eq!(u32::from_be_bytes(buf), i, "echo of connection {i}");
                    echoed += 1;
                }
                Ok(0) => {
                    p.a.close(c).unwrap();
                    open_clients.remove(&c);
                }
                Ok(n) => panic!("short read {n}"),
                Err(Error::WouldBlock) => {}
                Err(e) => panic!("{e}"),
            }
        }
        open_clients.is_empty() && p.a.active_connections() == 0 && p.b.active_connections() == 0
    });
    assert_eq!(echoed, N);
    for s in [&p.a, &p.b] {
        let c = s.counters();
        assert_eq!((c.connections_opened, c.connections_closed), (N as u64, N as u64), "{c}");
    }
    p.b.close(listener).unwrap();
    p.poll();
    assert_eq!(p.a.smoltcp_sockets() + p.b.smoltcp_sockets(), 0, "sockets left in smoltcp's set");
    p.finish();
}

#[test]
fn unanswered_data_is_retransmitted_and_counted_and_in_place_calls_work() {
    let mut p = Pair::new("tcp-rexmit", 2048, |_| {});
    let listener = p.b.listen(7).unwrap();
    let client = p.a.connect(SocketAddrV4::new(B_IP, 7)).unwrap();
    p.poll_until(5, "connected", |p| has(&p.ev_a, client, EventKind::Connected));
    p.poll_until(5, "accepted", |p| has(&p.ev_b, listener, EventKind::Accepted));
    let server = p.b.accept(listener).unwrap();
    // Serialise straight into the send buffer.
    assert_eq!(
        p.a.write_with(client, |room| {
            room[..5].copy_from_slice(b"hello");
            5
        })
        .unwrap(),
        5
    );
    // B stops polling: A's segment waits unacknowledged in the ring until A's retransmission timer fires.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while p.a.counters().tcp_retransmissions == 0 {
        p.a.poll(&mut p.ev_a);
        assert!(std::time::Instant::now() < deadline, "no retransmission: {}", p.a.counters());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // B gets the data once (the copy is a duplicate to it) and reads it in place.
    let mut got = Vec::new();
    p.poll_until(5, "data at B", |p| {
        let _ = p.b.read_with(server, |data| {
            got.extend_from_slice(data);
            data.len()
        });
        got.len() >= 5
    });
    for _ in 0..10 {
        p.poll();
    }
    let _ = p.b.read_with(server, |data| {
        got.extend_from_slice(data);
        data.len()
    });
    assert_eq!(got, b"hello");
    assert_eq!(p.b.counters().tcp_retransmissions, 0);
    p.a.abort(client).unwrap();
    p.poll_until(5, "reset seen", |p| has(&p.ev_b, server, EventKind::Closed));
    p.b.close(server).unwrap();
    p.b.close(listener).unwrap();
    p.poll();
    assert_eq!(p.a.active_connections() + p.b.active_connections(), 0);
    assert_eq!(p.a.smoltcp_sockets() + p.b.smoltcp_sockets(), 0);
    p.finish();
}
