"""Human-readable rendering of operation results (``--json`` bypasses this module)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import click


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((100, 20)).columns, 140))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 unique URL``, ``2 unique URLs``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def esc(text: str) -> str:
    """A name as one line of text: control characters (a newline in a file name) shown escaped."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(click.style(h.ljust(w), bold=True) for h, w in zip(headers, widths)))
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def _warnings(warnings: list[str]) -> None:
    for w in warnings:
        click.secho(f"warning: {esc(w)}", fg="yellow", err=True)


def counts_line(c: dict[str, Any]) -> str:
    return (f"{plural(c['bookmarks'], 'bookmark')} ({plural(c['unique_urls'], 'unique URL')}), "
            f"{plural(c['user_folders'], 'folder')}, {plural(c['sections'], 'section')}, "
            f"{plural(c['nodes'], 'canvas node')}, {plural(c['edges'], 'edge')}, "
            f"{plural(c['memberships'], 'group membership')}")


def _files(paths: list[str]) -> str:
    return ", ".join(esc(p) for p in paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def sync(r: dict[str, Any]) -> None:
    verb = "Created" if r["created"] else "Updated"
    click.echo(f"{verb} source {click.style(r['source_id'], bold=True)} ({r['mode']}, {r['completeness']}) "
               f"from {r['input_kind']} {esc(r['input_path'])}")
    click.echo(f"  files: {r['changed_files']} changed, {r['skipped_files']} unchanged; items: "
               f"{r['items_inserted']} inserted, {r['items_updated']} updated, {r['items_deleted']} deleted")
    click.echo(f"  now:   {counts_line(r['counts'])}")
    click.echo(f"  version {r['version_id']}")
    if r["retained_missing_files"]:
        click.echo(f"  kept {plural(len(r['retained_missing_files']), 'indexed file')} missing from this input "
                   f"(partial sync): {_files(r['retained_missing_files'])}")
    if r["removed_files"]:
        click.echo(f"  removed {plural(len(r['removed_files']), 'file')} missing from this input (complete sync): "
                   f"{_files(r['removed_files'])}")
    _warnings(r["warnings"])


def status(r: dict[str, Any]) -> None:
    if not r["sources"]:
        click.echo(f"No sources yet in {r['database']}. Add one with: bookmark-research sync PATH")
        return
    rows = []
    for s in r["sources"]:
        src = s["source"]
        rows.append([s["source_id"], src["mode"], src["state"], str(s["bookmarks"]), str(s["unique_urls"]),
                     str(s["counts"]["sections"]), src["last_sync"] or "-",
                     _cut(src["input_path"] or "", 40) + ("" if src["input_exists"] else " (gone)")])
    _table(rows, ["SOURCE", "MODE", "STATE", "BOOKMARKS", "URLS", "SECTIONS", "LAST SYNC", "INPUT"])
    for s in r["sources"]:
        src = s["source"]
        if src["pending_files"]:
            click.echo(f"{s['source_id']}: pending {_files(src['pending_files'])}")
        if src["error"]:
            click.secho(f"{s['source_id']}: {esc(src['error'])}", fg="red")
    if any(s["source"]["mode"] == "live" for s in r["sources"]):
        w = r["watcher"]
        click.echo(f"watcher: {'running (pid ' + str(w.get('pid')) + ')' if w.get('running') else 'not running'}"
                   + ("" if w.get("running") else "; start one with 'bookmark-research watch' or 'serve'"))
    if len(r["sources"]) == 1:
        s = r["sources"][0]
        click.echo(f"\n{counts_line(s['counts'])}")
        for sec in s["sections"]:
            extra = f" → copy of {sec['canonical_id']}" if sec["is_anchor"] else ""
            click.echo(f"  {esc(sec['label']):<10} {esc(sec['section_id'])}  {esc(sec['file_path'])}{extra}")
        if s["source"]["retained_missing_files"]:
            click.echo("kept from earlier imports: " + _files(s["source"]["retained_missing_files"]))


def history(r: dict[str, Any]) -> None:
    rows = [[("* " if v["current"] else "  ") + v["version_id"], v["created_at"], str(v["file_count"]),
             v["input_kind"] or "", v["completeness"] or "", _cut(v["input_path"] or "", 50)] for v in r["versions"]]
    _table(rows, ["  VERSION", "CREATED", "FILES", "INPUT", "SYNC", "FROM"])
    for event in r.get("restores", [])[:5]:
        click.echo(f"restored {event['version_id']} at {event['restored_at']}"
                   + (f" (was {event['previous_version_id']})" if event["previous_version_id"] else ""))
    click.echo(f"{plural(r['total'], 'version')}; restore one with: bookmark-research restore {r['source_id']} VERSION")


def remove(r: dict[str, Any]) -> None:
    if r["status"] == "confirmation_required":
        n = r["would_remove"]
        click.echo(f"Would remove {r['source_id']}: {n['items']} items, {n['sections']} sections, {n['files']} files, "
                   f"{n['versions']} snapshot versions. The original package is not touched.")
        click.echo(f"Run again with --confirm to remove it: bookmark-research source remove {r['source_id']} --confirm")
    else:
        click.echo(f"Removed {r['source_id']} ({r['removed']['items']} items, snapshots "
                   f"{'deleted' if r['snapshot_removed'] else 'not found'}).")


def merge(r: dict[str, Any]) -> None:
    if r["status"] == "confirmation_required":
        click.echo(r["impact"])
    else:
        click.echo(f"Merged {r['source_id']} into {r['into_source_id']}; its paths now sync into "
                   f"{r['into_source_id']}: {', '.join(r['aliases'])}")


def _result_line(n: int, row: dict[str, Any], width: int) -> None:
    kind = "" if row["item_type"] == "bookmark" else "[folder] "
    title = row["title"] or ("(untitled root)" if row.get("synthetic") else "(untitled)")
    click.echo(f"{n:>3}. {kind}{click.style(_cut(title, width - 8), bold=True)}")
    if row["url"]:
        click.echo(f"     {_cut(row['url'], width - 5)}")
    where = row["section_label"] + (f" › {row['folder_path']}" if row["folder_path"] else "")
    tags = " ".join(f"#{t.get('text', '')}" for t in row["tags"])
    click.echo(click.style(f"     {_cut(where, width - 30)}  {tags}".rstrip(), dim=True) + f"  id={row['item_id']}")
    snippet = row.get("snippet")
    if snippet and snippet["field"] not in ("title", "url"):
        click.echo(f"     {snippet['field']}: {_cut(snippet['text'], width - 15)}")


def search(r: dict[str, Any]) -> None:
    width = _width()
    scope = ", ".join(f"{k}={v}" for k, v in r["query_scope"].items() if v and k != "item_types")
    header = f"{plural(r['total'], 'match', 'matches')} ({plural(r['unique_urls'], 'unique URL')})"
    click.echo(header + (f" in {scope}" if scope else "") + f", ordered by {r['order']}")
    if len(r["targets"]) > 1:
        for t in r["targets"]:
            click.echo(f"  {t['target']!r}: {t['total']}")
    for n, row in enumerate(r["results"], r["offset"] + 1):
        _result_line(n, row, width)
    if r["next_offset"] is not None:
        click.echo(f"… more: --offset {r['next_offset']}")
    if r.get("anchor_of"):
        click.echo(f"note: {r['anchor_note']}")
    if r["refresh"].get("note"):
        click.secho(f"note: {r['refresh']['note']}", fg="yellow")
    for m in r.get("canvas_matches") or []:
        label = m.get("label") or m.get("text") or ""
        click.echo(f"canvas {m['kind']}: {_cut(label, width - 20)} ({m.get('node_id') or m.get('edge_id')})")


def context(r: dict[str, Any]) -> None:
    width = _width()
    if r["refresh"].get("note"):
        click.secho(f"note: {r['refresh']['note']}", fg="yellow")
    c = r["counts"]
    click.echo(f"{plural(c['sections'], 'section')}, {plural(c['instances'], 'bookmark instance')}, "
               f"{plural(c['unique_urls'], 'unique URL')} (copies not counted)")
    for s in r["sections"]:
        copy = f" — copy of {s['anchor_of']} (not counted)" if s["anchor_of"] else ""
        click.echo(f"\n{click.style(s['label'], bold=True)} {s['title'] or ''} [{s['kind']}] "
                   f"{plural(s['bookmark_count'], 'bookmark')}{copy}")
        if s["description_md"]:
            click.echo(f"  {_cut(s['description_md'], width - 2)}")
    for item in r["items"]:
        chain = " › ".join(a["title"] or "(root)" for a in item.get("ancestors") or [])
        click.echo(f"\nitem {item['item_id']}: {item['title']} {item['url']}")
        if chain:
            click.echo(f"  in {chain}")
        if item["tags"]:
            click.echo("  tags: " + ", ".join(f"#{t.get('text', '')} ({t.get('color')})" for t in item["tags"]))
        if item["note"]:
            click.echo(f"  note ({item['note_color']}): {_cut(item['note'], width - 12)}")
    if r["groups"]:
        click.echo("\ngroups:")
        for g in r["groups"]:
            parents = f" (inside {', '.join(g['parent_groups'])})" if g["parent_groups"] else ""
            click.echo(f"  {g['label'] or g['node_id']}{parents}: {', '.join(g['members']) or '(empty)'}")
    if r["edges"]:
        click.echo("\nedges:")
        arrows = {"forward": "──▶", "reverse": "◀──", "both": "◀─▶", "none": "───"}
        for e in r["edges"]:
            label = f" “{e['label']}”" if e["label"] else ""
            click.echo(f"  {e['from_node']} {arrows[e['direction']]} {e['to_node']}{label}")


def doctor(r: dict[str, Any]) -> None:
    ok = click.style("ok", fg="green")
    bad = click.style("missing", fg="red")
    click.echo(f"python   {r['python']}")
    click.echo(f"sqlite   {r['sqlite']}  fts5 {ok if r['fts5'] else bad}  trigram {ok if r['trigram'] else bad}  "
               f"json {ok if r['json1'] else bad}")
    state = "writable" if r["data_dir_writable"] else "NOT writable"
    if not r["data_dir_exists"]:
        state = f"does not exist yet; the first sync creates it ({'can' if r['data_dir_writable'] else 'cannot'})"
    click.echo(f"data dir {r['data_dir']} ({state})")
    click.echo(f"database {r['database']} ({'exists' if r['database_exists'] else 'not created yet'})")
    for p in r["problems"]:
        click.secho(f"problem: {p}", fg="red")
    if r["next_step"]:
        click.echo(f"next step: {r['next_step']}")
    click.echo("ready" if r["ready"] else "not ready")


def settings(r: dict[str, Any]) -> None:
    def walk(data: dict[str, Any], prefix: str = "") -> None:
        for key, value in data.items():
            if key == "credentials" and not prefix:
                continue
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                click.echo(f"{prefix}{key} = {json.dumps(value, ensure_ascii=False)}")

    click.echo(f"# {r['path']}" + ("" if r["exists"] else " (not created yet: defaults)"))
    walk(r["settings"])
    for name, state in r["settings"]["credentials"].items():
        click.echo(f"credentials.{name}: " + (f"set ({state['source']})" if state["configured"] else "not set"))


def archive(r: dict[str, Any]) -> None:
    width = _width()
    click.echo(f"{plural(r['total'], 'archived page')} match {r['query']!r}")
    for n, hit in enumerate(r["results"], r["offset"] + 1):
        first = hit["occurrences"][0] if hit["occurrences"] else {}
        click.echo(f"{n:>3}. {click.style(_cut(first.get('title') or first.get('url') or hit['sha256'], width - 6), bold=True)}")
        for occ in hit["occurrences"][:3]:
            click.echo(click.style(f"     {_cut(occ['url'], width - 40)}  {occ['provider']} {occ['retrieved_at']}", dim=True))
        if hit["snippet"]:
            click.echo(f"     {_cut(hit['snippet'], width - 5)}")
    if r["next_offset"] is not None:
        click.echo(f"… more: --offset {r['next_offset']}")


def fetched(r: dict[str, Any]) -> None:
    width = _width()
    click.echo(f"{r['successful_url_count']}/{plural(len(r['urls']), 'page')} read ({r['status']}; {r['mode']} over "
               f"{', '.join(r['providers'])})")
    for page in r["pages"]:
        mark = click.style("ok", fg="green") if page["status"] == "ok" else click.style(page["status"], fg="red")
        click.echo(f"[{mark}] {page['url']}")
        if page["status"] == "ok":
            click.echo(f"     {page['provider']}: {page['characters']} characters, {page['title'] or '(no title)'}")
            click.echo(f"     {_cut(page['text'], width - 5)}")
        else:
            for reason in page.get("reasons") or [page["error"] or page["error_kind"] or "no usable text"]:
                click.echo(f"     {reason}")


def web_results(r: dict[str, Any]) -> None:
    width = _width()
    for target in r["targets"]:
        click.echo(f"{click.style(target['target'], bold=True)}: {plural(target['result_count'], 'result')}, "
                   f"{target['status']}")
        for n, hit in enumerate(target["results"], 1):
            click.echo(f"{n:>3}. {_cut(hit['title'], width - 6)}")
            click.echo(click.style(f"     {_cut(hit['url'], width - 30)}  "
                                   f"{', '.join(sorted({s['provider'] for s in hit['sources']}))}", dim=True))
    for error in r["errors"]:
        click.echo(click.style(f"{error['provider']} failed for {error['target']!r}: {error['error']}", fg="yellow"))
    for skipped in r["routing"]["skipped_providers"]:
        click.echo(click.style(f"{skipped['provider']} skipped: needs {', '.join(skipped['missing'])}", dim=True))


def providers(r: dict[str, Any]) -> None:
    rows = []
    for p in r["providers"]:
        state = p.get("credential_state") or {}
        key = "-" if not p["credential"] else (f"{p['credential']} ({state.get('source')})" if state.get("configured")
                                               else f"{p['credential']} not set")
        can = ", ".join(k for k in ("search", "fetch") if p[k])
        probe = p.get("probe") or {}
        status = p["availability"] + (f" ({probe.get('error_kind')})" if probe.get("error_kind") else "")
        rows.append([p["provider"], p["transport"], can, key, status])
    _table(rows, ["PROVIDER", "TRANSPORT", "CAN", "CREDENTIAL", "AVAILABILITY"])
    click.echo(f"search: {', '.join(r['search_order']['providers'])} (fallback: "
               f"{', '.join(r['search_order']['fallback_providers']) or 'none'}); fetch: {', '.join(r['fetch_order'])}")


def literature(r: dict[str, Any]) -> None:
    width = _width()
    click.echo(f"{plural(r['total'], 'record')} for {r['query']!r} ({r['status']}; {'; '.join(r['routing']['reasons'])})")
    for n, rec in enumerate(r["records"], 1):
        authors = ", ".join(a for a in rec["authors"][:3] if a) + (" et al." if len(rec["authors"]) > 3 else "")
        click.echo(f"{n:>3}. {click.style(_cut(rec['title'] or '(untitled)', width - 6), bold=True)}")
        click.echo(click.style(f"     {rec['year'] or '----'} {_cut(authors, 40)} · {rec['venue'] or ''} · "
                               f"{rec['doi'] or rec['url'] or ''} [{', '.join(rec['providers'])}]", dim=True))
    for d in r["diagnostics"]["providers"]:
        if d["status"] != "ok":
            click.echo(click.style(f"{d['provider']}: {d['status']} — {d.get('error') or 'needs ' + ', '.join(d.get('missing', []))}",
                                   fg="yellow"))


def search_plan(r: dict[str, Any]) -> None:
    click.echo(f"Search plan for {r['query']!r}: {r['search_execution_mode'].replace('_', ' ')}")
    for reason in r["routing"].get("reasons") or []:
        click.echo(f"  routing: {reason}")
    if r["provider_queries"]:
        click.echo("provider queries (run with 'bookmark-research literature'):")
        for q in r["provider_queries"]:
            years = f" [{q.get('from_year') or ''}-{q.get('to_year') or ''}]" if q.get("from_year") or q.get("to_year") else ""
            click.echo(f"  {q['provider']:<17} {q['query']}{years}")
    if r["native_queries"]:
        click.echo("queries for the agent's own search tools:")
        for q in r["native_queries"]:
            click.echo(f"  {q['tool']:<17} {q['query']}")
    dedupe = ", then ".join(r["merge_policy"].get("dedupe") or [])
    if dedupe:
        click.echo(f"merge: deduplicate by {dedupe}")
    for line in r["limitations"]:
        click.echo(f"note: {line}")
