//! The glue between our L2 layer and smoltcp: a `Medium::Ip` device whose receive side is the queue of IPv4/TCP
//! packets our input path accepted (Ethernet header already stripped, in the mbuf it arrived in) and whose
//! transmit side writes each packet smoltcp builds straight into a fresh mbuf, leaving headroom for the
//! Ethernet header the ARP layer adds. No copies beyond smoltcp's own socket buffers.

use std::collections::VecDeque;

use mempool::{Mbuf, Mempool};
use smoltcp::phy::{self, Checksum, DeviceCapabilities, Medium};
use smoltcp::time::Instant as SmolInstant;

/// The device smoltcp's `Interface` polls.
pub(crate) struct IpDevice {
    /// Accepted IPv4 packets for smoltcp, oldest first.
    pub(crate) rx: VecDeque<Mbuf>,
    /// IPv4 packets smoltcp produced this poll, for the L2 layer.
    pub(crate) tx: Vec<Mbuf>,
    pool: Mempool,
    mtu: usize,
    /// Where a packet goes when the pool is empty: smoltcp's token must be consumed, the packet is then lost
    /// (and TCP retransmits it).
    scratch: Vec<u8>,
    pub(crate) no_mbuf: u64,
}

impl IpDevice {
    pub(crate) fn new(pool: Mempool, mtu: usize, burst: usize) -> Self {
        IpDevice {
            rx: VecDeque::with_capacity(burst),
            tx: Vec::with_capacity(burst),
            pool,
            mtu,
            scratch: vec![0; mtu],
            no_mbuf: 0,
        }
    }
}

/// One received packet: the mbuf's bytes are given to smoltcp in place, the mbuf is freed after.
pub(crate) struct RxToken(Mbuf);

/// Room for one packet to send.
pub(crate) struct TxToken<'a> {
    out: &'a mut Vec<Mbuf>,
    pool: &'a Mempool,
    scratch: &'a mut Vec<u8>,
    no_mbuf: &'a mut u64,
}

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0.data())
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut mbuf = match self.pool.alloc() {
            Some(m) if (m.tailroom() as usize) >= len => m,
            _ => {
                *self.no_mbuf += 1;
                self.scratch.resize(len.max(self.scratch.len()), 0);
                return f(&mut self.scratch[..len]);
            }
        };
        let r = f(mbuf.append(len as u16).expect("tailroom checked above"));
        self.out.push(mbuf);
        r
    }
}

impl phy::Device for IpDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _timestamp: SmolInstant) -> Option<(RxToken, TxToken<'_>)> {
        let m = self.rx.pop_front()?;
        let tx =
            TxToken { out: &mut self.tx, pool: &self.pool, scratch: &mut self.scratch, no_mbuf: &mut self.no_mbuf };
        Some((RxToken(m), tx))
    }

    fn transmit(&mut self, _timestamp: SmolInstant) -> Option<TxToken<'_>> {
        Some(TxToken { out: &mut self.tx, pool: &self.pool, scratch: &mut self.scratch, no_mbuf: &mut self.no_mbuf })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = self.mtu;
        caps.max_burst_size = Some(crate::BURST);
        // Our input path verified the IPv4 header checksum already.
        caps.checksum.ipv4 = Checksum::Tx;
        caps
    }
}
