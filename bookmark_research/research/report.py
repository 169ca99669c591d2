"""``research_finish``: the guards, every citation re-verified, then ``report.md``, ``sources.json`` and the
coverage file, and the ``wiki_follow_up``."""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import ConflictError, NotFoundError
from bookmark_research.research import citations, coverage, jsonfile, reviews, store
from bookmark_research.research.ids import sha256_text
from bookmark_research.research.operations import require_active
from bookmark_research.research.evidence import source_failure
from bookmark_research.research.store import Session

CAVEAT = ("Sources are provider extracts, host imports or secondary reports of pages; quotes are verified to stand in "
          "the saved text, which proves presence, not meaning. Completeness and freshness of each page are unknown "
          "(unknown completeness): the retrieval date is not a publication or update date, and several providers "
          "returning one URL are one page, not independent confirmation.")
STOPWORDS = frozenset("""about above after again against also among because been before being below between both could
does doing down during each from further have having here into itself just more most other over same should some
such than that their theirs them then there these they this those through under until very what when where which
while whom will with would your yours does which whose shall might must within without across using used""".split())


def _guards(session: Session, status: str, cover: dict[str, Any]) -> None:
    state = session.state
    if status == "completed":
        if any(q["status"] != "answered" for q in state["questions"]):
            raise ConflictError("Unanswered research questions remain; record answers or finish incomplete")
        if any(c["status"] == "open" for c in state["conflicts"]):
            raise ConflictError("Unresolved evidence conflicts remain; resolve them or finish incomplete")
        if any(op["status"] == "pending" for op in state["operations"]):
            raise ConflictError("An interrupted operation needs acknowledgement before completion")
        claims = {c["id"]: c for c in state["claims"]}
        for q in state["questions"]:
            for cid in q["claim_ids"]:
                invalid = citations.claim_invalid(state, claims[cid])
                if invalid:
                    raise ConflictError(f"Question {q['id']} relies on {cid}: {invalid}; record a revised answer "
                                        "or finish incomplete")
        if not cover["completion_ready"]:
            raise ConflictError("Research coverage incomplete: " + "; ".join(cover["completion_blockers"]))
    for claim in state["claims"]:
        for citation in claim["citations"]:
            problem = citations.citation_problem(session, citation, allow_rejected=claim["status"] == "retracted")
            if problem:
                raise ConflictError(f"{claim['id']}: {problem}")
    for run in state["external_runs"]:
        problem = reviews.external_artifact_problem(session, run)
        if problem:
            raise ConflictError(f"{run['id']}: {problem}")


def distinctive_terms(state: dict[str, Any], limit: int = 6) -> list[str]:
    """Up to ``limit`` terms from the questions and active claims, most frequent (then longest) first."""
    texts = [q["question"] for q in state["questions"]] + [c["statement"] for c in state["claims"]
                                                            if c["status"] == "active"]
    counts: Counter[str] = Counter()
    for text in texts:
        for word in re.findall(r"[^\W\d_][\w'-]*", text.lower()):
            if len(word) >= 4 and word not in STOPWORDS:
                counts[word] += 1
        for run in re.findall(r"[\u3400-\u9fff]{2,}", text):
            counts[run[:4]] += 1
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[:limit]]


def wiki_follow_up(app: App, session: Session) -> dict[str, Any]:
    """What to do with the session's claims next, per ``wiki.after_research``.

    ``candidates`` is left empty here: the research stage does not read the wiki (it sits above research);
    the ``research_finish`` operation fills it in with the wiki's page search for ``terms``.
    """
    from bookmark_research.config.settings import load
    from bookmark_research.research.api import eligible

    policy = load().wiki.after_research
    if policy == "off":
        return {"policy": "off"}
    terms = distinctive_terms(session.state)
    claims = eligible(session)
    if not claims:
        instruction = ("No claim is eligible for the wiki (an eligible claim is active and every citation is an "
                       "accepted source); there is nothing to write.")
    else:
        instruction = {
            "suggest": ("Show the user the candidate wiki pages (or propose a new page) and the eligible claims, and "
                        "ask before writing anything to the wiki."),
            "auto": "Write the eligible claims into the wiki now, without asking, and report what was written.",
        }[policy]
    return {"policy": policy, "candidates": [], "terms": terms,
            "eligible_claim_ids": claims, "instruction": instruction}


# --- the report -------------------------------------------------------------------------------------------


def _quote_block(text: str) -> list[str]:
    return ["> " + line if line else ">" for line in text.splitlines() or [""]]


def _rate(metric: dict[str, Any]) -> str:
    return "n/a" if metric["rate"] is None else f"{metric['rate'] * 100:.1f}%"


def render(session: Session, cover: dict[str, Any], coverage_file: str) -> str:
    state = session.state
    scope = state["source_scope"]
    plan = state["initial_fetch_plan"]
    sources = {s["id"]: s for s in state["sources"]}
    claims = {c["id"]: c for c in state["claims"]}
    out = [f"# {state['brief'].splitlines()[0]}", "", f"Status: **{state['status']}** · {state['finished_at']}", ""]
    if len(state["brief"].splitlines()) > 1:
        out += [state["brief"], ""]
    out += [state["summary"], "", "## Scope", "", state["scope"] or "See the research questions below.", "",
            f"Input: {_input_line(state)}", "",
            "[Bookmark context in the research scope](context.json)", "",
            f"Input scope: **{scope['mode']}** · {scope['selected_url_count']}/{scope['input_url_count']} exact "
            f"original URLs · {scope['selected_instance_count']}/{scope['input_instance_count']} bookmark instances",
            "", f"Input version: `{scope['input_version']}` · [Complete frozen inventory](inventory.json)", ""]
    if plan["selected_urls"] > 0:
        short = (f" — {plan['call_shortfall']} short, so {plan['urls_beyond_capacity']} URLs are beyond it"
                 if plan["call_shortfall"] else "")
        out += [f"Initial fetch budget: reading all {plan['selected_urls']} URLs takes at least "
                f"{plan['minimum_required']} fetch calls (up to {plan['max_urls_per_call']} URLs per call); "
                f"{plan['configured_limit']} were configured{short}. The complete scope is retained. "
                f"{plan['basis']}", ""]
    m = cover["metrics"]
    out += ["| Coverage measure | Count / scope | Rate |", "| --- | --- | --- |"]
    for label, key in (("Accounted for", "accounted_for"), ("Usable accepted text", "usable_text"),
                       ("Substantive review", "substantive_review"), ("Questions completed", "question_completion")):
        out.append(f"| {label} | {m[key]['count']}/{m[key]['total']} | {_rate(m[key])} |")
    out += ["", "Failure notes and exclusions count only toward accounting; usable text needs an accepted page and a "
            "substantive review needs quoted, accepted original-page evidence.", "",
            f"[Per-input reviews and gaps]({coverage_file})", ""]
    out += [f"- {b}" for b in cover["completion_blockers"]] + ([""] if cover["completion_blockers"] else [])

    out += ["## Research questions", ""]
    for q in state["questions"]:
        out += [f"### {q['id']}: {q['question']}", "", f"Status: {q['status']}", ""]
        if q["status"] == "answered":
            out += [q["answer"], ""]
            refs = [(cid, c) for cid in q["claim_ids"] for c in claims[cid]["citations"]]
            out += ["Claims: " + ", ".join(f"[{cid}](#claim-{cid})" for cid in q["claim_ids"]), ""]
            for n, (cid, c) in enumerate(refs, start=1):
                source = sources.get(c["source_id"], {})
                link = f"[saved text]({source['body_file']})" if source.get("body_file") else "no saved text"
                quote = c["quote"] if len(c["quote"]) <= 200 else c["quote"][:199] + "…"
                out.append(f"{n}. [{c['source_id']}](#source-{c['source_id']}) ({cid}): “{quote}” — {link}, "
                           f"characters {c.get('span', {}).get('start')}–{c.get('span', {}).get('end')}")
            out.append("")
        elif q.get("answer"):
            out += [f"Previous answer (requires revision): {q['answer']}", ""]
        else:
            out += ["No supported answer recorded.", ""]
        gaps = coverage.recorded_gaps(state, q["id"])
        for gap in gaps:
            if gap["status"] == "open":
                out += [f"Unresolved: {gap['text']}", ""]
        earlier = [g for g in gaps if g["status"] == "superseded"]
        if earlier:
            out += ["Gaps recorded earlier (superseded by a later answer or gap):", ""]
            out += [f"- {g['text']} ({g['at']})" for g in earlier] + [""]

    out += ["## Claims and evidence", ""]
    for c in state["claims"]:
        kind = "model inference" if c["inference"] else "source-backed finding"
        out += [f"### Claim {c['id']}", "", f"{c['statement']} (confidence: {c['confidence']}; {kind}; "
                f"status: {c['status']})", ""]
        if c["status"] == "retracted":
            out += [f"Retracted: {c.get('retraction')}", ""]
        for cite in c["citations"]:
            how = "exact saved quote" if cite.get("match", "exact") == "exact" else "quote (normalised match)"
            out += [f"Source [{cite['source_id']}](#source-{cite['source_id']}); {how}:", ""]
            out += _quote_block(cite["quote"]) + [""]
            if cite.get("match") == "normalized":
                out += ["Saved text at that place:", ""] + _quote_block(cite["found_text"]) + [""]
    if not state["claims"]:
        out += ["No claims recorded.", ""]

    out += ["## Conflicts", ""]
    for x in state["conflicts"]:
        links = ", ".join(f"[{cid}](#claim-{cid})" for cid in x["claim_ids"])
        out.append(f"- {x['id']} ({x['status']}): {x['text']} — claims {links}")
        if x.get("resolution"):
            res = ", ".join(f"[{cid}](#claim-{cid})" for cid in x["resolution"]["claim_ids"])
            out.append(f"  Resolution: {x['resolution']['text']} ({res})")
    if not state["conflicts"]:
        out.append("No conflicts recorded; this does not prove that none exist.")
    out += ["", "## Limitations and retrieval coverage", "", CAVEAT, ""]
    out += [f"- {item}" for item in state.get("limitations") or []]
    for op in state["operations"]:
        if op["status"] != "ok":
            out.append(f"- {op['id']} ({op['kind']}): {op['status']}; inspect {op.get('result_file') or 'state.json'}")
    out.append("")
    if state["external_runs"]:
        out += ["## External run observations", ""]
        for run in state["external_runs"]:
            out.append(f"- {run['id']} · {run['provider']} / {run['run_id']} · {run['status']}: {run['text']}")
            if run.get("result_file"):
                out.append(f"  [Saved complete result]({run['result_file']}) · SHA-256: `{run['result_sha256']}`")
        out.append("")
    used, budget = state["usage"], state["budget"]
    out += [f"Budget used (reserved before each request, never refunded): search calls {used['search_calls']}/"
            f"{budget['max_search_calls']} · fetch calls {used['fetch_calls']}/{budget['max_fetch_calls']} · "
            f"rounds {used['rounds']}/{budget['max_rounds']}", ""]
    out += _set_aside(session)
    out += ["## Sources", ""]
    for s in state["sources"]:
        out += [f"### Source {s['id']}", "", s["url"], "",
                f"Provider: {s['provider']} · Retrieved: {s.get('retrieved_at') or 'unknown'} · Status: "
                f"{s['extraction_status']} · Evidence: {s['evidence_kind']} · Content: {s['content_kind']}"]
        if s.get("archive_reuse"):
            out.append(f"Reused from the evidence archive (capture {s['archive_reuse']['capture_id']}), not fetched again.")
        if s.get("doi") or s.get("venue") or s.get("year"):
            out.append(f"DOI: {s.get('doi') or 'none'} · Venue: {s.get('venue') or 'unknown'} · Year: "
                       f"{s.get('year') or 'unknown'}")
        failure = source_failure(s)
        if failure:
            out.append(f"Not read: {failure}")
        review = s.get("review") or {}
        out.append(f"Content review: {review.get('verdict')}" + (f" — {review['text']}" if review.get("text") else ""))
        files = [f"[Manifest]({s['manifest_file']})" if s.get("manifest_file") else None,
                 f"[Actual response]({s['response_file']})" if s.get("response_file") else None]
        line = " · ".join(f for f in files if f)
        if s.get("body_file"):
            line += f" · [Saved text]({s['body_file']}) · SHA-256: `{s['sha256']}`"
        out.append(line)
        if s["evidence_kind"] == "external_report":
            out.append("Secondary external report; its referenced original pages are not marked as read.")
        out.append("")
    earlier = [e["value"] for e in state["events"] if e["kind"] == "resume"]
    if earlier:
        out += ["## Earlier reports", ""]
        for value in earlier:
            name = value["previous_artifacts"].get("report")
            if name:
                out.append(f"- [Previous incomplete report]({name}): {value['text']}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _input_line(state: dict[str, Any]) -> str:
    if state["source_ids"]:
        return "indexed sources " + ", ".join(state["source_ids"])
    if state["source_scope"]["mode"] == "questions":
        return "questions only (no bookmarks)"
    return "a plain URL list"


def _set_aside(session: Session) -> list[str]:
    """The inputs reviewed as excluded or blocked, with their URLs and reasons."""
    reviews = [r for r in session.state["inventory_reviews"] if r["disposition"] in ("excluded", "blocked")]
    if not reviews:
        return []
    urls = {e["id"]: e["original_url"] for e in session.inventory()["entries"]}
    out = ["## Inputs excluded or blocked", ""]
    for r in reviews:
        reason = f" ({r['reason_code']})" if r.get("reason_code") else ""
        out.append(f"- {r['inventory_id']} {urls.get(r['inventory_id'], '')} — {r['disposition']}{reason}: {r['text']}")
    return out + [""]


def sources_document(state: dict[str, Any], cover: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 1, "research_id": state["research_id"], "status": state["status"],
            "sources": state["sources"], "claims": state["claims"], "conflicts": state["conflicts"],
            "operations": state["operations"], "questions": state["questions"], "limitations": state["limitations"],
            "source_scope": state["source_scope"], "inventory_manifest_sha256": state["inventory_manifest_sha256"],
            "inventory_reviews": state["inventory_reviews"], "external_runs": state["external_runs"],
            "coverage": cover}


def finish(app: App, research_id: str, summary: str, status: str, limitations: list[str]) -> dict[str, Any]:
    from bookmark_research.research.overview import overview

    with store.locked_session(app, research_id) as session:
        require_active(session.state)
        for folder in (session.directory, session.directory / "operations"):  # what a killed writer left: every
            atomic.remove_leftovers(folder, time.time())  # write there happens under the lock we hold now
        full = coverage.evaluate(session)
        cover = coverage.summary(full)
        _guards(session, status, cover)
        coverage_text = jsonfile.dumps(full)
        coverage_file = f"coverage-{sha256_text(coverage_text)[:24]}.json"
        state = session.state
        state.update(status=status, summary=summary.strip(), limitations=[x.strip() for x in limitations],
                     finished_at=iso(),
                     artifacts={"report": "report.md", "sources": "sources.json", "state": "state.json",
                                "context": "context.json", "coverage": coverage_file, "inventory": "inventory.json"})
        atomic.write_text(session.directory / coverage_file, coverage_text)
        atomic.write_text(session.directory / "report.md", render(session, cover, coverage_file))
        atomic.write_text(session.directory / "sources.json", jsonfile.dumps(sources_document(state, cover)))
        session.save()
        return {**overview(session, cover), "wiki_follow_up": wiki_follow_up(app, session)}


def report(app: App, research_id: str) -> dict[str, Any]:
    """The finished session's report.md (and where its artifacts are)."""
    from bookmark_research.research.overview import artifacts

    session = store.open_session(app, research_id)
    if not session.state.get("artifacts"):
        raise NotFoundError("Research has no report yet; finish it with research_finish (terminal: research finish "
                            "ID --summary TEXT; status incomplete keeps it resumable)")
    path = session.path(session.state["artifacts"]["report"])
    data = store.read_regular(path, "report.md")
    return {"research_id": session.id, "status": session.state["status"], "path": str(path),
            "sha256": sha256_text(data.decode("utf-8")), "text": data.decode("utf-8"),
            "artifacts": artifacts(session)}
