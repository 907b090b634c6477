"""A stage's rank stops answering under tessera serve --cards 2 on
mpirun -np 2 (issue 38): the request in flight and every later one get
503 device_unavailable within seconds, /health says the device failed,
and a WebSocket upgrade is refused; nothing hangs.  Runs only under
TSR_SERVE_MPI (make test runs it on 2 ranks)."""
import json
import os
import signal
import time

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import tsr_serve

pytestmark = pytest.mark.skipif(tsr_serve.MPI_RANKS < 2,
                                reason="a rank to stall: TSR_SERVE_MPI=2 (mpirun)")

REQ = {"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0}


def test_stalled_rank_gives_503():
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512)])
    r1 = None
    try:
        status, _, body = srv.post("/v1/completions", REQ)
        assert status == 200, body
        r1 = tsr_serve.rank_pid(srv.proc.pid, 1)
        assert r1
        os.kill(r1, signal.SIGSTOP)          # a wedged rank, or a link that stalls
        t0 = time.monotonic()
        status, _, body = srv.post("/v1/completions", REQ, timeout=30)
        took = time.monotonic() - t0
        assert status == 503, body
        err = json.loads(body)["error"]
        assert err["code"] == "device_unavailable" and "rank 1" in err["message"], err
        assert took < 10, took               # the link's deadline, not a hang
        status, health = srv.health()
        assert status == 503 and health["status"] == "device_failed", health
        assert "rank 1" in health["error"]
        t0 = time.monotonic()                # later requests: at once
        status, _, body = srv.post("/v1/completions", REQ, timeout=30)
        assert status == 503 and json.loads(body)["error"]["code"] == "device_unavailable"
        assert time.monotonic() - t0 < 2
        with pytest.raises(InvalidStatus) as e:   # a new WebSocket session too
            connect(srv.ws_url, open_timeout=10)
        assert e.value.response.status_code == 503
    finally:
        if r1:
            os.kill(r1, signal.SIGCONT)
        srv.stop(timeout=30)                 # rank 0 exits; mpirun ends the rest
        assert not srv.alive()
