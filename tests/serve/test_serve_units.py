"""The server's parts without a server: store generations, matching, table views, events,
uploads' names, the token file, the bind check, asks' cancellation, and the CLI commands."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.testdata import free_port
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.lexical.rank import matched_rows, question_patterns
from tablequest.serve.answer import cell_names, short_name
from tablequest.serve.events import describe_event, render_markdown
from tablequest.serve.tables import mark, table_view
from tablequest.serve.tracelist import trace_row
from tablequest.serve.uploads import safe_name
from tablequest.service import (
    ServeConfig,
    ServeError,
    StoreManager,
    check_bind,
    default_token_file,
    is_loopback,
    load_or_create_token,
    matched_rows_fast,
    shown_token_file,
)
from tablequest.service.asks import AskCancelled, AskJob, StreamingTrace
from tablequest.table import Merge, Table, compile_pattern
from tablequest.trace import Trace

runner = CliRunner()

TRICKY = [
    [["Name", "Notes"], ["Straße", "ſtraße | x"], ["İstanbul", "K-line (Kelvin)"],
     ["naïve café", "two\nlines"], ["a|b", "C++ and c#"], ["O'Brien", "3.14, 2,000"]],
    [["Lake", "Depth"], ["Quillsee", "61"], ["quillsee-2", "61m"], ["QUILLSEE", "—"]],
]  # fmt: skip


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> StoreManager:
    tmp = tmp_path_factory.mktemp("units")
    for i, rows in enumerate(TRICKY):
        Path(tmp / f"t{i}.json").write_text(json.dumps(rows), encoding="utf-8")
    with Store(tmp / "s.duckdb") as store:
        assert ingest(store, [tmp / "t0.json", tmp / "t1.json"]).tables_stored == 2
    return StoreManager(tmp / "s.duckdb")


WORDS = "straße strasse istanbul kelvin k line naïve café lines two b c brien o'brien 3.14 2,000"
WORDS += " quillsee 61 m 2"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS.split()) | st.text(min_size=1, max_size=6), max_size=5))
def test_fast_matched_rows_equal_matched_rows(manager: StoreManager, words: list[str]) -> None:
    question = " ".join(words)
    with manager.reader() as store:
        for tid in store.table_ids():
            patterns = question_patterns(question)
            assert matched_rows_fast(store, tid, patterns) == matched_rows(store, tid, patterns)
            odd = [*patterns, r"\d{2}", "e\\s"]  # other regexes: the line-by-line route
            assert matched_rows_fast(store, tid, odd) == matched_rows(store, tid, odd)


def test_readers_keep_their_generation_while_an_ingest_swaps_in(
    manager: StoreManager, tmp_path: Path
) -> None:
    extra = tmp_path / "more.csv"
    extra.write_text("Comet,Period\nHalvorsen,76\n", encoding="utf-8")
    with manager.reader() as old:
        before = len(old)
        generation = manager.generation
        report = manager.ingest([extra])
        assert report.tables_stored == 1 and manager.generation == generation + 1
        assert len(old) == before and old.get(old.table_ids()[0]).n_rows > 0  # still open
        with manager.reader() as new:
            assert len(new) == before + 1 and new.fingerprint() != old.fingerprint()
    assert not list(tmp_path.parent.glob("*.next-*"))
    unchanged = manager.ingest([extra])
    assert unchanged.tables_unchanged == 1 and manager.generation == generation + 1


def test_table_view_keeps_header_levels_merges_and_marks_evidence() -> None:
    table = Table.from_rows(
        [["Lake", "Size", "Size", "Region"], ["Lake", "Area", "Depth", "Region"],
         ["Mirrow", "412", "38", "North"], ["Tarnel", "95", "12", "North"],
         ["Quillsee", "230", "61", "South"]],
        n_header_rows=2,
        merges=[Merge(0, 0, 1, 0), Merge(0, 1, 0, 2), Merge(0, 3, 1, 3), Merge(2, 3, 3, 3)],
    )  # fmt: skip
    view = table_view(table, "t1", evidence=[(2, 2)], matched=[0], patterns=[r"\bmirrow\b"])
    top = view.header[0].cells
    assert [(c.text, c.rowspan, c.colspan) for c in top] == [
        ("Lake", 2, 1), ("Size", 1, 2), ("Region", 2, 1)
    ]  # fmt: skip
    assert [c.text for c in view.header[1].cells] == ["Area", "Depth"]
    assert [c.rowspan for c in view.body[0].cells] == [1, 1, 1, 2]
    assert len(view.body[1].cells) == 3  # the merged Region cell covers it
    assert [c.classes for c in view.body[2].cells][2] == ["evidence", "num"]
    assert [c.classes for c in view.body[2].cells][:2] == [[], ["num"]]  # numbers align right
    assert view.body[0].classes == ["matched"] and view.body[0].cells[0].parts == [("Mirrow", True)]
    by_how = table_view(table, "t1", evidence={(2, 2): "untracked", (2, 1): "cited"})
    assert [c.classes for c in by_how.body[2].cells][1:3] == [
        ["evidence", "evidence-cited", "num"], ["evidence-untracked", "evidence-uncertain", "num"]
    ]  # fmt: skip
    window = table_view(table, "t1", rows=[0, 2], evidence=[(2, 2)])
    assert [r.row_id for r in window.body] == [0, 2] and window.body[1].classes == ["gap"]
    assert window.truncated and window.shown_rows == 2


def test_mark_splits_overlapping_matches() -> None:
    pats = [compile_pattern("ab"), compile_pattern("bc"), compile_pattern(r"\bz")]
    assert mark("xabcz", pats) == [("x", False), ("ab", True), ("c", True), ("z", False)]
    assert mark("none", pats) == [("none", False)]


def test_describe_event_for_each_kind() -> None:
    llm = describe_event({"t": 1.5, "kind": "llm_call", "model": "m", "prompt_tokens": 3,
                          "completion_tokens": 2, "latency_s": 0.25, "cached": True,
                          "messages": [{"role": "user", "content": "\nWhich lake?"}],
                          "replies": ['{"answer": "61"}']})  # fmt: skip
    assert llm["title"] == "m · 3+2 tokens · 0.25 s · cache hit"
    assert llm["lines"] == ["> Which lake?", '< {"answer": "61"}'] and "[user]" in llm["code"]
    rank = describe_event({"t": 0, "kind": "rank", "patterns": ["a"], "hits": [
        {"table_id": "t1", "score": 1.0}]})  # fmt: skip
    assert rank["title"] == "grep ranking · 1 table" and "t1 · score 1" in rank["lines"]
    run = describe_event({"t": 0, "kind": "exec", "step": 2, "code": "df.head()", "ok": False,
                          "observation": "KeyError", "seconds": 0.1})  # fmt: skip
    assert run["title"] == "code run · step 2 · failed · 0.1 s" and run["output"] == "KeyError"
    error = describe_event({"t": 0, "kind": "error", "error": "X", "message": "boom",
                            "traceback": "Traceback..."})  # fmt: skip
    assert error["error"] and error["output"] == "Traceback..."
    decision = describe_event({"t": 0, "kind": "decision", "stage": "refine", "action": "select"})
    assert decision["title"] == "decision · refine · select"


def test_events_read_with_rounded_numbers_and_table_names() -> None:
    tid, other = "tf44c874910295b0", "t0000000000000ab"
    names = {tid: "lakes.html"}.get
    rank = describe_event(
        {"t": 0, "kind": "rank", "hits": [{"table_id": tid, "score": 0.123456789},
                                          {"table_id": other, "score": 2 / 3}]},
        names,
    )  # fmt: skip
    assert rank["lines"] == [f"lakes.html ({tid}) · score 0.123", f"{other} · score 0.667"]
    chosen = describe_event(
        {"t": 0, "kind": "decision", "stage": "refine", "selected": [tid],
         "scores": {"a": 0.98765432, "b": [1.23456, 2]}},
        names,
    )  # fmt: skip
    assert f'selected: ["lakes.html ({tid})"]' in chosen["lines"]
    assert 'scores: {"a": 0.988, "b": [1.235, 2]}' in chosen["lines"]
    asked = describe_event(
        {"t": 0, "kind": "decision", "stage": "request", "question": "How deep?",
         "method": "auto", "table_ids": [tid]},
        names,
    )  # fmt: skip
    assert asked["title"] == "request · auto"
    assert asked["lines"] == ["question: How deep?", f"tables: lakes.html ({tid})"]
    ended = describe_event(
        {"t": 0, "kind": "decision", "stage": "result", "status": "failed",
         "reason": "LLMUnreachable: http://x"},
    )  # fmt: skip
    assert (
        ended["title"] == "result · failed" and "reason: LLMUnreachable: http://x" in ended["lines"]
    )
    assert tid in rank["raw"] and "lakes.html" not in rank["raw"]  # the raw event stays raw


def test_markdown_reports_render_inert() -> None:
    html = render_markdown("# R\n<script>x()</script>\n[a](javascript:x()) <img src=x onerror=y>")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and "<img src=x" not in html


def test_upload_names_are_chosen_by_the_server_and_stay_readable() -> None:
    digest = "ab" * 32
    folder = digest[:12]
    assert safe_name("../../etc/passwd", digest) == f"{folder}/passwd"
    assert safe_name("C:\\x\\Quarterly Results.XLSX", digest) == f"{folder}/Quarterly Results.XLSX"
    assert safe_name("Länder Übersicht 2024.csv", digest) == f"{folder}/Länder Übersicht 2024.csv"
    assert safe_name("run.sh", digest) == f"{folder}/run_sh"  # no reader: no extension
    assert safe_name(".bashrc", digest) == f"{folder}/bashrc"
    assert safe_name("a\x00b\nc\x1b.csv", digest) == f"{folder}/a b c.csv"
    assert safe_name(None, digest) == f"{folder}/upload"
    assert safe_name("..", digest) == f"{folder}/upload"
    long = safe_name("ü" * 300 + ".csv", digest)
    assert long.endswith(".csv") and len(long.split("/")[1].encode()) <= 180


def test_token_file_is_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "token"
    token, created = load_or_create_token(path)
    assert created and len(token) >= 40 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == (token, False)
    os.chmod(path, 0o644)
    with pytest.raises(ServeError, match="chmod 600"):
        load_or_create_token(path)
    os.chmod(path, 0o600)
    path.write_text("\n")
    with pytest.raises(ServeError, match="empty"):
        load_or_create_token(path)


def test_the_token_file_is_named_without_server_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: what the login page shows of the token file, on any bind."""
    from fastapi.testclient import TestClient

    from tablequest.serve import create_app

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    assert shown_token_file(default_token_file()) == "~/.config/tablequest/serve-token"
    assert shown_token_file(tmp_path / "secret" / "my-token") == "my-token"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))  # not under home
    assert shown_token_file(default_token_file()) == "<user config dir>/serve-token"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    Store(tmp_path / "s.duckdb").close()
    token, _ = load_or_create_token(default_token_file())
    for host in ("127.0.0.1", "0.0.0.0"):
        config = ServeConfig(
            store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=token,
            token_file=default_token_file(), host=host,
        )  # fmt: skip
        with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
            page = client.get("/login").text
        assert '<code class="path">~/.config/tablequest/serve-token</code>' in page, host
        assert str(tmp_path) not in page and "(the file given to" not in page


def test_bind_check() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "x" * 32)
    with pytest.raises(ServeError, match=r"refusing to bind '0\.0\.0\.0' without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ServeError, match="too short"):
        check_bind("127.0.0.1", "short")


def test_a_cancelled_ask_stops_at_its_next_event_and_records_why() -> None:
    job = AskJob(id="j", question="q", method="m", deadline=time.monotonic() + 60)
    trace = StreamingTrace(None, job)
    trace.event("decision", stage="start")
    job.cancel("the client disconnected")
    with pytest.raises(AskCancelled, match="disconnected"):
        trace.event("decision", stage="next")
    trace.event("error", error="AskCancelled")  # later events are recorded, not raised
    assert [e["stage"] for e in job.events[:2]] == ["start", "next"] and len(job.events) == 3
    late = AskJob(id="k", question="q", method="m", deadline=time.monotonic() - 1)
    with pytest.raises(AskCancelled, match="time limit"):
        StreamingTrace(None, late).event("decision", stage="start")


def test_follow_yields_events_as_they_come() -> None:
    job = AskJob(id="j", question="q", method="m", deadline=time.monotonic() + 60)

    async def consume() -> list[int]:
        seen = []
        async for item in job.follow(heartbeat=0.05):
            if item is not None:
                seen.append(item[0])
        return seen

    async def main() -> list[int]:
        task = asyncio.create_task(consume())
        for i in range(3):
            await asyncio.sleep(0.01)
            job.add({"t": i, "kind": "decision"})
        job.finish(None, {"code": "x", "message": "y"})
        return await task

    assert asyncio.run(main()) == [0, 1, 2]


def test_trace_view_writes_one_inert_html_file(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "run.jsonl")
    trace.event("decision", stage="start", question="<script>alert(1)</script>")
    trace.event("exec", step=1, code="print('<b>')", ok=True, observation="<b>")
    result = runner.invoke(app, ["trace", "view", str(tmp_path / "run.jsonl")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<link" not in html and "<script" not in html and ".evidence" in html
    assert "2 events" in html and "code run · step 1 · ok" in html
    out = tmp_path / "x" / "view.html"
    missing = runner.invoke(app, ["trace", "view", str(tmp_path / "nope.jsonl"), "--out", str(out)])
    assert missing.exit_code == 2 and "not found" in missing.output  # bad input


def test_serve_command_refuses_an_unsafe_token_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("a-long-enough-token-0123456789\n")
    os.chmod(token, 0o644)
    result = runner.invoke(
        app,
        ["serve", "--token-file", str(token), "--store", str(tmp_path / "s"), "--create",
         "--port", str(free_port())],
    )  # fmt: skip
    assert result.exit_code == 2 and "chmod 600" in result.output


def test_serve_command_prints_a_new_token_once_and_builds_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.serve as serve_pkg

    seen: list[object] = []
    monkeypatch.setattr(serve_pkg, "run_server", lambda config: seen.append(config))
    token_file = tmp_path / "token"
    Store(tmp_path / "s.duckdb").close()
    port = free_port()
    args = ["serve", "--token-file", str(token_file), "--store", str(tmp_path / "s.duckdb"),
            "--port", str(port), "--llm-url", "http://127.0.0.1:1/v1", "--model", "m",
            "--max-asks", "3", "--no-cache"]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    token = token_file.read_text().strip()
    assert token in first.output and f"/login?token={token}" in first.output.replace("\n", "")
    second = runner.invoke(app, args)
    assert second.exit_code == 0 and token not in second.output
    for run in (first, second):  # the token file's path on every start
        assert f"Token file: {token_file}" in run.output
    config = seen[-1]
    assert config.port == port and config.token == token and config.limits.max_asks == 3  # type: ignore[attr-defined]
    assert config.llm_config.cache is False and config.host == "127.0.0.1"  # type: ignore[attr-defined]
    assert config.token_file == token_file  # type: ignore[attr-defined]
    public = runner.invoke(app, [*args, "--host", "0.0.0.0"])
    assert public.exit_code == 0  # a token is always there, so a public bind may start


def test_serve_command_refuses_a_missing_store_unless_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.serve as serve_pkg

    seen: list[object] = []
    monkeypatch.setattr(serve_pkg, "run_server", lambda config: seen.append(config))
    missing = tmp_path / "missing.duckdb"
    base = ["serve", "--token-file", str(tmp_path / "token"), "--store", str(missing),
            "--port", str(free_port())]  # fmt: skip
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and seen == [] and not missing.exists()
    assert "no store at" in refused.output and "--create" in refused.output
    created = runner.invoke(app, [*base, "--create"])
    assert created.exit_code == 0, created.output
    assert seen[-1].store == missing  # type: ignore[attr-defined]
    table = tmp_path / "lakes.csv"
    table.write_text("Lake,Depth\nQuillsee,61\n", encoding="utf-8")
    typo = runner.invoke(app, ["serve", "--token-file", str(tmp_path / "token"), "--store",
                               str(table), "--create"])  # fmt: skip
    assert typo.exit_code == 2 and "not a store" in typo.output and len(seen) == 1


def test_evidence_cells_are_named_by_column_and_row() -> None:
    lakes = Table.from_rows(
        [["Lake", "Size", "Size"], ["Lake", "Area", "Depth"], ["Mirrow", "412", "38"],
         ["", "95", "12"]],
        n_header_rows=2,
    )  # fmt: skip
    assert cell_names(lakes, 0, 2) == ("Size / Depth", "Mirrow")
    assert cell_names(lakes, 1, 1) == ("Size / Area", "row 1")  # no label in the first column
    assert cell_names(lakes, 0, 0) == ("Lake", "row 0")  # the label cell itself
    assert cell_names(lakes, 9, 1) == ("Size / Area", "row 9")
    years = Table.from_rows(
        [["Region", "Year", "Sales"], ["North", "2023", "5"], ["North", "2024", "7"]],
        n_header_rows=1,
        n_header_cols=2,
    )
    assert cell_names(years, 1, 2) == ("Sales", "North / 2024")
    assert short_name("/data/x/Länder.xlsx#Sheet 1") == "Länder.xlsx#Sheet 1"


def test_trace_rows_read_question_method_status_and_time(tmp_path: Path) -> None:
    cli = Trace(tmp_path / "20261204-101500-1234abcd.jsonl")  # a CLI trace: no request event
    cli.event("decision", stage="ask", method="seek", options="x", task="tableqa")
    cli.event("decision", stage="start", question="How deep?", method="seek")
    cli.event("llm_call", model="m", replies=["x" * 200_000])  # a long line before the end
    cli.event("decision", stage="end", status="insufficient")
    row = trace_row("20261204-101500-1234abcd", cli.path)  # type: ignore[arg-type]
    assert (row.question, row.method, row.status, row.time) == (
        "How deep?", "seek", "insufficient", "2026-12-04 10:15"
    )  # fmt: skip
    broken = Trace(tmp_path / "other.jsonl")
    broken.event("decision", stage="request", question="Q?", method="auto")
    broken.event("error", stage="ask", error="X", message="boom")
    row = trace_row("other", broken.path)  # type: ignore[arg-type]
    assert (row.question, row.method, row.status) == ("Q?", "auto", "failed")
    running = Trace(tmp_path / "running.jsonl")
    running.event("decision", stage="request", question="Q?", method="auto")
    assert trace_row("running", running.path).status == "unfinished"  # type: ignore[arg-type]


def test_a_request_raises_cost_bearing_options_up_to_the_servers_maximum(tmp_path: Path) -> None:
    from tablequest.methods import get_method, resolve_options
    from tablequest.service import AskSpec, CostlyOption
    from tablequest.service.state import refuse_costly_options

    rag = get_method("rag")
    operator = tmp_path / "operator.toml"
    operator.write_text("[methods.rag]\nsc = 20\n")  # named by the operator: trusted

    def check(options: dict[str, object], files: list[Path], steps: int | None = None) -> None:
        spec = AskSpec(question="q", method="rag", options=options, steps=steps)
        asked = resolve_options(rag, options=options, config_paths=files)
        refuse_costly_options(rag, spec, asked, resolve_options(rag, config_paths=files))

    check({"sc": 8, "max_depth": 10}, [], steps=100)  # at the bounds
    check({}, [operator])  # what the operator set stands
    check({"sc": 20}, [operator])
    with pytest.raises(CostlyOption, match=r"option 'sc' of method rag = 9 .*\(8\)"):
        check({"sc": 9}, [])
    with pytest.raises(CostlyOption, match=r"option 'sc' of method rag = 21"):
        check({"sc": 21}, [operator])
    with pytest.raises(CostlyOption, match=r"steps = 101"):
        check({}, [], steps=101)
    assert CostlyOption.http_status == 422 and CostlyOption.exit_code == 2


# -- the short way of GET /v1/search (serve.fastsearch) ---------------------------------------
def test_plain_search_args_take_only_what_the_route_reads_the_same_way() -> None:
    from tablequest.serve.fastsearch import DEFAULT_ENCODER, plain_search_args

    assert plain_search_args(b"q=lake+depth") == ("lake depth", 5, "grep", DEFAULT_ENCODER, False)
    assert plain_search_args(b"k=100&q=%C3%A9t%C3%A9&method=bm25&preview=true&encoder=e&x=1") == (
        "été", 100, "bm25", "e", True
    )  # fmt: skip
    for declined in (b"", b"q=", b"q=+", b"q=a&q=b", b"q=a&k=0", b"q=a&k=101", b"q=a&k=05",
                     b"q=a&k=x", b"q=a&method=dense", b"q=a&preview=yes",
                     b"q=" + b"a" * 1001):  # fmt: skip
        assert plain_search_args(declined) is None, declined


def test_fast_search_defaults_are_the_routes() -> None:
    from tablequest.serve.api import search
    from tablequest.serve.fastsearch import DEFAULTS, NAMES

    params = inspect.signature(search).parameters
    assert set(NAMES) == set(params) - {"request"}
    for name, default in DEFAULTS.items():
        route_default = params[name].default
        assert (str(route_default).lower() if name == "preview" else str(route_default)) == default


def test_the_server_spaces_full_collections_and_keeps_young_ones() -> None:
    from tablequest.serve.app import FULL_COLLECTION_EVERY, _space_full_collections

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        _space_full_collections()
        assert gc.get_threshold() == (700, 10, FULL_COLLECTION_EVERY) and FULL_COLLECTION_EVERY > 10
    finally:
        gc.set_threshold(*before)
