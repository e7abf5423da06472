"""`tablequest rm ID...`: remove tables from a store (`tablequest.corpus.remove_tables`).

Each table leaves every part of the store: its row, its typed relation, its vectors, and the
grep and BM25 indexes, which are rebuilt without it, so `search` and `ask` no longer find it.
All ids are checked first: an id the store does not hold is an error naming it (exit 2) and
nothing is removed. The store must exist (never created here).
"""

from __future__ import annotations

from typing import Annotated

import typer

from tablequest.cli._options import JsonOpt, StoreOpt, default_store_path, require_store
from tablequest.cli._output import fail_on, print_json

__all__ = ["rm_command"]


def rm_command(
    table_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="ID...", help="Table ids to remove (`tablequest tables` lists them)."
        ),
    ],
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove tables from the store: every index and the SQL relation (unknown ids: nothing
    is removed)."""
    from tablequest.cli._output import console
    from tablequest.corpus import StoreError, UnknownTables, open_corpus, remove_tables

    path = store.expanduser() if store is not None else default_store_path()
    require_store(path, json_out=json_out)
    try:
        with open_corpus(path, read_only=False) as corpus:
            removed = remove_tables(corpus, table_ids)
            left = len(corpus)
    except (UnknownTables, StoreError) as exc:
        fail_on(exc, json_out=json_out)
    if json_out:
        print_json({"removed": removed, "tables_left": left})
        return
    console.print(
        f"removed {len(removed)} table{'s' if len(removed) != 1 else ''}: "
        f"{', '.join(removed)} ({left} left in {path})",
        markup=False, highlight=False, soft_wrap=True,
    )  # fmt: skip
