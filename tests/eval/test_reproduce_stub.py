"""`eval reproduce` of every TableSeek, TableRAG and TabScope configuration, end to end, with
a scripted model behind the stub server at `--limit 1` (Table 6: 2; issue 41, item 4a).

Each configuration runs once through the CLI (`tablequest eval reproduce NAME`): every row runs
its questions, the report shows each row and the paper's numbers beside ours. What each row
sent to the model server (chat and rerank requests, in order) is recorded per row, and every
switch is checked to change it: two rows of one method on the same data whose options differ
must send different requests. The model's replies are a script that makes each switch show
(`ScriptedModel`): TableSeek regenerates, then selects the last candidates (so the number
shown matters), and its QA never finds enough (so the fallback and the step budget matter);
TableRAG gets JSON lists for its query expansion. The benchmark folders are the fixtures plus
tables big enough for the switches (`enrich`): eight more TCR-Bench tables of 60 rows, ArcadeQA and
BirdQA tables of over 1,000 distinct values, six TabFact tables.

Cheaper than the paper's protocol, where that changes nothing checked here: Synthetic
TabFact (Fig. 4) is generated at small sizes (`SYNTH_SIZES`) instead of up to 1000×1000, and
TableRAG's rows vote over `SAMPLES` samples instead of 10 (their options are otherwise the
configurations'; the 10 is checked in test_reproduce_tablerag.py).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tablequest.eval import runner as runner_module
from tablequest.eval.datasets import tabfact_synth
from tablequest.eval.reproduce import all_reproductions, execute
from tablequest.eval.reproduce.spec import REPRODUCTIONS, Row
from tablequest.llm.stub import StubServer
from tablequest.methods.seek.prompts import PATTERN_SYSTEM, QA_SYSTEM, REFINE_SYSTEM

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = [name for name in all_reproductions() if name.startswith(("tableseek-", "tablerag-",
                                                                    "tabscope-"))]  # fmt: skip
pytestmark = pytest.mark.slow  # shared out over the workers (tests/scheduling.py)

SAMPLES = 2
"""TableRAG's rows vote over 10 samples (the paper's protocol, checked in
test_reproduce_tablerag.py); here over 2: every sample sends the same prompts to this model."""
SYNTH_SIZES = {"50x50": (45, 6), "100x100": (50, 8), "500x500": (55, 10), "1000x1000": (60, 12)}
"""Fig. 4's sizes, scaled down so a row builds no 10^6-cell table (still growing, and each
over RandRowSampling's 30 rows, as the enriched original table is)."""
SEEK_PATTERNS = ["amount", "order", "team"]
REGENERATED = ["north", "south", "2004"]
SENT_PATHS = ("/v1/chat/completions", "/v1/rerank")
KEEP_SEARCHING = "How many items are in stock?"
"""TCR-Bench's second question: there the agent regenerates until the budget ends, so the
step budget shows without the fallback too (on the first it selects in round 2, so the
fallback shows within 5 steps); Table 6 compares both switches, so it runs both questions."""
LIMITS = {"tableseek-ablation": 2}


# -- the model ---------------------------------------------------------------------------------
class ScriptedModel:
    """Replies by prompt, the same policy for every row (so a difference between two rows'
    requests comes from their options). Per question it counts TableSeek's refine and QA
    calls: the first refine regenerates, later ones select the last `k` candidates (or rerank
    them last first); QA always finds the tables insufficient."""

    def __init__(self) -> None:
        self.refines: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body["messages"]
        system = str(messages[0].get("content")) if messages[0].get("role") == "system" else ""
        prompt = "\n".join(str(m.get("content")) for m in messages)
        if system == PATTERN_SYSTEM:
            with self.lock:
                self.refines[_question(prompt)] = 0
            return json.dumps({"patterns": SEEK_PATTERNS})
        if system == REFINE_SYSTEM:
            return self._refine(prompt)
        if system == QA_SYSTEM and '"status": "answered" |' in prompt:
            return json.dumps({"status": "mismatch" if "Statement:" in prompt else
                               "insufficient", "answer": "", "evidence": []})  # fmt: skip
        return _other(prompt)

    def _refine(self, prompt: str) -> str:
        with self.lock:
            key = _question(prompt)
            self.refines[key] = self.refines.get(key, 0) + 1
            first = self.refines[key] == 1
        ids = list(dict.fromkeys(re.findall(r"\[(Table_\d+)\]", prompt.split("Candidate")[-1])))
        offers = {a: f'"action": "{a}"' in prompt for a in ("regenerate", "rerank", "select")}
        if offers["regenerate"] and (first or not ids or key == KEEP_SEARCHING):
            return json.dumps({"action": "regenerate", "patterns": REGENERATED})
        if offers["rerank"] and ids:
            return json.dumps({"action": "rerank", "ranking": ids[::-1]})
        if offers["select"] and ids:
            k = re.search(r"at most (\d+) ids", prompt)
            return json.dumps(
                {"action": "select", "selected_tables": ids[-int(k[1] if k else 1) :]}
            )
        return json.dumps({"action": "none"})


def _question(prompt: str) -> str:
    found = re.search(r"^(?:Question|Statement): (.*)$", prompt, re.M)
    return found[1] if found else ""


def _other(prompt: str) -> str:
    """Every prompt but TableSeek's agent: expansion lists, judges, TabScope, answers."""
    if "suggest some column names" in prompt:
        return '["price", "product_name", "County"]'
    if "extract some keywords" in prompt:
        return '["leather wallet", "Alameda"]'
    if "[Score]" in prompt:
        return "The answer is partly right.\n[Score]: 70/100"
    if "Choose exactly one question type" in prompt:  # TabScope's classifier
        return json.dumps({"question_type": "lookup"})
    if "You are verifying an evidence sub-table" in prompt:
        return json.dumps({"verdict": "ok", "issues": []})
    if "select the smallest sub-table" in prompt:  # a silver reference: row 0, first column
        header = next(line for line in prompt.splitlines() if line.startswith("| row_id"))
        return json.dumps({"reasoning_type": "lookup", "evidence_policy": "answer_only",
                           "rows": [0], "columns": [header.split("|")[2].strip()],
                           "reason": "stub"})  # fmt: skip
    return 'Final Answer: 1\n<answer>1</answer>\n{"status": "answered", "answer": "1"}'


# -- the benchmark folders ---------------------------------------------------------------------
def _write_tcr(root: Path) -> None:
    """Eight more "Sales Orders" tables of 60 rows in the first question's database, and the
    second question's gold table (so it is kept)."""
    (root / "tables/TCR_8k/shop/stock_T2.csv").write_text("item,qty\nbolt,3\nnut,5\n", "utf-8")
    tables = json.loads((root / "data/TCR_Tables.json").read_text("utf-8"))
    regions = ("north", "east", "south", "west")
    for t in range(2, 10):
        rows = [f"{chr(65 + t)}-{i},{i * t}.5,{regions[i % 4]},note {t}-{i}" for i in range(60)]
        path = root / f"tables/TCR_8k/shop/Sales Orders_T{t}.csv"
        path.write_text("order_id,amount,region,note\n" + "\n".join(rows) + "\n", "utf-8")
        tables.append({"db_id": "shop", "table_path": f"Sales Orders_T{t}",
                       "table_name": "Sales Orders",
                       "table_format": ("csv", "html", "markdown")[t % 3]})  # fmt: skip
    (root / "data/TCR_Tables.json").write_text(json.dumps(tables), "utf-8")


def _write_tabfact(root: Path) -> None:
    """Four more tables (with claims) and a 40-row `1-200-3` for Fig. 4's original size."""
    examples = json.loads((root / "tokenized_data/test_examples.json").read_text("utf-8"))
    for t in range(2, 6):
        rows = [f"{2000 + i}#team {t}-{i}#{i * 100}" for i in range(12)]
        name = f"2-100-{t}.html.csv"
        (root / "data/all_csv" / name).write_text("year#team#fans\n" + "\n".join(rows), "utf-8")
        examples[name] = [[f"team {t}-4 win in 2004"], [1], f"season {t}"]
    (root / "tokenized_data/test_examples.json").write_text(json.dumps(examples), "utf-8")
    events = "\n".join(f"round {i}#{i * 7}" for i in range(40))
    (root / "data/all_csv/1-200-3.html.csv").write_text(f"event#count\n{events}\nfinal#5\n")


def _unique(value: Any, i: int) -> Any:
    """A new row's cell: text made unique (a code with a leading zero stays a code)."""
    if not isinstance(value, str) or (value.replace(".", "").isdigit() and value[0] != "0"):
        return value
    return f"{value[:-4]}{i:04d}" if value.isdigit() else f"{value} {i}"


def _grow(table: list[list[Any]], n: int) -> list[list[Any]]:
    """`table` (header first) grown to `n` body rows; new text cells are unique per row."""
    header, body = table[0], table[1:]
    grown = [[_unique(v, i) for v in body[i % len(body)]] for i in range(len(body), n)]
    return [header, *body, *grown]


def _write_tablerag(path: Path, rows: int = 300) -> None:
    """The first question's table grown to `rows` rows (over 1,000 distinct text values)."""
    lines = path.read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    grown = _grow(first["table_text"], rows)
    lines = [json.dumps({**json.loads(line), "table_text": grown})
             if json.loads(line).get("table_caption") == first["table_caption"] else line
             for line in lines]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", "utf-8")


def enrich(data: Path) -> None:
    """Tables big enough for every switch to show (module doc)."""
    _write_tcr(data / "tcrbench")
    _write_tabfact(data / "tabfact")
    _write_tablerag(data / "arcadeqa/data/arcade/test.jsonl", rows=750)  # 4 text columns
    _write_tablerag(data / "birdqa/data/bird/test.jsonl", rows=1000)  # 3 text columns


# -- running a configuration -------------------------------------------------------------------
Sent = dict[str, dict[str, list[str]]]
"""Per row key and question id: the chat and rerank requests sent, in order (sorted JSON)."""


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str, int], Any]]:
    """Run `eval reproduce NAME --limit N` on the enriched fixtures with the scripted model;
    returns (exit code, output, report JSON, what each row sent). Configurations of a worker
    share one output folder (a row key names the same run everywhere: a run made for one
    configuration is reused by the next, with what it sent)."""
    from tablequest.cli.app import app

    base = tmp_path_factory.mktemp("reproduce")
    shutil.copytree(FIXTURES, base / "data")
    enrich(base / "data")
    sent: Sent = {}
    with (
        StubServer(ScriptedModel(), model="stub-model") as stub,
        pytest.MonkeyPatch.context() as mp,
    ):
        real_row, real_record = execute._run_row, runner_module.question_record
        real_size = tabfact_synth.parse_size
        running = {"row": "", "mark": 0}

        def run_row(row: Row, ctx: execute.RunContext) -> execute.RowOutcome:
            running.update(row=row.key, mark=len(stub.requests))
            return real_row(row, ctx)

        def question_record(*args: Any) -> dict[str, Any]:
            """After each question (answered in turn): the requests it sent."""
            new, running["mark"] = stub.requests[running["mark"] :], len(stub.requests)
            sent.setdefault(str(running["row"]), {})[args[1].id] = [
                json.dumps(r["json"], sort_keys=True) for r in new if r["path"] in SENT_PATHS
            ]
            return real_record(*args)

        mp.setattr(runner_module, "question_record", question_record)
        mp.setattr(execute, "_run_row", run_row)
        for rep in all_reproductions().values():
            rows = tuple(replace(r, options={**r.options, "sc": SAMPLES}) if "sc" in r.options
                         else r for r in rep.rows)  # fmt: skip
            mp.setitem(REPRODUCTIONS, rep.name, replace(rep, rows=rows))
        mp.setattr(tabfact_synth, "parse_size", lambda split: SYNTH_SIZES.get(split) or
                   real_size(split))  # fmt: skip

        def run(name: str, limit: int) -> tuple[int, str, dict[str, Any], Sent]:
            out = base / "out"
            args = ["eval", "reproduce", name, "--data", str(base / "data"), "--out", str(out),
                    "--llm-url", stub.url, "--model", "stub-model", "--limit", str(limit),
                    "--cache-dir", str(base / "corpora"), "--no-cache"]  # fmt: skip
            result = CliRunner().invoke(app, args)
            report = out / f"{name}.report.json"
            payload = json.loads(report.read_text("utf-8")) if report.exists() else {}
            return result.exit_code, result.output, payload, sent

        yield run


def _same_data(a: Row, b: Row) -> bool:
    return (a.method, a.dataset, a.fmt, sorted(a.load_options.items())) == (
        b.method, b.dataset, b.fmt, sorted(b.load_options.items()))  # fmt: skip


def _switches(a: Row, b: Row) -> dict[str, tuple[object, object]]:
    keys = set(a.options) | set(b.options)
    return {k: (a.options.get(k), b.options.get(k)) for k in sorted(keys)
            if a.options.get(k) != b.options.get(k)}  # fmt: skip


BEYOND_TEST_TABLES = {"budget"}
"""B = 10,000 and 100,000 differ only on tables of over 10,000 distinct values (TableRAG's
cell database) or 625 rows × 8 columns (RowColRetrieval's rows): larger than a test builds.
Below that B still counts (100, 1,000 and 10,000 are checked apart); the cut itself is
tested on its own in tests/methods (`cell_db`, `row_col_docs`)."""


def _exempt(switches: dict[str, tuple[object, object]]) -> bool:
    values = switches.get("budget")
    return (set(switches) <= BEYOND_TEST_TABLES and values is not None
            and min(int(str(v)) for v in values) >= 10_000)  # fmt: skip


# the configurations that build the big tables (TableRAG's Figs. 4-6 up to 1000x1000) or run
# every format/ablation/strategy: not traced for coverage (no_cover), since the lighter ones
# cover the same lines; tracing them cost about 17 s of CPU in every `make test` (#38)
UNTRACED = frozenset({"tablerag-fig4", "tablerag-fig5", "tablerag-fig6", "tableseek-formats",
                      "tableseek-ablation", "tableseek-strategies"})  # fmt: skip
CASES = [pytest.param(n, marks=pytest.mark.no_cover) if n in UNTRACED else n for n in NAMES]
assert not UNTRACED - set(NAMES), UNTRACED - set(NAMES)  # a renamed configuration is not lost


@pytest.mark.parametrize("name", CASES)
def test_configuration_runs_and_each_switch_changes_what_is_sent(
    name: str, runner: Callable[[str, int], tuple[int, str, dict[str, Any], Sent]]
) -> None:
    rep = all_reproductions()[name]
    limit = LIMITS.get(name, 1)
    code, output, report, recorded = runner(name, limit)
    assert code == 0, output[-3000:]
    assert [row["key"] for row in report["rows"]] == [row.key for row in rep.rows]
    for row in report["rows"]:
        outcome = row["outcome"]
        assert outcome["error"] is None and outcome["n"] == limit, row["key"]
    for row in rep.rows:
        assert f"| {row.label} |" in output
    assert len(report["not_implemented"]) == len(rep.missing)
    for missing in rep.missing:
        assert f"**{missing.label}**: {missing.why}" in output
    assert any(c["ours"] is not None for row in report["rows"] for c in row["cells"])
    answers = [row for row in rep.rows if row.kind == "answer"]
    sent = {}  # what each row sent for the configuration's questions
    for row in answers:
        assert len(recorded.get(row.key, {})) >= limit, row.key
        sent[row.key] = [r for q in list(recorded[row.key])[:limit] for r in recorded[row.key][q]]
        assert sent[row.key], f"{row.key} sent nothing to the model"
    same = [(a.key, b.key, _switches(a, b)) for a, b in itertools.combinations(answers, 2)
            if _same_data(a, b) and a.options != b.options and sent[a.key] == sent[b.key]
            and not _exempt(_switches(a, b))]  # fmt: skip
    assert same == [], f"switches that changed nothing sent to the model: {same}"
