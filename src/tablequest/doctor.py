"""Checks that tablequest can work here: the model, the sandbox, the extras, a store.

`run_checks` yields one `Check(check, ok, detail)` per line of ``tablequest doctor``: `ok` is
True (✓), False (✗, a failure) or None (–: not applicable or not checked; never a failure).

Choices (ours):
- **The model is resolved as `ask` resolves it** (`resolve_config` + `build_llm`: flags >
  environment > tablequest.toml), but with the cache off (a cached reply proves nothing), no
  retries, at most `MODEL_TIMEOUT` seconds of silence per request and a `Deadline` of as
  much per call, so no check hangs and a refused connection, a rejected key or an unknown
  model is one line naming the URL (the client's `ModelUnreachable`).
- **One chat call, then one JSON reply** (``response_format={"type": "json_object"}``),
  parsed strictly, else as the methods parse replies (`extract_json`: fences, think blocks);
  only a reply no method could read fails. After a failed chat call the checks that need the
  model are skipped (–), so a down server costs one bounded attempt.
- **Context length** is what the server says (vLLM's ``max_model_len`` in ``/v1/models``,
  llama.cpp's ``n_ctx`` in ``/props``: `tablequest.llm.modelserver.ModelServer`); a server
  that does not say is "unknown" (–), not a failure.
- **Embeddings**: with an embeddings URL (``--embed-url``) one request must return a vector
  (✗ otherwise). Without one, the model server is probed as encoder ``auto`` probes it, and
  the line says which encoder ``auto`` will use (never a failure).
- **Sandbox**: `Sandbox` resolves the isolation policy as every method does (strict needs
  bubblewrap; degraded is an opt-in), then one real child reports its layers. A sandbox that
  cannot start is a failure (the methods that run code would fail).
- **Extras** come from the installed package's metadata (every extra but ``dev``): each
  distribution installed in a matching version, and its top-level modules found on the path
  (`importlib.util.find_spec`, without importing them: importing torch or ray takes seconds
  and runs their start-up code). An extra not (fully) installed is –; a distribution that
  is installed but whose modules cannot be found is a failure.
- **Store**: opened read-only (never created, never written): its table count and whether
  its retrieval indexes are saved.
- **Config**: one line per ``tablequest.toml`` read (`tablequest.configfile.find`), trusted
  or not and why, and the keys ignored because it is not trusted; information (–), never a
  failure, since ignoring them is the safe outcome.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tablequest import configfile
from tablequest.configfile import ConfigFile, ConfigFileError
from tablequest.corpus import (
    EncoderSettings,
    describe_device,
    minilm_installed,
    probe_embeddings,
    static_installed,
)
from tablequest.llm import (
    LLM,
    OPENAI_URL,
    ConfigError,
    Deadline,
    DeadlineExceeded,
    LLMConfig,
    LLMError,
    ModelServer,
    ModelServerError,
    ParseError,
    build_llm,
    call_scope,
    extract_json,
    strip_think,
)
from tablequest.methods import OptionError, guarded_keys
from tablequest.settings import EmbeddingsSettings, Settings

__all__ = [
    "CHECKS",
    "MODEL_TIMEOUT",
    "Check",
    "CheckGroup",
    "check_config",
    "check_embeddings",
    "check_extras",
    "check_model",
    "check_sandbox",
    "check_store",
    "run_checks",
]

MODEL_TIMEOUT = 10.0
Isolation = Literal["strict", "degraded"]
CheckGroup = Literal["config", "model", "sandbox", "extras", "store"]
CHECKS: tuple[CheckGroup, ...] = ("config", "model", "sandbox", "extras", "store")
NO_MODEL = (
    "no model configured: pass --llm-url http://HOST:PORT/v1 --model NAME (any "
    "OpenAI-compatible server), set TABLEQUEST_LLM_URL and TABLEQUEST_LLM_MODEL, or pass "
    "--llm gguf:/path/model.gguf"
)
CHAT_PROMPT = "Reply with the single word: ok"
NO_STORE = "none given, and no default store (pass --store STORE)"
JSON_PROMPT = 'Reply with exactly this JSON object and nothing else: {"ok": true}'


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report: `ok` True (✓), False (✗ failure) or None (– information)."""

    check: str
    ok: bool | None
    detail: str
    no_model: bool = False  # the failure is "no model configured" (exit status NO_MODEL)

    def to_json(self) -> dict[str, Any]:
        """``{"check", "ok", "detail"}``."""
        return {"check": self.check, "ok": self.ok, "detail": self.detail}


# -- the model -------------------------------------------------------------------------------


def _where(config: LLMConfig) -> str:
    url = config.url or OPENAI_URL
    sources = f"url from {config.sources.get('url')}, model from {config.sources.get('model')}"
    return f"{config.model!r} at {url} ({sources})"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _why(exc: LLMError, timeout: float) -> str:
    """The error's line; a passed deadline is said in doctor's terms (its --timeout)."""
    if isinstance(exc, DeadlineExceeded):
        where = exc.url or "the model"
        return f"no complete reply from {where} within {timeout:g} s (doctor --timeout SECONDS)"
    return str(exc)


def _chat(llm: LLM, timeout: float, prompt: str, **kwargs: Any) -> tuple[str, str, float]:
    """(reply text, finish reason, seconds) of one call bounded by `timeout` seconds."""
    started = time.monotonic()
    with call_scope(deadline=Deadline(timeout)):
        [completion] = llm.chat([{"role": "user", "content": prompt}], **kwargs)
    return completion.text, completion.finish_reason or "", time.monotonic() - started


def _json_check(llm: LLM, timeout: float) -> Check:
    try:
        text, finish, _ = _chat(
            llm, timeout, JSON_PROMPT, max_tokens=256, response_format={"type": "json_object"}
        )
    except LLMError as exc:
        return Check("json reply", False, f"response_format json_object: {_why(exc, timeout)}")
    body = strip_think(text).strip()
    try:
        value = json.loads(body)
        if isinstance(value, dict):
            return Check("json reply", True, f"parsed {json.dumps(value)[:60]}")
    except ValueError:
        pass
    try:
        value = extract_json(text, dict)
    except ParseError as exc:
        cut = " (cut at max_tokens)" if finish == "length" else ""
        return Check("json reply", False, f"no JSON object in {_short(text)}{cut}: {exc}")
    return Check(
        "json reply", True, f"parsed {json.dumps(value)[:60]} from extra text (methods read it)"
    )


def _context_check(config: LLMConfig, timeout: float) -> Check:
    url = config.url or OPENAI_URL
    with ModelServer(url, api_key=config.api_key, model=config.model) as server:
        tokens = server.context_length(timeout=timeout / 2)
    if tokens is None:
        return Check(
            "context length",
            None,
            f"unknown: {url} does not report it (/models max_model_len, /props n_ctx); "
            "methods assume their documented default",
        )
    return Check("context length", True, f"{tokens:,} tokens (as {url} reports it)")


def check_model(
    config: LLMConfig, *, llm_spec: str | None = None, timeout: float = MODEL_TIMEOUT
) -> list[Check]:
    """The model lines: configured, a chat call, a JSON reply, the context length."""
    if not llm_spec and not config.configured:
        return [Check("model", False, NO_MODEL, no_model=True)]
    bounded = dataclasses.replace(
        config, timeout=min(config.timeout, timeout), max_retries=0, cache=False
    )
    try:
        llm = build_llm(bounded, llm_spec=llm_spec)
    except (ConfigError, LLMError) as exc:
        return [Check("model", False, str(exc))]
    assert llm is not None  # configured, or a spec: build_llm returns a model or raises
    where = f"local file {llm_spec.partition(':')[2]!r}" if llm_spec else _where(config)
    checks = [Check("model", True, f"configured: {where}")]
    skipped = "skipped: the chat call failed"
    try:
        try:
            text, finish, seconds = _chat(llm, timeout, CHAT_PROMPT, max_tokens=64)
        except LLMError as exc:
            checks.append(Check("chat", False, _why(exc, timeout)))
            return [
                *checks,
                Check("json reply", None, skipped),
                Check("context length", None, skipped),
            ]
        cut = " (cut at max_tokens)" if finish == "length" else ""
        checks.append(Check("chat", True, f"replied {_short(text)} in {seconds:.1f} s{cut}"))
        checks.append(_json_check(llm, timeout))
    finally:
        llm.close()
    if llm_spec:
        checks.append(Check("context length", None, "set by the local backend (n_ctx)"))
    else:
        checks.append(_context_check(config, timeout))
    return checks


def _local_encoder() -> str:
    if minilm_installed():
        local = "minilm-static" if static_installed() else "minilm"
        return f"{local} (MiniLM device: {describe_device()})"
    return "bm25 (no [dense] extra)"


def _embed(url: str, model: str | None, api_key: str | None, timeout: float) -> Check:
    server = ModelServer(url, api_key=api_key, model=model or "?", timeout=timeout)
    base = server.base_url
    try:
        with server:
            model = model or server.first_model()
            [vector] = server.embeddings(["doctor"], model=model, retries=0)
    except ModelServerError as exc:
        if exc.kind == "connect":  # refused, DNS, TLS: said as `ask` says it of the model
            return Check("embeddings", False, f"cannot reach the embeddings server {base}: "
                         f"{exc.cause}")  # fmt: skip
        if exc.kind == "malformed":
            return Check("embeddings", False, f"{base} sent no embedding ({exc.cause})")
        return Check("embeddings", False, str(exc))
    except LLMError as exc:  # the model-request guard
        return Check("embeddings", False, str(exc))
    except ValueError:  # not exactly one vector for the one input
        return Check("embeddings", False, f"{base} sent no embedding (not one vector)")
    if not vector:
        return Check("embeddings", False, f"{base}/embeddings returned an empty vector")
    return Check("embeddings", True, f"{len(vector)}-dim vectors from {model!r} at {base}")


def check_embeddings(
    config: LLMConfig,
    *,
    embed_url: str | None = None,
    embed_model: str | None = None,
    timeout: float = MODEL_TIMEOUT,
) -> Check:
    """The embeddings line (see the module doc: a failure only for a configured URL)."""
    url, key = EmbeddingsSettings(url=embed_url).endpoint(config)  # the model's unless set
    if embed_url:
        return _embed(embed_url, embed_model, key, timeout)
    local = _local_encoder()
    if not url:
        return Check("embeddings", None, f"no embeddings URL (--embed-url); auto uses {local}")
    served = probe_embeddings(EncoderSettings(url, embed_model, key), timeout=min(timeout, 3.0))
    if served is None:
        return Check(
            "embeddings",
            None,
            f"none configured (--embed-url) and {url} serves none; auto uses {local}",
        )
    return Check("embeddings", True, f"{url} embeds with {served!r}; auto uses it")


# -- the machine -----------------------------------------------------------------------------


def check_sandbox(sandbox_settings: tuple[Isolation, str] | None = None) -> Check:
    """Which isolation the sandbox has here, measured in one real child; `sandbox_settings`:
    the loaded (isolation, where it came from), else the sandbox's own resolution."""
    from tablequest.sandbox import Sandbox, SandboxError

    isolation, given = sandbox_settings or (None, None)
    try:
        with Sandbox(prewarm=False, isolation=isolation, isolation_source=given) as sandbox:
            layers = sandbox.layers()
            mode, plan, source = sandbox.mode, sandbox.plan, sandbox.isolation_source
    except SandboxError as exc:
        return Check("sandbox", False, str(exc))
    names = {"bwrap": "bubblewrap", "unshare": "unshare (degraded)", "off": "none (degraded)"}
    detail = names.get(mode, mode)
    if plan.degraded:
        detail += f", opted in by {source}" + "".join(f"; {note}" for note in plan.notes)
    active = sum(layer.active for layer in layers)
    detail += f"; {active}/{len(layers)} layers in force"
    off = [layer.name for layer in layers if not layer.active]
    if off:
        detail += " (not: " + ", ".join(off) + ")"
    return Check("sandbox", True, detail)


def _modules_by_distribution() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        if not module.isidentifier() or module.startswith("__"):
            continue
        for dist in dists:
            out.setdefault(canonicalize_name(dist), []).append(module)
    return out


def _requirements(meta: Any, extra: str) -> list[Requirement]:
    out = []
    for line in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        marker = req.marker
        if marker is not None and "extra" in str(marker) and marker.evaluate({"extra": extra}):
            out.append(req)
    return out


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _extra_check(extra: str, reqs: Sequence[Requirement], modules: dict[str, list[str]]) -> Check:
    missing: list[str] = []
    broken: list[str] = []
    found: list[str] = []
    for req in reqs:
        if req.name.lower() == "tablequest":
            continue
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(req.name)
            continue
        if not req.specifier.contains(version, prereleases=True):
            missing.append(f"{req.name} {version} (needs {req.specifier})")
            continue
        lost = [m for m in modules.get(canonicalize_name(req.name), []) if not _found(m)]
        (broken if lost else found).append(f"{req.name} ({', '.join(lost)})" if lost else req.name)
    hint = f"pip install 'tablequest[{extra}]'"
    if broken:
        return Check(f"extra {extra}", False, "installed but not importable: " + ", ".join(broken))
    if missing and not found:
        return Check(f"extra {extra}", None, f"not installed: {hint}")
    if missing:
        return Check(
            f"extra {extra}", None, f"partly installed, missing {', '.join(missing)}: {hint}"
        )
    packages = "package" if len(found) == 1 else "packages"
    return Check(f"extra {extra}", True, f"installed ({len(found)} {packages})")


def check_extras() -> list[Check]:
    """One line per optional extra of the installed tablequest (``dev`` left out)."""
    try:
        meta = importlib.metadata.metadata("tablequest")
    except importlib.metadata.PackageNotFoundError:
        return [Check("extras", None, "tablequest is not installed as a package: unknown")]
    modules = _modules_by_distribution()
    extras = [e for e in meta.get_all("Provides-Extra") or [] if e != "dev"]
    return [_extra_check(extra, _requirements(meta, extra), modules) for extra in extras]


def check_store(path: str | Path) -> Check:
    """Whether the store at `path` opens read-only, with its table count and indexes."""
    from tablequest.corpus import StoreError, missing_indexes, open_corpus

    path = Path(path).expanduser()
    if not path.exists():
        return Check(
            "store",
            False,
            f"no store at {str(path)!r}: create one with "
            f"`tablequest ingest PATH... --store {path}`",
        )
    try:
        store = open_corpus(path)
    except StoreError as exc:
        return Check("store", False, str(exc))
    try:
        tables = len(store)
        missing = missing_indexes(store)
    finally:
        store.close()
    detail = f"{path}: {tables:,} tables, opened read-only"
    if missing:
        detail += f"; no saved {', '.join(missing)} index (run `tablequest ingest` on it again)"
    return Check("store", True, detail)


def check_config(
    cwd: str | Path | None = None, files: Sequence[ConfigFile] | None = None
) -> list[Check]:
    """One line per config file read (`files`, as loaded; default: found in `cwd`): trusted
    or not (why), and what it cannot set."""
    try:
        files = configfile.find(cwd) if files is None else files
    except ConfigFileError as exc:
        return [Check("config", False, str(exc))]
    if not files:
        return [Check("config", None, f"no {configfile.CONFIG_FILE} read")]
    out = []
    for file in files:
        detail = f"{file.path}: {'trusted' if file.trusted else 'not trusted'} ({file.why})"
        try:
            ignored = guarded_keys(file)
        except (ConfigFileError, OptionError) as exc:
            out.append(Check("config", False, str(exc)))
            continue
        if ignored:
            detail += f"; ignored {', '.join(ignored)} (`tablequest config trust` to use them)"
        out.append(Check("config", None, detail))
    return out


def run_checks(
    config: LLMConfig,
    *,
    llm_spec: str | None = None,
    embed_url: str | None = None,
    embed_model: str | None = None,
    store: str | Path | None = None,
    only: Sequence[CheckGroup] = CHECKS,
    timeout: float = MODEL_TIMEOUT,
    settings: Settings | None = None,
) -> Iterator[Check]:
    """Every check of the groups in `only`, in order, each as soon as it is done.

    Args:
        config: The model configuration (`tablequest.llm.resolve_config`).
        llm_spec: ``gguf:/path`` for a local model, as ``ask --llm``.
        embed_url, embed_model: An embeddings server to check (default: probe the model's).
        store: A store to open (None: a "–" line).
        only: The groups to run.
        timeout: Seconds each model request may take.
        settings: What the entry point loaded: its config files, the embeddings server and
            model (under `embed_url`, `embed_model`), the sandbox's isolation (None: found
            here, as each reader finds them).
    """
    if settings is not None:
        embed_url = embed_url or settings.embeddings.url
        embed_model = embed_model or settings.embeddings.model
    if "config" in only:
        yield from check_config(files=settings.files if settings is not None else None)
    if "model" in only:
        model = check_model(config, llm_spec=llm_spec, timeout=timeout)
        yield from model
        reached = all(c.ok for c in model if c.check in ("model", "chat"))
        if reached or embed_url:
            yield check_embeddings(
                config, embed_url=embed_url, embed_model=embed_model, timeout=timeout
            )
    if "sandbox" in only:
        isolation: tuple[Isolation, str] | None = None
        if settings is not None:
            source = settings.source("sandbox.isolation").removeprefix("$")
            isolation = (settings.sandbox.isolation, source)
        yield check_sandbox(isolation)
    if "extras" in only:
        yield from check_extras()
    if "store" in only:
        yield check_store(store) if store is not None else Check("store", None, NO_STORE)
