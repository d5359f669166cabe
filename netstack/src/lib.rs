//! netstack: a thin userspace TCP/IP stack on pktio ports, for run-to-completion servers in the way of F-Stack
//! and K-NET: the application terminates TCP and UDP itself on a port the framework owns.
//!
//! # Layers
//! - Ethernet and ARP are ours ([`arp`]): a cache with expiry and eviction, resolution with a bounded queue of
//!   packets per unresolved next hop (retried, then given up and counted), a gratuitous ARP on the first poll,
//!   replies for our address; on-link senders missing from the cache are learned from their IPv4 frames.
//! - IPv4 is ours: version, lengths and header checksum checked, TTL 0 dropped, packets not for our address
//!   dropped (no forwarding), fragments dropped (no reassembly); each reason counted ([`Drops`]).
//! - ICMP echo requests are answered by us, in the request's own buffer.
//! - UDP sockets are ours: a datagram stays in the mbuf it arrived in until the application takes it
//!   ([`Datagram`]).
//! - TCP is smoltcp's state machine and socket buffers behind an `Interface` with `Medium::Ip`: our input path
//!   hands it the IPv4/TCP packets it accepted (Ethernet header stripped, same mbuf, read in place by smoltcp's
//!   RX token) and smoltcp's TX token writes each segment straight into a fresh mbuf, which our ARP layer wraps
//!   in Ethernet. The only copies are into and out of smoltcp's socket buffers.
//! - Time is read once per [`Stack::poll`] from the monotonic clock; packets move in bursts of [`BURST`] (32).
//!
//! # Scaling with many sockets
//! smoltcp has no accept and no readiness lists: every egress pass and every timer query walks the whole
//! `SocketSet`. A listener therefore keeps `tcp_backlog` sockets listening and moves those a SYN woke to a
//! half-open list, replacing them at once; and [`Stack::poll`] skips smoltcp entirely on an idle poll (it runs
//! for received segments, for the application's socket calls, and when smoltcp's earliest timer is due). With
//! 1,000 established idle connections a poll of two stacks costs about 1 µs (debug build) instead of 1.3 ms;
//! a poll that does run smoltcp still costs time linear in the sockets (about 0.6 µs per socket in a debug
//! build), amortised over the burst it handles. 1,000 connections open, exchange data and close with every
//! socket and buffer released (tests/tcp_pair.rs). A connection the application closed is released when its
//! FIN exchange ends: TIME-WAIT is not kept (a late retransmitted FIN gets a reset), and one stuck longer than
//! `tcp_linger` is reset; one that keeps receiving after the close is reset once what it sent is acknowledged (as
//! a kernel resets a closed socket that receives data).
//!
//! # Bounded state (what a hostile peer can make a stack hold)
//! Every limit is a [`StackConfig`] field and a key of the configuration file ([`config`]), with a default that
//! holds against floods on a small server:
//! - A SYN backlog per listener (`tcp_syn_backlog`, 256 half-open connections) with expiry
//!   (`tcp_handshake_timeout`, 10 s, dropped without a reset); SYNs past it get SYN cookies (src/syncookie.rs:
//!   stateless, the connection rebuilt from the client's ACK) or, with `tcp_syn_cookies` off, are dropped.
//! - A connection limit per stack (`tcp_max_connections`, 10,000, half-open included): SYNs past it are dropped
//!   and counted (`drop_tcp_connection_limit`).
//! - Keep-alive (`tcp_keepalive`, 60 s) and a user timeout (`tcp_user_timeout`, 120 s, RFC 5482): data left
//!   unacknowledged, or a peer that answers no probe, that long aborts the connection, which also bounds
//!   retransmissions.
//! - ARP: cached entries, packets per unresolved hop and unresolved hops at once ([`ArpConfig`]); UDP: datagrams
//!   per socket.
//!
//! Each refusal, expiry and timeout is counted ([`Counters`]: `tcp_syn_cookies_*`, `tcp_handshake_timeouts`,
//! `tcp_timeouts`, `tcp_user_timeouts`, `tcp_aborts_on_data`, `tcp_linger_aborts`, `drop_*`), and `netstack-ctl
//! counters` shows them with `tcp_half_open`. An application whose output to a peer backs up stops its input with
//! [`Stack::pause_reading`] (no Readable events, the window closes as the receive buffer fills) until it has
//! drained ([`Stack::resume_reading`]): the sample servers do so per request (`servers::serve`), and an
//! embedder such as a preload library gets the same bounds from its `StackConfig`.
//!
//! # Embedding
//! One [`Stack`] per (RX queue, TX queue) pair, owned and polled by one thread, with nothing shared and no
//! locks: with RSS keeping each flow on one queue, each lcore runs its own stack (as F-Stack does). A loop calls
//! [`Stack::poll`], which fills an event list ([`Event`]: [`EventKind::Accepted`], `Connected`, `Readable`,
//! `Writable`, `PeerClosed`, `Closed` per [`Handle`]), and answers the events with the non-blocking socket
//! calls: [`Stack::listen`], [`Stack::accept`], [`Stack::connect`], [`Stack::read`] / [`Stack::read_with`],
//! [`Stack::write`], [`Stack::close`], [`Stack::abort`]; UDP: [`Stack::udp_bind`], [`Stack::recv_from`],
//! [`Stack::send_to`]. Calls that cannot proceed return [`Error::WouldBlock`]. [`Stack::counters`] gives packets,
//! bytes, drops by reason, TCP retransmissions (counted by us: smoltcp 0.12 does not expose them), connections
//! opened/closed and the admission and timeout counters above; [`Stack::active_connections`] the connections
//! held, [`Stack::half_open_connections`] the handshakes in progress. A loop that sleeps when idle
//! waits on [`Stack::wait_fd`] (the RX queue's descriptor, where the port has one) until [`Stack::idle_until`];
//! [`runtime`] does so by default. An event loop of its own (netstack-preload's POSIX sockets) asks what a socket
//! can do now with [`Stack::readiness`] and [`Stack::recv_queue`], and has [`Stack::shutdown_write`],
//! [`Stack::peek`], [`Stack::local_addr`], [`Stack::peer_addr`] and [`Stack::set_nodelay`] beside the calls above. [`Stack::enable_capture`] lets `pktio-dumpcap` capture the stack's queues live;
//! [`runtime`] enables it unless `--no-telemetry` (`--file-prefix NAME` names the process to capture).
//!
//! Two stacks on the two ends of a ring pair, a client and an echo server:
//!
//! ```
//! use std::net::{Ipv4Addr, SocketAddrV4};
//! use netstack::{Error, EventKind, Stack, StackConfig};
//! use swports::ring::RingPort;
//! use pktio::{EthDev, Mempool, PoolConfig, PortConfig};
//!
//! let pool = Mempool::new("doc", &PoolConfig::with_size(2048), &hugepage::Allocator::no_huge())?;
//! let (mut pa, mut pb) = RingPort::pair("doc-a", "doc-b", 1, 1024);
//! let mut stacks = Vec::new();
//! for (port, ip) in [(&mut pa, Ipv4Addr::new(10, 0, 0, 1)), (&mut pb, Ipv4Addr::new(10, 0, 0, 2))] {
//!     port.configure(&PortConfig::default())?;
//!     port.start(&pool)?;
//!     let config = StackConfig::new(port.mac_addr(), ip, 24);
//!     stacks.push(Stack::new(config, port.rx_queue(0)?, port.tx_queue(0)?, pool.clone()));
//! }
//! let (client, server) = stacks.split_at_mut(1);
//! let (client, server) = (&mut client[0], &mut server[0]);
//!
//! let listener = server.listen(7)?;
//! let conn = client.connect(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 7))?;
//! let (mut events, mut reply) = (Vec::new(), Vec::new());
//! let mut buf = [0u8; 64];
//! while reply.len() < 5 {
//!     client.poll(&mut events);
//!     for e in &events {
//!         if e.kind == EventKind::Connected {
//!             client.write(conn, b"hello")?;
//!         }
//!         if e.kind == EventKind::Readable {
//!             let n = client.read(conn, &mut buf)?;
//!             reply.extend_from_slice(&buf[..n]);
//!         }
//!     }
//!     server.poll(&mut events);
//!     for e in &events {
//!         match e.kind {
//!             EventKind::Accepted => while let Ok(_) = server.accept(listener) {},
//!             EventKind::Readable => match server.read(e.handle, &mut buf) {
//!                 Ok(n) => { server.write(e.handle, &buf[..n])?; }
//!                 Err(Error::WouldBlock) => {}
//!                 Err(err) => return Err(err.into()),
//!             },
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(reply, b"hello");
//! client.close(conn)?;
//! assert_eq!(client.counters().connections_opened, 1);
//! # drop(stacks);
//! # pa.stop()?;
//! # pb.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Servers
//! [`runtime`] is what every sample server runs on: `--config FILE` ([`config`]: port, MAC, IPv4
//! address/prefix, gateway, lcores, memory, TCP sizes, control socket), the port brought up through the EAL, a
//! stack and an [`runtime::App`] per lcore in a poll loop, a [`control`] socket per lcore that `netstack-ctl`
//! reads (addresses, ARP table, sockets, counters) answered between bursts, and the counters printed on Ctrl-C.
//! `udp-echo` (src/bin/udp-echo.rs) is the smallest such server:
//!
//! ```no_run
//! use netstack::runtime::{self, App};
//! use netstack::{Event, EventKind, Handle, Stack};
//!
//! struct Echo(Handle);
//! impl App for Echo {
//!     fn on_events(&mut self, stack: &mut Stack, events: &[Event]) {
//!         for e in events.iter().filter(|e| e.kind == EventKind::Readable) {
//!             while let Ok(d) = stack.recv_from(self.0) {
//!                 let _ = stack.send_to(self.0, d.from, d.payload());
//!             }
//!         }
//!     }
//! }
//! fn main() -> std::process::ExitCode {
//!     runtime::main("udp-echo", "", |stack, _args| Ok(Echo(stack.udp_bind(7)?)))
//! }
//! ```
//!
//! Not supported: IPv6, IPv4 options (skipped), reassembly, forwarding, VLANs, multicast, ICMP messages other
//! than echo (no port-unreachable or errors to TCP), jumbo frames in chained mbufs, TCP listening on one address
//! among several (a stack has one), TIME-WAIT, and one ARP cache shared by the lcores of a port: each stack
//! keeps its own, and since ARP (not IP) reaches only the queue RSS sends non-IP traffic to, stacks also learn
//! on-link senders from their IPv4 frames; so a server answers its clients from every lcore, but a stack on
//! another lcore that connects out to a peer it never heard from may wait for an ARP reply that lands
//! elsewhere. Tested: one lcore, and two lcores on a two-queue af_packet fanout group (tests/netns.rs).

#![deny(clippy::undocumented_unsafe_blocks)]

mod admission;
pub mod arp;
pub mod config;
pub mod control;
mod counters;
mod device;
mod error;
mod events;
pub mod runtime;
mod sockets;
mod stack;
mod syncookie;

pub use arp::{ArpConfig, ArpEntry};
pub use config::Config;
pub use counters::{Counters, Drops};
pub use error::{Error, Result};
pub use sockets::{Datagram, Event, EventKind, Handle, Readiness, SocketError, SocketInfo};
pub use stack::{Stack, StackConfig};

/// Packets per receive and transmit burst.
pub const BURST: usize = 32;
