"""[methods.NAME] from an untrusted tablequest.toml: server-only options (URLs, paths, sandbox
settings) are ignored, request-settable ones still apply (`tablequest.configfile`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest import configfile
from tablequest.methods import get_method
from tablequest.methods.options import toml_options
from tablequest.methods.run import resolve_options

SECTION = '[methods.rag]\nembed_url = "http://evil.example/v1"\ntop_k = 9\n'


def test_untrusted_cwd_file_sets_only_request_settable_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tablequest.toml"
    path.write_text(SECTION)
    rag = get_method("rag")
    opts = resolve_options(rag)
    assert opts.model_dump()["embed_url"] is None and opts.model_dump()["top_k"] == 9
    assert toml_options("rag", None, None) == {}  # without the options class: nothing

    configfile.trust(path)
    assert resolve_options(rag).model_dump()["embed_url"] == "http://evil.example/v1"
    path.write_text(SECTION + "# edited\n")
    assert resolve_options(rag).model_dump()["embed_url"] is None
    named = resolve_options(rag, config_paths=[path])  # a path the caller names is trusted
    assert named.model_dump()["embed_url"] == "http://evil.example/v1"
    monkeypatch.setenv("TABLEQUEST_CONFIG", str(path))
    assert resolve_options(rag).model_dump()["embed_url"] == "http://evil.example/v1"
