"""LLM-free retrieval evaluation: R@k, GR@k/DS@k, every method, the `eval retrieval` CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli import eval_run
from tablequest.corpus.dense.encoders import EncoderUnavailable, HashEncoder, make_encoder
from tablequest.corpus.retrieval.retrievers import RetrieverSettings
from tablequest.errors import BadValue
from tablequest.eval.corpora import build_corpus
from tablequest.eval.corpus_vectors import ensure_dense
from tablequest.eval.datasets import load
from tablequest.eval.retrieval import KS, RetrievalResult, evaluate_retrieval, make_ranker

runner = CliRunner()


def app() -> typer.Typer:
    sub = typer.Typer()
    eval_run.register(sub)
    return sub


@pytest.mark.parametrize("method", ["bm25", "grep", "dense", "hybrid"])
def test_every_method_finds_distinctive_tables(evalrun_wtq: Path, method: str) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "markdown", in_memory=True)
    ranker = make_ranker(method, RetrieverSettings(encoder="hash"))
    ensure_dense(corpus, HashEncoder())
    result = evaluate_retrieval(corpus, ds.questions, ranker)
    assert result.n == 12 and list(result.recall) == list(KS)
    assert result.recall[10] == 1.0  # six tables: everything is in the top 10
    assert result.recall[1] >= 0.5
    values = list(result.recall.values())
    assert values == sorted(values)  # R@k never decreases with k
    assert result.group_recall is None and result.ds is None
    ranks = result.gold_ranks
    assert set(ranks) == {q.id for q in ds.questions}
    assert sum(1 for r in ranks.values() if r == 1) / 12 == pytest.approx(result.recall[1])


def test_recall_by_hand(evalrun_wtq: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "csv", in_memory=True)
    gold = {q.id: corpus.table_id(q.gold_table_ids[0]) for q in ds.questions}
    other = sorted(set(corpus.store.table_ids()) - set(gold.values()))

    def ranker(store: object, question: str, k: int) -> list[str]:
        q = next(q for q in ds.questions if q.question == question)
        # gold at rank 1 for the first four questions, at rank 3 for the rest
        wrong = [t for t in corpus.store.table_ids() if t != gold[q.id]][:2]
        return (
            [gold[q.id], *wrong]
            if q.id in ("nu-0", "nu-1", "nu-2", "nu-3")
            else [*wrong, gold[q.id]]
        )

    result = evaluate_retrieval(corpus, ds.questions, ranker, ks=(1, 2, 3))
    assert result.recall == {1: 4 / 12, 2: 4 / 12, 3: 1.0}
    assert result.to_json()["recall"] == {"1": 0.3333, "2": 0.3333, "3": 1.0}
    assert other == []  # every table of the fixture is some question's gold table


def test_groups_give_gr_and_ds(evalrun_tcr: Path) -> None:
    ds = load("tcrbench", evalrun_tcr)
    corpus = build_corpus(ds, "mixed", in_memory=True)
    sibling = corpus.table_id("tables/TCR_8k/db/orders_T1.csv")
    river = corpus.table_id("tables/TCR_8k/db/rivers_T0.csv")

    def ranker(store: object, question: str, k: int) -> list[str]:
        return [sibling, river] if "customer" in question else [river]

    result = evaluate_retrieval(corpus, ds.questions, ranker, ks=(1, 2))
    assert result.recall == {1: 0.5, 2: 0.5}
    assert result.group_recall == {1: 1.0, 2: 1.0}
    assert result.ds == {1: 0.5, 2: 0.5}
    payload = result.to_json()
    assert payload["group_recall"] == {"1": 1.0, "2": 1.0} and payload["ds"]["1"] == 0.5


def test_errors(evalrun_wtq: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "csv", in_memory=True)
    with pytest.raises(BadValue, match="no questions"):
        evaluate_retrieval(corpus, [], make_ranker("bm25"))
    with pytest.raises(EncoderUnavailable, match="needs a vector encoder"):
        make_ranker("dense", RetrieverSettings(encoder="bm25"))
    with pytest.raises(BadValue, match="unknown retrieval method"):
        make_ranker("colbert")
    with pytest.raises(BadValue, match="unknown encoder"):
        make_encoder("e5")
    assert make_encoder("hash").name == "hash-256"
    assert make_encoder("minilm").name == "all-MiniLM-L6-v2@128+onnx-v1"  # not loaded yet
    other = load("tcrbench", Path(__file__).parent / "fixtures" / "tcrbench")
    with pytest.raises(BadValue, match="is not in the wtq"):
        evaluate_retrieval(corpus, other.questions, make_ranker("bm25"))
    assert RetrievalResult(n=1, recall={1: 1.0}).to_json() == {
        "n": 1,
        "recall": {"1": 1.0},
        "seconds": 0.0,
    }


def test_hybrid_fusions(evalrun_wtq: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "csv", in_memory=True)
    enc = HashEncoder()
    ensure_dense(corpus, enc)
    score = make_ranker("hybrid", RetrieverSettings(encoder="hash"))
    rrf = make_ranker("hybrid", RetrieverSettings(encoder="hash", fusion="rrf"))
    lexical = make_ranker("hybrid", RetrieverSettings(encoder="hash", alpha=0.0))
    bm25 = make_ranker("bm25")
    q = "how high is the eiger?"
    assert len(score(corpus.store, q, 3)) == 3 and len(rrf(corpus.store, q, 3)) == 3
    assert lexical(corpus.store, q, 1) == bm25(corpus.store, q, 1)
    from tablequest.corpus.lexical.rank import hybrid_rank

    with pytest.raises(BadValue, match="unknown fusion"):
        hybrid_rank(corpus.store, q, 3, encoder=enc, fusion="max")
    with pytest.raises(BadValue, match="alpha must be"):
        hybrid_rank(corpus.store, q, 3, encoder=enc, alpha=2.0)
    assert hybrid_rank(corpus.store, q, 0, encoder=enc) == []
    # a query without any BM25 token falls back to the dense score
    assert len(hybrid_rank(corpus.store, "the of and", 2, encoder=enc)) == 2


def test_cli_json(evalrun_wtq: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    result = runner.invoke(
        app(),
        [
            "retrieval",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "bm25",
            "--format",
            "html",
            "--limit",
            "5",
            "--json",
            "--cache-dir",
            cache,
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["n"] == 5 and set(payload["recall"]) == {"1", "2", "3", "5", "10"}
    assert payload["format"] == "html" and payload["method"] == "bm25"
    hybrid = runner.invoke(
        app(),
        [
            "retrieval",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "hybrid",
            "--encoder",
            "hash",
            "--split",
            "training",
            "--json",
            "--cache-dir",
            cache,
        ],
    )
    assert hybrid.exit_code == 0, hybrid.output
    data = json.loads(hybrid.stdout)
    assert data["n"] == 3 and data["fusion"] == "score" and data["alpha"] == 0.7
    assert data["split"] == "training"


def test_cli_text_and_groups(evalrun_tcr: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app(),
        [
            "retrieval",
            "tcrbench",
            "--data",
            str(evalrun_tcr),
            "--method",
            "grep",
            "--format",
            "mixed",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "tcrbench · grep · mixed · n=2"
    assert lines[2].startswith("R@k") and lines[3].startswith("GR@k")
    assert lines[4].startswith("DS@k")


def test_cli_siblings(evalrun_wtq: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app(),
        [
            "retrieval",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "bm25",
            "--siblings",
            "2",
            "--json",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["dataset"] == "wtq+siblings2" and "ds" in payload
    assert payload["group_recall"]["1"] >= payload["recall"]["1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "colbert"], "unknown retrieval method 'colbert'"),
        (["--fusion", "max", "--method", "hybrid", "--encoder", "hash"], "unknown --fusion"),
        (["--split", "dev"], "unknown split"),
        (["--limit", "0"], "--limit must be"),
        (["--format", "json"], "unknown corpus format"),
    ],
)
def test_cli_errors(evalrun_wtq: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(
        app(),
        ["retrieval", "wtq", "--data", str(evalrun_wtq), "--cache-dir", str(tmp_path / "c"), *args],
    )
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_cli_unknown_dataset_option(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    result = runner.invoke(
        app(), ["retrieval", "tcrbench", "--data", str(fixtures / "tcrbench"), "--split", "x"]
    )
    assert result.exit_code == 2 and "takes no --split" in result.stderr


def test_cli_progress_on_a_terminal(
    evalrun_wtq: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    screen = io.StringIO()
    monkeypatch.setattr(eval_run, "err", Console(file=screen, force_terminal=True, width=100))
    result = runner.invoke(
        app(),
        [
            "retrieval",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "dense",
            "--encoder",
            "hash",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "R@k" in result.stdout
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())  # drop colours
    assert "encoding the wtq corpus with hash-256" in shown and "12/12" in shown
    assert re.search(r"R@1 [01]\.\d{3}", shown)  # the running metric
