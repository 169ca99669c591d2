"""``research_route``: advice on how to run a research task with what the host has. It starts nothing
and changes nothing; the host decides."""

from __future__ import annotations

from typing import Any

DEPTH_OF_SHAPE = {"lookup": "quick", "investigation": "agentic", "batch_research": "deep"}
NATIVE_TOOLS = {"exa": ("web_search_exa", "web_fetch_exa"), "parallel": ("web_search", "web_fetch")}
SUBAGENT_TOOLS = ("spawn_agent", "agent", "task", "subagent")
WORKFLOW = ["research_route", "research_start", "research_search", "research_fetch", "research_source",
            "research_record", "research_coverage", "research_finish"]
PROCESS = [
    "research_start with the brief, 1-24 questions and the bookmarks (source_ids, bookmark_refs or urls); the "
    "inventory is frozen and the budget fixed",
    "research_search (kind web or scholarly) for leads; snippets are not evidence",
    "research_fetch the original bookmark pages first (or research_import_evidence for pages the host read); "
    "each page becomes a source",
    "research_source to read each saved text, then research_record source_review (accepted/rejected/uncertain)",
    "research_record claims quoting the saved text (verified, exactly or after normalisation), answers, gaps, "
    "conflicts and resolutions; inventory_review for every original input",
    "research_coverage until completion_ready, then research_finish (completed, or incomplete with limitations)",
]
HOLD_ON = ["pending", "queued", "in_progress", "unknown_outcome", "cancelled"]


def _has(tools: list[str], name: str) -> bool:
    name = name.lower()
    return any(t.lower() == name or t.lower().endswith(("__" + name, "." + name, "/" + name)) for t in tools)


def route(p: Any) -> dict[str, Any]:
    tools = list(p.observed_tools)
    commands = [c.lower() for c in p.available_commands]
    depth = "deep" if p.provider else (p.depth if p.depth != "auto" else DEPTH_OF_SHAPE.get(p.task_shape or "",
                                                                                             "agentic"))
    candidates: list[dict[str, Any]] = []

    def add(route_id: str, route_depth: str, available: bool, reason: str) -> None:
        if route_id in p.failed_routes:
            available, reason = False, "caller_reported_confirmed_failure"
        candidates.append({"route_id": route_id, "depth": route_depth, "available": available, "reason": reason})

    add("direct_retrieval", "quick", True, "research_search and research_fetch from this server, one step at a time")
    workflow_tool = {"claude_code": any("/bookmark-research:bookmark-research" in c for c in commands)
                     or _has(tools, "workflow"), "dsh": _has(tools, "workflow"),
                     "pi": _has(tools, "pi_subagent_workflow")}.get(p.host, False)
    add("host_workflow", "agentic", workflow_tool, "the host's own research workflow drives this server's tools"
        if workflow_tool else "no research workflow command or tool was observed on this host")
    deep_command = p.host == "claude_code" and any(c.startswith("/deep-research") for c in commands)
    add("host_deep_research", "deep", deep_command and p.task_shape != "batch_research",
        "the host's /deep-research command" if deep_command else "no /deep-research command was observed")
    for name, needed in NATIVE_TOOLS.items():
        present = all(_has(tools, t) for t in needed)
        add(f"host_research_mcp:{name}", "deep", present, f"the host's own {name} tools ({', '.join(needed)})"
            if present else f"needs the host's {name} tools {', '.join(needed)}")
    subagents = any(_has(tools, t) for t in SUBAGENT_TOOLS)
    add("host_subagents", "agentic", subagents, "split the inventory across host subagents, one session each"
        if subagents else "no subagent tool was observed")
    for name in ("openai", "parallel"):
        add(f"professional_service:{name}", "deep", False, "professional research services are not part of this "
            "build")
    add("host_iterative_research", "agentic", True, "the host model runs the research loop with this server's "
        "research tools")

    by_id = {c["route_id"]: c for c in candidates}
    if p.provider:
        preference = [f"professional_service:{p.provider}"]
    elif depth == "quick":
        preference = ["direct_retrieval", "host_iterative_research"]
    elif depth == "deep":
        preference = ["host_deep_research", "host_research_mcp:exa", "host_research_mcp:parallel", "host_workflow",
                      "host_subagents", "host_iterative_research"]
    else:
        preference = ["host_workflow", "host_subagents", "host_iterative_research"]
    selected = next((by_id[r] for r in preference if by_id[r]["available"]), None)
    if selected is None:
        next_action = (f"The requested {p.provider} research service is not available in this build and is never "
                       "substituted; run without provider to get a host route." if p.provider else
                       "No route is available; call research_start and work through the tools directly.")
    else:
        next_action = f"Use {selected['route_id']}: {selected['reason']}. Start with research_start."
    return {"selected": selected, "candidates": candidates, "next_action": next_action, "workflow": WORKFLOW,
            "research_process": PROCESS, "depth": depth,
            "fallback": {"remaining_routes": [c["route_id"] for c in candidates if c["available"] and c is not selected],
                         "hold_on": HOLD_ON, "explicit_provider_is_exclusive": True},
            "retrieval": {"modes": {"web_search": "research_search kind=web (snippets are leads, not evidence)",
                                    "scholarly": "research_search kind=scholarly (records become sources)",
                                    "fetch": "research_fetch through the session's fetch waterfall",
                                    "import": "research_import_evidence for text the host read itself"}},
            "execution_started": False, "configuration_changed": False}
