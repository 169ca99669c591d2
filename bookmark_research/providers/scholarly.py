"""Scholarly providers (OpenAlex, Semantic Scholar, Crossref, PubMed, arXiv) and the literature waterfall.

Each adapter turns one API's answer into the same record shape. Requests are bounded (connect ~3 s,
request ~15 s, responses ≤ 4 MiB), endpoints are fixed here, credentialed requests follow no
redirects and take no proxy from the environment, and errors never echo URLs, bodies or keys.
"""

from __future__ import annotations

import html
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from lxml import etree

from bookmark_research.config.settings import Settings, credential, load
from bookmark_research.clock import iso
from bookmark_research.providers.base import USER_AGENT, ProviderError, api_key, classify_http
from bookmark_research.providers.http import MAX_RESPONSE_BYTES, read_capped

OPENALEX = "https://api.openalex.org/works"
SEMANTIC_SCHOLAR = "https://api.semanticscholar.org/graph/v1/paper/search"
CROSSREF = "https://api.crossref.org/works"
PUBMED_SEARCH = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi"
PUBMED_SUMMARY = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esummary.fcgi"
ARXIV = "https://export.arxiv.org/api/query"
REQUEST_SECONDS = 15.0
ALL = ("openalex", "semantic_scholar", "crossref", "pubmed", "arxiv")
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)
BIOMEDICAL = re.compile(r"\b(clinical|patients?|disease|cancer|tumou?r|gene|genom\w*|protein|drug|therap\w*|"
                        r"covid|sars|vaccine|trial|diabet\w*|cardio\w*|neuro\w*|medic\w*|pubmed)\b", re.I)
PREPRINT = re.compile(r"\b(arxiv|preprint|cs\.[a-z]{2}|llm|transformer|neural|diffusion|reinforcement)\b", re.I)


def normalise_doi(value: str | None) -> str | None:
    if not value:
        return None
    match = DOI.search(value)
    return match.group(1).rstrip(".,;)").lower() if match else None


def _title_key(title: str | None, year: int | None) -> str | None:
    if not title:
        return None
    return re.sub(r"[\W_]+", "", title.casefold()) + f"|{year or ''}"


def _record(provider: str, **fields: Any) -> dict[str, Any]:
    record = {"id": fields.get("id"), "title": fields.get("title"), "authors": fields.get("authors") or [],
              "year": fields.get("year"), "venue": fields.get("venue"), "doi": normalise_doi(fields.get("doi")),
              "url": fields.get("url"), "abstract": fields.get("abstract"), "providers": [provider],
              "ids": {provider: fields.get("id")}, "retrieved_at": iso()}
    if isinstance(record["title"], str):
        record["title"] = " ".join(html.unescape(record["title"]).split())
    return record


class _Client:
    """A bounded httpx client for one provider."""

    def __init__(self, name: str, credentialed: bool, headers: dict[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.name = name
        self.http = httpx.Client(transport=transport, follow_redirects=not credentialed, trust_env=not credentialed,
                                 headers={"User-Agent": USER_AGENT, **(headers or {})},
                                 timeout=httpx.Timeout(REQUEST_SECONDS, connect=3.0))

    def get(self, url: str, params: dict[str, Any]) -> httpx.Response:
        deadline = time.monotonic() + REQUEST_SECONDS  # the whole request, however slowly the body trickles
        try:
            with self.http.stream("GET", url, params=params) as response:
                if response.status_code >= 300:
                    raise classify_http(self.name, response.status_code, response.headers.get("retry-after"))
                read_capped(response, self.name, MAX_RESPONSE_BYTES, deadline=deadline)  # .json() uses the capped body
                return response
        except httpx.TimeoutException:
            raise ProviderError("timeout", f"{self.name}: request timed out", retryable=True) from None
        except httpx.HTTPError as exc:
            raise ProviderError("connection_error", f"{self.name}: request failed ({type(exc).__name__})",
                                retryable=True) from None

    def json(self, url: str, params: dict[str, Any]) -> Any:
        try:
            return self.get(url, params).json()
        except ValueError:
            raise ProviderError("result_format", f"{self.name}: response is not JSON") from None

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def openalex(query: str, limit: int, settings: Settings, from_year: int | None, to_year: int | None,
             transport: httpx.BaseTransport | None = None) -> list[dict[str, Any]]:
    key = api_key("OPENALEX_API_KEY", "openalex", settings)
    if not key:
        raise ProviderError("authentication_required", "openalex requires OPENALEX_API_KEY")
    params: dict[str, Any] = {"search": query, "per_page": min(limit, 200), "api_key": key}
    if settings.scholarly.openalex_mailto:
        params["mailto"] = settings.scholarly.openalex_mailto
    filters = []
    if from_year:
        filters.append(f"from_publication_date:{from_year}-01-01")
    if to_year:
        filters.append(f"to_publication_date:{to_year}-12-31")
    if filters:
        params["filter"] = ",".join(filters)
    with _Client("openalex", True, transport=transport) as client:
        data = client.json(OPENALEX, params)
    rows = data.get("results") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ProviderError("result_format", "openalex: unrecognised response")
    out = []
    for w in rows[:limit]:
        inverted = w.get("abstract_inverted_index") or {}
        words = sorted((pos, word) for word, positions in inverted.items() for pos in positions)
        source = ((w.get("primary_location") or {}).get("source") or {})
        out.append(_record("openalex", id=w.get("id"), title=w.get("display_name") or w.get("title"),
                           authors=[(a.get("author") or {}).get("display_name") for a in w.get("authorships") or []],
                           year=w.get("publication_year"), venue=source.get("display_name"), doi=w.get("doi"),
                           url=w.get("doi") or w.get("id"), abstract=" ".join(word for _, word in words) or None))
    return out


def semantic_scholar(query: str, limit: int, settings: Settings, from_year: int | None, to_year: int | None,
                     transport: httpx.BaseTransport | None = None) -> list[dict[str, Any]]:
    key = api_key("SEMANTIC_SCHOLAR_API_KEY", "semantic_scholar", settings)
    params: dict[str, Any] = {"query": query, "fields": "title,authors,year,venue,externalIds,url,abstract"}
    if from_year or to_year:
        params["year"] = f"{from_year or ''}-{to_year or ''}"
    rows: list[dict[str, Any]] = []
    with _Client("semantic_scholar", bool(key), {"x-api-key": key} if key else None, transport) as client:
        while len(rows) < limit:  # the API pages at most 100 results per request
            data = client.json(SEMANTIC_SCHOLAR, {**params, "offset": len(rows), "limit": min(100, limit - len(rows))})
            page = data.get("data") if isinstance(data, dict) else None
            if page is None and isinstance(data, dict) and data.get("total") == 0:
                break
            if not isinstance(page, list):
                raise ProviderError("result_format", "semantic_scholar: unrecognised response")
            rows.extend(p for p in page if isinstance(p, dict))
            if not page or data.get("next") is None:
                break
    return [_record("semantic_scholar", id=p.get("paperId"), title=p.get("title"),
                    authors=[a.get("name") for a in p.get("authors") or []], year=p.get("year"), venue=p.get("venue"),
                    doi=(p.get("externalIds") or {}).get("DOI"), url=p.get("url"), abstract=p.get("abstract"))
            for p in rows[:limit]]


def crossref(query: str, limit: int, settings: Settings, from_year: int | None, to_year: int | None,
             transport: httpx.BaseTransport | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {}
    mailto = settings.scholarly.crossref_mailto
    if mailto:
        params["mailto"] = mailto
    doi = normalise_doi(query)
    with _Client("crossref", False, {"User-Agent": f"{USER_AGENT} (mailto:{mailto})"} if mailto else None,
                 transport) as client:
        if doi and doi == query.strip().lower().removeprefix("https://doi.org/"):
            data = client.json(f"{CROSSREF}/{doi}", params)
            items = [data.get("message")] if isinstance(data, dict) and isinstance(data.get("message"), dict) else None
        else:
            params.update(query=query, rows=min(limit, 1000))
            filters = [f"from-pub-date:{from_year}"] if from_year else []
            filters += [f"until-pub-date:{to_year}"] if to_year else []
            if filters:
                params["filter"] = ",".join(filters)
            data = client.json(CROSSREF, params)
            message = data.get("message") if isinstance(data, dict) else None
            items = message.get("items") if isinstance(message, dict) else None
    if not isinstance(items, list):
        raise ProviderError("result_format", "crossref: unrecognised response")
    out = []
    for it in items[:limit]:
        parts = ((it.get("issued") or {}).get("date-parts") or [[None]])[0]
        abstract = re.sub(r"<[^>]+>", " ", it.get("abstract") or "").strip() or None
        out.append(_record("crossref", id=it.get("DOI"), title=(it.get("title") or [None])[0],
                           authors=[" ".join(filter(None, (a.get("given"), a.get("family")))) or a.get("name")
                                    for a in it.get("author") or []],
                           year=parts[0] if parts else None, venue=(it.get("container-title") or [None])[0],
                           doi=it.get("DOI"), url=it.get("URL"), abstract=" ".join(abstract.split()) if abstract else None))
    return out


def pubmed(query: str, limit: int, settings: Settings, from_year: int | None, to_year: int | None,
           transport: httpx.BaseTransport | None = None) -> list[dict[str, Any]]:
    key = api_key("NCBI_API_KEY", "pubmed", settings)
    base: dict[str, Any] = {"db": "pubmed", "retmode": "json", "tool": "bookmark-research"}
    if key:
        base["api_key"] = key
    search = {**base, "term": query, "retmax": min(limit, 200)}
    if from_year or to_year:
        search.update(datetype="pdat", mindate=str(from_year or 1800), maxdate=str(to_year or 3000))
    with _Client("pubmed", bool(key), transport=transport) as client:
        found = client.json(PUBMED_SEARCH, search)
        ids = ((found or {}).get("esearchresult") or {}).get("idlist") if isinstance(found, dict) else None
        if not isinstance(ids, list):
            raise ProviderError("result_format", "pubmed: unrecognised search response")
        if not ids:
            return []
        summary = client.json(PUBMED_SUMMARY, {**base, "id": ",".join(ids[:limit])})
    result = summary.get("result") if isinstance(summary, dict) else None
    if not isinstance(result, dict):
        raise ProviderError("result_format", "pubmed: unrecognised summary response")
    out = []
    for uid in result.get("uids") or ids[:limit]:
        doc = result.get(uid) or {}
        year = re.match(r"(\d{4})", doc.get("pubdate") or "")
        doi = next((a.get("value") for a in doc.get("articleids") or [] if a.get("idtype") == "doi"), None)
        out.append(_record("pubmed", id=uid, title=doc.get("title"), authors=[a.get("name") for a in doc.get("authors") or []],
                           year=int(year.group(1)) if year else None, venue=doc.get("fulljournalname") or doc.get("source"),
                           doi=doi, url=f"https://pubmed.ncbi.nlm.nih.gov/{uid}/"))
    return out


_ATOM = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


def arxiv(query: str, limit: int, settings: Settings, from_year: int | None, to_year: int | None,
          transport: httpx.BaseTransport | None = None) -> list[dict[str, Any]]:
    with _Client("arxiv", False, transport=transport) as client:
        body = client.get(ARXIV, {"search_query": f"all:{query}", "start": 0, "max_results": min(limit, 200),
                                  "sortBy": "relevance"}).content
    try:
        root = etree.fromstring(body, parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        raise ProviderError("result_format", "arxiv: response is not Atom XML") from None
    out = []
    for entry in root.findall("a:entry", _ATOM):
        def text(path: str) -> str | None:
            node = entry.find(path, _ATOM)
            return " ".join(node.text.split()) if node is not None and node.text else None

        published = text("a:published") or ""
        year = int(published[:4]) if published[:4].isdigit() else None
        if (from_year and year and year < from_year) or (to_year and year and year > to_year):
            continue
        out.append(_record("arxiv", id=text("a:id"), title=text("a:title"),
                           authors=[" ".join((a.text or "").split()) for a in entry.findall("a:author/a:name", _ATOM)],
                           year=year, venue="arXiv", doi=text("arxiv:doi"), url=text("a:id"), abstract=text("a:summary")))
    return out[:limit]


ADAPTERS = {"openalex": openalex, "semantic_scholar": semantic_scholar, "crossref": crossref, "pubmed": pubmed,
            "arxiv": arxiv}
REQUIRED = {"openalex": "OPENALEX_API_KEY"}
DOI_SOURCE = ("crossref", "openalex", "semantic_scholar", "pubmed", "arxiv")
ABSTRACT_SOURCE = ("openalex", "arxiv", "semantic_scholar", "crossref", "pubmed")
TITLE_SOURCE = ("crossref", "openalex", "semantic_scholar", "pubmed", "arxiv")


def route(query: str, mode: str, requested: list[str] | None) -> tuple[list[str], list[str]]:
    """Providers for a query, in order, and the reasons for choosing them."""
    if requested:
        return list(dict.fromkeys(requested)), ["providers chosen explicitly"]
    if mode in ("review", "systematic_review"):
        return list(ALL), [f"{mode}: every provider, for recall"]
    if mode == "doi" or (mode == "auto" and normalise_doi(query)):
        return ["crossref", "openalex", "semantic_scholar"], ["the query is a DOI: Crossref first"]
    chosen: list[str] = []
    reasons: list[str] = []
    if BIOMEDICAL.search(query):
        chosen.append("pubmed")
        reasons.append("biomedical terms: PubMed")
    if PREPRINT.search(query):
        chosen.append("arxiv")
        reasons.append("preprint or fast-moving field: arXiv")
    chosen += ["openalex", "semantic_scholar"]
    reasons.append("general scholarly search: OpenAlex and Semantic Scholar")
    if mode == "title":
        chosen.append("crossref")
        reasons.append("title lookup: Crossref")
    return list(dict.fromkeys(chosen)), reasons


def _merge(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deduplicate by DOI, then by normalised title + year; choose fields by source quality."""
    groups: list[list[dict[str, Any]]] = []
    by_key: dict[str, int] = {}
    for record in records:
        keys = [k for k in (record["doi"] and f"doi:{record['doi']}",
                            _title_key(record["title"], record["year"])) if k]
        index = next((by_key[k] for k in keys if k in by_key), None)
        if index is None:
            index = len(groups)
            groups.append([])
        groups[index].append(record)
        for k in keys:
            by_key.setdefault(k, index)

    def pick(group: list[dict[str, Any]], field: str, order: tuple[str, ...]) -> Any:
        ranked = sorted((r for r in group if r.get(field)), key=lambda r: order.index(r["providers"][0]))
        return ranked[0][field] if ranked else None

    merged = []
    for group in groups:
        first = group[0]
        merged.append({
            "id": first["id"], "title": pick(group, "title", TITLE_SOURCE), "authors": pick(group, "authors", TITLE_SOURCE)
            or [], "year": pick(group, "year", TITLE_SOURCE), "venue": pick(group, "venue", TITLE_SOURCE),
            "doi": pick(group, "doi", DOI_SOURCE), "url": pick(group, "url", DOI_SOURCE),
            "abstract": pick(group, "abstract", ABSTRACT_SOURCE),
            "providers": list(dict.fromkeys(r["providers"][0] for r in group)),
            "ids": {r["providers"][0]: r["id"] for r in group}, "retrieved_at": first["retrieved_at"],
        })
    return merged


def literature_search(query: str, providers: list[str] | None = None, mode: str = "auto",
                      per_provider_limit: int | None = None, total_limit: int = 100, from_year: int | None = None,
                      to_year: int | None = None) -> dict[str, Any]:
    settings = load()
    chosen, reasons = route(query, mode, providers)
    limit = per_provider_limit or (50 if mode in ("review", "systematic_review") else 25)
    diagnostics: dict[str, dict[str, Any]] = {}
    runnable = []
    for name in chosen:
        env = REQUIRED.get(name)
        if env and not credential(env, settings):
            diagnostics[name] = {"provider": name, "status": "skipped", "count": 0, "missing": [env],
                                 "error_kind": "authentication_required"}
        else:
            runnable.append(name)

    def run(name: str) -> tuple[str, list[dict[str, Any]] | ProviderError]:
        try:
            return name, ADAPTERS[name](query, limit, settings, from_year, to_year)
        except ProviderError as exc:
            return name, exc
        except Exception as exc:  # no message text: it might carry a key
            return name, ProviderError("provider_error", f"{name}: provider failed ({type(exc).__name__})")

    with ThreadPoolExecutor(max_workers=max(1, len(runnable))) as pool:
        results = list(pool.map(run, runnable))  # map keeps the routed order, whatever finished first
    records: list[dict[str, Any]] = []
    for name, outcome in results:
        if isinstance(outcome, ProviderError):
            diagnostics[name] = {"provider": name, "status": "error", "count": 0, **outcome.to_dict()}
        else:
            diagnostics[name] = {"provider": name, "status": "ok", "count": len(outcome)}
            records.extend(outcome)
    merged = _merge(records)
    ok = [d for d in diagnostics.values() if d["status"] == "ok"]
    failed = [d for d in diagnostics.values() if d["status"] != "ok"]
    status = "error" if not ok else "warning" if failed else "ok"
    return {"query": query, "mode": mode, "status": status, "total": len(merged), "records": merged[:total_limit],
            "routing": {"providers": chosen, "reasons": reasons},
            "diagnostics": {"status": "partial" if ok and failed else "failed" if not ok else "complete",
                            "providers": [diagnostics[n] for n in chosen]},
            "per_provider_limit": limit, "total_limit": total_limit,
            "dedupe": "normalised DOI, then normalised title + year; DOI from Crossref, abstract from OpenAlex/arXiv"}


def search_plan(query: str, platform: str | None = None, native_search_available: bool = False,
                native_search_tools: list[str] | None = None, include_working_papers: bool = False,
                from_year: int | None = None, to_year: int | None = None, offline: bool = False) -> dict[str, Any]:
    """A deterministic plan of provider and native searches; it runs nothing."""
    settings = load()
    chosen, reasons = route(query, "auto", None)
    if include_working_papers and "arxiv" not in chosen:
        chosen.append("arxiv")
        reasons.append("working papers requested: arXiv")
    usable = [p for p in chosen if not (REQUIRED.get(p) and not credential(REQUIRED[p], settings))]
    tools = list(dict.fromkeys(native_search_tools or []))
    native = native_search_available and bool(tools)
    mode = ("strategy_only" if offline and not native else "native_only" if offline or not usable else
            "hybrid_search" if native else "provider_connected")
    years = f" {from_year or ''}-{to_year or ''}".rstrip("-") if from_year or to_year else ""
    provider_queries = [] if mode in ("native_only", "strategy_only") else [
        {"provider": p, "query": f"all:{query}" if p == "arxiv" else query, "provenance": f"provider:{p}",
         "from_year": from_year, "to_year": to_year} for p in usable]
    variants = [query, f"{query} review", f"{query} site:arxiv.org" if include_working_papers else None]
    native_queries = [{"tool": t, "query": q + years, "provenance": f"native:{t}"}
                      for t in tools for q in variants if q] if native else []
    limitations = ["the plan runs nothing; the host agent runs native searches with its own tools"]
    skipped = [p for p in chosen if p not in usable]
    if skipped:
        limitations.append(f"skipped for missing credentials: {', '.join(skipped)} "
                           f"({', '.join(REQUIRED[p] for p in skipped)})")
    if platform:
        limitations.append(f"platform hint {platform!r} recorded; no platform-specific behaviour")
    return {"query": query, "search_execution_mode": mode, "routing": {"providers": chosen, "reasons": reasons},
            "provider_queries": provider_queries, "native_queries": native_queries,
            "merge_policy": {"dedupe": ["normalised DOI", "normalised title + year"],
                             "prefer": {"doi": "crossref", "abstract": ["openalex", "arxiv"]},
                             "keep_ids_of_merged_records": True, "provenance_labels": ["provider:<name>", "native:<tool>"]},
            "limitations": limitations}
