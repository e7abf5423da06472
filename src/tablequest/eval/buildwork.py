"""What a cold corpus build does beside storing the tables (`BuildWork`, issue 38).

A cold ``eval retrieval`` spends its time in two kinds of work: Python (reading the files,
building the store and the lexical indexes, one core) and the encoder (ONNX Runtime, which
releases the GIL and runs on every core). Done one after the other, one core idles through
the first. So a build given a `BuildWork` encodes as it goes: each batch of tables is handed
to the process's one encoding thread (`corpus.on_encoding_thread`) as soon as it is read,
after the evaluation's questions; the build's thread goes on reading files and then builds
the indexes; at the end it waits for the vectors and saves them with the corpus (then
`eval.corpora.build_corpus` adds them to the shared cache). Each distinct text is encoded
once (WTQ: 2,104 header lines, 1,646 distinct).

The model is loaded on the build's thread before anything is queued: loading mutes stderr
process-wide (`quiet_model_loading`), which must not swallow the build's own messages.
`base_indexes=False` leaves out the grep and BM25 indexes (``phrase-hybrid`` reads neither;
a later build of the cached corpus for a method that does adds them, `_add_indexes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tablequest.corpus import (
    Store,
    View,
    embedding_model,
    ensure_indexes,
    header_line,
    on_encoding_thread,
    save_vectors,
)
from tablequest.table import Table

__all__ = ["BuildWork"]

Vectors = dict[str, Any]


def _encode(encoder: Any, texts: list[str]) -> Vectors:
    """text → vector of each of `texts` (distinct)."""
    return dict(zip(texts, encoder.encode(texts), strict=True))


@dataclass
class BuildWork:
    """The vectors, indexes and question vectors a build makes beside the tables (see the
    module doc). `encoder` None: only `indexes` (and the grep and BM25 ones)."""

    encoder: Any = None
    views: tuple[View, ...] = ("table",)
    indexes: Callable[[Store], object] | None = None
    prime: Callable[[Sequence[str]], object] | None = None
    questions: tuple[str, ...] = ()
    base_indexes: bool = True
    _texts: dict[View, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _queued: dict[View, set[str]] = field(default_factory=dict, init=False, repr=False)
    _futures: list[Future[Vectors]] = field(default_factory=list, init=False, repr=False)
    _primed: Future[object] | None = field(default=None, init=False, repr=False)

    def begin(self) -> None:
        """Load the model here and queue the questions' vectors first."""
        if self.encoder is None:
            return
        self.encoder.encode([])  # loading mutes stderr process-wide: not on the other thread
        if self.prime is not None and self.questions:
            self._primed = on_encoding_thread(self.prime, list(self.questions))

    def stored(self, tables: Sequence[tuple[str, str, Table]]) -> None:
        """Queue the vectors of a batch of (content hash, plain text, table) just read."""
        if self.encoder is None:
            return
        for view in self.views:
            texts = self._texts.setdefault(view, {})
            queued = self._queued.setdefault(view, set())
            new: list[str] = []
            for chash, plain, table in tables:
                text = plain if view == "table" else header_line(table.cells, table.n_header_rows)
                texts.setdefault(chash, text)
                if text not in queued:
                    queued.add(text)
                    new.append(text)
            if new:
                self._futures.append(on_encoding_thread(_encode, self.encoder, new))

    def cancel(self) -> None:
        """Drop the encodings not started yet (a failed or stopped build)."""
        for future in (*self._futures, self._primed):
            if future is not None:
                future.cancel()

    def finish(self, store: Store) -> None:
        """Build the indexes, then wait for the vectors and save them in `store`."""
        if self.base_indexes:
            ensure_indexes(store)  # grep and BM25, built now and persisted with the corpus
        if self.indexes is not None:
            self.indexes(store)
        by_text: Vectors = {}
        for future in self._futures:
            by_text.update(future.result())
        for view, texts in self._texts.items():
            model = embedding_model(self.encoder.name, view)
            save_vectors(store, model, {h: by_text[t] for h, t in texts.items()})
        if self._primed is not None:
            self._primed.result()
