"""What each provider offers, what it needs, and whether this version implements it."""

from __future__ import annotations

from typing import Any

from bookmark_research.config.settings import credential_state, load

PROVIDERS: dict[str, dict[str, Any]] = {
    "exa": {"kind": "web", "transport": "remote MCP", "search": True, "fetch": True,
            "credential": "EXA_API_KEY", "keyless": True},
    "parallel": {"kind": "web", "transport": "remote MCP", "search": True, "fetch": True,
                 "credential": "PARALLEL_API_KEY", "keyless": True},
    "tavily": {"kind": "web", "transport": "remote MCP", "search": True, "fetch": True,
               "credential": "TAVILY_API_KEY", "keyless": True},
    "jina": {"kind": "web", "transport": "HTTP", "search": True, "fetch": True, "credential": "JINA_API_KEY",
             "keyless": True, "requires_credential_for": ["search"]},
    "direct": {"kind": "web", "transport": "HTTP (this machine)", "search": False, "fetch": True,
               "credential": None, "keyless": True},
}


def describe(probe: bool = False) -> dict[str, Any]:
    """Capabilities and credential state; with ``probe``, a live tool listing of the remote MCP providers."""
    settings = load()
    rows = []
    for name, info in PROVIDERS.items():
        row = {"provider": name, **info, "availability": "not_probed"}
        if info["credential"]:
            row["credential_state"] = credential_state(info["credential"], settings)
        missing = [info["credential"]] if info.get("requires_credential_for") and not row["credential_state"][
            "configured"] else []
        row["missing_for_search"] = missing
        rows.append(row)
    if probe:
        from concurrent.futures import ThreadPoolExecutor

        from bookmark_research.providers.remote_mcp import RemoteMCP

        remote = [r for r in rows if r["transport"] == "remote MCP"]
        with ThreadPoolExecutor(max_workers=len(remote)) as pool:
            results = list(pool.map(lambda r: RemoteMCP(r["provider"], settings).probe(), remote))
        for row, result in zip(remote, results):
            row["availability"] = "reachable" if result["status"] == "ok" else "failed"
            row["probe"] = result
        for row in rows:
            if row["transport"] != "remote MCP":
                row["availability"] = "not_probed"
                row["probe"] = {"status": "not_probed", "reason": "documented HTTP API; a probe would spend quota"
                                if row["provider"] == "jina" else "runs on this machine"}
    return {"probe_performed": probe, "providers": rows,
            "search_order": {"providers": settings.search.providers,
                             "fallback_providers": settings.search.fallback_providers},
            "fetch_order": settings.fetch.providers,
            "note": "exa, parallel and tavily are used through their remote MCP servers, keyless when no key "
                    "is set; jina search needs JINA_API_KEY. Credentials are shown only as configured or not."}
