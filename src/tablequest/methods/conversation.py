"""Conversations: follow-up questions over one store (issue 39, "Follow-up questions").

A `Conversation` is the questions asked in a row about one store, with what answered each
(`Turn`). `ask(question, source, conversation=conv)` (`tablequest.methods.run.ask`) asks in
it: the first question is asked as it is; a later one ("and for Q4?") is first rewritten
with the conversation's last `HISTORY_TURNS` turns into one standalone question by one model
call (`rewrite`, the prompt `REWRITE_SYSTEM`). That call is an ``llm_call`` event of the
question's trace and a ``decision`` event ``stage="rewrite"`` records the question as asked,
the standalone one and the tables preferred; the Result carries both
(``details["conversation"]``; ``to_json()``'s ``conversation_id`` and
``rewritten_question``), so every surface shows the rewritten question. Without a model, or
when the call fails or answers nothing, the follow-up is asked as it is (the event says why).
A follow-up prefers the previous answer's tables: unless the caller names tables, the
previous turn's tables (its final table and evidence tables, else the tables it consulted)
are passed to the method as its table ids (`preferred_tables`; a method that answers from
one table gets them only when there is one; tables no longer in the store are dropped).

Where conversations are kept (`Conversations.for_source`), one JSON file per conversation
(``<id>.json``: ``{"id", "created", "updated", "turns": [{"question", "standalone",
"answer", "status", "tables", "trace", "at"}]}``):

- a store file or a sharded corpus's manifest: the folder ``STORE.conversations/`` beside it
  (like the server's ``STORE.uploads/``); the store file itself is never written, so its
  format, read-only openings and the server's copy-on-write generations are untouched;
- a table file or a folder (no store): ``<cache dir>/conversations/<name>-<hash of the
  absolute path>/``;
- an in-memory corpus, a `Table` or a `TableSet`: nowhere (the `Conversation` object only).

A file is written whole to a temporary name and renamed over the old one; a turn is added
under a process-wide lock after re-reading the file, so asks running at once in one
conversation (the server's pool) keep every turn. Two processes adding a turn to the same
conversation at the same instant may lose one (the last rename wins). A folder that cannot
be written (a read-only medium) costs the history, never the answer: the failure is logged
once per ask. At most `KEEP` conversations are kept per store; the least recently updated go
first. Ids are 12 lowercase hex digits (`CONVERSATION_ID`); ``latest`` names the most
recently updated one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.corpus import is_corpus_file
from tablequest.errors import BadValue
from tablequest.llm import LLM, Instrumented, LLMError, UsageMeter, default_cache_dir
from tablequest.trace import Trace

if TYPE_CHECKING:
    from tablequest.methods.base import Input
    from tablequest.methods.result import Result

__all__ = [
    "CONVERSATION_ID",
    "HISTORY_TURNS",
    "KEEP",
    "LATEST",
    "REWRITE_SYSTEM",
    "Conversation",
    "Conversations",
    "FollowUp",
    "Turn",
    "UnknownConversation",
    "preferred_tables",
    "rewrite",
]

log = logging.getLogger(__name__)

CONVERSATION_ID = re.compile(r"^[0-9a-f]{12}$")
LATEST = "latest"
MEMORY = ":memory:"
HISTORY_TURNS = 6
"""The turns a rewrite shows the model (the latest ones)."""
ANSWER_CHARS = 500
"""An earlier answer is cut to this many characters in the rewrite prompt."""
KEEP = 500
"""Conversations kept per store (the least recently updated are removed first)."""
_LOCK = threading.Lock()

REWRITE_SYSTEM = (
    "You rewrite a follow-up question about tables into one standalone question. Use the "
    "conversation to resolve what the follow-up refers to (pronouns, or an ellipsis such as "
    "'and for Q4?'), keeping names, numbers and units exactly as written. If the follow-up "
    "already stands alone, repeat it unchanged. Reply with the standalone question only, on "
    "one line."
)


class UnknownConversation(BadValue):
    """A conversation id the store does not hold (the API: 404)."""

    http_status = 404
    code = "unknown_conversation"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Turn:
    """One question of a conversation: as asked, as answered (`standalone`), and its answer."""

    question: str
    standalone: str
    answer: str | None
    status: str
    tables: list[str] = field(default_factory=list)
    trace: str | None = None
    at: str = field(default_factory=_now)

    @property
    def rewritten(self) -> bool:
        return self.standalone != self.question


@dataclass(frozen=True)
class FollowUp:
    """What `Conversation.prepare` made of a question: the `question` to answer, whether it
    was `rewritten`, and the tables the conversation prefers (`table_ids`)."""

    asked: str
    question: str
    rewritten: bool
    table_ids: tuple[str, ...] = ()


@dataclass
class Conversation:
    """The questions asked in a row about one store (module doc). `folder`: where it is
    kept (None: in memory only)."""

    id: str
    created: str = field(default_factory=_now)
    updated: str = ""
    turns: list[Turn] = field(default_factory=list)
    folder: Path | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created

    @property
    def title(self) -> str:
        """The first question (what a list shows)."""
        return self.turns[0].question if self.turns else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "updated": self.updated,
            "turns": [asdict(t) for t in self.turns],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], folder: Path | None = None) -> Conversation:
        turns = [Turn(**{k: v for k, v in t.items() if k in Turn.__dataclass_fields__})
                 for t in data.get("turns", [])]  # fmt: skip
        return cls(str(data["id"]), str(data.get("created") or _now()),
                   str(data.get("updated") or ""), turns, folder)  # fmt: skip

    # -- asking ------------------------------------------------------------------------
    def prepare(
        self,
        question: str,
        *,
        llm: LLM | None,
        trace: Trace,
        input: Input = "corpus",
        usage: UsageMeter | None = None,
    ) -> FollowUp:
        """The question to answer and the tables to prefer (module doc); the first question
        of a conversation is returned as it is, with no event."""
        if not self.turns:
            return FollowUp(question, question, False)
        preferred = preferred_tables(self.turns[-1], input)
        reason = None
        standalone = question
        if llm is None:
            reason = "no LLM configured"
        else:
            try:
                standalone = rewrite(question, self.turns, llm, trace=trace, usage=usage)
            except LLMError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            if not standalone.strip():
                standalone, reason = question, "the model answered nothing"
        trace.event(
            "decision", stage="rewrite", conversation=self.id, question=question,
            standalone=standalone, rewritten=standalone != question, table_ids=list(preferred),
            reason=reason,
        )  # fmt: skip
        return FollowUp(question, standalone, standalone != question, preferred)

    def record(self, followup: FollowUp, result: Result) -> Turn:
        """Add the turn `result` answered, note the conversation on the Result
        (``details["conversation"]``) and save (a failed write is logged, module doc)."""
        turn = Turn(
            question=followup.asked,
            standalone=followup.question,
            answer=result.answer,
            status=str(result.status),
            tables=answer_tables(result),
            trace=result.trace_path,
        )
        with _LOCK:
            stored = self._read()
            if stored is not None:
                self.turns = stored.turns
            self.turns.append(turn)
            self.updated = turn.at
            self._write()
        result.details["conversation"] = {
            "id": self.id,
            "turn": len(self.turns),
            "question": followup.asked,
            "rewritten_question": followup.question if followup.rewritten else None,
            "table_ids": list(followup.table_ids),
        }
        return turn

    # -- storage -----------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        return None if self.folder is None else self.folder / f"{self.id}.json"

    def _read(self) -> Conversation | None:
        path = self.path
        if path is None or not path.is_file():
            return None
        return _load(path, self.folder)

    def _write(self) -> None:
        path = self.path
        if path is None or self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1))
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("conversation %s not saved in %s: %s", self.id, self.folder, exc)
            return
        _prune(self.folder)


def answer_tables(result: Result) -> list[str]:
    """The tables an answer came from: its final table and its evidence's tables, else the
    tables it consulted."""
    ids = [*([result.final_table] if result.final_table else []),
           *(c.table_id for c in result.evidence)]  # fmt: skip
    if not ids:
        ids = list(result.tables_consulted)
    return list(dict.fromkeys(ids))


def preferred_tables(turn: Turn, input: Input) -> tuple[str, ...]:
    """The previous turn's tables as table ids for a method that answers from `input`."""
    if input == "none" or (input == "table" and len(turn.tables) != 1):
        return ()
    return tuple(turn.tables)


def rewrite(
    question: str,
    history: Sequence[Turn],
    llm: LLM,
    *,
    trace: Trace | None = None,
    usage: UsageMeter | None = None,
) -> str:
    """`question` rewritten as a standalone question from `history` by one call of `llm`
    (recorded in `trace` as an ``llm_call`` event); "" when the model answers nothing.

    Raises:
        LLMError: the call failed.
    """
    lines = []
    for n, turn in enumerate(history[-HISTORY_TURNS:], 1):
        answer = (turn.answer or f"(not answered: {turn.status})")[:ANSWER_CHARS]
        lines += [f"Q{n}: {turn.standalone}", f"A{n}: {answer}"]
    user = "Conversation:\n" + "\n".join(lines) + f"\n\nFollow-up: {question}\nStandalone question:"
    model = Instrumented(llm, trace=trace, usage=usage)
    messages = [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": user}]
    reply = model.chat(messages, temperature=0.0, max_tokens=256)[0].text
    return _clean(reply or "")


def _clean(reply: str) -> str:
    for line in reply.strip().splitlines():
        line = re.sub(r"^(standalone question|question)\s*:\s*", "", line.strip(), flags=re.I)
        line = line.strip().strip("\"'“”`").strip()
        if line:
            return line
    return ""


def _load(path: Path, folder: Path | None) -> Conversation | None:
    try:
        data = json.loads(path.read_text())
        return Conversation.from_json(data, folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("unreadable conversation file %s: %s", path, exc)
        return None


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()


class Conversations:
    """The conversations of one store (module doc): `new`, `get`, `list`, `delete`.
    `folder` None keeps them in memory (an in-memory corpus)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: dict[str, Conversation] = {}

    @classmethod
    def for_source(cls, source: object, cache_dir: Path | None = None) -> Conversations:
        """Where `source`'s conversations are kept (module doc): `source` is a store file,
        a manifest, a table file, a folder or an opened `Corpus` (anything else: memory)."""
        if isinstance(source, str | Path):
            path = Path(source).expanduser().resolve()
            if is_corpus_file(path):
                return cls(path.with_name(path.name + ".conversations"))
            digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.name)[:40] or "root"
            root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            return cls(root / "conversations" / f"{slug}-{digest}")
        name = getattr(source, "name", None)  # an opened corpus names its store file
        if hasattr(source, "table_ids") and isinstance(name, str) and name not in ("", MEMORY):
            path = Path(name).expanduser().resolve()
            return cls(path.with_name(path.name + ".conversations"))
        return cls(None)

    def new(self) -> Conversation:
        """A new, empty conversation (saved with its first turn)."""
        conv = Conversation(secrets.token_hex(6), folder=self.folder)
        if self.folder is None:
            self._memory[conv.id] = conv
        return conv

    def list(self) -> list[Conversation]:
        """Every conversation with at least one turn, most recently updated first."""
        if self.folder is None:
            found = list(self._memory.values())
        elif not self.folder.is_dir():
            found = []
        else:
            loaded = (_load(p, self.folder) for p in self.folder.glob("*.json"))
            found = [c for c in loaded if c is not None]
        return sorted((c for c in found if c.turns), key=lambda c: c.updated, reverse=True)

    def get(self, conversation_id: str) -> Conversation:
        """The conversation `conversation_id` (``latest``: the most recently updated).

        Raises:
            UnknownConversation: no such conversation here.
        """
        if conversation_id == LATEST:
            kept = self.list()
            if not kept:
                raise UnknownConversation("no conversation yet with this store")
            return kept[0]
        found = None
        if CONVERSATION_ID.match(conversation_id):
            if self.folder is None:
                found = self._memory.get(conversation_id)
            elif (self.folder / f"{conversation_id}.json").is_file():
                found = _load(self.folder / f"{conversation_id}.json", self.folder)
        if found is None:
            raise UnknownConversation(
                f"no conversation {conversation_id!r} with this store; "
                "`tablequest conversations` lists them"
            )
        return found

    def delete(self, conversation_id: str) -> None:
        """Remove the conversation `conversation_id`.

        Raises:
            UnknownConversation: no such conversation here.
        """
        conv = self.get(conversation_id)
        if self.folder is None:
            self._memory.pop(conv.id, None)
            return
        with _LOCK:
            (self.folder / f"{conv.id}.json").unlink(missing_ok=True)
