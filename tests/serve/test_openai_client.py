"""The openai package, unchanged, pointed at tessera serve's base_url."""
import openai
import pytest

import tsr_serve


M = "stories260K.bin"   # the served model's name: its file's, unless --alias


def client(srv, key="none"):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key=key, max_retries=0, timeout=60)


def test_completion_equals_run(s260k):
    r = client(s260k).completions.create(model="stories260K.bin", prompt="Once upon a time",
                                         max_tokens=50, temperature=0)
    assert r.object == "text_completion"
    assert r.choices[0].finish_reason == "length"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (5, 50, 55)
    # -n counts positions, BOS and prompt included: STEPS = max_tokens + prompt_tokens - 1
    want = tsr_serve.run_text("Once upon a time", 50 + r.usage.prompt_tokens - 1)
    assert "Once upon a time" + r.choices[0].text + "\n" == want


def test_streamed_completion_equals_run(s260k):
    stream = client(s260k).completions.create(model=M, prompt="The little dog", max_tokens=40,
                                              temperature=0, stream=True,
                                              stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    usage = chunks[-1].usage                       # the usage chunk comes last
    assert chunks[-1].choices == [] and usage.completion_tokens == 40
    want = tsr_serve.run_text("The little dog", 40 + usage.prompt_tokens - 1)
    assert "The little dog" + text + "\n" == want


def test_chat_completes_the_template(s260k):
    c = client(s260k)
    msgs = [{"role": "system", "content": "Tell a story."}, {"role": "user", "content": "A cat"}]
    r = c.chat.completions.create(model=M, messages=msgs, max_tokens=24, temperature=0)
    assert r.choices[0].message.role == "assistant"
    plain = c.completions.create(model=M, prompt="Tell a story.\n\nUser: A cat\nAssistant:",
                                 max_tokens=24, temperature=0)
    assert r.choices[0].message.content == plain.choices[0].text
    assert r.usage.prompt_tokens == plain.usage.prompt_tokens
    streamed = c.chat.completions.create(model=M, messages=msgs, max_tokens=24, temperature=0,
                                         stream=True)
    pieces = [ch.choices[0].delta.content or "" for ch in streamed]
    assert "".join(pieces) == plain.choices[0].text


def test_seed_gives_the_text_of_run(s260k):
    c = client(s260k)
    texts = [c.completions.create(model=M, prompt="Once upon a time", max_tokens=40,
                                  temperature=0.8, top_p=0.9, seed=7).choices[0].text
             for _ in range(2)]
    assert texts[0] == texts[1]
    want = tsr_serve.run_text("Once upon a time", 40 + 5 - 1,
                              extra=("-t", "0.8", "--top-p", "0.9", "-s", "7"))
    assert "Once upon a time" + texts[0] + "\n" == want


def test_models(s260k):
    c = client(s260k)
    assert [m.id for m in c.models.list()] == ["stories260K.bin"]
    assert c.models.retrieve("stories260K.bin").id == "stories260K.bin"


def test_errors_raise_the_right_exceptions(s260k):
    c = client(s260k)
    # over the server's --max-tokens (512 here): cut to it, and named
    r = c.completions.create(model=M, prompt="hi", max_tokens=100000, temperature=0)
    assert r.usage.model_extra["max_tokens_limit"] == 512
    with pytest.raises(openai.BadRequestError) as e:   # OpenAI's rule: at least 1
        c.completions.create(model=M, prompt="hi", max_tokens=0)
    assert "'max_tokens' must be an integer of at least 1 (one over the server's " \
        "--max-tokens, 512, is cut to it)" in str(e.value)
    with pytest.raises(openai.BadRequestError):
        c.completions.create(model=M, prompt="hi", n=2)


def test_another_model_is_not_found(s260k):
    c = client(s260k)
    for name in ["gpt-4", "/work/" + M, "x" * 10000, M[:-1], M + " "]:
        with pytest.raises(openai.NotFoundError) as e:
            c.completions.create(model=name, prompt="hi", max_tokens=2)
        assert e.value.code == "model_not_found" and "'stories260K.bin'" in str(e.value)
        with pytest.raises(openai.NotFoundError):
            c.chat.completions.create(model=name, messages=[{"role": "user", "content": "hi"}],
                                      max_tokens=2)
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("gpt-4")


def test_alias_names_the_model():
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512),
                            "--alias", "tiny-stories"])
    try:
        c = client(srv)
        assert [m.id for m in c.models.list()] == ["tiny-stories"]
        r = c.completions.create(model="tiny-stories", prompt="hi", max_tokens=2)
        assert r.model == "tiny-stories" and r.usage.completion_tokens == 2
        with pytest.raises(openai.NotFoundError):
            c.completions.create(model=M, prompt="hi", max_tokens=2)
    finally:
        assert srv.stop() == 0


def test_api_key():
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512),
                            "--api-key", "k-123"])
    try:
        with pytest.raises(openai.AuthenticationError):
            client(srv, "wrong").completions.create(model=M, prompt="hi", max_tokens=2)
        r = client(srv, "k-123").completions.create(model=M, prompt="hi", max_tokens=2)
        assert r.usage.completion_tokens == 2
    finally:
        assert srv.stop() == 0
