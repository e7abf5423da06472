"""The 5-line Python API (`tq.ask`, `tq.search`, `tq.open`) and the notebook displays,
including a real Jupyter kernel run through nbclient."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import tablequest as tq
from tablequest.corpus import Hit, Store
from tablequest.errors import BadValue
from tablequest.llm.stub import StubServer
from tablequest.methods.result import Result
from tablequest.notebook import Hits, StoredTables, store_path_for
from tablequest.table import CellRef, Merge, Table

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How long is the river Varna?"


def write_folder(root: Path) -> Path:
    folder = root / "tables"
    folder.mkdir()
    (folder / "rivers.csv").write_text("River,Length (km)\nVarna,412\nMesta,126\n")
    (folder / "cities.csv").write_text("City,Population\nOslo,709037\nZurich,415367\n")
    (folder / "notes.tsv").write_text("Name\tNote\n<script>alert(1)</script>\tx\n")
    return folder


def listing(folder: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in sorted(folder.rglob("*"))}


def test_five_lines_on_a_folder(tmp_path: Path, varna_reply: Any) -> None:
    folder = write_folder(tmp_path)
    before = listing(folder)
    with StubServer(varna_reply) as server:
        r = tq.ask(QUESTION, str(folder), llm=server.url)
        chats = [q for q in server.requests if q["path"].endswith("/chat/completions")]
        listed = [q for q in server.requests if q["path"] == "/v1/models"]
    assert r.status == "answered" and r.answer == "412"
    assert [(c.value, c.col) for c in r.evidence] == [("412", 1)]
    assert listed and chats and all(c["json"]["model"] == "stub-model" for c in chats)
    assert store_path_for(folder).is_file()  # the cached store, under the cache dir
    assert listing(folder) == before  # nothing written into the user's folder
    with tq.open(str(folder)) as corpus:  # second open: nothing re-ingested
        assert corpus.report is not None
        assert corpus.report.tables_stored == 0 and corpus.report.tables_unchanged == 3
        assert len(corpus.tables) == 3
        hits = corpus.search("river Varna", k=1)
        table = corpus.tables[hits[0].table_id]
        assert table.cell(0, 0) == "Varna"
        assert corpus.tables.name(hits[0].table_id).endswith("rivers.csv")
    assert tq.search("Varna", folder, k=1)[0].table_id == hits[0].table_id


def test_ask_without_llm_uses_the_configured_model_like_the_cli(
    tmp_path: Path, varna_reply: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_folder(tmp_path)
    assert tq.ask(QUESTION, str(folder)).status != "answered"  # nothing configured: no model
    with StubServer(varna_reply, model="configured-model") as server:
        monkeypatch.setenv("TABLEQUEST_LLM_URL", server.url)
        monkeypatch.setenv("TABLEQUEST_LLM_MODEL", "configured-model")
        r = tq.ask(QUESTION, str(folder), cache=False)
        chats = [q for q in server.requests if q["path"].endswith("/chat/completions")]
    assert r.status == "answered" and r.answer == "412"
    assert chats and all(c["json"]["model"] == "configured-model" for c in chats)


def test_reopen_ingests_only_what_changed(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    with tq.open(folder) as first:
        assert first.report is not None and first.report.tables_stored == 3
    (folder / "rivers.csv").write_text("River,Length (km)\nVarna,413\n")
    (folder / "cities.csv").unlink()
    with tq.open(folder) as again:
        assert again.report is not None
        assert (again.report.tables_stored, again.report.tables_unchanged) == (1, 1)
        assert len(again.tables) == 2  # the deleted file's table is gone
        hit = again.search("Varna", k=1)[0]
        assert again.tables[hit.table_id].cell(0, 1) == "413"
        assert again.search("Oslo", k=3) == []


def test_open_store_file_table_file_and_store(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    store = tq.Store(tmp_path / "s.duckdb")
    tq.ingest(store, [folder])
    store.close()
    with tq.open(tmp_path / "s.duckdb") as corpus:
        assert corpus.store.read_only and corpus.report is None and len(corpus.tables) == 3
        old_form = tq.search(corpus.store, "Varna", k=1)  # the library's older form
        assert old_form == tq.search("Varna", corpus.store, k=1) != []
        for blank in ("", "  \n"):  # refused as by the CLI, the API and MCP
            with pytest.raises(BadValue, match="the question is empty"):
                corpus.search(blank)
            with pytest.raises(BadValue, match="the question is empty"):
                tq.search(blank, corpus.store)
    with tq.open(folder / "rivers.csv") as single:
        assert len(single.tables) == 1
    with pytest.raises(tq.SourceError, match="no store, table file or folder"):
        tq.open(tmp_path / "missing")


def test_ask_with_an_llm_object_and_without_cache(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    llm = tq.Scripted(['{"patterns": ["Varna"]}', '{"answer": "412"}'] * 3)
    with tq.open(folder) as corpus:
        r = corpus.ask(QUESTION, llm=llm, method="seek", trace_dir=tmp_path)
    assert r.answer == "412" and r.method == "seek"
    llm = tq.Scripted(['{"patterns": ["Varna"]}', '{"answer": "412"}'] * 3)
    r2 = tq.ask(QUESTION, folder, llm=llm, method="seek", cache=False, trace_dir=tmp_path / "t")
    assert r2.answer == "412"
    assert not store_path_for(tmp_path / "t").exists()


def test_unknown_model_server_is_a_clear_error(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    with pytest.raises(tq.ModelUnreachable, match="cannot list the models"):
        tq.ask(QUESTION, folder, llm="http://127.0.0.1:9/v1")


def test_repr_html_escapes_untrusted_text() -> None:
    evil = "<script>alert(1)</script>"
    table = Table.from_rows([["Name", "Note"], [evil, '"><img src=x onerror=alert(2)>']])
    html = table._repr_html_()
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    result = Result(
        answer=evil,
        status="answered",
        evidence=[CellRef("t1", 0, 0, evil, "cited")],
        tables={"t1": table},
        sources={"t1": "<b>notes.csv</b>"},
        method="auto",
    )
    card = result._repr_html_()
    assert "<script>" not in card and "<b>notes" not in card
    assert card.count('class="tq-evidence tq-evidence-cited"') == 1
    assert "&lt;script&gt;" in card and "&lt;b&gt;notes.csv" in card
    assert evil in result._repr_markdown_()  # markdown is text: the frontend escapes it


def test_repr_shows_verified_and_how_each_cell_was_found() -> None:
    table = Table.from_rows(
        [["Region", "Q3", "H2"], ["West", "205", "390"], ["South", "99", "205"]]
    )
    evil = "<img src=x onerror=alert(3)>"
    result = Result(
        answer="205",
        status="answered",
        evidence=[CellRef("t", 0, 1, "205", "computed"), CellRef("t", 1, 2, "205", "ambiguous")],
        tables={"t": table},
        verified="contradicted",
        verification=f"205 differs from {evil}",
    )
    card = result._repr_html_()
    assert '<span class="tq-verified-contradicted"' in card and ">contradicted</span>" in card
    assert "&lt;img src=x" in card and "<img" not in card  # the line is escaped
    certain = 'class="tq-evidence tq-evidence-computed" title="computed"'
    assert card.count(certain) == 1 and "2 evidence cells (1 computed, 1 ambiguous)" in card
    # the ambiguous cell is outlined, not highlighted as certain evidence
    assert '<td class="tq-evidence-ambiguous" title="ambiguous: not certain"' in card
    assert card.count("background:#fff3a3") == 1
    assert "[row 0, Q3]: 205 (computed); t [row 1, H2]: 205 (ambiguous)" in card
    markdown = result._repr_markdown_()
    assert f"verified: **contradicted** — 205 differs from {evil}" in markdown
    assert "- t row 1, col 2: 205 (ambiguous)" in markdown
    result.evidence = [CellRef("t", 0, 1, "205", "computed")] * 23
    assert "; … 3 more cells</small>" in result._repr_html_()
    assert result._repr_markdown_().endswith("\n- … 3 more cells")
    unanswered = Result(answer=None, status="failed")
    assert "tq-verified" not in unanswered._repr_html_()
    assert "verified" not in unanswered._repr_markdown_()


def test_hits_and_tables_show_one_line_per_source_ending_in_its_file_name() -> None:
    store = Store()
    key = "/data/" + "deep/" * 40 + "a|b\nc.csv"
    store.add_table(Table.from_rows([["river"], ["Varna"]]), key=key)
    tid = store.ids_for_path(key)[0]
    shown = {
        5: Hits([Hit(tid, 1.0, {})], store)._repr_markdown_(),  # cells: # id score source rows
        2: StoredTables(store)._repr_markdown_(),  # id, source
    }
    for n_cells, markdown in shown.items():
        *_, row = markdown.splitlines()  # the table's one row is one line
        assert len(re.split(r"(?<!\\)\|", row)) == n_cells + 2  # the source's "|" is escaped
        assert f"| …{'deep/' * 14}a\\|b c.csv |" in row  # its end: the file name


def test_repr_keeps_merged_headers_and_cuts_long_tables() -> None:
    rows = [["Region", "Sales", ""], ["", "2023", "2024"]] + [
        [f"r{i}", str(i), str(2 * i)] for i in range(40)
    ]
    merges = (Merge(0, 1, 0, 2), Merge(0, 0, 1, 0))
    table = Table.from_rows(rows, n_header_rows=2, merges=merges)
    html = table._repr_html_()
    assert '<th colspan="2">Sales</th>' in html and '<th rowspan="2">Region</th>' in html
    assert "… 10 more rows" in html and "r29" in html and "r30" not in html
    result = Result(
        answer="78",
        status="answered",
        evidence=[CellRef("t", 39, 2, "78")],
        tables={"t": table},
    )
    card = result._repr_html_()
    assert (  # a matched cell (found by the answer's value) is outlined, never highlighted
        'title="matched: not certain" '
        'style="outline:1px dashed #9a6700;outline-offset:-2px">78</td>'
    ) in card
    assert "r39" in card and "r0<" not in card  # the evidence row, not the first rows
    assert "| Sales / 2023 |" in table._repr_markdown_()


def test_readme_python_quickstart_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, varna_reply: Any
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Library", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert block.startswith("\nimport tablequest as tq") and len(block.strip().splitlines()) == 5
    monkeypatch.chdir(ROOT)
    with StubServer(varna_reply) as server:
        scope: dict[str, object] = {}
        exec(block.replace("http://localhost:8000/v1", server.url), scope)
    result = scope["r"]
    assert isinstance(result, Result) and result.answer == "412"
    table = scope["corpus"].tables[scope["hits"][0].table_id]  # type: ignore[attr-defined,index]
    assert "Varna" in table._repr_html_()
    scope["corpus"].close()  # type: ignore[attr-defined]


def kernel_dir(root: Path) -> Path:
    """A kernelspec for this interpreter (the venv's), so the kernel imports this tablequest."""
    spec = root / "kernels" / "tq-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "tablequest test", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return root


@pytest.mark.slow
def test_five_lines_in_a_real_jupyter_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, varna_reply: Any
) -> None:
    import nbformat
    from nbclient import NotebookClient

    folder = write_folder(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir(tmp_path / "jupyter")))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    with StubServer(varna_reply) as server:
        source = (
            "import tablequest as tq\n"
            f"r = tq.ask({QUESTION!r}, {str(folder)!r}, llm={server.url!r})\n"
            "r"
        )
        table_cell = (
            f"corpus = tq.open({str(folder)!r})\n"
            "corpus.tables[corpus.search('river Varna', k=1)[0].table_id]"
        )
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source), nbformat.v4.new_code_cell(table_cell)]
        client = NotebookClient(nb, kernel_name="tq-test", timeout=120, allow_errors=False)
        client.execute(cwd=str(tmp_path), env=dict(os.environ))
    answer = [o for o in nb.cells[0].outputs if o["output_type"] == "execute_result"]
    assert answer, nb.cells[0].outputs
    html = answer[0]["data"]["text/html"]
    assert "412" in html and 'class="tq-evidence ' in html
    assert answer[0]["data"]["text/markdown"].startswith("**412**")
    shown = [o for o in nb.cells[1].outputs if o["output_type"] == "execute_result"]
    assert "<th>Length (km)</th>" in shown[0]["data"]["text/html"]
