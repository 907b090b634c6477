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
