#!/usr/bin/env python3
"""Runs a command as a child subreaper and reports the CPU it and all its descendants used.

    python3 reaper.py OUT.json COMMAND [ARGS...]

Every process the command starts, also one that detaches and outlives its parent (the
command hook forwarder does), is reaped here, so its CPU time is counted. When the command
exits, OUT.json gets {"user_s", "system_s", "exit"}: what the benchmarks compare between hook
transports. Python 3.11 stdlib only; Linux (prctl PR_SET_CHILD_SUBREAPER).
"""

import ctypes
import json
import os
import resource
import sys

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    out, command = sys.argv[1], sys.argv[2:]
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    main_pid = os.fork()
    if main_pid == 0:
        os.execvp(command[0], command)
    code = None
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == main_pid:
            code = os.waitstatus_to_exitcode(status)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"user_s": usage.ru_utime, "system_s": usage.ru_stime, "exit": code}, f)


if __name__ == "__main__":
    main()
