"""The fact-level diff of ``summary-eval compare`` in the terminal and in the HTML report: per id,
the questions B answers worse than A and the unsupported sentences or claims only B has
(:mod:`shared.analysis.factdiff`)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from ..analysis.factdiff import FactDiff, NewUnsupported, RowFacts, WorseAnswer
from .terminal import plain

CLIP = 100
"""Characters of an answer, quote or sentence the terminal shows (``--json`` and the HTML report
have them whole)."""


def _clip(text: str | None, limit: int = CLIP) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def row_headline(row: RowFacts) -> str:
    """``3 questions answered worse (weighted drop 12), 1 unsupported sentence or claim only in
    B``."""
    parts = []
    if row.worse_answers:
        parts.append(
            f"{_plural(len(row.worse_answers), 'question')} answered worse "
            f"(weighted drop {row.weighted_drop})"
        )
    if row.new_unsupported:
        parts.append(
            f"{len(row.new_unsupported)} unsupported sentence"
            f"{'' if len(row.new_unsupported) == 1 else 's'} or claim"
            f"{'' if len(row.new_unsupported) == 1 else 's'} only in B"
        )
    return ", ".join(parts)


def _unavailable_counts(facts: FactDiff) -> str:
    """``A: 3 no judge evidence; B: 1 unscored``."""
    sides = []
    for side, reasons in (
        ("A", Counter(r.unavailable_a for r in facts.rows if r.unavailable_a)),
        ("B", Counter(r.unavailable_b for r in facts.rows if r.unavailable_b)),
    ):
        if reasons:
            sides.append(f"{side}: " + ", ".join(f"{n} {why}" for why, n in reasons.items()))
    return "; ".join(sides)


def _worse_lines(item: WorseAnswer) -> list[str]:
    lines = [
        f"  question, importance {item.importance}, grade {item.grade_a} -> {item.grade_b}: "
        f"{_clip(item.question)}"
    ]
    if item.answer_a is not None or item.answer_b is not None:
        lines.append(f"      A answered: {_clip(item.answer_a) or '(nothing)'}")
        lines.append(f"      B answered: {_clip(item.answer_b) or '(nothing)'}")
    if item.grade_reason_b:
        lines.append(f"      why (B): {_clip(item.grade_reason_b)}")
    return lines


def _unsupported_lines(item: NewUnsupported) -> list[str]:
    kind = item.error_type or item.verdict
    lines = [f"  unsupported ({kind}) only in B: {_clip(item.text)}"]
    if item.span:
        lines.append(f"      wrong span: {_clip(item.span)}")
    if item.quote:
        lines.append(f"      source quote: {_clip(item.quote)}")
    if item.reason:
        lines.append(f"      why: {_clip(item.reason)}")
    return lines


def _capped(lines_of: list[list[str]], top: int) -> list[str]:
    out = [line for lines in lines_of[:top] for line in lines]
    if len(lines_of) > top:
        out.append(f"  … and {len(lines_of) - top} more (in --json and the HTML report)")
    return out


def print_facts(console: Console, facts: FactDiff, top: int) -> None:
    """The diff's summary line and, worst first, at most ``top`` ids with at most ``top``
    questions and ``top`` sentences each (``top`` 0: the summary line only)."""
    missing = _unavailable_counts(facts)
    if not facts.compared:
        console.print(
            Text(
                plain(
                    f"Fact-level diff: not made, no paired id has judge evidence on both sides "
                    f"({missing})."
                )
            )
        )
        return
    changed = facts.changed()
    head = (
        f"Fact-level diff: {len(changed)} of {facts.compared} compared ids lose facts in B "
        "(a question answered worse, or an unsupported sentence or claim A does not have)"
    )
    if changed and top:
        head += f"; worst first, at most {top} (--facts)"
    console.print(Text(plain(head + ".")))
    if missing:
        console.print(Text(plain(f"Not compared fact by fact ({missing}): listed in --json.")))
    for row in changed[:top]:
        lines = [f"{row.id}: {row_headline(row)}"]
        lines += _capped([_worse_lines(w) for w in row.worse_answers], top)
        lines += _capped([_unsupported_lines(n) for n in row.new_unsupported], top)
        console.print(Text(plain("\n".join(lines))))
    if len(changed) > top > 0:
        console.print(f"… and {len(changed) - top} more ids (in --json and the HTML report).")
    one_side = [r for r in facts.rows if r.questions_only_a or r.questions_only_b]
    if one_side:
        only_a = sum(len(r.questions_only_a) for r in one_side)
        only_b = sum(len(r.questions_only_b) for r in one_side)
        console.print(
            Text(
                plain(
                    f"Questions asked in one file only (not graded against each other): {only_a} "
                    f"only in A, {only_b} only in B, in {len(one_side)} ids (listed in --json)."
                )
            )
        )


def render_facts_html(facts: FactDiff) -> str:
    """The report's "Fact-level diff" section: one ``<details>`` per id that loses facts,
    worst first, opening its questions and sentences."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals["headline"] = row_headline
    return env.from_string(FACTS_TEMPLATE).render(
        facts=facts,
        changed=facts.changed(),
        missing=_unavailable_counts(facts),
        one_side=[r for r in facts.rows if r.questions_only_a or r.questions_only_b],
    )


FACTS_TEMPLATE = r"""
<h2 id="fact-diff">Fact-level diff</h2>
<p class="muted">Per id, the questions B answers worse than A (matched by question text; grade
 drop times importance, worst first) and the unsupported sentences or claims that B has and A
 has not. A question asked in one file only is listed apart, not graded against nothing.</p>
{% if not facts.compared %}
<p class="muted" id="facts-none">Not made: no paired id has judge evidence on both sides
 ({{ missing }}).</p>
{% else %}
<p id="facts-count">{{ changed | length }} of {{ facts.compared }} compared ids lose facts
 in B.{% if missing %} Not compared ({{ missing }}).{% endif %}</p>
<div id="fact-rows">
{% for r in changed %}
<details class="card facts" data-id="{{ r.id }}">
 <summary><strong>{{ r.id }}</strong>: {{ headline(r) }}</summary>
 {% if r.worse_answers %}
 <table class="worse-answers">
  <tr><th>question</th><th>reference answer</th><th>importance</th><th>grade A</th><th>grade B</th>
  <th>weighted drop</th><th>A answered</th><th>B answered</th><th>why (B)</th></tr>
  {% for w in r.worse_answers %}
  <tr class="worse-answer"><td>{{ w.question }}</td><td>{{ w.reference_answer or "—" }}</td>
  <td class="num">{{ w.importance }}</td>
  <td class="num">{{ w.grade_a }}</td><td class="num">{{ w.grade_b }}</td>
  <td class="num">{{ w.weighted_drop }}</td><td>{{ w.answer_a or "—" }}</td>
  <td>{{ w.answer_b or "—" }}</td><td>{{ w.grade_reason_b or "—" }}</td></tr>
  {% endfor %}
 </table>
 {% endif %}
 {% if r.new_unsupported %}
 <table class="new-unsupported">
  <tr><th>sentence or claim (only in B)</th><th>verdict</th><th>error type</th>
  <th>wrong span</th><th>source quote</th><th>why</th></tr>
  {% for n in r.new_unsupported %}
  <tr class="unsupported"><td>{{ n.text }}</td><td>{{ n.verdict }}</td>
  <td>{{ n.error_type or "—" }}</td><td>{{ n.span or "—" }}</td><td>{{ n.quote or "—" }}</td>
  <td>{{ n.reason or "—" }}</td></tr>
  {% endfor %}
 </table>
 {% endif %}
</details>
{% endfor %}
</div>
{% if one_side %}
<details class="card" id="questions-one-side"><summary>Questions asked in one file only, in
 {{ one_side | length }} ids</summary>
 <ul>{% for r in one_side %}{% for q in r.questions_only_a %}
 <li>{{ r.id }}, only in A: {{ q }}</li>{% endfor %}{% for q in r.questions_only_b %}
 <li>{{ r.id }}, only in B: {{ q }}</li>{% endfor %}{% endfor %}</ul>
</details>
{% endif %}
{% endif %}
"""
