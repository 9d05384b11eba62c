//! What a Claude session has used and what that costs: the `usage` fields of a transcript's
//! assistant lines (`input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
//! `cache_read_input_tokens`) and their `model`, priced by a [`PriceTable`].
//!
//! Pure: the shell reads the transcript and the price file and passes their text. The
//! orchestration runner uses it for an agent-run step's cost (the budget gate); any other
//! reader of a session's cost (a history, a card) can use the same reading.
//!
//! Claude Code writes one line per content block of a message, each repeating the message's
//! `usage`; a message is counted once, by its `message.id` (its last line wins, as a
//! streamed message's usage only grows).

pub mod step;
pub mod sum;

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The price table shipped with Headspace (dollars per million tokens).
pub const BUILTIN_PRICES: &str = include_str!("prices.json");

/// The key pricing any model no other key matches.
pub const ANY_MODEL: &str = "*";

/// Token counts of one message, or a sum of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// `input_tokens`.
    pub input: u64,
    /// `output_tokens`.
    pub output: u64,
    /// `cache_creation_input_tokens`.
    pub cache_creation: u64,
    /// `cache_read_input_tokens`.
    pub cache_read: u64,
}

impl Tokens {
    /// The counts of a transcript's `usage` object (missing fields are 0).
    pub fn of_usage(usage: &Value) -> Tokens {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Tokens {
            input: n("input_tokens"),
            output: n("output_tokens"),
            cache_creation: n("cache_creation_input_tokens"),
            cache_read: n("cache_read_input_tokens"),
        }
    }

    /// These counts plus `other`'s.
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_creation: self.cache_creation.saturating_add(other.cache_creation),
            cache_read: self.cache_read.saturating_add(other.cache_read),
        }
    }
}

/// One model's prices, in dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million tokens written to the cache.
    pub cache_write: f64,
    /// Per million tokens read from the cache.
    pub cache_read: f64,
}

impl Price {
    /// What `tokens` cost at this price, in dollars.
    pub fn cost_usd(&self, tokens: &Tokens) -> f64 {
        // u64 → f64 loses precision only past 2^53 tokens.
        let m = |n: u64, per_million: f64| n as f64 * per_million / 1_000_000.0;
        m(tokens.input, self.input)
            + m(tokens.output, self.output)
            + m(tokens.cache_creation, self.cache_write)
            + m(tokens.cache_read, self.cache_read)
    }
}

/// Prices by model name: a model takes the price of the longest key its name contains, else
/// that of [`ANY_MODEL`], else none.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

/// Why a price file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("price table: {0}")]
pub struct PriceError(String);

impl PriceTable {
    /// The table in `text`: a JSON object of model key → [`Price`]; keys starting with `_`
    /// are comments.
    pub fn parse(text: &str) -> Result<PriceTable, PriceError> {
        let v: BTreeMap<String, Value> =
            serde_json::from_str(text).map_err(|e| PriceError(e.to_string()))?;
        let mut prices = BTreeMap::new();
        for (k, p) in v.into_iter().filter(|(k, _)| !k.starts_with('_')) {
            let price: Price =
                serde_json::from_value(p).map_err(|e| PriceError(format!("{k}: {e}")))?;
            prices.insert(k, price);
        }
        Ok(PriceTable { prices })
    }

    /// The table shipped with Headspace ([`BUILTIN_PRICES`]).
    pub fn builtin() -> PriceTable {
        // The shipped file is checked by a test; an empty table would price nothing.
        PriceTable::parse(BUILTIN_PRICES).unwrap_or(PriceTable {
            prices: BTreeMap::new(),
        })
    }

    /// This table with `other`'s entries replacing or adding to its own.
    pub fn overridden_by(mut self, other: PriceTable) -> PriceTable {
        self.prices.extend(other.prices);
        self
    }

    /// The price of `model`.
    pub fn price_of(&self, model: &str) -> Option<&Price> {
        self.prices
            .iter()
            .filter(|(k, _)| k.as_str() != ANY_MODEL && model.contains(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
            .or_else(|| self.prices.get(ANY_MODEL))
    }
}

impl Default for PriceTable {
    fn default() -> Self {
        PriceTable::builtin()
    }
}

/// The usage of one assistant message, as a transcript line gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageUsage {
    /// `message.id` (or the line's `requestId`, or `uuid`): how repeats are recognised.
    pub id: Option<String>,
    /// `message.model`.
    pub model: String,
    /// Its tokens.
    pub tokens: Tokens,
    /// The line's `timestamp`, ms since the epoch.
    pub at_ms: Option<i64>,
}

/// The usage on one transcript line, if it carries any (`message.usage`).
pub fn message_usage(line: &Value) -> Option<MessageUsage> {
    let message = line.get("message")?;
    let usage = message.get("usage").filter(|u| u.is_object())?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    Some(MessageUsage {
        id: text(message.get("id"))
            .or_else(|| text(line.get("requestId")))
            .or_else(|| text(line.get("uuid"))),
        model: text(message.get("model")).unwrap_or_default(),
        tokens: Tokens::of_usage(usage),
        at_ms: line
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(Timestamp::parse_rfc3339)
            .map(Timestamp::millis),
    })
}

/// The usage of a stretch of transcript, by message, summed by model on demand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageTally {
    /// Each message's latest usage, by id.
    by_message: BTreeMap<String, MessageUsage>,
    /// Messages without any id, each counted as found.
    anonymous: Vec<MessageUsage>,
}

impl UsageTally {
    /// Adds the transcript lines in `text` written at or after `since_ms` (all when `None`;
    /// a line without a readable time counts, as it can only be recent). Unreadable lines,
    /// and a last line cut short, are skipped.
    pub fn add_text(&mut self, text: &str, since_ms: Option<i64>) {
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(u) = message_usage(&v) else { continue };
            if let (Some(since), Some(at)) = (since_ms, u.at_ms) {
                if at < since {
                    continue;
                }
            }
            self.add(u);
        }
    }

    /// Adds one message's usage (a repeat of a known id replaces it).
    pub fn add(&mut self, u: MessageUsage) {
        match &u.id {
            Some(id) => {
                self.by_message.insert(id.clone(), u);
            }
            None => self.anonymous.push(u),
        }
    }

    /// Tokens by model.
    pub fn by_model(&self) -> BTreeMap<String, Tokens> {
        let mut out: BTreeMap<String, Tokens> = BTreeMap::new();
        for u in self.by_message.values().chain(&self.anonymous) {
            let t = out.entry(u.model.clone()).or_default();
            *t = t.plus(u.tokens);
        }
        out
    }

    /// All tokens.
    pub fn tokens(&self) -> Tokens {
        self.by_model()
            .values()
            .fold(Tokens::default(), |a, t| a.plus(*t))
    }

    /// What it cost at `prices`, in dollars (a model without a price costs nothing).
    pub fn cost_usd(&self, prices: &PriceTable) -> f64 {
        self.by_model()
            .iter()
            .filter_map(|(model, t)| prices.price_of(model).map(|p| p.cost_usd(t)))
            .sum()
    }
}

/// What the transcript `text` used from `since_ms` on cost at `prices`, in dollars.
pub fn transcript_cost_usd(text: &str, since_ms: Option<i64>, prices: &PriceTable) -> f64 {
    let mut tally = UsageTally::default();
    tally.add_text(text, since_ms);
    tally.cost_usd(prices)
}
