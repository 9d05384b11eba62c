//! Reading specflow's files leniently: a name this version does not know is kept, not refused,
//! and a `null` stays a `null` when the file is written back.
//!
//! Specflow and its sub-commands evolve on their own; a new status written by a newer
//! sub-command must reach the decision matrix as "unknown" (so it can be reported and
//! recovered) instead of making the whole file unreadable.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a string enum read leniently: each known name is a variant, anything else is
/// kept verbatim in `Unknown(String)`, and writing gives back exactly the name that was read.
macro_rules! lenient_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A name this version does not know, kept exactly as written.
            Unknown(String),
        }

        impl $name {
            /// The name as written in the JSON files.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Unknown(s) => s,
                }
            }

            /// Reads a name; one this version does not know becomes `Unknown`.
            pub fn parse(s: &str) -> $name {
                match s {
                    $( $text => $name::$variant, )+
                    other => $name::Unknown(other.to_string()),
                }
            }

            /// Whether this is one of the names this version knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Unknown(_))
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }
    };
}
pub(crate) use lenient_enum;

/// A field that may be absent, explicitly `null`, or set.
///
/// Specflow's schemas distinguish "nullable" from "optional": a file that said `null` must
/// say `null` again after a rewrite, and one that left the key out must still leave it out,
/// or specflow's own validation of the rewritten file can fail.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Nullable<T> {
    /// The key was not in the file.
    #[default]
    Absent,
    /// The key was there with `null`.
    Null,
    /// The key had a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// The value, if there is one (absent and `null` both mean "none").
    pub fn get(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// Whether the key was left out (used to leave it out again on write).
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }
}

impl<T> From<T> for Nullable<T> {
    fn from(v: T) -> Self {
        Nullable::Value(v)
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(v) => v.serialize(s),
            // Absent is skipped by the field's `skip_serializing_if`; if a caller forgets
            // that, `null` is the closest faithful rendering.
            Nullable::Absent | Nullable::Null => s.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only reached when the key is present; a missing key takes `Default` (Absent).
        Ok(match Option::<T>::deserialize(d)? {
            Some(v) => Nullable::Value(v),
            None => Nullable::Null,
        })
    }
}

/// Reads an integer that some writers store as a string (`"2"`), as specflow's CLI coerces
/// `state set` values; `null` reads as none.
pub(crate) fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(d)? {
        None => Ok(None),
        Some(serde_json::Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("not an integer: {n}"))),
        Some(serde_json::Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("not an integer: {s:?}"))),
        Some(other) => Err(D::Error::custom(format!("not an integer: {other}"))),
    }
}
