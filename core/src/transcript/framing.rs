//! Transcript framing: bytes at offsets in, complete lines out, in bounded memory.
//!
//! A file's durable offset only ever moves past complete lines, so a restart re-reads at most
//! one partial line. A UTF-8 sequence split across reads is harmless because lines are cut on
//! the `\n` byte, which never occurs inside a multi-byte sequence.
//!
//! A line may be longer than memory should hold (a huge tool output, or a hostile file of
//! gigabytes without a newline). The framer keeps at most the first `max_line` bytes of a
//! line (its head) and its last [`TAIL_BYTES`] (its tail, where Claude Code writes `uuid`
//! and `timestamp`, after `message`), drops what lies between, and hands the line on as
//! [`Line::Truncated`] with its true length once its newline arrives. A line that never
//! ends holds at most `max_line + 2 * TAIL_BYTES` bytes, and the offset stays before it.

/// The longest line handed on whole unless configured otherwise: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;

/// How many of the last bytes of an over-long line are kept: 64 KiB.
pub const TAIL_BYTES: usize = 64 << 10;

/// A buffer grown past this for one long line is given back once the line is handed on.
const KEEP_CAPACITY: usize = 1 << 20;

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

/// One line, without its newline, as the framer hands it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A line no longer than the limit, whole.
    Whole(&'a [u8]),
    /// A line longer than the limit: its first bytes and its last bytes; the bytes between
    /// were dropped.
    Truncated {
        /// The first `max_line` bytes.
        head: &'a [u8],
        /// The last bytes after the head (at most [`TAIL_BYTES`]).
        tail: &'a [u8],
        /// The line's true length in bytes, without its newline.
        len: u64,
    },
}

impl Line<'_> {
    /// The line's true length in bytes, without its newline.
    pub fn len(&self) -> u64 {
        match self {
            Line::Whole(b) => b.len() as u64,
            Line::Truncated { len, .. } => *len,
        }
    }

    /// True for an empty line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Splits one file's bytes into lines, remembering a partial last line (bounded).
#[derive(Clone, Debug)]
pub struct LineFramer {
    /// End of the last line handed out: the offset that is safe to persist.
    done: u64,
    /// The longest line kept whole.
    max_line: usize,
    /// The first bytes (at most `max_line`) of the partial line after `done`.
    head: Vec<u8>,
    /// When the partial line is longer than `max_line`: its last bytes after the head.
    tail: Vec<u8>,
    /// The partial line's true length (head, dropped middle and tail).
    len: u64,
}

impl Default for LineFramer {
    fn default() -> LineFramer {
        LineFramer::new(0, DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineFramer {
    /// A framer that has consumed everything before `offset` and keeps lines of up to
    /// `max_line` bytes whole (at least 1).
    pub fn new(offset: u64, max_line: usize) -> LineFramer {
        LineFramer {
            done: offset,
            max_line: max_line.max(1),
            head: Vec::new(),
            tail: Vec::new(),
            len: 0,
        }
    }

    /// The offset just past the last complete line: safe to persist.
    pub fn committed_offset(&self) -> u64 {
        self.done
    }

    /// The offset the next bytes are expected at.
    pub fn expected_offset(&self) -> u64 {
        self.done + self.len
    }

    /// Bytes of memory the partial line holds (the capacity of its buffers): at most
    /// `max_line + 2 * TAIL_BYTES`, however long the line.
    pub fn held_bytes(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    /// Forgets everything and starts over at `offset` (a file that shrank or was replaced).
    pub fn reset(&mut self, offset: u64) {
        self.done = offset;
        self.clear_partial();
    }

    /// True when the partial line is already longer than the limit.
    fn truncating(&self) -> bool {
        self.len > self.head.len() as u64
    }

    /// Takes `data` found at byte `at` of the file and calls `on_line(line, end_offset)` for
    /// each complete line, where `end_offset` is the offset just past that line.
    ///
    /// Bytes already seen are skipped, so overlapping reads are harmless. A line is complete
    /// when its `\n` arrives, or when the bytes so far already form a whole JSON object (a
    /// strict prefix of a JSON object never does), which is how a transcript whose writer left
    /// off the last newline is read to its end. A line longer than the limit is only complete
    /// with its newline.
    pub fn push(&mut self, at: u64, data: &[u8], mut on_line: impl FnMut(Line<'_>, u64)) -> Push {
        let expected = self.expected_offset();
        if at > expected {
            return Push::Gap { expected };
        }
        let skip = expected - at;
        if skip >= data.len() as u64 {
            return Push::Accepted;
        }
        let data = &data[skip as usize..];
        let base = expected; // file offset of data[0]
        let mut start = 0usize;
        while let Some(i) = memchr(b'\n', &data[start..]) {
            let end = start + i;
            let line_end = base + end as u64 + 1;
            if self.len == 0 {
                // The whole line is in `data`: handed on without copying.
                on_line(self.cut(&data[start..end]), line_end);
            } else {
                self.take(&data[start..end]);
                self.hand_on(line_end, &mut on_line);
            }
            self.done = line_end;
            start = end + 1;
        }
        self.take(&data[start..]);
        if !self.truncating() && is_complete_json_object(&self.head) {
            let end = self.expected_offset();
            self.hand_on(end, &mut on_line);
            self.done = end;
        }
        Push::Accepted
    }

    /// A whole line found in one piece, cut to head and tail when it is too long.
    fn cut<'a>(&self, line: &'a [u8]) -> Line<'a> {
        if line.len() <= self.max_line {
            return Line::Whole(line);
        }
        let tail_from = self.max_line.max(line.len() - TAIL_BYTES.min(line.len()));
        Line::Truncated {
            head: &line[..self.max_line],
            tail: &line[tail_from..],
            len: line.len() as u64,
        }
    }

    /// Adds bytes of the partial line: to the head while it has room, then to the tail,
    /// which keeps only the last [`TAIL_BYTES`].
    fn take(&mut self, seg: &[u8]) {
        if seg.is_empty() {
            return;
        }
        self.len += seg.len() as u64;
        let room = self.max_line - self.head.len();
        let (to_head, rest) = seg.split_at(room.min(seg.len()));
        if !to_head.is_empty() {
            // Grow by doubling, but never past the limit: a long line must not make the
            // buffer twice the limit.
            let need = self.head.len() + to_head.len();
            if need > self.head.capacity() {
                let want = need.max(self.head.capacity() * 2).min(self.max_line);
                self.head.reserve_exact(want - self.head.len());
            }
            self.head.extend_from_slice(to_head);
        }
        if rest.len() >= TAIL_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&rest[rest.len() - TAIL_BYTES..]);
        } else if !rest.is_empty() {
            let over = (self.tail.len() + rest.len()).saturating_sub(TAIL_BYTES);
            self.tail.drain(..over);
            self.tail.extend_from_slice(rest);
        }
    }

    /// Hands on the partial line as complete, ending at `end`, and forgets it.
    fn hand_on(&mut self, end: u64, on_line: &mut impl FnMut(Line<'_>, u64)) {
        let line = if self.truncating() {
            Line::Truncated {
                head: &self.head,
                tail: &self.tail,
                len: self.len,
            }
        } else {
            Line::Whole(&self.head)
        };
        on_line(line, end);
        self.clear_partial();
    }

    /// Forgets the partial line; a buffer a long line grew is given back.
    fn clear_partial(&mut self) {
        self.len = 0;
        self.head.clear();
        self.tail.clear();
        if self.head.capacity() > KEEP_CAPACITY {
            self.head = Vec::new();
        }
        if self.tail.capacity() > KEEP_CAPACITY {
            self.tail = Vec::new();
        }
    }
}

/// The index of the first `needle` in `hay`. Compares 16 bytes at a time (a byte-by-byte
/// search was an eighth of the core's ingest time): a word holds `needle` exactly when it
/// XOR a word of `needle`s has a zero byte, which `(w - 0x01…) & !w & 0x80…` detects.
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES * u64::from(needle);
    let has_needle = |bytes: &[u8]| {
        let w = u64::from_le_bytes(bytes.try_into().expect("8 bytes")) ^ pattern;
        w.wrapping_sub(ONES) & !w & HIGHS != 0
    };
    let find = |bytes: &[u8], at: usize| bytes.iter().position(|&b| b == needle).map(|i| at + i);
    let mut chunks = hay.chunks_exact(16);
    let mut at = 0;
    for chunk in &mut chunks {
        if has_needle(&chunk[..8]) || has_needle(&chunk[8..]) {
            return find(chunk, at);
        }
        at += 16;
    }
    find(chunks.remainder(), at)
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

    #[test]
    fn memchr_finds_the_first_needle_wherever_it_is() {
        for len in 0..70 {
            for at in 0..=len {
                // Bytes that differ from the needle by one bit, or are 0x80 or 0xFF, which a
                // word-at-a-time search could mistake for it.
                let mut hay: Vec<u8> = (0..len)
                    .map(|i| [0x0B, 0x8A, 0xFF, 0x80, 0x09, 0x00][i % 6])
                    .collect();
                if at < len {
                    hay[at] = b'\n';
                    if at + 1 < len {
                        hay[at + 1] = b'\n';
                    }
                }
                let want = hay.iter().position(|&b| b == b'\n');
                assert_eq!(memchr(b'\n', &hay), want, "len {len}, at {at}");
            }
        }
    }

    /// A line as text, `(head, tail, len)` for a truncated one.
    #[derive(Debug, PartialEq)]
    enum Got {
        Whole(String, u64),
        Cut(Vec<u8>, Vec<u8>, u64, u64),
    }

    fn collect(f: &mut LineFramer, at: u64, data: &[u8]) -> (Vec<Got>, Push) {
        let mut out = Vec::new();
        let p = f.push(at, data, |l, e| {
            out.push(match l {
                Line::Whole(b) => Got::Whole(String::from_utf8_lossy(b).into_owned(), e),
                Line::Truncated { head, tail, len } => {
                    Got::Cut(head.to_vec(), tail.to_vec(), len, e)
                }
            })
        });
        (out, p)
    }

    fn whole(s: &str, end: u64) -> Got {
        Got::Whole(s.into(), end)
    }

    #[test]
    fn partial_line_waits_for_newline() {
        let mut f = LineFramer::default();
        let (lines, _) = collect(&mut f, 0, b"{\"a\":1}\n{\"b\":");
        assert_eq!(lines, vec![whole("{\"a\":1}", 8)]);
        assert_eq!(f.committed_offset(), 8);
        let (lines, _) = collect(&mut f, 13, b"2}\n");
        assert_eq!(lines, vec![whole("{\"b\":2}", 16)]);
    }

    #[test]
    fn overlap_is_skipped_and_gap_reported() {
        let mut f = LineFramer::default();
        collect(&mut f, 0, b"{\"a\":1}\n");
        let (lines, p) = collect(&mut f, 0, b"{\"a\":1}\n{\"c\":3}\n");
        assert_eq!(p, Push::Accepted);
        assert_eq!(lines, vec![whole("{\"c\":3}", 16)]);
        let (_, p) = collect(&mut f, 20, b"x\n");
        assert_eq!(p, Push::Gap { expected: 16 });
    }

    #[test]
    fn unterminated_complete_object_is_a_line_and_its_newline_is_blank() {
        let mut f = LineFramer::default();
        let (lines, _) = collect(&mut f, 0, b"{\"a\":\"}\"}");
        assert_eq!(lines.len(), 1);
        let (lines, _) = collect(&mut f, 9, b"\n");
        assert_eq!(lines, vec![whole("", 10)]);
    }

    #[test]
    fn utf8_split_across_reads() {
        let text = "{\"t\":\"héllo ❯\"}\n".as_bytes();
        let mut f = LineFramer::default();
        let mut got = Vec::new();
        for (i, b) in text.iter().enumerate() {
            f.push(i as u64, std::slice::from_ref(b), |l, _| {
                if let Line::Whole(l) = l {
                    if !l.is_empty() {
                        got.push(l.to_vec())
                    }
                }
            });
        }
        assert_eq!(got, vec![text[..text.len() - 1].to_vec()]);
    }

    /// The attack: a line of limit + 1 MiB arrives in many pushes. It comes out once,
    /// truncated, with its true length and end offset, and the framer never holds more than
    /// the limit and two tails while it waits; the lines around it are untouched.
    #[test]
    fn a_line_over_the_limit_comes_out_once_truncated_in_bounded_memory() {
        let limit = 4 << 20;
        let mut f = LineFramer::new(0, limit);
        let before = b"{\"a\":1}\n";
        let long_len = limit + (1 << 20);
        let mut long: Vec<u8> = (0..long_len).map(|i| b'a' + (i % 26) as u8).collect();
        long[..2].copy_from_slice(b"{\"");
        let end_marker = b"\"uuid\":\"u-1\"}";
        let n = long.len();
        long[n - end_marker.len()..].copy_from_slice(end_marker);
        let mut file = before.to_vec();
        file.extend_from_slice(&long);
        file.extend_from_slice(b"\n{\"b\":2}\n");

        let mut out = Vec::new();
        let mut at = 0;
        let mut peak = 0;
        for piece in file.chunks(300_001) {
            let (lines, p) = collect(&mut f, at, piece);
            assert_eq!(p, Push::Accepted);
            out.extend(lines);
            at += piece.len() as u64;
            peak = peak.max(f.held_bytes());
        }
        assert!(
            peak <= limit + 2 * TAIL_BYTES,
            "held {peak} bytes for a limit of {limit}"
        );
        let long_end = (before.len() + long_len + 1) as u64;
        assert_eq!(
            out.len(),
            3,
            "{:?}",
            out.iter()
                .map(|g| matches!(g, Got::Whole(..)))
                .collect::<Vec<_>>()
        );
        assert_eq!(out[0], whole("{\"a\":1}", 8));
        match &out[1] {
            Got::Cut(head, tail, len, end) => {
                assert_eq!(*len, long_len as u64);
                assert_eq!(*end, long_end);
                assert_eq!(head[..], long[..limit]);
                assert_eq!(tail.len(), TAIL_BYTES);
                assert_eq!(tail[..], long[long_len - TAIL_BYTES..]);
            }
            other => panic!("not truncated: {other:?}"),
        }
        assert_eq!(out[2], whole("{\"b\":2}", long_end + 8));
        assert_eq!(f.committed_offset(), long_end + 8);
        // The long line's buffers were given back.
        assert!(f.held_bytes() <= KEEP_CAPACITY, "{}", f.held_bytes());
    }

    /// A line that never ends (a sparse file of NULs): memory stays bounded and the offset
    /// does not move past the line's start.
    #[test]
    fn a_line_without_newline_holds_bounded_memory_and_keeps_its_offset() {
        let limit = 1 << 20;
        let mut f = LineFramer::new(10, limit);
        let zeros = vec![0u8; 1 << 20];
        let mut at = 10;
        for _ in 0..20 {
            let (lines, _) = collect(&mut f, at, &zeros);
            assert!(lines.is_empty());
            at += zeros.len() as u64;
            assert!(
                f.held_bytes() <= limit + 2 * TAIL_BYTES,
                "{}",
                f.held_bytes()
            );
        }
        assert_eq!(f.committed_offset(), 10);
        assert_eq!(f.expected_offset(), at);
    }

    #[test]
    fn a_line_in_one_piece_is_cut_the_same_way() {
        let mut f = LineFramer::new(0, 10);
        let (lines, _) = collect(&mut f, 0, b"0123456789ABCDEF\nshort\n");
        assert_eq!(
            lines,
            vec![
                Got::Cut(b"0123456789".to_vec(), b"ABCDEF".to_vec(), 16, 17),
                whole("short", 23)
            ]
        );
        // Exactly at the limit: whole.
        let (lines, _) = collect(&mut f, 23, b"0123456789\n");
        assert_eq!(lines, vec![whole("0123456789", 34)]);
        // Pushed byte by byte: the same cut.
        let mut g = LineFramer::new(0, 10);
        let mut got = Vec::new();
        for (i, b) in b"0123456789ABCDEF\n".iter().enumerate() {
            got.extend(collect(&mut g, i as u64, std::slice::from_ref(b)).0);
        }
        assert_eq!(
            got,
            vec![Got::Cut(b"0123456789".to_vec(), b"ABCDEF".to_vec(), 16, 17)]
        );
    }

    #[test]
    fn a_truncated_line_is_not_taken_for_a_complete_object() {
        // Head and tail would make `{}`-looking bytes, but the line is only complete with
        // its newline.
        let mut f = LineFramer::new(0, 4);
        let (lines, _) = collect(&mut f, 0, b"{\"a\":\"xxxxxxxx\"}");
        assert!(lines.is_empty());
        assert_eq!(f.committed_offset(), 0);
        let (lines, _) = collect(&mut f, 16, b"\n");
        assert!(matches!(lines[..], [Got::Cut(_, _, 16, 17)]), "{lines:?}");
    }
}
