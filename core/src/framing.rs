//! Transcript framing: bytes at offsets in, complete lines out.
//!
//! A file's durable offset only ever moves past complete lines, so a restart re-reads at most
//! one partial line. A UTF-8 sequence split across reads is harmless because lines are cut on
//! the `\n` byte, which never occurs inside a multi-byte sequence.

/// What a push of bytes found besides lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// The bytes were taken (possibly only their unseen tail).
    Accepted,
    /// The bytes start after the end of what was seen: the bytes in between must be read
    /// first, from `expected`.
    Gap {
        /// The offset the next bytes must start at.
        expected: u64,
    },
}

/// Splits one file's bytes into lines, remembering a partial last line.
#[derive(Clone, Debug, Default)]
pub struct LineFramer {
    /// End of the last line handed out: the offset that is safe to persist.
    done: u64,
    /// Bytes after `done` that do not yet form a line.
    pending: Vec<u8>,
}

impl LineFramer {
    /// A framer that has consumed everything before `offset`.
    pub fn new(offset: u64) -> LineFramer {
        LineFramer {
            done: offset,
            pending: Vec::new(),
        }
    }

    /// The offset just past the last complete line: safe to persist.
    pub fn committed_offset(&self) -> u64 {
        self.done
    }

    /// The offset the next bytes are expected at.
    pub fn expected_offset(&self) -> u64 {
        self.done + self.pending.len() as u64
    }

    /// Forgets everything and starts over at `offset` (a file that shrank or was replaced).
    pub fn reset(&mut self, offset: u64) {
        self.done = offset;
        self.pending.clear();
    }

    /// Takes `data` found at byte `at` of the file and calls `on_line(line, end_offset)` for
    /// each complete line, where `end_offset` is the offset just past that line.
    ///
    /// Bytes already seen are skipped, so overlapping reads are harmless. A line is complete
    /// when its `\n` arrives, or when the bytes so far already form a whole JSON object (a
    /// strict prefix of a JSON object never does), which is how a transcript whose writer left
    /// off the last newline is read to its end.
    pub fn push(&mut self, at: u64, data: &[u8], mut on_line: impl FnMut(&[u8], u64)) -> Push {
        let expected = self.expected_offset();
        if at > expected {
            return Push::Gap { expected };
        }
        let skip = (expected - at) as usize;
        if skip >= data.len() {
            return Push::Accepted;
        }
        let data = &data[skip..];
        let base = expected; // file offset of data[0]
        let mut start = 0usize;
        while let Some(i) = memchr(b'\n', &data[start..]) {
            let end = start + i;
            let line_end = base + end as u64 + 1;
            if self.pending.is_empty() {
                on_line(&data[start..end], line_end);
            } else {
                self.pending.extend_from_slice(&data[start..end]);
                let line = std::mem::take(&mut self.pending);
                on_line(&line, line_end);
                self.pending = line;
                self.pending.clear();
            }
            self.done = line_end;
            start = end + 1;
        }
        self.pending.extend_from_slice(&data[start..]);
        if is_complete_json_object(&self.pending) {
            let end = self.expected_offset();
            let line = std::mem::take(&mut self.pending);
            on_line(&line, end);
            self.done = end;
        }
        Push::Accepted
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

fn is_complete_json_object(bytes: &[u8]) -> bool {
    let t = bytes.trim_ascii();
    t.len() >= 2
        && t[0] == b'{'
        && t[t.len() - 1] == b'}'
        && serde_json::from_slice::<serde::de::IgnoredAny>(t).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(f: &mut LineFramer, at: u64, data: &[u8]) -> (Vec<(String, u64)>, Push) {
        let mut out = Vec::new();
        let p = f.push(at, data, |l, e| {
            out.push((String::from_utf8_lossy(l).into_owned(), e))
        });
        (out, p)
    }

    #[test]
    fn partial_line_waits_for_newline() {
        let mut f = LineFramer::new(0);
        let (lines, _) = collect(&mut f, 0, b"{\"a\":1}\n{\"b\":");
        assert_eq!(lines, vec![("{\"a\":1}".into(), 8)]);
        assert_eq!(f.committed_offset(), 8);
        let (lines, _) = collect(&mut f, 13, b"2}\n");
        assert_eq!(lines, vec![("{\"b\":2}".into(), 16)]);
    }

    #[test]
    fn overlap_is_skipped_and_gap_reported() {
        let mut f = LineFramer::new(0);
        collect(&mut f, 0, b"{\"a\":1}\n");
        let (lines, p) = collect(&mut f, 0, b"{\"a\":1}\n{\"c\":3}\n");
        assert_eq!(p, Push::Accepted);
        assert_eq!(lines, vec![("{\"c\":3}".into(), 16)]);
        let (_, p) = collect(&mut f, 20, b"x\n");
        assert_eq!(p, Push::Gap { expected: 16 });
    }

    #[test]
    fn unterminated_complete_object_is_a_line_and_its_newline_is_blank() {
        let mut f = LineFramer::new(0);
        let (lines, _) = collect(&mut f, 0, b"{\"a\":\"}\"}");
        assert_eq!(lines.len(), 1);
        let (lines, _) = collect(&mut f, 9, b"\n");
        assert_eq!(lines, vec![(String::new(), 10)]);
    }

    #[test]
    fn utf8_split_across_reads() {
        let text = "{\"t\":\"héllo ❯\"}\n".as_bytes();
        let mut f = LineFramer::new(0);
        let mut got = Vec::new();
        for (i, b) in text.iter().enumerate() {
            f.push(i as u64, std::slice::from_ref(b), |l, _| {
                if !l.is_empty() {
                    got.push(l.to_vec())
                }
            });
        }
        assert_eq!(got, vec![text[..text.len() - 1].to_vec()]);
    }
}
