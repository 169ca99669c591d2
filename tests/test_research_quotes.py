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
