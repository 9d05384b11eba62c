#!/usr/bin/env python3
"""Runs a command as a child subreaper and reports the CPU it and all its descendants used.

    python3 reaper.py OUT.json COMMAND [ARGS...]

Every process the command starts, also one that detaches and outlives its parent (the
command hook forwarder does), is reaped here, so its CPU time is counted. When the command
exits, OUT.json gets {"user_s", "system_s", "exit"}: what the benchmarks compare between hook
transports. On SIGUSR1 it writes OUT.json.snap with the CPU used so far ({"user_s",
"system_s"}: what it reaped, and every live descendant's own and reaped time), so a bench can
count a stretch of the command's life (its prompts, not its start and exit). Python 3.11
stdlib only; Linux (prctl PR_SET_CHILD_SUBREAPER, /proc).
"""

import ctypes
import json
import os
import resource
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def cpu_so_far() -> tuple[float, float]:
    """User and system seconds of every process reaped here and every live descendant."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = usage.ru_utime, usage.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    parent, times = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        # Fields after the command's name: state ppid ... utime stime cutime cstime (13-16).
        rest = text[text.rindex(")") + 2 :].split()
        parent[int(name)] = int(rest[1])
        times[int(name)] = (int(rest[11]) + int(rest[13]), int(rest[12]) + int(rest[14]))
    for pid, (u, s) in times.items():
        up, seen = pid, 0
        while up in parent and up not in (me, 0, 1) and seen < 64:
            up, seen = parent[up], seen + 1
        if up == me and pid != me:
            user += u / tick
            system += s / tick
    return user, system


def main() -> None:
    out, command = sys.argv[1], sys.argv[2:]

    def snapshot(_signum, _frame) -> None:
        user, system = cpu_so_far()
        with open(out + ".snap.tmp", "w") as f:
            json.dump({"user_s": user, "system_s": system}, f)
        os.replace(out + ".snap.tmp", out + ".snap")

    signal.signal(signal.SIGUSR1, snapshot)
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
