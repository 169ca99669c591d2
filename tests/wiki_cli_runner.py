"""``python -m tests.wiki_cli_runner ARGS``: the real CLI, with the research API double of the wiki tests."""

from __future__ import annotations

import os
from pathlib import Path

from bookmark_research.cli.main import main
from bookmark_research.wiki import evidence
from tests.wiki_fake_research import FakeResearch

if __name__ == "__main__":
    fake = FakeResearch(Path(os.environ["BOOKMARK_RESEARCH_DATA_DIR"]))
    evidence.research_api = lambda: fake
    main()
