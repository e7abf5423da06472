"""The driver's settings reach Ray's processes: `ingest_ray` settles the reading budget and the
lock timeout on the driver and sends them to every shard task, and shard actors wait on a held
shard as long as the driver's lock timeout says. Where a worker's environment says otherwise,
the driver's value still holds (a stand-in for Ray runs each task or actor here, with the
arguments Ray would pickle)."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tablequest.corpus import Store
from tablequest.corpus.storage.storefile import resolve_lock_timeout
from tablequest.scale import actors
from tablequest.scale import ingest as scale_ingest
from tablequest.table import Table


class FakeRay:
    """`ray.remote(f).options(...).remote(*args)` records the call; `get` runs it later,
    inside `worker_env` (the worker's own environment)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, worker_env: dict[str, str]) -> None:
        self.monkeypatch, self.worker_env = monkeypatch, worker_env
        self.sent: list[tuple[Any, ...]] = []
        self.exceptions = SimpleNamespace(
            WorkerCrashedError=OSError, RayTaskError=OSError, TaskCancelledError=OSError
        )

    def remote(self, fn: Any) -> Any:
        ray = self

        class Task:
            def options(self, **_: Any) -> Task:
                return self

            def remote(self, *args: Any) -> Any:
                ray.sent.append(args)
                return fn, pickle.loads(pickle.dumps(args))

        return Task()

    def get(self, ref: Any) -> Any:
        fn, args = ref
        for name, value in self.worker_env.items():
            self.monkeypatch.setenv(name, value)
        return fn(*args)


def test_shard_tasks_get_the_drivers_budget_and_lock_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "rivers.csv").write_text("river,length\nNile,6650\nAmazon,6400\n")
    monkeypatch.delenv("TABLEQUEST_READ_MAX_COLUMNS", raising=False)
    monkeypatch.setenv("TABLEQUEST_LOCK_TIMEOUT", "7")  # the driver's environment
    worker = {"TABLEQUEST_READ_MAX_COLUMNS": "1", "TABLEQUEST_LOCK_TIMEOUT": "0"}
    fake = FakeRay(monkeypatch, worker)
    monkeypatch.setattr(scale_ingest, "connect", lambda address: fake)
    report = scale_ingest.ingest_ray(tmp_path / "corpus.json", [folder], shards=2)
    assert report.tables_stored == 1 and not report.files_failed, report
    [(_, _, budget, lock_timeout)] = fake.sent
    assert budget.max_columns == 5_000 and lock_timeout == 7.0


def test_shard_actors_wait_on_a_held_shard_as_the_driver_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shard = tmp_path / "shard-0.duckdb"
    with Store(shard) as store:
        store.add_table(Table.from_rows([["river"], ["Nile"]]), key="/rivers.csv")
    fake = FakeRay(monkeypatch, {"TABLEQUEST_LOCK_TIMEOUT": "0"})  # the actor's node says 0
    monkeypatch.setattr(actors, "import_ray", lambda: fake)
    for sent, held in ((7.0, 7.0), (None, 0.0)):  # None: the actor's own settings
        [actor] = actors.RayShards([str(shard)], lock_timeout=sent).actors
        opened = fake.get(actor)
        try:
            assert resolve_lock_timeout(opened.indexes.store.lock_timeout) == held
        finally:
            opened.indexes.close()
