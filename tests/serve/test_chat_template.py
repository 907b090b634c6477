"""Chat templates, checked live: each model's own Jinja template rendered
with jinja2 (set up as Hugging Face transformers sets it up) against
tsr_chat_format (build/tests/chat_format) for the same messages, and
tessera serve's --chat-template.

The renders differ from tessera's text only by the opening BOS text of
the templates that emit {{ bos_token }} first (Llama 2/3, Gemma): the
tokenizer adds BOS.  strftime_now is left undefined, so Llama 3.2's
"Today Date" is the template's own default, 26 Jul 2024."""
import json
import subprocess

import jinja2
import jinja2.ext
import jinja2.sandbox
import openai
import pytest

import tsr_serve

CHAT_FORMAT = tsr_serve.BUILD / "tests" / "chat_format"
VOCAB = tsr_serve.SHARED / "vocab"
FIXTURES = tsr_serve.SRC / "tests" / "fixtures" / "chat"

# file, the family tessera recognises, bos_token, eos_token, BOS text first
TEMPLATES = {
    "qwen2.5": (VOCAB / "Qwen-Qwen2.5-7B-Instruct.jinja", "chatml", "", "<|im_end|>", False),
    "llama3.2": (VOCAB / "meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3", "<|begin_of_text|>",
                 "<|eot_id|>", True),
    "phi3.5": (VOCAB / "microsoft-Phi-3.5-mini-instruct.jinja", "phi3", "<s>", "<|endoftext|>",
               False),
    "llama2-chat": (FIXTURES / "llama2-chat.jinja", "llama2-sys", "<s>", "</s>", True),
    "gemma3": (FIXTURES / "gemma.jinja", "gemma", "<bos>", "<eos>", True),
}

S, U, A = "system", "user", "assistant"
CONVERSATIONS = [
    [(S, "You are a terse assistant."), (U, "Hello!"), (A, "Hi. How can I help?"),
     (U, "Name three colours.")],
    [(U, "  Hello!\n")],
    [(U, "\u3000 a \u00a0"), (A, " \n b\t"), (U, "c")],
    [(S, "  S  "), (U, "  u  ")],
    [(S, ""), (U, "x")],
    [(S, "   "), (U, "   ")],
    [(S, "\u00fcn\u00ef \u2603"), (U, "\u00e9\u2028"), (A, "ok"), (U, "line one\nline two")],
    [("developer", "Be brief."), (U, "Hi"), (A, "Hello"), (U, "A story")],
    [(U, "a"), (A, "b"), (S, "mid-conversation system"), (U, "c")],
    [(U, "quotes ' \" and {{ braces }} and \\n"), (A, "<|im_end|> is text here")],
]


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render(path, msgs, gen, bos, eos):
    """The template's text for msgs (developer is a system message, as
    tessera has it), or None when the template refuses them."""
    msgs = [{"role": "system" if r == "developer" else r, "content": c} for r, c in msgs]
    try:
        return environment().from_string(path.read_text()).render(
            messages=msgs, add_generation_prompt=gen, bos_token=bos, eos_token=eos)
    except jinja2.exceptions.TemplateError:
        return None


def tessera(path, msgs, gen, family=None):
    args = [str(CHAT_FORMAT), "--template", str(path)]
    if family:
        args += ["--family", family]
    if not gen:
        args.append("--no-generation-prompt")
    body = json.dumps([{"role": r, "content": c} for r, c in msgs])
    r = subprocess.run(args, input=body.encode(), capture_output=True, check=True, timeout=30)
    return r.stdout.decode()


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_family_is_recognised(name):
    path, family = TEMPLATES[name][:2]
    r = subprocess.run([str(CHAT_FORMAT), "--template", str(path), "--detect"],
                       capture_output=True, check=True, timeout=30)
    assert r.stdout.decode() == family


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_text_equals_jinja(name):
    path, family, bos, eos, bos_first = TEMPLATES[name]
    compared = 0
    for msgs in CONVERSATIONS:
        for gen in (True, False):
            want = render(path, msgs, gen, bos, eos)
            if want is None:        # e.g. Llama 2 and Gemma refuse roles out of turn
                continue
            got = tessera(path, msgs, gen)
            assert (bos if bos_first else "") + got == want, (msgs, gen)
            compared += 1
    assert compared >= 8


def test_plain_without_template_is_the_servers_text():
    msgs = [(S, "Be brief."), (U, "Hi"), (A, "Hello"), (U, "A story")]
    r = subprocess.run([str(CHAT_FORMAT), "--family", "plain"],
                       input=json.dumps([{"role": r, "content": c} for r, c in msgs]).encode(),
                       capture_output=True, check=True, timeout=30)
    assert r.stdout.decode() == "Be brief.\n\nUser: Hi\nAssistant: Hello\nUser: A story\nAssistant:"


@pytest.fixture(scope="module")
def s260k_chatml():
    """stories260K served with --chat-template chatml."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.M260K), "-z", str(tsr_serve.TOK512),
                            "--slots", "1", "--chat-template", "chatml"])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def test_serve_chat_template_override(s260k_chatml):
    c = openai.OpenAI(base_url=s260k_chatml.url + "/v1", api_key="none", max_retries=0,
                      timeout=60)
    msgs = [{"role": "system", "content": "Tell a story."}, {"role": "user", "content": "A cat"}]
    r = c.chat.completions.create(model="stories260K.bin", messages=msgs, max_tokens=16,
                                  temperature=0)
    prompt = ("<|im_start|>system\nTell a story.<|im_end|>\n<|im_start|>user\nA cat<|im_end|>\n"
              "<|im_start|>assistant\n")
    plain = c.completions.create(model="stories260K.bin", prompt=prompt, max_tokens=16,
                                 temperature=0)
    assert r.choices[0].message.content == plain.choices[0].text
    assert r.usage.prompt_tokens == plain.usage.prompt_tokens
    assert r.usage.prompt_tokens > 30      # the ChatML markup was tokenized, not the plain text
