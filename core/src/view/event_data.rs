//! An event's payload as JSON text, written once where the event is made.
//!
//! The shell hands an event's data as it is to the SSE stream and to the events table; a
//! `serde_json::Value` would be built by the core and then written out by the shell, once per
//! use. A turn's payload is written straight from its row ([`crate::engine::TurnView`]): the
//! text is escaped into one buffer instead of being copied into a map first.

use serde::Serialize;
use serde_json::value::RawValue;
use std::fmt;

/// A JSON document (always an object in practice), kept as compact text.
#[derive(Clone, Debug)]
pub struct EventData(Box<RawValue>);

impl EventData {
    /// The JSON of `value`. A value serde_json cannot write (a map with non-string keys,
    /// which no event has) becomes `null` rather than a panic.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> EventData {
        EventData(serde_json::value::to_raw_value(value).unwrap_or_else(|_| null()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// As raw JSON, for writers that take it as it is (the events table's `jsonb`).
    pub fn raw(&self) -> &RawValue {
        &self.0
    }

    /// Parsed, for readers that look inside (tests, the simulation).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.as_str()).unwrap_or(serde_json::Value::Null)
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).expect("null is JSON")
}

impl PartialEq for EventData {
    fn eq(&self, other: &EventData) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Display for EventData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
