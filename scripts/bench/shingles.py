"""Scoring main-text extraction: 4-token shingle precision, recall and F1, and the labelled page sets.

The usual article-extraction score: split both texts into ``\\w+`` tokens (lower-cased), count the
4-token shingles, and per page compute precision = tp / (tp + fp) and recall = tp / (tp + fn) over
the shingle multisets; the set's precision and recall are the means over pages and its F1 is their
harmonic mean. Punctuation and layout (Markdown markers, line breaks) do not count.

Sets: ``fixtures/extraction/pages`` (written in this project; always present) and the 61-page
development set under ``../shared/fixtures/article-extraction-dev`` (only when present).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "fixtures" / "extraction"
DEV = REPO.parent / "shared" / "fixtures" / "article-extraction-dev"
_TOKEN = re.compile(r"\w+")


@dataclass
class LabelledPage:
    name: str
    html: bytes
    expected: str
    url: str | None = None


def shingles(text: str, n: int = 4) -> Counter:
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < n:
        return Counter([tuple(tokens)]) if tokens else Counter()
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def page_score(expected: str, got: str) -> tuple[float, float]:
    """(precision, recall) of ``got`` against ``expected``; empty against empty counts as perfect."""
    want, have = shingles(expected), shingles(got)
    if not want and not have:
        return 1.0, 1.0
    tp = sum((want & have).values())
    fp = sum((have - want).values())
    fn = sum((want - have).values())
    return (tp / (tp + fp) if tp + fp else 0.0), (tp / (tp + fn) if tp + fn else 0.0)


@dataclass
class SetScore:
    pages: int
    precision: float
    recall: float
    empty: int  # pages with an article for which nothing was extracted
    per_page: list[tuple[str, float, float]]

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def score_set(pages: list[LabelledPage], extract: Callable[[LabelledPage], str]) -> SetScore:
    rows, empty = [], 0
    for page in pages:
        got = extract(page)
        empty += not got.strip()
        p, r = page_score(page.expected, got)
        rows.append((page.name, p, r))
    n = max(len(rows), 1)
    return SetScore(len(rows), sum(r[1] for r in rows) / n, sum(r[2] for r in rows) / n, empty, rows)


def own_pages(root: Path = OWN) -> list[LabelledPage]:
    """The pages written for this project (``fixtures/extraction/pages/<name>.html`` + ``.txt``)."""
    return [LabelledPage(html.stem, html.read_bytes(), html.with_suffix(".txt").read_text(encoding="utf-8"))
            for html in sorted((root / "pages").glob("*.html"))]


def dev_pages(root: Path = DEV) -> list[LabelledPage]:
    """The real-page development set (gzip HTML + ground-truth.json), or [] when it is not present."""
    truth_file = root / "ground-truth.json"
    if not truth_file.is_file():
        return []
    truth = json.loads(truth_file.read_text(encoding="utf-8"))
    return [LabelledPage(key, gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes()),
                         value["articleBody"], value.get("url")) for key, value in sorted(truth.items())]


def iter_sets() -> Iterator[tuple[str, list[LabelledPage]]]:
    yield "own (fixtures/extraction)", own_pages()
    dev = dev_pages()
    if dev:
        yield "real (article-extraction-dev)", dev
