"""Every command that talks to a model or serves a store loads `Settings` once, with one
precedence: a flag beats the environment beats a trusted tablequest.toml (issue 38, item 1).

`ask` is run against three stub model servers (one named by each source) and must call the
one the rule picks; `serve` builds its `ServeConfig` (the server is not started) from the
same rule, for the [llm] and the [serve] sections alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.testdata import free_port
from typer.testing import CliRunner

from tablequest import configfile
from tablequest.cli import app
from tablequest.llm.stub import StubServer

runner = CliRunner()


def _chats(server: StubServer) -> int:
    return sum(1 for r in server.requests if r["path"].endswith("/chat/completions"))


def _ask(table: Path, trace_dir: Path, *flags: str) -> None:
    args = ["ask", "Who is first?", "--store", str(table), "-m", "direct", "--model", "stub-model"]
    result = runner.invoke(app, [*args, "--no-cache", "--trace-dir", str(trace_dir), *flags])
    assert result.exit_code in (0, 1, 3), result.output  # ran (the reply may not parse)


def test_ask_calls_the_model_the_precedence_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "people.csv"
    table.write_text("name,rank\nAda,1\nBob,2\n")
    reply = '{"answer": "Ada"}'
    with (
        StubServer(default_reply=reply) as flag,
        StubServer(default_reply=reply) as env,
        StubServer(default_reply=reply) as toml,
    ):
        monkeypatch.chdir(tmp_path)
        (tmp_path / "tablequest.toml").write_text(f'[llm]\nurl = "{toml.url}"\n')
        configfile.trust(tmp_path / "tablequest.toml")
        monkeypatch.setenv("TABLEQUEST_LLM_URL", env.url)
        _ask(table, tmp_path / "traces", "--llm-url", flag.url)
        assert (_chats(flag), _chats(env), _chats(toml)) != (0, 0, 0)
        assert _chats(env) == _chats(toml) == 0  # the flag wins
        _ask(table, tmp_path / "traces")
        assert _chats(env) > 0 and _chats(toml) == 0  # then the environment
        monkeypatch.delenv("TABLEQUEST_LLM_URL")
        _ask(table, tmp_path / "traces")
        assert _chats(toml) > 0  # then the trusted file
        before = _chats(toml)
        other = tmp_path / "named.toml"
        other.write_text(f'[llm]\nurl = "{flag.url}"\n')
        _ask(table, tmp_path / "traces", "--config-file", str(other))
        assert _chats(toml) == before  # --config-file: the only file read, not via os.environ
    assert "TABLEQUEST_CONFIG" not in __import__("os").environ


def _serve_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *flags: str) -> Any:
    import tablequest.serve

    seen: dict[str, Any] = {}
    monkeypatch.setattr(tablequest.serve, "run_server", lambda config: seen.update(c=config))
    store = tmp_path / "s.duckdb"
    args = ["serve", "--store", str(store), "--create", "--token-file", str(tmp_path / "tok")]
    result = runner.invoke(app, [*args, *flags])
    assert result.exit_code == 0, result.output
    return seen["c"]


def test_serve_takes_its_settings_by_the_same_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tablequest.toml"
    port = free_port()  # serve binds it before it starts (tests run in parallel)
    path.write_text(
        '[llm]\nurl = "http://toml/v1"\nmodel = "m"\n'
        f'[serve]\nport = {port}\nmax_asks = 3\nhost = "0.0.0.0"\n'
    )
    config = _serve_config(monkeypatch, tmp_path)  # untrusted: guarded keys ignored
    assert (config.host, config.port, config.limits.max_asks) == ("127.0.0.1", port, 3)
    assert config.llm_config.url is None and config.settings.serve.port == port
    configfile.trust(path)
    config = _serve_config(monkeypatch, tmp_path, "--host", "127.0.0.1")
    assert config.llm_config.url == "http://toml/v1" and config.host == "127.0.0.1"
    monkeypatch.setenv("TABLEQUEST_LLM_URL", "http://env/v1")
    config = _serve_config(monkeypatch, tmp_path, "--host", "127.0.0.1", "--max-asks", "5")
    assert config.llm_config.url == "http://env/v1" and config.limits.max_asks == 5
    assert config.settings.source("serve.max_asks") == "flag"
    config = _serve_config(
        monkeypatch, tmp_path, "--host", "127.0.0.1", "--llm-url", "http://flag/v1"
    )
    assert config.llm_config.url == "http://flag/v1" and config.limits.max_asks == 3


def test_search_embeds_where_the_settings_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`search --encoder api` embeds at ``[embeddings] url``, else at the ``[llm]`` server,
    as `ask` and the server do (one rule, `EmbeddingsSettings.endpoint`)."""
    (tmp_path / "medals.csv").write_text("Nation,Gold\nNorway,16\nGermany,12\n")
    store = tmp_path / "s.duckdb"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["ingest", str(tmp_path / "medals.csv"), "-s", str(store)]).exit_code
        == 0
    )
    args = ["search", "gold medals", "-s", str(store), "--method", "dense", "--encoder", "api",
            "--json"]  # fmt: skip
    with (
        StubServer(lambda body: "x", model="m") as llm,
        StubServer(lambda b: "x", model="e") as emb,
    ):

        def embedded() -> tuple[int, int]:
            return tuple(  # type: ignore[return-value]
                sum(r["path"] == "/v1/embeddings" for r in s.requests) for s in (llm, emb)
            )

        monkeypatch.setenv("TABLEQUEST_LLM_URL", llm.url)
        monkeypatch.setenv("TABLEQUEST_EMBED_MODEL", "m")
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
        first = embedded()
        assert first[0] > 0 and first[1] == 0  # the [llm] server's, no [embeddings] url
        monkeypatch.setenv("TABLEQUEST_EMBED_URL", emb.url)
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
        assert embedded()[0] == first[0] and embedded()[1] > 0  # now [embeddings] url
