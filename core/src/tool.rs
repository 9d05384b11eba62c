//! The tool a permission dialog asks about, as the dashboard shows it: its name, the input
//! that matters (the command, the file, the address) and a short summary of an edit. Read
//! from the PreToolUse / PermissionRequest hook, which carries the tool's exact input.

use serde_json::{json, Map, Value};

/// The characters of one input field kept: a Write's whole file is not a card's business.
pub const FIELD_CHARS: usize = 2000;

/// The tool `name` with `input`, as `{"name", "summary", "detail", "input"}`: `summary` is
/// the one thing a user must read before allowing it (a command, a path, an address),
/// `detail` a line more when there is one (an edit's size), `input` the string and number
/// fields, each clipped to [`FIELD_CHARS`].
pub fn asked_tool(name: &str, input: Option<&Value>) -> Value {
    let field = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
    let summary = input_summary(name, input);
    let lines = |k: &str| field(k).map_or(0, |t| t.lines().count());
    let detail = match name {
        "Edit" => Some(format!(
            "replaces {} line{} with {}",
            lines("old_string"),
            if lines("old_string") == 1 { "" } else { "s" },
            lines("new_string")
        )),
        "MultiEdit" => input
            .and_then(|i| i.get("edits"))
            .and_then(Value::as_array)
            .map(|e| format!("{} edit{}", e.len(), if e.len() == 1 { "" } else { "s" })),
        "Write" => Some(format!(
            "writes {} line{}",
            lines("content"),
            if lines("content") == 1 { "" } else { "s" }
        )),
        "Bash" => field("description").map(clip_field),
        _ => None,
    };
    let kept: Map<String, Value> = input
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k.clone(), Value::String(clip_field(s)))),
                    Value::Number(_) | Value::Bool(_) => Some((k.clone(), v.clone())),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    json!({"name": name, "summary": summary, "detail": detail, "input": kept})
}

/// The input that matters of tool `name` (the command, the file, the address, the pattern;
/// another tool's first string field), clipped to [`FIELD_CHARS`].
pub fn input_summary(name: &str, input: Option<&Value>) -> Option<String> {
    let field = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
    match name {
        "Bash" => field("command"),
        "Edit" | "MultiEdit" | "Write" | "Read" | "NotebookEdit" => {
            field("file_path").or_else(|| field("notebook_path"))
        }
        "WebFetch" => field("url"),
        "WebSearch" => field("query"),
        "Grep" | "Glob" => field("pattern"),
        "Task" | "Agent" => field("description").or_else(|| field("prompt")),
        _ => None,
    }
    .or_else(|| {
        // Another tool (an MCP server's): its first string field.
        input
            .and_then(Value::as_object)
            .and_then(|o| o.values().find_map(Value::as_str))
    })
    .map(clip_field)
}

/// The first [`FIELD_CHARS`] characters of `text`, with `…` when it goes on.
fn clip_field(text: &str) -> String {
    match text.char_indices().nth(FIELD_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `dialog` (a permission dialog read from the pane) with `tool` added as its `"tool"`,
/// unless it names one already or there is none to add.
pub fn with_tool(mut dialog: Value, tool: Option<&Value>) -> Value {
    if let (Some(o), Some(t)) = (dialog.as_object_mut(), tool) {
        o.entry("tool").or_insert_with(|| t.clone());
    }
    dialog
}

#[cfg(test)]
mod tests {
    use super::{asked_tool, with_tool, FIELD_CHARS};
    use serde_json::json;

    #[test]
    fn the_summary_is_what_must_be_read_before_allowing() {
        let t = asked_tool(
            "Bash",
            Some(&json!({"command": "rm -rf target", "description": "Remove the build"})),
        );
        assert_eq!(t["name"], "Bash");
        assert_eq!(t["summary"], "rm -rf target");
        assert_eq!(t["detail"], "Remove the build");
        let t = asked_tool(
            "Edit",
            Some(&json!({"file_path": "/src/a.rs", "old_string": "a\nb", "new_string": "c"})),
        );
        assert_eq!(t["summary"], "/src/a.rs");
        assert_eq!(t["detail"], "replaces 2 lines with 1");
        let t = asked_tool("mcp__db__query", Some(&json!({"sql": "DROP TABLE x"})));
        assert_eq!(t["summary"], "DROP TABLE x");
        assert_eq!(asked_tool("Bash", None)["summary"], json!(null));
    }

    #[test]
    fn long_input_is_clipped_and_a_dialog_keeps_its_own_tool() {
        let big = "x".repeat(FIELD_CHARS + 10);
        let t = asked_tool("Write", Some(&json!({"file_path": "/a", "content": big})));
        let kept = t["input"]["content"].as_str().unwrap();
        assert_eq!(kept.chars().count(), FIELD_CHARS + 1);
        assert!(kept.ends_with('…'));
        let dialog = json!({"question": "Do you want to proceed?", "options": ["Yes"]});
        let tool = json!({"name": "Bash"});
        assert_eq!(with_tool(dialog.clone(), Some(&tool))["tool"], tool);
        assert_eq!(with_tool(dialog.clone(), None), dialog);
        let other = json!({"name": "Edit"});
        let both = with_tool(with_tool(dialog, Some(&tool)), Some(&other));
        assert_eq!(both["tool"], tool);
    }
}
