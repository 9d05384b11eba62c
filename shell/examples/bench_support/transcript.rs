//! The large transcript the ingest figures read: tasks of a prompt, three rounds of agent
//! text and a `Bash` tool call with a long result, and a closing answer.

use headspace_testkit::synth::SessionWriter;
use serde_json::json;

/// A transcript of at least `bytes` bytes written by `writer`, and the text of its last
/// turn (the one to wait for).
pub fn big(writer: &mut SessionWriter, bytes: usize) -> (Vec<u8>, String) {
    let mut out = Vec::with_capacity(bytes + (1 << 20));
    let mut texts = 0u64;
    let mut last_text = String::new();
    while out.len() < bytes {
        texts += 1;
        let mut lines = vec![writer.prompt(&format!("big task {texts}"), None)];
        for _ in 0..3 {
            lines.push(writer.agent_text(&format!(
                "step of big task {texts}: {}",
                "reading the sources ".repeat(8)
            )));
            let result =
                "src/lib.rs:42: fn handle(&mut self, input: Input) -> Result<(), Error> {\n"
                    .repeat(60);
            lines.extend(writer.tool("Bash", json!({"command": "grep -rn handle src/"}), &result));
        }
        last_text = format!("Done. Big task {texts} is complete.");
        lines.push(writer.agent_text(&last_text));
        for l in lines {
            out.extend_from_slice(l.json.as_bytes());
            out.push(b'\n');
        }
    }
    (out, last_text)
}
