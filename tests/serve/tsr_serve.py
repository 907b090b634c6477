"""Helpers for the tessera serve suites: paths, a server process, the
driver-API reference (build/tests/serve_ref), tessera run, /metrics.

Every wait here is bounded; all traffic goes to 127.0.0.1."""
import json
import os
import pathlib
import re
import select
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SRC = pathlib.Path(os.environ.get("TSR_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("TSR_BUILD_DIR", SRC / "build"))
SHARED = pathlib.Path(os.environ.get("TSR_SHARED_DIR", SRC.parent / "shared"))
TESSERA = BUILD / "tessera"
REF = BUILD / "tests" / "serve_ref"
M260K = SHARED / "models" / "stories260K.bin"
TOK512 = SHARED / "models" / "tok512.bin"
TOK32K = SHARED / "models" / "tokenizer.bin"
ARTIFACTS = BUILD / "serve-test"


def _synth_once(name, shape, *extra):
    """build/serve-test/NAME, written once with tessera synth --shape SHAPE
    (and the options extra)."""
    path = ARTIFACTS / name
    if not path.exists():
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        subprocess.run([str(TESSERA), "synth", "--shape", shape, *extra, "-o", str(tmp)],
                       check=True, capture_output=True, timeout=300)
        tmp.rename(path)
    return path


def s15m_model():
    """build/serve-test/s15m.bin: the stories15M shape (random weights)."""
    return _synth_once("s15m.bin", "stories15M")


def s15m_q8_model():
    """build/serve-test/s15m-q8.bin: the stories15M shape in Q8_0 (random
    weights; for benchmarks)."""
    return _synth_once("s15m-q8.bin", "stories15M", "--q8")


def s110m_q8_model():
    """build/serve-test/s110m-q8.bin: the stories110M shape in Q8_0 (random
    weights; for benchmarks)."""
    return _synth_once("s110m-q8.bin", "stories110M", "--q8")


def s15m_long_model():
    """build/serve-test/s15m-2k.bin: the stories15M shape with a 2048-token
    context: a generation long enough (about 0.8 s at 2,500 tokens/s) to
    stop by hand on a fast machine."""
    return _synth_once("s15m-2k.bin", "288x6:hidden=768,heads=6,seq=2048")


# TSR_SERVE_MPI=N: every Server runs under mpirun -np N, the model split
# over N ranks (--cards N) of the MPI=1 build (TSR_MPI_BUILD_DIR, default
# BUILD-mpi); rank 0 serves HTTP.  make test runs the HTTP and WebSocket
# suites so with N = 2.
MPI_RANKS = int(os.environ.get("TSR_SERVE_MPI", "0") or 0)
MPI_TESSERA = pathlib.Path(os.environ.get("TSR_MPI_BUILD_DIR", str(BUILD) + "-mpi")) / "tessera"


def _serve_cmd(args):
    if MPI_RANKS > 1:
        return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(MPI_RANKS),
                str(MPI_TESSERA), "serve", "--cards", str(MPI_RANKS), *args, "--port", "0"]
    return [str(TESSERA), "serve", *args, "--port", "0"]


def rank_pid(mpirun_pid, rank):
    """The pid of rank `rank` among mpirun's children, or None."""
    try:
        kids = pathlib.Path("/proc/%d/task/%d/children" % (mpirun_pid, mpirun_pid)).read_text()
    except OSError:
        return None
    want = b"OMPI_COMM_WORLD_RANK=%d" % rank
    for pid in kids.split():
        try:
            env = pathlib.Path("/proc/%s/environ" % pid).read_bytes().split(b"\0")
        except OSError:
            continue
        if want in env:
            return int(pid)
    return None


def _rank0(mpirun_pid):
    return rank_pid(mpirun_pid, 0)


class Server:
    """tessera serve ARGS --port 0, up until stop()."""

    def __init__(self, args, timeout=60):
        self.args = args
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(_serve_cmd(args), stdout=subprocess.PIPE, stderr=self._err)
        line, until = b"", time.monotonic() + timeout
        while b"\n" not in line and time.monotonic() < until:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        m = re.search(rb"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise RuntimeError("tessera serve did not start: %s" % self.stderr())
        self.port = int(m.group(1))
        self.host = "127.0.0.1:%d" % self.port
        self.url = "http://" + self.host
        self.ws_url = "ws://%s/v1/realtime" % self.host

    def stderr(self):
        self._err.seek(0)
        return self._err.read().decode("utf-8", "replace")

    def alive(self):
        return self.proc.poll() is None

    def send_signal(self, sig):
        """Send sig to the server: under mpirun to rank 0, which stops the
        server and releases the other ranks (mpirun exits 0); mpirun itself
        would end the job after a second and exit 1."""
        if self.proc.poll() is None:
            r0 = _rank0(self.proc.pid) if MPI_RANKS > 1 else None
            if r0:
                os.kill(r0, sig)
            else:
                self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Send sig (send_signal()); the exit status (None when it had to be
        killed)."""
        self.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            return None

    # --- plain HTTP, for checks (urllib: no client of ours in between) ---

    def get(self, path, headers=None, timeout=30):
        """(status, body) of a GET."""
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(self, path, body, headers=None, timeout=120):
        """(status, headers, body) of a JSON POST."""
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def health(self):
        status, body = self.get("/health", timeout=10)
        return status, json.loads(body)

    def metrics(self):
        """/metrics as {"name{labels}": value}."""
        status, body = self.get("/metrics")
        assert status == 200
        out = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[key] = float(value)
        return out

    def wait_for(self, pred, timeout=30, what="condition"):
        """Poll /health until pred(health) holds (bounded)."""
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            _, h = self.health()
            if pred(h):
                return h
            time.sleep(0.02)
        raise AssertionError("timed out waiting for " + what)


def run_text(prompt, steps, model=M260K, tok=TOK512, extra=()):
    """tessera run -t 0 (or extra's sampler) stdout."""
    r = subprocess.run([str(TESSERA), "run", "-m", str(model), "-z", str(tok), "-p", prompt,
                        "-n", str(steps), "-t", "0", *extra],
                       check=True, capture_output=True, timeout=120)
    return r.stdout.decode()


def reference(model, tok, *steps, ctx=None):
    """build/tests/serve_ref: the driver API doing the same steps."""
    args = [str(REF), str(model), str(tok)]
    if ctx:
        args += ["--ctx", str(ctx)]
    r = subprocess.run(args + list(steps), check=True, capture_output=True, timeout=120)
    return [json.loads(line) for line in r.stdout.decode().splitlines()]
