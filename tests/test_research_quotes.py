"""Quote verification: exact and normalised matches with spans, refusals with the closest passage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.research.quotes import BodyIndex, Normalized, closest_passage, locate, normalize, recheck
from tests.research_support import claim, imported, start

PAGE = ("Tokio\u00a0is an asynchronous runtime.\r\nIt provides a “work-stealing” scheduler — fast and fair…\n"
        "Inter\u00adnational users wrote: ‘it just works’.\n"
        "知识图谱（Knowledge Graph）是一种\n结构化的语义网络，用于检索增强生成。")


@pytest.mark.parametrize("quote,found", [
    ("Tokio is an asynchronous runtime.", "Tokio\u00a0is an asynchronous runtime."),                     # NBSP
    ("runtime. It provides", "runtime.\r\nIt provides"),                                                # CRLF
    ('a "work-stealing" scheduler - fast and fair...', "a “work-stealing” scheduler — fast and fair…"),  # quotes
    ("International users", "Inter\u00adnational users"),                                               # soft hyphen
    ("wrote: 'it just works'.", "wrote: ‘it just works’."),
    ("知识图谱(Knowledge Graph)是一种结构化的语义网络,用于检索增强生成.",                                    # CJK
     "知识图谱（Knowledge Graph）是一种\n结构化的语义网络，用于检索增强生成。"),
    ("  Tokio\u00a0is an asynchronous  ", "Tokio\u00a0is an asynchronous"),                             # trimmed, exact
])
def test_exact_or_normalised_matches_report_their_span(quote, found):
    match = locate(BodyIndex(PAGE), quote)
    assert match is not None and match.found_text == found
    assert PAGE[match.start:match.end] == found
    assert match.match == ("exact" if quote.strip() == found else "normalized")
    assert recheck(PAGE, {"quote": quote, **match.as_citation()}) is None


@pytest.mark.parametrize("quote", ["Tokio is a synchronous runtime.", "tokio is an asynchronous runtime.",
                                   "work stealing scheduler", "知识图谱是一种"])
def test_near_misses_are_refused(quote):
    assert locate(BodyIndex(PAGE), quote) is None


def test_closest_passage_points_at_the_near_miss():
    body = BodyIndex(("Filler paragraph about other things. " * 200) + PAGE + (" More filler text here." * 200))
    passage = closest_passage(body, "It provides a work stealing scheduler, fast and fair")
    assert passage is not None and "work-stealing" in passage and "\n" not in passage
    assert closest_passage(body, "zzzz qqqq") is None


def test_spans_survive_a_change_elsewhere_only_when_text_at_span_holds():
    match = locate(BodyIndex(PAGE), 'a "work-stealing" scheduler')
    citation = {"quote": 'a "work-stealing" scheduler', **match.as_citation()}
    assert match.match == "normalized"
    assert recheck(PAGE, citation) is None
    shifted = "x" + PAGE
    assert recheck(shifted, citation) == "Citation span no longer holds the quoted text"


WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "知识", "图谱", "don't", "x-y", "3.14"])
SEPARATORS = st.sampled_from([" ", "  ", "\n", "\u00a0", "\r\n", "\t"])


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.tuples(WORDS, SEPARATORS), min_size=3, max_size=40), data=st.data())
def test_any_slice_with_variant_spacing_and_quotes_is_found(words, data):
    text = "".join(w + s for w, s in words)
    start = data.draw(st.integers(0, len(words) - 2))
    end = data.draw(st.integers(start + 1, len(words)))
    original = "".join(w + s for w, s in words[start:end]).strip()
    quote = " ".join(w for w, _ in words[start:end]).replace("'", "’")
    match = locate(BodyIndex(text), quote)
    assert match is not None
    assert normalize(quote) in normalize(text[match.start:match.end])
    assert text[match.start:match.end].strip() == text[match.start:match.end]
    assert len(match.found_text) <= len(original) + 2


def test_normalised_offsets_map_into_the_original():
    norm = Normalized(PAGE)
    for n in range(0, len(norm.text), 7):
        assert 0 <= norm.orig_start(n) <= len(PAGE)
        assert norm.orig_start(n) <= norm.orig_end(n + 1) <= len(PAGE)


def test_record_stores_span_found_text_and_match(core):
    out = start(core, ["https://tokio.example/"])
    rid = out["research_id"]
    imported(core, rid, "i1", "https://tokio.example/", text=PAGE)
    recorded = claim(core, rid, "s1", 'a "work-stealing" scheduler - fast')["recorded"]["citations"][0]
    assert recorded["match"] == "normalized" and recorded["found_text"] == "a “work-stealing” scheduler — fast"
    assert PAGE[recorded["span"]["start"]:recorded["span"]["end"]] == recorded["found_text"]
    exact = claim(core, rid, "s1", "asynchronous runtime.")["recorded"]["citations"][0]
    assert exact["match"] == "exact"
    with pytest.raises(BookmarkResearchError, match=r"closest passage in s1: \"It provides a “work-stealing”"):
        claim(core, rid, "s1", "It provides a work stealing scheduler")


def _within(seconds: float, fn, *args):
    """``fn(*args)`` run on a thread; fails when it has not returned after ``seconds`` (a runaway search)."""
    import threading

    out: list = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"still searching after {seconds} s"
    return out[0]


def test_a_long_near_miss_on_repetitive_text_is_bounded():
    """QA B3: 12 words repeated (a table, a list, a log) and a 4,000-character quote that is not in it took
    about 100 s (a pairwise matcher per candidate window); the search is now a few scans at most."""
    import random

    rng = random.Random(3)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    text = " ".join(rng.choice(words) for _ in range(2_400))[:12_000]
    quote = " ".join(rng.choice(words) for _ in range(800))[:4_000]  # not in the text
    body = BodyIndex(text)
    assert locate(body, quote) is None
    passage = _within(20, closest_passage, body, quote)
    assert passage is not None and len(passage) <= 300
    page = " ".join(rng.choice(words) for _ in range(200_000))[:1_000_000]
    at = page.index(" ", 700_000) + 1
    near = page[at:at + 4_000]
    near = near[:2_000] + "X" + near[2_001:]  # one character changed in the middle
    big = BodyIndex(page)
    assert locate(big, near) is None
    passage = _within(20, closest_passage, big, near)
    assert passage.startswith(" ".join(page[at:at + 120].split()[:-1]))  # where the quote was taken from


def test_the_session_lock_is_free_while_a_near_miss_is_searched(core, monkeypatch):
    """The quote is looked up on an unlocked snapshot (bodies are content addressed and hash-checked), so
    other steps of the session go on during a long search; the locked step only takes the result."""
    from bookmark_research.locks import file_lock
    from bookmark_research.research import citations, store

    rid = start(core, ["https://tokio.example/"])["research_id"]
    imported(core, rid, "i1", "https://tokio.example/", text=PAGE)
    lock_file = store.locate(core.app, rid) / ".state.json.lock"
    seen: list[bool] = []
    real = citations.closest_passage

    def probe(body, quote):
        try:
            with file_lock(lock_file, timeout=0):
                seen.append(True)
        except BookmarkResearchError:
            seen.append(False)
        return real(body, quote)

    monkeypatch.setattr(citations, "closest_passage", probe)
    with pytest.raises(BookmarkResearchError, match=r"closest passage in s1: \"It provides a “work-stealing”"):
        claim(core, rid, "s1", "It provides a work stealing scheduler")
    assert seen == [True]


def test_quotes_run_across_list_items_table_cells_and_quoted_lines_of_a_real_extraction(core):
    """The extractor saves pages as Markdown; a quote spanning two list items or table cells has the block
    markers between its words. Step 6 of the normalisation ignores them; the span is the exact saved text."""
    from tests.research_support import PageSite, allow_loopback
    from tests.site import META_ARTICLE

    page = META_ARTICLE.replace("</article>", "<blockquote><p>Fusion is cheap.</p><p>It is also robust.</p>"
                                "</blockquote><ol><li>Rank every list.</li><li>Sum the reciprocals.</li></ol></article>")
    allow_loopback()
    with PageSite({"/notes": (200, page, "text/html; charset=utf-8")}) as site:
        url = site.base + "/notes"
        rid = start(core, [url], providers=["direct"])["research_id"]
        fetched = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=[url])
    assert fetched["status"] == "ok"
    saved = core("research_source", research_id=rid, source_id="s1")["text"]
    assert "\n- Outliers" in saved and "| 60 |" in saved and "\n1. " in saved  # Markdown as saved
    for quote, markers in [
        ("No score calibration is needed. Outliers in one list cannot dominate.", "- "),  # two list items
        ("k effect 60 the usual choice", "|"),  # header row, separator row and a body row of a table
        ("Fusion is cheap. It is also robust.", ">"),  # two quoted paragraphs
        ("Rank every list. Sum the reciprocals.", "2. "),  # a numbered list
        ("Why it works No score calibration", "- "),  # a heading, then a list item
    ]:
        cited = claim(core, rid, "s1", quote)["recorded"]["citations"][0]
        span = cited["span"]
        assert cited["match"] == "normalized" and saved[span["start"]:span["end"]] == cited["found_text"]
        assert markers in cited["found_text"] and cited["found_text"].startswith(quote.split()[0])
        assert cited["found_text"].endswith(quote.split()[-1])
    with pytest.raises(BookmarkResearchError, match="closest passage"):  # words must still match
        claim(core, rid, "s1", "No score calibration is needed. Outliers in one list can dominate.")
    finished = core("research_record", research_id=rid, entry={"kind": "source_review", "source_id": "s1",
                                                                "verdict": "accepted", "text": "read"})
    assert finished["id"] == "s1"
    from bookmark_research.research import api

    assert all(c["valid"] for n in range(1, 6) for c in api.claim_evidence(core.app, rid, f"c{n}")["citations"])


@pytest.mark.parametrize("text,quote", [
    ("Prices rose in\n2024. The year was hard.", "in 2024. The year"),  # a line starting like a number marker
    ("See the list:\n- alpha\n- beta", "list: - alpha - beta"),  # markers quoted as they stand
    ("Plain text\n> quoted reply", "text > quoted"),
])
def test_markers_quoted_literally_still_match(text, quote):
    match = locate(BodyIndex(text), quote)
    assert match is not None and normalize(quote) == normalize(match.found_text)
    assert recheck(text, {"quote": quote, **match.as_citation()}) is None


def test_block_markers_count_as_whitespace_only_at_line_starts():
    text = "Use a - b and 1. x here\n- item one\n- item two\n| a | b |"
    assert normalize(text, markdown=True) == "Use a - b and 1. x here item one item two a b"
    assert normalize("- item one\n- item two", markdown=True) == "item one item two"
    assert normalize("# 标题\n- 第一项\n- 第二项", markdown=True) == "标题第一项第二项"
    assert locate(BodyIndex("x - item one here"), "item one") is not None


def test_a_state_changed_while_quotes_were_looked_up_is_read_again(core, monkeypatch):
    """The unlocked snapshot's state is taken over under the lock only while state.json is the same file:
    a step recorded by another process in between is kept (read again), never overwritten."""
    from bookmark_research.research import citations

    rid = start(core, ["https://tokio.example/"])["research_id"]
    imported(core, rid, "i1", "https://tokio.example/", text=PAGE)
    real = citations.prepare

    def meanwhile(session, items):  # another process records a gap while the quotes are looked up
        out = real(session, items)
        from bookmark_research.core.registry import run

        run(core.app, "research_record", {"research_id": rid, "entry": {"kind": "gap", "question_id": "q1",
                                                                          "text": "recorded meanwhile"}})
        return out

    monkeypatch.setattr(citations, "prepare", meanwhile)
    claim(core, rid, "s1", "Tokio is an asynchronous runtime.")
    status = core("research_status", research_id=rid)
    assert status["questions"][0]["gap"] == "recorded meanwhile" and status["counts"]["claims"] == 1
