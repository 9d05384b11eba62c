#!/usr/bin/env python3
"""Stand-in Anthropic Messages API that plays a script, for driving Claude Code in tests.

Listens on 127.0.0.1 only, answers from a JSON script, appends one JSON line per
request to a log file and never calls out to the network.  Python 3.11 stdlib only.

    python3 standin_model_api.py --script turns.json --log requests.jsonl \
        [--port 0] [--port-file port.txt] [--dump-dir bodies/]

Then run Claude Code with ANTHROPIC_BASE_URL=http://127.0.0.1:<port>.
See README.md beside this file for the script format and the protocol notes.
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


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def text_of(content: Any) -> str:
    """Flatten message content (a string or a list of blocks) to text."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "tool_result":
            err = " (error)" if block.get("is_error") else ""
            parts.append(f"[tool_result{err}] " + text_of(block.get("content")))
    return "\n".join(parts)


def rough_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


def sample_from_schema(schema: Any, text: str) -> Any:
    """A minimal value that satisfies a simple JSON schema (for side calls)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
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
    """Replies for the main conversation, consumed in order (see README.md)."""

    def __init__(self, data: dict[str, Any]):
        if isinstance(data, list):
            data = {"replies": data}
        self.replies: list[dict[str, Any]] = list(data.get("replies", []))
        self.side_text: str = data.get("side_text", "Stand-in session")
        self.fallback: dict[str, Any] = data.get(
            "fallback", {"text": "(stand-in model: script exhausted)"})
        self.pos = 0   # index of the next reply
        self.used = 0  # times the reply at pos has answered (for "repeat")
        self.lock = threading.Lock()

    def next_reply(self) -> tuple[int, dict[str, Any]]:
        """The reply for the next main request; "repeat": N answers N requests."""
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


def reply_blocks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """Content blocks of a scripted reply: text first, then tool calls."""
    if "content" in reply:
        return reply["content"]
    blocks: list[dict[str, Any]] = []
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    calls = reply.get("tool_use") or []
    for call in calls if isinstance(calls, list) else [calls]:
        blocks.append({"type": "tool_use", "id": call.get("id") or new_id("toolu"),
                       "name": call["name"], "input": call.get("input", {})})
    return blocks or [{"type": "text", "text": ""}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin-model-api/1"

    script: Script
    log_file: Any = None
    dump_dir: str | None = None
    lock = threading.Lock()
    seq = 0

    def log_message(self, fmt: str, *args: Any) -> None:
        pass  # the JSON log is the record; keep stderr quiet

    # ---- helpers -----------------------------------------------------------
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
        self.send_header("request-id", new_id("req"))
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, status: int, etype: str, message: str,
                        extra: dict[str, str] | None = None) -> None:
        self.send_json(status, {"type": "error", "error": {"type": etype, "message": message}},
                       extra)

    # ---- dispatch ----------------------------------------------------------
    def do_GET(self) -> None:
        self.guarded(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.guarded(self.rfile.read(length) if length else b"")

    def guarded(self, raw: bytes) -> None:
        try:
            self.dispatch(raw)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. Esc in Claude Code)

    def dispatch(self, raw: bytes) -> None:
        path = self.path.split("?", 1)[0]
        if self.command == "GET" and path == "/_standin/status":
            self.send_json(200, self.script.status())  # test helper, not logged
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
        if self.command == "POST" and path == "/v1/messages" and isinstance(body, dict):
            self.messages(body, entry)
        elif self.command == "POST" and path == "/v1/messages/count_tokens":
            entry["kind"] = "count_tokens"
            self.write_log(entry)
            msgs = body.get("messages") if isinstance(body, dict) else None
            self.send_json(200, {"input_tokens": rough_tokens(msgs)})
        elif self.command == "GET" and path == "/v1/models":
            entry["kind"] = "models"
            self.write_log(entry)
            self.send_json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
        else:
            entry["kind"] = "unknown"
            if raw:
                entry["body"] = raw[:LOGGED_BODY_CHARS].decode("utf-8", "replace")
            self.write_log(entry)
            self.send_error_json(404, "not_found_error", f"stand-in: no route {self.path}")

    # ---- POST /v1/messages -------------------------------------------------
    def messages(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        msgs = body.get("messages") or []
        users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
        last_user = text_of(users[-1].get("content")) if users else ""
        system = body.get("system")
        sys_text = system if isinstance(system, str) else text_of(system)
        tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        fmt = (body.get("output_config") or {}).get("format") or {}
        entry.update({
            "model": body.get("model"), "stream": bool(body.get("stream")),
            "n_messages": len(msgs), "tools": tools, "system_head": sys_text[:300],
            "last_user_text": last_user[-LOGGED_BODY_CHARS:],
        })
        # The main agent loop always offers tools; side calls (session title,
        # etc.) offer none.
        if tools:
            entry["kind"] = "main"
            idx, reply = self.script.next_reply()
            entry["reply_index"] = idx
            expect = reply.get("expect")
            if expect is not None and expect not in last_user:
                entry["expect_mismatch"] = expect
        else:
            entry["kind"] = "side"
            if fmt.get("type") == "json_schema":
                text = json.dumps(sample_from_schema(fmt.get("schema"), self.script.side_text))
            else:
                text = self.script.side_text
            reply = {"text": text}
        self.write_log(entry)

        if reply.get("wait_file"):  # hold the answer until a test creates this file
            deadline = time.time() + float(reply.get("wait_timeout", 300))
            while not os.path.exists(reply["wait_file"]) and time.time() < deadline:
                time.sleep(0.05)
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        err = reply.get("error")
        if err:
            self.send_error_json(int(err.get("status", 500)), err.get("type", "api_error"),
                                 err.get("message", "stand-in scripted error"),
                                 {"x-should-retry": "true" if err.get("retry") else "false"})
            return
        blocks = reply_blocks(reply)
        stop = reply.get("stop_reason") or (
            "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn")
        model = body.get("model") or "stand-in"
        usage = {"input_tokens": rough_tokens(msgs), "output_tokens": rough_tokens(blocks),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if body.get("stream"):
            self.stream(model, blocks, stop, usage, max(1, int(reply.get("chunk", 16))),
                        float(reply.get("chunk_delay", 0)))
        else:
            self.send_json(200, {"id": new_id("msg"), "type": "message", "role": "assistant",
                                 "model": model, "content": blocks, "stop_reason": stop,
                                 "stop_sequence": None, "usage": usage})

    def stream(self, model: str, blocks: list[dict[str, Any]], stop: str,
               usage: dict[str, int], chunk: int, chunk_delay: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", new_id("req"))
        self.end_headers()

        def event(name: str, data: dict[str, Any], pause: bool = False) -> None:
            if pause and chunk_delay:
                time.sleep(chunk_delay)
            payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

        event("message_start", {"type": "message_start", "message": {
            "id": new_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1}}})
        event("ping", {"type": "ping"})
        for i, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                pieces = [("text_delta", "text", block.get("text", ""))]
            elif kind == "tool_use":
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                pieces = [("input_json_delta", "partial_json", json.dumps(block.get("input", {})))]
            elif kind == "thinking":
                start = {"type": "thinking", "thinking": ""}
                pieces = [("thinking_delta", "thinking", block.get("thinking", "")),
                          ("signature_delta", "signature", block.get("signature", "standin"))]
            else:  # any other block goes whole in its start event
                start, pieces = block, []
            event("content_block_start",
                  {"type": "content_block_start", "index": i, "content_block": start})
            for delta_type, field, value in pieces:
                step = len(value) if delta_type == "signature_delta" else chunk
                for j in range(0, len(value), step or 1):
                    event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": delta_type,
                                                            field: value[j:j + step]}},
                          pause=True)
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": usage["output_tokens"]}})
        event("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    serve("model API", "README.md", Handler, Script)


if __name__ == "__main__":
    main()
