//! A turn's event payload is written straight from its row (`TurnView`), not through a
//! `serde_json::Value`: it must say exactly what the API's `turn_json` says, and stay one
//! line, whatever the text holds (an SSE frame ends at the first line break).

use headspace_core::engine::{turn_json, TurnView};
use headspace_core::model::{TimestampSource, TurnRow, TurnSource};
use headspace_core::{Actor, EventData, Intent, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;

fn row(text: String, uuid: Option<String>, question: bool, ms: i64) -> TurnRow {
    let mut r = TurnRow::new(
        7,
        3,
        (Actor::Agent, Intent::Question),
        text,
        Timestamp(ms),
        TurnSource::Transcript,
    );
    r.id = 42;
    r.entry_uuid = uuid;
    r.timestamp_source = TimestampSource::Jsonl;
    r.question =
        question.then(|| json!({"questions": [{"question": "Which \"table\"?\n", "options": []}]}));
    r
}

/// The turn's JSON built field by field, as the core built it before `TurnView`.
fn by_hand(t: &TurnRow) -> serde_json::Value {
    json!({
        "id": t.id,
        "turn_id": t.id,
        "agent_id": t.agent_id,
        "task_id": t.task_id,
        "actor": t.actor,
        "intent": t.intent,
        "text": t.text,
        "timestamp": t.timestamp,
        "timestamp_source": t.timestamp_source,
        "entry_uuid": t.entry_uuid,
        "question": t.question,
    })
}

#[test]
fn a_turns_payload_reads_as_the_apis_turn_json_in_the_same_order() {
    let r = row(
        "line one\nline \"two\"\u{2028}\u{0}".into(),
        Some("u-1".into()),
        true,
        0,
    );
    let data = EventData::of(&TurnView::of(&r));
    assert_eq!(data.as_str(), by_hand(&r).to_string());
    assert_eq!(turn_json(&r), by_hand(&r));
    assert!(data.as_str().starts_with(r#"{"id":42,"turn_id":42,"agent_id":7,"task_id":3,"actor":"agent","intent":"question","text":"line one\nline \"two\""#), "{data}");
    assert_eq!(
        data.to_value()["timestamp"],
        json!("1970-01-01T00:00:00.000Z")
    );
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 500,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/core-event-data.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_turn_is_one_line_of_the_same_json_as_the_api(
        text in "(?s).{0,40}",
        uuid in proptest::option::of("[ -~\n\u{7f}-\u{3000}]{0,12}"),
        question in any::<bool>(),
        ms in 0i64..4_102_444_800_000,
    ) {
        let r = row(text, uuid, question, ms);
        let data = EventData::of(&TurnView::of(&r));
        prop_assert!(!data.as_str().contains(['\n', '\r']), "{}", data);
        prop_assert_eq!(data.as_str(), by_hand(&r).to_string());
        prop_assert_eq!(data.to_value(), turn_json(&r));
    }
}
