"""Grounding, version 2: how well the source supports each summary sentence.

Each summary sentence gets offline signals, all cheap and all read against a source index built
once per source (:class:`SourceSentences`, linear in the source's length):

- ``items``: its names, numbers and dates the source does not state (version 1's check,
  :mod:`shared.dimensions.grounding`), weighted (a number or date counts ``NUMBER_WEIGHT``);
- ``window_words``: the share of its content words (stemmed) found in its best-matching source
  window (a source sentence and its two neighbours);
- ``source_bigrams``: the share of its word bigrams found anywhere in the source;
- ``similarity``: the best MiniLM cosine between the sentence and its candidate source sentences,
  in the manner of SummaC's sentence-level alignment (the max over the source);
- ``relations``: the share of its dependency arcs (subject-verb, verb-object, modifiers, the noun
  of a prepositional phrase) that the candidate source sentences' parse also has between the
  same two stems (either direction, any label); an arc whose two words only co-occur in one
  candidate sentence counts half;
- ``negation``: 1 when the sentence negates a verb that its best source sentence states without
  negation, or the reverse.

Candidates are shortlisted lexically before any model runs: the ``SHORTLIST`` source sentences
sharing the most rare stems with the summary sentence (idf-weighted, stems in more than a fifth
of the source's sentences skipped). Only those are embedded and parsed, each once per source,
so a long source costs a linear index and a bounded amount of model work.

A sentence's support is ``sigmoid(INTERCEPT + sum(WEIGHTS[k] * signal_k))`` and the summary's
``grounding`` is ``MIN_SHARE * min + (1 - MIN_SHARE) * mean`` over its sentences. The weights
were fit by logistic regression on sentence labels and ``MIN_SHARE`` chosen by cross-validation
over articles (``scripts/grounding_fit.py``; docs/VALIDITY.md); nothing is trained at run time.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .evidence import GroundingEvidence, GroundingItem, SentenceSupport

VERSION = 2

SIGNALS = (
    "items",
    "window_words",
    "source_bigrams",
    "similarity",
    "relations",
    "negation",
)
"""The per-sentence signals, in the order of :data:`WEIGHTS`."""

WEIGHTS = (-0.226, 0.850, 1.225, 1.492, 0.766, -0.085)
"""Logistic-regression weights of the signals, fit by ``scripts/grounding_fit.py --fit`` on the
sentences of QAGS CNN/DM and XSum (their own labels) and SummEval dev (their summary's label:
consistency 5 or not, weight 0.3), C = 0.1 chosen from (0.1, 1, 10) on the pooled data; the same
procedure cross-validated over articles is in docs/VALIDITY.md."""
INTERCEPT = -2.538
MIN_SHARE = 0.0
"""Weight of the least supported sentence in the summary's value (the rest: the mean). Every
cross-validation fold chose 0 from (0, 0.25, 0.5, 0.75, 1): the mean ranks best; the least
supported sentence is still named in the evidence and the reason."""
SHORTLIST = 5
"""Candidate source sentences per summary sentence (embedded and parsed)."""
COMMON_SHARE = 0.2
"""Stems in more than this share of the source's sentences do not shortlist."""
RELATION_DEPS = frozenset(
    {
        "nsubj",
        "nsubjpass",
        "csubj",
        "agent",
        "dobj",
        "dative",
        "attr",
        "acomp",
        "oprd",
        "pobj",
        "amod",
        "nummod",
        "compound",
        "poss",
        "appos",
        "advmod",
        "npadvmod",
        "xcomp",
        "ccomp",
        "nsubj:pass",
        "obj",
        "iobj",
        "obl",
        "nmod",
        "nmod:poss",
    }
)
"""Arcs checked (ClearNLP labels as the English pipeline gives them; UD ones for the others).
A prepositional phrase is collapsed: the noun hangs off the preposition's head."""
NEGATIONS = frozenset({"not", "n't", "never", "no", "nobody", "nothing", "none", "neither", "nor"})
UNSUPPORTED_ITEM_CAP = 3.0
MAX_WORDS = 40
"""Longest source unit, in words (longer sentences are cut)."""

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u2019\u201d)\]]*\s+|\n\s*\n|\s*\n(?=[A-Z\"'])")
_STOP = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being
    has have had do does did this that these those it its he she they them his her their we our
    you your i me my mr mrs ms will would can could should may might must shall also said says
    say after before over into about than then so not no there here who whom which what when
    where why how all any some more most other such only own same too very just up out s t
    """.split()
)
_stem_cache: dict[str, str] = {}
_stemmer: Any = None


def stem(word: str) -> str:
    """Lower-cased Snowball stem ("denied" and "denies" -> "deni"), cached per word."""
    out = _stem_cache.get(word)
    if out is None:
        global _stemmer
        if _stemmer is None:
            from nltk.stem.snowball import SnowballStemmer

            _stemmer = SnowballStemmer("english")
        low = word.lower().replace("\u2019", "'")
        out = _stemmer.stem(low) if low.isascii() else low
        if len(_stem_cache) < 500_000:
            _stem_cache[word] = out
    return out


def words(text: str) -> list[str]:
    return [m.group().lower() for m in _WORD.finditer(text)]


def content_stems(tokens: Sequence[str]) -> set[str]:
    return {stem(w) for w in tokens if w not in _STOP}


def split_sentences(text: str, max_words: int = MAX_WORDS) -> list[tuple[int, int]]:
    """Char spans of the source's sentences (a regex split: no parse of the source); a sentence
    of more than ``max_words`` words (a source without punctuation) is cut into pieces of that
    many, so every unit stays comparable with a summary sentence and cheap to embed."""
    spans: list[tuple[int, int]] = []
    start = 0
    bounds = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)] + [(len(text), len(text))]
    for end, after in bounds:
        if text.count(" ", start, end) < max_words and text[start:end].strip():
            spans.append((start, end))
        elif text[start:end].strip():
            starts = [m.start() for m in _WORD.finditer(text, start, end)]
            for k in range(0, max(1, len(starts)), max_words):
                a = starts[k] if k else start
                b = starts[k + max_words] if k + max_words < len(starts) else end
                spans.append((a, b))
        start = after
    return spans


@dataclass
class SourceSentences:
    """A source's sentences, with what the signals look up; built in one linear pass."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    stems: list[frozenset[str]] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=dict)
    bigrams: set[tuple[str, str]] = field(default_factory=set)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    arcs: dict[int, frozenset[tuple[str, str, str]]] = field(default_factory=dict)
    negated: dict[int, frozenset[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sentence(self, i: int) -> str:
        a, b = self.spans[i]
        return self.text[a:b].strip()

    def shortlist(self, stems: set[str], k: int = SHORTLIST) -> list[int]:
        """The ``k`` sentences sharing the most idf-weighted rare stems with ``stems``; ties go
        to the earlier sentence.

        The stems are summed in sorted order and ties broken by position: a set of strings
        iterates in an order that changes from process to process (hash randomisation), and
        with it which of two tied sentences made the list, so the same summary got different
        similarity and relation signals in different runs."""
        n = max(1, len(self.spans))
        scores: Counter[int] = Counter()
        for s in sorted(stems):
            post = self.postings.get(s)
            if not post or len(post) > max(3, COMMON_SHARE * n):
                continue
            weight = math.log(1 + n / len(post))
            for i in post:
                scores[i] += weight
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [i for i, _ in ranked[:k]]


def index_sentences(text: str) -> SourceSentences:
    """The sentence index in one pass: each distinct word stemmed once, bigrams and postings
    built with set and dict operations, so a million-word source costs seconds."""
    idx = SourceSentences(text=text, spans=split_sentences(text))
    per_sentence = [words(text[a:b]) for a, b in idx.spans]
    vocabulary = {w for toks in per_sentence for w in toks if w not in _STOP}
    stems = {w: stem(w) for w in vocabulary}
    everything = [w for toks in per_sentence for w in toks]
    idx.bigrams = set(itertools.pairwise(everything))
    postings: dict[str, list[int]] = {}
    for i, toks in enumerate(per_sentence):
        mine = frozenset(stems[w] for w in toks if w in stems)
        idx.stems.append(mine)
        for s in mine:
            postings.setdefault(s, []).append(i)
    idx.postings = postings
    return idx


@dataclass(frozen=True)
class SentenceParse:
    """What the signals read off one summary sentence's parse."""

    text: str
    arcs: tuple[tuple[str, str, str], ...] = ()
    """(head word, dependent word, role), lower-cased, prepositions collapsed; role ``subj``,
    ``obj`` or ``mod`` (:func:`parse_relations`)."""
    negated: tuple[str, ...] = ()
    """Words (verbs, mostly) with a negation dependent."""


SUBJECT_ROLE = frozenset({"nsubj", "csubj", "nsubj:pass:agent"})
OBJECT_ROLE = frozenset({"dobj", "dative", "nsubjpass", "obj", "iobj", "nsubj:pass", "csubjpass"})


def _role(tok: Any, dep: str) -> str:
    """``subj`` (the doer, a passive's agent included), ``obj`` (the undergoer, a passive's
    subject included) or ``mod`` (every other arc)."""
    if dep in SUBJECT_ROLE or (dep == "pobj" and tok.head.dep_ == "agent"):
        return "subj"
    if dep in OBJECT_ROLE:
        return "obj"
    return "mod"


def parse_relations(sent: Any) -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...]]:
    """(arcs as (head word, dependent word, role), negated heads) of one spaCy span."""
    arcs: list[tuple[str, str, str]] = []
    negated: list[str] = []
    for tok in sent:
        dep = tok.dep_
        if dep == "neg" or (dep == "advmod" and tok.lower_ in NEGATIONS) or tok.lower_ == "never":
            negated.append(tok.head.lower_)
            continue
        if dep not in RELATION_DEPS or not (tok.is_alpha or tok.like_num):
            continue
        head = tok.head
        if dep == "pobj" and head.dep_ in ("prep", "agent") and head.head is not head:
            head = head.head
        if head is tok or tok.lower_ in _STOP or head.lower_ in _STOP:
            continue
        arcs.append((head.lower_, tok.lower_, _role(tok, dep)))
    return tuple(arcs), tuple(negated)


def _parse_source(idx: SourceSentences, ids: Sequence[int], nlp: Any) -> None:
    todo = [i for i in ids if i not in idx.arcs]
    if not todo:
        return
    texts = [idx.sentence(i)[:5000] for i in todo]
    if nlp is None:
        for i in todo:
            idx.arcs[i], idx.negated[i] = frozenset(), frozenset()
        return
    with nlp.select_pipes(
        enable=["tok2vec", "parser"] if "tok2vec" in nlp.pipe_names else ["parser"]
    ):
        docs = list(nlp.pipe(texts, batch_size=32))
    for i, doc in zip(todo, docs, strict=True):
        arcs, neg = parse_relations(doc)
        idx.arcs[i] = frozenset((stem(h), stem(c), r) for h, c, r in arcs)
        idx.negated[i] = frozenset(stem(w) for w in neg)


def _embed_source(idx: SourceSentences, ids: Sequence[int], embed: Callable | None) -> None:
    todo = [i for i in ids if i not in idx.vectors]
    if not todo or embed is None:
        return
    vecs = np.asarray(embed([idx.sentence(i)[:2000] for i in todo]), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs / np.where(norms > 0, norms, 1.0)
    for i, v in zip(todo, vecs, strict=True):
        idx.vectors[i] = v


def sentence_signals(
    sentence: SentenceParse,
    vector: np.ndarray | None,
    items: Sequence[GroundingItem],
    idx: SourceSentences,
    *,
    number_weight: float,
    name_labels: frozenset[str],
) -> tuple[dict[str, float], int | None, list[str]]:
    """(signals, best source sentence or None, failed checks) for one summary sentence.

    The caller holds ``idx.lock`` and has parsed/embedded the candidates (:func:`prepare`)."""
    toks = words(sentence.text)
    stems = content_stems(toks)
    cands = idx.shortlist(stems)
    failed: list[str] = []
    bad_items = sum(
        1.0 if i.label in name_labels else number_weight for i in items if not i.supported
    )
    if bad_items:
        failed.append(
            "names/numbers not in the source: "
            + ", ".join(repr(i.text) for i in items if not i.supported)
        )
    # lexical: best window (candidate and its neighbours)
    best_window, best_i = 0.0, None
    for i in cands:
        window = set(idx.stems[i])
        if i > 0:
            window |= idx.stems[i - 1]
        if i + 1 < len(idx.stems):
            window |= idx.stems[i + 1]
        share = len(stems & window) / len(stems) if stems else 1.0
        if share > best_window:
            best_window, best_i = share, i
    if not stems:
        best_window = 1.0
    missing = sorted(stems - set().union(*(idx.stems[i] for i in cands))) if cands else []
    grams = list(itertools.pairwise(toks))
    bigram = sum(g in idx.bigrams for g in grams) / len(grams) if grams else 1.0
    # semantic: max cosine over candidates
    sim = best_window
    if vector is not None and any(i in idx.vectors for i in cands):
        sims = {i: float(vector @ idx.vectors[i]) for i in cands if i in idx.vectors}
        top = max(sims, key=sims.__getitem__)
        sim = max(0.0, sims[top])
        best_i = top
    elif vector is None:
        pass
    # relations: the same two words with the same role; the roles swapped is a failure
    arcs = [(stem(h), stem(c), r) for h, c, r in sentence.arcs]
    rel = 1.0
    if arcs and cands:
        src_arcs = set().union(*(idx.arcs.get(i, frozenset()) for i in cands))
        # every role each word pair has in the source, either way round (a dict of one role
        # per pair kept whichever the set visited last: another value in another process)
        pairs: dict[tuple[str, str], set[str]] = {}
        for h, c, r in src_arcs:
            pairs.setdefault((h, c), set()).add(r)
            pairs.setdefault((c, h), set()).add(r)
        got = 0.0
        lost, swapped = [], []
        for (h, c, r), raw in zip(arcs, sentence.arcs, strict=True):
            if (h, c, r) in src_arcs:
                got += 1.0
            elif r != "mod" and pairs.get((h, c), set()) - {"mod", r}:
                swapped.append(f"{raw[1]} as {r} of {raw[0]}")
            elif (h, c) in pairs or any(h in idx.stems[i] and c in idx.stems[i] for i in cands):
                got += 0.5
            else:
                lost.append(f"{raw[0]}-{raw[1]}")
        rel = got / len(arcs)
        if swapped:
            failed.append("roles differ from the source: " + ", ".join(swapped[:5]))
        if lost:
            failed.append("relations not in the source: " + ", ".join(lost[:5]))
    elif arcs:
        rel = 0.0
        failed.append("no source sentence shares its words")
    # negation
    neg = 0.0
    if best_i is not None:
        mine = {stem(w) for w in sentence.negated}
        theirs = idx.negated.get(best_i, frozenset())
        flip = (mine - theirs) & idx.stems[best_i] or (theirs - mine) & stems
        if flip:
            neg = 1.0
            failed.append("negation differs from the source on: " + ", ".join(sorted(flip)))
    if best_window < 0.7 and missing:
        failed.append("words not in the best source passage: " + ", ".join(missing[:6]))
    signals = {
        "items": min(bad_items, UNSUPPORTED_ITEM_CAP),
        "window_words": round(best_window, 4),
        "source_bigrams": round(bigram, 4),
        "similarity": round(sim, 4),
        "relations": round(rel, 4),
        "negation": neg,
    }
    return signals, best_i, failed


def prepare(
    idx: SourceSentences,
    sentences: Sequence[SentenceParse],
    embed: Callable | None,
    nlp: Any,
) -> None:
    """Embed and parse the candidate source sentences of these summary sentences (once each)."""
    ids: list[int] = []
    for s in sentences:
        ids.extend(idx.shortlist(content_stems(words(s.text))))
    ids = list(dict.fromkeys(ids))
    _embed_source(idx, ids, embed)
    _parse_source(idx, ids, nlp)


def support(signals: dict[str, float]) -> float:
    z = INTERCEPT + sum(w * signals[k] for k, w in zip(SIGNALS, WEIGHTS, strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def combine(supports: Sequence[float], min_share: float = MIN_SHARE) -> float:
    return min_share * min(supports) + (1 - min_share) * (sum(supports) / len(supports))


def constants_id() -> str:
    """A short hash of the shipped constants (for the signature)."""
    blob = repr((VERSION, SIGNALS, WEIGHTS, INTERCEPT, MIN_SHARE, SHORTLIST, COMMON_SHARE))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def score_sentences(
    sentences: Sequence[SentenceParse],
    units: np.ndarray | None,
    items: Sequence[GroundingItem],
    idx: SourceSentences,
    v1: GroundingEvidence,
    *,
    embed: Callable | None,
    nlp: Any,
    number_weight: float,
    name_labels: frozenset[str],
    note: str | None = None,
) -> GroundingEvidence:
    """Version 2's evidence: per-sentence support, combined; v1's items kept beside it."""
    if not sentences:
        return v1.model_copy(
            update={"score": None, "reason": "not computed: the summary has no sentence"}
        )
    with idx.lock:
        prepare(idx, sentences, embed, nlp)
        rows: list[SentenceSupport] = []
        for n, s in enumerate(sentences):
            mine = [i for i in items if i.sentence.strip() == s.text.strip()]
            vec = None if units is None or n >= len(units) else units[n]
            signals, best, failed = sentence_signals(
                s, vec, mine, idx, number_weight=number_weight, name_labels=name_labels
            )
            rows.append(
                SentenceSupport(
                    index=n + 1,
                    sentence=s.text,
                    support=round(support(signals), 4),
                    best_source=None if best is None else idx.sentence(best)[:400],
                    failed=failed,
                    signals=signals,
                )
            )
    score = combine([r.support for r in rows])
    worst = min(rows, key=lambda r: r.support)
    short = worst.sentence if len(worst.sentence) <= 90 else worst.sentence[:87] + "..."
    reason = (
        f"{score:.2f} from {len(rows)} sentence(s) (min {worst.support:.2f}, mean "
        f"{sum(r.support for r in rows) / len(rows):.2f}); least supported: sentence "
        f"{worst.index} {short!r}"
    )
    if worst.failed:
        reason += f" ({worst.failed[0]})"
    if v1.item_count:
        reason += f"; {v1.supported_count}/{v1.item_count} names, numbers and dates found"
    if note:
        reason += f"; {note}"
    return v1.model_copy(
        update={
            "score": min(1.0, max(0.0, score)),
            "reason": reason,
            "version": VERSION,
            "sentences": rows,
            "least_supported": worst.index,
            "items_score": v1.score,
        }
    )
