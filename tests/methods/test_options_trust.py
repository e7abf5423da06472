"""[methods.NAME] from an untrusted tablequest.toml: server-only options (URLs, paths, sandbox
settings) are ignored, request-settable ones still apply (`tablequest.configfile`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablequest import configfile
from tablequest.methods import get_method
from tablequest.methods.configtrust import untrusted_notes
from tablequest.methods.options import toml_options
from tablequest.methods.run import resolve_options
from tablequest.settings import LLMSettings

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


def test_untrusted_file_cannot_raise_cost_bearing_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 40: `sc` and `max_depth` from a corpus's file took one rag ask from 13 to 964 calls
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tablequest.toml"
    path.write_text(
        "[methods.rag]\nsc = 50\nmax_depth = 40\ntop_k = 9\n"
        '[methods.research]\nk_paths = "12"\nsteps = 3\n[methods.seek]\nmax_steps = 5\n'
    )
    rag = resolve_options(get_method("rag")).model_dump()
    assert (rag["sc"], rag["max_depth"], rag["top_k"]) == (1, 5, 9)
    research = resolve_options(get_method("research")).model_dump()
    assert (research["k_paths"], research["steps"]) == (4, 3)  # a cheaper value is kept
    (note,) = untrusted_notes(tmp_path)
    for key in ("[methods.rag] sc", "[methods.rag] max_depth", "[methods.research] k_paths"):
        assert key in note
    for kept in ("top_k", "max_steps", "[methods.research] steps"):
        assert kept not in note
    configfile.trust(path)
    assert resolve_options(get_method("rag")).model_dump()["sc"] == 50


def test_cost_bounds_start_at_the_declared_defaults() -> None:
    """Each bounded option exists, an untrusted file may set its default and a request more."""
    for section, bounds in configfile.COST_BOUNDS.items():
        if not section.startswith("methods."):
            continue
        fields = get_method(section.removeprefix("methods.")).options.model_fields
        for key, bound in bounds.items():
            assert fields[key].default == bound.free, (section, key)
            assert bound.most is not None and bound.most >= (bound.free or 0), (section, key)
    llm = configfile.COST_BOUNDS["llm"]
    assert {k: b.free for k, b in llm.items()} == {k: getattr(LLMSettings(), k) for k in llm}
