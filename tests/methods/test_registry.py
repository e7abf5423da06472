"""The method layer: registry, typed options, plugins reachable everywhere, import hygiene."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

import tablequest
from tablequest.cli import app
from tablequest.llm import Scripted
from tablequest.llm.usage import StepBudget
from tablequest.methods import (
    MethodOptions,
    OptionError,
    Result,
    UnknownMethod,
    get_method,
    list_methods,
    option,
    register_method,
    unregister_method,
)
from tablequest.methods.base import MethodContext
from tablequest.methods.options import describe_options, merge_options, toml_options
from tablequest.methods.query import start_query
from tablequest.methods.registry import plugin_errors
from tablequest.methods.run import resolve_options
from tablequest.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tablequest"
runner = CliRunner()


@pytest.fixture()
def echo() -> Iterator[None]:
    """The documented plugin example (docs/library.md, "Adding a method"), registered by
    running its code as written."""
    doc = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "Echo" in b)
    exec(compile(block, "docs/library.md", "exec"), {})
    yield
    unregister_method("echo")


def test_builtin_methods_register_like_plugins() -> None:
    names = [m.name for m in list_methods()]
    for name in ("auto", "seek", "rag", "direct", "no-table", "bm25", "dense", "hybrid", "rerank"):
        assert name in names
    assert plugin_errors() == {}
    assert get_method("rag").input == "table" and get_method("seek").input == "corpus"
    with pytest.raises(UnknownMethod, match="unknown method 'magic'; one of auto, bm25, dense"):
        get_method("magic")


def test_a_method_added_by_one_call_is_reachable_everywhere(
    echo: None, tmp_path: Path, evalrun_wtq: Path
) -> None:
    listed = runner.invoke(app, ["methods"])
    assert listed.exit_code == 0 and "echo" in listed.stdout
    info = runner.invoke(app, ["methods", "echo", "--json"])
    assert json.loads(info.stdout)["options"][0]["name"] == "prefix"
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    asked = runner.invoke(
        app, ["ask", str(table), "hi", "--method", "echo", "-o", "prefix", ">> ", "--json",
              "--trace-dir", str(tmp_path)],
    )  # fmt: skip
    assert asked.exit_code == 0, asked.output
    payload = json.loads(asked.stdout)
    assert payload["answer"] == ">> hi" and payload["method"] == "echo"
    result = tablequest.ask("hi", table, method="echo", trace_dir=tmp_path)
    assert result.answer == "echo: hi" and result.status == "answered"
    out = tmp_path / "run.jsonl"
    ran = runner.invoke(
        app, ["eval", "run", "wtq", "--data", str(evalrun_wtq), "--out", str(out), "--method",
              "echo", "--limit", "2", "--json", "--cache-dir", str(tmp_path / "c")],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["prediction"].startswith("echo: ") for r in records] == [True, True]


def test_option_errors_name_the_option_and_the_fix() -> None:
    rag = get_method("rag")
    with pytest.raises(OptionError, match=r"unknown option 'topk' for method rag \(did you mean "):
        rag.make_options({"topk": "3"})
    with pytest.raises(OptionError, match="option 'top_k' of method rag: Input should be a valid"):
        rag.make_options({"top_k": "three"})
    with pytest.raises(OptionError, match="option 'retrieval' of method rag"):
        rag.make_options({"retrieval": "sparse"})
    assert rag.make_options({"top_k": "3", "expansion": "false", "temperature": "none"}) == (
        tablequest.RagConfig(top_k=3, expansion=False, temperature=None)
    )


def test_named_configs_are_constructors_of_options() -> None:
    seek = get_method("seek")
    cfg = seek.options.from_config("10step-r5-medium")
    assert (cfg.max_steps, cfg.strategy, cfg.evidence) == (10, "r5", "medium")
    assert cfg.default_steps() == 10 and cfg.label() == "10step-r5-medium"
    # a config sets only what its name gives; -o wins over it; the toml is below both
    merged = resolve_options(seek, config="r5", options={"evidence": "big"}, config_paths=[])
    assert (merged.strategy, merged.evidence, merged.max_steps) == ("r5", "big", 5)
    with pytest.raises(OptionError, match="cannot read TableSeek config"):
        seek.options.from_config("12x")
    assert get_method("rag").options.from_config("K=3").top_k == 3
    with pytest.raises(OptionError, match="no named configurations"):
        get_method("direct").options.from_config("gold")


def test_toml_section_is_the_lowest_layer(tmp_path: Path) -> None:
    toml = tmp_path / "tablequest.toml"
    toml.write_text('[methods.seek]\nevidence = "big"\nmax-steps = 7\n[methods.rag]\ntop_k = 9\n')
    seek = get_method("seek")
    assert toml_options("seek", [toml]) == {"evidence": "big", "max_steps": 7}
    opts = resolve_options(seek, config="5s3", config_paths=[toml])
    assert (opts.evidence, opts.max_steps, opts.strategy) == ("big", 7, "5s3")
    opts = resolve_options(seek, options={"max_steps": "3"}, config_paths=[toml])
    assert opts.max_steps == 3
    toml.write_text('[methods.seek]\nevidense = "big"\n')
    with pytest.raises(OptionError, match="unknown option 'evidense' for method seek"):
        resolve_options(seek, config_paths=[toml])
    toml.write_text("[methods\n")
    with pytest.raises(OptionError, match="cannot read"):
        resolve_options(seek, config_paths=[toml])


def test_describe_options_lists_types_defaults_and_papers() -> None:
    infos = {i.name: i for i in describe_options(get_method("rag").options)}
    assert infos["budget"].default == 10_000 and infos["budget"].paper == "TableRAG §4.3"
    assert infos["retrieval"].type == "dense | hybrid"
    assert infos["temperature"].type == "float | none"
    shown = runner.invoke(app, ["methods", "rag"], terminal_width=200)
    assert shown.exit_code == 0
    assert re.search(r"budget\s+│\s+int\s+│\s+10000\s+│\s+TableRAG §4\.3", shown.stdout)


def test_rag_paper_config_and_the_defaults_note() -> None:
    """TableRAG §4.3: text-embedding-3-large, B = 10,000, K = 5, 10 runs majority-voted; the
    cheap default stays, and ``tablequest methods rag`` says which is the default and why."""
    rag = get_method("rag")
    default = resolve_options(rag, config_paths=[])
    assert (default.sc, default.encoder, default.sampling_temperature) == (1, "auto", 0.0)
    paper = resolve_options(rag, config="paper", config_paths=[])
    got = (paper.encoder, paper.embed_model, paper.sc, paper.budget, paper.top_k)
    assert got == ("api", "text-embedding-3-large", 10, 10_000, 5)
    assert paper.retrieval == "dense" and paper.sampling_temperature == 0.8
    # -o still wins over the named configuration
    assert resolve_options(rag, config="paper", options={"sc": "3"}, config_paths=[]).sc == 3
    shown = runner.invoke(app, ["methods", "rag"], terminal_width=200)
    text = " ".join(shown.stdout.split())
    assert "named configs (-c NAME), e.g.: paper," in text
    assert "defaults: one sample (sc = 1, temperature 0) with encoder auto" in text
    assert "-c paper" in text and "text-embedding-3-large" in text
    info = json.loads(runner.invoke(app, ["methods", "rag", "--json"]).stdout)
    assert info["configs"][0] == "paper" and info["notes"].startswith("defaults: one sample")


def test_register_method_validates() -> None:
    with pytest.raises(ValueError, match="bad method name"):
        register_method("Bad Name", lambda o, c: None, input="none", description="x")  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="already registered"):
        register_method("seek", lambda o, c: None, input="corpus", description="x")  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="MethodOptions subclass"):
        register_method("x", lambda o, c: None, dict, input="none", description="x")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="takes RagConfig"):
        get_method("rag").build(get_method("seek").make_options({}))


class CountOptions(MethodOptions):
    calls: int = option(3, "calls to try", ge=1)


class Greedy:
    """A method that ignores the budget: the hard cap must still hold."""

    name = "greedy"

    def __init__(self, options: CountOptions, context: MethodContext) -> None:
        self.options, self.context = options, context

    def answer(self, question: str, source: Any, *, task: Any = "tableqa",
               budget: StepBudget | None = None, trace: Any = None) -> Result:  # fmt: skip
        q = start_query(self.context, budget=budget, trace=trace, default_steps=1)
        answers = []
        assert q.llm is not None
        for _ in range(self.options.calls):
            try:
                answers.append(q.llm.chat([{"role": "user", "content": question}])[0].text)
            except tablequest.LLMError as exc:
                answers.append(type(exc).__name__)
        return q.finish(Result(answer=",".join(answers), status="answered"), self.name)

    def close(self) -> None:
        pass


def test_steps_cap_every_method(tmp_path: Path) -> None:
    register_method("greedy", Greedy, CountOptions, input="none", description="test")
    try:
        llm = Scripted(["a", "b", "c"])
        result = tablequest.ask("q", tmp_path, method="greedy", llm=llm, steps=2,
                                trace_dir=tmp_path)  # fmt: skip
        assert result.answer == "a,b,BudgetExhausted" and result.steps == 2
        assert len(llm.calls) == 2
        calls = [e for e in read_trace(result.trace_path or "") if e["kind"] == "llm_call"]
        assert len(calls) == 2
        default = tablequest.ask("q", tmp_path, method="greedy", llm=Scripted(["x"] * 3),
                                 trace_dir=tmp_path)  # fmt: skip
        assert default.answer == "x,BudgetExhausted,BudgetExhausted"  # default_steps() = 1
    finally:
        unregister_method("greedy")


def test_no_table_baseline_sends_only_the_question(tmp_path: Path) -> None:
    llm = Scripted(['{"answer": "Paris"}'])
    result = tablequest.ask("Capital of France?", tmp_path, method="no-table", llm=llm,
                            trace_dir=tmp_path)  # fmt: skip
    assert result.answer == "Paris" and result.status == "answered"
    assert result.tables_consulted == [] and result.method == "no-table"
    prompt = llm.calls[0].messages[-1]["content"]
    assert "Capital of France?" in prompt and "Table_" not in prompt


# -- import hygiene ------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> Iterator[tuple[str, list[str]]]:
    """(imported module, imported names) for every import in the file, nested ones too."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [a.name for a in node.names]
            yield base, names
            for n in names:
                if f"{base}.{n}" in modules:
                    yield f"{base}.{n}", []


def _graph() -> dict[str, set[str]]:
    files = sorted(SRC.rglob("*.py"))
    modules = {_module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for f in files:
        for target, _ in _imports(f, modules):
            if target in modules and target != _module_name(f):
                graph[_module_name(f)].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, Literal["open", "done"]] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_modules() -> None:
    graph = _graph()
    # a package's __init__ re-exports its submodules; only module → module edges count
    inner = {m: {t for t in ts if not _is_package_init(t) or t == m} for m, ts in graph.items()}
    assert _cycle(inner) is None, _cycle(inner)


def _is_package_init(module: str) -> bool:
    return (SRC.parent / module.replace(".", "/") / "__init__.py").is_file()


def test_corpus_store_is_storage_only() -> None:
    # storefile is the store's own file handling (what a path holds, locks, write failures);
    # relations is the store's typed relations (names, types), itself storage only
    graph = _graph()
    store = {
        t for t in graph["tablequest.corpus.storage.store"] if t.startswith("tablequest.corpus")
    }
    own = {"tablequest.corpus.storage.storefile", "tablequest.corpus.storage.relations"}
    parts = {f"tablequest.corpus.storage.{m}" for m in ("storeformat", "storewrites", "tablerows")}
    assert store <= own | parts | {"tablequest.corpus.storage"}
    for part in parts:  # the modules store.py is split into are storage only too
        assert {t for t in graph[part] if t.startswith("tablequest.corpus")} <= own | parts | {
            "tablequest.corpus.storage"
        }
    relations = graph["tablequest.corpus.storage.relations"]
    assert not {t for t in relations if t.startswith("tablequest.corpus")}
    leaf = {t for t in graph["tablequest.corpus.storage.storefile"] if t.startswith("tablequest")}
    # the exception base and the settings (the lock timeout), the two lowest layers
    assert leaf <= {"tablequest.errors", "tablequest.settings"}


def test_cli_imports_no_private_name_of_methods() -> None:
    files = sorted(SRC.rglob("*.py"))
    modules = {_module_name(f) for f in files}
    for f in sorted((SRC / "cli").rglob("*.py")):
        for target, names in _imports(f, modules):
            if target.startswith("tablequest.methods"):
                private = [n for n in names if n.startswith("_")]
                assert not private, f"{f.name} imports {private} from {target}"
                assert not any(p.startswith("_") for p in target.split(".")), (f.name, target)


def test_merge_options_keeps_lower_layers_a_config_leaves_alone() -> None:
    seek = get_method("seek")
    named = seek.options.from_config("r5")
    opts = merge_options("seek", seek.options, {"evidence": "full"}, named)
    assert (opts.evidence, opts.strategy) == ("full", "r5")
