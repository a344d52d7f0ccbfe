"""DeepEval metrics over the summary-eval core: the headline score and one metric per sub-score.

Each metric maps an ``LLMTestCase`` (``input`` = source, ``actual_output`` = summary) to one call
of :func:`shared.ascore_summary` and copies the result into the fields DeepEval reads. Nothing
about a case is kept on the metric besides those result fields: questions, claims and costs live
in locals of the call, so one instance can score any number of sources (DeepEval's own
``SummarizationMetric`` reuses the first case's questions on every later case).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from deepeval.metrics import BaseMetric
from deepeval.metrics.indicator import metric_progress_indicator
from deepeval.metrics.utils import construct_verbose_logs, initialize_model
from deepeval.models import DeepEvalBaseLLM

try:
    from deepeval.test_case import LLMTestCase, SingleTurnParams
except ImportError as exc:  # DeepEval before 3.9.9 has no SingleTurnParams
    raise ImportError(f"deepeval_ext needs DeepEval 3.9.9 or newer: {exc}") from exc

from shared import (
    NO_LLM_SUB_SCORES,
    Judge,
    ScoreOptions,
    SummaryEvaluation,
    ascore_summary,
)
from shared.adapter_kit import (
    DEFAULTS,
    OPTION_NAMES,
    SUB_SCORE_NAMES,
    SUB_SCORES,
    SubScore,
    Verdict,
    on_change,
    option_fields,
    row_verdict,
    run_sync,
    sub_score,
)

from ._cases import checkable_case
from ._host import (
    InconclusiveAsOrFlaky,
    check_inconclusive_as,
    counted_as,
    counts_as_pass,
    mark_flaky,
    prepare_measure,
    record_usage,
    threshold_rule,
    unmark_flaky,
)
from ._judge import CaseUsage, current_usage, is_core_judge, judge_for


class SummaryScoringError(RuntimeError):
    """The metric could not score a test case (judge output invalid after retries, a sub-score
    not computed). Raised after ``error`` is set, so ``deepeval.evaluate()`` stops on it unless
    ``ErrorConfig(ignore_errors=True)``, which records the error and scores the other cases."""


class _SummaryMetricBase(BaseMetric):
    """Options, the single async measuring path and the result mapping shared by all metrics.

    Subclasses say which entry of ``SummaryEvaluation.sub_scores()`` is their score
    (``_score_key``) and their display name.
    """

    _required_params: ClassVar[list[SingleTurnParams]] = [
        SingleTurnParams.INPUT,
        SingleTurnParams.ACTUAL_OUTPUT,
    ]
    _score_key: ClassVar[str] = "score"
    _display_name: ClassVar[str] = "Summary Quality"

    def __init__(
        self,
        threshold: float = 0.5,
        model: str | DeepEvalBaseLLM | Judge | None = None,
        *,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
        flaky: bool = False,
        inconclusive: InconclusiveAsOrFlaky = "pass",
        **options: Any,
    ) -> None:
        # Every argument is stored under its own name: deepeval.evaluate() copies a metric per
        # test case by calling the class again with the attributes that match __init__'s
        # signature. The core's options are in that signature (set below from their one
        # declaration, with the core's defaults); ``dimensions=None`` means "not given".
        defaults = _option_defaults()
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}() got unexpected keyword argument(s) "
                f"{', '.join(map(repr, unknown))}; the options are {', '.join(defaults)}"
            )
        self.threshold = 1 if strict_mode else threshold
        if model is None and self._score_key in NO_LLM_SUB_SCORES:
            # computed without any judge: no model, so no API key is asked for
            self.model, self.using_native_model = None, False
            self.evaluation_model = "none (no LLM needed)"
        elif is_core_judge(model):
            # a summary-eval judge (OpenAIJudge for a local server: structured-output
            # negotiation, replies bounded by the schemas) is used as it is
            self.model, self.using_native_model = model, False
            self.evaluation_model = str(model.model_id)
        else:
            self.model, self.using_native_model = initialize_model(model)
            self.evaluation_model = self.model.get_model_name()
        self.include_reason = include_reason
        self.strict_mode = strict_mode
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode
        self.flaky = flaky
        # samples=k > 1: what a case whose samples give no clear verdict counts as ("flaky":
        # DeepEval's flaky handling, the case warns instead of failing; deepeval_ext._host)
        self.inconclusive = check_inconclusive_as(inconclusive)
        self.verdict: Verdict | None = None
        for attr, default in defaults.items():  # the core's options, as given
            setattr(self, attr, options.get(attr, default))
        questions = self.assessment_questions
        self.assessment_questions = (
            list(questions) if questions else None
        )  # [] means "generate them", as in DeepEval
        self.dimensions = None if self.dimensions is None else tuple(self.dimensions)
        # Bad options fail here, at construction, rather than once per test case.
        ScoreOptions.from_kwargs(self._score_options())

    def _score_options(self) -> dict[str, Any]:
        """Every core option, read from the attribute of the same name (or its DeepEval name,
        :data:`OPTION_PARAMETERS`)."""
        options = {name: getattr(self, attr) for name, attr in _option_parameters().items()}
        if self.dimensions is None:  # not given: the core's default
            del options["dimensions"]
        return options

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return self._display_name

    # -- measuring: one async path, one sync wrapper -----------------------------------------

    def measure(
        self,
        test_case: LLMTestCase,
        _show_indicator: bool = True,
        _in_component: bool = False,
        *args: Any,
        **kwargs: Any,
    ) -> float:
        """Sync entry point (``async_mode=False`` runs, ``metric.measure``): runs :meth:`a_measure`
        to completion, from inside a running event loop too."""
        return run_sync(
            lambda: self.a_measure(
                test_case, _show_indicator=_show_indicator, _in_component=_in_component
            )
        )

    async def a_measure(
        self,
        test_case: LLMTestCase,
        _show_indicator: bool = True,
        _in_component: bool = False,
        *args: Any,
        **kwargs: Any,
    ) -> float:
        """Score one test case; sets ``score``, ``reason``, ``success``, ``score_breakdown``,
        ``evaluation_cost``, ``verbose_logs`` and ``error``, and returns the score."""
        self._clear_result()  # a previous case's fields must not survive a failure on this one
        # DeepEval's own errors for missing input/output (an empty summary is not missing)
        prepare_measure(self, checkable_case(test_case))
        with metric_progress_indicator(
            self, async_mode=True, _show_indicator=_show_indicator, _in_component=_in_component
        ):
            usage = CaseUsage(cost=0.0 if self.using_native_model else None)
            token = current_usage.set(usage)
            try:
                evaluation = await ascore_summary(
                    test_case.input,
                    test_case.actual_output,
                    judge=self._judge(),
                    **self._score_options(),
                )
            except (TypeError, ValueError) as exc:
                # e.g. a whitespace-only source; not a TypeError, which DeepEval retries
                self._record_failure(f"bad test case: {exc}", usage)
                raise SummaryScoringError(self.error) from exc
            finally:
                current_usage.reset(token)
            self._record(evaluation, usage)
            if self.error is not None:
                raise SummaryScoringError(self.error)
            return float(self.score)  # type: ignore[arg-type]

    def _judge(self) -> Judge | None:
        """The core's judge for this metric: none (no model), the summary-eval judge given as
        the model, or the adapter over a DeepEval model (shared per model and mode)."""
        if self.model is None or is_core_judge(self.model):
            return self.model
        return judge_for(self.model, use_async=self.async_mode)

    # -- result mapping ------------------------------------------------------------------------

    def _clear_result(self) -> None:
        self.score = self.score_breakdown = self.reason = self.success = self.verdict = None
        self.error = self.evaluation_cost = self.verbose_logs = None
        self.input_tokens = self.output_tokens = None
        unmark_flaky(self)

    def _record_failure(self, message: str, usage: CaseUsage) -> None:
        self.score = self.verdict = None
        self.score_breakdown = None
        self.reason = None
        self.success = False
        self.error = message
        record_usage(self, usage, None, core_judge=is_core_judge(self.model))
        self.verbose_logs = None

    def _record(self, evaluation: SummaryEvaluation, usage: CaseUsage) -> None:
        """Copy one evaluation into DeepEval's result fields, all at once (no await in between,
        so concurrent cases on one instance never interleave their fields)."""
        if usage.cost is None and evaluation.cost is not None:
            # a summary-eval judge (OpenAIJudge) bills its own calls: the row's cost
            usage.cost = evaluation.cost
        sub_scores = evaluation.sub_scores()
        value = sub_scores.get(self._score_key)
        # Only this metric's own value decides: a dimension the core computed is reported even
        # when the judge failed the headline score (dimensions are measured beside it).
        error: str | None = None
        if value is None and self._score_key in _CORE_SCORES and not evaluation.scored:
            error = f"unscored: {evaluation.error}"
        elif value is None:
            evidence = getattr(evaluation.dimension_evidence, self._score_key, None)
            why = getattr(evidence, "reason", "")
            error = (
                f"sub-score '{self._score_key}' was not computed"
                + (f": {why}" if why else "")
                + (
                    f"; computed: {', '.join(k for k, v in sub_scores.items() if v is not None)}"
                    if self._score_key in sub_scores
                    else " by this version of summary-eval (no such sub-score)"
                )
                + (f"; the row is also unscored: {evaluation.error}" if evaluation.error else "")
                + ("" if why else ". Check the metric's `dimensions` option.")
            )
        if error is not None:
            self._record_failure(error, usage)
            record_usage(self, usage, evaluation, core_judge=is_core_judge(self.model))
            self.verbose_logs = construct_verbose_logs(
                self, steps=[*_evidence_steps(evaluation), f"Error: {error}"]
            )
            return
        score = float(value)  # type: ignore[arg-type]
        if self.strict_mode and score < self.threshold:
            score = 0.0  # DeepEval's strict mode: anything short of perfect is 0
        self.score = score
        self.score_breakdown = {
            name: sub for name, sub in sub_scores.items() if name != "score" and sub is not None
        }
        # samples=k > 1: the values above are means over k judge samples; their spread too
        self.score_breakdown.update(
            {name: sd for name, sd in evaluation.spread_columns().items() if sd is not None}
        )
        self.score_breakdown.update(error_type_breakdown(evaluation))
        # samples=k > 1: pass, fail or inconclusive over the samples, which decides success
        self.verdict = row_verdict(evaluation, self.threshold, self._score_key)
        self.score_breakdown.update(verdict_breakdown(self.verdict))
        self.reason = self._with_verdict(self._reason(evaluation)) if self.include_reason else None
        self.error = None
        record_usage(self, usage, evaluation, core_judge=is_core_judge(self.model))
        self.success = self.is_successful()
        mark_flaky(self, self.verdict)
        self.verbose_logs = construct_verbose_logs(
            self,
            steps=[
                *_evidence_steps(evaluation),
                f"Reason in full:\n{evaluation.reason_detail}",
                f"Score: {self.score}\nReason: {self.reason}",  # DeepEval prints only the last
            ],
        )

    def _reason(self, evaluation: SummaryEvaluation) -> str:
        return evaluation.reason

    def _with_verdict(self, reason: str) -> str:
        """``reason`` with, under its first line (the means over samples=k > 1), the verdict
        and what an inconclusive one counts as."""
        if self.verdict is None:
            return reason
        line = self.verdict.line()
        if self.verdict.verdict == "inconclusive":
            how = counted_as(self.inconclusive)
            line += f" Counted as {how} (inconclusive={self.inconclusive!r})."
        head, _, rest = reason.partition("\n")
        return "\n".join(part for part in (head, line, rest) if part)

    def is_successful(self) -> bool | None:
        """DeepEval's rule (score >= threshold; False on an error), except with samples=k > 1:
        then the verdict over the samples decides, an inconclusive one counting as the
        ``inconclusive`` option says (a pass by default). DeepEval reads this for each case's
        ``success`` (``evaluate``, ``assert_test``, ``deepeval test run``)."""
        if self.error is None and self.verdict is not None:
            self.success = counts_as_pass(self.verdict, self.inconclusive)
            return self.success
        return threshold_rule(self)


def verdict_breakdown(verdict: Verdict | None) -> dict[str, Any]:
    """``score_breakdown``'s verdict entries with samples=k > 1: the share of samples that
    reach the threshold (``pass_probability``), its 95 % Wilson interval
    (``pass_probability_low``, ``pass_probability_high``) and ``verdict`` (``pass``, ``fail`` or
    ``inconclusive``, the one text value); nothing for a single sample."""
    if verdict is None:
        return {}
    return {
        "pass_probability": verdict.pass_probability,
        "pass_probability_low": verdict.low,
        "pass_probability_high": verdict.high,
        "verdict": verdict.verdict,
    }


ERROR_TYPE_PREFIX = "error_types."
"""The sentences path's counts in ``score_breakdown``: ``error_types.<category>``."""


def error_type_breakdown(evaluation: SummaryEvaluation) -> dict[str, int]:
    """``score_breakdown``'s error-type entries: on the sentences path one flat key per FineSurE
    category, ``error_types.entity`` and so on (all seven, 0 included: the same keys for every
    case, the names ``pandas.json_normalize`` gives the results file's ``evidence.error_types``),
    each the number of the summary's unsupported sentences of that category, so every value of
    the breakdown but the verdict (:func:`verdict_breakdown`) stays a number. Nothing on the
    claims paths (no categories there)."""
    counts = evaluation.error_types or {}
    return {f"{ERROR_TYPE_PREFIX}{name}": n for name, n in counts.items()}


def _claim_line(i: int, c: Any) -> str:
    """One claim (one sentence on the sentences path) of the verbose logs, with its verdict,
    error type and wrong span where it has them, reason and quote."""
    kind = f", {c.error_type}" if c.error_type else ""
    span = f', wrong span "{c.span}"' if c.span else ""
    return (
        f"{i}. {c.claim}\n   verdict: {c.verdict}{kind}{span}"
        + (f" ({c.reason})" if c.reason else "")
        + (f'\n   quote: "{c.quote}"' if c.quote else "")
    )


def _pointer(sentence: int | None) -> str:
    """The sentences path's pointed-at summary sentence, as the verbose logs name it."""
    if sentence is None:
        return ""
    return f" (sentence {sentence})" if sentence else " (no sentence)"


def _evidence_steps(evaluation: SummaryEvaluation) -> list[str]:
    """Verbose-log sections: questions with grades, claims with verdicts, the signature."""
    questions = [
        f"{i}. [importance {q.importance}] {q.question}\n"
        f"   reference: {q.reference_answer}\n"
        + (
            f"   summary{_pointer(q.sentence)}: {q.summary_answer} -> grade {q.grade}/5"
            + (f" ({q.grade_reason})" if q.grade_reason else "")
            if q.counted
            else "   not counted: the source does not answer it"
        )
        for i, q in enumerate(evaluation.questions, start=1)
    ]
    claims = [_claim_line(i, c) for i, c in enumerate(evaluation.claims, start=1)]
    if claims and evaluation.error_types is not None:  # the sentences path
        flagged = ", ".join(f"{k} {n}" for k, n in evaluation.error_types.items() if n)
        claims.append(f"Error types: {flagged or 'none (every sentence supported)'}")
    sub_scores = ", ".join(
        f"{name}={value:.3f}"
        for name, value in evaluation.sub_scores().items()
        if value is not None
    )
    return [
        "Coverage questions:\n" + ("\n".join(questions) or "(none)"),
        "Claims and verdicts:\n" + ("\n".join(claims) or "(none)"),
        f"Sub-scores: {sub_scores or '(none)'}",
        f"Signature: {evaluation.signature}",
    ]


class SummaryQualityMetric(_SummaryMetricBase):
    """Drop-in replacement for ``deepeval.metrics.SummarizationMetric``.

    ``score`` is F-beta of alignment (claims checked against the full source) and weighted
    coverage (open-ended questions graded 0-5); ``combine="min"`` gives DeepEval's rule.
    ``score_breakdown`` holds every computed sub-score and, on the sentences path, the
    unsupported sentences per error category (``error_types.entity``: :func:`error_type_breakdown`).
    """


class SummarySubScoreMetric(_SummaryMetricBase):
    """Thresholds one sub-score, e.g. ``SummarySubScoreMetric(0.9, sub_score="alignment")``
    (``SummarySubScoreMetric("alignment", threshold=0.9)`` works too).

    The score is ``SummaryEvaluation.sub_scores()[sub_score]``; a sub-score the core did not
    compute (not requested in ``dimensions``, or unknown to this version) is an error, never 0.
    The named subclasses (``SummaryAlignmentMetric`` ...) fix ``sub_score``; like every DeepEval
    metric, each takes ``threshold`` first: ``SummaryAlignmentMetric(0.9, model=m)``.
    """

    fixed_sub_score: ClassVar[str | None] = None

    def __init__(
        self,
        threshold: float | str = 0.5,
        model: str | DeepEvalBaseLLM | Judge | None = None,
        *,
        sub_score: str | None = None,
        **options: Any,
    ) -> None:
        if isinstance(threshold, str):
            # the older form SummarySubScoreMetric("alignment", threshold=...): a name first
            if sub_score is not None or "threshold" in options:
                if sub_score is not None:
                    raise TypeError("sub_score given twice (first argument and sub_score=)")
                sub_score, threshold = threshold, options.pop("threshold")
            else:
                sub_score, threshold = threshold, 0.5
        fixed = type(self).fixed_sub_score
        if fixed is not None and sub_score not in (None, fixed):
            raise ValueError(f"{type(self).__name__} scores '{fixed}', not {sub_score!r}")
        sub_score = sub_score or fixed
        if not isinstance(sub_score, str) or not sub_score or sub_score == "score":
            raise ValueError(
                f"sub_score must name a sub-score such as 'alignment', got {sub_score!r}"
            )
        self.sub_score = sub_score
        super().__init__(threshold, model, **options)

    @property
    def _score_key(self) -> str:  # type: ignore[override]
        return self.sub_score

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return f"Summary {self.sub_score.replace('_', ' ').title()}"

    def _score_options(self) -> dict[str, Any]:
        options = super()._score_options()
        # compute only what this metric reports (alignment and coverage need no dimension);
        # the core rejects an unknown name here, at construction
        if self.dimensions is None:
            options["dimensions"] = () if self.sub_score in _CORE_SCORES else (self.sub_score,)
        return options

    def _reason(self, evaluation: SummaryEvaluation) -> str:
        # this sub-score's own account, with or without an LLM; never the headline's reason
        return evaluation.reason_for(self.sub_score)


_CORE_SCORES = frozenset(s.name for s in SUB_SCORES if not s.dimension)
"""The headline score and the sub-scores it is made of (not text-quality dimensions)."""


def _option_parameters() -> dict[str, str]:
    return {name: "assessment_questions" if name == "questions" else name for name in OPTION_NAMES}


def _option_defaults() -> dict[str, Any]:
    return {
        attr: None if name in ("dimensions", "questions") else getattr(DEFAULTS, name)
        for name, attr in _option_parameters().items()
    }


OPTION_PARAMETERS: dict[str, str] = _option_parameters()
"""Each core option and the constructor parameter that takes it (DeepEval's own name for the
questions, as in its ``SummarizationMetric``)."""


_BASE_SIGNATURE = inspect.signature(_SummaryMetricBase.__init__)


def _with_option_parameters() -> None:
    """Put the option parameters into the metrics' ``__init__`` signature where its
    ``**options`` stands, each keyword-only with its default and the declared type: what
    ``copy_metrics``, ``help()`` and editors read. Run again when a dimension registers."""
    types = {f.name: f.type for f in option_fields()}
    own = [p for p in _BASE_SIGNATURE.parameters.values() if p.kind is not p.VAR_KEYWORD]
    added = [
        inspect.Parameter(
            attr, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=types[name]
        )
        for (name, attr), default in zip(
            _option_parameters().items(), _option_defaults().values(), strict=True
        )
    ]
    _SummaryMetricBase.__init__.__signature__ = _BASE_SIGNATURE.replace(  # type: ignore[attr-defined]
        parameters=[*own, *added]
    )


_with_option_parameters()
on_change(_with_option_parameters)


class SummaryAlignmentMetric(SummarySubScoreMetric):
    """Share of the summary's claims that the full source supports."""

    fixed_sub_score = "alignment"


class SummaryCoverageMetric(SummarySubScoreMetric):
    """Importance-weighted share of the source's main points the summary covers."""

    fixed_sub_score = "coverage"


def metric_class_name(name: str) -> str:
    """``Summary<Name>Metric``: ``non_redundancy`` -> ``SummaryNonRedundancyMetric``."""
    return f"Summary{name.replace('_', ' ').title().replace(' ', '')}Metric"


_MADE: dict[str, tuple[SubScore, type[SummarySubScoreMetric]]] = {}


def _dimension_metric(entry: SubScore) -> type[SummarySubScoreMetric]:
    """The metric of a dimension, made once from its spec: ``fixed_sub_score`` its name, the
    docstring its ``metric_doc`` (or description)."""
    made = _MADE.get(entry.name)
    if made is None or made[0] is not entry:
        cls_name = metric_class_name(entry.name)
        doc = getattr(entry, "metric_doc", "") or entry.description
        namespace = {
            "__doc__": doc,
            "__module__": __name__,
            "__qualname__": cls_name,
            "fixed_sub_score": entry.name,
        }
        cls = type(cls_name, (SummarySubScoreMetric,), namespace)
        made = _MADE[entry.name] = (entry, cls)
    return made[1]


class SubScoreMetrics(Mapping[str, type[SummarySubScoreMetric]]):
    """The metric class of every sub-score but the headline, by name, in report order: read
    from the sub-score list at each use, so a newly registered dimension has its metric."""

    def __getitem__(self, name: str) -> type[SummarySubScoreMetric]:
        if name in _WRITTEN:
            return _WRITTEN[name]
        try:
            entry = sub_score(name)
        except KeyError:
            raise KeyError(name) from None
        if not entry.dimension:
            raise KeyError(name)
        return _dimension_metric(entry)

    def __iter__(self) -> Iterator[str]:
        return (name for name in SUB_SCORE_NAMES if name != "score")

    def __len__(self) -> int:
        return len(SUB_SCORE_NAMES) - 1

    def __repr__(self) -> str:
        return repr(dict(self))


_WRITTEN: dict[str, type[SummarySubScoreMetric]] = {
    "alignment": SummaryAlignmentMetric,
    "coverage": SummaryCoverageMetric,
}

SUB_SCORE_METRICS: Mapping[str, type[SummarySubScoreMetric]] = SubScoreMetrics()
"""Every sub-score's metric class (``SummaryAlignmentMetric``, ``SummaryDensityMetric``, ...)."""

for _name in SUB_SCORE_METRICS:  # SummaryDensityMetric, ...: module attributes, as written ones
    globals()[SUB_SCORE_METRICS[_name].__name__] = SUB_SCORE_METRICS[_name]


def __getattr__(name: str) -> Any:
    """``Summary<Name>Metric`` of any registered dimension (PEP 562)."""
    for sub in SUB_SCORE_NAMES:
        if sub not in ("score", *_WRITTEN) and metric_class_name(sub) == name:
            return SUB_SCORE_METRICS[sub]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
