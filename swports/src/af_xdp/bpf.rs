//! The XDP program that sends a queue's frames to its AF_XDP socket, and the bpf(2) calls around it: an XSKMAP
//! keyed by receive queue index, the program loaded with the verifier's log kept for errors, map updates, and the
//! name of a program found by id (for the "already attached" error).
//!
//! The program is five instructions written here as named BPF operations (no libbpf, no compiler at build time):
//! `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)`. The low bits of the helper's flags are the
//! action when the map has no socket at that index, so queues the port does not own still reach the kernel stack.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// bpf(2) commands.
const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_PROG_GET_FD_BY_ID: libc::c_int = 13;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;

/// The action for frames of a queue without a socket: hand them to the kernel stack.
pub(crate) const XDP_PASS: i32 = 2;
/// Helper number of bpf_redirect_map.
const FN_REDIRECT_MAP: i32 = 51;
/// Offset of `rx_queue_index` in `struct xdp_md` (data, data_end, data_meta, ingress_ifindex come first).
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
/// `src_reg` value of a 64-bit immediate load that names a map by file descriptor.
const BPF_PSEUDO_MAP_FD: u8 = 1;

// Instruction classes, sizes, modes and operations (linux/bpf_common.h, linux/bpf.h).
const BPF_LD: u8 = 0x00;
const BPF_LDX: u8 = 0x01;
const BPF_JMP: u8 = 0x05;
const BPF_ALU64: u8 = 0x07;
const BPF_W: u8 = 0x00;
const BPF_DW: u8 = 0x18;
const BPF_IMM: u8 = 0x00;
const BPF_MEM: u8 = 0x60;
const BPF_K: u8 = 0x00;
const BPF_MOV: u8 = 0xb0;
const BPF_CALL: u8 = 0x80;
const BPF_EXIT: u8 = 0x90;

const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;

/// One BPF instruction (`struct bpf_insn`): opcode, destination and source registers (4 bits each, destination
/// in the low half), offset, immediate.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

impl Insn {
    const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn { code, regs: (src << 4) | (dst & 0x0f), off, imm }
    }

    /// `dst = *(u32 *)(src + off)`.
    const fn load_u32(dst: u8, src: u8, off: i16) -> Insn {
        Insn::new(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0)
    }

    /// `dst = imm` (64-bit register).
    const fn mov_imm(dst: u8, imm: i32) -> Insn {
        Insn::new(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
    }

    /// `dst = map` (two instruction slots; the verifier swaps the descriptor for the map's address).
    const fn load_map_fd(dst: u8, fd: RawFd) -> [Insn; 2] {
        [Insn::new(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, fd), Insn::new(0, 0, 0, 0, 0)]
    }

    /// `r0 = helper(r1, r2, r3, ...)`.
    const fn call(helper: i32) -> Insn {
        Insn::new(BPF_JMP | BPF_CALL, 0, 0, 0, helper)
    }

    /// `return r0`.
    const fn exit() -> Insn {
        Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
    }
}

/// The redirect program for XSKMAP `map_fd`.
pub(crate) fn redirect_program(map_fd: RawFd) -> [Insn; 6] {
    let [ld0, ld1] = Insn::load_map_fd(R1, map_fd);
    [
        Insn::load_u32(R2, R1, XDP_MD_RX_QUEUE_INDEX),
        ld0,
        ld1,
        Insn::mov_imm(R3, XDP_PASS),
        Insn::call(FN_REDIRECT_MAP),
        Insn::exit(),
    ]
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct GetByIdAttr {
    id: u32,
    next_id: u32,
    open_flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct InfoByFdAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// Offset of `name` in `struct bpf_prog_info`.
const PROG_INFO_NAME: usize = 64;

/// The bpf(2) system call with `attr` (whose size the kernel takes as the attribute's known part).
fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised #[repr(C)] prefix of `union bpf_attr` of the given size; any pointers
    // inside it point to buffers that outlive the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, std::mem::size_of::<T>() as u32) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: a descriptor the kernel just created for us.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// Creates an XSKMAP with `entries` slots (receive queue index -> socket).
pub(crate) fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut attr =
        MapCreateAttr { map_type: BPF_MAP_TYPE_XSKMAP, key_size: 4, value_size: 4, max_entries: entries, map_flags: 0 };
    bpf(BPF_MAP_CREATE, &mut attr).map(owned)
}

/// Puts socket `sock` at index `queue` of XSKMAP `map`.
pub(crate) fn xskmap_set(map: &OwnedFd, queue: u32, sock: RawFd) -> io::Result<()> {
    let (key, value) = (queue, sock as u32);
    let mut attr = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        ..MapElemAttr::default()
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// Why loading failed: the OS error and, when the verifier rejected the program, its log.
#[derive(Debug)]
pub(crate) struct LoadError {
    pub(crate) source: io::Error,
    pub(crate) log: String,
}

/// Name the program carries (shown by `ip link` and `bpftool`).
pub(crate) const PROG_NAME: &str = "pktio_xsk";

/// Loads the redirect program for `map`.
pub(crate) fn load_redirect(map: &OwnedFd) -> Result<OwnedFd, LoadError> {
    let insns = redirect_program(map.as_raw_fd());
    let license = c"Dual BSD/GPL";
    let mut name = [0u8; 16];
    name[..PROG_NAME.len()].copy_from_slice(PROG_NAME.as_bytes());
    let load = |log: &mut [u8]| {
        let mut attr = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: insns.len() as u32,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: u32::from(!log.is_empty()),
            log_size: log.len() as u32,
            log_buf: if log.is_empty() { 0 } else { log.as_mut_ptr() as u64 },
            prog_name: name,
            ..ProgLoadAttr::default()
        };
        bpf(BPF_PROG_LOAD, &mut attr).map(owned)
    };
    // First without a log (the kernel does less work); on failure again with one for the error message.
    load(&mut []).or_else(|first| {
        let mut log = vec![0u8; 64 * 1024];
        match load(&mut log) {
            Ok(fd) => Ok(fd),
            Err(source) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
                let source = if source.raw_os_error() == first.raw_os_error() { first } else { source };
                Err(LoadError { source, log: text })
            }
        }
    })
}

/// The name of loaded program `id`, when it can be read.
pub(crate) fn prog_name(id: u32) -> Option<String> {
    let mut attr = GetByIdAttr { id, ..GetByIdAttr::default() };
    let fd = bpf(BPF_PROG_GET_FD_BY_ID, &mut attr).map(owned).ok()?;
    let mut info = [0u8; PROG_INFO_NAME + 16];
    let mut attr =
        InfoByFdAttr { bpf_fd: fd.as_raw_fd() as u32, info_len: info.len() as u32, info: info.as_mut_ptr() as u64 };
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).ok()?;
    let name = &info[PROG_INFO_NAME..];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Some(String::from_utf8_lossy(&name[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_program_encodes_the_expected_instructions() {
        let p = redirect_program(7);
        // ldxw r2, [r1 + 16]
        assert_eq!(p[0], Insn { code: 0x61, regs: 0x12, off: 16, imm: 0 });
        // lddw r1, map fd 7 (pseudo map fd in src_reg)
        assert_eq!(p[1], Insn { code: 0x18, regs: 0x11, off: 0, imm: 7 });
        assert_eq!(p[2], Insn { code: 0, regs: 0, off: 0, imm: 0 });
        // mov64 r3, XDP_PASS
        assert_eq!(p[3], Insn { code: 0xb7, regs: 0x03, off: 0, imm: 2 });
        // call bpf_redirect_map
        assert_eq!(p[4], Insn { code: 0x85, regs: 0, off: 0, imm: 51 });
        assert_eq!(p[5], Insn { code: 0x95, regs: 0, off: 0, imm: 0 });
        assert_eq!(std::mem::size_of::<Insn>(), 8);
    }
}
