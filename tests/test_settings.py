"""Settings: dotted keys, validation, atomic writes, credentials never shown or settable over MCP."""

from __future__ import annotations

import json
import stat

import pytest

from bookmark_research.config.settings import credential, load
from bookmark_research.errors import BookmarkResearchError
from bookmark_research.mcp.server import build_server
from tests.conftest import cli_json, mcp_call, mcp_payload, run_cli

CANARY = "canary-secret-7f3a9c"


@pytest.fixture(autouse=True)
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "settings.json"
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(path))
    for name in ("EXA_API_KEY", "JINA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_defaults_without_a_file(core, config_file):
    out = core("get_settings")
    assert out["exists"] is False and out["settings"]["fetch"]["providers"][-1] == "direct"
    assert "direct.allow_private_networks" in out["valid_keys"]
    assert not config_file.exists()


def test_set_validates_and_writes_atomically(core, config_file):
    out = core("set_setting", key="direct.allow_private_networks", value=True)
    assert out["settings"]["direct"]["allow_private_networks"] is True
    assert json.loads(config_file.read_text()) == {"direct": {"allow_private_networks": True}}
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    before = config_file.read_bytes()
    for key, value, message in (("nope", 1, "valid keys: timeout_seconds"),
                                ("direct.max_bytes", 5, "greater than or equal"),
                                ("search.providers", ["exa", "exa"], "must not repeat"),
                                ("fetch.providers", ["gopher"], "fetch.providers")):
        with pytest.raises(BookmarkResearchError, match=message):
            core("set_setting", key=key, value=value)
    assert config_file.read_bytes() == before  # a refused change writes nothing
    core("set_setting", key="direct.allow_private_networks", value=None)
    assert load().direct.allow_private_networks is False


def test_invalid_existing_file_is_reported_and_kept(core, config_file):
    config_file.parent.mkdir(parents=True)
    config_file.write_text('{"direct": {"allow_private_networks": "maybe"}}')
    with pytest.raises(BookmarkResearchError, match="direct.allow_private_networks"):
        core("get_settings")
    with pytest.raises(BookmarkResearchError, match=r"settings.json: field direct.allow_private_networks"):
        core("set_setting", key="timeout_seconds", value=10)  # a change is refused while the file is invalid
    assert "maybe" in config_file.read_text()


def test_credentials_are_never_shown(core, config_file, monkeypatch):
    core("set_setting", key="credentials.JINA_API_KEY", value=CANARY)
    monkeypatch.setenv("EXA_API_KEY", CANARY + "-env")
    shown = core("get_settings")
    assert CANARY not in json.dumps(shown)
    assert shown["settings"]["credentials"]["JINA_API_KEY"] == {"configured": True, "source": "settings_file"}
    assert shown["settings"]["credentials"]["EXA_API_KEY"] == {"configured": True, "source": "environment"}
    assert credential("JINA_API_KEY") == CANARY and credential("EXA_API_KEY") == CANARY + "-env"
    proc = run_cli("config", "show", env={"BOOKMARK_RESEARCH_CONFIG": str(config_file), "EXA_API_KEY": CANARY})
    assert proc.returncode == 0 and CANARY not in proc.stdout + proc.stderr


def test_mcp_can_update_settings_but_not_credentials(app, config_file):
    ok, refused, unknown = mcp_call(build_server(app), [
        ("update_settings", {"changes": {"fetch.max_characters": 5000, "archive.enabled": False}}),
        ("update_settings", {"changes": {"credentials.EXA_API_KEY": CANARY}}),
        ("update_settings", {"changes": {"bogus.key": 1}}),
    ])
    assert not ok.is_error and ok.structured_content["settings"]["fetch"]["max_characters"] == 5000
    assert refused.is_error and "credentials" in mcp_payload(refused)["error"]
    assert CANARY not in refused.content[0].text and CANARY not in config_file.read_text()
    assert unknown.is_error and "valid keys" in mcp_payload(unknown)["error"]
    assert load().archive.enabled is False  # applied without a restart


def test_cli_config_set_and_show(tmp_path, config_file):
    env = {"BOOKMARK_RESEARCH_CONFIG": str(config_file)}
    out = cli_json("config", "set", "search.providers", '["jina", "exa"]', data_dir=tmp_path, env=env)
    assert out["settings"]["search"]["providers"] == ["jina", "exa"]
    bad = run_cli("config", "set", "direct.timeout_seconds", "100", env=env)
    assert bad.returncode == 1 and "direct.timeout_seconds" in bad.stderr and "Traceback" not in bad.stderr
    shown = run_cli("config", "show", env=env)
    assert 'search.providers = ["jina", "exa"]' in shown.stdout


def test_mcp_cannot_weaken_a_safety_guard(app, config_file, tmp_path):
    """An agent steered by a fetched page must not be able to switch off the SSRF guard or robots.txt."""
    results = mcp_call(build_server(app), [
        ("update_settings", {"changes": {"direct.allow_private_networks": True}}),
        ("update_settings", {"changes": {"direct.respect_robots": False}}),
        ("update_settings", {"changes": {"direct.min_interval_seconds": 0}}),
        ("update_settings", {"changes": {"direct.max_bytes": 64 * 1024 * 1024}}),
        ("update_settings", {"changes": {"timeout_seconds": 60}}),
        ("update_settings", {"changes": {"wiki.directory": str(tmp_path / "elsewhere")}}),
        ("update_settings", {"changes": {"fetch.max_characters": 5000, "direct.allow_private_networks": True}}),
    ])
    for result, key in zip(results, ("direct.allow_private_networks", "direct.respect_robots",
                                     "direct.min_interval_seconds", "direct.max_bytes", "timeout_seconds",
                                     "wiki.directory", "direct.allow_private_networks")):
        assert result.is_error, key
        payload = mcp_payload(result)
        assert payload["error_kind"] == "invalid_input" and payload["error"].startswith(key)
        assert "terminal" in payload["error"] and "config set" in payload["error"]
    assert not config_file.exists()  # nothing written, not even the harmless part of the last call
    # tightening a guard over MCP is fine; a terminal may loosen it
    (tighter,) = mcp_call(build_server(app), [("update_settings", {"changes": {"direct.min_interval_seconds": 5}})])
    assert not tighter.is_error and load().direct.min_interval_seconds == 5
    env = {"BOOKMARK_RESEARCH_CONFIG": str(config_file)}
    out = cli_json("config", "set", "direct.allow_private_networks", "true", data_dir=tmp_path / "d", env=env)
    assert out["settings"]["direct"]["allow_private_networks"] is True
    (back,) = mcp_call(build_server(app), [("update_settings", {"changes": {"direct.allow_private_networks": False}})])
    assert not back.is_error and load().direct.allow_private_networks is False
    (again,) = mcp_call(build_server(app), [("update_settings", {"changes": {"direct.allow_private_networks": None}})])
    assert not again.is_error  # a reset to the (safe) default is not a weakening
    tools = anyio_list_tools(app)
    description = tools["update_settings"].input_schema["properties"]["changes"]["description"]
    assert "allow_private_networks" not in description


def anyio_list_tools(app):
    import anyio
    from mcp import Client

    async def go():
        async with Client(build_server(app)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(go)
