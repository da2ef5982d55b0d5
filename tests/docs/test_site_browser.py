"""The built docs site in a real headless browser (Debian's chromium through chromium-driver,
driven by selenium): every page loads, every Mermaid block renders to an SVG, and the console
stays free of errors.

The site is built as `make docs` builds it, plus one script: Mermaid from `.ci/node_modules`
(the npm package `.ci/package.json` pins), since this machine reaches no CDN; Material uses a
`mermaid` already on the page instead of fetching its own. It is served from 127.0.0.1 for the
test's duration. Without chromium, chromium-driver or that package the test skips with the
reason, except under CI (`CI` set), where they are part of the contract (`make tools`) and it
fails instead.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs.test_site import build, site_copy

MERMAID = REPO / ".ci" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
CHROMIUM = ("chromium", "chromium-browser")
PAGE_TIMEOUT_S = 30
RENDER_TIMEOUT_S = 30
BROKEN_WAIT_S = 5.0
"""How long a broken diagram is watched: every good one of the site renders well within it."""
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attach.call(this, Object.assign({}, init, {mode: "open"}));
};
"""
"""Material draws each diagram into a closed shadow root; opened, the test can see the SVG."""
RENDERED = """
const hosts = [...document.querySelectorAll("div.mermaid")];
return {
  left: document.querySelectorAll("pre.mermaid").length,
  svgs: hosts.filter(h => h.shadowRoot && h.shadowRoot.querySelector("svg")).length,
  errors: hosts.filter(h => h.shadowRoot && /Syntax error/.test(h.shadowRoot.textContent)).length,
};
"""


def _missing() -> list[str]:
    missing = []
    if not any(shutil.which(name) for name in CHROMIUM):
        missing.append("chromium")
    if not shutil.which("chromedriver"):
        missing.append("chromium-driver")
    if not MERMAID.is_file():
        missing.append(f"{MERMAID.relative_to(REPO)} (npm ci --prefix .ci)")
    return missing


def require_browser() -> None:
    """Skip the test when the browser or Mermaid is missing; under CI, fail instead."""
    if missing := _missing():
        message = f"{', '.join(missing)} not installed (run `make tools`)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """(base URL, folder) of the built site, served from 127.0.0.1 until the module ends."""
    require_browser()
    tmp = tmp_path_factory.mktemp("browser-site")
    root = site_copy(tmp)
    (root / "docs" / "javascripts").mkdir()
    shutil.copy(MERMAID, root / "docs" / "javascripts" / "mermaid.min.js")
    (root / "mkdocs-browser.yml").write_text(
        "INHERIT: mkdocs.yml\nextra_javascript:\n  - javascripts/mermaid.min.js\n",
        encoding="utf-8",
    )
    done = build(root, tmp / "site", config="mkdocs-browser.yml")
    assert done.returncode == 0, done.stderr
    handler = partial(_Quiet, directory=str(tmp / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp / "site"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(site):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(n) for n in CHROMIUM if shutil.which(n))
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(PAGE_TIMEOUT_S)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OPEN_SHADOW_ROOTS})
    try:
        yield driver
    finally:
        driver.quit()


def pages(folder: Path) -> list[str]:
    """Every page of the built site, as paths under it (the 404 page left out)."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*.html")
        if p.name != "404.html" and "assets" not in p.parts
    )


def mermaid_blocks(html: str) -> int:
    return len(re.findall(r'<pre class="mermaid">', html))


def test_every_page_loads_renders_its_diagrams_and_logs_no_error(site, browser) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    url, folder = site
    every = pages(folder)
    assert {"index.html", "first-rung.html", "trust-model.html", "concepts.html"} <= set(every)
    drawn = {}
    for page in every:
        wanted = mermaid_blocks((folder / page).read_text(encoding="utf-8"))
        browser.get(f"{url}/{page}")
        assert browser.execute_script("return document.readyState") == "complete", page
        assert browser.find_element("css selector", "article h1").text, page
        if wanted:
            WebDriverWait(browser, RENDER_TIMEOUT_S).until(
                lambda driver, wanted=wanted: driver.execute_script(RENDERED)["svgs"] == wanted,
                page,
            )
        state = browser.execute_script(RENDERED)
        assert state == {"left": 0, "svgs": wanted, "errors": 0}, page
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], page
        drawn[page] = wanted
    # The pictures the issue asks for: the two pools, the ladder, the program, the trust model,
    # and a real gate report's two charts.
    assert drawn["index.html"] == 1 and drawn["trust-model.html"] == 2
    assert drawn["concepts.html"] == 2 and drawn["first-rung.html"] == 2


def test_a_broken_diagram_draws_no_svg(site, browser) -> None:
    """A page whose Mermaid does not parse gets no diagram (or mermaid's error), in the time a
    good one renders: the check above fails on it."""
    import time

    url, folder = site
    page = (folder / "index.html").read_text(encoding="utf-8")
    broken = folder / "broken.html"
    broken.write_text(
        re.sub(r'<pre class="mermaid"><code>.*?</code></pre>', _broken, page, flags=re.S),
        encoding="utf-8",
    )
    try:
        browser.get(f"{url}/broken.html")
        deadline = time.monotonic() + BROKEN_WAIT_S
        while time.monotonic() < deadline:
            state = browser.execute_script(RENDERED)
            assert state["svgs"] == state["errors"], state  # an SVG only as mermaid's error
            time.sleep(0.25)
        browser.get_log("browser")  # drop this page's messages
    finally:
        broken.unlink()


def _broken(_: re.Match[str]) -> str:
    return '<pre class="mermaid"><code>flowchart LR\n    a -->|unclosed b\n</code></pre>'
