"""The eval runner: one flushed line per question, resume after an interruption, reports."""

import json

import pytest

from agentic_rag.eval.runner import run_eval
from agentic_rag.llm.dtype import choose_dtype
from testkit import REPO
from testkit.bad_inputs import LINE_BREAKS
from testkit.fakes import ScriptedChat
from testkit.processes import TIMING
from testkit.records import QUOTE_2004
from testkit.records import toy_dataset as dataset
from testkit.scripted_runs import fake, interrupt_after


def test_interrupted_run_resumes_to_the_same_summary(tmp_path, settings):
    data = dataset(tmp_path)
    full = run_eval(data, "agent", settings, tmp_path / "full", progress=False, extra_config={"llm": fake()})
    with pytest.raises(KeyboardInterrupt):
        run_eval(data, "agent", settings, tmp_path / "cut", progress=False, extra_config={"llm": fake()},
                 on_result=interrupt_after(2))
    lines = (tmp_path / "cut" / "results.jsonl").read_text().splitlines()
    assert 2 <= len(lines) < 5
    with open(tmp_path / "cut" / "results.jsonl", "a") as fh:
        fh.write('{"id": "toy-4", "trunc')  # a line cut by a kill mid-write
    resumed = run_eval(data, "agent", settings, tmp_path / "cut", resume=True, progress=False, extra_config={"llm": fake()})
    assert [r["id"] for r in resumed["rows"]] == [f"toy-{i}" for i in range(5)]
    a = {k: v for k, v in full["summary"].items() if k not in TIMING}
    b = {k: v for k, v in resumed["summary"].items() if k not in TIMING}
    assert a == b
    assert (tmp_path / "cut" / "report.md").is_file() and (tmp_path / "cut" / "risk_coverage.png").is_file()
    config = json.loads((tmp_path / "cut" / "config.json").read_text())
    assert config["model"]["gguf_sha256"] and config["dataset_sha256"] and "torch" in config["versions"]
    # the dtype the local model computes in, and why, as the run's start said it
    choice = choose_dtype(settings.llm.LLM_DTYPE)
    assert (config["model"]["dtype"], config["model"]["dtype_reason"]) == (choice.dtype, choice.reason)
    assert f"computing in {choice.dtype} ({choice.reason})" in (tmp_path / "cut" / "report.md").read_text()


def test_parallel_workers_and_seeded_sample(tmp_path, settings):
    data = dataset(tmp_path)
    res = run_eval(data, "agent", settings, tmp_path / "par", n=3, seed=7, workers=2, progress=False,
                   extra_config={"llm": fake()})
    again = run_eval(data, "agent", settings, tmp_path / "par2", n=3, seed=7, progress=False, extra_config={"llm": fake()})
    assert [r["id"] for r in res["rows"]] == [r["id"] for r in again["rows"]] and len(res["rows"]) == 3
    assert res["summary"]["n"] == 3 and res["summary"]["unanswerable"] + res["summary"]["answerable"] == 3


def test_a_fresh_run_starts_its_own_trace_and_a_resumed_one_continues_it(tmp_path, settings):
    data = dataset(tmp_path)
    out = tmp_path / "run"

    def trace_ids():
        return [json.loads(line)["question_id"] for line in (out / "telemetry.jsonl").read_text().splitlines()]

    run_eval(data, "agent", settings, out, n=2, progress=False, extra_config={"llm": fake()})
    first = trace_ids()
    assert set(first) == {"toy-0", "toy-1"}
    run_eval(data, "agent", settings, out, n=2, progress=False, extra_config={"llm": fake()}, overwrite=True)
    assert trace_ids() == first  # rerun: the old rows are gone, not doubled
    run_eval(data, "agent", settings, out, n=3, resume=True, progress=False, extra_config={"llm": fake()})
    assert trace_ids()[: len(first)] == first and "toy-2" in trace_ids()[len(first):]
    # each sitting's code is on record, with the row it started from: a run resumed across commits says so
    from agentic_rag.eval.provenance import code_version

    segments = json.loads((out / "config.json").read_text())["segments"]
    assert [(s["code"], s["from_row"]) for s in segments] == [(code_version(), 0), (code_version(), 2)]
    assert code_version() is None or len(code_version().partition("+")[0]) == 12  # a clean clone has a commit
    # a trace kept elsewhere is the user's own log: never removed
    shared = tmp_path / "shared.jsonl"
    shared.write_text('{"question_id": "earlier"}\n')
    run_eval(data, "agent", settings.replace(TELEMETRY_PATH=str(shared)), tmp_path / "other", n=1, progress=False,
             extra_config={"llm": fake()})
    assert shared.read_text().startswith('{"question_id": "earlier"}') and len(shared.read_text().splitlines()) > 1


def test_resume_under_other_settings_is_refused_and_loses_nothing(tmp_path, settings):
    from agentic_rag.eval.resume import ResumeMismatchError

    data, out = dataset(tmp_path), tmp_path / "run"
    run_eval(data, "agent", settings, out, n=2, progress=False, extra_config={"llm": fake()})
    before = (out / "results.jsonl").read_bytes()
    with pytest.raises(ResumeMismatchError, match=r"COVERAGE_MIN: 0\.5 -> 0\.0"):
        run_eval(data, "agent", settings.replace(COVERAGE_MIN=0.0), out, n=3, resume=True, progress=False,
                 extra_config={"llm": fake()})
    with pytest.raises(ResumeMismatchError, match="system: 'agent' -> 'baseline'"):
        run_eval(data, "baseline", settings, out, n=3, resume=True, progress=False, extra_config={"llm": fake()})
    assert (out / "results.jsonl").read_bytes() == before
    # where files go is not a different run: a new replay cache still resumes
    resumed = run_eval(data, "agent", settings.replace(LLM_CACHE_PATH=str(tmp_path / "c.sqlite")), out, n=3,
                       resume=True, progress=False, extra_config={"llm": fake()})
    assert len(resumed["rows"]) == 3


def test_a_run_resumes_only_on_the_dtype_it_computed_in(tmp_path, settings):
    """LLM_DTYPE=auto resolves per machine: a run begun in bfloat16 (on a processor with native bfloat16, or
    before the setting existed) resumed where auto means float32 would mix two numerics' answers."""
    from agentic_rag.eval.resume import ResumeMismatchError

    data, out = dataset(tmp_path), tmp_path / "run"
    pinned = settings.replace(LLM_DTYPE="bfloat16")
    run_eval(data, "agent", pinned, out, n=2, progress=False, extra_config={"llm": fake()})
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["dtype"] == "bfloat16"
    with pytest.raises(ResumeMismatchError, match="'dtype': 'float32'"):
        run_eval(data, "agent", settings.replace(LLM_DTYPE="float32"), out, n=3, resume=True, progress=False,
                 extra_config={"llm": fake()})
    # the same dtype, named or chosen by auto, resumes; so does a folder from before LLM_DTYPE (bfloat16)
    del config["model"]["dtype"], config["model"]["dtype_reason"]
    config["settings"].pop("LLM_DTYPE")
    (out / "config.json").write_text(json.dumps(config))
    assert len(run_eval(data, "agent", pinned, out, n=3, resume=True, progress=False,
                        extra_config={"llm": fake()})["rows"]) == 3


def test_a_run_folder_of_flat_settings_resumes_and_a_changed_one_is_named(tmp_path, settings):
    """config.json records settings by flat name, as every run folder before the sections did: such a
    folder resumes under the sectioned settings, and one run under another value is refused by name."""
    from agentic_rag.configuration import Settings
    from agentic_rag.eval.resume import ResumeMismatchError

    data, out = dataset(tmp_path), tmp_path / "run"
    run_eval(data, "agent", settings, out, n=2, progress=False, extra_config={"llm": fake()})
    config = json.loads((out / "config.json").read_text())
    assert list(config["settings"]) == Settings.keys() and "COVERAGE_MIN" in config["settings"]
    assert not set(config["settings"]) & {"llm", "retrieval", "baug"}
    old = {**config, "settings": dict(sorted(config["settings"].items()))}  # written in another key order
    (out / "config.json").write_text(json.dumps(old))
    assert len(run_eval(data, "agent", settings, out, n=3, resume=True, progress=False,
                        extra_config={"llm": fake()})["rows"]) == 3
    old["settings"]["COVERAGE_MIN"] = 0.0  # the folder was run under another value
    (out / "config.json").write_text(json.dumps(old))
    with pytest.raises(ResumeMismatchError, match=r"other settings \(COVERAGE_MIN: 0\.0 -> 0\.5\)"):
        run_eval(data, "agent", settings, out, n=4, resume=True, progress=False, extra_config={"llm": fake()})


def test_resume_after_the_probe_file_changed_is_refused(tmp_path, settings):
    from agentic_rag.eval.resume import ResumeMismatchError
    from agentic_rag.reader.probe import PACKAGED_PROBE

    probe = tmp_path / "probe.json"
    probe.write_text(PACKAGED_PROBE.read_text())
    data, out, with_probe = dataset(tmp_path), tmp_path / "run", settings.replace(PROBE_PATH=str(probe))
    run_eval(data, "agent", with_probe, out, n=2, progress=False, extra_config={"llm": fake()})
    assert json.loads((out / "config.json").read_text())["probe"]["path"] == str(probe)
    refit = json.loads(probe.read_text())
    refit["intercept"] += 1.0
    probe.write_text(json.dumps(refit))
    with pytest.raises(ResumeMismatchError, match="probe"):
        run_eval(data, "agent", with_probe, out, n=3, resume=True, progress=False, extra_config={"llm": fake()})


def test_a_sweep_records_the_settings_it_ran_under_and_will_not_resume_under_others(tmp_path, settings):
    from agentic_rag.eval.calibrate import calibrate
    from agentic_rag.eval.resume import ResumeMismatchError

    data, out = dataset(tmp_path), tmp_path / "sweep"
    under = settings.replace(ANSWER_RELEVANCE_MIN=0.3)
    report = calibrate(data, "COVERAGE_MIN", [0.0, 0.5], under, out, extra_config={"llm": fake()})
    assert [r["value"] for r in report["sweep"]] == [0.0, 0.5] and report["chosen"] in (0.0, 0.5)
    assert report["fixed"] == {"ANSWER_RELEVANCE_MIN": 0.3}
    assert json.loads((out / "sweep.json").read_text())["fixed"] == {"ANSWER_RELEVANCE_MIN": 0.3}
    with pytest.raises(ResumeMismatchError, match="ANSWER_RELEVANCE_MIN"):
        calibrate(data, "COVERAGE_MIN", [0.0, 0.5], settings, out, extra_config={"llm": fake()})


def test_a_line_separator_in_a_question_and_a_reply_loses_no_row(tmp_path, settings):
    from agentic_rag.datasets.crag import iter_records, write_records
    from agentic_rag.telemetry import read_rows
    from agentic_rag.trace.run import load_run

    records = list(iter_records(dataset(tmp_path, n=2)))
    records[0].query = records[0].query.replace(" at ", " at\u2028", 1)  # a raw U+2028 in the row's "query"
    data = tmp_path / "separated.jsonl"
    write_records(records, data)
    reply = ScriptedChat(replies=[f'Finding Nemo\u2028won {{cite:76th academy}} "{QUOTE_2004}".'])
    out = tmp_path / "run"
    res = run_eval(data, "agent", settings, out, progress=False, extra_config={"llm": reply})
    assert res["summary"]["n"] == 2 and "\u2028" in res["rows"][0]["prediction"]
    assert load_run(out).row("toy-0")["query"] == records[0].query
    assert {r["question_id"] for r in read_rows(out / "telemetry.jsonl")} == {"toy-0", "toy-1"}
    again = ScriptedChat(replies=["unused"])
    run_eval(data, "agent", settings, out, resume=True, progress=False, extra_config={"llm": again})
    assert not again.calls and (out / "results.jsonl").read_text().count("\n") == 2


@pytest.mark.parametrize("separator", LINE_BREAKS)
def test_rows_holding_a_line_separator_read_back_whole(tmp_path, separator):
    from agentic_rag.eval.results import read_results
    from agentic_rag.telemetry import keep_questions, read_rows, write_row

    rows = tmp_path / "rows.jsonl"
    for i in range(3):
        write_row(rows, {"id": f"q{i}", "question_id": f"q{i}", "prediction": f"a{separator}b"})
    assert [r["id"] for r in read_results(rows)] == ["q0", "q1", "q2"]
    assert keep_questions(rows, ["q0", "q2"]) == 1 and [r["id"] for r in read_rows(rows)] == ["q0", "q2"]


def test_the_benchmark_pairs_the_chain_check_run_with_the_agent_wherever_it_was_made(tmp_path, settings, monkeypatch):
    """scripts/bench_agent_vs_baseline.py on run folders already made (--rejudge-only reads them, no model):
    baseline and agent are paired as always; a finished agent_chain_check run is paired with the agent too,
    copied beside the others and summed up in the overview, and a split without one is left as it was."""
    import runpy
    import sys

    root = REPO
    runs = tmp_path / "artifacts" / "runs" / "agent_vs_baseline"
    data = dataset(tmp_path)
    for split, labels in (("with_chain", ("baseline", "agent", "agent_chain_check")), ("without", ("baseline", "agent"))):
        for label in labels:
            system = "baseline" if label == "baseline" else "agent"
            s = settings.replace(CHAIN_CHECK=True) if label == "agent_chain_check" else settings
            run_eval(data, system, s, runs / split / label, progress=False, extra_config={"llm": fake()})
    out = tmp_path / "bench"
    script = str(root / "scripts" / "bench_agent_vs_baseline.py")
    monkeypatch.setattr(sys, "argv", [script, "--rejudge-only", "--datasets", "with_chain", "without", "--out", str(out),
                                      "--override", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"])
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(script, run_name="__main__")
    assert not ended.value.code
    overview = json.loads((out / "overview.json").read_text())
    chained = overview["with_chain"]["chain_check"]
    assert set(chained) == {"score", "paired_vs_agent", "tokens_per_q", "token_ratio", "right_answers_kept", "kept_frontier"}
    # the fitted decision's trade, where the run has one: the run's point, the ceiling and P(right)'s AUC
    for frontier in (chained["kept_frontier"], overview["with_chain"]["kept_frontier"]):
        assert frontier is None or (set(frontier) == {"cut", "as_run", "every_draft", "auc"}
                                    and frontier["as_run"]["right_answers_kept"] <= frontier["every_draft"]["right_answers_kept"])
    assert chained["paired_vs_agent"]["ci95_low"] <= chained["paired_vs_agent"]["diff"] <= chained["paired_vs_agent"]["ci95_high"]
    assert "chain_check" not in overview["without"]
    assert (out / "with_chain" / "agent_chain_check_results.jsonl.gz").is_file()
    assert (out / "with_chain" / "comparison_chain_check.md").read_text().startswith(
        "# CHAIN_CHECK on against off on with_chain\n\n| metric | agent | agent_chain_check |")
    assert not (out / "without" / "comparison_chain_check.md").exists()
    # the baseline's comparison shows it as a third run: its right answers kept from the baseline, per type
    assert "| metric | baseline | agent | agent_chain_check |" in (out / "with_chain" / "comparison.md").read_text()
    assert "| metric | baseline | agent | meaning |" in (out / "without" / "comparison.md").read_text()
    assert json.loads((out / "with_chain" / "agent_chain_check_config.json").read_text())["settings"]["CHAIN_CHECK"] is True
    # benchmarks/README.md shows it beside the agent's row, for the split that has it
    from studies.bench_sections import agent_section

    section = "\n".join(agent_section(overview))
    score = chained["paired_vs_agent"]
    assert f"| with_chain | {chained['score']} | {score['diff']} ({score['ci95_low']} to {score['ci95_high']}) |" in section
    assert "| without |" not in section.partition("`CHAIN_CHECK` on")[2].partition("Acceptance criteria")[0]
