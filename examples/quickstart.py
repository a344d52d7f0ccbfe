"""Score the seed example (from the Ragas docs) and print the breakdown and signature.

With OPENAI_API_KEY or OPENAI_BASE_URL set, a real OpenAI-compatible judge scores it. Without
them, the package's stub server stands in for the LLM, so this runs offline: the numbers then
come from a deterministic word-overlap fake, good for checking the plumbing, not for judging.
"""

from __future__ import annotations

import contextlib
import os

from shared import OpenAIJudge, score_summary
from shared.testing import stub_server

SOURCE = (
    "A company is launching a new product, a smartphone app designed to help users track their "
    "fitness goals. The app allows users to set daily exercise targets, log their meals, and track "
    "their water intake. It also provides personalized workout recommendations and sends "
    "motivational reminders throughout the day."
)
SUMMARY = (
    "A company is launching a fitness tracking app that helps users set exercise goals, log meals, "
    "and track water intake, with personalized workout suggestions and motivational reminders."
)


def main() -> None:
    configured = bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
    with contextlib.ExitStack() as stack:
        if configured:
            judge = OpenAIJudge()
        else:
            url = stack.enter_context(stub_server())
            print(f"No OPENAI_API_KEY/OPENAI_BASE_URL: using the offline stub judge at {url}\n")
            judge = OpenAIJudge("stub-judge", base_url=url)
        result = score_summary(SOURCE, SUMMARY, judge=judge)

    for name, value in result.sub_scores().items():
        print(f"{name:>15}: {'unscored' if value is None else f'{value:.3f}'}")
    print(f"\n{result.reason}\n")
    for q in result.questions:
        print(f"  [w={q.importance} grade={q.grade}] {q.question} -> {q.summary_answer}")
    for c in result.claims:
        print(f"  [{c.verdict}] {c.claim}")
    print(f"\nsignature: {result.signature}")


if __name__ == "__main__":
    main()
