"""Speed and memory of the deterministic dimensions against bare spaCy + embedding.

Over the 800 SummEval summaries, in one run, each variant in its own child process (so peak
memory is its own), alternating and repeated:

- ``bare``: ``nlp.pipe`` over the summaries, then one ``encode`` over all their spaCy sentences
  (the least work any implementation of these dimensions must do);
- ``ours``: ``score_summaries(pairs, judge=None)`` with density, non_redundancy, coherence and
  conciseness (the full public path: validation, asyncio, evidence models, signatures).

Both use the same spaCy pipeline as loaded by the package (tagger, attribute_ruler and
lemmatizer excluded) and the same MiniLM model; loading is not timed. The parser is in both: it
splits the sentences, and the default coherence reads its dependency labels (entity grid,
fragments), so coherence adds no component to either variant. Target: ours <= 1.3x bare.

- ``grounding``: what the grounding dimension adds to ``ours``: reading the checkable items off
  the summaries' parse (made beforehand, untimed: the batch already makes it), indexing each
  distinct source and checking the items. Target: grounding <= 0.1x ours.

- ``languages``: what telling languages apart adds to ``ours`` (which includes it): detecting
  each distinct source's language once and each summary's, and choosing the one the dimensions
  use, as ``score_summaries`` does. Target: languages <= 0.05x ours.

- ``default``: ``score_summaries(pairs, judge=None)`` with the default dimensions (grounding
  version 2 included: its shortlisted source sentences embedded and parsed). Compare it with
  the same variant run on an older checkout to see what a change costs.

``--long-source`` instead times indexing one source of 125k to 1M words (SummEval articles
repeated) and checking one summary against it, to show the cost is linear in source length.

    .venv/bin/python benchmarks/dimensions_speed.py [--repeats 2] [--limit 800]
    .venv/bin/python benchmarks/dimensions_speed.py --long-source
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "summeval" / "dev.jsonl"
DETERMINISTIC = ["density", "non_redundancy", "coherence", "conciseness"]


def load_pairs(limit: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return [(r["article"], r["summary"]) for r in rows[:limit]]


def child(variant: str, limit: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from shared import score_summaries
    from shared.dimensions import default_embedder, load_pipeline

    pairs = load_pairs(limit)
    texts = [s for _, s in pairs]
    nlp = load_pipeline()
    embedder = default_embedder()
    embedder.embed(["warm up"])  # load the model (not timed)
    list(nlp.pipe(texts[:16]))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if variant == "languages":
        from shared.core.language import detect, resolve_languages

        detect("warm up the language model")  # loading is not timed, as for the others
        start = time.perf_counter()
        sources: dict[str, str | None] = {}
        for source, summary in pairs:
            if source not in sources:
                sources[source] = detect(source)[0]
            lang = resolve_languages(source, summary, source_language=sources[source])
            assert lang.dimensions == "en", (lang, summary)
    elif variant == "grounding":
        from shared.dimensions.grounding import grounding_scores

        docs = list(nlp.pipe(texts, batch_size=64))  # the batch's parse, shared (untimed)
        start = time.perf_counter()
        results = grounding_scores(pairs, summary_docs=docs)
        assert len(results) == len(pairs)
    elif variant == "default":
        results = score_summaries(pairs, judge=None)
        assert len(results) == len(pairs)
    elif variant == "bare":
        docs = list(nlp.pipe(texts, batch_size=64))
        sentences = [s.text for doc in docs for s in doc.sents]
        embedder._load().encode(sentences, batch_size=64, normalize_embeddings=True)
    else:
        results = score_summaries(pairs, judge=None, dimensions=DETERMINISTIC)
        assert len(results) == len(pairs)
    seconds = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": seconds,
        "peak_rss_mb": rss_after / 1024,
        "rss_growth_mb": (rss_after - rss_before) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--limit", type=int, default=800)
    parser.add_argument("--long-source", action="store_true", help="time 125k-1M word sources")
    parser.add_argument(
        "--child",
        choices=["bare", "ours", "grounding", "languages", "default"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--variants", default="bare,ours,grounding,languages,default", help="comma-separated"
    )
    args = parser.parse_args()
    if args.long_source:
        long_source()
        return
    if args.child:
        print(json.dumps(child(args.child, args.limit)))
        return
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in args.variants.split(",")}
    for _ in range(args.repeats):
        for variant in runs:
            out = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--limit", str(args.limit)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[variant].append(json.loads(out.strip().splitlines()[-1]))
            print(variant, runs[variant][-1], flush=True)
    best = {v: min(r["seconds"] for r in rs) for v, rs in runs.items()}
    print(f"\n{args.limit} summaries, best of {args.repeats}:")
    print("| variant | seconds | peak RSS (MB) | RSS growth while timed (MB) |")
    print("|---|---|---|---|")
    for variant, rs in runs.items():
        peak = max(r["peak_rss_mb"] for r in rs)
        growth = max(r["rss_growth_mb"] for r in rs)
        print(f"| {variant} | {best[variant]:.2f} | {peak:.0f} | {growth:.0f} |")
    if not {"bare", "ours", "grounding", "languages"} <= set(best):
        return
    ratio = best["ours"] / best["bare"]
    print(f"\nours / bare = {ratio:.2f}x (target <= 1.3x): {'OK' if ratio <= 1.3 else 'OVER'}")
    extra = best["grounding"] / best["ours"]
    verdict = "OK" if extra <= 0.1 else "OVER"
    print(f"grounding / ours = {extra:.3f}x (target <= 0.1x): {verdict}")
    extra = best["languages"] / best["ours"]
    verdict = "OK" if extra <= 0.05 else "OVER"
    print(f"languages / ours = {extra:.3f}x (target <= 0.05x): {verdict}")


def long_source() -> None:
    """Index one long source and check one summary against it, at doubling lengths (grounding
    version 2: the summary's sentences embedded, shortlisted source sentences embedded and
    parsed; model loading not timed)."""
    sys.path.insert(0, str(ROOT))
    from shared.dimensions.grounding import grounding_scores
    from shared.dimensions.nlp import load_pipeline

    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    articles = list(dict.fromkeys(r["article"] for r in rows))
    base = " ".join(articles).split()
    summary = rows[0]["summary"]
    doc = load_pipeline()(summary)
    grounding_scores([(rows[0]["article"], summary)], summary_docs=[doc])  # load MiniLM, untimed
    print("| source words | seconds | seconds per million words |")
    print("|---|---|---|")
    for words in (125_000, 250_000, 500_000, 1_000_000):
        source = " ".join(base[i % len(base)] for i in range(words))
        start = time.perf_counter()
        (ev,) = grounding_scores([(source, summary)], summary_docs=[doc])
        seconds = time.perf_counter() - start
        assert ev.score is not None
        print(f"| {words:,} | {seconds:.2f} | {seconds / words * 1e6:.2f} |", flush=True)


if __name__ == "__main__":
    main()
