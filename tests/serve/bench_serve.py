"""bench_serve.py - what the transports cost: a benchmark, not a test
(pytest does not collect it).  `make bench-serve` runs it; the figures in
docs/server.md come from it.

For each model, greedy, on loopback:
  latency    time to first token (TTFT) and the gap between tokens, median
             and p99, per turn, for
               in-process   the driver API (build/tests/serve_ref)
               HTTP+SSE     one POST per turn, a new TCP connection each
               HTTP+SSE ka  one POST per turn on a kept-alive connection
               WebSocket    one persistent session, one message per turn
             Every turn does the same device work: an empty sequence, the
             prompt appended, TOKENS generated.  The overhead of a
             transport is its figure minus the in-process one.
  dialogue   TURNS turns that each add a line and generate: a WebSocket
             session appends only the new line (its KV cache stays);
             stateless HTTP sends the whole dialogue again each turn.
  interrupt  a WebSocket interrupt after 5 tokens: send to done, and the
             server's count of tokens made after it arrived; alone, then
             inside a batch (3 and 7 other sessions generating greedy
             tokens all the while, so its decode calls are shared).
  throughput aggregate tokens/s with 1, 4 and 8 clients streaming at once
             (the only part run on the 110M shape).

usage: bench_serve.py [--turns N] [--tokens N] [--threads N]
                      [--models 260k,15m,15mq8,110m] [--throughput-only | --interrupt-only]
"""
import argparse
import http.client
import json
import multiprocessing
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

import tsr_serve

PROMPT = "Once upon a time"
LINE = " The dog said"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def summary(ttfts, gaps):
    """ttfts: one a turn; gaps: a list of token gaps a turn.  The gap of a
    turn is its mean (tokens reach the host in bursts when a thread wakes
    late, so single gaps are 0 or a burst's length; a turn's mean is not)."""
    per_turn = [sum(g) / len(g) for g in gaps if g]
    return {"ttft_med": statistics.median(ttfts), "ttft_p99": pct(ttfts, 99),
            "gap_med": statistics.median(per_turn), "gap_p99": pct(per_turn, 99)}


# ------------------------------------------------------------- in process ---

class InProcess:
    """build/tests/serve_ref kept running, fed one step at a time, so that
    its turns interleave with the server's (the machine's drift then falls
    on every transport alike)."""

    def __init__(self, model, tok, threads):
        self.p = subprocess.Popen([str(tsr_serve.REF), str(model), str(tok), "--threads",
                                   str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def step(self, s):
        self.p.stdin.write((s + "\n").encode())
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def turn(self, text, tokens, fresh=True):
        """(ttft ms, gaps ms): append text (to an empty sequence when fresh),
        generate; timed from the append."""
        if fresh:
            self.step("r")
        turn = self.step("t:%d:%s" % (tokens, text))
        t = turn["times"]
        return t[0] - turn["t0"], [t[k] - t[k - 1] for k in range(1, len(t))]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


# ------------------------------------------------------------------ HTTP ---

def sse_turn(conn, prompt, tokens):
    """One streamed completion on conn: (ttft ms, gaps ms, text)."""
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True})
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, r.status
    times, text = [], ""
    for line in r:
        if line.startswith(b"data: {"):
            chunk = json.loads(line[6:])
            if chunk["choices"] and chunk["choices"][0]["finish_reason"] is None:
                times.append(time.perf_counter())
                text += chunk["choices"][0]["text"]
    return (1e3 * (times[0] - t0), [1e3 * (times[k] - times[k - 1]) for k in range(1, len(times))],
            text)


def http_turn(srv, conn, tokens):
    """One fresh-prompt turn: on conn (kept alive), or a new connection."""
    c = conn or http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    ttft, gaps, _ = sse_turn(c, PROMPT, tokens)
    if not conn:
        c.close()
    return ttft, gaps


def http_dialogue(srv, turns, tokens):
    """Stateless: every request carries the whole dialogue."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    text, ttfts = PROMPT, []
    for i in range(turns):
        ttft, _, reply = sse_turn(conn, text, tokens)
        ttfts.append(ttft)
        text += reply + LINE
    conn.close()
    return ttfts


# ------------------------------------------------------------- WebSocket ---

class RawWS:
    """A WebSocket client on one blocking socket, the websockets package's
    protocol (sans I/O) doing the framing: no reader thread between the
    socket and the clock, as http.client has none."""

    def __init__(self, srv):
        self.sock = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.proto = ClientProtocol(parse_uri(srv.ws_url))
        self.proto.send_request(self.proto.connect())
        self.flush()
        self.pending = []
        while self.proto.state == State.CONNECTING:
            self.proto.receive_data(self.sock.recv(65536))
        self.pending += [e for e in self.proto.events_received() if isinstance(e, Frame)]

    def flush(self):
        for data in self.proto.data_to_send():
            if data:
                self.sock.sendall(data)

    def send(self, text):
        self.proto.send_text(text.encode())
        self.flush()

    def recv(self):
        """The next text message (pings, answered by the protocol, skipped)."""
        while True:
            while not self.pending:
                data = self.sock.recv(65536)
                if not data:
                    raise EOFError("the server closed")
                self.proto.receive_data(data)
                self.pending += [e for e in self.proto.events_received() if isinstance(e, Frame)]
                self.flush()                             # pongs
            f = self.pending.pop(0)
            if f.opcode == Opcode.TEXT:
                return f.data.decode()

    def close(self):
        self.sock.close()


def ws_turn(ws, msg):
    t0 = time.perf_counter()
    if msg["type"] in ("generate", "steer"):   # greedy, as before the server's 0.8 default
        msg = {"temperature": 0, **msg}
    ws.send(json.dumps(msg))
    times = []
    while True:
        m = json.loads(ws.recv())
        if m["type"] == "token":
            times.append(time.perf_counter())
        elif m["type"] == "done":
            break
    if not times:
        return None, []
    return 1e3 * (times[0] - t0), [1e3 * (times[k] - times[k - 1]) for k in range(1, len(times))]


def ws_dialogue(srv, turns, tokens):
    ttfts = []
    ws = RawWS(srv)
    for i in range(turns):
        ttft, _ = ws_turn(ws, {"type": "generate", "text": PROMPT if i == 0 else LINE,
                               "max_tokens": tokens})
        ttfts.append(ttft)
    ws.close()
    return ttfts


class Busy:
    """n WebSocket sessions that generate greedy tokens until stopped (a
    new turn as each ends), so that every decode call has them; in a
    process of their own, so that their reading does not hold up the
    measuring client (Python's GIL)."""

    def __init__(self, srv, n, ctx_tokens):
        self.stop_ev = multiprocessing.Event()
        self.proc = multiprocessing.Process(target=Busy.run,
                                            args=(srv.port, srv.ws_url, n, ctx_tokens,
                                                  self.stop_ev))
        self.proc.start()
        srv.wait_for(lambda h: h["slots_busy"] >= n, what="busy sessions")
        time.sleep(0.2)

    @staticmethod
    def run(port, ws_url, n, ctx_tokens, stop_ev):
        srv = type("Srv", (), {"port": port, "ws_url": ws_url})()

        def one(i):
            ws = RawWS(srv)
            while not stop_ev.is_set():
                ws_turn(ws, {"type": "reset"})
                ws_turn(ws, {"type": "generate", "text": PROMPT,
                             "max_tokens": ctx_tokens - 16 - i})
            ws.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def stop(self):
        self.stop_ev.set()
        self.proc.join(timeout=300)


def interrupt_latency(srv, runs, ctx_tokens, busy=0):
    """runs turns that a WebSocket interrupt stops after 5 tokens: from the
    client's send to its done (ms), the tokens it received in between (made
    before the interrupt reached the server, when the model outruns the
    client), and the server's own figures (done's stats): tokens made
    after the interrupt arrived, and arrival to the turn's end (ms).  With
    busy, that many other sessions generate all the while (Busy)."""
    others = Busy(srv, busy, ctx_tokens) if busy else None
    m0 = srv.metrics()
    ws = RawWS(srv)
    to_done, received, after, stop_ms = [], [], [], []
    for _ in range(runs):
        ws_turn(ws, {"type": "reset"})
        ws.send(json.dumps({"type": "generate", "text": PROMPT, "max_tokens": ctx_tokens - 16,
                            "temperature": 0}))
        n, sent, t0 = 0, None, 0.0
        while True:
            m = json.loads(ws.recv())
            if m["type"] == "token" and "id" in m:
                n += 1
                if sent is not None:
                    sent += 1
                elif n == 5:
                    t0 = time.perf_counter()
                    ws.send(json.dumps({"type": "interrupt"}))
                    sent = 0
            elif m["type"] == "done":
                to_done.append(1e3 * (time.perf_counter() - t0))
                received.append(sent or 0)
                after.append(m["stats"].get("tokens_after_stop", 0))
                stop_ms.append(m["stats"].get("stop_ms", 0.0))
                break
    ws.close()
    m = srv.metrics()
    if others:
        others.stop()
    srv.wait_for(lambda h: h["slots_busy"] == 0, what="the sessions' slots back")
    passes = m["tessera_decode_pass_batch_size_count"] - m0["tessera_decode_pass_batch_size_count"]
    seqs = m["tessera_decode_pass_batch_size_sum"] - m0["tessera_decode_pass_batch_size_sum"]
    print("\nInterrupt after 5 tokens, %d turns, %d other sessions generating (%.2f sequences a "
          "pass): send to done %.2f ms median, %.2f ms p99; tokens received after the send %d "
          "median, %d p99; on the server, tokens made after the interrupt arrived at most %d, "
          "arrival to the turn's end %.3f ms median, %.3f ms p99" % (
              runs, busy, seqs / max(passes, 1), statistics.median(to_done), pct(to_done, 99),
              statistics.median(received), pct(received, 99), max(after),
              statistics.median(stop_ms), pct(stop_ms, 99)))


# ------------------------------------------------------------ throughput ---

def throughput(srv, clients, requests, tokens):
    done = [0] * clients
    start = threading.Barrier(clients + 1)

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=300)
        start.wait(timeout=60)
        for _ in range(requests):
            _, g, _ = sse_turn(conn, PROMPT, tokens)
            done[i] += len(g) + 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait(timeout=60)
    t0 = time.perf_counter()
    for t in threads:
        t.join(timeout=600)
    return sum(done) / (time.perf_counter() - t0)


# ------------------------------------------------------------------ main ---

def latency(srv, model, tok, a):
    """Every transport one turn at a time, in turn; the first round warms up."""
    ref = InProcess(model, tok, a.threads)
    ka = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    ws = RawWS(srv)
    runs = {
        "in-process API": lambda: ref.turn(PROMPT, a.tokens),
        "HTTP+SSE, new connection": lambda: http_turn(srv, None, a.tokens),
        "HTTP+SSE, kept alive": lambda: http_turn(srv, ka, a.tokens),
        # the same empty sequence as the others: reset, then the prompt
        "WebSocket session": lambda: (ws_turn(ws, {"type": "reset"}),
                                      ws_turn(ws, {"type": "generate", "text": PROMPT,
                                                   "max_tokens": a.tokens}))[1],
    }
    got = {k: ([], []) for k in runs}
    order = list(runs)
    for i in range(a.turns + 1):
        random.Random(i).shuffle(order)
        for k in order:
            ttft, gaps = runs[k]()
            if i:
                got[k][0].append(ttft)
                got[k][1].append(gaps)
    ws.close()
    ka.close()
    ref.close()
    return [(k, summary(*got[k])) for k in runs]


def bench_model(name, model, tok, ctx_tokens, a, throughput_only=False):
    print("\n### %s (%d tokens a turn, %d turns, --threads %d, --quantum %d)\n" % (
        name, a.tokens, a.turns, a.threads, a.quantum))
    srv = tsr_serve.Server(["-m", str(model), "-z", str(tok), "--slots", "8", "--queue", "16",
                            "--threads", str(a.threads), "--max-tokens", str(ctx_tokens),
                            "--ctx", str(ctx_tokens), "--quantum", str(a.quantum)])
    try:
        throughput_only = throughput_only or a.throughput_only
        if not throughput_only and not a.interrupt_only:
            latency_and_dialogue(srv, model, tok, ctx_tokens, a)
        if not throughput_only:
            for busy in (0, 3, 7):
                interrupt_latency(srv, a.turns, ctx_tokens, busy)
        if a.interrupt_only:
            return
        m0 = srv.metrics()
        tput = [(c, throughput(srv, c, a.requests, 64)) for c in (1, 4, 8)]
        print("\nAggregate tokens/s (HTTP+SSE, greedy, 64 tokens a request, %d requests a "
              "client, 8 slots): %s; %s" % (
                  a.requests, ", ".join("%d clients %.0f" % ct for ct in tput),
                  ", ".join("%d clients %.2fx" % (c, t / tput[0][1]) for c, t in tput[1:])))
        m = srv.metrics()
        calls = m["tessera_decode_batch_size_count"] - m0["tessera_decode_batch_size_count"]
        seqs = m["tessera_decode_batch_size_sum"] - m0["tessera_decode_batch_size_sum"]
        passes = (m["tessera_decode_pass_batch_size_count"] -
                  m0["tessera_decode_pass_batch_size_count"])
        toks = m["tessera_decode_pass_batch_size_sum"] - m0["tessera_decode_pass_batch_size_sum"]
        print("Decode calls of the three runs: %d, %.2f sequences a call, %.2f a pass on "
              "average" % (calls, seqs / max(calls, 1), toks / max(passes, 1)))
    finally:
        assert srv.stop() == 0


def latency_and_dialogue(srv, model, tok, ctx_tokens, a):
    """The transports' TTFT and token gaps, then a dialogue's TTFT."""
    rows = latency(srv, model, tok, a)
    base = rows[0][1]
    print("| transport | TTFT median | TTFT p99 | time a token, median | time a token, p99 |"
          " TTFT overhead | per-token overhead |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows:
        print("| %s | %.3f ms | %.3f ms | %.1f us | %.1f us | %+.3f ms | %+.1f us |" % (
            label, r["ttft_med"], r["ttft_p99"], 1e3 * r["gap_med"], 1e3 * r["gap_p99"],
            r["ttft_med"] - base["ttft_med"], 1e3 * (r["gap_med"] - base["gap_med"])))
    new, ka, ws = rows[1][1], rows[2][1], rows[3][1]
    print()
    for label, h in (("new connection", new), ("kept alive", ka)):
        rt_h, rt_w = h["ttft_med"] - base["ttft_med"], ws["ttft_med"] - base["ttft_med"]
        tok_h, tok_w = h["gap_med"] - base["gap_med"], ws["gap_med"] - base["gap_med"]
        print("WebSocket against HTTP (%s): round-trip overhead %s, TTFT %s, per-token "
              "overhead %s  " % (label, change(rt_w, rt_h), change(ws["ttft_med"], h["ttft_med"]),
                                 change(tok_w, tok_h)))
    n = min(a.turns, (ctx_tokens - 8) // (a.tokens + 6))   # what the context holds
    ref = InProcess(model, tok, a.threads)
    d_in = [ref.turn(PROMPT if i == 0 else LINE, a.tokens, fresh=i == 0)[0] for i in range(n)]
    ref.close()
    d_ws = ws_dialogue(srv, n, a.tokens)
    d_http = http_dialogue(srv, n, a.tokens)
    print("\nDialogue of %d turns, TTFT of the last turn / median over turns: in-process "
          "%.2f / %.2f ms, WebSocket %.2f / %.2f ms, stateless HTTP %.2f / %.2f ms" % (
              n, d_in[-1], statistics.median(d_in), d_ws[-1], statistics.median(d_ws),
              d_http[-1], statistics.median(d_http)))


def change(new, old):
    """'-42%' for a reduction from old to new."""
    return "%+.0f%%" % (100.0 * (new - old) / old) if old > 0 else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quantum", type=int, default=4)
    ap.add_argument("--models", default="260k,15m,110m",
                    help="of 260k, 15m, 15mq8 (Q8_0), 110m (Q8_0; its throughput only)")
    ap.add_argument("--throughput-only", action="store_true",
                    help="only the aggregate tokens/s with 1, 4 and 8 clients")
    ap.add_argument("--interrupt-only", action="store_true",
                    help="only the interrupt latency (alone and inside a batch)")
    a = ap.parse_args()
    print("tessera serve benchmark, %s" % time.strftime("%Y-%m-%d"))
    if "260k" in a.models.split(","):
        bench_model("stories260K", tsr_serve.M260K, tsr_serve.TOK512, 512, a)
    models = a.models.split(",")
    if "15m" in models:
        bench_model("stories15M shape (tessera synth)", tsr_serve.s15m_model(), tsr_serve.TOK32K,
                    256, a)
    if "15mq8" in models:
        bench_model("stories15M shape, Q8_0 (tessera synth --q8)", tsr_serve.s15m_q8_model(),
                    tsr_serve.TOK32K, 256, a)
    if "110m" in models:
        # a context of 128: 8 slots' fp32 KV caches fit the generic PEs
        bench_model("stories110M shape, Q8_0 (tessera synth --q8), context 128",
                    tsr_serve.s110m_q8_model(), tsr_serve.TOK32K, 128, a, throughput_only=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
