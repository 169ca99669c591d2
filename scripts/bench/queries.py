"""The search benchmark's query mix, per generated language (also checked by tests/test_search_mix.py).

Each query is a name and the arguments of the ``search_bookmarks`` operation (source id added by the
caller). The mix covers common words (matching >5% of rows), rare words, multi-word targets, 1- and
2-character CJK and ASCII terms, several targets, the section / tag / folder filters, count-only,
tree order and a deep offset.
"""

from __future__ import annotations

from typing import Any

#: The generated permanent tree's "Other bookmarks" folder (about a third of the browser tree).
FOLDER_ID = "syncId_20261130_bench_000000003"

_EN: list[tuple[str, dict[str, Any]]] = [
    ("common", {"targets": ["rust"]}),
    ("common 2", {"targets": ["search"]}),
    ("rare", {"targets": ["quokka"]}),
    ("rare 2", {"targets": ["zeppelin"]}),
    ("multi-word", {"targets": ["async runtime"]}),
    ("multi-word 3", {"targets": ["gpu inference training"]}),
    ("rare + common", {"targets": ["rust obsidian"]}),
    ("url", {"targets": ["github.com/rust"]}),
    ("cjk 1 char", {"targets": ["图"]}),
    ("cjk 2 chars", {"targets": ["推理"]}),
    ("ascii 1 char", {"targets": ["k"]}),
    ("ascii 2 chars", {"targets": ["ex"]}),
    ("ascii 2 + word", {"targets": ["py typing"]}),
    ("two targets", {"targets": ["rust", "quokka"]}),
    ("--section", {"targets": ["rust"], "section": "A-1"}),
    ("--tag", {"targets": ["async"], "tags": ["rust"]}),
    ("--folder", {"targets": ["rust"], "folder_id": FOLDER_ID}),
    ("--count-only", {"targets": ["rust"], "count_only": True}),
    ("--order tree", {"targets": ["rust"], "order": "tree"}),
    ("--offset 1000", {"targets": ["rust"], "offset": 1000}),
]

_ZH: list[tuple[str, dict[str, Any]]] = [
    ("common", {"targets": ["推理"]}),
    ("common 2", {"targets": ["模型"]}),
    ("rare", {"targets": ["甲骨文"]}),
    ("rare 2", {"targets": ["敦煌"]}),
    ("multi-word", {"targets": ["推理 加速"]}),
    ("multi-word 3", {"targets": ["知识 图谱 检索"]}),
    ("rare + common", {"targets": ["推理 青铜器"]}),
    ("long cjk", {"targets": ["检索增强生成"]}),
    ("cjk 1 char", {"targets": ["图"]}),
    ("cjk 2 chars", {"targets": ["知识"]}),
    ("ascii 1 char", {"targets": ["k"]}),
    ("ascii 2 chars", {"targets": ["ex"]}),
    ("ascii word", {"targets": ["rust"]}),
    ("two targets", {"targets": ["推理", "敦煌"]}),
    ("--section", {"targets": ["推理"], "section": "A-1"}),
    ("--tag", {"targets": ["加速"], "tags": ["推理"]}),
    ("--folder", {"targets": ["推理"], "folder_id": FOLDER_ID}),
    ("--count-only", {"targets": ["推理"], "count_only": True}),
    ("--order tree", {"targets": ["推理"], "order": "tree"}),
    ("--offset 1000", {"targets": ["推理"], "offset": 1000}),
]

MIX = {"en": _EN, "zh": _ZH}


def cli_args(arguments: dict[str, Any]) -> list[str]:
    """The ``bookmark-research search SOURCE ...`` options for ``arguments``."""
    args: list[str] = []
    for target in arguments["targets"]:
        args += ["--target", target]
    for key, option in (("section", "--section"), ("folder_id", "--folder"), ("offset", "--offset"),
                        ("order", "--order")):
        if key in arguments:
            args += [option, str(arguments[key])]
    for tag in arguments.get("tags", []):
        args += ["--tag", tag]
    if arguments.get("count_only"):
        args.append("--count-only")
    return args
