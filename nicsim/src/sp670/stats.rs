//! Counters (docs/hw/hinic3.md §13): the sixteen vport counters of L2NIC 9 and the 86 physical-port counters of
//! MAG 151, kept by the model as the frames pass. Frames travel without FCS; the port counters count 4 more bytes
//! per frame, as a MAC does.

/// L2NIC 9 answer length.
pub const VPORT_STATS_LEN: usize = 192;
/// MAG 151 answer length.
pub const PORT_STATS_LEN: usize = 816;

/// Index of each vport counter (docs/hw/hinic3.md §13 order).
#[allow(missing_docs)]
pub mod vport {
    pub const TX_UCAST_PKTS: usize = 0;
    pub const TX_UCAST_BYTES: usize = 1;
    pub const TX_MCAST_PKTS: usize = 2;
    pub const TX_BCAST_PKTS: usize = 4;
    pub const RX_UCAST_PKTS: usize = 6;
    pub const RX_MCAST_PKTS: usize = 8;
    pub const RX_BCAST_PKTS: usize = 10;
    pub const TX_DISCARD: usize = 12;
    pub const RX_DISCARD: usize = 13;
    pub const TX_ERR: usize = 14;
    pub const RX_ERR: usize = 15;
}

/// Physical-port counter indexes shared by the TX (42) and RX (44) blocks (docs/hw/hinic3.md §13).
#[allow(missing_docs)]
pub mod port {
    pub const SIZE_64: usize = 3;
    pub const OVERSIZE: usize = 17;
    pub const GOOD_PKTS: usize = 21;
    pub const GOOD_OCTETS: usize = 22;
    pub const TOTAL_PKTS: usize = 23;
    pub const TOTAL_OCTETS: usize = 24;
    pub const UCAST: usize = 25;
    pub const MCAST: usize = 26;
    pub const BCAST: usize = 27;
    pub const RX_FCS_ERR: usize = 40;
    pub const TX_LEN: usize = 42;
    pub const RX_LEN: usize = 44;
}

/// The model's counters.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    pub vport: [u64; 16],
    pub port_tx: [u64; port::TX_LEN],
    pub port_rx: [u64; port::RX_LEN],
}

impl Default for Stats {
    fn default() -> Self {
        Stats { vport: [0; 16], port_tx: [0; port::TX_LEN], port_rx: [0; port::RX_LEN] }
    }
}

/// 0 unicast, 1 multicast, 2 broadcast.
fn cast(frame: &[u8]) -> usize {
    match frame.first() {
        _ if frame.len() >= 6 && frame[..6] == [0xFF; 6] => 2,
        Some(b) if b & 1 == 1 => 1,
        _ => 0,
    }
}

/// The size bucket (index 3 "64" to 14 "12288 to 16383") of a frame of `len` bytes on the wire with FCS.
fn bucket(len: usize) -> Option<usize> {
    const UPPER: [usize; 12] = [64, 127, 255, 511, 1023, 1518, 2047, 4095, 8191, 9216, 12287, 16383];
    (len >= 64).then(|| UPPER.iter().position(|&u| len <= u).map(|i| port::SIZE_64 + i)).flatten()
}

fn count(block: &mut [u64], frame: &[u8]) {
    let wire = frame.len() as u64 + 4;
    if let Some(b) = bucket(wire as usize) {
        block[b] += 1;
    }
    for i in [port::GOOD_PKTS, port::TOTAL_PKTS] {
        block[i] += 1;
    }
    block[port::GOOD_OCTETS] += wire;
    block[port::TOTAL_OCTETS] += wire;
    block[port::UCAST + cast(frame)] += 1;
}

impl Stats {
    /// A frame put on the wire.
    pub fn tx(&mut self, frame: &[u8]) {
        let c = cast(frame);
        self.vport[vport::TX_UCAST_PKTS + 2 * c] += 1;
        self.vport[vport::TX_UCAST_BYTES + 2 * c] += frame.len() as u64;
        count(&mut self.port_tx, frame);
    }

    /// A frame delivered to the host (`to_host`) or dropped after the MAC took it.
    pub fn rx(&mut self, frame: &[u8], to_host: bool) {
        count(&mut self.port_rx, frame);
        if to_host {
            let c = cast(frame);
            self.vport[vport::RX_UCAST_PKTS + 2 * c] += 1;
            self.vport[vport::RX_UCAST_PKTS + 1 + 2 * c] += frame.len() as u64;
        } else {
            self.vport[vport::RX_DISCARD] += 1;
        }
    }

    /// Takes back the discard and port counts of a frame that will be retried.
    pub fn unwind_discard(&mut self, frame: &[u8]) {
        self.vport[vport::RX_DISCARD] -= 1;
        let wire = frame.len() as u64 + 4;
        if let Some(b) = bucket(wire as usize) {
            self.port_rx[b] -= 1;
        }
        for i in [port::GOOD_PKTS, port::TOTAL_PKTS] {
            self.port_rx[i] -= 1;
        }
        self.port_rx[port::GOOD_OCTETS] -= wire;
        self.port_rx[port::TOTAL_OCTETS] -= wire;
        self.port_rx[port::UCAST + cast(frame)] -= 1;
    }

    pub fn clear_vport(&mut self) {
        self.vport = [0; 16];
    }

    pub fn clear_port(&mut self) {
        self.port_tx = [0; port::TX_LEN];
        self.port_rx = [0; port::RX_LEN];
    }

    /// Fills an L2NIC 9 answer: stats_size at 8, the counters from 16 (docs/hw/hinic3.md §7.3).
    pub fn vport_answer(&self, out: &mut [u8]) {
        out[8..12].copy_from_slice(&(16u32 * 8).to_le_bytes());
        for (i, v) in self.vport.iter().enumerate() {
            out[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Fills a MAG 151 answer: 42 TX then 44 RX counters from 8.
    pub fn port_answer(&self, out: &mut [u8]) {
        for (i, v) in self.port_tx.iter().chain(self.port_rx.iter()).enumerate() {
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
    }
}
