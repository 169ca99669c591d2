"""``wiki_lint``: every check the wiki can make without judging the prose.

Per page: the revision chain's hashes (``artifact_error``), the evidence, input freshness, links and
evidence copies of the current record (see :mod:`~bookmark_research.wiki.validation`), links written in
section text (``broken_prose_link``), the current view (``view_missing`` / ``view_stale``), and every
relative link in every rendered file — revisions, ``pages/`` and ``index.md`` — parsed with
markdown-it-py and resolved to an existing file and heading anchor (``broken_relative_link``; a warning
in a superseded revision, whose files never change). Across pages: ``orphan_page`` (no page links to
it), ``duplicate_topic`` (titles equal after normalisation) and the catalogue (``catalog_missing`` /
``catalog_stale``).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from typing import Any
from urllib.parse import unquote

from bookmark_research.errors import BookmarkResearchError, NotFoundError, StorageError
from bookmark_research.wiki import cache, render
from bookmark_research.wiki.cache import Outlines
from bookmark_research.wiki.evidence import Evidence
from bookmark_research.wiki.markdown import prose_links as markdown_links
from bookmark_research.wiki.outline_worker import Helper, cores, outline_of
from bookmark_research.wiki.store import MAX_MARKDOWN_BYTES, Wiki, sha256
from bookmark_research.wiki.validation import issue, record_issues

BOUNDARY = ("Checks current source reviews, active claims, saved quotes, hashes, links, revision history and the "
            "rendered Markdown only.")


#: A full lint hands part of the parsing to a helper process when at least this many current
#: rendered files have no outline in the cache (see :mod:`~bookmark_research.wiki.outline_worker`).
HELPER_MIN_FILES = 400
HELPER_SHARE = 0.65  # of those files, parsed by the helper while this process checks the pages


class _Files:
    """Rendered files read and parsed at most once per lint run (headings, anchors and links)."""

    def __init__(self, wiki: Wiki, regenerable: set[str]) -> None:
        self.wiki = wiki
        self.regenerable = regenerable  # derived files whose absence is reported as catalog_/view_missing
        self._read: dict[str, str | BookmarkResearchError] = {}  # rel -> SHA-256 of its bytes
        self._outlines: dict[str, tuple[set[str], list[tuple[str, int]]] | None] = {}
        self.cache = Outlines(wiki.root)
        self.cache.preload()
        self.parsed: dict[str, Any] = {}  # outlines parsed in this run, saved for the next one
        self._exists: dict[str, bool] = {}
        self._helper: Helper | None = None
        self._own: list[str] = []  # files left to this process while the helper parses the others

    def digest(self, rel: str) -> str:
        """SHA-256 of a file's bytes, read once per run and at most :data:`MAX_MARKDOWN_BYTES` + 1 of them
        (a larger file cannot match any hash); raises as :meth:`Wiki.read_bytes`."""
        found = self._read.get(rel)
        if found is None:
            try:
                found = sha256(self.wiki.read_bytes(rel, MAX_MARKDOWN_BYTES))
            except BookmarkResearchError as exc:
                found = exc
            self._read[rel] = found
        if isinstance(found, BookmarkResearchError):
            raise found
        return found

    def check_markdown(self, pointer: dict[str, Any]) -> None:
        """:meth:`Wiki.check_markdown` through this run's reads."""
        rel = pointer["markdown_file"]
        if self.digest(rel) != pointer["markdown_sha256"]:
            raise StorageError(f"Wiki Markdown hash changed; publish an explicit revision: {rel}")

    def outline(self, rel: str) -> tuple[set[str], list[tuple[str, int]]] | None:
        """Heading anchors and links of a rendered file (parsed, or remembered by content hash); None when
        it cannot be read or is over the size limit. Only one file's bytes are held at a time."""
        if rel not in self._outlines:
            try:
                known = self.cache.get(self.digest(rel))
                if known is None:
                    data = self.wiki.read_bytes(rel, MAX_MARKDOWN_BYTES)
                    if len(data) > MAX_MARKDOWN_BYTES:
                        raise StorageError(f"{rel}: larger than {MAX_MARKDOWN_BYTES} bytes")
                    digest = sha256(data)
                    known = outline_of(data)
                    self.cache.remember({digest: known})
                    self.parsed[digest] = known
            except (BookmarkResearchError, UnicodeDecodeError):
                self._outlines[rel] = None
            else:
                self._outlines[rel] = (set(known[0]), known[1])
        return self._outlines[rel]

    def start_helper(self, pages: dict[str, Any]) -> None:
        """Before a full lint: if many current files lack an outline, let a helper parse most of them."""
        missing = [(rel, sha) for pid in sorted(pages) for rel, sha in (
            (pages[pid]["markdown_file"], pages[pid]["markdown_sha256"]),
            (render.view_file(pid), pages[pid]["view_sha256"])) if self.cache.get(sha) is None]
        if len(missing) < HELPER_MIN_FILES or cores() < 2:
            return
        split = int(len(missing) * (1 - HELPER_SHARE))
        self._own = [rel for rel, _ in missing[:split]]
        wanted = []
        for rel, sha in missing[split:]:
            try:
                wanted.append((str(self.wiki.path(rel)), sha))
            except BookmarkResearchError:
                continue
        self._helper = Helper(wanted, MAX_MARKDOWN_BYTES)

    def finish_helper(self) -> None:
        """Parse this process's share, then take the helper's outlines (only of the files and hashes asked for)."""
        for rel in self._own:
            self.outline(rel)
        if self._helper is not None:
            found = {digest: known for digest, known in self._helper.results().items()
                     if self.cache.get(digest) is None}
            self._helper = None
            self.cache.remember(found)
            self.parsed.update(found)

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()
            self._helper = None

    def save(self) -> None:
        if self.parsed:
            self.cache.put(self.parsed)
        self.cache.close()

    def exists(self, rel: str) -> bool:
        if rel not in self._exists:
            try:
                self._exists[rel] = self.wiki.path(rel).is_file()
            except BookmarkResearchError:
                self._exists[rel] = False
        return self._exists[rel]

    def broken_links(self, rel: str) -> list[tuple[str, int, str]]:
        """``(href, line, reason)`` for each relative link in ``rel`` that does not resolve."""
        parsed = self.outline(rel)
        if parsed is None:
            return [("", 0, "file missing or unreadable")]
        anchors, links = parsed
        base = posixpath.dirname(rel)
        broken = []
        for href, line in links:
            if re.match(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)", href):
                continue
            path, _, anchor = href.partition("#")
            anchor = unquote(anchor)
            if not path:
                if anchor and anchor not in anchors:
                    broken.append((href, line, f"no heading with anchor #{anchor}"))
                continue
            target = posixpath.normpath(posixpath.join(base, unquote(path)))
            if target == ".." or target.startswith("../") or target.startswith("/"):
                broken.append((href, line, "points outside the wiki folder"))
            elif not self.exists(target):
                if target not in self.regenerable:
                    broken.append((href, line, "target file does not exist"))
            elif anchor and target.endswith(".md"):
                other = self.outline(target)
                if other is None or anchor not in other[0]:
                    broken.append((href, line, f"no heading with anchor #{anchor} in {target}"))
        return broken


def _title_key(title: str) -> str:
    text = unicodedata.normalize("NFKC", title).casefold()
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text).split())


def prose_links(record: dict[str, Any], sha: str) -> list[dict[str, str]]:
    """Links written in a record's section text (remembered by the record's hash: a pure function)."""
    found = cache.RECORD_INPUTS.get(("prose", sha), ("content",))
    if found is None:
        found = markdown_links([section["text"] for section in record["page"]["sections"]], strict=False)
        cache.RECORD_INPUTS.put(("prose", sha), ("content",), found)
    return found


#: A page's rendered files, links already reported as prose links, and the files of superseded revisions.
_Rendered = tuple[list[str], set[str], set[str]]


def _check_page(wiki: Wiki, files: _Files, page_id: str, pointer: dict[str, Any], index: dict[str, Any],
                evidence: Evidence) -> tuple[list[dict[str, Any]], dict[str, Any] | None, _Rendered]:
    """A page's issues except its rendered files' links (:func:`_check_rendered`, run after every page)."""
    issues: list[dict[str, Any]] = []
    try:
        chain = list(wiki.history(page_id, pointer))
    except BookmarkResearchError as exc:
        return [issue("artifact_error", "error", exc.message)], None, ([], set(), set())
    for older, _ in chain:
        try:
            files.check_markdown(older)
        except BookmarkResearchError as exc:
            issues.append(issue("artifact_error", "error", exc.message))
    record = chain[0][1]
    issues += record_issues(wiki, record, index, evidence, pointer["sha256"])
    pages = index["pages"]
    links = prose_links(record, pointer["sha256"])
    for link in links:
        if link["kind"] == "page":
            if link["target"] not in pages:
                issues.append(issue("broken_prose_link", "error",
                                    f"Section text links to a page that does not exist: {link['target']}",
                                    target=link["target"]))
                continue
            view = render.view_file(link["target"])
            parsed = files.outline(view)
            if link["anchor"] and parsed is not None and unquote(link["anchor"]) not in parsed[0]:
                issues.append(issue("broken_prose_link", "error", f"Section text links to a heading that does "
                                    f"not exist: {link['target']}#{link['anchor']}", target=link["target"]))
        elif not files.exists(link["target"]):
            issues.append(issue("broken_prose_link", "error",
                                f"Section text links to a file that does not exist: {link['target']}",
                                target=link["target"]))
    view = render.view_file(page_id)
    try:
        current_view = files.digest(view)
    except NotFoundError:
        issues.append(issue("view_missing", "warning", f"Current view {view} is missing; the next write of the "
                            "page regenerates it", regenerable=True))
    except BookmarkResearchError as exc:  # a symlink or a special file where the view belongs: writes refuse too
        issues.append(issue("artifact_error", "error", exc.message, file=view))
    else:
        if current_view != pointer["view_sha256"]:
            issues.append(issue("view_stale", "warning", f"Current view {view} does not match revision "
                                f"{pointer['revision']}; the next write of the page regenerates it", regenerable=True))
    prose_targets = {render.view_file(link["target"]) for link in links
                     if link["kind"] == "page" and link["target"] not in pages}
    rendered = [p["markdown_file"] for p, _ in chain] + ([view] if files.exists(view) else [])
    return issues, record, (rendered, prose_targets, {p["markdown_file"] for p, _ in chain[1:]})


def _check_rendered(files: _Files, rendered: _Rendered) -> list[dict[str, Any]]:
    """``broken_relative_link`` issues of a page's rendered files (the last of its issues)."""
    issues = []
    for rel in rendered[0]:
        for href, line, reason in files.broken_links(rel):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(href.partition("#")[0])))
            if target in rendered[1]:
                continue  # already reported as broken_prose_link
            if rel in rendered[2]:  # immutable history: a later revision is where it gets fixed
                issues.append(issue("broken_relative_link", "warning", f"{rel}:{line}: link {href} {reason} "
                                    "(a superseded revision; the current one is checked as an error)",
                                    file=rel, line=line, target=href, superseded=True))
                continue
            issues.append(issue("broken_relative_link", "error", f"{rel}:{line}: link {href} {reason}",
                                file=rel, line=line, target=href))
    return issues


def lint(app: Any, page_id: str | None = None) -> dict[str, Any]:
    """Lint one page or the whole wiki (see the module docstring)."""
    wiki = Wiki.open(app)
    index = wiki.load_index() if wiki.exists else {"schema_version": 1, "pages": {}}
    pages = index["pages"]
    evidence = Evidence(app)
    files = _Files(wiki, {"index.md", *(render.view_file(pid) for pid in pages)})
    issues: list[dict[str, Any]] = []
    ids = sorted(pages) if page_id is None else [page_id]
    records: dict[str, dict[str, Any]] = {}
    checked: list[tuple[str, list[dict[str, Any]], _Rendered]] = []
    try:
        if page_id is None:
            files.start_helper(pages)
        for pid in ids:
            if pid not in pages:
                checked.append((pid, [issue("artifact_error", "error", "Unknown Wiki page")], ([], set(), set())))
                continue
            found, record, rendered = _check_page(wiki, files, pid, pages[pid], index, evidence)
            checked.append((pid, found, rendered))
            if record is not None:
                records[pid] = record
        files.finish_helper()
    finally:
        files.close()
    for pid, found, rendered in checked:
        issues += [{"page_id": pid, **i} for i in found + _check_rendered(files, rendered)]
    if page_id is None and records:
        issues += _across_pages(records, pages)
    if page_id is None and wiki.path("index.json").exists():
        issues += _catalog(wiki, files, index)
    if wiki.exists:
        files.save()
    return {"status": "error" if any(i["severity"] == "error" for i in issues) else "ok",
            "pages_checked": len(ids), "issues": issues, "semantic_support": "not_scored", "boundary": BOUNDARY,
            "directory": str(wiki.root)}


def _across_pages(records: dict[str, dict[str, Any]], pages: dict[str, Any]) -> list[dict[str, Any]]:
    issues = []
    inbound: dict[str, set[str]] = {pid: set() for pid in pages}
    for pid, record in records.items():
        targets = {link["page_id"] for link in record["resolved_links"]}
        targets |= {link["target"] for link in prose_links(record, pages[pid]["sha256"]) if link["kind"] == "page"}
        for target in targets - {pid}:
            if target in inbound:
                inbound[target].add(pid)
    if len(pages) > 1:
        for pid in sorted(records):
            if not inbound[pid]:
                issues.append({"page_id": pid, **issue("orphan_page", "info", "No other page links to this page")})
    by_title: dict[str, list[str]] = {}
    for pid in sorted(pages):
        by_title.setdefault(_title_key(pages[pid]["title"]), []).append(pid)
    for same in by_title.values():
        for pid in same[1:]:
            issues.append({"page_id": pid, **issue("duplicate_topic", "warning",
                                                   f"Same title as {same[0]} after normalisation; merge the pages "
                                                   "or make the titles distinct", duplicates=same)})
    return issues


def _catalog(wiki: Wiki, files: _Files, index: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        current = wiki.read_bytes("index.md").decode("utf-8")
    except (BookmarkResearchError, UnicodeDecodeError):
        return [{"page_id": None, **issue("catalog_missing", "warning", "index.md is missing; the next write "
                                          "regenerates it", regenerable=True)}]
    issues = []
    if current != render.catalog(index):
        issues.append({"page_id": None, **issue("catalog_stale", "warning", "index.md differs from index.json; the "
                                                "next write regenerates it", regenerable=True)})
    for href, line, reason in files.broken_links("index.md"):
        issues.append({"page_id": None, **issue("broken_relative_link", "error", f"index.md:{line}: link {href} "
                                                f"{reason}", file="index.md", line=line, target=href)})
    return issues
