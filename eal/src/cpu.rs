//! CPUs this process may run on, and pinning threads to them.

use crate::{Error, Result};

/// CPUs in this process's affinity mask, ascending.
pub fn available_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 = this thread; the size matches the set passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return (0..std::thread::available_parallelism().map_or(1, |n| n.get() as u32)).collect();
    }
    // SAFETY: CPU_ISSET reads the set for each index below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).map(|c| c as u32).collect()
}

/// Formats a CPU list compactly (`0-3,6`).
pub fn format_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: u32) -> Result<()> {
    pin_current_thread_to(cpu, &[cpu])
}

/// Pins the calling thread, which runs `lcore`, to the CPUs `cpus` (one, or an `--lcores` group).
pub fn pin_current_thread_to(lcore: u32, cpus: &[u32]) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Lcore { lcore, reason: "no CPU to run on".into() });
    }
    // SAFETY: zeroed cpu_set_t is empty.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(Error::Lcore { lcore, reason: format!("CPU number {cpu} too large") });
        }
        // SAFETY: CPU_SET writes inside the set (index checked above).
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: pid 0 = this thread; the set is valid for its size.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(Error::Lcore {
            lcore,
            reason: format!("cannot pin to CPU(s) {}: {}", format_list(cpus), std::io::Error::last_os_error()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_ranges() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_list(&[5]), "5");
        assert!(!available_cpus().is_empty());
    }
}
