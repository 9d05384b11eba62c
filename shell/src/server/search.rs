//! Search over all history, the history browser and prune: what is asked ([`SearchQuery`],
//! [`PruneRequest`]), what comes back ([`SearchHit`], [`HistoryAgent`], [`PrunedAgent`]), and
//! the pure rules between them — query validation, the `LIKE` pattern that takes `%` and `_`
//! literally, and snippets whose highlights are ranges, never markup.

use headspace_core::Timestamp;
use serde::Serialize;
use serde_json::{json, Value};

/// The longest query accepted, in characters: longer ones are refused, not truncated.
pub const MAX_QUERY_CHARS: usize = 500;
/// The most results one search returns.
pub const MAX_LIMIT: i64 = 100;
/// Results when the request names no limit.
pub const DEFAULT_LIMIT: i64 = 20;
/// Exact (substring) search needs a trigram: shorter queries are answered by full text only,
/// since `ILIKE '%ab%'` cannot use the trigram index and would scan every turn.
pub const MIN_EXACT_CHARS: usize = 3;
/// Characters of context either side of an exact hit in its snippet.
pub const SNIPPET_CONTEXT_CHARS: i32 = 80;
/// Marks where `ts_headline` starts a highlight: a private-use character, removed from the
/// text before the headline is made, so agent text can never forge one.
pub const MARK_START: char = '\u{E000}';
/// Marks where `ts_headline` ends a highlight (see [`MARK_START`]).
pub const MARK_END: char = '\u{E001}';

/// A validated search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    /// The words, phrase or exact text sought (trimmed, 1..=[`MAX_QUERY_CHARS`] chars).
    pub q: String,
    /// Only agents of this project.
    pub project: Option<String>,
    /// Only this agent (already resolved to its id).
    pub agent: Option<u64>,
    /// Only turns of this actor (`user` or `agent`).
    pub actor: Option<String>,
    /// Only turns at or after this time.
    pub since: Option<Timestamp>,
    /// Only turns before this time.
    pub until: Option<Timestamp>,
    /// Only turns older than this turn, in (timestamp, id) order: searching further back.
    pub before: Option<u64>,
    /// At most this many results (1..=[`MAX_LIMIT`]).
    pub limit: i64,
}

impl SearchQuery {
    /// A search for `q` with no filter and the API's default page (tests and benches).
    pub fn words(q: &str) -> SearchQuery {
        SearchQuery {
            q: q.into(),
            project: None,
            agent: None,
            actor: None,
            since: None,
            until: None,
            before: None,
            limit: DEFAULT_LIMIT,
        }
    }

    /// The `ILIKE` pattern for the exact side, `None` when the query is too short for the
    /// trigram index.
    pub fn exact_pattern(&self) -> Option<String> {
        (self.q.chars().count() >= MIN_EXACT_CHARS).then(|| like_pattern(&self.q))
    }
}

/// One result: a turn, where it is, and a snippet with its highlights.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The turn.
    pub turn_id: u64,
    /// Its agent.
    pub agent_id: u64,
    /// The machine the agent runs on (null for a row no machine holds yet).
    pub machine: Option<String>,
    /// The agent's project.
    pub project: Option<String>,
    /// The agent's working folder.
    pub cwd: Option<String>,
    /// The agent's Claude session id.
    pub session_id: String,
    /// Whether the agent has ended.
    pub ended: bool,
    /// `user` or `agent`.
    pub actor: String,
    /// The turn's intent.
    pub intent: String,
    /// The turn's time (RFC 3339).
    pub timestamp: Value,
    /// Plain text around the match (never markup).
    pub snippet: String,
    /// The matched parts of `snippet`: `[start, end)` offsets in Unicode code points.
    pub highlights: Vec<[usize; 2]>,
    /// True when the text holds the query exactly (case aside): these rank first.
    pub exact: bool,
    /// The rank: exact hits above 1, full-text hits in [0, 1).
    pub score: f64,
    /// The tool step that matched, when the turn was found by one of its steps (then
    /// `snippet` is the step's summary); null when the turn's own text matched.
    pub step: Option<StepMatch>,
}

/// The tool step a hit was found by: one of the steps shown under its turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepMatch {
    /// The step's tool-use id.
    pub tool_use_id: String,
    /// The tool (`Bash`, `Edit`, ...).
    pub tool: String,
    /// The one-line summary of its input that matched (a command, a path, a pattern).
    pub summary: String,
}

/// An ended agent in the history view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryAgent {
    /// The agent.
    pub id: u64,
    /// Its Claude session id.
    pub session_id: String,
    /// Its project.
    pub project: Option<String>,
    /// Its working folder.
    pub cwd: Option<String>,
    /// When it was last heard of (RFC 3339).
    pub last_seen_at: Value,
    /// Why the reaper ended it, when it did.
    pub end_reason: Option<String>,
    /// Its stored turns.
    pub turn_count: i64,
    /// The first thing the user asked it (clipped), if anything.
    pub first_command: Option<String>,
}

/// What `prune` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PruneRequest {
    /// Only ended agents last heard of before this time.
    pub before: Timestamp,
    /// Report what would go, delete nothing.
    pub dry_run: bool,
}

/// An agent whose turns prune deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrunedAgent {
    /// The agent.
    pub id: u64,
    /// Its project.
    pub project: Option<String>,
    /// Its Claude session id.
    pub session_id: String,
    /// When it was last heard of (RFC 3339).
    pub last_seen_at: Value,
    /// Its turns (the ones prune deletes).
    pub turns: i64,
}

/// The `LIKE` pattern that finds `q` anywhere, with `\`, `%` and `_` taken literally (the
/// default escape character is `\`).
pub fn like_pattern(q: &str) -> String {
    let mut out = String::with_capacity(q.len() + 2);
    out.push('%');
    for c in q.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// A `since`/`until` bound: an RFC 3339 time, or a day (`2026-11-20`, UTC). A day as `until`
/// includes that whole day.
pub fn parse_bound(s: &str, until: bool) -> Option<Timestamp> {
    if let Some(t) = Timestamp::parse_rfc3339(s) {
        return Some(t);
    }
    let day = parse_day(s)?;
    Some(if until {
        day.add_millis(86_400_000)
    } else {
        day
    })
}

/// A day (`YYYY-MM-DD`) as its first millisecond, UTC.
pub fn parse_day(s: &str) -> Option<Timestamp> {
    let valid = s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !valid {
        return None;
    }
    Timestamp::parse_rfc3339(&format!("{s}T00:00:00Z"))
}

/// A `ts_headline` result, its [`MARK_START`]/[`MARK_END`] markers turned into ranges of the
/// plain text (in code points). Unbalanced markers are dropped.
pub fn unmark(headline: &str) -> (String, Vec<[usize; 2]>) {
    let mut text = String::with_capacity(headline.len());
    let mut ranges = Vec::new();
    let (mut chars, mut open) = (0usize, None);
    for c in headline.chars() {
        match c {
            MARK_START => open = Some(chars),
            MARK_END => {
                if let Some(start) = open.take() {
                    if chars > start {
                        ranges.push([start, chars]);
                    }
                }
            }
            _ => {
                text.push(c);
                chars += 1;
            }
        }
    }
    (text, ranges)
}

/// The snippet of an exact hit: `window` is the text around the match, which starts at code
/// point `at` of it and is `len` code points long; `clipped_left`/`clipped_right` say whether
/// text was cut there (shown as `…`).
pub fn exact_snippet(
    window: &str,
    at: usize,
    len: usize,
    clipped_left: bool,
    clipped_right: bool,
) -> (String, Vec<[usize; 2]>) {
    let lead = usize::from(clipped_left);
    let mut snippet = String::new();
    if clipped_left {
        snippet.push('…');
    }
    snippet.push_str(window);
    if clipped_right {
        snippet.push('…');
    }
    let total = window.chars().count();
    let start = at.min(total);
    let end = (at + len).min(total);
    (snippet, vec![[start + lead, end + lead]])
}

/// The JSON of a search's results, best first.
pub fn hits_json(hits: &[SearchHit]) -> Value {
    json!(hits)
}

#[cfg(test)]
mod tests {
    use super::{
        exact_snippet, like_pattern, parse_bound, parse_day, unmark, MARK_END, MARK_START,
    };

    #[test]
    fn like_pattern_takes_wildcards_and_backslashes_literally() {
        assert_eq!(like_pattern("50%_off"), "%50\\%\\_off%");
        assert_eq!(like_pattern("a\\b"), "%a\\\\b%");
        assert_eq!(like_pattern("src/lib.rs"), "%src/lib.rs%");
    }

    #[test]
    fn bounds_are_times_or_whole_days() {
        let day = parse_day("2026-11-20").unwrap();
        assert_eq!(parse_bound("2026-11-20", false), Some(day));
        assert_eq!(
            parse_bound("2026-11-20", true),
            Some(day.add_millis(86_400_000))
        );
        assert!(parse_bound("2026-11-20T10:00:00Z", true).is_some());
        for bad in ["yesterday", "2026-13-40", "20261120", "2026-11-2x", ""] {
            assert_eq!(parse_bound(bad, false), None, "{bad}");
        }
    }

    #[test]
    fn markers_become_ranges_and_unbalanced_ones_vanish() {
        let h = format!("the {MARK_START}tests{MARK_END} ran {MARK_START}fine");
        let (text, ranges) = unmark(&h);
        assert_eq!(text, "the tests ran fine");
        assert_eq!(ranges, vec![[4, 9]]);
        let (text, ranges) = unmark(&format!("é{MARK_START}ü{MARK_END}"));
        assert_eq!(text, "éü");
        assert_eq!(ranges, vec![[1, 2]]);
    }

    #[test]
    fn exact_snippets_count_the_ellipsis() {
        let (s, r) = exact_snippet("see src/lib.rs now", 4, 10, true, false);
        assert_eq!(s, "…see src/lib.rs now");
        assert_eq!(r, vec![[5, 15]]);
        let chars: Vec<char> = s.chars().collect();
        assert_eq!(chars[5..15].iter().collect::<String>(), "src/lib.rs");
    }
}
