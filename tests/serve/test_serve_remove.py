"""Issue 39: `DELETE /v1/tables/{id}` (token required) removes a table from the served store
and every index; the corpus page offers it behind a confirmation; `/v1/tables` shows when
each table was ingested."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tablequest.corpus import Store, ingest
from tablequest.serve import ServeConfig, create_app

TOKEN = "remove-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_delete_removes_a_table_from_the_served_store_and_its_search(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "rivers.csv").write_text("river,length km\nVarna,120\nRhine,1230\n")
    (data / "cities.csv").write_text("city,population\nAmsterdam,900\n")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [data]).ok
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "traces", token=TOKEN)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        listed = client.get("/v1/tables", headers=AUTH).json()["tables"]
        assert all(t["ingested_at"].endswith("Z") for t in listed)
        rivers = next(t["table_id"] for t in listed if t["source"] == "rivers.csv")
        hits = client.get("/v1/search", params={"q": "river Varna"}, headers=AUTH).json()
        assert hits["hits"][0]["table_id"] == rivers
        page = client.get("/", headers=AUTH).text
        assert f'data-remove="{rivers}"' in page  # the button app.js confirms first
        assert client.delete(f"/v1/tables/{rivers}").status_code == 401
        gone = client.delete(f"/v1/tables/{rivers}", headers=AUTH)
        assert gone.status_code == 200 and gone.json() == {"removed": [rivers], "tables_left": 1}
        hits = client.get("/v1/search", params={"q": "river Varna"}, headers=AUTH).json()
        assert rivers not in [h["table_id"] for h in hits["hits"]]
        assert client.get(f"/v1/tables/{rivers}", headers=AUTH).status_code == 404
        again = client.delete(f"/v1/tables/{rivers}", headers=AUTH)
        assert again.status_code == 404 and again.json()["error"]["code"] == "unknown_table"
        script = client.get("/static/app.js", headers=AUTH).text
        assert "window.confirm" in script and 'method: "DELETE"' in script
