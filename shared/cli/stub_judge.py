"""``summary-eval stub-judge``: the fake judge served over HTTP, for trying things offline.

It serves :func:`shared.testing.stub_server` on 127.0.0.1 until interrupted, so the CLI
(``--base-url``), ``OpenAIJudge``, a Ragas ``llm_factory`` client or a DeepEval model can run
without an API key. Besides this project's prompts it answers the output schemas of the peers'
own metrics, so a side-by-side run (``summary-eval bench``) scores every row offline: Ragas'
``SummaryScore`` (and the legacy ``SummarizationScore``) gets keyphrases, closed questions and
0/1 answers built from the texts in its prompts, as :class:`~shared.testing.FakeJudge` answers
this project's prompts (its smallest valid answer, an empty list of answers, made it divide by
zero on every row); DeepEval's ``SummarizationMetric`` gets minimal valid answers. Those
numbers carry no meaning.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable

from pydantic import BaseModel

PEER_SCHEMAS = {
    "deepeval.metrics.summarization.schema": (
        "Verdicts",
        "Questions",
        "Answers",
        "SummarizationScoreReason",
    ),
    "deepeval.metrics.faithfulness.schema": ("Truths", "Claims"),
    "ragas.metrics._summarization": (
        "ExtractedKeyphrases",
        "QuestionsGenerated",
        "AnswersGenerated",
    ),
    "ragas.metrics.collections.summary_score.util": (
        "ExtractedKeyphrases",
        "QuestionsGenerated",
        "AnswersGenerated",
    ),
}
"""Where the peers' summarization metrics declare the schemas they ask the LLM for (read from
deepeval 4.3 and ragas 0.4: ``schema=`` in their metric code). Ragas' ``SummaryScore`` of
``ragas.metrics.collections`` (the one ``summary-eval bench`` runs) has its own copies of the
legacy ``SummarizationScore``'s three schemas, with the same names and fields."""


def peer_schemas() -> list[type[BaseModel]]:
    """The peers' schemas of whichever framework is installed (none is required). DeepEval,
    imported only for its schema classes, is kept from writing ``./.deepeval/`` into the working
    folder (it creates it on import while its telemetry is on): its telemetry is off in this
    process unless the environment already says otherwise."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    found: list[type[BaseModel]] = []
    for module_name, names in PEER_SCHEMAS.items():
        try:
            # stdout carries the URL, the line scripts read: a framework's import-time notice
            # (DeepEval prints one under DEEPEVAL_FILE_SYSTEM=READ_ONLY) goes to stderr
            with contextlib.redirect_stdout(sys.stderr):
                module = importlib.import_module(module_name)
        except ImportError:
            continue
        found += [getattr(module, name) for name in names if hasattr(module, name)]
    return found


def serve(port: int, announce: Callable[[str], None], stop: threading.Event) -> None:
    """Serve until ``stop`` is set (the command sets it on Ctrl-C); ``announce`` gets the URL.

    The peers' schemas are imported on the first request that is none of this project's
    prompts: a stub serving only ``summary-eval`` starts at once and imports no framework."""
    from ..testing import stub_server

    with stub_server(more_schemas=peer_schemas, port=port) as url:
        announce(url)
        stop.wait()
