"""Generate realistic Bookmark Canvas packages for benchmarks (deterministic for a given seed).

    python scripts/bench/generate.py OUT_DIR --bookmarks 10000 [--lang en|zh] [--seed 1]

About 80% of bookmarks live in the permanent browser tree (nested folders, 2-5 levels), at most
100,000 (the largest browser profiles); the rest are in temporary sections of ~200 items (a 1M package:
a 100k tree and 4,500 sections). Tags, notes and duplicate URLs are sprinkled in; the canvas has a
file node per section, a few nested groups and edges.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

EN_WORDS = ("rust async runtime tokio search engine ranking bm25 index sqlite database postgres vector embedding "
            "python typing pydantic http client server latency cache queue kafka stream parser compiler wasm "
            "browser extension canvas bookmark research paper review benchmark kernel memory allocator gpu "
            "inference training dataset tokenizer transformer attention retrieval agent tool protocol").split()
ZH_WORDS = ("推理 加速 模型 知识 图谱 检索 增强 生成 向量 数据库 搜索 引擎 排序 索引 缓存 队列 编译器 浏览器 插件 画布 "
            "书签 研究 论文 综述 基准 内存 分配 训练 数据集 注意力 智能体 工具 协议 公司 产品 开源 社区 教程").split()
#: A long tail of rare words (each in ~0.05% of titles): real collections have many words few bookmarks share.
EN_RARE = ("zeppelin quokka marzipan fjord obsidian basalt kestrel lantern meridian nebula origami paprika quasar "
           "rhubarb saffron tundra umbra vortex walnut xylophone yarrow zither abacus bramble cobalt dervish "
           "ember falcon gazebo harbor iris jasper kiln lagoon mosaic nectar opal pelican quill raven sequoia "
           "thistle ukulele velvet willow yonder").split()
ZH_RARE = ("敦煌 量子 纠缠 甲骨文 青铜器 丝绸 瓷器 昆曲 皮影 剪纸 篆刻 碑帖 园林 榫卯 漆器 刺绣 茶道 书法 古琴 围棋 "
           "楹联 灯谜 节气 民谣 方言 戏曲 木刻 年画 风筝 蜀锦").split()
HOSTS = ("github.com", "docs.example.org", "blog.example.net", "arxiv.org", "news.example.com", "wiki.example.org",
         "zhuanlan.example.cn", "www.example.cn", "developer.example.dev", "papers.example.edu")
TREE_MAX = 100_000  # bookmarks in the browser tree at most
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "gray")


class Gen:
    def __init__(self, lang: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = ZH_WORDS if lang == "zh" else EN_WORDS
        self.rare = ZH_RARE if lang == "zh" else EN_RARE
        self.lang = lang
        self.n = 0
        self.urls: list[str] = []

    def title(self, lo: int = 2, hi: int = 7) -> str:
        words = self.rng.choices(self.words, k=self.rng.randint(lo, hi))
        if self.rng.random() < 0.03:
            words.append(self.rng.choice(self.rare))
        return ("".join(words) if self.lang == "zh" and self.rng.random() < 0.6 else " ".join(words)).capitalize()

    def url(self) -> str:
        if self.urls and self.rng.random() < 0.08:  # duplicate URLs across the package
            return self.rng.choice(self.urls)
        host = self.rng.choice(HOSTS)
        path = "/".join(self.rng.choices([w for w in EN_WORDS], k=self.rng.randint(1, 4)))
        url = f"https://{host}/{path}/{self.n}"
        self.urls.append(url)
        return url

    def next_id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:09d}"

    def tags(self) -> list[dict[str, str]]:
        return [{"color": self.rng.choice(COLORS), "text": self.rng.choice(self.words)}
                for _ in range(self.rng.randint(1, 3))]


def permanent_tree(g: Gen, bookmarks: int) -> tuple[dict, list[dict]]:
    identity: list[dict] = []
    root = {"id": g.next_id("syncId_20261130_bench_"), "title": "", "children": []}
    tops = []
    for title, kind in (("Bookmarks bar", "bookmarks-bar"), ("Other bookmarks", "other"), ("Mobile bookmarks", "mobile")):
        top = {"id": g.next_id("syncId_20261130_bench_"), "parentId": root["id"], "title": title,
               "folderType": kind, "syncing": True, "children": []}
        root["children"].append(top)
        tops.append(top)
    folders = [(top, 1) for top in tops]
    made = 0
    while made < bookmarks:
        parent, depth = g.rng.choice(folders)
        if g.rng.random() < 0.07 and depth < 5 and len(folders) < bookmarks // 8 + 3:
            folder = {"id": g.next_id("syncId_20261130_bench_"), "parentId": parent["id"], "title": g.title(1, 3),
                      "children": []}
            parent["children"].append(folder)
            folders.append((folder, depth + 1))
            continue
        item = {"id": g.next_id("syncId_20261130_bench_"), "parentId": parent["id"], "title": g.title(),
                "url": g.url(), "dateAdded": 1764460800000 + made}
        parent["children"].append(item)
        made += 1
        if g.rng.random() < 0.15:
            entry = {"syncId": item["id"], "tags": g.tags()}
            if g.rng.random() < 0.5:
                entry["note"] = g.title(4, 12)
            identity.append(entry)
    return root, identity


def temporary_section(g: Gen, sid: str, label: str, count: int) -> dict:
    items = []
    folder = None
    for i in range(count):
        if i % 40 == 0:
            folder = {"id": g.next_id("tempId_"), "sectionId": sid, "type": "folder", "title": g.title(1, 3),
                      "children": []}
            items.append(folder)
        item = {"id": g.next_id("tempId_"), "sectionId": sid, "type": "bookmark", "title": g.title(), "url": g.url()}
        if g.rng.random() < 0.2:
            item["tags"] = g.tags()
        if g.rng.random() < 0.1:
            item["note"] = g.title(4, 12)
        folder["children"].append(item)
    return {"format": "bookmark-canvas-section", "schemaVersion": 2, "sectionType": "temporary", "id": sid,
            "label": label, "title": g.title(1, 4), "tempKind": "regular", "descriptionMd": g.title(5, 15),
            "items": items}


def generate(out: Path, bookmarks: int, lang: str = "en", seed: int = 1) -> Path:
    g = Gen(lang, seed)
    perm_dir, temp_dir = ("永久栏目", "临时栏目/常规链式") if lang == "zh" else ("Permanent", "Temporary/General Chain")
    primary_name = "A书签树（永久栏目）.json" if lang == "zh" else "A-PermanentBookmarks.json"
    out.mkdir(parents=True, exist_ok=True)
    n_temp = max(bookmarks // 5, bookmarks - TREE_MAX)
    tree, identity = permanent_tree(g, bookmarks - n_temp)
    (out / perm_dir).mkdir(parents=True, exist_ok=True)
    (out / perm_dir / primary_name).write_text(json.dumps({
        "format": "bookmark-canvas-section", "schemaVersion": 3, "sectionType": "permanent", "slot": "A",
        "title": "Browser", "descriptionMd": "", "fileRole": "primary", "identityMap": identity, "tree": tree,
    }, ensure_ascii=False), encoding="utf-8")
    nodes = [{"id": "permanent-section", "type": "file", "file": f"{perm_dir}/{primary_name}",
              "x": -1000, "y": 0, "width": 400, "height": 800}]
    edges = []
    (out / temp_dir).mkdir(parents=True, exist_ok=True)
    sections = max(1, n_temp // 200)
    for s in range(sections):
        label = f"A-{s + 1}"
        sid = f"temp-section-{label}"
        count = n_temp // sections + (1 if s < n_temp % sections else 0)
        name = f"{label} {g.title(1, 2)}.json".replace("/", "-")
        (out / temp_dir / name).write_text(json.dumps(temporary_section(g, sid, label, count), ensure_ascii=False),
                                           encoding="utf-8")
        nodes.append({"id": sid, "type": "file", "file": f"{temp_dir}/{name}", "x": (s % 10) * 420,
                      "y": (s // 10) * 320, "width": 400, "height": 300})
        if s:
            edges.append({"id": f"edge-{s}", "fromNode": nodes[-2]["id"], "toNode": sid, "label": g.title(1, 2)})
    for row in range(0, (sections + 9) // 10, 2):
        nodes.append({"id": f"group-{row}", "type": "group", "label": g.title(1, 2), "x": -10, "y": row * 320 - 10,
                      "width": 4220, "height": 640})
    (out / "bench.canvas").write_text(json.dumps({"nodes": nodes, "edges": edges}, ensure_ascii=False), encoding="utf-8")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--bookmarks", type=int, default=10_000)
    parser.add_argument("--lang", choices=["en", "zh"], default="en")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(generate(args.out, args.bookmarks, args.lang, args.seed))
