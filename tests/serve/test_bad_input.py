"""Bad input, fuzz-style: a few hundred malformed requests and WebSocket
frames, a 10 MB body, a header flood, idle sockets.  Each is answered
with a 4xx or a clean close; the server keeps answering /health and
serving everyone else.  make test SANITIZE=1 runs it under ASan/UBSan."""
import base64
import json
import os
import random
import socket
import struct
import time

import pytest

import tsr_serve

VALID = {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}


@pytest.fixture(scope="module")
def srv():
    s = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512)])
    yield s
    assert s.stop() == 0, s.stderr()      # under ASan: no leak, no error at exit


def exchange(srv, data, timeout=15, read=True):
    """Send raw bytes; the HTTP status answered, or None when the server
    closed without one.  Bounded in time."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    try:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)  # all said: a short body ends here
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass                           # it stopped reading: fine, see what it said
        if not read:
            return None
        got, until = b"", time.monotonic() + timeout
        while b"\r\n" not in got and time.monotonic() < until:
            try:
                chunk = sock.recv(4096)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            got += chunk
        if not got:
            return None
        assert got.startswith(b"HTTP/"), got[:80]
        return int(got.split(b" ", 2)[1])
    finally:
        sock.close()


def request(body, path="/v1/completions", headers=None, method="POST"):
    h = {"Host": "127.0.0.1", "Content-Type": "application/json",
         "Content-Length": str(len(body)), "Connection": "close"}
    h.update(headers or {})
    head = "".join("%s: %s\r\n" % kv for kv in h.items())
    return ("%s %s HTTP/1.1\r\n%s\r\n" % (method, path, head)).encode() + body


def assert_refused(srv, data, what):
    status = exchange(srv, data)
    assert status is None or 400 <= status < 500, "%s: %s" % (what, status)
    return status


def still_serving(srv):
    assert srv.alive()
    assert srv.health()[0] == 200


# ----------------------------------------------------------------- HTTP ---

def bad_bodies():
    """Bodies that must each get a 400 (or 413)."""
    valid = json.dumps(VALID).encode()
    for n in range(len(valid)):                      # every truncation
        yield "truncated at %d" % n, valid[:n]
    wrong = {
        "prompt": [5, {}, True, ["a", "b"], [1, 2]],
        "max_tokens": ["8", -1, 0, 1.5, True, [], {}, "1e9"],   # 10**6: cut, not refused
        "temperature": ["hot", -0.1, 2.5, [], {}, True],
        "top_p": [0, -1, 1.5, "x", []],
        "seed": [1.5, "7", [], {}],
        "stop": [5, [5], [""], ["x"] * 5, ["y" * 300], {}],
        "stream": ["yes", 1, [], {}],
        "stream_options": [5, "x", {"include_usage": 3}],
        "n": [2, 0, "1"], "echo": [True], "logprobs": [3], "best_of": [2],
        "model": [7, [], {}], "user": [5], "suffix": ["x"], "logit_bias": [{"1": 5}],
        "presence_penalty": [1.0], "frequency_penalty": ["x"],
    }
    for field, values in wrong.items():
        for v in values:
            body = dict(VALID)
            body[field] = v
            yield "%s=%r" % (field, v), json.dumps(body).encode()
    for raw in [b"1e999", b"-1e999", b"99999999999999999999", b"-99999999999999999999",
                b"NaN", b"Infinity", b"0x10", b"1_000"]:
        yield "number " + raw.decode(), b'{"prompt": "a", "max_tokens": ' + raw + b"}"
    for bad in [b"\xff", b"\xc3\x28", b"\xa0\xa1", b"\xe2\x28\xa1", b"\xf0\x28\x8c\xbc",
                b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xf4\x90\x80\x80"]:
        yield "utf8 %r" % bad, b'{"prompt": "Once ' + bad + b' a time"}'
    yield "NUL escape", b'{"prompt": "a\\u0000b"}'
    yield "lone surrogate escape", b'{"prompt": "\\ud800"}'
    yield "deep nesting", b'{"prompt": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    yield "duplicate key", b'{"prompt": "a", "prompt": "b"}'
    yield "not an object", b"[1, 2, 3]"
    yield "empty", b""
    yield "a string", b'"hello"'
    yield "trailing garbage", json.dumps(VALID).encode() + b" x"
    rng = random.Random(15)
    valid = json.dumps(VALID).encode()
    for i in range(60):                              # an invalid byte in a random place
        k = rng.randrange(len(valid))
        yield "mutation %d" % i, valid[:k] + bytes([rng.choice([0xff, 0xfe, 0xc0, 0x80])]) + valid[k:]
    for i in range(40):                              # random bytes that are not JSON
        yield "random %d" % i, b"#" + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    chat = [5, "hi", [], [5], [{"role": "wizard", "content": "x"}], [{"role": "user"}],
            [{"role": "user", "content": 5}], [{"role": "user", "content": [{"type": "image"}]}]]
    for m in chat:
        yield "chat messages=%r" % (m,), json.dumps({"messages": m}).encode()


def test_malformed_bodies_get_400(srv):
    n = 0
    for what, body in bad_bodies():
        path = "/v1/chat/completions" if what.startswith("chat") else "/v1/completions"
        status = assert_refused(srv, request(body, path), what)
        assert status in (400, 413), "%s: %s" % (what, status)
        n += 1
        if n % 50 == 0:
            still_serving(srv)
    assert n >= 250
    still_serving(srv)


def test_deep_but_valid_json_is_served(srv):
    # 2000 levels in a field the server ignores: parsed, freed, answered
    deep = b"[" * 2000 + b"]" * 2000
    body = json.dumps(VALID).encode()[:-1] + b', "extra": ' + deep + b"}"
    status, _, _ = srv.post("/v1/completions", body)
    assert status == 200
    still_serving(srv)


def test_bad_requests_get_4xx_or_close(srv):
    cases = [
        ("garbage line", b"GARBAGE\r\n\r\n"),
        ("no version", b"GET /health\r\n\r\n"),
        ("HTTP/9.9", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n"),
        ("binary junk", bytes(range(256)) * 4),
        ("negative length", request(b"{}", headers={"Content-Length": "-5"})),
        ("length not a number", request(b"{}", headers={"Content-Length": "abc"})),
        ("huge length", request(b"{}", headers={"Content-Length": "99999999999999999999999"})),
        ("short body", request(b'{"prompt"', headers={"Content-Length": "100"})),
        ("bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                           b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        ("length and chunked", request(b"{}", headers={"Transfer-Encoding": "chunked"})),
        ("no length", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nConnection: close\r\n\r\n"),
        ("DELETE", request(b"", method="DELETE")),
        ("form body", request(b"a=b", headers={"Content-Type": "application/x-www-form-urlencoded"})),
        ("no content type", request(b"{}", headers={"Content-Type": ""})),
        ("traversal", b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("long url", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("header flood", b"GET /health HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(1000)) + b"\r\n"),
        ("huge header", b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n"),
        ("many small headers", b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 100 + b"\r\n"),
        ("bad auth header", b"GET /health HTTP/1.1\r\nAuthorization: Bearer \xff\xfe\r\n\r\n"),
        ("upgrade to h2c", b"GET /health HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"),
        ("ws without key", b"GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                           b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"),
        ("ws bad version", b"GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                           b"Connection: Upgrade\r\nSec-WebSocket-Version: 99\r\nSec-WebSocket-Key: "
                           b"dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
    ]
    rng = random.Random(1515)
    for i in range(30):
        cases.append(("random request %d" % i, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))))
    for what, data in cases:
        status = exchange(srv, data)
        # /health answers the requests that are valid enough; civetweb
        # answers an unknown HTTP version with 505, the code for it
        assert (status is None or 400 <= status < 500 or (status == 200 and b"/health" in data)
                or (status == 505 and what == "HTTP/9.9")), "%s: %s" % (what, status)
    still_serving(srv)


def read_all(sock, timeout=15):
    """Everything the server sends until it closes (or timeout)."""
    sock.settimeout(timeout)
    got, until = b"", time.monotonic() + timeout
    while time.monotonic() < until:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            return got, True
        got += chunk
    return got, False


def answer(srv, data, timeout=5):
    """(every response's status, the first JSON body, closed, the first
    head) for data, reading until the server closes or timeout s pass."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
    try:
        sock.sendall(data)
        got, closed = read_all(sock, timeout=timeout)
    finally:
        sock.close()
    statuses = [int(line.split(b" ", 2)[1]) for line in got.split(b"\r\n")
                if line.startswith(b"HTTP/1.")]
    head, _, rest = got.partition(b"\r\n\r\n")
    n = int([h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")][0])
    return statuses, json.loads(rest[:n]), closed, head


def post_head(*headers):
    return (b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
            + b"".join(h + b"\r\n" for h in headers) + b"\r\n")


def test_misframed_requests_are_refused_and_closed(srv):
    """RFC 9112: a body framed two ways, or framing civetweb would not read,
    is refused and the connection closed at once, so the request hidden
    behind it (here in every case) is never read."""
    hidden = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"{}" + hidden
    cl = b"Content-Length: %d" % len(body)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    cases = [
        ("Content-Length twice", post_head(b"Host: x", b"Content-Length: 2", cl) + body,
         "Content-Length is given more than once"),
        ("chunked and a length", post_head(b"Host: x", b"Transfer-Encoding: chunked", cl) + chunked,
         "Content-Length and Transfer-Encoding together"),
        ("Transfer-Encoding twice", post_head(b"Host: x", b"Transfer-Encoding: identity",
                                              b"Transfer-Encoding: chunked") + chunked,
         "Transfer-Encoding must be given once, as chunked"),
        ("Transfer-Encoding identity", post_head(b"Host: x", b"Transfer-Encoding: identity") + body,
         "Transfer-Encoding must be given once, as chunked"),
        ("a length with letters", post_head(b"Host: x", b"Content-Length: 2abc") + body,
         "Content-Length must be a decimal number"),
        ("a length behind 64 fields", post_head(b"Host: x", *[b"X-F%d: v" % i for i in range(64)], cl)
         + body, "more than 63 fields"),
        ("a length behind a folded line", post_head(b"Host: x", b"X-A: b", b" folded", cl) + body,
         "a folded line"),
        ("HTTP/1.1 without Host", post_head(cl) + body, "needs Host"),
        ("a NUL in the path", b"GET /v1/models/stories260K.bin%00x HTTP/1.1\r\nHost: x\r\n\r\n" + hidden,
         "NUL byte"),
    ]
    for what, data, msg in cases:
        t0 = time.monotonic()
        statuses, body_json, closed, _ = answer(srv, data, timeout=1.5)
        # one answer, then the close, well before the 2 s keep-alive timeout
        assert statuses == [400] and closed and time.monotonic() - t0 < 1.5, (what, statuses)
        assert body_json["error"]["code"] == "bad_request", what
        assert msg in body_json["error"]["message"], (what, body_json)
    still_serving(srv)


def test_civetweb_errors_are_json_under_our_status_line(srv):
    cases = [
        ("extra words after the version", b"GET /health HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
        ("a version with a CR LF in it", b"GET /health HTTP/1.1 x\r\nX-Injected: 1\r\n\r\n", 400),
        ("garbage line", b"GARBAGE\r\n\r\n", 400),
        ("HTTP/9.9", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", 505),
        ("bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                           b"application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400),
        ("huge header", b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n", 400),
    ]
    for what, data, status in cases:
        statuses, body, closed, head = answer(srv, data)
        assert statuses and statuses[0] == status, (what, statuses)
        assert head.startswith(b"HTTP/1.1 %d " % status), (what, head[:60])
        assert b"extra" not in head and b"X-Injected" not in head, what
        assert b"Content-Type: application/json" in head, what
        assert body["error"]["message"] and body["error"]["code"], what
        assert closed, what
    still_serving(srv)


def test_ten_megabyte_body(srv):
    big = b'{"prompt": "' + b"a" * (10 << 20) + b'"}'
    assert assert_refused(srv, request(big), "10 MB body") in (413, None)
    # the same sent in chunks, with no length up front
    chunks = b"".join(b"%x\r\n%s\r\n" % (1 << 16, b"a" * (1 << 16)) for _ in range(160)) + b"0\r\n\r\n"
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    assert assert_refused(srv, head + chunks, "10 MB chunked") in (413, None)
    still_serving(srv)


def test_idle_sockets_do_not_starve_others(srv):
    idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(20)]
    try:
        idle[0].sendall(b"POST /v1/completions HTTP/1.1\r\n")      # and one half a request
        still_serving(srv)
        status, _, body = srv.post("/v1/completions", VALID)
        assert status == 200
    finally:
        for s in idle:
            s.close()


# ------------------------------------------------------------ WebSocket ---

def ws_open(srv):
    """A raw socket that has done the WebSocket handshake."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(("GET /v1/realtime HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                  % (srv.host, key)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(4096)
        assert chunk, "closed during the handshake"
        got += chunk
    assert got.startswith(b"HTTP/1.1 101"), got[:60]
    return sock, got.split(b"\r\n\r\n", 1)[1]


def frame(opcode, payload, fin=True, masked=True, length=None):
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | opcode])
    m = 0x80 if masked else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack(">H", n)
    else:
        head += bytes([m | 127]) + struct.pack(">Q", n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_outcome(sock, leftover, timeout=15):
    """What the server did next: 'message' (a text frame), 'close' (a close
    frame, or the socket closed), or 'pong'."""
    sock.settimeout(timeout)
    buf = leftover
    until = time.monotonic() + timeout
    while len(buf) < 2 and time.monotonic() < until:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, socket.timeout):
            return "close"
        if not chunk:
            return "close"
        buf += chunk
    if len(buf) < 2:
        return "nothing"
    op = buf[0] & 0x0f
    return {1: "message", 8: "close", 10: "pong"}.get(op, "other %d" % op)


WS_CASES = [
    # (what, bytes to send, outcomes allowed)
    ("not JSON", frame(1, b"nope"), {"message"}),
    ("invalid UTF-8 text", frame(1, b'{"type": "generate", "text": "\xff"}'), {"close"}),
    ("wrong types", frame(1, b'{"type": "generate", "max_tokens": -5}'), {"message"}),
    ("no type", frame(1, b'{"text": "a"}'), {"message"}),
    ("deep JSON", frame(1, b"[" * 5000 + b"]" * 5000), {"message"}),
    ("huge number", frame(1, b'{"type": "generate", "max_tokens": 1e999}'), {"message"}),
    ("unmasked frame", frame(1, b'{"type": "x"}', masked=False), {"message", "close"}),
    ("binary", frame(2, b"\x00\x01\x02"), {"close"}),
    ("reserved opcode 3", frame(3, b"x"), {"close"}),
    ("reserved opcode 11", frame(11, b"x"), {"close"}),
    ("continuation first", frame(0, b"x"), {"close"}),
    ("text inside a fragment", frame(1, b'{"a":', fin=False) + frame(1, b"1}"), {"close"}),
    ("ping", frame(9, b"hi"), {"pong"}),
    ("close with a 1-byte payload", frame(8, b"\x03"), {"close"}),
    ("close", frame(8, b"\x03\xe8bye"), {"close"}),
    ("2 MB message", frame(1, b'"' + b"a" * (2 << 20) + b'"'), {"close"}),
    ("2 MB in fragments", b"".join(frame(1 if i == 0 else 0, b"a" * (1 << 16), fin=False)
                                   for i in range(32)) + frame(0, b"a", fin=True), {"close"}),
]


def ws_close_code(sock, leftover, timeout=15):
    """The status code of the server's close frame, skipping the text
    frames before it; None when the socket closed without one."""
    sock.settimeout(timeout)
    buf, until = leftover, time.monotonic() + timeout
    while time.monotonic() < until:
        if len(buf) >= 2:
            n, at = buf[1] & 0x7f, 2
            if n == 126:
                n, at = struct.unpack(">H", buf[2:4])[0] if len(buf) >= 4 else -1, 4
            elif n == 127:
                n, at = struct.unpack(">Q", buf[2:10])[0] if len(buf) >= 10 else -1, 10
            if n >= 0 and len(buf) >= at + n:
                if buf[0] & 0x0f == 8:
                    return struct.unpack(">H", buf[at:at + 2])[0] if n >= 2 else 1005
                buf = buf[at + n:]
                continue
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            return None
        if not chunk:
            return None
        buf += chunk
    return None


# RFC 6455: what fails the connection, and with which code
WS_PROTOCOL_ERRORS = [
    ("RSV1 without an extension", b"\xc1" + frame(1, b'{"type": "x"}')[1:], 1002),
    ("RSV2", b"\xa1" + frame(1, b'{"type": "x"}')[1:], 1002),
    ("RSV3 on a continuation", frame(1, b'{"a":', fin=False) + b"\x90" + frame(0, b"1}")[1:], 1002),
    ("a fragmented close", frame(8, b"\x03\xe8", fin=False), 1002),
    ("a close of 1 byte", frame(8, b"\x03"), 1002),
    ("close code 1005", frame(8, b"\x03\xed"), 1002),
    ("close code 999", frame(8, b"\x03\xe7"), 1002),
    ("a close reason that is not UTF-8", frame(8, b"\x03\xe8\xff\xfe"), 1007),
    ("a text frame that is not UTF-8", frame(1, b'{"type": "generate", "text": "\xff"}'), 1007),
    ("an overlong encoding", frame(1, b'{"text": "\xc0\xaf"}'), 1007),
    ("a surrogate", frame(1, b'{"text": "\xed\xa0\x80"}'), 1007),
    ("fragments that are not UTF-8 together", frame(1, b'{"text": "\xe2', fin=False)
     + frame(0, b'\x28\xa1"}'), 1007),
    ("a clean close", frame(8, b"\x03\xe8bye"), 1000),
    ("a close without a code", frame(8, b""), 1000),
    ("a private close code", frame(8, b"\x0f\xa0"), 4000),
]


@pytest.mark.parametrize("what,data,code", WS_PROTOCOL_ERRORS, ids=[c[0] for c in WS_PROTOCOL_ERRORS])
def test_websocket_protocol_errors_close_with_their_code(srv, what, data, code):
    sock, leftover = ws_open(srv)
    try:
        sock.sendall(data)
        assert ws_close_code(sock, leftover) == code, what
    finally:
        sock.close()
    still_serving(srv)


def test_a_fragment_split_character_is_one_message(srv):
    """UTF-8 is checked on the whole message: a character split across two
    fragments is fine."""
    sock, leftover = ws_open(srv)
    try:
        sock.sendall(frame(1, b'{"type": "generate", "text": "caf\xc3', fin=False)
                     + frame(0, b'\xa9", "max_tokens": 2}'))
        sock.settimeout(15)
        buf = leftover
        while b'"done"' not in buf:
            chunk = sock.recv(65536)
            assert chunk, "closed"
            buf += chunk
        assert b'"type":"done"' in buf
    finally:
        sock.close()


@pytest.mark.parametrize("what,data,allowed", WS_CASES, ids=[c[0] for c in WS_CASES])
def test_broken_websocket_frames(srv, what, data, allowed):
    sock, leftover = ws_open(srv)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert ws_outcome(sock, leftover) in allowed, what
    finally:
        sock.close()
    still_serving(srv)


def test_cut_off_frames_and_lying_lengths(srv):
    for data in [b"\x81", b"\x81\xfe\x00", frame(1, b"abc", length=64 << 20)[:20],
                 frame(1, b"x" * 100)[:50], frame(1, b"abc", length=1 << 40)[:14]]:
        sock, _ = ws_open(srv)
        sock.sendall(data)
        sock.close()                                  # mid-frame
    still_serving(srv)
    # and the device still gives the right text to a well-behaved client
    status, _, body = srv.post("/v1/completions", VALID)
    assert status == 200
    want = tsr_serve.run_text("Once upon a time", 8 + 5 - 1)
    assert "Once upon a time" + json.loads(body)["choices"][0]["text"] + "\n" == want
