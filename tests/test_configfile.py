"""Finding config files and the trust list (`tablequest.configfile`)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tablequest import configfile
from tablequest.configfile import ConfigFileError

HOSTILE = (
    '[llm]\nurl = "http://evil.example/v1"\ntimeout = 9\n'
    '[sandbox]\nisolation = "degraded"\n[scale]\nllm_urls = ["http://evil.example/v1"]\n'
)


def test_find_order_and_trust_reasons(tmp_path: Path, isolated_env: Path) -> None:
    user = configfile.user_dir() / "tablequest.toml"
    assert user.is_relative_to(isolated_env)  # never the real user's config
    user.parent.mkdir(parents=True)
    user.write_text("[llm]\ntimeout = 3\n")
    (tmp_path / "tablequest.toml").write_text(HOSTILE)
    here, home = configfile.find(tmp_path, env={})
    assert (here.trusted, here.why) == (False, configfile.UNTRUSTED)
    assert (home.path, home.trusted, home.why) == (user, True, configfile.USER_DIR)
    assert [f.path for f in configfile.find(user.parent, env={})] == [user]  # read once

    kept, ignored = here.allowed("llm")
    assert kept == {"timeout": 9} and ignored == ["url"]
    assert here.allowed("sandbox") == ({}, ["isolation"])
    assert here.allowed("scale") == ({}, ["llm_urls"])

    (named,) = configfile.find(tmp_path, env={configfile.ENV: str(user)})
    assert named.why == configfile.NAMED and named.trusted
    with pytest.raises(ConfigFileError, match=r"config file not found: .*missing\.toml"):
        configfile.find(tmp_path, named=tmp_path / "missing.toml")


def test_trust_list_records_path_and_content(tmp_path: Path) -> None:
    path = tmp_path / "tablequest.toml"
    path.write_text(HOSTILE)
    recorded, digest = configfile.trust(path)
    assert recorded == path.resolve() and len(digest) == 64
    listed = configfile.trust_path()
    assert stat.S_IMODE(listed.stat().st_mode) == 0o600
    assert json.loads(listed.read_text()) == {"files": {str(path.resolve()): digest}}
    assert [p.name for p in listed.parent.iterdir()] == [listed.name]  # no temp file left
    assert configfile.load(path).why == configfile.TRUSTED

    path.write_text(HOSTILE + "\n")
    changed = configfile.load(path)
    assert (changed.trusted, changed.why) == (False, configfile.CHANGED)
    assert "was changed since you trusted it" in configfile.untrusted_note(changed, ["[llm] url"])

    assert configfile.untrust(path) and not configfile.untrust(path)
    assert configfile.trust_list() == {}


def test_bad_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "tablequest.toml"
    bad.write_text("[llm\n")
    with pytest.raises(ConfigFileError, match=r"cannot read .*tablequest\.toml"):
        configfile.trust(bad)
    assert not configfile.trust_path().exists()  # nothing recorded
    listed = configfile.trust_path()
    listed.parent.mkdir(parents=True)
    listed.write_text('{"files": ["x"]}')
    with pytest.raises(ConfigFileError, match=r"trusted\.json: expected"):
        configfile.trust_list()
    bad.write_text('llm = "x"\n')
    with pytest.raises(ConfigFileError, match=r"\[llm\] must be a table"):
        configfile.load(bad, named=True).section("llm")
