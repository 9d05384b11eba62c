//! What changed in an agent's folder, from git's unified patch: one entry per file with its
//! status, added and removed line counts and its own patch. The shell runs `git diff` (and
//! `git diff --no-index` for files git does not track yet); this reads what it printed.

use serde::Serialize;

/// One changed file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Its path in the repository (the new path of a rename).
    pub path: String,
    /// `added`, `deleted`, `renamed` or `modified`.
    pub status: &'static str,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// Whether git showed it as binary (no lines counted).
    pub binary: bool,
    /// Its part of the patch, from its `diff --git` line.
    pub patch: String,
}

/// Splits a unified patch (`git diff` output, several concatenated) into its files, in the
/// order given. Text before the first `diff --git` line is ignored.
pub fn parse_patch(patch: &str) -> Vec<FileChange> {
    let mut files = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            if let Some(lines) = current.take() {
                files.push(file_of(&lines));
            }
            current = Some(Vec::new());
        }
        if let Some(lines) = current.as_mut() {
            lines.push(line);
        }
    }
    if let Some(lines) = current {
        files.push(file_of(&lines));
    }
    files
}

fn file_of(lines: &[&str]) -> FileChange {
    let (mut old, mut new) = (None, None);
    let (mut added, mut removed) = (0, 0);
    let mut status = "modified";
    let mut binary = false;
    let mut in_hunk = false;
    for raw in lines {
        let line = raw.trim_end_matches('\n');
        if in_hunk {
            match line.as_bytes().first() {
                Some(b'+') => added += 1,
                Some(b'-') => removed += 1,
                Some(b' ' | b'\\' | b'@') => {}
                // Past the hunks: the next file's header lines.
                _ => in_hunk = false,
            }
            continue;
        }
        if line.starts_with("@@") {
            in_hunk = true;
        } else if let Some(p) = line.strip_prefix("--- ") {
            old = path_of(p, "a/");
        } else if let Some(p) = line.strip_prefix("+++ ") {
            new = path_of(p, "b/");
        } else if let Some(p) = line.strip_prefix("rename from ") {
            old = Some(unquote(p));
            status = "renamed";
        } else if let Some(p) = line.strip_prefix("rename to ") {
            new = Some(unquote(p));
            status = "renamed";
        } else if line.starts_with("new file mode") {
            status = "added";
        } else if line.starts_with("deleted file mode") {
            status = "deleted";
        } else if line.starts_with("Binary files ") {
            binary = true;
        }
    }
    let header = lines
        .first()
        .map(|l| l.trim_end_matches('\n'))
        .unwrap_or_default();
    let path = new
        .or(old)
        .or_else(|| header_path(header))
        .unwrap_or_default();
    FileChange {
        path,
        status,
        added,
        removed,
        binary,
        patch: lines.concat(),
    }
}

/// The path of a `---`/`+++` line: `None` for `/dev/null`; git's `a/`/`b/` prefix taken off
/// (`--no-index` diffs of untracked files print the path as given, with the same prefixes).
fn path_of(p: &str, prefix: &str) -> Option<String> {
    let p = unquote(p.split('\t').next().unwrap_or(p));
    if p == "/dev/null" {
        return None;
    }
    Some(p.strip_prefix(prefix).unwrap_or(&p).to_string())
}

/// The path in `diff --git a/X b/X` when no other line names it (a mode change, an empty
/// file): the second half, when both halves agree.
fn header_path(header: &str) -> Option<String> {
    // `a/NAME b/NAME`: the rest is NAME, " b/", NAME.
    let rest = header.strip_prefix("diff --git a/")?;
    let n = rest.len().checked_sub(3)? / 2;
    let (a, b) = (rest.get(..n)?, rest.get(n..)?);
    (b.strip_prefix(" b/") == Some(a)).then(|| a.to_string())
}

/// A path git printed quoted (`"a\tb"`: C escapes, octal bytes for the rest), as it is.
fn unquote(p: &str) -> String {
    let Some(inner) = p.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return p.to_string();
    };
    let mut bytes = Vec::new();
    let mut it = inner.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match it.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(b'r') => bytes.push(b'\r'),
            Some(b'a') => bytes.push(7),
            Some(b'b') => bytes.push(8),
            Some(b'f') => bytes.push(12),
            Some(b'v') => bytes.push(11),
            Some(d @ b'0'..=b'7') => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    match it.peek() {
                        Some(&n @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(n - b'0');
                            it.next();
                        }
                        _ => break,
                    }
                }
                bytes.push(v as u8);
            }
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@
 fn a() {}
-fn b() {}
+fn b() { todo!() }
+fn c() {}
 // end
diff --git a/NOTES.md b/NOTES.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1,2 @@
+# Notes
+--- not a header: a line that starts with three dashes
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4444444..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/a.txt b/b.txt
similarity index 100%
rename from a.txt
rename to b.txt
diff --git a/logo.png b/logo.png
index 5555555..6666666 100644
Binary files a/logo.png and b/logo.png differ
diff --git \"a/tab\\there.txt\" \"b/tab\\there.txt\"
--- \"a/tab\\there.txt\"
+++ \"b/tab\\there.txt\"
@@ -1 +1 @@
-x
+y
";

    #[test]
    fn each_file_has_its_status_counts_and_patch() {
        let files = parse_patch(PATCH);
        let got: Vec<(&str, &str, u64, u64, bool)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.status, f.added, f.removed, f.binary))
            .collect();
        assert_eq!(
            got,
            vec![
                ("src/lib.rs", "modified", 2, 1, false),
                ("NOTES.md", "added", 2, 0, false),
                ("old.txt", "deleted", 0, 1, false),
                ("b.txt", "renamed", 0, 0, false),
                ("logo.png", "modified", 0, 0, true),
                ("tab\there.txt", "modified", 1, 1, false),
            ]
        );
        assert!(files[0].patch.starts_with("diff --git a/src/lib.rs"));
        assert!(files[0].patch.ends_with(" // end\n"));
        assert_eq!(
            files.iter().map(|f| f.patch.len()).sum::<usize>(),
            PATCH.len(),
            "every byte of the patch is in one file's part"
        );
    }

    #[test]
    fn nothing_changed_is_no_file() {
        assert!(parse_patch("").is_empty());
        assert!(parse_patch("warning: LF will be replaced\n").is_empty());
    }
}
