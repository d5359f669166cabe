//! The calls for a foreign event loop (src/sockets/foreign.rs): readiness through a connection's life, the
//! bytes waiting, peek, half-close, addresses, and the errors of a refused and of a reset connection.

mod common;

use std::net::SocketAddrV4;

use common::{Pair, A_IP, B_IP};
use netstack::{Error, Readiness, SocketError};

#[test]
fn readiness_follows_a_connection_from_listen_to_half_close() {
    let mut p = Pair::new("foreign-life", 2048, |_| {});
    let listener = p.b.listen(7000).unwrap();
    assert_eq!(p.b.readiness(listener).unwrap(), Readiness::default(), "nothing to accept yet");
    assert_eq!(p.b.local_addr(listener).unwrap(), SocketAddrV4::new(B_IP, 7000));
    let conn = p.a.connect(SocketAddrV4::new(B_IP, 7000)).unwrap();
    assert_eq!(p.a.readiness(conn).unwrap(), Readiness::default(), "still opening");
    p.poll_until(5, "the connection to be accepted", |p| p.b.readiness(listener).unwrap().readable);
    assert_eq!(p.b.recv_queue(listener).unwrap(), 1);
    let server = p.b.accept(listener).unwrap();
    assert_eq!(p.b.peer_addr(server).unwrap(), p.a.local_addr(conn).unwrap());
    assert_eq!(*p.b.local_addr(server).unwrap().ip(), B_IP);
    assert_eq!(*p.a.local_addr(conn).unwrap().ip(), A_IP);
    p.poll_until(5, "the client to be established", |p| p.a.readiness(conn).unwrap().writable);
    let r = p.a.readiness(conn).unwrap();
    assert!(!r.readable && !r.peer_closed && !r.hung_up && r.error.is_none(), "{r:?}");

    p.a.set_nodelay(conn, false).unwrap();
    p.a.set_nodelay(conn, true).unwrap();
    assert_eq!(p.a.write(conn, b"hello").unwrap(), 5);
    p.poll_until(5, "the data", |p| p.b.recv_queue(server).unwrap() == 5);
    assert!(p.b.readiness(server).unwrap().readable);
    let mut buf = [0u8; 16];
    assert_eq!(p.b.peek(server, &mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    assert_eq!(p.b.recv_queue(server).unwrap(), 5, "peek leaves the bytes");
    assert_eq!(p.b.read(server, &mut buf).unwrap(), 5);
    assert!(matches!(p.b.peek(server, &mut buf), Err(Error::WouldBlock)));
    assert!(!p.b.readiness(server).unwrap().readable);

    // Half-close: the client's FIN reaches the server, which can still send.
    p.a.shutdown_write(conn).unwrap();
    p.poll_until(5, "the FIN", |p| p.b.readiness(server).unwrap().peer_closed);
    let r = p.b.readiness(server).unwrap();
    assert!(r.readable && r.writable && !r.hung_up && r.error.is_none(), "{r:?}");
    assert_eq!(p.b.read(server, &mut buf).unwrap(), 0, "end of stream");
    assert!(matches!(p.a.write(conn, b"x"), Err(Error::NotConnected)), "the client shut its sending side");
    assert!(p.a.readiness(conn).unwrap().writable, "a write after shutdown fails at once, so it does not block");
    assert_eq!(p.b.write(server, b"bye").unwrap(), 3);
    p.poll_until(5, "the reply after the half-close", |p| p.a.recv_queue(conn).unwrap() == 3);
    assert_eq!(p.a.read(conn, &mut buf).unwrap(), 3);
    p.b.close(server).unwrap();
    p.poll_until(5, "the server's FIN", |p| p.a.readiness(conn).unwrap().hung_up);
    let r = p.a.readiness(conn).unwrap();
    assert!(r.readable && r.peer_closed && r.error.is_none(), "{r:?}");
    p.a.close(conn).unwrap();
    p.b.close(listener).unwrap();
    p.poll_until(5, "both sides released", |p| p.a.active_connections() == 0 && p.b.active_connections() == 0);
    p.finish();
}

#[test]
fn a_refused_and_a_reset_connection_report_their_error() {
    let mut p = Pair::new("foreign-err", 2048, |_| {});
    let refused = p.a.connect(SocketAddrV4::new(B_IP, 7001)).unwrap();
    p.poll_until(5, "the refusal", |p| p.a.readiness(refused).unwrap().error.is_some());
    let r = p.a.readiness(refused).unwrap();
    assert_eq!(r.error, Some(SocketError::Refused));
    assert!(r.readable && r.writable && r.hung_up, "{r:?}");
    p.a.close(refused).unwrap();

    let listener = p.b.listen(7002).unwrap();
    let conn = p.a.connect(SocketAddrV4::new(B_IP, 7002)).unwrap();
    p.poll_until(5, "the accept", |p| p.b.recv_queue(listener).unwrap() == 1);
    let server = p.b.accept(listener).unwrap();
    p.poll_until(5, "the client to be established", |p| p.a.readiness(conn).unwrap().writable);
    p.b.abort(server).unwrap();
    p.poll_until(5, "the reset", |p| p.a.readiness(conn).unwrap().error.is_some());
    assert_eq!(p.a.readiness(conn).unwrap().error, Some(SocketError::Reset));
    assert!(matches!(p.a.peer_addr(conn), Err(Error::NotConnected)));
    p.a.close(conn).unwrap();
    p.b.close(listener).unwrap();
    p.poll_until(5, "both sides released", |p| p.a.active_connections() == 0 && p.b.active_connections() == 0);
    p.finish();
}

#[test]
fn udp_sockets_are_always_writable_and_count_datagrams() {
    let mut p = Pair::new("foreign-udp", 1024, |_| {});
    let a = p.a.udp_bind(5000).unwrap();
    let b = p.b.udp_bind(5001).unwrap();
    let r = p.b.readiness(b).unwrap();
    assert!(r.writable && !r.readable, "{r:?}");
    p.a.send_to(a, SocketAddrV4::new(B_IP, 5001), b"one").unwrap();
    p.a.send_to(a, SocketAddrV4::new(B_IP, 5001), b"two").unwrap();
    p.poll_until(5, "two datagrams", |p| p.b.recv_queue(b).unwrap() == 2);
    assert!(p.b.readiness(b).unwrap().readable);
    assert_eq!(p.b.local_addr(b).unwrap(), SocketAddrV4::new(B_IP, 5001));
    while p.b.recv_from(b).is_ok() {}
    p.finish();
}
