"""soak_serve.py - memory under a long load: a benchmark, not a test
(pytest does not collect it).  `make soak-serve` runs it; the figures in
docs/server.md come from it.

One `tessera serve --slots 8 --queue 32` on stories260K, and CLIENTS
clients for MINUTES minutes, each a loop of requests with nothing between
them: seven in eight stream completions over HTTP+SSE (a new connection
each), one in eight hold a WebSocket session for 20 turns, then close it
and open another (a session holds a slot for its life, so sessions that
never ended would starve the HTTP clients of slots); a turn that finds
the context full resets the sequence.  Prompts and lengths vary
per request, so the server sees every size of body, prompt and answer.
The server's RSS (VmRSS of /proc/PID/status) is sampled every SAMPLE
seconds and printed as a table; the last line compares the RSS after the
run with the RSS after the first minute (the issue's bound: within 20%).

usage: soak_serve.py [--minutes M] [--clients N] [--sample S] [--model FILE]
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time

from websockets.sync.client import connect

import tsr_serve

WORDS = ("Once upon a time there was a little dog who liked to play in the park "
         "with a red ball and the sun was warm").split()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def prompt(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 40)))


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.tokens = self.errors = 0

    def add(self, requests=0, tokens=0, errors=0):
        with self.lock:
            self.requests += requests
            self.tokens += tokens
            self.errors += errors


def http_client(srv, until, seed, counts):
    rng = random.Random(seed)
    while time.monotonic() < until:
        body = json.dumps({"prompt": prompt(rng), "max_tokens": rng.randrange(1, 200),
                           "temperature": rng.choice([0, 0.8]), "stream": True,
                           "stream_options": {"include_usage": True}})
        try:
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
            c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            n, ok = 0, r.status == 200
            for line in r:
                if line.startswith(b"data: {"):
                    ev = json.loads(line[6:])
                    if ev.get("usage"):
                        n = ev["usage"]["completion_tokens"]
            c.close()
            counts.add(requests=1, tokens=n, errors=0 if ok else 1)
        except (OSError, http.client.HTTPException, ValueError):
            counts.add(errors=1)


def ws_client(srv, until, seed, counts):
    rng = random.Random(seed)
    while time.monotonic() < until:
        try:
            with connect(srv.ws_url, open_timeout=30, max_size=None) as ws:
                for _ in range(20):
                    if time.monotonic() >= until:
                        break
                    ws.send(json.dumps({"type": "generate", "text": " " + prompt(rng),
                                        "max_tokens": rng.randrange(1, 100),
                                        "temperature": 0}))
                    while True:
                        m = json.loads(ws.recv(timeout=120))
                        if m["type"] in ("done", "error"):
                            break
                    if m["type"] == "error":      # the context is full
                        ws.send(json.dumps({"type": "reset"}))
                        json.loads(ws.recv(timeout=120))
                        counts.add(requests=1)
                        continue
                    counts.add(requests=1, tokens=m["stats"]["completion_tokens"])
        except Exception:   # a closed or refused session: count it, open another
            counts.add(errors=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    ap.add_argument("--model", default=str(tsr_serve.M260K))
    ap.add_argument("--server-args", default="", help="more tessera serve options")
    a = ap.parse_args()
    srv = tsr_serve.Server(["-m", a.model, "-z", str(tsr_serve.TOK512), "--slots", "8",
                            "--queue", "32", *a.server_args.split()])
    pid = srv.proc.pid
    before = rss_kb(pid)
    counts = Counts()
    t0 = time.monotonic()
    until = t0 + 60 * a.minutes
    threads = []
    for i in range(a.clients):
        fn = ws_client if i % 8 == 7 else http_client
        threads.append(threading.Thread(target=fn, args=(srv, until, 1000 + i, counts), daemon=True))
    for t in threads:
        t.start()
    print("tessera serve --slots 8 --queue 32, %s; %d clients (%d HTTP+SSE, %d WebSocket), "
          "%.1f minutes" % (a.model.rsplit("/", 1)[-1], a.clients, a.clients - a.clients // 8,
                            a.clients // 8, a.minutes))
    print("%8s %10s %10s %10s %8s" % ("time s", "RSS MB", "requests", "tokens", "errors"))
    print("%8.0f %10.1f %10d %10d %8d" % (0, before / 1024, 0, 0, 0))
    samples = []
    while time.monotonic() < until:
        time.sleep(min(a.sample, max(0.0, until - time.monotonic())))
        t, r = time.monotonic() - t0, rss_kb(pid)
        samples.append((t, r))
        print("%8.0f %10.1f %10d %10d %8d" % (t, r / 1024, counts.requests, counts.tokens,
                                                counts.errors), flush=True)
    for t in threads:
        t.join(timeout=180)
    time.sleep(2)
    after = rss_kb(pid)
    print("%8s %10.1f   (after the clients stopped)" % ("end", after / 1024))
    first_min = [r for t, r in samples if t >= 59.0]
    base = first_min[0] if first_min else samples[-1][1]
    print("RSS after the first minute %.1f MB, after the run %.1f MB: %+.1f %%; peak %.1f MB; "
          "%.0f tokens/s" % (base / 1024, after / 1024, 100.0 * (after - base) / base,
                             max(r for _, r in samples) / 1024,
                             counts.tokens / (60 * a.minutes)))
    status = srv.stop()
    if status != 0:
        print("tessera serve exited %s: %s" % (status, srv.stderr()[-2000:]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
