//! What a process costs, from Linux's `/proc`: its CPU time, its memory, and the CPU time of
//! a whole process tree (a PostgreSQL cluster: the postmaster and its backends). Tests and
//! benchmarks read these about the servers they start.

/// CPU time (user + system) process `pid` has used, in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    let f = stat_fields(pid).unwrap_or_else(|| panic!("no /proc/{pid}/stat"));
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// A line of `/proc/<pid>/status` in kB (`VmRSS`, `VmHWM`).
pub fn proc_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// CPU time, in clock ticks, of process `root` and every process below it: its own, that of
/// its children already reaped (`cutime`, `cstime`) and that of its living descendants. A
/// process that exits between two readings moves its time from the living to the reaped,
/// so the sum does not drop.
pub fn tree_ticks(root: u32) -> u64 {
    let Some(f) = stat_fields(root) else {
        return 0;
    };
    let own: u64 = f[11..15]
        .iter()
        .map(|v| v.parse::<u64>().unwrap_or(0))
        .sum();
    own + children(root).into_iter().map(tree_ticks).sum::<u64>()
}

/// The living children of process `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| stat_fields(p).is_some_and(|f| f[1].parse::<u32>().ok() == Some(pid)))
        .collect()
}

/// The whole machine's CPU time so far, in clock ticks: (busy, total) over every core.
pub fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = cpu.iter().sum();
    // idle and iowait are the fourth and fifth numbers.
    let idle = cpu.get(3).copied().unwrap_or(0) + cpu.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// The fields of `/proc/<pid>/stat` after the command's closing parenthesis (the state is
/// field 0, the parent 1, utime 11, stime 12, cutime 13, cstime 14); `None` once it exited.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}
