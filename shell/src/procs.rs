//! The process table, read from `/proc`: what runs in each tmux pane (the pane's process and
//! its descendants), with each process's name, arguments, folder and start time. The core
//! decides from it which pane runs which session ([`headspace_core::pane::discovery`]); this file
//! only reads.

use headspace_core::pane::discovery::PaneProcess;
use headspace_core::Timestamp;
use std::collections::BTreeMap;
use std::path::Path;

/// One process as `/proc` shows it.
#[derive(Clone, Debug)]
struct Proc {
    ppid: u32,
    process: PaneProcess,
}

/// Every readable, running process, by pid. Processes that exit while the table is read are
/// left out, and so are zombies: a killed Claude Code whose parent has not reaped it yet (tmux
/// with `remain-on-exit` can leave one for a long time) has exited, and must not keep its
/// agent alive.
fn table(proc_dir: &Path) -> BTreeMap<u32, Proc> {
    let Some(boot_ms) = boot_time_ms(proc_dir) else {
        return BTreeMap::new();
    };
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(p) = read_proc(&e.path(), pid, boot_ms) {
            out.insert(pid, p);
        }
    }
    out
}

/// The kernel's clock ticks per second as `/proc` counts start times (USER_HZ, 100 on every
/// Linux architecture the kernel exports it for).
const TICKS_PER_SECOND: i64 = 100;

/// When the machine booted, from `/proc/stat`'s `btime` (whole seconds).
fn boot_time_ms(proc_dir: &Path) -> Option<i64> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|s| s.trim().parse::<i64>().ok())
        .map(|s| s * 1000)
}

fn read_proc(dir: &Path, pid: u32, boot_ms: i64) -> Option<Proc> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let Stat {
        state,
        ppid,
        start_ticks: ticks,
    } = parse_stat(&stat)?;
    if matches!(state, 'Z' | 'X') {
        return None;
    }
    let command = std::fs::read_to_string(dir.join("comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_default();
    let args = std::fs::read(dir.join("cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let cwd = std::fs::read_link(dir.join("cwd"))
        .ok()
        .and_then(|p| p.to_str().map(str::to_string));
    Some(Proc {
        ppid,
        process: PaneProcess {
            pid,
            command,
            args,
            cwd,
            started_at: Timestamp(boot_ms + ticks * 1000 / TICKS_PER_SECOND),
        },
    })
}

/// The fields of `/proc/PID/stat` the table needs.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    /// `R`, `S`, `D`, … `Z` for a zombie, `X` for a dead one.
    state: char,
    ppid: u32,
    /// The start time, in clock ticks after boot.
    start_ticks: i64,
}

/// Reads `/proc/PID/stat`. The name field is in parentheses and may hold spaces and
/// parentheses: fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (field 3), ppid (4), … starttime (22).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// The process `root` and all its descendants, `root` first, from the live `/proc`.
pub fn tree_of_each(roots: &[u32]) -> Vec<Vec<PaneProcess>> {
    trees(Path::new("/proc"), roots)
}

fn trees(proc_dir: &Path, roots: &[u32]) -> Vec<Vec<PaneProcess>> {
    let table = table(proc_dir);
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (pid, p) in &table {
        children.entry(p.ppid).or_default().push(*pid);
    }
    roots
        .iter()
        .map(|root| {
            let mut out = Vec::new();
            let mut stack = vec![*root];
            while let Some(pid) = stack.pop() {
                if let Some(p) = table.get(&pid) {
                    out.push(p.process.clone());
                }
                // A pid can only appear once: the table is a tree, so this ends.
                if out.len() > 10_000 {
                    break;
                }
                stack.extend(children.get(&pid).into_iter().flatten().rev());
            }
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{parse_stat, tree_of_each, Stat};

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let stat = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(
            parse_stat(stat),
            Some(Stat {
                state: 'S',
                ppid: 17,
                start_ticks: 98765
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_zombie_child_is_not_in_the_tree() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for: once it exits it stays a zombie until `wait` below.
        let stat = format!("/proc/{pid}/stat");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z ")) {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never exited"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let tree = &tree_of_each(&[std::process::id()])[0];
        assert!(tree.iter().all(|p| p.pid != pid), "zombie {pid} listed");
        child.wait().unwrap();
    }

    #[test]
    fn this_process_is_found_in_its_own_tree_with_a_plausible_start() {
        let me = std::process::id();
        let trees = tree_of_each(&[me]);
        let mine = &trees[0];
        assert_eq!(mine.first().map(|p| p.pid), Some(me));
        let started = mine[0].started_at.millis();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        assert!(
            started <= now + 2_000 && started > now - 3_600_000,
            "{started} vs {now}"
        );
        assert_eq!(
            mine[0].cwd.as_deref(),
            std::env::current_dir()
                .ok()
                .as_deref()
                .and_then(|p| p.to_str())
        );
    }
}
