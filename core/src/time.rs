//! Wall-clock instants as plain numbers: the core never reads a clock, it is handed times.

use std::fmt;

/// A UTC instant in milliseconds since the Unix epoch.
///
/// Every time in the core is one of these, given to it with an input; formatting and parsing
/// RFC 3339 are done here by hand so the core needs no date crate and stays deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Milliseconds since the Unix epoch.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// This instant moved by `ms` milliseconds.
    pub fn add_millis(self, ms: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(ms))
    }

    /// Parses an RFC 3339 / ISO 8601 instant such as `2026-08-03T07:19:17.583Z` or
    /// `2026-02-18T10:00:00+01:00`. Fractions beyond milliseconds are truncated.
    pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
        let b = s.trim().as_bytes();
        if b.len() < 19 {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let mut v = 0i64;
            for &c in b.get(r)? {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + i64::from(c - b'0');
            }
            Some(v)
        };
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || min > 59
            || sec > 60
        {
            return None;
        }
        let mut i = 19;
        let mut millis = 0i64;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start < 3 {
                    millis = millis * 10 + i64::from(b[i] - b'0');
                }
                i += 1;
            }
            let digits = i - start;
            if digits == 0 {
                return None;
            }
            for _ in digits..3 {
                millis *= 10;
            }
        }
        let offset_min = match b.get(i) {
            None => 0, // no zone: taken as UTC
            Some(b'Z' | b'z') if i + 1 == b.len() => 0,
            Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
                let h = num(i + 1..i + 3)?;
                let m = num(i + 4..i + 6)?;
                let v = h * 60 + m;
                if sign == b'-' {
                    -v
                } else {
                    v
                }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_min * 60;
        Some(Timestamp(secs * 1000 + millis))
    }

    /// Parses either an RFC 3339 string or a number of seconds (or milliseconds, when the
    /// number is too large to be seconds) since the epoch, as transcripts and hook scripts use.
    pub fn from_json(v: &serde_json::Value) -> Option<Timestamp> {
        match v {
            serde_json::Value::String(s) => Timestamp::from_json_str(s),
            serde_json::Value::Number(n) => n.as_f64().and_then(Timestamp::from_epoch_number),
            _ => None,
        }
    }

    /// A timestamp JSON string's text, read as [`Timestamp::from_json`] reads the string.
    pub fn from_json_str(s: &str) -> Option<Timestamp> {
        Timestamp::parse_rfc3339(s).or_else(|| {
            s.trim()
                .parse::<f64>()
                .ok()
                .and_then(Timestamp::from_epoch_number)
        })
    }

    fn from_epoch_number(n: f64) -> Option<Timestamp> {
        if !n.is_finite() || n < 0.0 {
            return None;
        }
        // Seconds until the year 5138; anything larger is milliseconds.
        let ms = if n < 1e11 { n * 1000.0 } else { n };
        if ms > 9e15 {
            return None;
        }
        Some(Timestamp(ms as i64))
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 UTC with milliseconds: `2026-02-18T10:00:00.000Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            y,
            m,
            d,
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60,
            ms
        )
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Timestamp::from_json(&v).ok_or_else(|| serde::de::Error::custom("invalid timestamp"))
    }
}

// Howard Hinnant's civil calendar algorithms (public domain descriptions, written anew here).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_transcript_and_offset_forms() {
        let t = Timestamp::parse_rfc3339("2026-08-03T07:19:17.583Z").unwrap();
        assert_eq!(t.to_string(), "2026-08-03T07:19:17.583Z");
        let u = Timestamp::parse_rfc3339("2026-08-03T09:19:17.583+02:00").unwrap();
        assert_eq!(t, u);
        assert_eq!(
            Timestamp::parse_rfc3339("1970-01-01T00:00:00Z"),
            Some(Timestamp(0))
        );
        assert_eq!(
            Timestamp::parse_rfc3339("2026-02-18T10:00:00.123456789Z")
                .unwrap()
                .millis()
                % 1000,
            123
        );
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "2026",
            "2026-13-01T00:00:00Z",
            "2026-01-01X00:00:00Z",
            "2026-01-01T00:00:00Zjunk",
        ] {
            assert_eq!(Timestamp::parse_rfc3339(s), None, "{s}");
        }
    }

    #[test]
    fn epoch_numbers_are_seconds_or_millis() {
        let secs = Timestamp::from_json(&serde_json::json!(1_771_408_800.5)).unwrap();
        let millis = Timestamp::from_json(&serde_json::json!(1_771_408_800_500i64)).unwrap();
        assert_eq!(secs, millis);
    }

    proptest::proptest! {
        #[test]
        fn display_parse_round_trip(ms in -2_000_000_000_000i64..8_000_000_000_000i64) {
            let t = Timestamp(ms);
            proptest::prop_assert_eq!(Timestamp::parse_rfc3339(&t.to_string()), Some(t));
        }
    }
}
