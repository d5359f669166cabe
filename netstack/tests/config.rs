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

/// The runtime's idle options: the default waits on the port after 50 us of spinning; `--busy-poll`,
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
    std::fs::remove_dir_all(&dir).ok();
}
