"""Wiki search: ranking, stemming, CJK n-grams, snippets, and the derived Whoosh index's recovery."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.wiki_support import Lab, lab  # noqa: F401


def _ids(result: dict) -> list[str]:
    return [r["page_id"] for r in result["results"]]


def test_cjk_substrings_and_authored_text_only(lab: Lab) -> None:
    lab.write("sessions")
    found = lab("wiki_search", query="可恢复")
    assert found["total"] == 1 and found["results"][0]["snippet"].count("[可恢复]") == 1
    assert lab("wiki_search", query="清单被冻结")["total"] == 0  # only in the saved page, not the wiki page
    assert lab("wiki_search", query="恢")["total"] == 1


def test_snippets_mark_whole_words_as_written(lab: Lab) -> None:
    lab.write("runtimes", lab.page(title="Runtimes", text="Async Runtimes differ. An async runtime schedules "
                                   "tasks; runtime-agnostic crates exist. 会话可恢复。"))
    snippet = lab("wiki_search", query='"async runtime"')["results"][0]["snippet"]
    assert snippet.startswith("[Async] [Runtimes] differ. An [async] [runtime] schedules tasks; [runtime]-agnostic")
    assert "[Runtim]" not in snippet and "[runtim]" not in snippet
    assert lab("wiki_search", query="schedule")["results"][0]["snippet"].count("[schedules]") == 1
    assert "会话[可恢复]" in lab("wiki_search", query="可恢复")["results"][0]["snippet"]
    headings = lab("wiki_search", query="resuming")["results"][0]["snippet"]  # only in a heading
    assert headings == "[Resuming]"
    lab.write("long", lab.page(title="Long", text="alphabet " * 60 + "quokka " + "betamax " * 60))
    passage = lab("wiki_search", query="quokka")["results"][0]["snippet"]
    assert passage.startswith("…alphabet ") and passage.endswith(" betamax…") and "[quokka]" in passage
    assert len(passage) <= 242  # the window: whole words only, cut at spaces


def test_whitespace_insensitive_cjk(lab: Lab) -> None:
    lab.write("unique", lab.page(title="唯一 URL 统计", text="统计唯一 URL 的数量。"))
    spaced = lab("wiki_search", query="唯一 URL")
    squashed = lab("wiki_search", query="唯一URL")
    assert (spaced["total"], spaced["results"][0]["whitespace_insensitive"]) == (1, False)
    assert (squashed["total"], squashed["results"][0]["whitespace_insensitive"]) == (1, True)
    assert "whitespace-insensitive" in spaced["method"]


def test_english_stemming_and_every_word_required(lab: Lab) -> None:
    lab.write("sessions", lab.page(text="Sessions were resumed after crashes."))
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="Aurora indexes bookmarks.",
                                 claims=[lab.ref(lab.cid2)]))
    assert _ids(lab("wiki_search", query="resume session")) == ["sessions"]
    assert _ids(lab("wiki_search", query="crash")) == ["sessions"]
    assert _ids(lab("wiki_search", query="session bookmarks")) == []
    assert _ids(lab("wiki_search", query="AURORA")) == ["aurora"]


def test_title_hits_rank_first_and_ties_break_by_page_id(lab: Lab) -> None:
    neutral = [lab.ref(lab.cid2)]
    lab.write("b-body", lab.page(title="Notes", text="Checkpoint checkpoint details.", claims=neutral))
    lab.write("a-title", lab.page(title="Checkpoint", text="Details.", claims=neutral))
    lab.write("c-same", lab.page(title="Notes", text="Checkpoint checkpoint details.", claims=neutral))
    assert _ids(lab("wiki_search", query="checkpoint")) == ["a-title", "b-body", "c-same"]
    paged = lab("wiki_search", query="checkpoint", limit=1, offset=1)
    assert (_ids(paged), paged["total"], paged["next_offset"]) == (["b-body"], 3, 2)


def test_claim_statements_and_quotes_are_searched(lab: Lab) -> None:
    lab.write("sessions", lab.page(text="Nothing special here."))
    assert _ids(lab("wiki_search", query="research crash")) == ["sessions"]  # in the quote
    assert _ids(lab("wiki_search", query="re-hashed")) == []  # claim c2 is not cited


def test_query_syntax_is_plain_words(lab: Lab) -> None:
    lab.write("sessions", lab.page(text="title:foo and OR (C++) * ~"))
    assert lab("wiki_search", query="title:foo")["total"] == 1
    assert lab("wiki_search", query="(C++)")["total"] == 1
    assert lab("wiki_search", query="***")["total"] == 0


@pytest.mark.parametrize("damage", ["delete", "truncate", "old schema", "out of step"])
def test_a_damaged_search_index_is_rebuilt_with_the_same_results(lab: Lab, damage: str) -> None:
    lab.write("sessions")
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="Aurora 可恢复 bookmarks."))
    before = lab("wiki_search", query="可恢复")
    folder = lab.wiki / ".search"
    if damage == "delete":
        shutil.rmtree(folder)
    elif damage == "truncate":
        for path in folder.iterdir():
            if path.suffix in (".seg", ".toc", ".trm", ".pst", ".dcz", ".fln", ".vps") or path.name.startswith("_"):
                path.write_bytes(path.read_bytes()[:7])
    elif damage == "old schema":
        (folder / "state.json").write_text('{"schema": 0, "index_sha256": ""}')
    else:
        state = json.loads((folder / "state.json").read_text())
        (folder / "state.json").write_text(json.dumps({**state, "index_sha256": "0"}))
    after = lab("wiki_search", query="可恢复")
    assert after == before and after["total"] == 2


def test_a_write_never_fails_because_of_the_search_index(lab: Lab) -> None:
    lab.write("sessions")
    assert lab("wiki_search", query="crash")["total"] == 1  # builds the index
    folder = lab.wiki / ".search"
    shutil.rmtree(folder)
    folder.write_text("not a folder")  # the index cannot even be opened
    out = lab.write("sessions", lab.page(title="Renamed sessions"), expected_revision=1)
    assert out["revision"] == 2
    folder.unlink()
    assert _ids(lab("wiki_search", query="renamed")) == ["sessions"]


def test_search_sees_writes_made_while_the_index_was_out_of_step(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    from bookmark_research.wiki import search

    lab.write("sessions")
    lab("wiki_search", query="crash")
    monkeypatch.setattr(search, "index_page", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    out = lab.write("sessions", lab.page(title="Quokka notes"), expected_revision=1)
    assert out["derived_errors"] and "disk full" in out["derived_errors"][0]
    assert _ids(lab("wiki_search", query="quokka")) == ["sessions"]


def test_an_empty_or_missing_wiki_searches_to_nothing(lab: Lab) -> None:
    found = lab("wiki_search", query="anything")
    assert (found["total"], found["results"]) == (0, [])
    assert not Path(found["directory"]).exists()


def test_follow_up_candidates_rank_pages_by_matched_terms(lab: Lab) -> None:
    from bookmark_research.wiki.followup import wiki_candidates

    neutral = [lab.ref(lab.cid2)]
    lab.write("sessions", lab.page(title="Session recovery", text="Crash recovery of sessions.", claims=neutral))
    lab.write("inventory", lab.page(title="Inventories", text="Frozen inventories and crash safety.", claims=neutral))
    lab.write("other", lab.page(title="Unrelated", text="Nothing in common.", claims=neutral))
    found = wiki_candidates(lab.core.app, ["crash", "session", "frozen", "recovery", "Crash", "absent"])
    assert [(c["page_id"], c["matched_terms"]) for c in found] == [
        ("sessions", ["crash", "session", "recovery"]), ("inventory", ["crash", "frozen"])]
    assert found[0]["status"] == "current" and wiki_candidates(lab.core.app, []) == []
    lab.retract(lab.rid, lab.cid2)  # stale pages are never candidates
    assert wiki_candidates(lab.core.app, ["crash"]) == []


def test_a_long_lived_process_sees_updates_and_merges_exactly(lab: Lab) -> None:
    """One process (as an MCP server is) searches, then pages are updated and segments merged."""
    lab.write("sessions", lab.page(text="Quokka wombat."))
    lab.write("other", lab.page(title="Other", text="Wombat only."))
    assert lab("wiki_search", query="quokka")["total"] == 1  # the index is now open in this process
    lab.write("sessions", lab.page(text="Wombat platypus."), expected_revision=1)
    assert lab("wiki_search", query="quokka")["total"] == 0  # the old revision's words are gone ...
    assert _ids(lab("wiki_search", query="wombat")) == ["other", "sessions"]  # ... and no page matches twice
    for i in range(12):  # enough one-page segments for the merge policy to merge them
        lab.write(f"extra-{i}", lab.page(title=f"Extra {i}", text="Wombat numbat."))
    found = lab("wiki_search", query="wombat", limit=50)
    assert found["total"] == 14 and len(set(_ids(found))) == 14


def test_the_faster_phrase_check_matches_and_scores_as_whoosh_does(tmp_path: Path) -> None:
    import random

    from whoosh import query as wq
    from whoosh.filedb.filestore import FileStorage
    from whoosh.scoring import BM25F

    from bookmark_research.wiki import search

    rng = random.Random(3)
    alphabet = "推理加速模型 ab，"
    ix = FileStorage(str(tmp_path)).create_index(search.schema())
    writer = ix.writer()
    for i in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        writer.add_document(page_id=f"p{i}", sha="", title=text[:5], headings="", body=text, claims=text[::-1])
    writer.commit()
    checked = 0
    with ix.searcher(weighting=BM25F()) as searcher:
        for _ in range(300):
            word = "".join(rng.choice(alphabet.replace(" ", "")) for _ in range(rng.randint(2, 5)))
            tokens = [t.text for t in search.analyzer()(word, mode="query")]
            if len(tokens) < 2:
                continue
            for field in search.FIELDS:
                ours = searcher.search(search.Phrase(field, tokens), limit=None)
                theirs = searcher.search(wq.Phrase(field, tokens), limit=None)
                assert [(s, d) for s, d in ours.top_n] == [(s, d) for s, d in theirs.top_n]
                checked += len(theirs.top_n)
    assert checked > 500


def test_a_snowball_stem_keeps_the_first_letter_so_snippets_only_stem_likely_words() -> None:
    """The snippet marks a word when its stem is a query term, but stems only words that start like a
    term; that is exact only if no stem changes a word's first letter. Checked on every word of the
    real article pages and on random letter strings (suffix rules such as y -> i included)."""
    import random

    import re

    from whoosh.lang import stemmer_for_language

    truth = Path(__file__).resolve().parents[2] / "shared/fixtures/article-extraction-dev/ground-truth.json"
    bodies = [v["articleBody"] for v in json.loads(truth.read_text("utf-8")).values()] if truth.is_file() else []
    stem = stemmer_for_language("en")
    words = {w.lower() for body in bodies for w in re.findall(r"[^\W\d_]+", body)}
    rng = random.Random(7)
    words |= {"".join(rng.choice("aeiouybcdlnrstgé") for _ in range(rng.randint(1, 12))) for _ in range(50_000)}
    words |= {"dying", "lying", "tying", "skies", "idly", "early", "only", "news", "yelling", "ys", "yy"}
    broken = [w for w in words if stem(w)[:1] != w[:1]]
    assert broken == [] and len(words) > 20_000


def test_snippets_mark_whole_words_whose_stem_matches(lab: Lab) -> None:
    lab.write("sessions", lab.page(text="Early runtimes differ; a runtime's RUNTIMES matter, runs do not."))
    found = lab("wiki_search", query="runtime")
    assert found["results"][0]["snippet"].count("[") == 3
    assert "[runtimes]" in found["results"][0]["snippet"] and "[RUNTIMES]" in found["results"][0]["snippet"]
