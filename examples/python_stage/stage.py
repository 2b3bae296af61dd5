#!/usr/bin/env python3
"""A Crucible pipeline stage written in Python: a second-opinion verifier.

It joins a Crucible head over ZeroMQ as an external actor offering the role `py_verifier` (or any role
named with --role), pulls work with credits, and answers each work item. A work item carries two embedded
envelopes, a `candidate` and its `bench_result`; the answer is one `verdict` envelope:

  * the candidate's source calls something a kernel has no business calling (clocks, threads,
    dlopen) -> outcome "hack", with a flag per finding and reward -1;
  * the benchmarker found it incorrect or could not run it -> outcome "incorrect" (or its status), reward 0;
  * otherwise -> outcome "pass", speedup = the measured speedup over eager, reward = speedup.

Everything it does is in docs/wire_protocol.md; it needs only Debian's python3-zmq and python3-msgpack:

  python3 examples/python_stage/stage.py --endpoint tcp://127.0.0.1:5555 --capacity 2
  python3 examples/python_stage/stage.py --endpoint tcp://head:5555 \\
      --curve-secret stage.key --curve-server head.pub            # a head with CURVE keys

It exits 0 after a graceful drain (the head asks for one, or SIGTERM/SIGINT), 2 on a usage error, and 3 when
the head refuses the registration.
"""

import argparse
import os
import random
import re
import signal
import socket
import sys
import time

import msgpack
import zmq

SCHEMA_VERSION = 1  # the envelope's "v"
PROTOCOL_VERSION = 1  # ready.protocol: the cluster protocol's rules

SUSPICIOUS = {
    "clock_gettime": "reads_clock",
    "gettimeofday": "reads_clock",
    "std::chrono": "reads_clock",
    "std::thread": "spawns_threads",
    "pthread_create": "spawns_threads",
    "dlopen": "loads_libraries",
    "dlsym": "loads_libraries",
}


def log(*args):
    print("[py_stage]", *args, file=sys.stderr, flush=True)


# ---- envelopes --------------------------------------------------------------------------------------------


def pack(kind, body, sender):
    """One frame: the versioned envelope around a message body (a dict of the message's fields)."""
    return msgpack.packb({"v": SCHEMA_VERSION, "kind": kind, "from": sender, "body": body}, use_bin_type=True)


def unpack(frame):
    """(kind, body) of a frame, or raises ValueError saying what is wrong with it."""
    try:
        env = msgpack.unpackb(frame, raw=False)
    except Exception as e:  # msgpack raises several types for bad bytes
        raise ValueError("undecodable frame: %s" % e)
    if not isinstance(env, dict):
        raise ValueError("frame is not an envelope (not a map)")
    if env.get("v") != SCHEMA_VERSION:
        raise ValueError("schema version %r is not supported (this stage speaks %d)" % (env.get("v"), SCHEMA_VERSION))
    if not isinstance(env.get("kind"), str) or not isinstance(env.get("body"), dict):
        raise ValueError("envelope without a kind or a body")
    return env["kind"], env["body"]


# ---- the stage's work -------------------------------------------------------------------------------------


def judge(candidate, bench):
    """The verdict body for a candidate and the benchmarker's bench_result body."""
    source = candidate.get("source", "")
    flags = sorted({"suspicious_source:%s" % why for token, why in SUSPICIOUS.items() if token in source})
    evidence = ["source mentions %s" % token for token in SUSPICIOUS if token in source]
    verdict = {
        "candidate_id": candidate.get("id", ""),
        "content_hash": candidate.get("content_hash", ""),
        "outcome": "pass",
        "flags": flags,
        "evidence": evidence,
        "speedup": 0.0,
        "reward": 0.0,
    }
    status = bench.get("status", "ok")
    evidence.append("py_verifier: %d bytes of source read" % len(source))
    if flags:
        verdict["outcome"] = "hack"
        verdict["reward"] = -1.0
    elif status != "ok":
        verdict["outcome"] = status if status in ("crash", "timeout") else "error"
        verdict["evidence"].append(bench.get("error", ""))
    elif not bench.get("correct", False):
        verdict["outcome"] = "incorrect"
        verdict["evidence"].append("max_abs_err %g" % bench.get("max_abs_err", 0.0))
    else:
        verdict["speedup"] = float(bench.get("speedup_vs_eager", 0.0))
        verdict["reward"] = verdict["speedup"]
    return verdict


def run_work(item, sender):
    """The work_result body for one work body."""
    started = time.monotonic()
    result = {"request_id": item.get("request_id", 0), "status": "ok", "payload": [], "error": "", "wall_s": 0.0}
    try:
        inputs = {}
        for embedded in item.get("payload", []):
            kind, body = unpack(embedded)
            inputs[kind] = body
        if "candidate" not in inputs or "bench_result" not in inputs:
            raise ValueError("expected a candidate and a bench_result, got %s" % sorted(inputs))
        verdict = judge(inputs["candidate"], inputs["bench_result"])
        result["payload"] = [pack("verdict", verdict, sender)]
    except Exception as e:  # a bad item costs one error result, never the stage
        result["status"] = "error"
        result["error"] = str(e)
    result["wall_s"] = time.monotonic() - started
    return result


# ---- the protocol -----------------------------------------------------------------------------------------


def read_key(path, name):
    """The Z85 key on the `name = "..."` line of a Crucible (or CZMQ) key file."""
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*%s\s*=\s*"?([^"\s]{40})"?' % re.escape(name), line)
            if m:
                return m.group(1)
    raise SystemExit("key file %s has no %s line" % (path, name))


class Stage:
    def __init__(self, args):
        self.args = args
        self.peer_id = args.peer_id or "%s:%d:py" % (socket.gethostname(), os.getpid())
        self.ctx = zmq.Context()
        self.sock = None
        self.registered = False
        self.heartbeat_s = 1.0
        self.liveness = 3
        self.attempt = 0
        self.stopping = None  # a reason once a drain was asked for
        self.items = 0

    def send(self, kind, body):
        self.sock.send(pack(kind, body, self.peer_id))

    def connect(self):
        if self.sock is not None:
            self.sock.close(linger=0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        if self.args.curve_secret:
            self.sock.curve_secretkey = read_key(self.args.curve_secret, "secret-key").encode()
            self.sock.curve_publickey = read_key(self.args.curve_secret, "public-key").encode()
            self.sock.curve_serverkey = read_key(self.args.curve_server, "public-key").encode()
        self.sock.connect(self.args.endpoint)
        self.registered = False
        self.send("ready", {
            "peer_id": self.peer_id,
            "node_id": socket.gethostname(),
            "roles": [{"role": self.args.role, "capacity": self.args.capacity, "device": -1}],
            "devices": [],
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "protocol": PROTOCOL_VERSION,
            "labels": {"language": "python", "example": "python_stage"},
        })
        self.register_deadline = time.monotonic() + self.heartbeat_s * self.liveness

    def backoff(self, why):
        """Drop the connection; try again after an exponentially growing, bounded, jittered delay."""
        self.attempt += 1
        delay = min(5.0, 0.1 * 2 ** (self.attempt - 1)) * random.uniform(0.8, 1.2)
        log("%s; reconnecting in %.2f s" % (why, delay))
        time.sleep(delay)
        self.connect()

    def leave(self, reason):
        """Graceful end: this stage answers each item before taking the next, so nothing is in hand."""
        if self.registered:
            self.send("disconnect", {"reason": reason, "drain": True})
            self.send("disconnect", {"reason": reason, "drain": False})
        self.sock.close(linger=500)
        self.ctx.term()
        log("left: %s (%d items answered)" % (reason, self.items))

    def run(self):
        self.connect()
        last_heard = time.monotonic()
        next_beat = time.monotonic() + self.heartbeat_s
        beat = 0
        while True:
            if self.stopping:
                self.leave(self.stopping)
                return 0
            now = time.monotonic()
            if self.registered:
                if now - last_heard > self.heartbeat_s * self.liveness:
                    self.backoff("head silent for %d heartbeats" % self.liveness)
                    continue
                if now >= next_beat:
                    beat += 1
                    self.send("heartbeat", {"seq": beat, "sent_unix": time.time()})
                    next_beat = now + self.heartbeat_s
            elif now >= self.register_deadline:
                self.backoff("no answer to ready")
                continue
            deadline = next_beat if self.registered else self.register_deadline
            if self.sock.poll(max(1, int((deadline - time.monotonic()) * 1000)), zmq.POLLIN) == 0:
                continue
            frame = self.sock.recv()
            last_heard = time.monotonic()
            try:
                kind, body = unpack(frame)
            except ValueError as e:
                code = "version" if "schema version" in str(e) else "malformed"
                self.send("error", {"code": code, "message": str(e), "request_id": 0})
                continue
            if kind == "registered":
                if not body.get("accepted"):
                    log("refused: %s" % body.get("reason"))
                    self.sock.close(linger=0)
                    return 3
                self.registered = True
                self.attempt = 0
                self.heartbeat_s = body.get("heartbeat_ms", 1000) / 1000.0
                self.liveness = body.get("liveness", 3)
                next_beat = time.monotonic() + self.heartbeat_s
                log("registered as %s with %s" % (self.peer_id, body.get("head_id")))
                self.send("credit", {"role": self.args.role, "count": self.args.capacity})
            elif kind == "work" and self.registered:
                result = run_work(body, self.peer_id)
                self.send("work_result", result)
                self.items += 1
                if self.args.max_items and self.items >= self.args.max_items:
                    self.stopping = "answered %d items" % self.items
                else:
                    self.send("credit", {"role": self.args.role, "count": 1})
            elif kind == "disconnect":
                if body.get("drain"):
                    self.stopping = "head asked: %s" % body.get("reason", "")
                else:
                    self.backoff("head said: %s" % body.get("reason", ""))
            elif kind == "error":
                log("head says %s: %s" % (body.get("code"), body.get("message")))
                if body.get("code") == "not_registered":
                    self.connect()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", required=True, help="the head's ROUTER endpoint, e.g. tcp://127.0.0.1:5555")
    p.add_argument("--role", default="py_verifier")
    p.add_argument("--capacity", type=int, default=1, help="work items asked for at once")
    p.add_argument("--peer-id", default="")
    p.add_argument("--curve-secret", help="this stage's key file (public-key and secret-key lines)")
    p.add_argument("--curve-server", help="the head's public key file")
    p.add_argument("--max-items", type=int, default=0, help="leave after this many items (0: never)")
    args = p.parse_args()
    if bool(args.curve_secret) != bool(args.curve_server):
        p.error("--curve-secret and --curve-server go together")
    stage = Stage(args)

    def on_signal(signum, frame):
        stage.stopping = "signal %d" % signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stage.run()


if __name__ == "__main__":
    sys.exit(main())
