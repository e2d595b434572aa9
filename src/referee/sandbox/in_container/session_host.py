"""The supervisor's session mode (stdlib only, Python 3.11): one code session per container.

A request with "mode": "session" makes the supervisor start a kernel (session_kernel.py) as
the session's uid, with the rlimits, environment and oom score of any program, then answer
the host's call lines ({"op": "run", "code", "time_s"}) one by one, until {"op": "end"}. The
session's end is a program's end: the supervisor's main loop scrubs the container and says
`done` and `ready`, or `unclean`.

Each call is timed like a test (kernel_stats.WaitClock: the node's load is given back, up to a
backstop), its stdout and stderr kept up to `output_bytes` each (drained beyond, never
blocking the cell). A cell that runs out of time is killed with everything of the session's
uid, and so is a kernel that died (memory, a signal, `os._exit`, a closed fd 4): the next call
gets a fresh kernel (`restarted`), with the session's files in /work intact. CPU time is
counted over the whole session (the container's counter), not per kernel, so a restart never
refills it. A change to the supervisor's own rlimits, niceness or scheduler ends the session
(`unclean`): the host then discards the container.
"""

import base64
import contextlib
import json
import os
import selectors
import time

KERNEL = ("/usr/bin/python3", "-I", "/opt/referee/session_kernel.py")
KERNEL_START_TIMEOUT_S = 10.0
CHUNK = 65536


class Kernel:
    """The session's kernel process and its four pipes (stdout, stderr, requests, replies)."""

    def __init__(self, sup, req, uid, tools):
        self.sup, self.req, self.uid, self.t = sup, req, uid, tools
        self.pid = None
        self.fds = []
        self.calls = 0

    def start(self, files):
        """Start a kernel and hand it `files`; False when it did not come up."""
        self.close()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        rep_r, rep_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        limits = self.t.child_limits(self.req, self.req["session_cpu_s"], self.req["file_size_mb"])
        self.sup.settled = False
        self.pid = self.sup.spawn(
            KERNEL, self.req["env"], limits, null, out_w, err_w, [ctl_r, rep_w], self.uid
        )
        for fd in (null, out_w, err_w, ctl_r, rep_w):
            os.close(fd)
        self.out_r, self.err_r, self.ctl_w, self.rep_r = out_r, err_r, ctl_w, rep_r
        self.fds = [out_r, err_r, ctl_w, rep_r]
        for fd in self.fds:
            os.set_blocking(fd, False)
        self.replies = bytearray()
        first = {"files": files, "language": self.req.get("language", "python")}
        result = self.exchange(first, 0, KERNEL_START_TIMEOUT_S, None)
        return result["status"] == "ok"

    def close(self):
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []
        self.pid = None

    def alive(self):
        return self.pid is not None

    def exchange(self, request, call, limit_s, caps):
        """Send one request, wait for its reply (call number `call`) while draining stdout and
        stderr; returns the result message's fields (status and the rest)."""
        t = self.t
        data = memoryview((json.dumps(request) + "\n").encode())
        outputs = {self.out_r: bytearray(), self.err_r: bytearray()}
        cap = caps or 0
        truncated = False
        sel = selectors.DefaultSelector()
        for fd in (self.out_r, self.err_r, self.rep_r, self.sup.wake_r):
            sel.register(fd, selectors.EVENT_READ)
        sel.register(self.ctl_w, selectors.EVENT_WRITE)
        started = time.monotonic()
        clock = t.kernel_stats.WaitClock(started, {os.getpid(), self.sup.zygote.pid})
        backstop = started + t.BACKSTOP_FACTOR * limit_s
        deadline = started + limit_s
        reply = None
        died = over = None
        try:
            while reply is None and died is None and over is None:
                now = time.monotonic()
                if now >= clock.next_sample:
                    clock.sample(now)
                if now >= deadline:
                    clock.sample(now)
                    over = t.time_up(clock, now, limit_s, backstop)
                    if over is not None:
                        break
                    deadline = min(now + max(limit_s - clock.own_s(now), t.SAMPLE_INTERVAL_S), backstop)
                wait = max(0.0, min(deadline, clock.next_sample) - now)
                for key, _ in sel.select(min(wait, 0.05)):
                    fd = key.fd
                    if fd == self.ctl_w:
                        try:
                            data = data[os.write(fd, data[:CHUNK]) :]
                        except BlockingIOError:
                            continue
                        except OSError:  # the kernel closed its requests fd: it is lost
                            died = "closed"
                            break
                        if not data:
                            sel.unregister(fd)
                    elif fd == self.sup.wake_r:
                        try:
                            while os.read(fd, 512):
                                pass
                        except BlockingIOError:
                            pass
                        if self.pid in self.sup.reap():
                            died = "exited"
                    elif fd == self.rep_r:
                        if not self.read_replies():
                            died = "closed"
                        reply = self.take_reply(call)
                    elif fd in outputs:
                        truncated |= drain(fd, outputs[fd], cap, sel)
        finally:
            sel.close()
        for fd in outputs:  # what the cell wrote before its reply is in the pipes already
            truncated |= drain(fd, outputs[fd], cap, None)
        elapsed = time.monotonic() - started
        result = {
            "stdout": b64(outputs[self.out_r][:cap] if cap else b""),
            "stderr": b64(outputs[self.err_r][:cap] if cap else b""),
            "duration_s": round(elapsed, 6),
        }
        if reply is not None:
            result.update(
                status=reply.get("status", "error"),
                value=reply.get("value"),
                error=reply.get("error"),
                truncated=truncated or bool(reply.get("truncated")),
            )
        else:
            result.update(status="timeout" if over else "killed", truncated=truncated, lost=died or over)
        return result

    def read_replies(self):
        while True:
            try:
                chunk = os.read(self.rep_r, CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self.replies += chunk
            if len(self.replies) > 1 << 22:  # a cell flooding fd 4: keep only the last line's worth
                del self.replies[: -(1 << 20)]

    def take_reply(self, call):
        """The reply to `call` among the lines read; lines the cell forged on fd 4 are skipped."""
        while b"\n" in self.replies:
            line, _, rest = bytes(self.replies).partition(b"\n")
            self.replies = bytearray(rest)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("call") == call and "status" in msg:
                return msg
        return None


def drain(fd, buf, cap, sel):
    """Read what `fd` holds into `buf` up to `cap` bytes, discarding the rest; True when
    anything was discarded. At end of file the fd leaves the selector."""
    cut = False
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            return cut
        except OSError:
            chunk = b""
        if not chunk:
            if sel is not None and fd in sel.get_map():
                sel.unregister(fd)
            return cut
        room = max(0, cap - len(buf))
        buf += chunk[:room]
        cut |= len(chunk) > room


def b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def serve_session(sup, req, uid, requests, tools):
    """Run one session to its end. False when the container can no longer be trusted (the
    host hung up, or the supervisor's own state changed): the caller then exits."""
    kernel = Kernel(sup, req, uid, tools)
    cpu_start = tools.kernel_stats.container_cpu_s()
    ok = kernel.start(req.get("files") or {})
    tools.send({"type": "session", "ok": ok})
    restart = not ok
    while True:
        msg = requests.next()
        if msg is None:
            kernel.close()
            return False
        if msg.get("op") == "end":
            kernel.close()
            return True
        if msg.get("op") != "run":
            tools.send({"type": "result", "status": "killed", "error": "unknown operation"})
            continue
        result = run_call(sup, req, kernel, msg, restart, cpu_start, tools)
        restart = bool(result.get("restarted"))
        if tools.self_state() != sup.baseline:
            result["unclean"] = True
            tools.send({"type": "result", **result})
            kernel.close()
            return False
        tools.send({"type": "result", **result})


def run_call(sup, req, kernel, msg, restart, cpu_start, tools):
    """One call. `restart`: the kernel was lost by the call before (start a fresh one now)."""
    oom_before = tools.read_oom_kills()
    used = tools.kernel_stats.container_cpu_s()
    if cpu_start is not None and used is not None and used - cpu_start >= req["session_cpu_s"]:
        return {"status": "killed", "error": "the session's CPU time is used up", "restarted": False}
    fresh = restart or not kernel.alive()
    if fresh and not (sup.kill_everything(kernel.uid) and kernel.start({})):
        return {"status": "killed", "error": "the session's kernel could not be restarted", "unclean": True}
    # A fresh random tag per call, so that no reply a cell writes itself on fd 4 is taken for
    # the kernel's (short of the cell digging the tag out of the kernel's own frames, which
    # only ever fools its own session).
    call = os.urandom(8).hex()
    kernel.calls += 1
    request = {"call": call, "cell": kernel.calls, "code": msg["code"], "value_bytes": req["value_bytes"]}
    result = kernel.exchange(request, call, float(msg["time_s"]), req["output_bytes"])
    lost = result.pop("lost", None)
    if lost is None:
        return result
    # The kernel is gone or out of time: everything of the session's uid goes with it.
    sup.kill_everything(kernel.uid)
    kernel.close()
    oom_after = tools.read_oom_kills()
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        result["status"] = "memory_limit_exceeded"
        result["error"] = "the cell ran out of memory: the kernel was killed and its state lost"
    elif result["status"] == "timeout":
        result["error"] = (
            f"the cell ran out of its {msg['time_s']:g} s: the kernel was killed and its state lost"
        )
    else:
        result["error"] = "the kernel died: its state is lost"
    result["restarted"] = True
    return result
