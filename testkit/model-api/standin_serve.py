"""What the stand-in model APIs share: their command line and their server.

    python3 standin_<api>.py --script S.json --log requests.jsonl \
        [--port 0] [--port-file port.txt] [--dump-dir bodies/]

Listens on 127.0.0.1 only; the port file appears (atomically) once it listens.
Python 3.11 stdlib only; imported from the scripts beside it.
"""

from __future__ import annotations

import argparse
import json
import os
from http.server import ThreadingHTTPServer
from typing import Any, Callable


def serve(name: str, script_help: str, handler: Any, make_script: Callable[[Any], Any]) -> None:
    """Parses the shared flags, loads the script into `handler` and serves until interrupted."""
    ap = argparse.ArgumentParser(description=f"Stand-in {name} playing a script.")
    ap.add_argument("--script", required=True, help=f"JSON script file (see {script_help})")
    ap.add_argument("--log", required=True, help="request log, one JSON object per line (appended)")
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1; 0 picks a free one")
    ap.add_argument("--port-file", help="write the bound port to this file once listening")
    ap.add_argument("--dump-dir", help="also save each raw request body as NNNN.json here")
    args = ap.parse_args()

    with open(args.script, encoding="utf-8") as f:
        handler.script = make_script(json.load(f))
    handler.log_file = open(args.log, "a", buffering=1, encoding="utf-8")
    if args.dump_dir:
        os.makedirs(args.dump_dir, exist_ok=True)
        handler.dump_dir = args.dump_dir
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    print(f"stand-in {name} on http://127.0.0.1:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
