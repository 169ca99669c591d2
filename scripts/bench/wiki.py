"""Wiki benchmark: write throughput, search latency and full lint time at 5,000 pages.

    python scripts/bench/wiki.py [--pages 5000] [--queries 200]

One research session holds the evidence: 24 sources imported from the article fixture bodies
(``../shared/fixtures/article-extraction-dev``), each reviewed and accepted, and 96 claims quoting them.
Pages are generated deterministically, half English (passages of the same real articles) and half
Chinese (a word list drawn with a Zipf-like skew), 2-4 sections each citing 1-2 claims, with links to
earlier pages; every page is written through the real ``wiki_write`` operation (evidence re-verified
through the research API, records, Markdown, current view, index.md, log.md and the search index, each
file fsynced). Queries are 1-2 distinctive words taken from random pages. Lint is timed as in a new
process (nothing in memory; the outline cache the writes filled is on disk), warm (linted before in this
process) and cold (the outline cache deleted too, so every rendered file is parsed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bookmark_research.core.app import App  # noqa: E402
from bookmark_research.core.registry import run  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "article-extraction-dev" / "ground-truth.json"
ZH = ("推理 加速 模型 知识 图谱 检索 增强 生成 向量 数据库 搜索 引擎 排序 索引 缓存 队列 编译器 浏览器 插件 画布 书签 会话 "
      "清单 冻结 恢复 证据 引用 声明 来源 审查 维基 页面 主题 实体 修订 链接 文件夹 导出 提供者 抓取 预算 覆盖 报告 问题 答案 缺口 冲突 "
      "研究 论文 实验 结果 方法 数据 训练 评估 指标 基准 延迟 吞吐量 内存 磁盘 网络 协议 服务 客户端 服务器 接口 请求 响应 错误 "
      "日志 监控 部署 容器 集群 节点 分片 副本 一致性 事务 并发 锁 线程 进程 调度 任务 流水线 编排 配置 版本 发布 回滚 测试 "
      "覆盖率 文档 教程 示例 社区 开源 许可 安全 隐私 加密 认证 授权 令牌 密钥 审计 合规 风险 成本 性能 优化 扩展 迁移 备份 "
      "归档 压缩 解析 提取 分词 词典 语料 标注 翻译 摘要 问答 对话 代理 工具 记忆 上下文 窗口 提示 微调 蒸馏 量化 剪枝 稀疏 "
      "注意力 变换器 编码 解码 嵌入 相似度 聚类 分类 回归 推荐 排名 召回 精度 候选 重排 过滤 去重 合并 拆分 同步 异步 事件").split()


def zh_text(rng: random.Random, n: int) -> str:
    weights = [1 / (i + 1) for i in range(len(ZH))]
    words = rng.choices(ZH, weights=weights, k=n)
    out = []
    for i, word in enumerate(words, 1):
        out.append(word)
        if i % rng.randint(8, 14) == 0:
            out.append("，" if rng.random() < 0.6 else "。")
    return "".join(out) + "。"


def en_text(rng: random.Random, bodies: list[str], n: int) -> str:
    body = rng.choice(bodies)
    words = body.split()
    start = rng.randrange(max(1, len(words) - n))
    return " ".join(words[start:start + n])


def _quote(rng: random.Random, text: str) -> str:
    """About ten words of ``text``, exactly as they appear in it (one line, starting at a word)."""
    lines = [line for line in text.splitlines() if len(line) > 120]
    line = rng.choice(lines)
    start = line.index(" ", rng.randrange(len(line) - 100)) + 1
    return line[start:start + 70].rsplit(" ", 1)[0]


def seed_real(app: App, bodies: list[str], rng: random.Random) -> tuple[str, list[str]]:
    def call(name: str, **kw: Any) -> dict[str, Any]:
        return run(app, name, kw).model_dump(mode="json")

    urls = [f"https://bench.example/article/{i}" for i in range(24)]
    rid = call("research_start", brief="Wiki benchmark", urls=urls,
               questions=[{"id": "q1", "question": "What do these articles say?"}])["research_id"]
    claims = []
    for i, url in enumerate(urls):
        text = bodies[i % len(bodies)]
        source = call("research_import_evidence", research_id=rid, operation_id=f"import-{i}", question_id="q1",
                      url=url, text=text, provenance={"kind": "page", "retrieved_at": "2026-11-30T10:00:00Z"})
        sid = source["source"]["id"]
        call("research_record", research_id=rid, entry={"kind": "source_review", "source_id": sid,
                                                        "verdict": "accepted", "text": "Read in full"})
        for _ in range(4):
            quote = _quote(rng, text)
            out = call("research_record", research_id=rid, entry={
                "kind": "claim", "question_id": "q1", "statement": f"The article says: {quote}",
                "citations": [{"source_id": sid, "quote": quote}]})
            claims.append(out["id"])
    return rid, claims


def page(rng: random.Random, i: int, rid: str, claims: list[str], bodies: list[str]) -> dict[str, Any]:
    chinese = i % 2 == 1
    text = (lambda n: zh_text(rng, n // 2)) if chinese else (lambda n: en_text(rng, bodies, n))
    sections = []
    for k in range(rng.randint(2, 4)):
        cited = rng.sample(claims, rng.randint(1, 2))
        sections.append({"heading": text(6)[:80].strip("，。 ") or f"Part {k}", "text": text(rng.randint(60, 150)),
                         "claims": [{"research_id": rid, "claim_id": c} for c in cited]})
    links = [{"page_id": f"page-{j}", "relation": "related topic"}
             for j in sorted(set(rng.sample(range(i), min(i, rng.randint(0, 2)))))]
    return {"title": f"{text(5)[:60].strip('，。 ')} {i}", "kind": "entity" if i % 5 == 0 else "topic",
            "sections": sections, "links": links, "review": {"method": "model", "reviewer": "bench", "note": ""}}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", metavar="DIR", help="write the data folder to DIR (new) and keep it, for profiling")
    args = parser.parse_args()
    bodies = [v["articleBody"] for v in json.loads(FIXTURES.read_text()).values() if len(v["articleBody"]) > 2000]
    rng = random.Random(11)
    with contextlib.ExitStack() as stack:
        if args.keep:
            Path(args.keep).mkdir(parents=True)
            tmp = args.keep
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bookmark-research-wiki-"))
        app = stack.enter_context(App(tmp))
        rid, claims = seed_real(app, bodies, rng)
        pages = [page(rng, i, rid, claims, bodies) for i in range(args.pages)]
        times = []
        start = time.perf_counter()
        for i, data in enumerate(pages):
            t = time.perf_counter()
            run(app, "wiki_write", {"page_id": f"page-{i}", "page": data, "change_note": "Benchmark page"})
            times.append(time.perf_counter() - t)
            if (i + 1) % 1000 == 0:
                print(f"  {i + 1} pages written; last 1000: p50 {statistics.median(times[-1000:]) * 1000:.0f} ms",
                      flush=True)
        total = time.perf_counter() - start
        print(f"write: {args.pages} pages in {total:.1f} s ({args.pages / total:.1f} pages/s); per write p50 "
              f"{statistics.median(times) * 1000:.0f} ms, p95 {percentile(times, 0.95) * 1000:.0f} ms, last 500 "
              f"p50 {statistics.median(times[-500:]) * 1000:.0f} ms")
        time.sleep(2.1)  # let the newest files settle (see wiki/cache.py)

        def distinctive(data: dict[str, Any]) -> list[str]:
            text = " ".join(s["text"] for s in data["sections"])
            words = re.findall(r"[A-Za-z]{6,}", text) or re.findall(r"[\u4e00-\u9fff]{2,3}", text)
            return words or ["page"]

        queries = []
        for _ in range(args.queries):
            words = distinctive(rng.choice(pages))
            queries.append(" ".join(rng.sample(words, min(len(words), rng.choice([1, 1, 2])))))
        if args.keep:
            (Path(tmp) / "bench-queries.json").write_text(json.dumps(queries, ensure_ascii=False))
        t = time.perf_counter()
        run(app, "wiki_search", {"query": queries[0]})
        print(f"search: first query {(time.perf_counter() - t) * 1000:.0f} ms")
        latencies, totals = [], []
        for q in queries:
            t = time.perf_counter()
            out = run(app, "wiki_search", {"query": q})
            latencies.append(time.perf_counter() - t)
            totals.append(out.total)
        print(f"search: {len(queries)} queries p50 {statistics.median(latencies) * 1000:.1f} ms, p95 "
              f"{percentile(latencies, 0.95) * 1000:.1f} ms, max {max(latencies) * 1000:.0f} ms (matching pages: "
              f"median {statistics.median(totals):.0f}, max {max(totals)})")

        from bookmark_research.wiki import cache

        wiki = Path(tmp) / "wiki"
        for label in ("new process", "warm", "cold"):
            cache.clear()  # what a new process knows: nothing in memory ...
            if label == "warm":
                run(app, "wiki_lint", {})  # ... unless this process has linted before
            if label == "cold":
                shutil.rmtree(wiki / ".cache", ignore_errors=True)  # ... nor the parsed-outline cache
            t = time.perf_counter()
            result = run(app, "wiki_lint", {})
            print(f"lint ({label}): {result.pages_checked} pages in {time.perf_counter() - t:.1f} s, status "
                  f"{result.status}, {len(result.issues)} issues")
        shutil.rmtree(wiki / ".search")
        t = time.perf_counter()
        run(app, "wiki_search", {"query": queries[0]})
        print(f"search index rebuilt from {args.pages} records in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
