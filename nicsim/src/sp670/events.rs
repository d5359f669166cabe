//! Mailbox requests and events of the management CPU (docs/hw/hinic3.md §6.4, §6.5): a request is answered on the
//! AEQ its header names; a link change becomes a HILINK 7 event on AEQ 0 that the driver acknowledges.
//!
//! When an event is posted matters. A function has one mailbox window, and DPDK acknowledges events from its
//! interrupt thread while its main thread may be writing the next request into the same window, with nothing
//! between the two (docs/hw/hinic3.md §6.5): an event that lands while a request is being written tears it. The
//! management CPU of the model therefore posts an event only where no request can be in the window: together with
//! the answer to a request, holding that answer until the event is acknowledged (the requester is waiting for its
//! answer then, writing nothing), or once the mailbox has been quiet for `Sp670Config::event_quiet` (zero by default: at once).

use super::mbox::{self, Message};
use super::mgmt;
use super::regs::MSG_MAX;
use super::regs::PF_STATUS_ACTIVE;
use super::regs::{H_AEQ_ID, H_DATA_TYPE, H_DIRECTION, H_NO_ACK, H_SOURCE, H_SRC};
use super::Core;
use std::time::{Duration, Instant};

/// An answer held for an event's acknowledgement is posted anyway after this long (a driver that does not
/// acknowledge, or acknowledges only from a thread that is not running yet).
pub(crate) const HOLD_AT_MOST: Duration = Duration::from_secs(2);

/// An event posted to the driver and not acknowledged yet.
#[derive(Debug, Clone)]
pub(crate) struct PendingEvent {
    module: u8,
    cmd: u16,
    msg_id: u8,
    body: Vec<u8>,
}

/// A message ready to be posted: (AEQ, header, body).
type Post = (usize, u64, Vec<u8>);

/// Event delivery state.
#[derive(Debug)]
pub(crate) struct Events {
    /// Posted, waiting for their acknowledgement.
    posted: Vec<PendingEvent>,
    /// Made, in order, waiting for a moment when no request can be in the window.
    due: Vec<(PendingEvent, u64)>,
    /// An answer held until the events posted with it are acknowledged, and the latest time to post it.
    held: Option<(Post, Instant)>,
    msg_id: u8,
    /// The last mailbox send the driver triggered.
    last_send: Instant,
}

impl Default for Events {
    fn default() -> Events {
        Events { posted: Vec::new(), due: Vec::new(), held: None, msg_id: 0, last_send: Instant::now() }
    }
}

impl Events {
    /// The PF left the active state: events not yet posted are dropped.
    pub(crate) fn drop_due(&mut self) {
        self.due.clear();
    }

    /// Events posted and not acknowledged: (module, cmd, MSG_ID).
    pub(crate) fn unacked(&self) -> Vec<(u8, u16, u8)> {
        self.posted.iter().map(|e| (e.module, e.cmd, e.msg_id)).collect()
    }
}

impl Core {
    pub(super) fn handle_message(&mut self, m: Message) {
        let now = Instant::now();
        self.events.last_send = now;
        let h = m.header;
        if H_DIRECTION.get(h) == 1 {
            self.acknowledged(&m);
            if self.events.posted.is_empty() {
                self.release_held();
            }
            return;
        }
        // A request while an answer is held: the driver gave up waiting for it, so it goes out first.
        self.release_held();
        if H_SOURCE.get(h) != 1 || H_SRC.get(h) != u64::from(self.config.func_id) && H_DATA_TYPE.get(h) == 1 {
            self.fault(format!(
                "mailbox header {h:#018x}: SOURCE must be 1 and SRC_GLB_FUNC_IDX this function ({})",
                self.config.func_id
            ));
        }
        let (module, cmd) = (m.module(), m.cmd());
        let (status, mut resp) = self.mgmt_command(module, cmd, &m.body);
        resp[0] = status;
        self.mgmt_log.push((module, cmd, status));
        self.counters.mgmt_commands += 1;
        if H_NO_ACK.get(h) == 1 || (module == mgmt::module::COMM && cmd == 3) || self.inject.mbox_stalled {
            return;
        }
        let aeq = H_AEQ_ID.get(h) as usize;
        let header = mbox::mgmt_header(module, cmd, m.msg_id(), aeq as u32, resp.len(), 1, false);
        if self.post_due_events() {
            self.events.held = Some(((aeq, header, resp), now + HOLD_AT_MOST));
        } else {
            self.post_message(aeq, header, &resp);
        }
    }

    /// The acknowledgement of an event (docs/hw/hinic3.md §6.5): same module, command, MSG_ID, body echoed.
    fn acknowledged(&mut self, m: &Message) {
        let posted = &mut self.events.posted;
        let Some(i) = posted.iter().position(|e| e.module == m.module() && e.cmd == m.cmd() && e.msg_id == m.msg_id())
        else {
            return self.fault(format!(
                "an answer (DIRECTION 1) for module {} cmd {} MSG_ID {} matches no event the model sent",
                m.module(),
                m.cmd(),
                m.msg_id()
            ));
        };
        let e = posted.remove(i);
        // The body is the event's own (DPDK's mgmt path) or, for HILINK, the acknowledging driver's whole 2048-byte
        // output buffer (DPDK's function-mailbox path acks those first): the firmware reads neither, so only the
        // form is checked (docs/hw/hinic3.md §6.5).
        let hilink_first_ack = e.module == mgmt::module::MAG && m.body.len() == MSG_MAX;
        if (e.body != m.body && !hilink_first_ack) || H_NO_ACK.get(m.header) != 1 {
            self.fault(format!(
                "acknowledgement of event module {} cmd {}: NO_ACK must be 1 and the body the event's own",
                e.module, e.cmd
            ));
        }
    }

    fn release_held(&mut self) {
        if let Some(((aeq, header, body), _)) = self.events.held.take() {
            self.post_message(aeq, header, &body);
        }
    }

    /// Posts the due events, if any; true when one went out.
    fn post_due_events(&mut self) -> bool {
        let due = std::mem::take(&mut self.events.due);
        let any = !due.is_empty();
        for (e, header) in due {
            let body = e.body.clone();
            self.events.posted.push(e);
            self.post_message(0, header, &body);
        }
        any
    }

    /// Run on every step: makes a link event (HILINK 7) when the link state changed and the PF status lets events
    /// through, posts it when the mailbox has been quiet, and lets out a held answer whose time is up.
    pub(super) fn link_events(&mut self) {
        let now = Instant::now();
        if self.down_until.is_some_and(|t| now >= t) {
            self.down_until = None;
        }
        if self.events.held.as_ref().is_some_and(|(_, until)| now >= *until) {
            self.release_held();
        }
        let up = self.link_up();
        if up != self.reported_link && self.pf_status == PF_STATUS_ACTIVE && self.aeqs[0].len() != 0 {
            self.reported_link = up;
            let mut body = vec![0u8; 12];
            body[8] = self.config.port_id;
            body[9] = u8::from(up);
            self.events.msg_id = (self.events.msg_id + 1) & 0xF;
            let id = self.events.msg_id;
            let header = mbox::mgmt_header(mgmt::module::MAG, 7, id, 0, body.len(), 0, false);
            self.events.due.push((PendingEvent { module: mgmt::module::MAG, cmd: 7, msg_id: id, body }, header));
        }
        if self.events.held.is_none() && now.duration_since(self.events.last_send) >= self.config.event_quiet {
            self.post_due_events();
        }
    }
}
