//! Implement's batches from specflow's `tasks.md` (the seed's `parseBatchesFromProject`):
//! one batch per `##` section holding open tasks, read purely from the file's text.

use super::specflow_files::BatchItem;

/// The batches for the open (`- [ ]`) tasks of `tasks_md`, one per `##` section, in order.
///
/// Sections without open tasks are left out: their work is done. Open tasks before the first
/// section go in a section named "Tasks". When the file has no `##` section at all, the open
/// tasks are cut into batches of `fallback_size` (specflow's `batchSizeFallback`). When there
/// is no open task, one batch covers "All remaining tasks", so implement still runs once
/// rather than asking for batches forever.
pub fn parse_batches(tasks_md: &str, fallback_size: usize) -> Vec<BatchItem> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut saw_heading = false;
    for line in tasks_md.lines() {
        let t = line.trim_start();
        if let Some(title) = t.strip_prefix("## ") {
            saw_heading = true;
            sections.push((title.trim().to_string(), Vec::new()));
            continue;
        }
        if let Some(id) = open_task_id(t) {
            if sections.is_empty() {
                sections.push(("Tasks".to_string(), Vec::new()));
            }
            if let Some((_, ids)) = sections.last_mut() {
                ids.push(id);
            }
        }
    }
    let mut groups: Vec<(String, Vec<String>)> = if saw_heading {
        sections
            .into_iter()
            .filter(|(_, ids)| !ids.is_empty())
            .collect()
    } else {
        let all: Vec<String> = sections.into_iter().flat_map(|(_, ids)| ids).collect();
        all.chunks(fallback_size.max(1))
            .enumerate()
            .map(|(i, c)| (format!("Tasks part {}", i + 1), c.to_vec()))
            .collect()
    };
    if groups.is_empty() {
        groups.push(("All remaining tasks".to_string(), Vec::new()));
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (section, ids))| BatchItem::new(i, section, ids))
        .collect()
}

/// The id of an open task line (`- [ ] T012 [P] Do it` → `T012`); none for done tasks
/// (`- [x]`) and other lines.
fn open_task_id(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("- [ ]")
        .or_else(|| line.strip_prefix("* [ ]"))?;
    let id = rest.split_whitespace().next()?;
    let digits = id.strip_prefix('T')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_string())
}
