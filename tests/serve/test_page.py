"""The playground page in a real browser: Debian's headless Chromium,
driven by Selenium through Debian's chromedriver.  It runs one generation,
presses Stop, steers, and leaves a screenshot in build/serve-test/."""
import os
import re
import shutil
import tempfile

import pytest

import tsr_serve

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

# Selenium must not look for browsers or drivers on the network.
os.environ["SE_OFFLINE"] = "true"
os.environ["SE_AVOID_STATS"] = "true"


@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.fail("chromium and chromium-driver are needed (make deps)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="tsr-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-default-apps", "--window-size=1000,820",
                 "--user-data-dir=" + profile,
                 # nothing but this machine: every other name fails to resolve
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]:
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def s15m_long():
    """The stories15M shape at a 2048-token context, generations of up to
    2000 tokens: the stop below lands mid-generation however fast the
    machine decodes (240 tokens took under 0.1 s on a Zen 5 VM, before the
    click arrived)."""
    srv = tsr_serve.Server(["-m", str(tsr_serve.s15m_long_model()), "-z", str(tsr_serve.TOK32K),
                            "--slots", "1", "--max-tokens", "2000"])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def test_generate_stop_steer(browser, s15m_long):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    wait = WebDriverWait(browser, 60, poll_frequency=0.02)
    status = lambda: browser.find_element(By.ID, "status").text

    browser.get(s15m_long.url + "/")
    assert browser.title == "tessera playground"
    # the first state says what the page does, not an error: it connects on Generate
    assert status() == "press Generate to open a session (nothing is connected before)"
    mt = browser.find_element(By.ID, "max-tokens")
    mt.clear()
    mt.send_keys("2000")
    browser.find_element(By.ID, "generate").click()
    wait.until(lambda d: re.match(r"generating: ([5-9]|\d\d+) tokens", status()))
    browser.find_element(By.ID, "stop").click()
    wait.until(lambda d: status().startswith("done:"))
    assert status().startswith("done: interrupted"), status()
    n = int(re.search(r"· (\d+) tokens", status()).group(1))
    assert 5 <= n < 2000
    out = browser.find_element(By.ID, "out").text
    # what streamed in is the start of the greedy text tessera run prints
    want = tsr_serve.run_text("Once upon a time", n + 8, model=tsr_serve.s15m_long_model(),
                              tok=tsr_serve.TOK32K)
    assert out.startswith("Once upon a time") and len(out) > len("Once upon a time")
    assert want.startswith(out), (out[:80], want[:80])

    # steer mid-session: the text is appended, and generation goes on from the KV cache
    mt.clear()
    mt.send_keys("12")
    browser.find_element(By.ID, "steer-text").send_keys(" The dog said")
    browser.find_element(By.ID, "steer").click()
    wait.until(lambda d: status().startswith("done: length"))
    assert "· 12 tokens" in status()
    assert browser.find_element(By.CSS_SELECTOR, "#out .steer").text == " The dog said"
    tsr_serve.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(tsr_serve.ARTIFACTS / "serve-page.png"))
