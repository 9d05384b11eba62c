#!/usr/bin/env python3
"""Stand-in Gemini API (generativelanguage v1beta) that plays a script, for driving Gemini CLI.

Listens on 127.0.0.1 only, answers from a JSON script, appends one JSON line per
request to a log file and never calls out to the network.  Python 3.11 stdlib only.

    python3 standin_gemini_api.py --script turns.json --log requests.jsonl \
        [--port 0] [--port-file port.txt] [--dump-dir bodies/]

Then run Gemini CLI with
    GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>  GEMINI_API_KEY=<anything>
and "security.auth.selectedType": "gemini-api-key" in ~/.gemini/settings.json.
Script: {"replies": [...], "side_text", "compact_text", "side_json", "fallback"} or a bare list.
A reply: {"text", "shell" ("cmd" or {"command", "description", "dir_path", "is_background"}),
"tool_call" ({"name", "args"} or list), "thought", "parts" (raw), "finish_reason", "chunk",
"delay_ms", "delay", "wait_file", "wait_timeout", "error" ({"status", "message"}), "expect",
"repeat"}.  Requests offering functionDeclarations are the agent loop and take the next reply;
all others (router, summary, compression, next-speaker, loop check) get side answers.
See docs/research/gemini-cli-0.61.md for details and protocol notes.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from standin_serve import serve

LOGGED_BODY_CHARS = 2000
# Shell tools offered by Gemini CLI versions, and how the "shell" shorthand of a
# reply becomes that tool's arguments (0.61: run_shell_command {command, description?,
# dir_path?, is_background?}).
SHELL_TOOLS = ("run_shell_command", "shell")
SHELL_ARG_KEYS = ("description", "dir_path", "directory", "is_background", "delay_ms")
# path: /v1beta/models/<model>:<method>   (also /v1, /v1alpha)
METHOD_RE = re.compile(r"^/(v1[a-z0-9]*)/models/([^/:]+):([A-Za-z]+)$")
MODEL_RE = re.compile(r"^/(v1[a-z0-9]*)/models(?:/([^/:]+))?$")


def new_id(prefix: str = "") -> str:
    return f"{prefix}{uuid.uuid4().hex[:22]}"


def rough_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


def text_of_parts(parts: Any) -> str:
    out = []
    for p in parts or []:
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("text"), str) and not p.get("thought"):
            out.append(p["text"])
        elif "functionResponse" in p:
            fr = p["functionResponse"] or {}
            out.append(f"[function_response {fr.get('name')}] "
                       + json.dumps(fr.get("response"), ensure_ascii=False))
        elif "functionCall" in p:
            fc = p["functionCall"] or {}
            out.append(f"[function_call {fc.get('name')}] "
                       + json.dumps(fc.get("args"), ensure_ascii=False))
    return "\n".join(out)


def normalize_contents(contents: Any) -> list[dict[str, Any]]:
    if isinstance(contents, str):
        return [{"role": "user", "parts": [{"text": contents}]}]
    if isinstance(contents, dict):
        return [contents]
    return [c for c in contents or [] if isinstance(c, dict)]


def last_user_text(contents: list[dict[str, Any]]) -> str:
    for c in reversed(contents):
        if c.get("role", "user") == "user":
            return text_of_parts(c.get("parts"))
    return ""


def function_names(tools: Any) -> list[str]:
    names = []
    for t in tools or []:
        if isinstance(t, dict):
            for fd in t.get("functionDeclarations") or t.get("function_declarations") or []:
                if isinstance(fd, dict) and fd.get("name"):
                    names.append(fd["name"])
            for k in t:
                if k not in ("functionDeclarations", "function_declarations"):
                    names.append(k)  # e.g. googleSearch, urlContext
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
    kind = kind.lower() if isinstance(kind, str) else kind  # Gemini "OBJECT"/"STRING" style
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


def side_kind(body: dict[str, Any], contents: list[dict[str, Any]]) -> str:
    """Best-effort name of a Gemini CLI utility call (for the log only)."""
    cfg = body.get("generationConfig") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {}
    props = set((schema.get("properties") or {}).keys()) if isinstance(schema, dict) else set()
    sys_text = text_of_parts((body.get("systemInstruction") or {}).get("parts"))
    all_text = sys_text + "\n" + "\n".join(text_of_parts(c.get("parts")) for c in contents[-3:])
    if "next_speaker" in props:
        return "next_speaker"
    if props & {"model_choice", "complexity_score"} or '"model_choice"' in sys_text:
        return "router"
    if "unproductive_state_confidence" in props:
        return "loop_detection"
    if "state_snapshot" in all_text:
        return "compression"
    if "summar" in all_text.lower() and "conversation" in all_text.lower():
        return "summary"
    return "other"


class Script:
    """Replies for the main conversation, consumed in order."""

    def __init__(self, data: Any):
        if isinstance(data, list):
            data = {"replies": data}
        self.replies: list[dict[str, Any]] = list(data.get("replies", []))
        self.side_text: str = data.get("side_text", "Stand-in session")
        self.compact_text: str = data.get(
            "compact_text",
            "<state_snapshot>\n<overall_goal>stand-in compressed history</overall_goal>\n"
            "</state_snapshot>")
        self.side_json: dict[str, Any] = data.get("side_json", {})  # merged into schema answers
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


def build_parts(reply: dict[str, Any], offered: list[str]) -> list[dict[str, Any]]:
    """Model parts of a scripted reply: thought, text, then function calls."""
    if "parts" in reply:  # raw Gemini parts
        return reply["parts"]
    parts: list[dict[str, Any]] = []
    if reply.get("thought"):
        parts.append({"text": reply["thought"], "thought": True})
    if reply.get("text"):
        parts.append({"text": reply["text"]})
    calls = reply.get("tool_call") or []
    calls = list(calls) if isinstance(calls, list) else [calls]
    shell = reply.get("shell")
    if shell is not None:
        spec = shell if isinstance(shell, dict) else {"command": shell}
        name = next((n for n in SHELL_TOOLS if n in offered), "run_shell_command")
        args = {"command": spec["command"]}
        for k in SHELL_ARG_KEYS:
            if k in spec:
                args[k] = spec[k]
        calls.insert(0, {"name": name, "args": args, "id": spec.get("id")})
    for call in calls:
        args = call.get("args", call.get("arguments", {}))
        if isinstance(args, str):
            args = json.loads(args)
        fc: dict[str, Any] = {"name": call["name"], "args": args}
        if call.get("id"):
            fc["id"] = call["id"]
        part: dict[str, Any] = {"functionCall": fc}
        if call.get("thoughtSignature"):
            part["thoughtSignature"] = call["thoughtSignature"]
        parts.append(part)
    return parts


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin-gemini-api/1"

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
            self.log_file.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self.log_file.flush()

    def send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, status: int, message: str, grpc_status: str | None = None) -> None:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                 503: "UNAVAILABLE"}
        self.send_json(status, {"error": {"code": status, "message": message,
                                          "status": grpc_status or names.get(status, "UNKNOWN")}})

    def do_GET(self) -> None:
        self.guarded(b"")

    def do_DELETE(self) -> None:
        self.guarded(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        self.guarded(raw)

    def guarded(self, raw: bytes) -> None:
        try:
            self.dispatch(raw)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (Esc in Gemini CLI)

    def dispatch(self, raw: bytes) -> None:
        path, _, query = self.path.partition("?")
        path = path.rstrip("/")
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
        headers = {k.lower(): v for k, v in self.headers.items()}
        entry: dict[str, Any] = {"seq": seq, "ts": round(time.time(), 3),
                                 "method": self.command, "path": self.path, "headers": headers}
        m = METHOD_RE.match(path)
        mm = MODEL_RE.match(path)
        if self.command == "POST" and m and isinstance(body, dict):
            model, method = m.group(2), m.group(3)
            entry["model"] = model
            if method in ("streamGenerateContent", "generateContent"):
                self.answer_generate(body, entry, model, stream=method == "streamGenerateContent")
            elif method == "countTokens":
                entry["kind"] = "count_tokens"
                self.write_log(entry)
                req = body.get("generateContentRequest") or body
                self.send_json(200, {"totalTokens": rough_tokens(req.get("contents"))})
            elif method in ("embedContent", "batchEmbedContents"):
                entry["kind"] = "embed"
                self.write_log(entry)
                n = len(body.get("requests") or [body])
                emb = [{"values": [0.0] * 8} for _ in range(n)]
                self.send_json(200, {"embeddings": emb} if method == "batchEmbedContents"
                               else {"embedding": emb[0]})
            else:
                self.unknown(entry, raw)
        elif self.command == "GET" and mm:
            name = mm.group(2)
            entry["kind"] = "model" if name else "models"
            self.write_log(entry)
            if name:
                self.send_json(200, self.model_info(name))
            else:
                self.send_json(200, {"models": []})
        else:
            self.unknown(entry, raw)

    def unknown(self, entry: dict[str, Any], raw: bytes) -> None:
        entry["kind"] = "unknown"
        if raw:
            entry["body"] = raw[:LOGGED_BODY_CHARS].decode("utf-8", "replace")
        self.write_log(entry)
        self.send_error_json(404, f"stand-in: no route {self.command} {self.path}")

    @staticmethod
    def model_info(name: str) -> dict[str, Any]:
        return {"name": f"models/{name}", "baseModelId": name, "version": "001",
                "displayName": name, "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
                "supportedGenerationMethods": ["generateContent", "countTokens"]}

    # ---- :streamGenerateContent / :generateContent -----------------------
    def answer_generate(self, body: dict[str, Any], entry: dict[str, Any], model: str,
                        stream: bool) -> None:
        contents = normalize_contents(body.get("contents"))
        offered = function_names(body.get("tools"))
        has_functions = any((t or {}).get("functionDeclarations") for t in body.get("tools") or []
                            if isinstance(t, dict))
        sys_text = text_of_parts((body.get("systemInstruction") or {}).get("parts"))
        cfg = body.get("generationConfig") or {}
        user_text = last_user_text(contents)
        entry.update({
            "stream": stream, "n_contents": len(contents), "tools": offered,
            "system_head": sys_text[:300], "last_user_text": user_text[-LOGGED_BODY_CHARS:],
            "response_mime_type": cfg.get("responseMimeType"),
        })
        # Gemini CLI's agent loop always offers function declarations; its utility
        # calls (router, next-speaker, loop check, compression, summary) never do.
        if has_functions:
            entry["kind"] = "main"
            idx, reply = self.script.next_reply()
            entry["reply_index"] = idx
            expect = reply.get("expect")
            if expect is not None and expect not in user_text:
                entry["expect_mismatch"] = expect
        else:
            entry["kind"] = "side"
            kind = side_kind(body, contents)
            entry["side_kind"] = kind
            schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
            if schema is not None or cfg.get("responseMimeType") == "application/json":
                obj = sample_from_schema(schema, self.script.side_text) if schema else {}
                if isinstance(obj, dict):
                    obj.update(self.script.side_json.get(kind, {}))
                text = json.dumps(obj)
            elif kind == "compression":
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
            self.send_error_json(int(err.get("status", 500)),
                                 err.get("message", "stand-in scripted error"), err.get("grpc_status"))
            return
        parts = build_parts(reply, offered)
        in_tok = rough_tokens(contents) + rough_tokens(sys_text)
        out_tok = rough_tokens(parts)
        usage = {"promptTokenCount": in_tok, "candidatesTokenCount": out_tok,
                 "totalTokenCount": in_tok + out_tok}
        rid = new_id()
        finish = reply.get("finish_reason", "STOP")
        if not stream:
            self.send_json(200, {"candidates": [{"content": {"role": "model", "parts": parts},
                                                 "finishReason": finish, "index": 0}],
                                 "usageMetadata": usage, "modelVersion": model,
                                 "responseId": rid})
            return
        chunk = max(1, int(reply.get("chunk", 16)))
        delay = float(reply.get("delay_ms", 0)) / 1000.0
        self.stream(parts, usage, model, rid, finish, chunk, delay)

    def stream(self, parts: list[dict[str, Any]], usage: dict[str, Any], model: str, rid: str,
               finish: str, chunk: int, delay: float) -> None:
        # One SSE event per text piece / function call; the last one carries finishReason.
        pieces: list[dict[str, Any]] = []
        for p in parts:
            text = p.get("text")
            if isinstance(text, str) and "functionCall" not in p and text and not p.get("thought"):
                for j in range(0, len(text), chunk):
                    pieces.append({**p, "text": text[j:j + chunk]})
            else:
                pieces.append(p)
        if not pieces:
            pieces.append({"text": ""})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, p in enumerate(pieces):
            if delay and i:
                time.sleep(delay)
            cand: dict[str, Any] = {"content": {"role": "model", "parts": [p]}, "index": 0}
            last = i == len(pieces) - 1
            if last:
                cand["finishReason"] = finish
            ev = {"candidates": [cand],
                  "usageMetadata": usage if last else {"promptTokenCount": usage["promptTokenCount"],
                                                      "totalTokenCount": usage["promptTokenCount"]},
                  "modelVersion": model, "responseId": rid}
            payload = f"data: {json.dumps(ev, ensure_ascii=False)}\r\n\r\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    serve("Gemini API", "docs/research/gemini-cli-0.61.md", Handler, Script)


if __name__ == "__main__":
    main()
