"""``bookmark-research wiki ...``: write, acknowledge, read, search and lint wiki pages."""

from __future__ import annotations

import sys
from typing import Any

import click

from bookmark_research.cli.common import _fail, invoke, json_option, read_json_input


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


#: The narrowest the MESSAGE column gets: on a narrower terminal lines overflow rather than wrap to shreds.
MIN_MESSAGE_WIDTH = 40


def _issue_rows(issues: list[dict[str, Any]], page_id: str | None = None) -> None:
    """The issues as a table whose MESSAGE column shows the whole message, wrapped to the terminal width
    (``COLUMNS`` when set); ``page_id``: the page of issues that do not name one (``wiki get``)."""
    import shutil
    import textwrap

    from bookmark_research.cli.render import esc

    headers = ["SEVERITY", "CODE", "PAGE"]
    rows = [[i["severity"], i["code"], i.get("page_id") or page_id or "-"] for i in issues]
    widths = [max(len(h), *(len(r[n]) for r in rows)) for n, h in enumerate(headers)]
    indent = sum(widths) + 2 * len(widths)
    room = max(MIN_MESSAGE_WIDTH, shutil.get_terminal_size((100, 20)).columns - indent - 1)
    click.echo("  ".join(click.style(h.ljust(w), bold=True) for h, w in zip(headers + ["MESSAGE"], widths + [0])))
    for row, found in zip(rows, issues):
        message = esc(" ".join(str(found["message"]).split()))
        lines = textwrap.wrap(message, room, break_long_words=False, break_on_hyphens=False) or [""]
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + lines[0])
        for line in lines[1:]:
            click.echo(" " * indent + line)


def _written(r: dict[str, Any]) -> None:
    click.echo(f"Wrote {click.style(r['page_id'], bold=True)} revision {r['revision']} ({r['kind']}, "
               f"{r['claims']} claims): {r['title']}")
    click.echo(f"  current view: {r['artifacts']['view_file']}")
    click.echo(f"  revision:     {r['artifacts']['markdown_file']}")
    for row in r["acknowledged"]:
        click.echo(f"  acknowledged input {row['input_version'][:16]}… of {row['research_id']}")
    for row in r.get("unacknowledged", []):
        click.echo(f"  not acknowledged: {row['research_id']}: {row['reason']}")
    for error in r["derived_errors"]:
        click.secho(f"warning: derived file not updated ({error}); run wiki lint", fg="yellow", err=True)


def _say(text: str, indent: int, first: str = "") -> None:
    """``text`` (control characters escaped, paragraphs kept) wrapped to the terminal at ``indent``;
    ``first`` starts its first line."""
    import textwrap

    from bookmark_research.cli.render import _width, esc

    pad = " " * indent
    width = max(40, _width() - indent)
    lines = [esc(line) for line in str(text).splitlines()] or [""]
    for n, line in enumerate(lines):
        lead = pad + first if n == 0 else pad
        wrapped = textwrap.wrap(line, width, initial_indent=lead, subsequent_indent=pad + " " * len(first) * (n == 0),
                                break_long_words=False, break_on_hyphens=False)
        for out in wrapped or [lead.rstrip()]:
            click.echo(out)


def _page(r: dict[str, Any]) -> None:
    """The page as a reader needs it: each section's text, and per claim its statement and quotes."""
    from bookmark_research.cli.render import esc

    v, page = r["validation"], r["page"]
    colour = {"current": "green", "needs_review": "yellow", "stale": "red"}[v["status"]]
    click.echo(f"{click.style(esc(page['title']), bold=True)}  ({r['page_id']}, {page['kind']}, revision "
               f"{r['revision']}, {r['updated_at']})  " + click.style(v["status"], fg=colour))
    review = page.get("review") or {}
    if review:
        who = ", ".join(str(review[k]) for k in ("method", "reviewer") if review.get(k))
        _say(review.get("note") or "", 2, f"Review ({who}): ")
    evidence = {(e["research_id"], e["claim_id"]): e for e in r["evidence"]}
    for section in page["sections"]:
        click.echo("")
        click.echo(click.style(f"## {esc(section['heading'])}", bold=True))
        if section["text"].strip():
            _say(section["text"], 2)
        for ref in section["claims"]:
            found = evidence.get((ref["research_id"], ref["claim_id"]))
            label = f"[{ref['research_id']}/{ref['claim_id']}] "
            if found is None:
                _say("(no evidence snapshot)", 2, label)
                continue
            _say(found["statement"] + (" (inference)" if found.get("inference") else ""), 2, label)
            for cite in found["citations"]:
                where = cite.get("url") or cite.get("source_id") or ""
                if cite.get("title"):
                    where = f"{cite['title']}, {where}"
                match = "" if cite.get("match") in (None, "exact") else f" ({cite['match']} match)"
                _say(f"“{cite['quote']}” — {where}{match}", 6)
    click.echo("")
    for link in r["resolved_links"]:
        _say(link["relation"], 0, f"→ {link['page_id']} (revision {link['revision']}): ")
    click.echo(f"view: {esc(r['artifacts']['view_file'])}")
    if v["issues"]:
        _issue_rows(v["issues"], r["page_id"])


def _list(r: dict[str, Any]) -> None:
    from bookmark_research.cli.render import _table

    if not r["pages"]:
        click.echo(f"No wiki pages yet in {r['directory']}.")
        return
    _table([[p["page_id"], p["kind"], str(p["revision"]), p["updated_at"][:10], _cut(p["title"], 60)]
            for p in r["pages"]], ["PAGE", "KIND", "REV", "UPDATED", "TITLE"])
    more = f"; next: --offset {r['next_offset']}" if r["next_offset"] is not None else ""
    click.echo(f"{len(r['pages'])} of {r['total']} pages{more}")


def _search(r: dict[str, Any]) -> None:
    if not r["results"]:
        click.echo(f"No wiki pages match {r['query']!r}.")
    for hit in r["results"]:
        status = hit["validation"]["status"]
        mark = "" if status == "current" else click.style(f"  [{status}]", fg="yellow")
        click.echo(f"{click.style(hit['page_id'], bold=True)}  {hit['title']}  (r{hit['revision']}, "
                   f"score {hit['score']:.2f}){mark}")
        if hit["snippet"]:
            click.echo(f"    {_cut(hit['snippet'], 200)}")
    tail = f"; {r['excluded_stale_pages']} stale pages excluded" if r["excluded_stale_pages"] else ""
    if r["results"]:
        click.echo(f"{len(r['results'])} of {r['total']} matching pages{tail}")
    elif tail:
        click.echo(tail[2:])


def _lint(r: dict[str, Any]) -> None:
    if r["issues"]:
        _issue_rows(r["issues"])
    errors = sum(i["severity"] == "error" for i in r["issues"])
    click.echo(f"{r['pages_checked']} pages checked: {errors} errors, {len(r['issues']) - errors} other issues "
               f"({r['status']})")


@click.group()
def wiki() -> None:
    """Reviewed knowledge pages compiled from research claims (Markdown, revisions, search, lint)."""


@wiki.command("write")
@click.argument("page_id")
@click.option("--file", "path", required=True, help="JSON: the page, or {page, change_note, ...}; - for stdin.")
@click.option("--change-note", help="What changed (overrides change_note in the file).")
@click.option("--expected-revision", type=int, help="The page's current revision (0 or omitted for a new page).")
@click.option("--reviewed-input-version", help="Acknowledge this current input version of a cited session.")
@json_option
@click.pass_context
def write_cmd(ctx: click.Context, page_id: str, path: str, change_note: str | None, expected_revision: int | None,
              reviewed_input_version: str | None, as_json: bool) -> None:
    """Publish the next revision of PAGE_ID from a JSON file."""
    data = read_json_input(path, as_json)
    arguments = dict(data) if "page" in data else {"page": data}
    options = {"page_id": page_id, "change_note": change_note, "expected_revision": expected_revision,
               "reviewed_input_version": reviewed_input_version}
    arguments.update({key: value for key, value in options.items() if value is not None})
    if "change_note" not in arguments:  # neither the option nor the file: a usage error
        _fail("wiki write: change_note: give --change-note or a change_note key in the file", "invalid_input",
              as_json, code=2)
    # a refused PAGE_ID or option value is a usage error (exit 2); a refused part of the file is bad data (1)
    from_file = {key for key in arguments if options.get(key) is None}
    invoke(ctx, "wiki_write", arguments, as_json, _written, from_file=from_file)


@wiki.command("ack")
@click.argument("page_id")
@click.option("--note", required=True, help="What you reviewed; becomes the page's review note.")
@click.option("--expected-revision", type=int, help="Default: the current revision.")
@json_option
@click.pass_context
def ack_cmd(ctx: click.Context, page_id: str, note: str, expected_revision: int | None, as_json: bool) -> None:
    """Acknowledge that PAGE_ID was reviewed against its sessions' changed input."""
    invoke(ctx, "wiki_acknowledge", {"page_id": page_id, "note": note, "expected_revision": expected_revision},
           as_json, _written)


@wiki.command("get")
@click.argument("page_id")
@click.option("--revision", type=int, help="Default: the current revision.")
@json_option
@click.pass_context
def get_cmd(ctx: click.Context, page_id: str, revision: int | None, as_json: bool) -> None:
    """Show a page revision and whether its evidence still holds."""
    invoke(ctx, "wiki_get", {"page_id": page_id, "revision": revision}, as_json, _page)


@wiki.command("list")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=20, show_default=True)
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, offset: int, limit: int, as_json: bool) -> None:
    """List wiki pages."""
    invoke(ctx, "wiki_list", {"offset": offset, "limit": limit}, as_json, _list)


@wiki.command("search")
@click.argument("query")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=10, show_default=True)
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, query: str, offset: int, limit: int, as_json: bool) -> None:
    """Ranked search of wiki pages (stale pages are excluded)."""
    invoke(ctx, "wiki_search", {"query": query, "offset": offset, "limit": limit}, as_json, _search)


@wiki.command("lint")
@click.argument("page_id", required=False)
@json_option
@click.pass_context
def lint_cmd(ctx: click.Context, page_id: str | None, as_json: bool) -> None:
    """Check evidence, links, hashes and rendered Markdown; exit 1 when there are errors."""
    result = invoke(ctx, "wiki_lint", {"page_id": page_id}, as_json, _lint)
    if result["status"] == "error":
        sys.exit(1)


@wiki.command("open")
@click.argument("page_id")
@json_option
@click.pass_context
def open_cmd(ctx: click.Context, page_id: str, as_json: bool) -> None:
    """Print the path of PAGE_ID's current Markdown view (to open in an editor)."""
    invoke(ctx, "wiki_open", {"page_id": page_id}, as_json, lambda r: click.echo(r["view_file"]))
