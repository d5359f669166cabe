//! The configuration file: a good one parses to what it says; a bad or missing field names the field and line.

use std::net::Ipv4Addr;
use std::path::Path;

use netstack::{Config, Error};
use pktio::MacAddr;

const GOOD: &str = r#"lcores = "0-1"

[port]
device = "net_af_packet0,iface=veth0"
mac = "02:00:00:00:00:05"

[ipv4]
address = "10.0.0.2/24"
gateway = "10.0.0.1"

[memory]
pool_size = 4096
hugepages = true

[tcp]
rx_buffer = 16384
backlog = 8

[control]
name = "kv"
dir = "/tmp/x"
"#;

fn parse(text: &str) -> netstack::Result<Config> {
    Config::parse(Path::new("server.toml"), text)
}

/// The (line, field) of the error, and its message.
fn fails(text: &str) -> (usize, String, String) {
    match parse(text) {
        Err(Error::Config { line, field, message, file }) => {
            assert_eq!(file, Path::new("server.toml"));
            let shown = parse(text).unwrap_err().to_string();
            assert!(shown.starts_with(&format!("server.toml:{line}: {field}: ")), "{shown}");
            (line, field, message)
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn good_config_parses() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.lcores, "0-1");
    assert_eq!(c.device, "net_af_packet0,iface=veth0");
    assert_eq!(c.mac, Some(MacAddr([2, 0, 0, 0, 0, 5])));
    assert_eq!(
        (c.address, c.prefix_len, c.gateway),
        (Ipv4Addr::new(10, 0, 0, 2), 24, Some(Ipv4Addr::new(10, 0, 0, 1)))
    );
    assert_eq!((c.pool_size, c.hugepages), (4096, true));
    assert_eq!((c.tcp_rx_buffer, c.tcp_tx_buffer, c.tcp_backlog), (16384, 65536, 8));
    assert_eq!(c.control_socket(1), Path::new("/tmp/x/netstack-kv.1.sock"));
    let s = c.stack_config(MacAddr([2, 0, 0, 0, 0, 9]));
    assert_eq!(s.mac, MacAddr([2, 0, 0, 0, 0, 5]), "the configured MAC wins over the port's");
    assert_eq!(netstack::runtime::eal_args(&c), ["-l", "0-1", "--vdev", "net_af_packet0,iface=veth0"]);
}

#[test]
fn minimal_config_takes_defaults_and_pci_devices_go_to_dash_a() {
    let c = parse("[port]\ndevice = \"0000:01:00.0\"\n[ipv4]\naddress = \"192.168.1.5/16\"\n").unwrap();
    assert_eq!((c.lcores.as_str(), c.mac, c.gateway, c.pool_size, c.hugepages), ("0", None, None, 8191, false));
    assert_eq!(netstack::runtime::eal_args(&c), ["-l", "0", "--no-huge", "-a", "0000:01:00.0"]);
}

#[test]
fn bad_fields_name_field_and_line() {
    let cases: &[(&str, &str, usize, &str, &str)] = &[
        ("bad address", "address = \"10.0.0.2/24\"", 8, "ipv4.address", "10.0.0.300/24"),
        ("no prefix", "address = \"10.0.0.2/24\"", 8, "ipv4.address", "10.0.0.2"),
        ("gateway off-subnet", "gateway = \"10.0.0.1\"", 9, "ipv4.gateway", "10.1.0.1"),
        ("bad mac", "mac = \"02:00:00:00:00:05\"", 5, "port.mac", "02:00:00"),
        ("bad lcores", "lcores = \"0-1\"", 1, "lcores", "all"),
    ];
    for (what, line_text, line, field, bad) in cases {
        let key = line_text.split(" = ").next().unwrap();
        let text = GOOD.replace(line_text, &format!("{key} = \"{bad}\""));
        let (l, f, message) = fails(&text);
        assert_eq!((l, f.as_str()), (*line, *field), "{what}: {message}");
    }
    let (l, f, m) = fails(&GOOD.replace("pool_size = 4096", "pool_size = 10"));
    assert_eq!((l, f.as_str()), (12, "memory.pool_size"), "{m}");
    let (l, f, m) = fails(&GOOD.replace("pool_size = 4096", "pool_size = \"many\""));
    assert_eq!((l, f.as_str()), (12, "memory.pool_size"), "{m}");
    let (l, f, m) = fails(&GOOD.replace("backlog = 8", "backlog = 0"));
    assert_eq!((l, f.as_str()), (17, "tcp.backlog"), "{m}");
    let (l, f, m) = fails(&GOOD.replace("backlog = 8", "backlgo = 8"));
    assert_eq!((l, f.as_str()), (17, "tcp.backlgo"), "{m}");
    assert!(m.contains("unknown field"), "{m}");
}

#[test]
fn missing_fields_name_the_field() {
    let (l, f, m) = fails(&GOOD.replace("address = \"10.0.0.2/24\"\n", ""));
    assert_eq!((l, f.as_str()), (7, "ipv4.address"), "{m}");
    let (_, f, m) = fails("[ipv4]\naddress = \"10.0.0.2/24\"\n");
    assert_eq!(f, "port", "{m}");
    assert!(m.contains("missing field `port`"), "{m}");
    let (l, f, m) = fails("[port]\nmac = \"02:00:00:00:00:01\"\n[ipv4]\naddress = \"10.0.0.2/24\"\n");
    assert_eq!((l, f.as_str()), (1, "port.device"), "{m}");
}

#[test]
fn unreadable_file_says_which() {
    let e = Config::load(Path::new("/nonexistent/netstack.toml")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/netstack.toml"), "{e}");
}

/// The runtime's idle options: the default waits on the port after 200 us of spinning; `--busy-poll`,
/// `--idle-yield` and `--idle-sleep-us` replace it and exclude each other; numbers are checked.
#[test]
fn idle_options_parse_and_exclude_each_other() {
    use netstack::runtime::{parse_args, DEFAULT_IDLE_SPIN};
    use std::time::Duration;
    let dir = std::env::temp_dir().join(format!("netstack-idle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.toml");
    std::fs::write(&file, "[port]\ndevice = \"net_null0\"\n[ipv4]\naddress = \"10.0.0.2/24\"\n").unwrap();
    let path = file.to_str().unwrap();
    let args = |extra: &[&str]| {
        let mut a = vec!["--config".to_owned(), path.to_owned()];
        a.extend(extra.iter().map(|s| s.to_string()));
        parse_args(a)
    };
    let o = args(&["--port", "7"]).unwrap();
    assert_eq!((o.busy_poll, o.idle_yield, o.idle_sleep, o.idle_spin), (false, false, None, DEFAULT_IDLE_SPIN));
    assert_eq!(o.app_args, ["--port", "7"]);
    let o = args(&["--idle-spin-us", "200"]).unwrap();
    assert_eq!(o.idle_spin, Duration::from_micros(200));
    assert!(args(&["--busy-poll"]).unwrap().busy_poll);
    assert_eq!(args(&["--idle-sleep-us", "5"]).unwrap().idle_sleep, Some(Duration::from_micros(5)));
    let e = args(&["--busy-poll", "--idle-sleep-us", "5"]).unwrap_err().to_string();
    assert!(e.contains("exclude each other"), "{e}");
    let e = args(&["--idle-spin-us", "x"]).unwrap_err().to_string();
    assert!(e.contains("--idle-spin-us") && e.contains("`x`"), "{e}");
    // A sleep or spin too long to see Ctrl-C is refused with the range (the loop checks for it between sleeps).
    let e = args(&["--idle-sleep-us", "99999999999999"]).unwrap_err().to_string();
    assert!(e.contains("--idle-sleep-us") && e.contains("0 to 1000000"), "{e}");
    let e = args(&["--idle-spin-us", "1000001"]).unwrap_err().to_string();
    assert!(e.contains("0 to 1000000"), "{e}");
    assert_eq!(args(&["--idle-sleep-us", "1000000"]).unwrap().idle_sleep, Some(Duration::from_secs(1)));
    std::fs::remove_dir_all(&dir).ok();
}

/// Values that parse but cannot work are refused with the field, the line and why (issue 28).
#[test]
fn values_that_cannot_work_name_field_line_and_range() {
    let replace = |from: &str, to: &str| {
        assert!(GOOD.contains(from), "{from}");
        GOOD.replace(from, to)
    };
    let address = "address = \"10.0.0.2/24\"";
    let gateway = "gateway = \"10.0.0.1\"";
    let mac = "mac = \"02:00:00:00:00:05\"";
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (replace(address, "address = \"255.255.255.255/24\""), 8, "ipv4.address", "broadcast"),
        (replace(address, "address = \"224.0.0.1/24\""), 8, "ipv4.address", "multicast"),
        (replace(address, "address = \"240.0.0.1/24\""), 8, "ipv4.address", "reserved"),
        (replace(address, "address = \"0.0.0.0/24\""), 8, "ipv4.address", "unspecified"),
        (replace(address, "address = \"127.0.0.1/8\""), 8, "ipv4.address", "loopback"),
        (replace(address, "address = \"10.0.0.0/24\""), 8, "ipv4.address", "network address"),
        (replace(address, "address = \"10.0.0.255/24\""), 8, "ipv4.address", "broadcast address"),
        (replace(address, "address = \"10.0.0.2/0\""), 8, "ipv4.address", "/0"),
        (replace(address, "address = \"10.0.0.2/32\""), 8, "ipv4.address", "/32"),
        (replace(address, "address = \"10.0.0.2/33\""), 8, "ipv4.address", "1 to 31"),
        (replace(gateway, "gateway = \"10.0.0.2\""), 9, "ipv4.gateway", "own address"),
        (replace(gateway, "gateway = \"10.0.0.255\""), 9, "ipv4.gateway", "broadcast"),
        (replace(gateway, "gateway = \"224.0.0.9\""), 9, "ipv4.gateway", "multicast"),
        (replace(mac, "mac = \"01:00:5e:00:00:01\""), 5, "port.mac", "multicast"),
        (replace(mac, "mac = \"ff:ff:ff:ff:ff:ff\""), 5, "port.mac", "broadcast"),
        (replace(mac, "mac = \"00:00:00:00:00:00\""), 5, "port.mac", "all zeros"),
        (replace("pool_size = 4096", "pool_size = 99999999999"), 12, "memory.pool_size", "512 to 16777215"),
        (
            replace("rx_buffer = 16384", "rx_buffer = 16384\nmax_connections = 1000000\ntx_buffer = 1073741824"),
            17,
            "tcp.max_connections",
            "this machine has",
        ),
        (
            replace("rx_buffer = 16384", "rx_buffer = 16384\nhandshake_timeout = 0"),
            17,
            "tcp.handshake_timeout",
            "1 to 600",
        ),
        (
            replace("rx_buffer = 16384", "rx_buffer = 16384\nkeepalive = 60\nuser_timeout = 90"),
            18,
            "tcp.user_timeout",
            "twice keepalive",
        ),
        (
            replace("rx_buffer = 16384", "rx_buffer = 16384\nmax_connections = 0"),
            17,
            "tcp.max_connections",
            "1 to 1000000",
        ),
        (
            replace("rx_buffer = 16384", "rx_buffer = 16384\nsyn_backlog = 99999999"),
            17,
            "tcp.syn_backlog",
            "1 to 65536",
        ),
        (replace("[control]", "[udp]\nqueue = 0\n[control]"), 20, "udp.queue", "1 to 65536"),
        (replace("[control]", "[arp]\nmax_entries = 1\n[control]"), 20, "arp.max_entries", "16 to"),
        (format!("{GOOD}[extra]\nx = 1\n"), 22, "extra", "unknown field"),
        (format!("{GOOD}[port]\ndevice = \"net_null0\"\n"), 22, "port", ""),
    ];
    for (text, line, field, needle) in &cases {
        let (l, f, message) = fails(text);
        assert_eq!((l, f.as_str()), (*line, *field), "{message}\n{text}");
        assert!(message.contains(needle), "{field}: `{message}` lacks `{needle}`");
    }
    // What can work still parses: a /31 (RFC 3021: both addresses are hosts), keep-alive off, the limits given.
    let ok = replace(address, "address = \"10.0.0.0/31\"").replace(gateway, "gateway = \"10.0.0.1\"");
    let c = parse(&ok).unwrap();
    assert_eq!((c.address, c.prefix_len), (Ipv4Addr::new(10, 0, 0, 0), 31));
    let c = parse(&replace(
        "rx_buffer = 16384",
        "rx_buffer = 16384\nsyn_backlog = 64\nsyn_cookies = false\nhandshake_timeout = 2\nmax_connections = 500\n\
         keepalive = 0\nuser_timeout = 5\nlinger = 3",
    ))
    .unwrap();
    let s = c.stack_config(MacAddr([2, 0, 0, 0, 0, 9]));
    assert_eq!((s.tcp_syn_backlog, s.tcp_syn_cookies, s.tcp_max_connections), (64, false, 500));
    assert_eq!(s.tcp_handshake_timeout, std::time::Duration::from_secs(2));
    assert_eq!((s.tcp_keepalive, s.tcp_user_timeout), (None, Some(std::time::Duration::from_secs(5))));
    assert_eq!(s.tcp_linger, std::time::Duration::from_secs(3));
    let d = parse(GOOD).unwrap().stack_config(MacAddr([2, 0, 0, 0, 0, 9]));
    let defaults = netstack::StackConfig::new(d.mac, d.addr, d.prefix_len);
    assert_eq!(
        (d.tcp_max_connections, d.tcp_keepalive, d.tcp_user_timeout),
        (10_000, defaults.tcp_keepalive, defaults.tcp_user_timeout)
    );
}

/// A configuration file is read with a bound: `/dev/zero` (or any file over 1 MiB) is refused without being read
/// whole, a missing one names itself.
#[test]
fn config_files_are_read_with_a_bound() {
    let e = Config::load(Path::new("/dev/zero")).unwrap_err().to_string();
    assert!(e.contains("cannot read configuration /dev/zero: longer than 1048576 bytes"), "{e}");
    let e = Config::load(Path::new("/nonexistent/server.toml")).unwrap_err().to_string();
    assert!(e.starts_with("cannot read configuration /nonexistent/server.toml"), "{e}");
}

/// The example the Debian package ships (/usr/share/doc/pktio/examples/netstack.toml) is a valid configuration.
#[test]
fn the_packaged_example_configuration_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/examples/netstack.toml");
    let config = Config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!((config.address, config.prefix_len), (Ipv4Addr::new(10, 0, 0, 2), 24));
}
