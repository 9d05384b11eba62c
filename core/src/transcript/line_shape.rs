//! The shape of a whole transcript line as [`crate::transcript::line_read`] parses it in one pass: only
//! the fields the core reads, strings borrowed from the line, everything else skipped.
//!
//! Every field is read at least as strictly as the separate readers ([`crate::transcript::entry`],
//! [`crate::transcript::step_line`], [`crate::transcript::entry::line_place`]) read it, so that whenever this parse
//! succeeds they would have read the same values; where it is stricter, it fails and the line
//! goes to them. Hence the few hand-written parts: an object must be a JSON object (serde's
//! derived structs would also take an array, field by field), a tool result's content items
//! keep the strictness of the `serde_json::Value` the entry reader parses them into, and a
//! `toolUseResult` with `answers` is left to the entry reader.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A transcript line: what the entry, step and place readers look at.
#[derive(serde::Deserialize)]
pub(crate) struct LineShape<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub timestamp: Option<&'a RawValue>,
    #[serde(rename = "isSidechain", default)]
    pub is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "promptId", borrow, default)]
    pub prompt_id: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow, default)]
    pub request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(rename = "gitBranch", borrow, default)]
    pub git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub message: Option<Object<MessageShape<'a>>>,
    /// Present only to refuse an `answers` key ([`NoAnswers`]).
    #[serde(rename = "toolUseResult", default)]
    #[allow(dead_code)]
    pub tool_use_result: Option<NoAnswers>,
}

/// A line's `message`.
#[derive(serde::Deserialize)]
pub(crate) struct MessageShape<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub content: Option<Content<'a>>,
}

/// A message's `content`: a string, blocks, or anything else (which no reader uses).
pub(crate) enum Content<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// An array of blocks.
    Blocks(Vec<BlockShape<'a>>),
    /// Another JSON value.
    Other,
}

/// A content block: text, tool_use or tool_result (the others are read and not used).
#[derive(serde::Deserialize)]
pub(crate) struct BlockShape<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(default)]
    pub is_error: Option<bool>,
    #[serde(borrow, default)]
    pub content: Option<ResultContent<'a>>,
}

/// A tool result's `content`: a string, items with text, or anything else.
pub(crate) enum ResultContent<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// An array of objects, each with its `text` when it is a string.
    Items(Vec<Option<Cow<'a, str>>>),
    /// Another JSON value.
    Other,
}

/// `T`, read only from a JSON object.
pub(crate) struct Object<T>(pub T);

/// A `toolUseResult` without an `answers` key: one with it fails the parse, so that the
/// entry reader (which parses the whole value to read them) reads that line.
pub(crate) struct NoAnswers;

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

/// Skips the rest of a map, checking its syntax as a `RawValue` would.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips the rest of a sequence, checking its syntax as a `RawValue` would.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods of a value that is "something else" for every JSON type
/// but the ones the visitor handles itself.
macro_rules! other_scalars {
    ($other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(Object(b)) = seq.next_element::<Object<BlockShape<'de>>>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content<'de>, A::Error> {
                skip_map(map).map(|()| Content::Other)
            }
            other_scalars!(Content::Other);
        }
        d.deserialize_any(ContentVisitor)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ResultContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ResultVisitor;
        impl<'de> Visitor<'de> for ResultVisitor {
            type Value = ResultContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("tool result content")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(ResultContent::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(ResultContent::Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(ResultContent::Text(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(Object(ItemText(t))) = seq.next_element::<Object<ItemText>>()? {
                    items.push(t);
                }
                Ok(ResultContent::Items(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map).map(|()| ResultContent::Other)
            }
            other_scalars!(ResultContent::Other);
        }
        d.deserialize_any(ResultVisitor)
    }
}

/// The `text` of one item of a tool result's content. Its other fields are parsed as
/// `serde_json::Value`s, as strictly as the entry reader's parse of the whole content.
struct ItemText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for ItemText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = ItemText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool result item")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut text: Option<Option<Cow<'de, str>>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "text" {
                        if text.is_some() {
                            return Err(de::Error::duplicate_field("text"));
                        }
                        text = Some(map.next_value()?);
                    } else {
                        map.next_value::<serde_json::Value>()?;
                    }
                }
                Ok(ItemText(text.flatten()))
            }
        }
        d.deserialize_map(ItemVisitor)
    }
}

impl<'de> Deserialize<'de> for NoAnswers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NoAnswersVisitor;
        impl<'de> Visitor<'de> for NoAnswersVisitor {
            type Value = NoAnswers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool use result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoAnswers, A::Error> {
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "answers" {
                        return Err(de::Error::custom("answers are read by the entry reader"));
                    }
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(NoAnswers)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NoAnswers, A::Error> {
                skip_seq(seq).map(|()| NoAnswers)
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<NoAnswers, E> {
                Ok(NoAnswers)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<NoAnswers, E> {
                Ok(NoAnswers)
            }
            other_scalars!(NoAnswers);
        }
        d.deserialize_any(NoAnswersVisitor)
    }
}
