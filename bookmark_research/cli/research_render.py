"""Human-readable rendering of research-session results (``--json`` bypasses this module)."""

from __future__ import annotations

from typing import Any

import click

from bookmark_research.cli.render import _cut, _table, _width


def _metrics(cover: dict[str, Any], status: str = "active") -> None:
    m = cover["metrics"]
    parts = []
    for label, key in (("accounted for", "accounted_for"), ("usable text", "usable_text"),
                       ("substantive review", "substantive_review"), ("questions complete", "question_completion")):
        parts.append(f"{label} {m[key]['count']}/{m[key]['total']}")
    click.echo("  coverage: " + ", ".join(parts))
    if status != "active":  # finished: what blocked completion no longer asks for anything
        return
    if cover["completion_ready"]:
        click.secho("  ready to finish as completed", fg="green")
    for blocker in cover["completion_blockers"]:
        click.echo(f"  - {blocker}")


def overview(r: dict[str, Any]) -> None:
    width = _width()
    click.echo(f"{click.style(r['research_id'], bold=True)}  {r['status']}  {_cut(r['brief'], width - 30)}")
    click.echo(f"  folder: {r['directory']}")
    scope = r["source_scope"]
    click.echo(f"  scope: {scope['mode']} · {scope['selected_url_count']}/{scope['input_url_count']} URLs · "
               f"{scope['selected_instance_count']}/{scope['input_instance_count']} bookmark instances"
               + (f" · sources {', '.join(r['source_ids'])}" if r["source_ids"] else ""))
    focus = scope.get("focus_bookmark_refs_total") or 0
    if scope["mode"] == "whole" and focus:
        click.secho(f"  whole source; {focus} bookmark{'' if focus == 1 else 's'} as focus; use --scope-mode subset "
                    "to narrow the scope to them", fg="yellow")
    used, budget = r["usage"], r["budget"]
    click.echo(f"  budget used: search {used['search_calls']}/{budget['max_search_calls']}, fetch "
               f"{used['fetch_calls']}/{budget['max_fetch_calls']}, rounds {used['rounds']}/{budget['max_rounds']}")
    click.echo(f"  providers: search {', '.join(r['providers']) or '-'}"
               + (f" (then {', '.join(r['search_fallback_providers'])})" if r["search_fallback_providers"] else "")
               + f"; fetch {' → '.join(r['fetch_providers'])}")
    freshness = r.get("source_freshness")
    if freshness and freshness.get("removed_source_ids"):
        click.secho(f"  source {', '.join(freshness['removed_source_ids'])} was removed from the index since this "
                    "session froze it (the session keeps its scope and evidence)", fg="yellow")
    elif freshness and freshness["state"] == "changed":
        click.secho("  the indexed input changed since this session froze it (the session keeps its scope)",
                    fg="yellow")
    _metrics(r["coverage"], r["status"])
    click.echo("")
    for q in r["questions"]:
        click.echo(f"{click.style(q['id'], bold=True)} [{q['status']}] {_cut(q['question'], width - 20)}")
        if q.get("answer"):
            click.echo(f"    {_cut(q['answer'], width - 6)}  ({', '.join(q['claim_ids'])})")
        if q.get("gap"):
            click.echo(f"    gap: {_cut(q['gap'], width - 12)}")
    counts = r["counts"]
    click.echo(f"\n{counts['sources']} sources, {counts['claims']} claims, {counts['conflicts']} conflicts, "
               f"{counts['operations']} operations, {counts['inventory_reviews']} inventory reviews")
    if r.get("artifacts"):
        click.echo(f"report: {r['artifacts']['report']}")
    follow = r.get("wiki_follow_up")
    if follow and follow.get("policy") != "off":
        click.echo(f"wiki ({follow['policy']}): eligible claims {', '.join(follow['eligible_claim_ids']) or 'none'}; "
                   f"{follow['instruction']}")


def started(r: dict[str, Any]) -> None:
    overview(r)
    click.echo(f"\nNext: bookmark-research research fetch {r['research_id']} --operation-id fetch-1 --question "
               f"{r['questions'][0]['id']} URL …   (or research search / research import)")


def status(r: dict[str, Any]) -> None:
    if r.get("sessions") is not None:
        if not r["sessions"]:
            click.echo(f"No research sessions yet in {r['directory']}. Start one with: bookmark-research research start")
            return
        rows = [[s["research_id"], s.get("status", "-"), s["location_status"], (s.get("created_at") or "")[:10],
                 _cut(s.get("brief", s.get("error", "")), 60)] for s in r["sessions"]]
        _table(rows, ["session", "status", "location", "created", "brief"])
        return
    if r.get("section") is not None:
        click.echo(_page_line(r["section"], r["offset"], len(r["items"]), r["total"]))
        for item in r["items"]:
            label, text = _section_item(r["section"], item)
            click.echo(f"  {label}  {_cut(str(text), _width() - len(label) - 4)}")
        if r["next_offset"] is not None:
            click.echo(f"  … more with --offset {r['next_offset']}")
        return
    overview(r)


def _page_line(what: str, offset: int, shown: int, total: int) -> str:
    """``claims 1–20 of 35``; ``conflicts: none``; ``claims: none at offset 50 (10 in all)``."""
    if not total:
        return f"{what}: none"
    if not shown:
        return f"{what}: none at offset {offset} ({total} in all)"
    return f"{what} {offset + 1}–{offset + shown} of {total}"


def _summary(value: Any) -> str:
    """A recorded value in one line: its id, kind or status and its text (never a Python repr)."""
    if not isinstance(value, dict):
        return str(value)
    review = value.get("review") if isinstance(value.get("review"), dict) else {}
    parts = [value.get(k) for k in ("id", "source_id", "inventory_id", "status", "verdict", "disposition")]
    parts.append(review.get("verdict"))
    head = " ".join(dict.fromkeys(str(x) for x in parts if isinstance(x, (str, int))))
    text = next((value[k] for k in ("statement", "answer", "gap", "text", "question", "explanation")
                 if isinstance(value.get(k), str) and value[k]), None) or review.get("text") or ""
    return f"{head}: {text}" if head and text else head or str(text)


def _section_item(section: str, item: dict[str, Any]) -> tuple[str, str]:
    if section == "events":
        return f"{item.get('at', '')} {item.get('kind', '')}", _summary(item.get("value"))
    if section == "operations":
        reserved = ", ".join(f"{k} {v}" for k, v in (item.get("reserved") or {}).items()) or "nothing"
        return item.get("id", ""), (f"{item.get('kind')} {item.get('status')} · reserved {reserved}"
                                    + (f" · {item['error']}" if item.get("error") else ""))
    label = item.get("id") or item.get("instance_id") or item.get("kind") or ""
    text = item.get("statement") or item.get("question") or item.get("url") or item.get("text") or \
        item.get("title") or item.get("original_url") or _summary(item.get("value", ""))
    return label, text


def inventory(r: dict[str, Any]) -> None:
    click.echo(_page_line("inventory entries", r["offset"], len(r["items"]), r["total"])
               + f" (frozen in {r['manifest_path']})")
    for e in r["items"]:
        click.echo(f"  {e['id']}  {e['url_kind']:<11} {len(e['instances'])}×  {_cut(e['original_url'], _width() - 60)}")
    if r["next_offset"] is not None:
        click.echo(f"  … more with --offset {r['next_offset']}")


def _replay(r: dict[str, Any]) -> None:
    if r.get("replayed") and r.get("status") == "pending":
        click.secho(f"(operation {r['operation_id']} was interrupted before its result was saved; nothing was sent "
                    "again)", dim=True)
    elif r.get("replayed"):
        click.secho(f"(replayed: operation {r['operation_id']} already ran; nothing was sent again)", dim=True)


def searched(r: dict[str, Any]) -> None:
    _replay(r)
    if r["status"] == "pending":
        click.echo(r["next_action"])
        return
    result = r.get("result") or {}
    web_errors = result.get("errors", [])
    for t in result.get("targets", []):
        click.echo(f"{click.style(t['target'], bold=True)} [{t['status']}]")
        for hit in t.get("results", [])[:10]:
            click.echo(f"  {_cut(hit['title'], 60):<60}  {hit['url']}")
        for sid in t.get("source_ids", []):
            click.echo(f"  source {sid}")
        if r.get("status") != "error":  # a failed search says why in its one stderr line
            for e in t.get("errors", []) + [e for e in web_errors if e.get("target") == t["target"]]:
                click.echo(f"  failed: {e['error']}")
    for s in r.get("sources", []):
        click.echo(f"  {s['id']}  {s.get('year') or ''} {_cut(s.get('title') or '', 70)}  doi:{s.get('doi') or '-'}")
    if r.get("status") != "error" and r.get("next_action"):
        click.echo(r["next_action"])


def fetched(r: dict[str, Any]) -> None:
    _replay(r)
    if r["status"] == "pending":
        click.echo(r["next_action"])
        return
    for s in r.get("sources", []):
        note = " (from the archive)" if s.get("archive_reuse") else ""
        click.echo(f"  {s['id']}  {s['extraction_status']:<18} {s['provider']:<9} {s['characters']:>7} chars  "
                   f"{_cut(s['url'], _width() - 60)}{note}")
    if r.get("unresolved_urls"):
        click.echo(f"  unresolved: {', '.join(r['unresolved_urls'])}")
    if r.get("next_action"):
        click.echo(r["next_action"])


def source(r: dict[str, Any]) -> None:
    s = r["source"]
    click.secho(f"{s['id']} · {s['provider']} · {s['url']} · {s['extraction_status']}"
                + (f" · sha256 {s['sha256']}" if s.get("sha256") else "")
                + (f" · not read: {s['failure']}" if s.get("failure") else ""), dim=True, err=True)
    click.echo(r["text"], nl=False)
    if r["text"] and not r["text"].endswith("\n"):
        click.echo("")
    if r["next_offset"] is not None:
        click.secho(f"… {r['total_characters'] - r['next_offset']} more characters: --offset {r['next_offset']}",
                    dim=True, err=True)


def imported(r: dict[str, Any]) -> None:
    _replay(r)
    if r["status"] == "pending":
        click.echo(r["next_action"])
        return
    s = r["source"]
    click.echo(f"Imported {s['id']} ({s['content_kind']}, {s['characters']} characters) from {s['url']}")
    click.echo(r["next_action"])


def recorded(r: dict[str, Any]) -> None:
    if r.get("results") is not None:
        state = " (replayed)" if r["replayed"] else ""
        click.echo(f"Recorded {r['count']} entries{state}: " + ", ".join(f"{x['kind']} {x['id']}" for x in r["results"]))
        return
    unchanged = " (unchanged)" if r["replayed"] else ""
    if r["kind"] == "retraction":  # what was recorded is the retraction, not the claim's (old) quote check
        claim = r.get("recorded") or {}
        statement = _cut(claim.get("statement", ""), _width() - 40)
        click.echo(f"Recorded retraction of claim {r['id']}{unchanged}: {statement}")
        click.echo(f"  reason: {_cut(claim.get('retraction') or '', _width() - 10)}")
        return
    click.echo(f"Recorded {r['kind']} {r['id']}{unchanged}")
    for c in (r.get("recorded") or {}).get("citations", []):
        how = "exact" if c["match"] == "exact" else "normalised"
        click.echo(f"  {c['source_id']} {how} match at {c['span']['start']}–{c['span']['end']}: "
                   f"{_cut(c['found_text'], _width() - 40)}")


def coverage(r: dict[str, Any]) -> None:
    _metrics(r)
    counts = r["difference_counts"]
    click.echo("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if r["items"]:
        click.echo("\n" + _page_line(r["filter"], r["offset"], len(r["items"]), r["total"]))
    for row in r["items"]:
        flags = [f for f in ("missing", "unread", "unreviewed", "blocked", "excluded", "reviewed") if row.get(f)]
        click.echo(f"  {row['id']}  {row['disposition']:<10} {','.join(flags):<28} "
                   f"{_cut(row['original_url'], _width() - 80)}")
    if r["next_offset"] is not None:
        click.echo(f"  … more with --offset {r['next_offset']}")


def finished(r: dict[str, Any]) -> None:
    overview(r)


def report(r: dict[str, Any]) -> None:
    click.echo(r["text"], nl=False)


def route(r: dict[str, Any]) -> None:
    selected = r["selected"]
    if selected:
        click.echo(f"Route: {click.style(selected['route_id'], bold=True)} ({r['depth']}) — {selected['reason']}")
    click.echo(r["next_action"])
    click.echo("Workflow: " + " → ".join(r["workflow"]))
    for c in r["candidates"]:
        mark = "✓" if c["available"] else "✗"
        click.echo(f"  {mark} {c['route_id']}: {c['reason']}")
