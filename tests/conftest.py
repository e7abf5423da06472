"""Suite-wide isolation: no real model requests, and caches/traces/config in tmp dirs.

Every test starts with TABLEQUEST_* and OPENAI_* variables removed, then
TABLEQUEST_ALLOW_MODEL_REQUESTS=0 (only 127.0.0.1/localhost/::1 may be called),
TABLEQUEST_CACHE_DIR and TABLEQUEST_TRACE_DIR in a fresh tmp dir, and HOME and the XDG base
directories pointed there too so no user config, cache or data file is read or written (from
import time on, for session fixtures too; the run fails if anything under the real user's
tablequest folders changed: `pytest_sessionfinish`).

Small synthetic benchmarks (never real data) for the corpus, retrieval, runner and method
tests: `evalrun_wtq` writes a WikiTableQuestions-shaped folder (six tables on distinct
topics, twelve test questions, three training questions); `evalrun_tcr` a TCR-Bench-shaped
one with one gold table and two siblings per group.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["TABLEQUEST_ALLOW_MODEL_REQUESTS"] = "0"  # also during collection
SANDBOX_BUDGET_MB = "65536"  # see isolated_env; also for session-scoped sandboxes
os.environ["TABLEQUEST_SANDBOX_MEMORY_BUDGET"] = SANDBOX_BUDGET_MB

USER_DIRS = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
# kept in the environment: xdist workers (and a second import of this module) share them
REAL_HOME = Path(os.environ.setdefault("TQ_TESTS_REAL_HOME", str(Path.home())))
# HOME and the XDG folders point into one throwaway folder from the moment the suite is
# imported: session fixtures (a local Ray cluster, a shared server) start before the per-test
# `isolated_env`, and their processes keep the environment they were started with, so
# without this a Ray worker wrote its traces under the real user data directory.
SESSION_HOME = Path(
    os.environ.get("TQ_TESTS_SESSION_HOME") or tempfile.mkdtemp(prefix="tq-tests-home-")
)
os.environ["TQ_TESTS_SESSION_HOME"] = str(SESSION_HOME)
os.environ["HOME"] = str(SESSION_HOME)
for _xdg in USER_DIRS:
    os.environ[_xdg] = str(SESSION_HOME / _xdg.lower())


def user_dir_snapshot() -> dict[str, float]:
    """Every file under the real user's tablequest folders, with its modification time."""
    roots = [REAL_HOME / ".config", REAL_HOME / ".cache", REAL_HOME / ".local" / "share"]
    roots.append(REAL_HOME / ".local" / "state")
    found: dict[str, float] = {}
    for root in roots:
        for path in (root / "tablequest").rglob("*"):
            with contextlib.suppress(OSError):
                found[str(path)] = path.stat().st_mtime
    return found


REAL_USER_FILES = user_dir_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if any test wrote under the real user's tablequest folders."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller checks once all workers are done
    shutil.rmtree(SESSION_HOME, ignore_errors=True)
    now = user_dir_snapshot()
    written = sorted(p for p, t in now.items() if REAL_USER_FILES.get(p) != t)
    if written:
        print(f"\ntests wrote under the real HOME ({REAL_HOME}): {written[:5]}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest files first (tests/scheduling.py `ordered`), for the xdist scheduler."""
    from tests.scheduling import ordered

    position = {nodeid: i for i, nodeid in enumerate(ordered([i.nodeid for i in items]))}
    items.sort(key=lambda item: position[item.nodeid])


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each file one unit of work, but for the files spread test by test (tests/scheduling.py)."""
    from tests.scheduling import make_scheduler

    return make_scheduler(config, log)


@pytest.fixture(autouse=True)
def isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """Clean environment for each test; yields the tmp base directory."""
    for name in list(os.environ):
        if name.startswith(("TABLEQUEST_", "OPENAI_")):
            monkeypatch.delenv(name, raising=False)
    base = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("TABLEQUEST_ALLOW_MODEL_REQUESTS", "0")
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("TABLEQUEST_TRACE_DIR", str(base / "traces"))
    # sandbox tests hold several children at once (the escape suite: one per configuration);
    # the budget counts address-space limits, so half of a small CI machine's memory is too
    # little (tests/sandbox/test_sandbox_budget.py tests the default)
    monkeypatch.setenv("TABLEQUEST_SANDBOX_MEMORY_BUDGET", SANDBOX_BUDGET_MB)
    # HOME stays the session's (set at import): Ray keeps its cluster's auth token under
    # ~/.ray, so a CLI started by a test must see the HOME the session's cluster saw
    monkeypatch.setenv("HOME", str(SESSION_HOME))
    for xdg in USER_DIRS:
        monkeypatch.setenv(xdg, str(base / xdg.lower()))
    yield base


WTQ_TABLES: dict[str, list[list[str]]] = {
    "csv/200-csv/0.csv": [
        ["Year", "Team", "League", "Fans"],
        ["2003", "Rochester Rhinos", "USL A-League", "5,871"],
        ["2004", "Rochester Rhinos", "USL A-League", "5,628"],
        ["2005", "Rochester Rhinos", "USL First Division", "6,028"],
    ],
    "csv/200-csv/1.csv": [
        ["City", "Country", "Population"],
        ["Zurich", "Switzerland", "415,367"],
        ["Oslo", "Norway", "709,037"],
        ["Utrecht", "Netherlands", "361,924"],
    ],
    "csv/200-csv/2.csv": [
        ["Nation", "Gold", "Silver", "Bronze"],
        ["Norway", "16", "8", "13"],
        ["Germany", "12", "10", "5"],
        ["Canada", "4", "8", "14"],
    ],
    "csv/201-csv/0.csv": [
        ["Title", "Director", "Year"],
        ["Solaris", "Andrei Tarkovsky", "1972"],
        ["Stalker", "Andrei Tarkovsky", "1979"],
        ["Ran", "Akira Kurosawa", "1985"],
    ],
    "csv/201-csv/1.csv": [
        ["Date", "Opponent", "Score", "Attendance"],
        ["2010-09-04", "Harriers", "2-1", "1200"],
        ["2010-09-11", "Wanderers", "0-0", "950"],
        ["2010-09-18", "Corinthians", "3-2", "1430"],
    ],
    "csv/201-csv/2.csv": [
        ["Mountain", "Height (m)", "Range"],
        ["Matterhorn", "4,478", "Pennine Alps"],
        ["Eiger", "3,967", "Bernese Alps"],
        ["Triglav", "2,864", "Julian Alps"],
    ],
}

WTQ_QUESTIONS = [
    (
        "nu-0",
        "which league did the rochester rhinos play in 2005?",
        "csv/200-csv/0.csv",
        "USL First Division",
    ),
    ("nu-1", "what is the population of zurich?", "csv/200-csv/1.csv", "415,367"),
    ("nu-2", "how many gold medals did germany win?", "csv/200-csv/2.csv", "12"),
    ("nu-3", "who directed stalker?", "csv/201-csv/0.csv", "Andrei Tarkovsky"),
    ("nu-4", "what was the score against the wanderers?", "csv/201-csv/1.csv", "0-0"),
    ("nu-5", "how high is the eiger?", "csv/201-csv/2.csv", "3,967"),
    ("nu-6", "which films did akira kurosawa direct?", "csv/201-csv/0.csv", "Ran"),
    ("nu-7", "which city is in norway?", "csv/200-csv/1.csv", "Oslo"),
    ("nu-8", "which nation won 14 bronze medals?", "csv/200-csv/2.csv", "Canada"),
    ("nu-9", "what range is triglav in?", "csv/201-csv/2.csv", "Julian Alps"),
    (
        "nu-10",
        "who played the harriers and corinthians?",
        "csv/201-csv/1.csv",
        "Harriers|Corinthians",
    ),
    ("nu-11", "how many fans saw the rhinos in 2004?", "csv/200-csv/0.csv", "5,628"),
]

WTQ_TRAINING = [
    ("nt-0", "what is the height of the matterhorn?", "csv/201-csv/2.csv", "4,478"),
    ("nt-1", "when was solaris released?", "csv/201-csv/0.csv", "1972"),
    ("nt-2", "what country is utrecht in?", "csv/200-csv/1.csv", "Netherlands"),
]


def write_wtq(root: Path) -> Path:
    """Write the synthetic WTQ benchmark under `root` and return it."""
    for key, rows in WTQ_TABLES.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, rows in (("pristine-unseen-tables", WTQ_QUESTIONS), ("training", WTQ_TRAINING)):
        lines = ["id\tutterance\tcontext\ttargetValue"]
        lines += ["\t".join(row) for row in rows]
        (data / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


TCR_TABLES = {
    "orders_T0": [
        ["order_id", "customer", "amount"],
        ["101", "Ada", "35"],
        ["102", "Bo", "7"],
        ["103", "Cy", "12"],
    ],
    "orders_T1": [
        ["id_order", "client", "amount"],
        ["104", "Di", "9"],
        ["102", "Bo", "7"],
        ["105", "Ed", "three"],
    ],
    "orders_T2": [["order_id", "customer", "amt"], ["106", "Fay", "8"], ["103", "Cy", "12"]],
    "rivers_T0": [
        ["river", "length_km", "country"],
        ["Rhine", "1233", "Germany"],
        ["Danube", "2850", "Austria"],
    ],
    "rivers_T1": [
        ["river_name", "len", "nation"],
        ["Elbe", "1094", "Germany"],
        ["Danube", "2850", "Austria"],
    ],
}


def write_tcr(root: Path) -> Path:
    """Write a TCR-Bench-shaped benchmark (two groups) under `root` and return it."""
    tables_meta = []
    formats = {
        "orders_T0": "html",
        "orders_T1": "markdown",
        "orders_T2": "csv",
        "rivers_T0": "markdown",
        "rivers_T1": "html",
    }
    for name, rows in TCR_TABLES.items():
        path = root / "tables" / "TCR_8k" / "db" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(rows)
        tables_meta.append(
            {
                "db_id": "db",
                "table_path": name,
                "table_name": name[:-3],
                "table_format": formats[name],
            }
        )
    questions = [
        {
            "question_id": "Question_G0_Q0",
            "db_id": "db",
            "highlighted_table": ["orders_T0"],
            "all_tables_in_group": ["orders_T0", "orders_T1", "orders_T2"],
            "question": "Which customer placed order 101 with an amount of 35?",
            "answer": ["Ada"],
            "answer_index": [0],
            "question_type": "EM",
        },
        {
            "question_id": "Question_G1_Q0",
            "db_id": "db",
            "highlighted_table": ["rivers_T0"],
            "all_tables_in_group": ["rivers_T0", "rivers_T1"],
            "question": "How long is the Rhine river in km?",
            "answer": [1233.0],
            "answer_index": [0],
            "question_type": "EM",
        },
    ]
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "TCR_Questions.json").write_text(json.dumps(questions), encoding="utf-8")
    (data / "TCR_Tables.json").write_text(json.dumps(tables_meta), encoding="utf-8")
    return root


@pytest.fixture
def evalrun_wtq(tmp_path: Path) -> Path:
    return write_wtq(tmp_path / "wtq")


@pytest.fixture
def evalrun_tcr(tmp_path: Path) -> Path:
    return write_tcr(tmp_path / "tcr")


def write_realhitbench_table(root: Path) -> Path:
    """The RealHiTBench fixture's one xlsx (two header rows, merged cells), written at test
    time: git keeps no binary fixture here. Returns `root`."""
    from openpyxl import Workbook

    (root / "data" / "tables").mkdir(parents=True, exist_ok=True)
    wb = Workbook()
    ws = wb.active
    ws.append(["Year", "Employment", None])
    ws.append([None, "Agriculture", "Total"])
    ws.append([1955, 6450, 62170])
    ws.append([1956, 6283, 63799])
    ws.merge_cells("B1:C1")
    ws.merge_cells("A1:A2")
    wb.save(root / "data" / "tables" / "employment-table01.xlsx")
    return root


@pytest.fixture
def realhitbench_tables() -> object:
    """`write_realhitbench_table`, for tests that copy the RealHiTBench fixture."""
    return write_realhitbench_table


def _varna_reply(request: dict[str, object]) -> str:
    """A stub model for the README's examples: TableSeek picks the first candidate and
    answers 412 (the river Varna's length in examples/corpus)."""
    prompt = request["messages"][-1]["content"]  # type: ignore[index]
    if "Candidate tables" in prompt:
        return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
    if "grep patterns" in prompt:
        return json.dumps({"patterns": ["Varna", "river"]})
    cited = [{"table": "Table_0", "column": "Length (km)", "value": "412"}]  # a folder's rivers
    return json.dumps({"status": "answered", "answer": "412", "evidence": cited})


@pytest.fixture
def varna_reply() -> object:
    """`_varna_reply`, for tests that put a stub server behind the README's examples."""
    return _varna_reply
