"""Issue 39: traces record the store they ran against, and the server's Traces page and
`/v1/traces` list (and open) only the traces of the store it serves."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tablequest.corpus import Store, ingest
from tablequest.methods import ask
from tablequest.serve import ServeConfig, create_app
from tablequest.trace import store_key, store_of


def _store(tmp_path: Path, name: str, csv: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{name}.csv").write_text(csv)
    path = tmp_path / f"{name}.duckdb"
    with Store(path) as store:
        assert ingest(store, [folder]).ok
    return path


def test_the_server_lists_only_its_own_stores_traces(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    mine = _store(tmp_path, "rivers", "river,length km\nVarna,120\n")
    other = _store(tmp_path, "secrets", "name,salary\nAlice,99000\n")
    ours = ask("How long is the Varna?", mine, method="bm25", trace_dir=traces)
    theirs = ask("What does Alice earn?", other, method="bm25", trace_dir=traces)
    assert ours.trace_path and theirs.trace_path
    assert store_of(Path(ours.trace_path)) == store_key(mine)
    assert store_of(Path(theirs.trace_path)) == store_key(other)
    assert str(tmp_path) not in Path(ours.trace_path).read_text()  # no server folder
    config = ServeConfig(store=mine, trace_dir=traces, token=None)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        listed = [t["id"] for t in client.get("/v1/traces").json()]
        assert listed == [Path(ours.trace_path).stem]
        hidden = Path(theirs.trace_path).stem
        assert client.get(f"/v1/traces/{hidden}").status_code == 404
        page = client.get("/traces").text
        assert "Varna" in page and "Alice" not in page
