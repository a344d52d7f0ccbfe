"""Test-case checks that must follow the project's rules rather than DeepEval's defaults.

An empty summary is scored 0.0 everywhere (README, "Empty summaries"); DeepEval's own parameter
check would reject ``actual_output=""`` (while ``"  "`` passed), so the check sees a stand-in.
"""

from __future__ import annotations

from deepeval.test_case import LLMTestCase


def checkable_case(test_case: LLMTestCase) -> LLMTestCase:
    """``test_case`` as DeepEval's parameter check should see it: an empty-string summary
    counts as present (the core scores it 0.0); a missing one (None) is still an error."""
    if isinstance(test_case, LLMTestCase) and test_case.actual_output == "":
        return test_case.model_copy(update={"actual_output": " "})
    return test_case
