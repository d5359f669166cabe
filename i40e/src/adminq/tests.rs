use std::sync::Arc;
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaMapper, IdentityMapper};
use hugepage::Allocator;

use super::cmds::{self, flags, Opcode};
use super::*;
use crate::testing::{FakeRegs, Firmware};

fn queue() -> AdminQueue {
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    AdminQueue::new(&Allocator::no_huge(), &mapper, "t", Duration::from_millis(50), Duration::from_micros(10)).unwrap()
}

fn atq_desc(q: &AdminQueue, slot: usize) -> AqDesc {
    q.atq.read_desc(slot)
}

#[test]
fn program_writes_the_ring_registers_and_arms_every_arq_slot() {
    let regs = Regs::new(Arc::new(FakeRegs::default()));
    let mut q = queue();
    assert!(q.program(&regs));
    let f = regs.space();
    assert_eq!(f.peek(regs::PF_ATQLEN), 32 | atqlen::ENABLE);
    assert_eq!(f.peek(regs::PF_ARQLEN), 32 | atqlen::ENABLE);
    assert_eq!(f.peek(regs::PF_ATQBAL) as u64 | (f.peek(regs::PF_ATQBAH) as u64) << 32, q.atq.desc.iova(0));
    assert_eq!(f.peek(regs::PF_ARQT), 31, "every buffer handed to the firmware");
    for i in 0..RING_LEN {
        let d = q.arq.read_desc(i);
        assert_eq!(d.head.flags, flags::BUF | flags::LB);
        assert_eq!(d.head.datalen as usize, BUF_LEN);
        let a = cmds::BufAddr::decode(&d.params);
        assert_eq!(a.addr_low as u64 | (a.addr_high as u64) << 32, q.arq.bufs.iova(i * BUF_LEN));
    }
    q.shutdown(&regs);
    assert_eq!((f.peek(regs::PF_ATQLEN), f.peek(regs::PF_ARQBAL)), (0, 0));
}

#[test]
fn a_direct_command_completes_when_the_head_reaches_the_tail() {
    let regs = Regs::new(Arc::new(FakeRegs::default()));
    let mut q = queue();
    assert!(q.program(&regs));
    let d = q.send(&regs, Opcode::GetVersion, [0; 16], None, &[]).unwrap();
    let v = cmds::GetVersionResp::decode(&d.params);
    assert_eq!((v.api_major, v.api_minor, v.fw_major), (1, 15, 9));
    let sent = atq_desc(&q, 0);
    assert_eq!(sent.head.opcode, 0x0001);
    assert_eq!(sent.head.flags & (flags::SI | flags::BUF), flags::SI, "a direct command has SI and no BUF");
    assert_eq!(regs.space().peek(regs::PF_ATQT), 1);
}

#[test]
fn an_indirect_command_carries_its_buffer_with_buf_lb_and_rd() {
    let regs = Regs::new(Arc::new(FakeRegs::default()));
    let mut q = queue();
    assert!(q.program(&regs));
    // A get: BUF, no RD, 24 bytes (no LB); the answer lands in the caller's buffer.
    let mut mac = [0u8; 24];
    q.send(&regs, Opcode::MacAddressRead, [0; 16], Some(Buffer { data: &mut mac, rd: false }), &[]).unwrap();
    assert_eq!(mac[..6], [0x02, 0, 0, 0, 0x07, 0x10]);
    let d = atq_desc(&q, 0);
    assert_eq!(d.head.flags & (flags::BUF | flags::RD | flags::LB), flags::BUF);
    assert_eq!(d.head.datalen, 24);
    let a = cmds::BufAddr::decode(&d.params);
    assert_eq!(a.addr_low as u64 | (a.addr_high as u64) << 32, q.atq.bufs.iova(0), "slot 0's buffer");
    // A set of more than 512 bytes: BUF | RD | LB.
    let mut big = vec![0u8; 600];
    q.send(&regs, Opcode::UpdateVsi, [0; 16], Some(Buffer { data: &mut big, rd: true }), &[]).unwrap_err();
    let d = atq_desc(&q, 1);
    assert_eq!(d.head.flags & (flags::BUF | flags::RD | flags::LB), flags::BUF | flags::RD | flags::LB);
    assert_eq!(d.head.datalen, 600);
}

#[test]
fn a_firmware_error_names_the_opcode_and_the_code() {
    let fw = Firmware { fail: Some((0x0603, 14)), ..Firmware::default() };
    let regs = Regs::new(Arc::new(FakeRegs::new(fw)));
    let mut q = queue();
    assert!(q.program(&regs));
    let e = q.send(&regs, Opcode::SetMacConfig, [0; 16], None, &[]).unwrap_err();
    assert_eq!(e, Error::AdminQueue { opcode: 0x0603, name: "set MAC config", status: 14, status_name: "EINVAL" });
    assert!(e.to_string().contains("0x0603") && e.to_string().contains("EINVAL"), "{e}");
    // An accepted code is the caller's to handle.
    assert_eq!(q.send(&regs, Opcode::SetMacConfig, [0; 16], None, &[14]).unwrap().status(), 14);
}

/// Registers with no firmware behind them.
#[derive(Debug)]
struct Silent(Vec<std::sync::atomic::AtomicU32>);

impl RegisterSpace for Silent {
    fn read32(&self, offset: usize) -> u32 {
        self.0[offset / 4].load(std::sync::atomic::Ordering::Relaxed)
    }
    fn write32(&self, offset: usize, value: u32) {
        self.0[offset / 4].store(value, std::sync::atomic::Ordering::Relaxed)
    }
    fn len(&self) -> usize {
        self.0.len() * 4
    }
}

#[test]
fn a_command_nobody_answers_times_out_naming_the_opcode() {
    let regs = Regs::new(Arc::new(Silent((0..0x90000 / 4).map(|_| Default::default()).collect())));
    let mut q = queue();
    assert!(q.program(&regs));
    regs.write(regs::PF_ATQLEN, regs.read(regs::PF_ATQLEN) | atqlen::ATQCRIT);
    let e = q.send(&regs, Opcode::GetVersion, [0; 16], None, &[]).unwrap_err();
    match &e {
        Error::AdminTimeout { opcode: 0x0001, head: 0, .. } => {}
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("critical error"), "{e}");
}

#[test]
fn events_are_taken_off_the_arq_and_the_slot_rearmed() {
    let fake = Arc::new(FakeRegs::default());
    let regs = Regs::new(fake.clone());
    let mut q = queue();
    assert!(q.program(&regs));
    assert!(q.receive(&regs).is_none());
    let p = fake.firmware().link_params();
    assert!(fake.post_event(0x0607, p));
    let ev = q.receive(&regs).unwrap();
    assert_eq!(ev.desc.head.opcode, 0x0607);
    assert_eq!(cmds::LinkStatus::decode(&ev.desc.params).link_info & cmds::link::LINK_UP, 1);
    assert_eq!(fake.peek(regs::PF_ARQT), 0, "slot 0 handed back");
    assert_eq!(q.arq.read_desc(0), q.arq.armed(0));
    assert!(q.receive(&regs).is_none());
}

#[test]
fn descriptor_head_fields_sit_at_their_bytes() {
    let d = AqDesc {
        head: DescHead {
            flags: 0x1003,
            opcode: 0x0212,
            datalen: 128,
            retval: 0x000E,
            cookie_high: 0x1122_3344,
            cookie_low: 0x5566_7788,
        },
        params: [0xAB; 16],
    };
    let b = d.encode();
    assert_eq!(b[..16], [0x03, 0x10, 0x12, 0x02, 0x80, 0, 0x0E, 0, 0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55]);
    assert_eq!(b[16..], [0xAB; 16]);
    assert_eq!(AqDesc::decode(&b), d);
    assert_eq!(d.status(), 14);
}
