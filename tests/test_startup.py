"""Starting up stays light: `import tablequest.table` and `import tablequest.cli.app` (what
``tablequest --version`` and ``--help`` import) load no model client, web framework, DuckDB,
pandas or ML runtime; the commands import those when they run (issue 38).

Each check runs in a fresh interpreter (a module an earlier test imported would hide a
regression). No timings: what is imported is the stable signal.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

HEAVY_FOR_TABLE = ("openai", "duckdb", "torch", "onnxruntime", "fastapi")
HEAVY_FOR_CLI = (
    *HEAVY_FOR_TABLE,
    "pandas",
    "numpy",
    "pyarrow",
    "httpx",
    "rich",
    "tablequest.llm",
    "tablequest.methods",
    "tablequest.corpus",
    "tablequest.eval",
    "tablequest.serve",
    "tablequest.service",
    "tablequest.mcpserver",
    "tablequest.table",
)


def _loaded_after(statement: str, watched: tuple[str, ...]) -> list[str]:
    """The modules of `watched` (or their submodules) that `statement` loads, run in a new
    interpreter."""
    code = (
        "import json, sys\n"
        f"{statement}\n"
        f"watched = {list(watched)!r}\n"
        "print(json.dumps(sorted(w for w in watched if any("
        "m == w or m.startswith(w + '.') for m in sys.modules))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_import_table_loads_no_model_client_database_or_ml_runtime() -> None:
    assert _loaded_after("import tablequest.table", HEAVY_FOR_TABLE) == []


def test_import_cli_app_loads_no_library_module() -> None:
    assert _loaded_after("import tablequest.cli.app", HEAVY_FOR_CLI) == []


def _console_script(args: list[str]) -> str:
    """Python that runs the console script's `main` with `args` and expects a clean exit."""
    return (
        "import sys\n"
        "from tablequest.cli.app import main\n"
        f"sys.argv = ['tablequest', *{args!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
    )


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["show", "--help"]])
def test_version_and_help_load_no_library_module(args: list[str]) -> None:
    """The console script's path: parsing and help pages import no library module (help
    pages use rich, through typer)."""
    statement = _console_script(args)
    watched = tuple(m for m in HEAVY_FOR_CLI if m != "rich")
    assert _loaded_after(statement, watched) == []


HELP_ONLY_UNUSED = ("rich.markdown", "markdown_it", "pygments", "rich.traceback", "attr")
"""What `typer.rich_utils` imports for Markdown help and pretty exceptions, neither used on
our help pages (`tablequest.cli._richhelp`)."""


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"]])
def test_help_pages_are_rich_without_markdown_or_traceback_renderers(args: list[str]) -> None:
    statement = _console_script(args)
    watched = ("typer.rich_utils", *HELP_ONLY_UNUSED)  # the page is typer's rich one
    assert _loaded_after(statement, watched) == ["typer.rich_utils"]


def test_the_deferred_renderers_are_the_real_ones_when_used() -> None:
    statement = (
        "from tablequest.cli._richhelp import load_rich_help\n"
        "load_rich_help()\n"
        "import typer.rich_utils as ru\n"
        "import rich.markdown, rich.traceback\n"
        "assert type(ru.Markdown('*x*')) is rich.markdown.Markdown\n"
        "assert ru.Traceback.from_exception.__self__ is rich.traceback.Traceback\n"
        "assert sys.modules['rich.markdown'] is rich.markdown\n"
    )
    assert _loaded_after(statement, ("rich.markdown", "rich.traceback")) == [
        "rich.markdown",
        "rich.traceback",
    ]


def test_the_clis_copies_of_library_values_equal_the_library() -> None:
    from tablequest.cli import _defaults

    for copy, source in _defaults.SOURCES.items():
        module, name = source.split(":")
        value: Any = getattr(importlib.import_module(module), name)
        expected = tuple(value) if isinstance(value, dict) else value
        assert getattr(_defaults, copy) == expected, (copy, source)


def test_the_export_formats_of_show_are_the_library_ones() -> None:
    from tablequest.cli import tables
    from tablequest.corpus.storage.browse import EXPORT_FORMATS

    assert tables.EXPORT_FORMATS == EXPORT_FORMATS


def test_help_lists_the_registered_retrievers_and_encoders() -> None:
    """Help texts that list a plugin registry are filled when the help page is shown."""
    from tablequest.cli import app
    from tablequest.corpus.dense.encoders import ENCODERS
    from tablequest.corpus.retrieval.retrievers import RETRIEVERS

    runner = CliRunner()
    for words in (["search"], ["eval", "retrieval"]):
        shown = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "400"}).stdout
        assert "{RETRIEVERS}" not in shown and "{ENCODERS}" not in shown, words
        assert " | ".join(RETRIEVERS) in shown and " | ".join(ENCODERS) in shown, words
