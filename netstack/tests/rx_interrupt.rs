//! The stack's sleep on a PCI port: its RX queue's descriptor is the port's RX interrupt (the X540 model's MSI-X
//! vector as an eventfd, through the real ixgbe driver of `net_sim_x540`), armed before the runtime sleeps and
//! disarmed after. A ping to the sleeping stack wakes it and is answered byte for byte.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::frames::*;
use common::*;
use drvkit::irq::poll_readable;
use hugepage::Allocator;
use netstack::{Stack, StackConfig};
use pkthdr::{EtherType, IcmpType, IpProtocol};
use pktio::devargs::Devargs;
use pktio::{IntrConf, PacketBatch, PortConfig};

const PEER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 7);

#[test]
fn a_sleeping_stack_on_a_pci_port_is_woken_by_its_rx_interrupt() {
    let args = Devargs::parse("net_sim_x540,ports=2").unwrap();
    let registry = pmds::registry();
    let driver = registry.vdev_driver_for(&args).expect("net_sim_x540 is registered");
    let mut ports = (driver.open)(&args, &Allocator::no_huge()).unwrap();
    let pool = pool("rx-intr", 2048);
    let small = PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() };
    ports[0].configure(&PortConfig { intr_conf: IntrConf { rxq: true, lsc: false }, ..small.clone() }).unwrap();
    ports[1].configure(&small).unwrap();
    for p in ports.iter_mut() {
        p.start(&pool).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(ports[0].link().up && ports[1].link().up) {
        assert!(Instant::now() < deadline, "links never came up");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (mac, peer_mac) = (ports[0].mac_addr(), ports[1].mac_addr());
    let config = StackConfig::new(mac, A_IP, 24);
    let mut stack = Stack::new(config, ports[0].rx_queue(0).unwrap(), ports[0].tx_queue(0).unwrap(), pool.clone());
    let (mut raw_rx, mut raw_tx) = (ports[1].rx_queue(0).unwrap(), ports[1].tx_queue(0).unwrap());
    let mut events = Vec::new();
    stack.poll(&mut events); // the gratuitous ARP
    let fd = stack.wait_fd().expect("the PCI port's RX interrupt is the stack's descriptor");

    // Asleep: armed, nothing arrives, no wake-up.
    stack.rx_intr_enable().unwrap();
    assert!(!poll_readable(fd, Duration::from_millis(50)).unwrap(), "woke with nothing received");

    let ping = icmp_echo(IcmpType::V4_ECHO_REQUEST, 7, 1, b"wake up");
    let frame = eth(mac, peer_mac, EtherType::IPV4, &ipv4(PEER, A_IP, IpProtocol::ICMP, 64, &ping));
    let mut m = pool.alloc().unwrap();
    m.append(frame.len() as u16).unwrap().copy_from_slice(&frame);
    let mut b = PacketBatch::with_capacity(1);
    b.push(m).unwrap();
    assert_eq!(raw_tx.tx_burst(&mut b), 1);
    assert!(poll_readable(fd, Duration::from_secs(5)).unwrap(), "the ping did not wake the sleeping stack");
    stack.rx_intr_disable().unwrap();

    // Awake: polled, and the reply goes out.
    let reply = icmp_echo(IcmpType::V4_ECHO_REPLY, 7, 1, b"wake up");
    let mut expected = eth(peer_mac, mac, EtherType::IPV4, &ipv4(A_IP, PEER, IpProtocol::ICMP, 64, &reply));
    expected.resize(expected.len().max(60), 0);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = None;
    while got.is_none() {
        assert!(Instant::now() < deadline, "no echo reply");
        stack.poll(&mut events);
        let mut b = PacketBatch::with_capacity(8);
        raw_rx.rx_burst(&mut b);
        got = b.iter().map(|m| m.data().to_vec()).find(|f| f.len() > 34 && f[23] == 1);
        std::thread::sleep(Duration::from_millis(1));
    }
    let got = got.unwrap();
    // The IPv4 identification is the stack's own; everything else byte for byte.
    assert_eq!((&got[..18], &got[20..24], &got[26..]), (&expected[..18], &expected[20..24], &expected[26..]));
    drop((stack, raw_rx, raw_tx));
    for p in ports.iter_mut() {
        p.stop().unwrap();
    }
}
