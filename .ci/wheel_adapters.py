"""The adapters from the installed wheel, against the stub judge at OPENAI_BASE_URL (run by
.ci/wheel_stage.sh from an empty folder): a DeepEval evaluate() with SummaryQualityMetric on an
OpenAIJudge, and a Ragas evaluate() plus a collections-API score, both on an llm_factory LLM."""

import asyncio
import math
import os

os.environ.setdefault("DEEPEVAL_FILE_SYSTEM", "READ_ONLY")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from deepeval import evaluate as deepeval_evaluate
from deepeval.evaluate.configs import DisplayConfig
from deepeval.test_case import LLMTestCase
from openai import AsyncOpenAI
from ragas import EvaluationDataset
from ragas import evaluate as ragas_evaluate
from ragas.llms import llm_factory

import ragas_ext.collections
from deepeval_ext import SummaryQualityMetric
from ragas_ext import SummaryQuality
from shared import OpenAIJudge

SOURCE = (
    "A company is launching a new product, a smartphone app designed to help users track their "
    "fitness goals. The app allows users to set daily exercise targets and log their meals."
)
SUMMARY = "A company is launching a fitness app for exercise targets and meal logs."

judge = OpenAIJudge("stub", base_url=os.environ["OPENAI_BASE_URL"])
result = deepeval_evaluate(
    [LLMTestCase(input=SOURCE, actual_output=SUMMARY)],
    metrics=[SummaryQualityMetric(model=judge, threshold=0.1)],
    display_config=DisplayConfig(print_results=False, show_indicator=False),
)
(data,) = result.test_results[0].metrics_data
assert data.error is None and data.score is not None, data
print(f"deepeval evaluate(): {data.name} {data.score:.2f} success={data.success}")

llm = llm_factory("stub", client=AsyncOpenAI(), max_tokens=4096)
rows = [{"reference_contexts": [SOURCE], "response": SUMMARY}]
frame = ragas_evaluate(
    EvaluationDataset.from_list(rows), metrics=[SummaryQuality()], llm=llm, show_progress=False
).to_pandas()
value = float(frame["summary_quality"][0])
assert not math.isnan(value), frame
print(f"ragas evaluate(): summary_quality {value:.2f}")

metric = ragas_ext.collections.SummaryQuality(llm=llm)
scored = asyncio.run(metric.ascore(reference_contexts=[SOURCE], response=SUMMARY))
assert not math.isnan(scored.value), scored.reason
print(f"ragas collections: {metric.name} {scored.value:.2f}")
