r"""Example DeepEval test file for summary-eval: copy it next to your tests and run

    DEEPEVAL_FILE_SYSTEM=READ_ONLY DEEPEVAL_TELEMETRY_OPT_OUT=YES \
        deepeval test run test_deepeval_example.py
    (or plain: pytest test_deepeval_example.py)

The two switches keep DeepEval from writing ``./.deepeval/`` into your working folder:
``DEEPEVAL_FILE_SYSTEM=READ_ONLY`` its cache and last run (``deepeval test run`` saves them),
``DEEPEVAL_TELEMETRY_OPT_OUT=YES`` the empty folder it creates on import while its telemetry is
on. DeepEval reads them when it is first imported, which ``deepeval test run`` (and DeepEval's
pytest plugin under plain pytest) does before this file is loaded: a line here would come too
late, so give them on the command line (docs/deepeval.md, "What DeepEval writes").

It runs offline as shipped: the judge is ``FakeDeepEvalModel``, a DeepEval model backed by
summary-eval's deterministic fake judge (word overlap, no LLM). To use a real model, set
``SUMMARY_EVAL_MODEL`` to any model name DeepEval resolves (e.g. ``gpt-4.1`` with
``OPENAI_API_KEY`` set, or whatever ``deepeval set-...`` configured), or pass your own
``DeepEvalBaseLLM`` as ``model=``.
"""

from __future__ import annotations

import os

import pytest
from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_ext import SummaryAlignmentMetric, SummaryQualityMetric
from deepeval_ext.testing import FakeDeepEvalModel

# A model name string (resolved the way DeepEval's own metrics resolve it) or a model object.
MODEL = os.environ.get("SUMMARY_EVAL_MODEL") or FakeDeepEvalModel()

SOURCE = (
    "A company is launching a new product, a smartphone app designed to help users track their "
    "fitness goals. The app allows users to set daily exercise targets, log their meals, and "
    "track their water intake. It also provides personalized workout recommendations and sends "
    "motivational reminders throughout the day."
)

SUMMARIES = {
    "faithful": (
        "A company is launching a fitness tracking app that helps users set exercise goals, log "
        "meals, and track water intake, with personalized workout suggestions and motivational "
        "reminders."
    ),
    "short but faithful": "A company is launching an app that helps users track fitness goals.",
}


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_summary_quality(name: str) -> None:
    """Overall quality (F1 of alignment and coverage) above 0.5, and (almost) nothing made up:
    at least 90% of the summary's claims must be supported by the source."""
    test_case = LLMTestCase(input=SOURCE, actual_output=SUMMARIES[name])
    threshold = 0.5 if name == "faithful" else 0.2  # a one-liner covers less, by design
    assert_test(
        test_case,
        [
            SummaryQualityMetric(model=MODEL, threshold=threshold),
            SummaryAlignmentMetric(model=MODEL, threshold=0.9),
        ],
    )
