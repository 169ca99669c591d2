"""Rendering: escaped text renders to itself, and no author text changes the page's outline."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bookmark_research.wiki.markdown import Slugger, outline, render_author, slug_base
from bookmark_research.wiki.render import escape, page_markdown, paragraph

LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\x00"),
               min_size=1, max_size=60).map(lambda s: " ".join(s.split())).filter(bool)
MARKDOWNISH = st.lists(st.sampled_from([
    "# H", "## Evidence", "### Evidence 1", "```", "~~~", "<script>", "<!--", "-->", "> q", "- item", "1. one", "===",
    "---", "    code", "[x]: http://e.com", "[[aurora]]", "[a](b.md)", "|a|b|", "|-|-|", "]", "[", "*", "_", "`",
    "text", "", "\\", "<div>", "&amp;", "![i](p.png)"]), max_size=12).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(LINE)
def test_an_escaped_heading_renders_to_exactly_its_text(text: str) -> None:
    headings, links = outline(f"# {escape(text)}\n\n{paragraph(text)}\n")
    assert [(level, title) for level, title, _ in headings] == [(1, text)]
    assert links == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(MARKDOWNISH, st.text(max_size=200).filter(lambda s: "\x00" not in s)), LINE)
def test_author_text_never_changes_the_outline(text: str, heading: str) -> None:
    text = text.strip() or "x"
    record = {"page_id": "sessions", "revision": 2, "updated_at": "2026-01-01T00:00:00Z", "change_note": text,
              "previous": {"markdown_file": "revisions/sessions/1-000000000000.md"},
              "page": {"title": heading, "kind": "topic", "review": {"method": "human", "reviewer": heading,
                                                                    "note": text},
                       "sections": [{"heading": heading, "text": text, "claims": [
                           {"research_id": "r-0000000000000001", "claim_id": "c1"}]},
                                    {"heading": "Next", "text": text, "claims": [
                                        {"research_id": "r-0000000000000001", "claim_id": "c1"}]}]},
              "evidence": [{"research_id": "r-0000000000000001", "claim_id": "c1", "statement": text, "citations": [
                  {"source_id": "s1", "quote": text, "url": "https://e.com/x", "retrieved_at": "t",
                   "inventory_ids": [], "artifact_sha256": {}}]}],
              "resolved_links": [{"page_id": "aurora", "relation": text, "revision": 1, "title": heading,
                                  "markdown_file": "revisions/aurora/1-000000000000.md"}]}
    for view in (False, True):
        markdown, cached = page_markdown(record, "revisions/sessions/2-000000000000.md", view=view, titles={})
        headings, links = outline(markdown)
        assert cached == ([a for _, _, a in headings], links)  # what the write remembers for lint
        top = [(level, title) for level, title, _ in headings if level <= 2]
        assert top == [(1, heading), (2, heading), (2, "Next"), (2, "Related pages"), (2, "Evidence"),
                       (2, "Update record")]
        evidence_at = max(i for i, h in enumerate(headings) if h[:2] == (2, "Evidence"))
        assert [h[1] for h in headings[evidence_at + 1:] if h[0] == 3] == ["Evidence 1"]
        anchors = {a for _, _, a in headings}
        assert all(href.split("#")[1] in anchors for href, _ in links if href.startswith("#"))


def test_author_links_are_rewritten_relative_to_where_the_page_is_rendered() -> None:
    text = "See [[aurora#history|its history]], [[missing]], [x](aurora.md), ![d](assets/d.png), <https://e.com>."
    for base, prefix in (("pages", ""), ("revisions/sessions", "../../pages/")):
        out, found = render_author(text, base, lambda p: f"pages/{p}.md", {"aurora": "Aurora"})
        assert f"[its history]({prefix}aurora.md#history)" in out
        assert f"[missing]({prefix}missing.md)" in out and f"[x]({prefix}aurora.md)" in out
        assert "<https://e.com>" in out
        assert [(f["kind"], f["target"]) for f in found] == [("page", "aurora"), ("page", "missing"),
                                                             ("page", "aurora"), ("file", "assets/d.png")]
    out, _ = render_author("[[aurora]]", "pages", lambda p: f"pages/{p}.md", {"aurora": "Aurora [core]"})
    assert out == "[Aurora [core]](aurora.md)"


def test_github_style_anchors() -> None:
    slugger = Slugger()
    assert [slugger.slug(t) for t in ("Evidence 1", "Evidence 1", "Evidence 1-1", "C++ & Rust!", "会话 恢复")] == \
        ["evidence-1", "evidence-1-1", "evidence-1-1-1", "c--rust", "会话-恢复"]
    assert slug_base("Update record") == "update-record"


def _outline_from_every_token(markdown: str) -> tuple[list, list]:
    """What :func:`outline` must return, from the parser's full token stream (every inline run parsed)."""
    from bookmark_research.wiki.markdown import reader

    tokens = reader().parse(markdown)
    slugger, headings, links = Slugger(), [], []
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            text = "".join(c.content for c in tokens[i + 1].children or () if c.type in ("text", "code_inline"))
            headings.append((int(token.tag[1]), text, slugger.slug(text)))
        if token.type == "inline":
            stack = list(token.children or ())
            while stack:
                child = stack.pop(0)
                if child.type in ("link_open", "image"):
                    links.append((str(child.attrs["href" if child.type == "link_open" else "src"]),
                                  token.map[0] + 1 if token.map else 0))
                stack[0:0] = child.children or []
    return headings, links


RENDEREDISH = st.lists(st.sampled_from([
    "# H", "## A *b* `c`", "### [x](y.md)", "Setext", "---", "===", "> [q](../a.md#h) x", "- [i](#h)", "1. <https://e.com>",
    "[r]: ref.md#r", "[r]", "[r][]", "![alt [n](m.md)](p.png)", "[a](b.md) and [c](d.md#e)", "\\[not](a link)",
    "`[code](x)`", "<mail@e.com>", "<b>[h](t.md)</b>", "| a | [b](c.md) |", "|---|---|", "    [indented](x.md)",
    "```", "[fenced](x.md)", "text", "", "&#91;x&#93;(y)", "**[s](t.md)**", "# Evidence 1", "# Evidence 1"]),
    max_size=14).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(RENDEREDISH, st.text(alphabet="[]()<>!`*_\\#:/.-=|>& \nabh1", max_size=120)))
def test_outline_equals_the_full_token_walk(markdown: str) -> None:
    for _ in range(2):  # the second time from the per-process memo of inline runs
        assert outline(markdown) == _outline_from_every_token(markdown)


def test_the_outline_reader_parses_inline_runs_as_the_full_reader_does() -> None:
    from bookmark_research.wiki.markdown import _block_reader, reader

    assert _block_reader().inline.ruler.get_active_rules() == reader().inline.ruler.get_active_rules()
    assert _block_reader().block.ruler.get_active_rules() == reader().block.ruler.get_active_rules()
    assert _block_reader().options == reader().options
