"""``summary-eval bench`` / ``shared.bench``: the arithmetic with scripted scores, the HTTP-level
counting, resuming, and bad input (missing label ids, a peer not installed, a judge failing every
call), all against the stub judge on 127.0.0.1."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared import bench
from shared.analysis import bench as pb
from shared.cli.app import app
from shared.cli.stub_judge import peer_schemas
from shared.testing import FakeJudge, stub_server

SUMMEVAL = Path(__file__).resolve().parents[1] / "examples" / "summeval" / "dev.jsonl"


def _ping(judge: pb.JudgeConfig, counter: pb.UsageCounter, item: pb.BenchItem) -> None:
    """One real chat-completions call through the bench's counted client (what a metric does)."""
    from shared.adapter_kit import run_sync

    async def call() -> None:
        client = judge.client(counter)
        await client.chat.completions.create(
            model=judge.model,
            messages=[{"role": "user", "content": f"Summary:\n{item.summary}"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Ping", "schema": {"type": "object", "properties": {}}},
            },
        )

    run_sync(call)


def scripted(score_of: Any, *, raise_on: str | None = None) -> pb.Runner:
    """A metric that makes one judge call per row and scores ``score_of(item)``; it raises on
    the batch (article) ``raise_on``."""

    def run(
        items: Sequence[pb.BenchItem], judge: pb.JudgeConfig, counter: pb.UsageCounter, _: Path
    ) -> list[pb.Outcome]:
        if raise_on is not None and items[0].group == raise_on:
            raise RuntimeError(f"peer blew up on {raise_on}")
        out: list[pb.Outcome] = []
        for item in items:
            _ping(judge, counter, item)
            out.append((score_of(item), None))
        return out

    return run


def relevance(item: pb.BenchItem) -> float:
    return float(item.labels["relevance"])  # type: ignore[arg-type]


def reversed_relevance(item: pb.BenchItem) -> float:
    return 5.0 - relevance(item)


def test_scripted_scores_give_known_correlations_and_a_seeded_interval(tmp_path: Path) -> None:
    items = pb.summeval_items(SUMMEVAL, articles=4, seed=3)
    assert len(items) == 64 and len({i.group for i in items}) == 4  # whole articles, 16 each
    runners = {"same": scripted(relevance), "reversed": scripted(reversed_relevance)}
    with stub_server(schemas=peer_schemas()) as url:
        first = bench(
            model="stub",
            base_url=url,
            metrics=["same", "reversed"],
            items=items,
            ratings=["relevance", "coherence"],
            runners=runners,
            workdir=tmp_path / "a",
            resamples=300,
            seed=7,
        )
        calls = len(url.requests)
        # what the stub reported: (characters of the messages) // 4 prompt tokens per request
        stub_prompt = sum(
            sum(len(m["content"]) for m in request["messages"]) // 4 for request in url.requests
        )
    same, rev = first.metric("same"), first.metric("reversed")
    assert same.scored == rev.scored == 64 and same.failed == 0
    rel = same.agreement[0]
    assert rel.rating == "relevance" and rel.level == "summary"
    assert rel.summary.value == 1.0 and rel.summary.units == 4
    assert rel.system is not None and rel.system.value == 1.0  # per-system means, same order
    assert rev.agreement[0].summary.value == -1.0
    # the paired difference: +1 - (-1) = 2 on every article, so its interval is [2, 2]
    diff = next(d for d in first.comparisons if d.rating == "relevance")
    assert (diff.first, diff.second, diff.difference) == ("same", "reversed", 2.0)
    assert (diff.low, diff.high, diff.units) == (2.0, 2.0, 4)
    # a genuine interval (coherence is not relevance), reproducible with the seed
    coh = same.agreement[1].summary
    assert coh.low is not None and coh.low < coh.value < coh.high  # type: ignore[operator]
    # calls and tokens are what the server answered, counted at the HTTP level
    assert same.usage.calls == rev.usage.calls == 64 and calls == 128
    assert same.usage.prompt_tokens + rev.usage.prompt_tokens == stub_prompt > 0
    assert same.dollars == 0.0  # a local server
    with stub_server(schemas=peer_schemas()) as url:
        again = bench(
            model="stub",
            base_url=url,
            metrics=["same", "reversed"],
            items=items,
            ratings=["relevance", "coherence"],
            runners=runners,
            workdir=tmp_path / "b",
            resamples=300,
            seed=7,
        )
        other = bench(
            model="stub",
            base_url=url,
            metrics=["same"],
            items=items,
            ratings=["coherence"],
            runners=runners,
            workdir=tmp_path / "b",
            resamples=300,
            seed=8,
        )
    assert again.metric("same").agreement[1].summary == coh
    assert again.comparisons == first.comparisons
    shifted = other.metric("same").agreement[0].summary
    assert shifted.value == coh.value and (shifted.low, shifted.high) != (coh.low, coh.high)


def test_a_peer_that_raises_on_some_rows_is_counted_not_fatal(tmp_path: Path) -> None:
    items = pb.summeval_items(SUMMEVAL, articles=3, seed=1)
    broken = items[0].group
    runners = {"ok": scripted(relevance), "flaky": scripted(relevance, raise_on=broken)}
    with stub_server() as url:
        result = bench(
            model="stub",
            base_url=url,
            metrics=["ok", "flaky"],
            items=items,
            ratings=["relevance"],
            runners=runners,
            workdir=tmp_path,
            resamples=100,
        )
    flaky = result.metric("flaky")
    assert (flaky.scored, flaky.failed) == (32, 16)
    assert flaky.reasons == {f"crashed: RuntimeError: peer blew up on {broken}": 16}
    assert flaky.agreement[0].summary.units == 2 and flaky.agreement[0].summary.value == 1.0
    assert result.metric("ok").scored == 48
    assert result.comparisons[0].units == 2  # compared on the articles both scored


def test_an_interrupted_bench_resumes_without_paying_twice(tmp_path: Path) -> None:
    items = pb.summeval_items(SUMMEVAL, articles=3, seed=2, summaries=4)
    seen: list[str] = []

    def interrupted(items_, judge, counter, workdir):  # type: ignore[no-untyped-def]
        if len(seen) == 2:
            raise KeyboardInterrupt
        seen.append(items_[0].group)
        return scripted(relevance)(items_, judge, counter, workdir)

    with stub_server() as url:
        with pytest.raises(KeyboardInterrupt):
            bench(
                model="stub",
                base_url=url,
                metrics=["m"],
                items=items,
                ratings=["relevance"],
                runners={"m": interrupted},
                workdir=tmp_path,
            )
        assert len(url.requests) == 8  # two articles of four summaries were paid for
        done = bench(
            model="stub",
            base_url=url,
            metrics=["m"],
            items=items,
            ratings=["relevance"],
            runners={"m": scripted(relevance)},
            workdir=tmp_path,
        )
        assert len(url.requests) == 12  # only the third article's four calls
    m = done.metric("m")
    assert m.scored == 12 and m.resumed_batches == 2
    assert m.usage.calls == 12  # the kept batches' calls are reported with the new one


def test_the_counter_reads_cached_tokens_and_counts_failed_replies() -> None:
    counter = pb.UsageCounter()
    reply = {
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 1024},
        }
    }
    counter.record(200, json.dumps(reply).encode())
    counter.record(200, json.dumps({"usage": {"prompt_tokens": 10}}).encode())
    counter.record(429, b'{"error": {"message": "slow down"}}')
    counter.record(200, b"not json")
    assert counter.usage == pb.Usage(
        calls=4, failed_calls=1, prompt_tokens=1210, cached_tokens=1024, completion_tokens=30
    )


class PeerFake(FakeJudge):
    """The stub's fake, with answers to Ragas' SummaryScore prompts (told apart by their
    instructions: the schema names overlap DeepEval's) that vary by summary."""

    def answer_text(self, prompt: str, schema: type, seed: int | None = None) -> str:
        if prompt.startswith("Extract keyphrases"):
            return json.dumps({"keyphrases": ["police", "club", "minister"]})
        if "Based on the given text and keyphrases, generate closed-ended" in prompt:
            return json.dumps({"questions": ["Is it about the police?", "Did the club win?"]})
        if "close-ended '1' or '0' questions" in prompt:
            return json.dumps({"answers": ["1", "1" if len(prompt) % 2 else "0"]})
        return super().answer_text(prompt, schema)


def test_the_three_real_metrics_run_against_the_stub_and_rerun_from_the_kept_results(
    tmp_path: Path,
) -> None:
    with stub_server(PeerFake(), schemas=peer_schemas()) as url:
        result = bench(
            model="stub",
            base_url=url,
            articles=1,
            summaries=3,
            seed=0,
            workdir=tmp_path,
            resamples=50,
        )
        paid = len(url.requests)
        rerun = bench(
            model="stub",
            base_url=url,
            articles=1,
            summaries=3,
            seed=0,
            workdir=tmp_path,
            resamples=50,
        )
        assert len(url.requests) == paid  # nothing is paid twice
        asked = url.judge.calls
    assert [m.name for m in result.metrics] == ["ours", "ours-two-call", "deepeval", "ragas"]
    # ours in both reply shapes on the one judge: the sentences path and the two-call path,
    # each paying its own per-source call (one judge cache per shape)
    assert asked["SentenceChecks"] == asked["PointedReview"] == 3, asked
    assert asked["CheckedClaims"] == asked["SummaryReview"] == 3, asked
    assert asked["GeneratedQuestions"] == 2, asked
    sentences, two_call = result.metric("ours"), result.metric("ours-two-call")
    # 1 + 2 x 3 each, and the first judge's structured-mode probe (once per server)
    assert (sentences.usage.calls, two_call.usage.calls) == (8, 7)
    assert sentences.usage.completion_tokens < two_call.usage.completion_tokens
    assert sentences.scores.keys() == two_call.scores.keys()
    for m in result.metrics:
        assert m.error is None and m.version
        assert m.scored == 3, (m.name, m.reasons)
        assert m.usage.calls > 0 and m.usage.prompt_tokens > 0, m.name
        assert all(0.0 <= s <= 1.0 for s in m.scores.values() if s is not None)
    assert sum(m.usage.calls for m in result.metrics) == paid  # every call counted, once
    assert [m.scores for m in rerun.metrics] == [m.scores for m in result.metrics]
    assert all(m.resumed_batches == 1 for m in rerun.metrics)
    from shared.cli.bench_report import render

    page = render(result)  # a scatter per metric and rating, and the paired comparison
    assert page.count("<svg") == 4 * 4 and page.count("<circle") == 4 * 4 * 3
    assert "ours − deepeval" in page and "ours − ragas" in page
    assert "ours − ours-two-call" in page  # the shapes' agreement, paired
    from rich.console import Console

    from shared.cli.bench_cli import print_result

    console = Console(record=True, width=200)
    print_result(result, console)
    text = console.export_text()
    cost: dict[str, list[str]] = {}
    for line in text.splitlines():  # the first line naming a metric: its cost row
        if line.strip():
            cost.setdefault(line.split()[0], line.split())
    for name in ("ours", "ours-two-call"):  # both shapes in the cost and agreement tables
        assert cost[name][2] == "3/3" and cost[name][4] in ("7", "8"), cost[name]
    assert "ours' reply shapes: ours = judge_path 'sentences'; ours-two-call = judge_path " in text
    assert "ours against ours-two-call: calls 8/7, completion tokens 0." in text
    rows = [line.split()[:2] for line in text.splitlines() if line.strip()]
    assert ["ours", "coherence"] in rows and ["ours-two-call", "coherence"] in rows, text
    assert "ours − ours-two-call  coherence" in text


def test_cli_the_stub_judge_as_served_lets_every_peer_score_every_row(tmp_path: Path) -> None:
    """``bench --articles 1`` against the stub as ``summary-eval stub-judge`` serves it (the plain
    fake, no test's own answers): Ragas' SummaryScore scored 0/16 and the bench exited 1. The
    stub took its questions prompt for DeepEval's ``Questions`` schema (the name is in Ragas'
    JSON schema too) and answered every Ragas schema with its smallest instance, no answers, on
    which SummaryScore divides by zero. (Ours is unaffected; the other tests run it.)"""
    with stub_server(schemas=peer_schemas()) as url:
        result = _cli(
            [
                "--base-url",
                url,
                "--model",
                "stub",
                "--articles",
                "1",
                "--metrics",
                "deepeval,ragas",
                "--workdir",
                str(tmp_path / "w"),
                "--json",
                str(tmp_path / "b.json"),
                "--resamples",
                "50",
            ]
        )
        asked = url.judge.calls
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "b.json").read_text())
    for m in data["metrics"]:
        assert (m["scored"], m["failed"]) == (16, 0), (m["name"], m["reasons"])
    ragas = data["metrics"][1]
    assert len(set(ragas["scores"].values())) > 1  # from the texts, not one constant
    assert ragas["agreement"][0]["summary"]["value"] is not None
    for schema in ("ExtractedKeyphrases", "QuestionsGenerated", "AnswersGenerated"):
        assert asked[schema] == 16, asked


def test_a_peer_not_installed_is_reported_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pb.metadata.version

    def version(name: str) -> str:
        if name == "ragas":
            raise pb.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(pb.metadata, "version", version)
    runners = {"ours": scripted(relevance)}
    items = pb.summeval_items(SUMMEVAL, articles=1, summaries=3)
    with stub_server() as url:
        result = bench(
            model="stub",
            base_url=url,
            metrics=["ours", "ragas"],
            items=items,
            ratings=["relevance"],
            runners=runners,
            workdir=tmp_path,
        )
        assert len(url.requests) == 3
    ragas = result.metric("ragas")
    assert ragas.error == 'ragas is not installed (pip install "summary-eval[ragas]")'
    assert ragas.version is None and ragas.scored == 0 and ragas.usage.calls == 0
    assert result.metric("ours").scored == 3 and result.comparisons == []


def _cli(args: list[str]) -> Any:
    return CliRunner().invoke(app, ["bench", *args], env={"COLUMNS": "200"})


def test_cli_a_judge_failing_every_call_is_reported_per_metric(tmp_path: Path) -> None:
    with stub_server(PeerFake(), schemas=peer_schemas(), fail_first=10**6, fail_status=401) as url:
        result = _cli(
            [
                "--base-url",
                url,
                "--model",
                "stub",
                "--articles",
                "1",
                "--summaries",
                "3",
                "--workdir",
                str(tmp_path / "w"),
                "--json",
                str(tmp_path / "b.json"),
                "--resamples",
                "50",
            ]
        )
    assert result.exit_code == 1, result.output
    data = json.loads((tmp_path / "b.json").read_text())
    assert [m["name"] for m in data["metrics"]] == ["ours", "ours-two-call", "deepeval", "ragas"]
    for m in data["metrics"]:
        assert m["scored"] == 0 and m["failed"] == 3 and m["reasons"], m
        assert m["usage"]["calls"] == m["usage"]["failed_calls"] > 0, m
    assert "not scored" in result.output and "ours" in result.output
    # nothing was kept: a rerun with a working judge retries every article
    assert not list((tmp_path / "w").glob("*.jsonl"))
    assert (tmp_path / "w" / "bench-report.html").is_file()


def _user_files(tmp_path: Path, label_ids: list[str]) -> tuple[Path, Path]:
    rows = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()[:16]]
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "source": r["article"], "summary": r["summary"]}) + "\n"
            for i, r in enumerate(rows)
        )
    )
    labels = tmp_path / "human.csv"
    lines = ["id,rel,article"]
    lines += [f"{i},{rows[int(i[1:])]['relevance']},A0" for i in label_ids]
    labels.write_text("\n".join(lines) + "\n")
    return data, labels


def test_cli_labels_with_missing_ids_leave_those_rows_out_with_a_note(tmp_path: Path) -> None:
    data, labels = _user_files(tmp_path, [f"r{i}" for i in range(12)])
    before = (data.read_text(), labels.read_text())
    with stub_server(PeerFake(), schemas=peer_schemas()) as url:
        result = _cli(
            [
                "--base-url",
                url,
                "--model",
                "stub",
                "--metrics",
                "deepeval",
                "--data",
                str(data),
                "--labels",
                str(labels),
                "--map",
                "score=rel",
                "--group-column",
                "article",
                "--workdir",
                str(tmp_path / "w"),
                "--json",
                str(tmp_path / "out.json"),
                "--resamples",
                "50",
            ]
        )
    assert result.exit_code == 0, result.output
    assert "4 row(s) of data.jsonl have no labels in human.csv" in result.output
    assert "r12, r13, r14, r15" in result.output
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["rows"] == 12 and out["ratings"] == ["rel"]
    assert out["metrics"][0]["agreement"][0]["level"] == "summary"
    assert (data.read_text(), labels.read_text()) == before  # the user's files are untouched


def test_cli_labels_sharing_no_id_are_a_usage_error(tmp_path: Path) -> None:
    data, labels = _user_files(tmp_path, [])
    labels.write_text("id,rel,article\nx1,3,A0\n")
    result = _cli(
        [
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "stub",
            "--data",
            str(data),
            "--labels",
            str(labels),
            "--map",
            "rel",
            "--workdir",
            str(tmp_path / "w"),
        ]
    )
    assert result.exit_code == 2
    assert "no row of data.jsonl has labels in human.csv" in result.output


def test_cli_labels_with_no_number_are_refused_before_any_judge_call(tmp_path: Path) -> None:
    """Labels of "n/a", "" and "five" leave nothing to correlate with: the bench says so and
    exits 2 before it pays for a single judge call (it scored every row, then found it)."""
    data, labels = _user_files(tmp_path, [])
    values = ["n/a", "", "five"]
    labels.write_text("id,rel,article\n" + "".join(f"r{i},{values[i % 3]},A0\n" for i in range(16)))
    with stub_server(PeerFake(), schemas=peer_schemas()) as url:
        result = _cli(
            [
                "--base-url",
                url,
                "--model",
                "stub",
                "--data",
                str(data),
                "--labels",
                str(labels),
                "--map",
                "score=rel",
                "--workdir",
                str(tmp_path / "w"),
            ]
        )
        assert url.count == 0  # no judge call paid
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "the labels' 'rel' column holds no number in any of the 16 row(s)" in text
    assert "'n/a', '', 'five'" in text and "nothing to correlate the metrics with" in text
    assert not list((tmp_path / "w").glob("*.jsonl"))


def test_bench_refuses_ratings_with_fewer_than_three_numbers_before_any_call(
    tmp_path: Path,
) -> None:
    """The Python API checks the rows it is given the same way, before the first judge call."""
    items = pb.summeval_items(SUMMEVAL, articles=1, seed=0)
    unrated = [
        pb.BenchItem(i.id, i.source, i.summary, {"rel": 3.0 if n < 2 else None}, i.group)
        for n, i in enumerate(items)
    ]
    calls: list[str] = []

    def counting(batch: Sequence[pb.BenchItem], *_: Any) -> list[pb.Outcome]:
        calls.append(batch[0].id)
        return [(0.5, None)] * len(batch)

    for given, ratings in ((unrated, ["rel"]), (items, ["helpfulness"])):
        with pytest.raises(ValueError, match="nothing to correlate the metrics with"):
            bench(
                model="stub",
                base_url="http://127.0.0.1:9/v1",
                metrics=["counting"],
                runners={"counting": counting},
                items=given,
                ratings=ratings,
                workdir=tmp_path,
            )
    assert calls == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics", "ours,bleu"], "--metrics: unknown bleu"),
        (["--data", "x.jsonl"], "needs all three: --data FILE --labels FILE --map"),
        (["--price-in", "1"], "give both the input and the output price"),
    ],
)
def test_cli_bad_options_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = _cli(
        [
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "stub",
            "--workdir",
            str(tmp_path),
            "--articles",
            "1",
            "--summaries",
            "3",
            *args,
        ]
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_cli_an_interruption_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.cli import bench_cli

    def interrupted(**_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cli, "bench", interrupted)
    result = _cli(
        ["--base-url", "http://127.0.0.1:9/v1", "--model", "stub", "--workdir", str(tmp_path / "w")]
    )
    assert result.exit_code == 130
    assert "rerun the same command to resume" in " ".join(result.output.split())


def test_the_paired_difference_without_groups_is_pooled_and_seeded() -> None:
    human = [1.0, 2.0, 3.0, 4.0, 5.0, 2.5, 3.5, 4.5]
    items = [
        pb.BenchItem(id=str(i), source="s", summary="t", labels={"rel": h})
        for i, h in enumerate(human)
    ]
    same = pb.MetricReport("a", "a", "1", scores={str(i): h for i, h in enumerate(human)})
    rev = pb.MetricReport("b", "b", "1", scores={str(i): -h for i, h in enumerate(human)})
    noisy = pb.MetricReport(
        "c", "c", "1", scores={str(i): h * (-1) ** i for i, h in enumerate(human)}
    )
    exact = pb.paired_difference(same, rev, items, "rel", resamples=200, seed=1)
    assert (exact.difference, exact.units) == (2.0, 8)
    assert exact.low is not None and exact.low <= 2.0 <= exact.high  # type: ignore[operator]
    first = pb.paired_difference(same, noisy, items, "rel", resamples=200, seed=1)
    again = pb.paired_difference(same, noisy, items, "rel", resamples=200, seed=1)
    assert first == again and first.difference is not None and first.units == 8
    assert first.low is not None and first.low < first.difference < first.high  # type: ignore[operator]


def test_cli_bench_against_the_plain_stub_scores_every_row_of_every_metric(
    tmp_path: Path,
) -> None:
    """``bench --articles 1`` against ``shared.testing.stub_server`` as tests and docs start it
    (no extra schemas): Ragas' calls got HTTP 400 "stub: cannot tell which schema to answer"
    (its JSON mode puts the schema in the system message, which the stub did not read), so
    Ragas scored 0/16 and the bench exited 1. Each metric also says how far it is within the
    article while it runs."""
    with stub_server() as url:
        result = _cli(
            [
                "--base-url", url, "--model", "stub", "--articles", "1",
                "--workdir", str(tmp_path / "w"), "--json", str(tmp_path / "b.json"),
                "--resamples", "50",
            ]
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "b.json").read_text())
    assert [m["name"] for m in data["metrics"]] == ["ours", "ours-two-call", "deepeval", "ragas"]
    for m in data["metrics"]:
        assert (m["scored"], m["failed"]) == (16, 0), (m["name"], m["reasons"])
        assert m["usage"]["failed_calls"] == 0, m["name"]
    text = " ".join(result.output.split())
    for name in ("deepeval", "ragas"):  # the peers say each row they finish
        assert f"{name}: A24: 16/16 row(s) done, " in text, text
    assert "ours: A24: 10 call(s)" in text, text  # ours: every ten replies


def test_a_rerun_replays_the_recorded_replies_and_reports_what_the_rows_cost(
    tmp_path: Path,
) -> None:
    # The kept results gone (an article interrupted before it finished), the same command
    # again: every metric's calls are answered from the recording in the work folder, nothing
    # reaches the server, and each metric reports the same calls and tokens, marked replayed.
    def run() -> pb.BenchResult:
        return bench(
            model="stub", base_url=url, articles=1, summaries=3, workdir=tmp_path, resamples=50
        )

    with stub_server() as url:
        first = run()
        paid = url.count
        for kept in tmp_path.glob("*.jsonl"):
            kept.unlink()
        second = run()
        assert url.count == paid  # not one request reached the server
    for before, after in zip(first.metrics, second.metrics, strict=True):
        assert after.scores == before.scores, after.name
        assert after.resumed_batches == 0, after.name
        assert before.usage.calls > 0 and before.usage.replayed_calls == 0, before.name
        assert after.usage.replayed_calls == after.usage.calls, after.name
        assert (after.usage.prompt_tokens, after.usage.completion_tokens) == (
            before.usage.prompt_tokens,
            before.usage.completion_tokens,
        ) or after.name == "ours", after.name  # ours' first run also paid for the probe
        assert after.usage.prompt_tokens > 0, after.name
    from rich.console import Console

    from shared.cli.bench_cli import print_result

    console = Console(record=True, width=200)
    print_result(second, console)
    text = console.export_text()
    calls = second.metric("ragas").usage.calls
    assert f"{calls} ({calls} replayed)" in text
    assert f"ragas: {calls} of {calls} call(s) answered from the recorded replies" in text


def test_deepeval_runs_with_its_per_task_limit_fitted_to_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DeepEval's own per-task limit (180 s by default) cut every row on a slow server whatever
    # --timeout said; the bench sets it, from the per-call timeout, while DeepEval runs.
    from deepeval.config.settings import get_settings

    names = (
        "DEEPEVAL_PER_TASK_TIMEOUT_SECONDS_OVERRIDE",
        "DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS_OVERRIDE",
    )
    for name in names:
        monkeypatch.delenv(name, raising=False)
    seen: list[tuple[float, float]] = []

    def before_answer(_: dict[str, Any]) -> None:
        settings = get_settings()
        seen.append(
            (
                settings.DEEPEVAL_PER_TASK_TIMEOUT_SECONDS,
                settings.DEEPEVAL_PER_ATTEMPT_TIMEOUT_SECONDS,
            )
        )

    with stub_server(before_answer=before_answer) as url:
        result = bench(
            model="stub", base_url=url, metrics=["deepeval"], articles=1, summaries=3,
            workdir=tmp_path, resamples=50, timeout=7,
        )  # fmt: skip
    assert result.metric("deepeval").scored == 3
    rows_calls = 3 * (pb.DEEPEVAL_CALLS_PER_ROW + 1)
    assert seen and set(seen) == {(7.0 * rows_calls, 7.0)}
    assert not any(name in os.environ for name in names)  # restored
    # a limit the user set is theirs
    monkeypatch.setenv(names[0], "999")
    seen.clear()
    with stub_server(before_answer=before_answer) as url:
        bench(
            model="stub", base_url=url, metrics=["deepeval"], articles=1, summaries=3,
            workdir=tmp_path / "again", resamples=50, timeout=7,
        )  # fmt: skip
    assert seen and {task for task, _ in seen} == {999.0}


def test_an_unreadable_recording_is_said_and_the_bench_still_scores(tmp_path: Path) -> None:
    (tmp_path / "m-replies.sqlite3").write_bytes(b"not a database, " * 64)
    heard: list[str] = []
    with stub_server() as url:
        result = bench(
            model="stub",
            base_url=url,
            metrics=["m"],
            items=pb.summeval_items(SUMMEVAL, articles=1, summaries=3),
            ratings=["relevance"],
            runners={"m": scripted(relevance)},
            workdir=tmp_path,
            on_metric=lambda name, message: heard.append(f"{name}: {message}"),
        )
        assert url.count == 3
    assert result.metric("m").scored == 3
    assert any("m-replies.sqlite3 cannot be read" in line for line in heard), heard
    assert (tmp_path / "m-replies.sqlite3").read_bytes() == b"not a database, " * 64  # untouched


def test_deepeval_progress_metric_finds_its_own_prompt_templates() -> None:
    # DeepEval 4.x finds a metric's prompts by its class name: a subclass under another name
    # failed every row that had claims ("No template found for ... _experimental_system_one_
    # verdict"), which a stub whose summaries yield no claims never reached.
    from deepeval.metrics import SummarizationMetric

    from shared.analysis import bench_runners
    from shared.analysis.bench_data import JudgeConfig, UsageCounter

    counter = UsageCounter()
    cls = bench_runners.progress_metric(counter)
    assert issubclass(cls, SummarizationMetric) and cls.__name__ == "SummarizationMetric"
    judge = JudgeConfig(model="stub", base_url="http://127.0.0.1:9/v1")
    metric = cls(model=bench_runners._deepeval_model(judge, counter))
    metric.claims, metric.truths = ["The mayor opened the bridge."], ["The bridge opened."]
    spec = metric._experimental_system_one_spec()
    assert spec.item_key == "summary_claim" and spec.instructions.strip()
    assert metric._get_prompt("generate_alignment_verdicts", summary_claims=metric.claims,
                              original_text="The bridge opened.").strip()  # fmt: skip


def test_the_recording_replays_a_reply_cut_at_the_length_limit_but_asks_a_failed_call_again(
    tmp_path: Path,
) -> None:
    # A reply the server ended at the length limit is a whole reply to that exact request: a
    # rerun replays it (a peer's looping call then costs nothing again and fails the same way).
    # A failed call (HTTP 500) is not kept: the rerun asks it again.
    import asyncio

    import httpx

    from shared.analysis.bench_recording import REPLAYED, Recording, recording_transport

    cut = {"choices": [{"message": {"content": '{"a": [1, 1, 1'}, "finish_reason": "length"}]}
    asked: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.content)
        if b"fail" in request.content:
            return httpx.Response(500, json={"error": "busy"})
        return httpx.Response(200, json=cut)

    async def send(transport: Any, body: dict[str, Any]) -> httpx.Response:
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.post("http://127.0.0.1:1/v1/chat/completions", json=body)

    def run(body: dict[str, Any]) -> httpx.Response:
        recording = Recording(tmp_path / "m-replies.sqlite3")  # a new run: a new instance
        try:
            return asyncio.run(
                send(recording_transport(httpx.MockTransport(answer), recording), body)
            )
        finally:
            recording.close()

    first = run({"messages": "loop"})
    again = run({"messages": "loop"})
    assert len(asked) == 1  # the rerun did not reach the server
    assert again.json() == first.json() == cut
    assert again.extensions.get(REPLAYED) and not first.extensions.get(REPLAYED)
    assert run({"messages": "fail"}).status_code == 500
    assert run({"messages": "fail"}).status_code == 500
    assert len(asked) == 3  # asked each time
