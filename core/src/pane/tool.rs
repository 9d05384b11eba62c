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

/// Whether the pane's `screen` shows `tool` (as [`asked_tool`] describes it): its summary's
/// file name, for a path, or the start of its first line, spaces evened out. A tool whose
/// hook was lost leaves the one asked before it behind; a dialog that does not show that
/// one's command or file is about another tool. A tool without a summary cannot be checked
/// and counts as shown.
pub fn shown_on(tool: &Value, screen: &str) -> bool {
    let Some(summary) = tool.get("summary").and_then(Value::as_str) else {
        return true;
    };
    let squeeze = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = squeeze(summary.lines().next().unwrap_or_default());
    let looks_like_path = !first.contains(' ') && first.contains('/');
    let needle: String = if looks_like_path {
        first
            .rsplit('/')
            .find(|p| !p.is_empty())
            .unwrap_or(&first)
            .to_string()
    } else {
        // A wrapped line breaks after a screen's width: the first 24 characters fit any.
        first.chars().take(24).collect()
    };
    if needle.is_empty() {
        return true;
    }
    let lines: Vec<String> = screen
        .lines()
        .map(|l| squeeze(&l.replace(['│', '┃'], " ")))
        .collect();
    lines.join(" ").contains(&needle) || lines.iter().any(|l| cut_short(l, &first))
}

/// Whether `line` shows `text` cut short with `…` (a long command in a narrow dialog): the
/// words right before the `…`, at least six characters of them, begin `text`.
fn cut_short(line: &str, text: &str) -> bool {
    line.split('…').rev().skip(1).any(|before| {
        let before = before.trim_end();
        before
            .char_indices()
            .filter(|&(i, _)| i == 0 || before[..i].ends_with(' '))
            .map(|(i, _)| &before[i..])
            .any(|tail| tail.chars().count() >= 6 && text.starts_with(tail))
    })
}

#[cfg(test)]
mod tests {
    use super::{asked_tool, shown_on, with_tool, FIELD_CHARS};
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

    #[test]
    fn a_tool_is_shown_by_its_command_or_its_file_name() {
        let dialog = "╭──────────────╮\n│ Bash command │\n│   cargo   test --workspace │\n│ Do you want to proceed? │\n";
        let bash = |c: &str| asked_tool("Bash", Some(&json!({"command": c})));
        assert!(shown_on(&bash("cargo test --workspace"), dialog));
        assert!(
            !shown_on(&bash("rm -rf target"), dialog),
            "the tool asked before, whose hook was not lost"
        );
        let edit = asked_tool("Edit", Some(&json!({"file_path": "/home/u/p/src/lib.rs"})));
        assert!(shown_on(
            &edit,
            "Do you want to make this edit to lib.rs?\n❯ 1. Yes\n"
        ));
        assert!(!shown_on(
            &edit,
            "Do you want to make this edit to main.rs?\n"
        ));
        assert!(shown_on(&asked_tool("Mystery", None), "anything"));
        let long = bash("rm -rf target/debug/deps");
        assert!(
            shown_on(&long, "│ Bash command │\n│   rm -rf tar… │\n"),
            "cut short"
        );
        assert!(
            !shown_on(&long, "│   rm -rf fo… │\n"),
            "another command cut short"
        );
        assert!(!shown_on(&long, "│   rm -r… │\n"), "too little to tell");
    }
}
