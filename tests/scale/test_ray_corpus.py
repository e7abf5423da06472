"""Sharded corpora on local Ray: ingest tasks (a worker killed mid-file), shard actors
(exact rankings, an actor killed mid-run), and the CLI's --ray paths. One Ray session."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray  # in the dev extra: a missing Ray fails these tests, it never skips them
from tests.scale.conftest import local_ray
from tests.testdata import WORDS
from typer.testing import CliRunner

from tablequest.cli.app import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.dense.encoders import HashEncoder
from tablequest.corpus.dense.index import dense_rank
from tablequest.corpus.lexical.rank import bm25_rank, grep_rank, hybrid_rank
from tablequest.corpus.retrieval.shardrank import (
    sharded_bm25,
    sharded_dense,
    sharded_grep,
    sharded_hybrid,
)
from tablequest.corpus.storage.shards import ShardedStore
from tablequest.scale.actors import attach
from tablequest.scale.ingest import ingest_ray

pytestmark = pytest.mark.slow

MARKER_ENV = "TQ_TEST_DIE_MARKER"


def _die_on_poison() -> None:
    """Worker setup hook: the first read of a file named *poison* kills the worker."""
    from tablequest.table.readers import ReadInput, register_reader
    from tablequest.table.readers.delimited import read_csv

    def reader(inp: ReadInput) -> list:  # type: ignore[type-arg]
        marker = os.environ.get(MARKER_ENV)
        if marker and "poison" in inp.path and not os.path.exists(marker):
            Path(marker).write_text("died\n")
            os._exit(1)  # the worker dies mid-file, its transaction never committed
        return read_csv(inp)

    register_reader("csv", reader, (".csv",))


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with local_ray(__name__, _die_on_poison, MARKER_ENV, tmp_path_factory.mktemp("ray")) as tmp:
        yield tmp


def _corpus(root: Path, n: int = 300) -> Path:
    rng = random.Random(11)
    root.mkdir()
    for i in range(n):
        rows = [rng.sample(WORDS, 3)] + [
            [rng.choice(WORDS), str(rng.randint(1, 40)), rng.choice(WORDS)]
            for _ in range(rng.randint(1, 6))
        ]
        name = "m-poison.csv" if i == n // 2 else f"t{i:04d}.csv"
        (root / name).write_text("\n".join(",".join(r) for r in rows) + "\n")
    (root / "t0001-copy.csv").write_text((root / "t0001.csv").read_text())  # ties
    return root


def _per_file_counts(store: ShardedStore | Store) -> dict[str, int]:
    return {p: n for p, (_, n) in store.known_files().items()}


def test_ingest_worker_killed_mid_file(ray_session: Path) -> None:
    root = _corpus(ray_session / "tables")
    single = Store(ray_session / "one.duckdb")
    ingest(single, [root], workers=1)
    manifest = ray_session / "c.json"
    # no retry: the shard holding the poison file keeps only whole files; the report says so
    first = ingest_ray(manifest, [root], shards=3, max_retries=0)
    assert (ray_session / "died").exists()
    assert first.files_failed and "run the same ingest again" in first.files_failed[0].reason
    with ShardedStore(manifest, read_only=True) as store:
        partial = _per_file_counts(store)
        for path, n in partial.items():
            assert n == single.known_files()[path][1]  # never part of a file
        assert len(partial) < len(single.known_files())
    # the rerun finishes the job; stored tables equal the single store's
    (ray_session / "died").unlink()
    again = ingest_ray(manifest, [root])  # retries on: the second worker reads the file
    assert not again.files_failed
    with ShardedStore(manifest, read_only=True) as store:
        assert store.table_ids() == single.table_ids()
        assert store.column("text") == single.column("text")
        assert json.loads(manifest.read_text())["tables"] == [len(s) for s in store.stores]
    single.close()


@pytest.fixture(scope="module")
def corpora(ray_session: Path) -> Iterator[tuple[Store, ShardedStore]]:
    root = _corpus(ray_session / "tables2", n=200)
    single = Store(ray_session / "two.duckdb")
    ingest(single, [root], workers=1)
    manifest = ray_session / "two.json"
    ingest_ray(manifest, [root], shards=4)
    sharded = ShardedStore(manifest, read_only=True)
    attach(sharded, "local")
    yield single, sharded
    sharded.close()
    single.close()


QUESTIONS = ["gold nation", "goals of the club in 12", "river mountain year", "zz", ""]


def test_actors_rank_exactly(corpora: tuple[Store, ShardedStore]) -> None:
    single, sharded = corpora
    encoder = HashEncoder(32)
    for k in (1, 3, 50):
        for q in QUESTIONS:
            words = [rf"\b{w}\b" for w in q.split()] or ["gold"]
            assert sharded_grep(sharded, words, k) == grep_rank(single, words, k, rows=False)
            assert sharded_bm25(sharded, q, k) == bm25_rank(single, q, k, rows=False)
            assert sharded_dense(sharded, q, k, encoder) == dense_rank(single, q, k, encoder)
            want = hybrid_rank(single, q, k, encoder=encoder)
            assert sharded_hybrid(sharded, q, k, encoder=encoder) == want


def test_actors_rank_with_every_registered_retriever(
    corpora: tuple[Store, ShardedStore],
) -> None:
    from tablequest.corpus.retrieval.retrievers import (
        RETRIEVERS,
        RetrieverSettings,
        make_retriever,
    )

    single, sharded = corpora
    settings = RetrieverSettings(encoder="hash")
    for name in [n for n in RETRIEVERS if n != "rerank"]:  # rerank: a server, not the shards
        retriever = make_retriever(name, settings)
        for q in QUESTIONS:
            assert retriever.rank(sharded, q, 5) == retriever.rank(single, q, 5), (name, q)


def kill_and_wait(actor: Any) -> None:
    """`ray.kill` only asks for the kill: a query sent right after it may still reach the live
    actor (no restart then; flaky under load). Wait until a call meets a dead actor."""
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            continue
        time.sleep(0.05)
    raise AssertionError("a killed actor still answers after 60 s")


def test_dead_actor_is_restarted_and_the_query_retried(
    corpora: tuple[Store, ShardedStore],
) -> None:
    single, sharded = corpora
    backend = sharded.backend
    encoder = HashEncoder(32)
    assert sharded_dense(sharded, "gold", 5, encoder) == dense_rank(single, "gold", 5, encoder)
    before = backend.restarts  # type: ignore[union-attr]
    victim = backend.actors[2]  # type: ignore[union-attr]
    kill_and_wait(victim)
    assert sharded_grep(sharded, ["gold"], 7) == grep_rank(single, ["gold"], 7, rows=False)
    assert backend.restarts == before + 1  # type: ignore[union-attr]
    kill_and_wait(backend.actors[0])  # type: ignore[union-attr]
    # its vectors were in memory only (read-only shard): re-sent, then the query retried
    assert sharded_dense(sharded, "river", 5, encoder) == dense_rank(single, "river", 5, encoder)


def test_cli_ingest_and_search_with_ray(
    ray_session: Path, corpora: tuple[Store, ShardedStore]
) -> None:
    root = _corpus(ray_session / "tables3", n=40)
    manifest = ray_session / "cli.json"
    runner = CliRunner()
    done = runner.invoke(
        app, ["ingest", str(root), "--store", str(manifest), "--shards", "2", "--ray", "local",
              "--json"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["tables_stored"] == 41
    hits = runner.invoke(
        app, ["search", str(manifest), "gold nation", "--ray", "local", "--json", "-k", "3"]
    )
    assert hits.exit_code == 0, hits.output
    plain = runner.invoke(app, ["search", str(manifest), "gold nation", "--json", "-k", "3"])
    assert json.loads(hits.stdout) == json.loads(plain.stdout)
    assert len(json.loads(plain.stdout)) == 3
    refused = runner.invoke(app, ["ingest", str(root), "--store", str(ray_session / "x.duckdb"),
                                  "--ray", "local"])  # fmt: skip
    assert refused.exit_code == 2 and "--shards" in refused.output
