//! Mending text that a store or a JSON parser would refuse, so that no turn is lost to it.
//!
//! Two kinds of text arrive in transcripts and hooks that are valid for Claude Code but not
//! for what Headspace hands them to:
//!
//! - **NUL characters** (`"\u0000"`): valid JSON, but PostgreSQL's `TEXT` and `JSONB` refuse
//!   them, so the write of the whole batch would fail. The core replaces each with U+FFFD
//!   in everything it stores ([`replace_nul`], [`replace_nul_in_json`]).
//! - **Unpaired surrogate escapes** (`"\ud800"`): JavaScript strings may hold them and
//!   `JSON.stringify` writes them, but they are not Unicode scalar values, so `serde_json`
//!   refuses the whole line. [`repair_lone_surrogates`] replaces each unpaired escape with
//!   `\uFFFD` (valid pairs like `\ud83d\ude00` are kept) before parsing.
//!
//! The caller logs what was mended ([`Mended`]) with the line's uuid.

use serde_json::Value;
use std::borrow::Cow;

/// The character put in place of what cannot be stored.
pub const REPLACEMENT: char = '\u{FFFD}';

/// What was mended in one line or hook body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mended {
    /// NUL characters replaced with U+FFFD.
    pub nuls: usize,
    /// Unpaired surrogate escapes replaced with `\uFFFD`.
    pub surrogates: usize,
}

impl Mended {
    /// True when anything was replaced.
    pub fn any(&self) -> bool {
        self.nuls > 0 || self.surrogates > 0
    }
}

impl std::fmt::Display for Mended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.nuls > 0 {
            parts.push(format!("{} NUL character(s)", self.nuls));
        }
        if self.surrogates > 0 {
            parts.push(format!("{} unpaired surrogate escape(s)", self.surrogates));
        }
        if parts.is_empty() {
            return write!(f, "nothing replaced");
        }
        write!(f, "replaced {} with U+FFFD", parts.join(" and "))
    }
}

/// Replaces every NUL in `s` with U+FFFD; returns how many there were.
pub fn replace_nul(s: &mut String) -> usize {
    let n = s.matches('\0').count();
    if n > 0 {
        *s = s.replace('\0', "\u{FFFD}");
    }
    n
}

/// [`replace_nul`] on an optional string.
pub fn replace_nul_opt(s: &mut Option<String>) -> usize {
    s.as_mut().map_or(0, replace_nul)
}

/// Replaces every NUL in the strings and object keys of `v` with U+FFFD; returns how many.
pub fn replace_nul_in_json(v: &mut Value) -> usize {
    match v {
        Value::String(s) => replace_nul(s),
        Value::Array(items) => items.iter_mut().map(replace_nul_in_json).sum(),
        Value::Object(map) => {
            let mut n: usize = map.values_mut().map(replace_nul_in_json).sum();
            if map.keys().any(|k| k.contains('\0')) {
                // Keys cannot be changed in place: rebuild the map, keeping its order.
                let old = std::mem::take(map);
                for (mut k, v) in old {
                    n += replace_nul(&mut k);
                    map.insert(k, v);
                }
            }
            n
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// The code unit of the four hex digits at `json[at..at + 4]`, if they are hex digits.
fn hex4(json: &[u8], at: usize) -> Option<u16> {
    let digits = json.get(at..at + 4)?;
    let s = std::str::from_utf8(digits).ok()?;
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(s, 16).ok()
}

fn is_high(u: u16) -> bool {
    (0xD800..0xDC00).contains(&u)
}

fn is_low(u: u16) -> bool {
    (0xDC00..0xE000).contains(&u)
}

/// Replaces every unpaired surrogate escape (`\uD800`–`\uDFFF` not forming a high–low
/// pair) in the JSON text `json` with `\uFFFD`; returns the text (borrowed when nothing was
/// replaced) and how many were replaced. Valid pairs and escaped backslashes (`\\ud800` is
/// text, not an escape) are left alone. Both escapes are six bytes, so offsets do not move.
pub fn repair_lone_surrogates(json: &[u8]) -> (Cow<'_, [u8]>, usize) {
    let mut out: Option<Vec<u8>> = None;
    let mut count = 0;
    let mut i = 0;
    while let Some(p) = json[i..].iter().position(|&b| b == b'\\') {
        let at = i + p;
        // Every backslash in valid JSON starts an escape of two bytes or, for `\u`, six:
        // stepping over whole escapes keeps the scan in step with the parser.
        if json.get(at + 1) != Some(&b'u') {
            i = at + 2;
            if i >= json.len() {
                break;
            }
            continue;
        }
        let Some(unit) = hex4(json, at + 2) else {
            i = at + 2; // malformed: left for the parser to report
            continue;
        };
        if is_high(unit)
            && json.get(at + 6..at + 8) == Some(b"\\u")
            && hex4(json, at + 8).is_some_and(is_low)
        {
            i = at + 12; // a valid pair
            continue;
        }
        if is_high(unit) || is_low(unit) {
            let buf = out.get_or_insert_with(|| json.to_vec());
            buf[at..at + 6].copy_from_slice(b"\\uFFFD");
            count += 1;
        }
        i = at + 6;
    }
    match out {
        Some(buf) => (Cow::Owned(buf), count),
        None => (Cow::Borrowed(json), 0),
    }
}

/// Decodes the JSON string whose text (after its opening quote) starts `bytes`, leniently:
/// it ends at the closing quote or at the end of `bytes`, whichever comes first (a string
/// cut short is decoded as far as it goes). Unpaired surrogates and invalid UTF-8 become
/// U+FFFD; a cut escape or UTF-8 sequence at the very end is dropped.
pub fn decode_string_prefix(bytes: &[u8]) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let push_char = |out: &mut Vec<u8>, c: char| {
        let mut b = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
    };
    while i < bytes.len() {
        let Some(p) = bytes[i..].iter().position(|&b| b == b'"' || b == b'\\') else {
            out.extend_from_slice(&bytes[i..]);
            break;
        };
        out.extend_from_slice(&bytes[i..i + p]);
        i += p;
        if bytes[i] == b'"' {
            break;
        }
        let Some(&e) = bytes.get(i + 1) else { break };
        let simple = match e {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            _ => None,
        };
        if let Some(c) = simple {
            push_char(&mut out, c);
            i += 2;
            continue;
        }
        if e != b'u' {
            push_char(&mut out, REPLACEMENT);
            i += 2;
            continue;
        }
        let Some(unit) = hex4(bytes, i + 2) else {
            if bytes.len() < i + 6 {
                break; // cut inside the escape
            }
            push_char(&mut out, REPLACEMENT);
            i += 2;
            continue;
        };
        if is_high(unit) && bytes.get(i + 6..i + 8) == Some(b"\\u") {
            if let Some(low) = hex4(bytes, i + 8).filter(|&l| is_low(l)) {
                let c = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                push_char(&mut out, char::from_u32(c).unwrap_or(REPLACEMENT));
                i += 12;
                continue;
            }
        }
        push_char(
            &mut out,
            char::from_u32(u32::from(unit)).unwrap_or(REPLACEMENT),
        );
        i += 6;
    }
    // A UTF-8 sequence cut by the end of the bytes is dropped, not shown as U+FFFD.
    let end = match std::str::from_utf8(&out) {
        Ok(_) => out.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => out.len(),
    };
    out.truncate(end);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repaired(s: &str) -> (String, usize) {
        let (out, n) = repair_lone_surrogates(s.as_bytes());
        (String::from_utf8(out.into_owned()).unwrap(), n)
    }

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        assert_eq!(
            repaired(r#"{"t":"a\ud800b"}"#),
            (r#"{"t":"a\uFFFDb"}"#.into(), 1)
        );
        assert_eq!(
            repaired(r#"{"t":"\uDC00\ud83d\ude00\ud83d"}"#),
            (r#"{"t":"\uFFFD\ud83d\ude00\uFFFD"}"#.into(), 2)
        );
        // A high surrogate followed by another high one: both unpaired.
        assert_eq!(
            repaired(r#"["\ud800\ud801x"]"#),
            (r#"["\uFFFD\uFFFDx"]"#.into(), 2)
        );
        // A valid pair, an escaped backslash before text that looks like an escape, and
        // ordinary escapes are all left as they are.
        for s in [
            r#"{"t":"\ud83d\ude00"}"#,
            r#"{"t":"\\ud800"}"#,
            r#"{"t":"\u0041\n\"\\"}"#,
            r#"{"t":"\\\\\ud83d\ude00"}"#,
        ] {
            let (out, n) = repair_lone_surrogates(s.as_bytes());
            assert!(matches!(out, Cow::Borrowed(_)), "{s}");
            assert_eq!(n, 0, "{s}");
        }
    }

    #[test]
    fn a_repaired_line_parses_and_pairs_decode() {
        let line = r#"{"t":"x\ud800y \ud83d\ude00"}"#;
        assert!(serde_json::from_str::<Value>(line).is_err());
        let (fixed, n) = repair_lone_surrogates(line.as_bytes());
        assert_eq!(n, 1);
        let v: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["t"], "x\u{FFFD}y 😀");
    }

    #[test]
    fn nul_is_replaced_in_strings_values_and_keys() {
        let mut s = "a\0b\0".to_string();
        assert_eq!(replace_nul(&mut s), 2);
        assert_eq!(s, "a\u{FFFD}b\u{FFFD}");
        assert_eq!(replace_nul(&mut s), 0);
        let mut v = json!({"q\u{0}": ["x\u{0}", {"k": "\u{0}"}], "n": 1, "z": "clean"});
        assert_eq!(replace_nul_in_json(&mut v), 3);
        assert_eq!(
            v,
            json!({"q\u{FFFD}": ["x\u{FFFD}", {"k": "\u{FFFD}"}], "n": 1, "z": "clean"})
        );
        // The order of keys is kept when a key is rebuilt.
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["q\u{FFFD}", "n", "z"]);
    }

    #[test]
    fn string_prefixes_decode_leniently() {
        assert_eq!(
            decode_string_prefix(br#"hello\n\"w\"" , "x""#),
            "hello\n\"w\""
        );
        assert_eq!(decode_string_prefix(br#"cut here"#), "cut here");
        assert_eq!(decode_string_prefix(br#"cut \u00"#), "cut ");
        assert_eq!(decode_string_prefix(br#"cut \"#), "cut ");
        assert_eq!(
            decode_string_prefix(br#"\ud83d\ude00 \ud800!"#),
            "😀 \u{FFFD}!"
        );
        assert_eq!(decode_string_prefix(br#"nul \u0000"#), "nul \0");
        // A multi-byte character cut at the end is dropped.
        let mut b = "é❯".as_bytes().to_vec();
        b.pop();
        assert_eq!(decode_string_prefix(&b), "é");
    }
}
