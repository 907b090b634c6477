"""Fixtures for the tessera serve suites: a real server per module."""
import pytest

import tsr_serve


@pytest.fixture(scope="module")
def s260k():
    """stories260K (the trained model), 4 slots, queue 16."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512),
                            "--slots", "4", "--max-tokens", "512"])
    yield srv
    assert srv.stop() == 0, srv.stderr()


@pytest.fixture(scope="module")
def s15m():
    """A stories15M-shape model (random weights, 2 ms a token): long
    generations to interrupt and steer."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.s15m_model()), "-z", str(tsr_serve.TOK32K),
                            "--slots", "2"])
    yield srv
    assert srv.stop() == 0, srv.stderr()
