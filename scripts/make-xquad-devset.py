#!/usr/bin/env python3
"""Builds tests/data/xquad-mixed.jsonl.gz, the cross-lingual development set
(tests/data/xquad.md), from XQuAD's English and Chinese files.

usage: scripts/make-xquad-devset.py --en xquad.en.json --zh xquad.zh.json [--out FILE]

Sentences are cut by the rule of ../shared/data/make_devsets.py (imported from
there, rule devsets-v1: English boundaries for the English file, Chinese ones for
the Chinese file, pieces of at most 300 characters). XQuAD is parallel: the same
48 articles, 240 paragraphs and 1,190 question ids in both languages. One store
holds the English sentences of the even articles and the Chinese sentences of the
odd ones, as a robot's memory holds both languages. Queries:
  zh->zh  the Chinese questions of the odd articles (gold: Chinese sentences)
  en->zh  the English questions of the odd articles (gold: the same Chinese sentences)
  zh->en  the Chinese questions of the even articles (gold: English sentences)
English questions on English sentences are left out: XQuAD's English side is
SQuAD v1.1 dev text, which the squad set already holds. Stdlib only,
deterministic (same sources, same bytes).
"""
import argparse
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "data"))
import make_devsets as md  # noqa: E402  (the sentence rule, ../shared/data)


def by_article(records):
    """Memories and queries grouped by article index (from the memory ids
    `<prefix>-<article>-<paragraph>-<n>` and the paragraphs the queries name)."""
    memories, queries, para_article = {}, {}, {}
    for r in records[1:]:
        if r["type"] == "memory":
            art = int(r["id"].split("-")[1])
            memories.setdefault(art, []).append(r)
            para_article[r["paragraph"]] = art
    for r in records[1:]:
        if r["type"] == "query":
            queries.setdefault(para_article[r["paragraph"]], []).append(r)
    return memories, queries


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--en", required=True)
    ap.add_argument("--zh", required=True)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "xquad-mixed.jsonl.gz"))
    a = ap.parse_args()
    en, en_stats = md.convert(a.en, "xen", md.en_boundaries, md.EN_SPLIT_LEVELS)
    zh, zh_stats = md.convert(a.zh, "xzh", md.zh_boundaries, md.ZH_SPLIT_LEVELS)
    en_mem, en_q = by_article(en)
    zh_mem, zh_q = by_article(zh)
    if sorted(en_mem) != sorted(zh_mem):
        sys.exit("the two files do not hold the same articles")
    zh_by_id = {q["id"]: q for qs in zh_q.values() for q in qs}
    memories, queries = [], []
    counts = {"zh->zh": 0, "en->zh": 0, "zh->en": 0}
    for art in sorted(en_mem):
        if art % 2 == 0:
            memories += [{"type": "memory", "id": m["id"], "text": m["text"], "lang": "en"} for m in en_mem[art]]
            gold_of = {q["id"]: q["gold"] for q in en_q.get(art, [])}
            for q in zh_q.get(art, []):
                if q["id"] in gold_of:
                    queries.append({"type": "query", "id": q["id"] + "/zh->en", "question": q["question"],
                                    "gold": gold_of[q["id"]], "kind": "zh->en"})
                    counts["zh->en"] += 1
        else:
            memories += [{"type": "memory", "id": m["id"], "text": m["text"], "lang": "zh"} for m in zh_mem[art]]
            for q in zh_q.get(art, []):
                queries.append({"type": "query", "id": q["id"] + "/zh->zh", "question": q["question"],
                                "gold": q["gold"], "kind": "zh->zh"})
                counts["zh->zh"] += 1
            for q in en_q.get(art, []):
                if q["id"] in zh_by_id:
                    queries.append({"type": "query", "id": q["id"] + "/en->zh", "question": q["question"],
                                    "gold": zh_by_id[q["id"]]["gold"], "kind": "en->zh"})
                    counts["en->zh"] += 1
    meta = {"type": "meta", "rule": md.RULE_VERSION, "max_chars": md.MAX_CHARS,
            "sources": {"en": en[0]["source_sha256"], "zh": zh[0]["source_sha256"]},
            "counts": {"memories": len(memories), "queries": len(queries), "kinds": counts,
                       "en_memories": sum(m["lang"] == "en" for m in memories),
                       "zh_memories": sum(m["lang"] == "zh" for m in memories)}}
    md.write_jsonl_gz(a.out, [meta] + memories + queries)
    print(meta["counts"], hashlib.sha256(open(a.out, "rb").read()).hexdigest(), os.path.getsize(a.out))


if __name__ == "__main__":
    main()
