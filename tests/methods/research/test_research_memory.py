"""The siamese experience memory (DTR §3.4): statistics folding, lessons, modes, concurrency."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tablequest.corpus import Store
from tablequest.methods.research.memory import (
    ExperienceMemory,
    FeedbackRecord,
    Lesson,
    MemoryUnavailable,
    default_memory_path,
)
from tablequest.methods.research.operations import Rule


def fb(path: str, reward: float) -> FeedbackRecord:
    return FeedbackRecord(path, int(reward > 0), 0.1, int(reward > 0.5), reward)


def test_statistics_fold_in_time_order_with_the_update_rule(tmp_path: Path) -> None:
    memory = ExperienceMemory(path=tmp_path / "m.duckdb")
    assert memory.stats("c2-r1", "aggregation") == {}  # no file yet: nothing, no error
    memory.record("c2-r1", "aggregation", [fb("A", 1.0), fb("B", 0.0)])
    memory.record("c2-r1", "aggregation", [fb("A", 0.0)])
    memory.record("other", "aggregation", [fb("A", 1.0)])
    stats = memory.stats("c2-r1", "aggregation")
    assert (stats["A"].n, stats["A"].r_hat) == (2, 0.5) and (stats["B"].n, stats["B"].r_hat) == (
        1,
        0,
    )
    lr = memory.stats("c2-r1", "aggregation", rule="lr", eta=0.5)
    assert lr["A"].r_hat == pytest.approx(0.5 * (0.5 * 0 + 0.5 * 1.0) + 0.5 * 0.0)
    assert memory.stats("c2-r1", "ranking") == {}


def test_lessons_same_structure_first_then_by_count(tmp_path: Path) -> None:
    memory = ExperienceMemory(path=tmp_path / "m.duckdb")
    rule = Rule("before", "FILTER", "AGG")
    memory.record("s1", "aggregation", [], [Lesson("filter first", rule)])
    memory.record("s2", "aggregation", [], [Lesson("clean first")])
    memory.record("s2", "aggregation", [], [Lesson("clean first")])
    memory.record("s1", "ranking", [], [Lesson("sort once")])
    lessons = memory.lessons("s1", "aggregation", limit=5)
    assert [(x.text, x.count) for x in lessons] == [("filter first", 1), ("clean first", 2)]
    assert lessons[0].rule == rule and lessons[1].rule is None
    assert memory.lessons("s1", "aggregation", limit=0) == []


def test_show_and_clear(tmp_path: Path) -> None:
    memory = ExperienceMemory(path=tmp_path / "m.duckdb")
    memory.record("s", "lookup", [fb("A", 1.0), fb("A", 0.5)], [Lesson("x")])
    summary = memory.summary()
    assert summary["paths"] == [
        {"structure": "s", "query_type": "lookup", "path": "A", "n": 2, "mean_reward": 0.75}
    ]
    assert summary["lessons"] == [{"query_type": "lookup", "lesson": "x", "count": 1}]
    assert memory.clear() == (2, 1)
    assert memory.summary() == {"paths": [], "lessons": []}


def test_read_only_memory_refuses_to_write(tmp_path: Path) -> None:
    memory = ExperienceMemory(path=tmp_path / "m.duckdb", writable=False)
    with pytest.raises(MemoryUnavailable, match="read-only"):
        memory.record("s", "lookup", [fb("A", 1.0)])
    assert not (tmp_path / "m.duckdb").exists()


def test_read_only_store_makes_the_memory_read_only(tmp_path: Path) -> None:
    path = tmp_path / "corpus.duckdb"
    Store(path).close()
    with Store(path, read_only=True) as store:
        memory = ExperienceMemory(store=store)
        assert memory.stats("s", "lookup") == {}
        with pytest.raises(MemoryUnavailable, match="cannot write"):
            memory.record("s", "lookup", [fb("A", 1.0)])
        assert not memory.writable


def test_default_path_is_in_the_user_data_dir(isolated_env: Path) -> None:
    assert default_memory_path().is_relative_to(isolated_env)


def test_concurrent_threads_lose_no_record(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"

    def work(i: int) -> None:
        memory = ExperienceMemory(path=path)
        for j in range(10):
            memory.record("s", "lookup", [fb(f"P{i}", 1.0), fb("shared", j / 10)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = ExperienceMemory(path=path).stats("s", "lookup")
    assert stats["shared"].n == 40 and all(stats[f"P{i}"].n == 10 for i in range(4))


WRITER = """
import sys
from pathlib import Path
from tablequest.methods.research.memory import ExperienceMemory, FeedbackRecord, Lesson
path, i = Path(sys.argv[1]), sys.argv[2]
memory = ExperienceMemory(path=path)
for _ in range(5):
    memory.record("s", "lookup", [FeedbackRecord(f"P{i}", 1, 0.1, 1, 1.0)], [Lesson(f"lesson {i}")])
"""


@pytest.mark.slow
def test_concurrent_processes_lose_no_record(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(i)]) for i in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    stats = ExperienceMemory(path=path).stats("s", "lookup")
    assert [stats[f"P{i}"].n for i in range(3)] == [5, 5, 5]
    lessons = ExperienceMemory(path=path).lessons("s", "lookup", limit=10)
    assert sorted(x.count for x in lessons) == [5, 5, 5]


def test_a_run_over_a_read_only_corpus_learns_in_its_state_folder(tmp_path: Path) -> None:
    """An evaluation run opens its corpus read-only: DTR then keeps its experience in the
    run's own state folder (`MethodContext.state_dir`) and learns across questions."""
    from tablequest.methods.base import MethodContext
    from tablequest.methods.research import DTR, ResearchOptions
    from tablequest.trace import Trace

    path = tmp_path / "corpus.duckdb"
    Store(path).close()
    context = MethodContext(state_dir=tmp_path / "run.state")
    method = DTR(ResearchOptions(), context)
    with Store(path, read_only=True) as store:
        memory = method._memory(store, Trace(None))
        assert memory is not None and memory.writable
        memory.record("s", "lookup", [fb("A", 1.0)])
        memory.flush()
        assert memory.stats("s", "lookup")["A"].n == 1
    assert (tmp_path / "run.state" / "dtr_memory.duckdb").exists()
    with Store(path, read_only=True) as store:  # without a state folder: the store, read-only
        plain = DTR(ResearchOptions(), MethodContext())._memory(store, Trace(None))
        assert plain is not None
        with pytest.raises(MemoryUnavailable, match="cannot write"):
            plain.record("s", "lookup", [fb("A", 1.0)])
