"""Clients sharing the device's slots: 8 clients on 4 slots all get their
solo tokens, the one beyond the queue gets 503, and a client killed
mid-stream gives its slot back at once."""
import contextlib
import http.client
import json
import time
import subprocess
import threading

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import tsr_serve

PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben", "One day, a bird",
           "The sun was", "Tom had a red ball", "In the park", "A big fish"]


@pytest.fixture(scope="module")
def four_slots():
    """stories260K with 4 slots and 4 waiting places."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512),
                            "--slots", "4", "--queue", "4", "--max-tokens", "512"])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def stream_completion(srv, prompt, max_tokens, timeout=120):
    """POST a streamed greedy completion: (status, text, usage)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        out = (r.status, dict(r.getheaders()), r.read().decode())
        conn.close()
        return out
    text, usage = "", None
    for line in r:                            # one SSE line at a time
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk["choices"]:
            text += chunk["choices"][0]["text"]
        if chunk.get("usage"):
            usage = chunk["usage"]
    conn.close()
    return 200, text, usage


def solo_text(prompt, usage):
    """tessera run's text for the same prompt and count (the prompt cut off)."""
    steps = usage["completion_tokens"] + usage["prompt_tokens"] - 1
    out = tsr_serve.run_text(prompt, steps)
    assert out.startswith(prompt) and out.endswith("\n")
    return out[len(prompt):-1]


def run_in_threads(fn, args_list):
    results = [None] * len(args_list)
    start = threading.Barrier(len(args_list))

    def work(i, args):
        start.wait(timeout=30)
        results[i] = fn(*args)

    threads = [threading.Thread(target=work, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    return results


def test_eight_clients_on_four_slots_get_their_solo_tokens(four_slots):
    before = four_slots.metrics()
    seen, running = [], [True]

    def watch():                              # how busy the device got
        until = time.monotonic() + 120
        while running[0] and time.monotonic() < until:
            seen.append(four_slots.health()[1])
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    results = run_in_threads(lambda p: stream_completion(four_slots, p, 120),
                             [(p,) for p in PROMPTS])
    running[0] = False
    watcher.join(timeout=30)
    assert max(h["slots_busy"] for h in seen) == 4
    for prompt, (status, text, usage) in zip(PROMPTS, results):
        assert status == 200
        assert text == solo_text(prompt, usage), prompt
    after = four_slots.metrics()
    key = 'tessera_requests_total{endpoint="completions",code="200"}'
    assert after[key] - before.get(key, 0) == 8
    assert after["tessera_slots_busy"] == 0 and after["tessera_queue_length"] == 0
    # continuous batching: the generating sequences shared decode calls
    # (one pass over the weights a token for all of them)
    def delta(k):
        return after.get(k, 0) - before.get(k, 0)
    calls = delta("tessera_decode_batch_size_count")
    shared = calls - delta('tessera_decode_batch_size_bucket{le="1"}')
    assert shared > 0 and delta("tessera_decode_batch_size_sum") > calls, (calls, shared)
    assert delta('tessera_decode_batch_size_bucket{le="4"}') == calls   # at most the 4 slots


def test_beyond_the_queue_gets_503(four_slots):
    # four WebSocket sessions hold the four slots for as long as they are open
    with contextlib.ExitStack() as sessions:
        for _ in range(4):
            sessions.enter_context(connect(four_slots.ws_url, open_timeout=10))
        four_slots.wait_for(lambda h: h["slots_busy"] == 4, what="4 busy slots")
        # four requests wait for a slot ...
        waiting = []
        results = [None] * 4

        def wait_one(i):
            results[i] = stream_completion(four_slots, PROMPTS[i], 30)

        for i in range(4):
            waiting.append(threading.Thread(target=wait_one, args=(i,)))
            waiting[-1].start()
        four_slots.wait_for(lambda h: h["queue"] == 4, what="4 waiting requests")
        # ... and the ninth is refused at once, over HTTP and over WebSocket
        status, headers, body = stream_completion(four_slots, "Hello", 5)
        assert status == 503 and headers.get("Retry-After") == "1"
        assert json.loads(body)["error"]["code"] == "server_busy"
        with connect(four_slots.ws_url, open_timeout=10) as ws:
            m = json.loads(ws.recv(timeout=30))
            assert (m["type"], m["code"]) == ("error", "server_busy")
            with pytest.raises(ConnectionClosed) as e:
                ws.recv(timeout=30)
            assert e.value.rcvd.code == 1013
    for t in waiting:
        t.join(timeout=120)
    for i, (status, text, usage) in enumerate(results):
        assert status == 200 and text == solo_text(PROMPTS[i], usage)


def test_killed_client_frees_its_slot():
    srv = tsr_serve.Server(["-m", str(tsr_serve.s15m_model()), "-z", str(tsr_serve.TOK32K),
                            "--slots", "1", "--queue", "1"])
    try:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 250, "temperature": 0,
                           "stream": True})
        curl = subprocess.Popen(["curl", "-sN", "-m", "120", srv.url + "/v1/completions",
                                 "-H", "Content-Type: application/json", "-d", body],
                                stdout=subprocess.PIPE)
        assert curl.stdout.readline().startswith(b"data: ")     # it is streaming
        results = [None]
        second = threading.Thread(
            target=lambda: results.__setitem__(0, stream_completion(srv, "The dog", 5)))
        second.start()
        srv.wait_for(lambda h: h["queue"] == 1, what="the second request to wait")
        curl.kill()
        curl.wait(timeout=30)
        second.join(timeout=120)
        status, text, usage = results[0]
        assert status == 200 and usage["completion_tokens"] == 5
        m = srv.metrics()
        # the server saw the client go, and stopped its generation early
        assert m['tessera_requests_total{endpoint="completions",code="499"}'] == 1
        assert m["tessera_completion_tokens_total"] < 250 + 5
        assert m["tessera_slots_busy"] == 0
    finally:
        assert srv.stop() == 0


def test_seeded_clients_get_the_text_of_run_while_others_decode(four_slots):
    """Sampled sessions advance a quantum at a time and never rewind, so a
    seed gives tessera run's text however busy the device is."""
    args = [(PROMPTS[i], 60, {"temperature": 0.8, "top_p": 0.9, "seed": 100 + i} if i % 2 else {})
            for i in range(8)]

    def one(prompt, n, sampling):
        conn = http.client.HTTPConnection("127.0.0.1", four_slots.port, timeout=120)
        body = dict({"prompt": prompt, "max_tokens": n, "temperature": 0}, **sampling)
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = json.loads(conn.getresponse().read())
        conn.close()
        return r["choices"][0]["text"], r["usage"]

    results = run_in_threads(one, args)
    for (prompt, n, sampling), (text, usage) in zip(args, results):
        extra = ("-t", "0.8", "--top-p", "0.9", "-s", str(sampling["seed"])) if sampling else ()
        steps = usage["completion_tokens"] + usage["prompt_tokens"] - 1
        assert prompt + text + "\n" == tsr_serve.run_text(prompt, steps, extra=extra), prompt


@pytest.fixture(scope="module")
def four_s15m():
    """A stories15M-shape model (random weights, about 1-3 ms a pass) with
    4 slots: generations long enough to overlap."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.s15m_model()), "-z", str(tsr_serve.TOK32K),
                            "--slots", "4"])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def ws_turn(ws, msg, stop_after=None, stop_msg=None, first=None, timeout=120):
    """Send msg; collect its token ids until its done.  With stop_after,
    send stop_msg once that many tokens arrived; also returns the tokens
    that arrived after that send.  first (an Event) is set at the first
    token.  Greedy unless msg says otherwise (the server's default is 0.8
    and a random seed)."""
    ws.send(json.dumps({"temperature": 0, **msg}))
    ids, text, after = [], "", None
    while True:
        m = json.loads(ws.recv(timeout=timeout))
        if m["type"] == "token":
            if "id" in m:
                ids.append(m["id"])
                if after is not None:
                    after += 1
                if first is not None:
                    first.set()
            text += m["text"]
            if stop_after is not None and len(ids) == stop_after and after is None:
                ws.send(json.dumps({"temperature": 0, **stop_msg} if stop_msg["type"] == "steer"
                                   else stop_msg))
                after = 0
        elif m["type"] == "done":
            assert m["text"] == text
            return ids, m, after
        else:
            raise AssertionError("unexpected message %r" % m)


def test_interrupt_and_steer_inside_a_batch(four_s15m):
    """Three sessions generate 200 greedy tokens each while a fourth is
    interrupted and then steered: the stops land within a token inside the
    shared decode calls, the three others keep their solo tokens, and the
    fourth's history is what its client saw (the driver API doing the same
    steps)."""
    srv, model = four_s15m, tsr_serve.s15m_model()
    before = srv.metrics()
    long_prompts = PROMPTS[1:4]
    finished = [None] * len(long_prompts)
    going = [threading.Event() for _ in long_prompts]

    def generate(i):
        with connect(srv.ws_url, open_timeout=10, close_timeout=10) as ws:
            ids, d, _ = ws_turn(ws, {"type": "generate", "text": long_prompts[i],
                                     "max_tokens": 200}, first=going[i])
            finished[i] = time.monotonic()
            return ids, d

    results = [None] * len(long_prompts)
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, generate(i)))
               for i in range(len(long_prompts))]
    for t in threads:
        t.start()
    # the three are generating (each has a token out) before the fourth starts
    assert all(g.wait(timeout=60) for g in going)
    with connect(srv.ws_url, open_timeout=10, close_timeout=10) as ws:
        first, d1, after1 = ws_turn(ws, {"type": "generate", "text": PROMPTS[0],
                                         "max_tokens": 200},
                                    stop_after=5, stop_msg={"type": "interrupt"})
        second, d2, _ = ws_turn(ws, {"type": "generate", "text": " The cat", "max_tokens": 200},
                                stop_after=3, stop_msg={"type": "steer", "text": " The dog said",
                                                        "max_tokens": 20})
        t_stops = time.monotonic()
        third = json.loads(ws.recv(timeout=120))
        steered_ids = []
        while third["type"] == "token":
            steered_ids += [third["id"]] if "id" in third else []
            third = json.loads(ws.recv(timeout=120))
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    # the stops came while the three were still generating, so inside their decode calls
    assert all(f is not None and f > t_stops for f in finished), (finished, t_stops)
    assert d1["reason"] == "interrupted" and d2["reason"] == "steered"
    assert third["type"] == "done" and third["reason"] == "length" and len(steered_ids) == 20
    for d in (d1, d2):
        assert d["stats"]["tokens_after_stop"] <= 1
        assert d["stats"]["completion_tokens"] < 200
    assert after1 < 16                  # tokens the client got after it sent the interrupt
    # the fourth session's history, step by step, is the driver API's
    ref = tsr_serve.reference(model, tsr_serve.TOK32K, "a:" + PROMPTS[0], "g:%d" % len(first),
                              "a: The cat", "g:%d" % len(second), "a: The dog said", "g:20")
    assert (ref[1]["tokens"], ref[3]["tokens"], ref[5]["tokens"]) == (first, second, steered_ids)
    assert third["stats"]["history_tokens"] == sum(len(r["tokens"]) for r in ref)
    # the three others got their solo tokens
    for prompt, (ids, d) in zip(long_prompts, results):
        assert d["reason"] == "length" and len(ids) == 200
        solo = tsr_serve.reference(model, tsr_serve.TOK32K, "a:" + prompt, "g:200")
        assert ids == solo[1]["tokens"], prompt
    # and shared passes over the weights
    after = srv.metrics()
    def delta(k):
        return after.get(k, 0) - before.get(k, 0)
    passes = delta("tessera_decode_pass_batch_size_count")
    shared = passes - delta('tessera_decode_pass_batch_size_bucket{le="1"}')
    assert shared > 0 and delta("tessera_decode_pass_batch_size_bucket{le=\"4\"}") == passes
    assert delta("tessera_decode_pass_batch_size_sum") == delta("tessera_completion_tokens_total")


def test_a_short_turn_ends_inside_a_long_batched_call(four_s15m):
    """A session asks 200 greedy tokens; once it is generating, another
    asks 10.  They share the decode calls (all greedy and all the work:
    calls for all they asked), and the short turn's done comes when its
    10th token does, not when the long turn's call ends."""
    srv, model = four_s15m, tsr_serve.s15m_model()
    going, long_ids, out = threading.Event(), [], {}

    def long_turn():
        with connect(srv.ws_url, open_timeout=10, close_timeout=10) as ws:
            ws.send(json.dumps({"type": "generate", "text": PROMPTS[1], "max_tokens": 200,
                                "temperature": 0}))
            while True:
                m = json.loads(ws.recv(timeout=120))
                if m["type"] == "token" and "id" in m:
                    long_ids.append(m["id"])
                    going.set()
                elif m["type"] == "done":
                    out["long"] = m
                    return

    t = threading.Thread(target=long_turn)
    t.start()
    assert going.wait(timeout=60)
    with connect(srv.ws_url, open_timeout=10, close_timeout=10) as ws:
        short, d, _ = ws_turn(ws, {"type": "generate", "text": PROMPTS[0], "max_tokens": 10})
        long_then = len(long_ids)          # the long turn's tokens when the short one ended
    t.join(timeout=300)
    assert not t.is_alive()
    assert d["reason"] == "length" and len(short) == 10
    assert out["long"]["reason"] == "length" and len(long_ids) == 200
    assert long_then < 100, long_then
    ref = tsr_serve.reference(model, tsr_serve.TOK32K, "a:" + PROMPTS[0], "g:10")
    assert short == ref[1]["tokens"]
    ref = tsr_serve.reference(model, tsr_serve.TOK32K, "a:" + PROMPTS[1], "g:200")
    assert long_ids == ref[1]["tokens"]
