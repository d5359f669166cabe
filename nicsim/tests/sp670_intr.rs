//! The SP670 model's MSI-X vectors (docs/hw/hinic3.md §5.5) driven through raw register writes and commands built
//! from the notes: an RQ context that names a vector, FUNC_MSI_CLR_WR masks and auto-mask, COMM 23 coalescing, the
//! AEQ's armed and "always" modes.

mod sp670_rig;

use std::sync::Mutex;

use sp670_rig::*;

/// The vectors the model signalled, in order.
fn sink(r: &Rig) -> Arc<Mutex<Vec<u16>>> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    r.port.set_irq_sink(Some(Arc::new(move |v| g.lock().unwrap().push(v))));
    got
}

fn signalled(got: &Mutex<Vec<u16>>) -> Vec<u16> {
    got.lock().unwrap().clone()
}

/// FUNC_MSI_CLR_WR (docs/hw/hinic3.md §3.1): `ops` (bits 4:0) on `vector`.
fn msi(r: &Rig, vector: u32, ops: u32) {
    r.wr(MSI_CLR, ops | vector << 22);
}

const CLR_RESEND: u32 = 1 << 0;
const SET_MASK: u32 = 1 << 1;
const CLR_MASK: u32 = 1 << 2;
const SET_AUTO: u32 = 1 << 3;

/// Steps the model for `d` and asserts no vector signalled meanwhile.
fn quiet_for(r: &Rig, got: &Mutex<Vec<u16>>, d: Duration, what: &str) {
    let before = signalled(got);
    let end = Instant::now() + d;
    while Instant::now() < end {
        r.step();
        std::thread::yield_now();
    }
    assert_eq!(signalled(got), before, "{what}");
}

/// RQ 0's context again (docs/hw/hinic3.md §9.2), now with interrupts on `vector` (dword 1: index 30:21, bit 31
/// clear), and its doorbell.
fn rq_interrupt_on(r: &mut Rig, vector: u32) {
    let mut ctx = r.rq_ctx(0);
    ctx[4..8].copy_from_slice(&(vector << 21).to_le_bytes());
    // The queue goes on where it is: CI (dword 0 31:16, 8-byte units) and the prefetch CI (dword 10 31:20).
    let ci = r.rq_ci[0] << 1;
    assert!(ci < 1 << 12);
    let patch = |c: &mut Vec<u8>, dw: usize, or: u32| {
        let v = u32::from_le_bytes(c[4 * dw..4 * dw + 4].try_into().unwrap()) | or;
        c[4 * dw..4 * dw + 4].copy_from_slice(&v.to_le_bytes());
    };
    patch(&mut ctx, 0, ci << 16);
    patch(&mut ctx, 10, ci << 20);
    let mut b = vec![0u8; 8];
    b[0..2].copy_from_slice(&1u16.to_le_bytes());
    b[2..4].copy_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&ctx);
    assert_eq!(r.cmdq(0, &b), (0, 0), "MODIFY_QUEUE_CTX RQ 0");
    r.rq_doorbell(0);
    r.step();
}

/// COMM 23 CFG_MSIX_CTRL_REG (docs/hw/hinic3.md §7.3): set (pending, coalesce, resend) of `vector`, read back.
fn msix_attr(r: &mut Rig, vector: u16, set: Option<[u8; 3]>) -> [u8; 3] {
    let mut m = vec![0u8; 24];
    m[12..14].copy_from_slice(&vector.to_le_bytes());
    if let Some(a) = set {
        m[10] = 1;
        m[14..17].copy_from_slice(&a);
        r.ok(module::COMM, 23, &m);
        m[10] = 0;
        m[14..17].fill(0);
    }
    r.ok(module::COMM, 23, &m)[14..17].try_into().unwrap()
}

#[test]
fn an_rq_raises_its_vector_as_masks_auto_mask_and_coalescing_say() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let got = sink(&r);
    let mac = r.port.config().mac;
    assert_eq!(msix_attr(&mut r, 1, None), [0, 0xFF, 7], "the notes' defaults");
    assert_eq!(msix_attr(&mut r, 1, Some([2, 2, 7])), [2, 2, 7], "DPDK's RX queue values, read back");
    // A polling RQ (bit 31 set) raises nothing, even unmasked.
    msi(&r, 1, CLR_MASK);
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 7, 64));
    quiet_for(&r, &got, Duration::from_millis(5), "a polling RQ signals no vector");
    assert!(r.recv(0).is_some());
    msi(&r, 1, SET_MASK);
    rq_interrupt_on(&mut r, 1);
    // Masked: the frame is delivered, the event held.
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 8, 64));
    quiet_for(&r, &got, Duration::from_millis(5), "a masked vector signals nothing");
    assert!(r.recv(0).is_some(), "delivered while masked");
    // Auto-mask on, unmask: the held event goes at once, and the vector masks itself.
    msi(&r, 1, SET_AUTO);
    msi(&r, 1, CLR_RESEND | CLR_MASK);
    assert_eq!(signalled(&got), vec![1], "the event held while masked is signalled at unmask");
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 9, 64));
    quiet_for(&r, &got, Duration::from_millis(5), "auto-masked after signalling");
    assert!(r.recv(0).is_some());
    // Re-armed with nothing new held: quiet until a frame, which the 10 µs coalescing timer lets out.
    msi(&r, 1, CLR_RESEND | CLR_MASK);
    assert_eq!(signalled(&got), vec![1, 1], "the frame that came while auto-masked");
    msi(&r, 1, CLR_RESEND | CLR_MASK);
    quiet_for(&r, &got, Duration::from_millis(5), "armed, no frame");
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 10, 64));
    poll("the coalesced frame's message", Duration::from_secs(2), || {
        r.step();
        signalled(&got).len() == 3
    });
    assert!(r.recv(0).is_some());
    assert_eq!(signalled(&got), vec![1, 1, 1]);
    r.port.assert_no_faults();
}

#[test]
fn aeq_elements_raise_the_aeq_vector_when_armed_or_always() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let got = sink(&r);
    // Auto-mask, as a driver does, so that the resend timer waits for the re-arm.
    msi(&r, 0, SET_AUTO | CLR_MASK);
    // bring_up left AEQ 0 in mode "armed" (CTRL_0 bit 31 = 0) and its CI not armed.
    r.port.set_cable(false);
    quiet_for(&r, &got, Duration::from_millis(5), "an AEQ that is not armed");
    let (h, body) = r.aeq_message(0).expect("the link-down event");
    r.ack(h, &body);
    // Arm it with the CI write (bit 21): the next element signals vector 0, once.
    let ci = u32::from(r.aeq_wrapped[0]) << 20 | r.aeq_ci[0];
    r.wr(AEQ_CI, ci | 1 << 21);
    r.port.set_cable(true);
    poll("the armed AEQ's message", Duration::from_secs(2), || {
        r.step();
        !signalled(&got).is_empty()
    });
    assert_eq!(signalled(&got), vec![0]);
    let (h, body) = r.aeq_message(0).expect("the link-up event");
    r.ack(h, &body);
    msi(&r, 0, CLR_RESEND | CLR_MASK);
    r.port.set_cable(false);
    quiet_for(&r, &got, Duration::from_millis(5), "one message per arming");
    let (h, body) = r.aeq_message(0).expect("the second link-down event");
    r.ack(h, &body);
    // Mode "always" (bit 31) with vector 3: an element signals without arming.
    msi(&r, 3, SET_AUTO | CLR_MASK);
    r.wr(AEQ_INDIR, 0);
    r.wr(AEQ_CTRL_0, 1 << 31 | 3);
    r.port.set_cable(true);
    poll("the always-mode message", Duration::from_secs(2), || {
        r.step();
        signalled(&got).len() == 2
    });
    assert_eq!(signalled(&got), vec![0, 3]);
    r.port.assert_no_faults();
}
