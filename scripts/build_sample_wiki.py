"""Rebuild the sample wiki under ``wiki/`` from the fixtures (fixed times and ids; see demo_wiki.py).

    python scripts/build_sample_wiki.py

``tests/test_wiki_sample.py`` fails when the committed ``wiki/`` differs from a fresh build.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bookmark_research.demo_wiki import build_sample  # noqa: E402

if __name__ == "__main__":
    build_sample(ROOT / "wiki")
    print(f"sample wiki rebuilt in {ROOT / 'wiki'}")
