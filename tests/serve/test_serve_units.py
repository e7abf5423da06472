"""The server's parts without a server: store generations, matching, table views, events,
uploads' names, the token file, the bind check, asks' cancellation, and the CLI commands."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.rank import matched_rows, question_patterns
from tablequest.serve import ServeError, check_bind, is_loopback, load_or_create_token
from tablequest.serve.asks import AskCancelled, AskJob, StreamingTrace
from tablequest.serve.events import describe_event, render_markdown
from tablequest.serve.stores import StoreManager
from tablequest.serve.tables import mark, matched_rows_fast, table_view
from tablequest.serve.uploads import safe_name
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
    assert [c.classes for c in view.body[2].cells][2] == ["evidence"]
    assert view.body[0].classes == ["matched"] and view.body[0].cells[0].parts == [("Mirrow", True)]
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
    assert rank["title"] == "grep ranking · 1 tables" and "t1  score 1.0" in rank["lines"]
    run = describe_event({"t": 0, "kind": "exec", "step": 2, "code": "df.head()", "ok": False,
                          "observation": "KeyError", "seconds": 0.1})  # fmt: skip
    assert run["title"] == "code run · step 2 · failed · 0.1 s" and run["output"] == "KeyError"
    error = describe_event({"t": 0, "kind": "error", "error": "X", "message": "boom",
                            "traceback": "Traceback..."})  # fmt: skip
    assert error["error"] and error["output"] == "Traceback..."
    decision = describe_event({"t": 0, "kind": "decision", "stage": "refine", "action": "select"})
    assert decision["title"] == "decision · refine · select"


def test_markdown_reports_render_inert() -> None:
    html = render_markdown("# R\n<script>x()</script>\n[a](javascript:x()) <img src=x onerror=y>")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and "<img src=x" not in html


def test_upload_names_are_chosen_by_the_server() -> None:
    digest = "ab" * 32
    assert safe_name("../../etc/passwd", digest) == f"passwd-{digest[:12]}"
    assert (
        safe_name("C:\\x\\Quarterly Results.XLSX", digest)
        == f"Quarterly-Results-{digest[:12]}.xlsx"
    )
    assert safe_name("run.sh", digest) == f"run-sh-{digest[:12]}"
    assert safe_name(None, digest) == f"upload-{digest[:12]}"
    assert safe_name("..", digest) == f"upload-{digest[:12]}"


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
    assert missing.exit_code == 1 and "cannot read trace" in missing.output


def test_serve_command_refuses_an_unsafe_token_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("a-long-enough-token-0123456789\n")
    os.chmod(token, 0o644)
    result = runner.invoke(
        app, ["serve", "--token-file", str(token), "--store", str(tmp_path / "s")]
    )
    assert result.exit_code == 2 and "chmod 600" in result.output


def test_serve_command_prints_a_new_token_once_and_builds_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tablequest.serve as serve_pkg

    seen: list[object] = []
    monkeypatch.setattr(serve_pkg, "run_server", lambda config: seen.append(config))
    token_file = tmp_path / "token"
    args = ["serve", "--token-file", str(token_file), "--store", str(tmp_path / "s.duckdb"),
            "--port", "9999", "--llm-url", "http://127.0.0.1:1/v1", "--model", "m",
            "--max-asks", "3", "--no-cache"]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    token = token_file.read_text().strip()
    assert token in first.output and f"/login?token={token}" in first.output.replace("\n", "")
    second = runner.invoke(app, args)
    assert second.exit_code == 0 and token not in second.output
    config = seen[-1]
    assert config.port == 9999 and config.token == token and config.limits.max_asks == 3  # type: ignore[attr-defined]
    assert config.llm_config.cache is False and config.host == "127.0.0.1"  # type: ignore[attr-defined]
    public = runner.invoke(app, [*args, "--host", "0.0.0.0"])
    assert public.exit_code == 0  # a token is always there, so a public bind may start
