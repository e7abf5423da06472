"""The web app in a real browser: Debian's chromium driven by Playwright.

One server and one browser for the module: log in with the link, browse a table with merged
multi-level headers, upload a file, search with highlighted rows, ask with the trajectory
appearing live (the stub LLM holds the ask until the first events are on the page), evidence
cells highlighted, a DTR-like result with its report and chart, the trace viewer, and hostile
table content that must not execute (a page-side flag: `window.__xss` stays undefined).

Set TABLEQUEST_SCREENSHOT=docs/serve.png to write the README's screenshot.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequest.methods import Result, register_method, unregister_method
from tablequest.methods.options import NoOptions

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "/usr/bin/chromium is absent: apt-get install -y chromium chromium-driver "
        "(.ci/run installs it)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")

TOKEN = "test-token-0123456789abcdef"
SCREENSHOT = os.environ.get("TABLEQUEST_SCREENSHOT")  # read before the suite cleans TABLEQUEST_*
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update"]  # fmt: skip
REPORT = "# Findings\n\nDepths **vary** a lot.\n\n<script>window.__xss=9</script>\n\n| lake | m |\n|---|---|\n| Quillsee | 61 |\n"  # noqa: E501


class ReportMethod:
    """A DTR-like method: a markdown report and one PNG chart in its Result's details."""

    name = "test-report"

    def __init__(self, options: Any, context: Any) -> None:
        self.chart = Path(os.environ["TQ_TEST_CHART"])

    def answer(self, question: str, source: Any, **_: Any) -> Result:
        return Result(
            answer="Quillsee is deepest",
            status="answered",
            details={"report": REPORT, "charts": [str(self.chart)]},
        )

    def close(self) -> None:
        pass


def _chart(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 2.5))
    ax.bar(["Mirrow", "Tarnel", "Quillsee"], [38, 12, 61])
    ax.set_ylabel("depth (m)")
    fig.savefig(path)
    plt.close(fig)
    return path


@pytest.fixture(scope="module")
def report_method(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    chart = _chart(tmp_path_factory.mktemp("chart") / "depths.png")
    os.environ["TQ_TEST_CHART"] = str(chart)
    register_method(
        "test-report", ReportMethod, NoOptions, input="none", needs_llm=False,
        description="a report and a chart (DTR-shaped result)",
    )  # fmt: skip
    yield
    unregister_method("test-report")
    os.environ.pop("TQ_TEST_CHART", None)


@pytest.fixture(scope="module")
def page(server: Any, report_method: None) -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(20_000)
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.problems = problems  # type: ignore[attr-defined]
        response = page.goto(f"{server.url}/login?token={TOKEN}")
        assert response is not None and response.ok and page.url == f"{server.url}/"
        yield page
        context.close()
        browser.close()


def no_xss(page: Any) -> None:
    assert page.evaluate("typeof window.__xss") == "undefined"
    csp = [p for p in page.problems if "Content Security Policy" in p or "pageerror" in p]
    assert csp == []


def test_corpus_and_a_table_with_merged_multi_level_headers(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/")
    page.get_by_role("link", name=re.compile(r"lakes\.html$")).click()
    table = page.locator("table.tq")
    assert table.locator("caption").inner_text() == "Lakes of Varnholm"
    head = table.locator("thead tr")
    assert head.count() == 2
    assert head.nth(0).locator("th", has_text="Size").get_attribute("colspan") == "2"
    assert head.nth(0).locator("th", has_text="Lake").get_attribute("rowspan") == "2"
    assert table.locator("td", has_text="North").get_attribute("rowspan") == "2"
    no_xss(page)


def test_upload_a_file(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/")
    page.set_input_files(
        "#upload-files",
        files=[{"name": "comets.csv", "mimeType": "text/csv",
                "buffer": b"Comet,Period years\nHalvorsen,76\nBrisk,3.3\n"}],
    )  # fmt: skip
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-report:has-text('1 tables stored')")
    assert page.locator("#tables a", has_text="comets").count() == 1
    page.set_input_files(
        "#upload-files",
        files=[{"name": "junk.xlsx", "mimeType": "application/octet-stream", "buffer": b"junk"}],
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-report.error")
    assert "junk.xlsx" in page.locator("#upload-report").inner_text()


def test_search_highlights_matched_rows(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/search")
    page.fill("input[name=q]", "depth of Quillsee")
    page.get_by_role("button", name="Search").click()
    first = page.locator("article.hit").first
    assert "lakes.html" in first.locator("h2").inner_text()
    matched = first.locator("tr.matched")
    assert matched.count() == 1 and "Quillsee" in matched.inner_text()
    assert matched.locator("mark").first.inner_text() == "Quillsee"


def test_ask_shows_the_trajectory_live_and_highlights_evidence(
    page: Any, server: Any, stub_gate: Any
) -> None:
    page.goto(f"{server.url}/ask")
    page.fill("#question", "How deep is Quillsee?")
    stub_gate.clear()  # the first LLM call waits: only the first events can be on the page
    try:
        page.get_by_role("button", name="Ask").click()
        page.wait_for_selector("#trajectory li.kind-decision")
        assert page.locator("#trajectory li.kind-llm_call").count() == 0
        assert page.locator("#answer").inner_text() == ""
        assert "Running" in page.locator("#ask-status").inner_text()
    finally:
        stub_gate.set()
    page.wait_for_selector("#answer-text")
    assert page.locator("#answer-text").inner_text() == "61"
    kinds = page.locator("#trajectory li .kind").all_inner_texts()
    assert {"LLM_CALL", "RANK", "PREVIEW", "QA"} <= {k.upper() for k in kinds}, kinds
    cell = page.locator("table.tq td.evidence")
    assert cell.count() == 1 and cell.inner_text() == "61"
    assert (cell.get_attribute("data-row"), cell.get_attribute("data-col")) == ("2", "2")
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)
    page.locator("#trace-link a").click()
    page.wait_for_selector("ol.events li.kind-llm_call")
    assert "LLM calls" in page.locator("#trace-summary").inner_text()
    no_xss(page)


def test_a_report_and_its_chart_render_inline(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/ask?method=test-report")
    page.fill("#question", "Which lake is deepest?")
    page.get_by_role("button", name="Ask").click()
    page.wait_for_selector("#report h1")
    assert page.locator("#report h1").inner_text() == "Findings"
    assert page.locator("#report td", has_text="Quillsee").count() == 1
    assert "<script>" in page.locator("#report").inner_text()  # shown as text
    image = page.locator("#charts img")
    image.wait_for()
    assert page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
    )
    no_xss(page)


def test_hostile_table_content_stays_inert(page: Any, server: Any) -> None:
    with server.client() as client:
        tid = client.get("/v1/tables", params={"q": "hostile"}).json()["tables"][0]["table_id"]
    page.goto(f"{server.url}/tables/{tid}")
    text = page.locator("table.tq").inner_text()
    assert "<script>window.__xss=1</script>Name" in text and "javascript:window.__xss=4" in text
    assert page.locator("table.tq script, table.tq img, table.tq a").count() == 0
    page.goto(f"{server.url}/search?q=ignore+previous+instructions+token")
    assert page.locator("article.hit").count() >= 1
    page.goto(f"{server.url}/ask?table_id={tid}&method=direct")
    page.fill("#question", "<img src=x onerror=window.__xss=7> what is here?")
    page.get_by_role("button", name="Ask").click()
    page.wait_for_selector("#answer-text")
    page.mouse.move(10, 10)
    no_xss(page)
