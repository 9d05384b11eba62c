#!/usr/bin/env python3
"""Stand-in OpenAI Responses API that plays a script, for driving Codex CLI in tests.

Listens on 127.0.0.1 only, answers from a JSON script, appends one JSON line per
request to a log file and never calls out to the network.  Python 3.11 stdlib only.

    python3 standin_responses_api.py --script turns.json --log requests.jsonl \
        [--port 0] [--port-file port.txt] [--dump-dir bodies/]

Then point Codex at it with a custom model provider in $CODEX_HOME/config.toml:

    model = "stand-in"
    model_provider = "standin"
    [model_providers.standin]
    name = "standin"
    base_url = "http://127.0.0.1:<port>/v1"
    wire_api = "responses"

See README.md beside this file for the script format and protocol notes.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from standin_serve import serve

LOGGED_BODY_CHARS = 2000
# Names of the shell tools different Codex versions offer, and how the "shell"
# shorthand of a reply is turned into that tool's arguments.
SHELL_TOOLS = {
    "exec_command": lambda cmd, wd: {"cmd": cmd, **({"workdir": wd} if wd else {})},
    "shell_command": lambda cmd, wd: {"command": cmd, **({"workdir": wd} if wd else {})},
    "shell": lambda cmd, wd: {"command": ["bash", "-lc", cmd], **({"workdir": wd} if wd else {})},
}


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def rough_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


def text_of_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


def last_user_text(items: list[Any]) -> str:
    """Text of the last user message, or of the tool outputs after it."""
    tail: list[str] = []
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind in ("function_call_output", "custom_tool_call_output"):
            out = item.get("output")
            tail.append("[tool_output] " + (out if isinstance(out, str) else json.dumps(out)))
            continue
        if kind == "message" and item.get("role") == "user":
            tail.append(text_of_content(item.get("content")))
            break
        if kind == "message" and item.get("role") == "assistant":
            if tail:
                break
    return "\n".join(reversed(tail))


def tool_names(tools: Any) -> list[str]:
    names = []
    for t in tools or []:
        if isinstance(t, dict):
            names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return names


def sample_from_schema(schema: Any, text: str) -> Any:
    """A minimal value that satisfies a simple JSON schema (for structured side calls)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {k: sample_from_schema(props.get(k, {}), text) for k in required}
    if kind == "array":
        return []
    if kind == "string":
        return text
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return None


class Script:
    """Replies for the main conversation, consumed in order."""

    def __init__(self, data: Any):
        if isinstance(data, list):
            data = {"replies": data}
        self.replies: list[dict[str, Any]] = list(data.get("replies", []))
        self.side_text: str = data.get("side_text", "Stand-in session")
        self.compact_text: str | None = data.get("compact_text")
        self.fallback: dict[str, Any] = data.get(
            "fallback", {"text": "(stand-in model: script exhausted)"})
        self.pos = 0
        self.used = 0
        self.lock = threading.Lock()

    def next_reply(self) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if self.pos >= len(self.replies):
                return -1, self.fallback
            idx, reply = self.pos, self.replies[self.pos]
            self.used += 1
            if self.used >= int(reply.get("repeat", 1)):
                self.pos, self.used = self.pos + 1, 0
            return idx, reply

    def status(self) -> dict[str, Any]:
        with self.lock:
            return {"played": self.pos, "total": len(self.replies),
                    "exhausted": self.pos >= len(self.replies)}


def build_output(reply: dict[str, Any], offered: list[str]) -> list[dict[str, Any]]:
    """Output items of a scripted reply: reasoning, text message, then tool calls."""
    if "output" in reply:  # raw Responses API output items
        return reply["output"]
    items: list[dict[str, Any]] = []
    if reply.get("reasoning"):
        items.append({"type": "reasoning", "id": new_id("rs"),
                      "summary": [{"type": "summary_text", "text": reply["reasoning"]}],
                      "content": None, "encrypted_content": None})
    if reply.get("text") or not (reply.get("shell") or reply.get("tool_call")):
        items.append({"type": "message", "id": new_id("msg"), "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": reply.get("text", ""),
                                   "annotations": []}]})
    calls = reply.get("tool_call") or []
    calls = list(calls) if isinstance(calls, list) else [calls]
    shell = reply.get("shell")
    if shell is not None:
        spec = shell if isinstance(shell, dict) else {"command": shell}
        name = next((n for n in SHELL_TOOLS if n in offered), "exec_command")
        args = SHELL_TOOLS[name](spec["command"], spec.get("workdir"))
        for k in ("sandbox_permissions", "justification", "prefix_rule", "yield_time_ms",
                  "timeout_ms", "login", "tty", "max_output_tokens"):
            if k in spec:
                args[k] = spec[k]
        calls.insert(0, {"name": name, "arguments": args})
    for call in calls:
        args = call.get("arguments", {})
        item = {"type": "function_call", "id": new_id("fc"),
                "call_id": call.get("call_id") or new_id("call"),
                "name": call["name"], "status": "completed",
                "arguments": args if isinstance(args, str) else json.dumps(args)}
        if call.get("namespace"):  # tools offered inside a {"type":"namespace"} group
            item["namespace"] = call["namespace"]
        items.append(item)
    return items


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin-responses-api/1"

    script: Script
    log_file: Any = None
    dump_dir: str | None = None
    lock = threading.Lock()
    seq = 0

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def next_seq(self) -> int:
        with Handler.lock:
            Handler.seq += 1
            return Handler.seq

    def write_log(self, entry: dict[str, Any]) -> None:
        with Handler.lock:
            self.log_file.write(json.dumps(entry) + "\n")
            self.log_file.flush()

    def send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", new_id("req"))
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, status: int, etype: str, message: str, code: str | None = None,
                        extra: dict[str, str] | None = None) -> None:
        self.send_json(status, {"error": {"type": etype, "code": code, "message": message,
                                          "param": None}}, extra)

    def do_GET(self) -> None:
        self.guarded(b"")

    def do_DELETE(self) -> None:
        self.guarded(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "").lower() in ("zstd", "gzip", "br"):
            raw = self.decode_body(raw)
        self.guarded(raw)

    def decode_body(self, raw: bytes) -> bytes:
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc == "gzip":
            import gzip
            return gzip.decompress(raw)
        return raw  # zstd/br: not in the stdlib; logged as-is

    def guarded(self, raw: bytes) -> None:
        try:
            self.dispatch(raw)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (Esc in Codex)

    def dispatch(self, raw: bytes) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if self.command == "GET" and path == "/_standin/status":
            self.send_json(200, self.script.status())
            return
        seq = self.next_seq()
        if self.dump_dir and raw:
            with open(os.path.join(self.dump_dir, f"{seq:04d}.json"), "wb") as f:
                f.write(raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        entry: dict[str, Any] = {
            "seq": seq, "ts": round(time.time(), 3), "method": self.command,
            "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
        }
        if self.command == "POST" and path == "/v1/responses" and isinstance(body, dict):
            self.answer_responses(body, entry)
        elif self.command == "POST" and path == "/v1/responses/compact" and isinstance(body, dict):
            entry["kind"] = "compact"
            self.write_log(entry)
            self.send_json(200, {"output": [{
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": self.script.side_text}]}]})
        elif self.command == "GET" and path == "/v1/models":
            entry["kind"] = "models"
            self.write_log(entry)
            # Both shapes: OpenAI's {"object":"list","data":[]} and Codex's {"models":[]}.
            self.send_json(200, {"object": "list", "data": [], "models": []})
        else:
            entry["kind"] = "unknown"
            if raw:
                entry["body"] = raw[:LOGGED_BODY_CHARS].decode("utf-8", "replace")
            self.write_log(entry)
            self.send_error_json(404, "invalid_request_error", f"stand-in: no route {self.path}")

    # ---- POST /v1/responses ------------------------------------------------
    def answer_responses(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        offered = tool_names(body.get("tools"))
        instructions = body.get("instructions") or ""
        if not instructions:  # Codex 0.171 sends its base prompt as the first developer message
            first = next((i for i in items if isinstance(i, dict) and i.get("role") == "developer"), None)
            instructions = text_of_content(first.get("content")) if first else ""
        try:
            meta = json.loads(self.headers.get("x-codex-turn-metadata") or "{}")
        except ValueError:
            meta = {}
        user_text = last_user_text(items)
        fmt = ((body.get("text") or {}).get("format") or {})
        entry.update({
            "model": body.get("model"), "stream": bool(body.get("stream")),
            "n_input": len(items), "tools": offered,
            "instructions_head": instructions[:300] if isinstance(instructions, str) else None,
            "last_user_text": user_text[-LOGGED_BODY_CHARS:],
            "prompt_cache_key": body.get("prompt_cache_key"),
            # request_kind "turn" (agent loop and title) or "compaction"; thread_source
            # "user" | "subagent" | "thread_title"
            "request_kind": meta.get("request_kind"), "thread_source": meta.get("thread_source"),
            "turn_id": meta.get("turn_id"),
            "subagent": self.headers.get("x-openai-subagent"),
        })
        # Codex's agent loop always offers tools; anything else is a side call.
        if offered:
            entry["kind"] = "main"
            idx, reply = self.script.next_reply()
            entry["reply_index"] = idx
            expect = reply.get("expect")
            if expect is not None and expect not in user_text:
                entry["expect_mismatch"] = expect
        else:
            entry["kind"] = "side"
            if fmt.get("type") == "json_schema":
                text = json.dumps(sample_from_schema(fmt.get("schema"), self.script.side_text))
            elif meta.get("request_kind") == "compaction" and self.script.compact_text:
                text = self.script.compact_text
            else:
                text = self.script.side_text
            reply = {"text": text}
        self.write_log(entry)

        if reply.get("wait_file"):
            deadline = time.time() + float(reply.get("wait_timeout", 300))
            while not os.path.exists(reply["wait_file"]) and time.time() < deadline:
                time.sleep(0.05)
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        err = reply.get("error")
        if err:
            self.send_error_json(int(err.get("status", 500)), err.get("type", "server_error"),
                                 err.get("message", "stand-in scripted error"), err.get("code"))
            return
        output = build_output(reply, offered)
        model = body.get("model") or "stand-in"
        in_tok = rough_tokens(items) + rough_tokens(instructions)
        out_tok = rough_tokens(output)
        usage = {"input_tokens": in_tok, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": out_tok, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": in_tok + out_tok}
        resp = {"id": new_id("resp"), "object": "response", "created_at": int(time.time()),
                "status": "in_progress", "model": model, "output": [], "usage": None}
        if body.get("stream") is False:
            self.send_json(200, {**resp, "status": "completed", "output": output, "usage": usage})
            return
        delay = float(reply.get("delay_ms", 0)) / 1000.0
        self.stream(resp, output, usage, max(1, int(reply.get("chunk", 16))), delay)

    def stream(self, resp: dict[str, Any], output: list[dict[str, Any]], usage: dict[str, Any],
               chunk: int, delay: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", new_id("req"))
        self.end_headers()
        n = 0

        def event(data: dict[str, Any], pause: bool = False) -> None:
            nonlocal n
            if pause and delay:
                time.sleep(delay)
            data = {"type": data["type"], "sequence_number": n, **data}
            n += 1
            payload = f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

        event({"type": "response.created", "response": resp})
        event({"type": "response.in_progress", "response": resp})
        for oi, item in enumerate(output):
            kind = item.get("type")
            iid = item.get("id") or new_id("item")
            if kind == "message":
                text = text_of_content(item.get("content"))
                event({"type": "response.output_item.added", "output_index": oi,
                       "item": {**item, "status": "in_progress", "content": []}})
                part = {"type": "output_text", "text": "", "annotations": []}
                event({"type": "response.content_part.added", "item_id": iid,
                       "output_index": oi, "content_index": 0, "part": part})
                for j in range(0, len(text), chunk):
                    event({"type": "response.output_text.delta", "item_id": iid,
                           "output_index": oi, "content_index": 0,
                           "delta": text[j:j + chunk], "logprobs": []}, pause=True)
                event({"type": "response.output_text.done", "item_id": iid,
                       "output_index": oi, "content_index": 0, "text": text, "logprobs": []})
                event({"type": "response.content_part.done", "item_id": iid,
                       "output_index": oi, "content_index": 0, "part": {**part, "text": text}})
            elif kind == "function_call":
                args = item.get("arguments", "")
                event({"type": "response.output_item.added", "output_index": oi,
                       "item": {**item, "status": "in_progress", "arguments": ""}})
                for j in range(0, len(args), max(chunk, 64)):
                    event({"type": "response.function_call_arguments.delta", "item_id": iid,
                           "output_index": oi, "delta": args[j:j + max(chunk, 64)]}, pause=True)
                event({"type": "response.function_call_arguments.done", "item_id": iid,
                       "output_index": oi, "arguments": args})
            elif kind == "reasoning":
                event({"type": "response.output_item.added", "output_index": oi,
                       "item": {**item, "summary": []}})
                for si, s in enumerate(item.get("summary") or []):
                    event({"type": "response.reasoning_summary_part.added", "item_id": iid,
                           "output_index": oi, "summary_index": si,
                           "part": {"type": "summary_text", "text": ""}})
                    event({"type": "response.reasoning_summary_text.delta", "item_id": iid,
                           "output_index": oi, "summary_index": si, "delta": s.get("text", "")},
                          pause=True)
                    event({"type": "response.reasoning_summary_text.done", "item_id": iid,
                           "output_index": oi, "summary_index": si, "text": s.get("text", "")})
            else:
                event({"type": "response.output_item.added", "output_index": oi, "item": item})
            event({"type": "response.output_item.done", "output_index": oi, "item": item})
        event({"type": "response.completed",
               "response": {**resp, "status": "completed", "output": output, "usage": usage}})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    serve("Responses API", "README.md", Handler, Script)


if __name__ == "__main__":
    main()
