//! A long random session per port type: a few hundred commands drawn with a seeded RNG (start, tx_first, stop,
//! every forwarding mode, port stop/start, queue and ring reconfiguration, burst and txpkts changes, shows and
//! clears, bad commands) through `testpmd-rs -i` on null, ring, pcap and the three simulated NICs. Whatever the
//! mix, the session must answer every command, exit 0, and have every mbuf back in the pool at quit.
//!
//! `RANDOM_SESSION_SEED=N` replays another mix; `RANDOM_SESSION_COMMANDS=N` makes it longer.

mod common;

use common::*;

/// Commands per session.
fn commands() -> usize {
    std::env::var("RANDOM_SESSION_COMMANDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

/// A small xorshift generator: the same seed gives the same session.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const MODES: &[&str] = &["io", "mac", "macswap", "flowgen", "rxonly", "txonly", "csum", "icmpecho", "5tswap", "noisy"];
const ON_OFF: &[&str] = &["on", "off"];

/// One random command line for a session on two ports.
fn random_command(r: &mut Rng) -> String {
    let port = r.below(3); // 2 is no port: an error the prompt must survive.
    match r.below(30) {
        0..=2 => "start".into(),
        3 => format!("start tx_first {}", r.below(5)),
        4..=6 => "stop".into(),
        7 => format!("set fwd {}", r.pick(MODES)),
        8 => format!("set fwd {} retry", r.pick(MODES)),
        9 => format!("set burst {}", r.pick(&["1", "7", "32", "64", "512", "0", "513"])),
        10 => "port stop all".into(),
        11 => "port start all".into(),
        12 => format!("port stop {port}"),
        13 => format!("port start {port}"),
        14 => format!("port config all rxq {}", 1 + r.below(2)),
        15 => format!("port config all txq {}", 1 + r.below(2)),
        16 => format!("port config all {} {}", r.pick(&["rxd", "txd"]), r.pick(&["64", "128", "512", "1024", "7"])),
        17 => format!("set txpkts {}", r.pick(&["64", "128", "64,64", "60,4,100", "1500", "9000"])),
        18 => format!("set promisc all {}", r.pick(ON_OFF)),
        19 => format!("set flush_rx {}", r.pick(ON_OFF)),
        20 => format!("set nbcore {}", 1 + r.below(2)),
        21 => format!("set eth-peer {port} 02:00:00:00:00:{:02x}", r.below(256)),
        22 => format!("port config mtu {port} {}", r.pick(&["68", "1500", "9000", "99999"])),
        23 => r
            .pick(&["show port stats all", "show port xstats all", "show port info all", "show port summary all"])
            .into(),
        24 => r.pick(&["show fwd stats all", "show config fwd", "show config rxtx", "show mempool"]).into(),
        25 => r.pick(&["clear port stats all", "clear fwd stats all", "clear port xstats all"]).into(),
        26 => format!("show port stats {port}"),
        27 => r.pick(&["frobnicate", "set", "port", "start tx_first x", "set fwd", "show port 9 rss-hash"]).into(),
        28 => format!("set txsplit {}", r.pick(&["on", "off", "rand"])),
        _ => format!("set flowgen flows {}", r.pick(&["1", "16", "1024"])),
    }
}

/// Runs one random session on `eal` (two ports) with `seed`; the pool must be full at quit.
fn random_session(eal: &[&str], seed: u64) {
    let seed = std::env::var("RANDOM_SESSION_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(seed);
    let mut r = Rng(seed | 1);
    let mut s = boot(eal, &["-i"]);
    // The mix must really forward: runs stopped with their statistics, and packets sent in them.
    let (mut runs, mut sent) = (0u32, 0u64);
    for _ in 0..commands() {
        let line = random_command(&mut r);
        let out = s.cmd(&line);
        assert!(!out.contains("panicked"), "seed {seed}: {line}:\n{out}");
        if let Some(total) = fwd_total_block(&out).filter(|_| line == "stop") {
            runs += 1;
            sent += total.tx_packets;
        }
    }
    assert!(runs >= 5 && sent > 0, "seed {seed}: {runs} runs stopped, {sent} packets sent");
    let out = quit(s);
    assert!(out.contains("Bye..."), "seed {seed}");
}

#[test]
fn random_session_on_null_ports() {
    random_session(NULLS, 1);
}

#[test]
fn random_session_on_ring_ports() {
    random_session(&["--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"], 2);
}

#[test]
fn random_session_on_pcap_ports() {
    let dir = TempDir::new("random-pcap");
    let input = dir.path("in.pcap");
    let mut w = swports::pcap_file::PcapWriter::create(&input).unwrap();
    for i in 0..64u16 {
        let len = 60 + (i as usize * 23) % 1400;
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        w.write_packet(i as u64 * 1000, &f).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let p0 = format!("net_pcap0,rx_pcap={input},tx_pcap={},infinite_rx=1", dir.path("out0.pcap"));
    let p1 = format!("net_pcap1,rx_pcap={input},tx_pcap={}", dir.path("out1.pcap"));
    random_session(&["--vdev", &p0, "--vdev", &p1], 3);
}

#[test]
fn random_session_on_simulated_x540_ports() {
    random_session(X540, 4);
}

#[test]
fn random_session_on_simulated_x710_ports() {
    random_session(&["--vdev", "net_sim_x710,ports=2"], 5);
}

#[test]
fn random_session_on_simulated_sp670_ports() {
    random_session(&["--vdev", "net_sim_sp670,ports=2"], 6);
}
