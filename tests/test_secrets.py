"""Canary keys: requests carrying them really are sent, and no output, error, log or archive holds them."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
import respx
from click.testing import CliRunner

import bookmark_research.providers.remote_mcp as remote_mcp
import bookmark_research.providers.websearch as websearch
from bookmark_research.config.settings import update
from tests.conftest import run_cli
from tests.remote_providers import KEYS_SEEN

NAMES = ("EXA_API_KEY", "PARALLEL_API_KEY", "TAVILY_API_KEY", "JINA_API_KEY", "OPENALEX_API_KEY",
         "SEMANTIC_SCHOLAR_API_KEY", "NCBI_API_KEY")
SCHOLARLY_AND_JINA = ["api.openalex.org", "api.semanticscholar.org", "api.crossref.org", "eutils.ncbi.nlm.nih.gov",
                      "export.arxiv.org", "r.jina.ai", "s.jina.ai"]


def _every_operation(core) -> list:
    return [
        core("literature_search", query="graph", mode="review"),
        core("search_web", targets=[{"target": "t", "query": "q"}, {"target": "b", "query": "boom"},
                                    {"target": "c", "query": "quota"}], providers=["exa", "parallel", "tavily", "jina"]),
        core("fetch_web", urls=["https://example.com/a"], provider="jina"),
        core("fetch_web", urls=["https://example.com/a"], provider="exa"),
        core("fetch_web", urls=["https://example.com/a"], provider="tavily"),
        core("search_providers", probe=True),
        core("get_settings"),
    ]


@pytest.mark.parametrize("variant", ["accepted", "rejected-401", "non-ascii"])
def test_canary_keys_never_leak_on_any_path(core, stand_in_providers, monkeypatch, caplog, variant):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(remote_mcp, "ENDPOINTS", stand_in_providers.endpoints)
    monkeypatch.setattr(websearch, "_cooldowns", {})
    update({"fetch.providers": ["exa"]}, terminal=True)
    marker = {"accepted": "", "rejected-401": "-401", "non-ascii": "-\u00fc"}[variant]
    keys = {name: f"canary-{name.lower()}{marker}-z9" for name in NAMES}
    for name, key in keys.items():
        monkeypatch.setenv(name, key)
    KEYS_SEEN.clear()
    with respx.mock:
        respx.route(host__in=SCHOLARLY_AND_JINA).mock(side_effect=lambda request: httpx.Response(
            401, text=f"bad key {request.headers.get('authorization')} {request.headers.get('x-api-key')} {request.url}"))
        outputs = _every_operation(core)
    if variant != "non-ascii":  # the requests carrying the keys were really sent to the stand-in servers
        assert any(keys["EXA_API_KEY"] in v for v in KEYS_SEEN["exa"])
        assert any(keys["PARALLEL_API_KEY"] in v for v in KEYS_SEEN["parallel"])
        assert any(keys["TAVILY_API_KEY"] in v for v in KEYS_SEEN["tavily"])
    else:  # a key that cannot travel in a header is reported as such, per provider, never sent
        assert KEYS_SEEN == {}
        errors = {b["provider"]: b["error"] for b in outputs[1]["batches"]}
        assert errors["exa"] == "exa: EXA_API_KEY is not usable (API keys are printable ASCII without spaces)"
    if variant == "rejected-401":
        kinds = {b["provider"]: b["error_kind"] for b in outputs[1]["batches"]}
        assert kinds["exa"] == kinds["tavily"] == "authentication_required"
    text = json.dumps(outputs, ensure_ascii=False) + caplog.text
    archive = core.data_dir / "archive"
    if archive.exists():
        text += "".join(p.read_text(errors="replace") for p in archive.rglob("*") if p.is_file())
    assert "canary-" not in text and "\u00fc" not in text and "\\u00fc" not in text


def test_non_ascii_key_in_a_terminal_is_one_clean_line(tmp_path):
    """httpx refuses a non-ASCII header while the client is built; that must stay a classified failure."""
    env = {"BOOKMARK_RESEARCH_CONFIG": str(tmp_path / "cfg.json"), "JINA_API_KEY": "canary-\u00fc-z9"}
    for args in (("fetch-web", "https://example.com/x", "--provider", "jina"),
                 ("search-web", "-t", "x", "--provider", "jina"),
                 ("literature", "x", "--provider", "semantic_scholar")):
        proc = run_cli(*args, data_dir=tmp_path / "d", env={**env, "SEMANTIC_SCHOLAR_API_KEY": "canary-\u00fc-z9"})
        assert proc.returncode == 1, args
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
        assert "is not usable" in proc.stderr
        assert "canary" not in proc.stdout + proc.stderr and "\u00fc" not in proc.stdout + proc.stderr


def test_internal_error_line_names_the_type_and_place_only(monkeypatch, tmp_path):
    from bookmark_research.cli.main import cli
    from bookmark_research.core import registry

    def broken(app, name, arguments):
        raise RuntimeError("secret-canary-3f9 leaked in a message")

    monkeypatch.setattr(registry, "run", broken)
    monkeypatch.delenv("BOOKMARK_RESEARCH_DEBUG", raising=False)
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "d"), "doctor"])
    assert result.exit_code == 1
    assert "secret-canary" not in result.output
    assert "internal error (RuntimeError in tests/test_secrets.py" in result.output
