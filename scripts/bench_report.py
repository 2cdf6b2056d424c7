"""Write benchmarks/README.md from the committed benchmark JSON files (no figure is typed by hand).

Usage: python scripts/bench_report.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentic_rag.eval.plots import plot_targets
from studies.bench_sections import GENERATORS, agent_section, cross_reader_section, probe_section

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> dict | None:
    path = BENCH / name
    return json.loads(path.read_text()) if path.is_file() else None


def retrieval_section(r: dict) -> list[str]:
    sq = r["squad2_corpus"]
    out = [
        "## Retrieval (`scripts/bench_retrieval.py --out benchmarks/retrieval.json`)",
        "",
        f"SQuAD 2.0 dev half in corpus mode: {sq['paragraphs']} paragraphs ({sq['chunks']} chunks), "
        f"{sq['answerable_questions']} answerable questions; a hit is the question's own paragraph among the "
        "pages of the top passages. Single retrievers and `hybrid` are measured without MMR; `hybrid_mmr` uses "
        f"the default `MMR_LAMBDA={r['settings']['MMR_LAMBDA']}`.",
        "",
        "| retriever | recall@1 | recall@5 |",
        "|---|---|---|",
    ]
    for name, v in sq["recall"].items():
        out.append(f"| {name} | {v['recall@1']} | {v['recall@5']} |")
    h, v_, b = sq["recall"]["hybrid"]["recall@5"], sq["recall"]["vector_only"]["recall@5"], sq["recall"]["bm25_only"]["recall@5"]
    verdict = "holds" if h >= 0.90 and h > v_ and h > b else "does not hold"
    lat, e2e = sq["search_latency_ms_excluding_query_embedding"], sq["search_latency_ms_end_to_end"]
    ing = r["crag_example_ingest"]
    out += [
        "",
        f"Target hybrid recall@5 >= 0.90 and above both single retrievers: {verdict} ({h} vs {v_} and {b}).",
        "MMR trades recall of the single gold paragraph for diversity across pages, which is what the agent's",
        "workers want, so the recall target is stated for the fused ranking itself.",
        "",
        f"Search latency per query: p50 {lat['p50']} ms, p95 {lat['p95']} ms without the query embedding; "
        f"p50 {e2e['p50']} ms, p95 {e2e['p95']} ms end to end (embedding included). Index build: {sq['index_build_s']} s.",
        "",
        f"Ingestion of the 10 bundled CRAG records: {ing['pages']} distinct pages, {ing['chunks']} chunks in "
        f"{ing['total_s']} s ({ing['pages_per_s']} pages/s, {ing['chunks_per_s']} chunks/s; extraction {ing['extract_s']} s, "
        f"embedding and indexing {ing['index_s']} s).",
        "",
    ]
    return out


MODELS = {"packaged-1.5b": ("Qwen2.5-Coder-1.5B-Instruct, the default generator", "llm_1.5b.json", "--model packaged-1.5b "),
          "packaged": ("Qwen2.5-Coder-0.5B-Instruct, preset fast", "llm.json", "")}


def llm_section(report: dict) -> list[str]:
    """One row per processor class and dtype measured (a report of one run from before is its only row)."""
    rows = report.get("rows") or [report]
    name, file, option = MODELS.get(rows[0].get("model", "packaged"), (rows[0].get("model"), "?", ""))
    out = [
        f"## LLM: {name} (`scripts/bench_llm.py {option}--fresh [--dtype D] --out benchmarks/{file}`)",
        "",
        f"Packaged {name}: one row per processor class and dtype measured (`LLM_DTYPE=auto` computes in bfloat16 only "
        "where the processor has native bfloat16). First load: assemble and verify the GGUF, convert to bf16.",
        "",
        "| processor | class | dtype | threads | first load | cached load | prefill | decode |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in rows:
        proc, fl = m.get("processor") or {}, m.get("first_load") or {}
        pre, dec = m.get("prefill", {}), m.get("decode", {})
        out.append(f"| {proc.get('cpu') or m['machine'].get('cpu')} | {proc.get('class', '')} | {m['dtype']} | {m['threads']} | "
                   f"{fl.get('total_s', '-')} s | {m['cached_load_s']} s | "
                   f"{pre.get('tokens_per_s')} tokens/s ({pre.get('prompt_tokens')} prompt tokens) | "
                   f"{dec.get('tokens_per_s')} tokens/s ({dec.get('new_tokens')} new tokens, greedy) |")
    return out + [""]


def abstention_section(reports: list[tuple[str, dict]]) -> list[str]:
    out = [
        "## Abstention targets (`scripts/bench_abstention.py`)",
        "",
        "SQuAD 2.0 test sample (200: 100 answerable, 100 unanswerable; thresholds were swept on a disjoint dev",
        "split) and RGB negative rejection (100 questions whose snippets do not hold the answer). Agent and",
        "baseline use the same generator, prompt, retrieval and context budget.",
        "",
    ]
    plot_targets([(GENERATORS.get(tag, tag).split(" (")[0], a) for tag, a in reports], BENCH / "abstention_targets.png")
    out += ["![Abstention targets: each generator's figure with its 95% interval, and the target](abstention_targets.png)", ""]
    for tag, a in reports:
        out += [f"### {GENERATORS.get(tag, tag)}", "", "| dataset | metric | baseline | agent |", "|---|---|---|---|"]
        for name, v in a.items():
            for k in ("accuracy", "hallucination", "score", "accuracy_answerable", "refusal_rate_unanswerable",
                      "false_refusal_rate", "answered_with_world_answer", "tokens_per_q"):
                if v["agent"].get(k) is not None or v["baseline"].get(k) is not None:
                    out.append(f"| {name} | {k} | {v['baseline'].get(k)} | {v['agent'].get(k)} |")
        out += ["", "| dataset | target | figures | holds |", "|---|---|---|---|"]
        for name, v in a.items():
            for t, r in v["targets"].items():
                figs = ", ".join(f"{k} {x}" for k, x in r.items() if k != "holds")
                out.append(f"| {name} | {t} | {figs} | {'yes' if r['holds'] else 'no'} |")
        out += ["", "The answerability probe on the questions that reached the generator:", ""]
        for name, v in a.items():
            p = v.get("probe") or {}
            if p:
                auc = f"AUC {p['auc']}" if p.get("auc") is not None else "AUC undefined (one class only)"
                out.append(f"- {name}: {p['scored']} scored, {auc}, median P(answerable) on unanswerable {p['median_unanswerable']}.")
        for name, v in a.items():
            if m := v.get("missing"):
                out += ["", f"{name}: the agent's {m['refusals']} refusals name {m['pieces']} missing pieces "
                        f"({m['refusals_naming_pieces']} refusals name at least one); made of stop words alone: "
                        f"{len(m['stop_words_only'])}."]
        for name, v in a.items():
            if leak := v.get("leaked_negatives"):
                out += ["", f"{name}: {leak['leaked']} of the negatives hold every word of the real answer in their snippets "
                        "(RGB filtered them by the exact answer string only; answering those is not hallucinating). "
                        f"Agent refusal on the other {leak['clean']}: {leak['refusal_rate_clean']} {leak['interval_95']}."]
        out.append("")
    return out


def frontier_section(tag: str, f: dict) -> list[str]:
    """The final check replayed at every threshold (``scripts/bench_frontier.py``)."""
    runs = list(next(iter(f["summary"].values())))
    out = [f"## Final-check frontier, {GENERATORS.get(tag, tag)} (`scripts/bench_frontier.py`)", "",
           "Each run's final check replayed from its stored readings at every threshold from 0 to 1: can any cut on",
           "any reading meet refusal >= 0.70 at false refusal <= 0.15? A run of unanswerable questions only takes its",
           f"false refusal from {f['false_refusal_of_runs_without_answerables']} at the same threshold. Nothing is chosen "
           "here. Runs: " + ", ".join(f"{k} (`{v}`)" for k, v in f["runs"].items()) + ".", "",
           f"![Final-check frontier](frontier_{tag}.png)", "",
           "| reading | " + " | ".join(f"{r}: best refusal at FR <= 0.15 / FR to refuse 0.70" for r in runs) + " |",
           "|---|" + "---|" * len(runs)]
    for reading, by_run in f["summary"].items():
        out.append(f"| {reading} | " + " | ".join(
            f"{by_run[r]['best_refusal_within_cap']} / {by_run[r]['false_refusal_to_reach_target']}" for r in runs) + " |")
    return out + [""]


def _step(path: Path) -> str:
    """The step number of a ``<step>_<NAME>`` sweep folder ("" for the default generator's folders)."""
    head = path.parent.name.partition("_")[0]
    return head if head.isdigit() else ""


def _step_order(path: Path) -> tuple:
    step = _step(path)
    return (path.parents[1].name, int(step) if step else 0, path.parent.name)


def joint_choices(sweeps: list[dict]) -> list[str]:
    """A step swept as a grid (one sweep of a setting per value of another) is decided by the same rule
    over every row of the grid, not per sweep."""
    from agentic_rag.eval.calibrate import choose

    out = []
    steps: dict[tuple[str, str, str], list[dict]] = {}
    for s in sweeps:
        if s["step"]:
            steps.setdefault((s["generator"], s["step"], s["param"]), []).append(s)
    for (generator, step, _), group in steps.items():
        if len(group) < 2:
            continue
        rows = [{**r, "_sweep": i} for i, s in enumerate(group) for r in s["sweep"]]
        best = choose(rows, group[0]["default"], group[0].get("max_false_refusal", 0.15))
        s = group[best["_sweep"]]
        fixed = ", ".join(f"{k}={v}" for k, v in (s.get("fixed") or {}).items() if k != "LLM_MODEL") or "defaults"
        out.append(f"- {generator}, step {step} (a grid of {len(group)} sweeps): the rule over all {len(rows)} rows "
                   f"chooses {s['param']}={best['value']} with {fixed}: false refusal {best['false_refusal_rate']}, refusal "
                   f"on unanswerable {best['refusal_rate_unanswerable']}, score {best['score']}.")
    return out


def calibration_section() -> list[str]:
    """One row per committed sweep: what was swept, on which split, and the row the rule chose."""
    files = [("packaged 0.5B", f) for f in sorted(BENCH.glob("calibration/*/sweep.json"))]
    # `calibration/default/` holds later sweeps of the default generator, run with `--preset default`
    files += [("packaged 0.5B" if f.parents[1].name == "default" else f.parents[1].name, f)
              for f in sorted(BENCH.glob("calibration/*/*/sweep.json"), key=_step_order)]
    sweeps = [{**json.loads(f.read_text()), "generator": name, "step": _step(f)} for name, f in files]
    if not sweeps:
        return []
    out = [
        "## Calibration sweeps (`agentic-rag calibrate`)",
        "",
        f"Rule: {sweeps[0]['rule']}. Each sweep's table and plots are in `calibration/<NAME>/` "
        "(other generators: `calibration/<preset>/<step>_<NAME>/`, run with `--preset <preset>`; their rows are in "
        "sweep order, each sweep run with the values chosen before it, as its 'swept with' column says).",
        "",
        "| generator | setting | swept with | dataset | values | default when swept | chosen | accuracy on answerable "
        "| false refusal | refusal on unanswerable | hallucination | score |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sweeps:
        row = next(r for r in s["sweep"] if r["value"] == s["chosen"])
        values = ", ".join(str(r["value"]) for r in s["sweep"])
        fixed = s.get("fixed")
        with_ = ", ".join(f"{k}={v}" for k, v in fixed.items() if k != "LLM_MODEL") or "defaults" if fixed is not None else "-"
        out.append(f"| {s['generator']} | {s['param']} | {with_} | {Path(s['dataset']).name} | {values} | {s['default']} | "
                   f"{s['chosen']} | {row['accuracy_answerable']} | {row['false_refusal_rate']} | "
                   f"{row['refusal_rate_unanswerable']} | {row['hallucination']} | {row['score']} |")
    joint = joint_choices(sweeps)
    return out + ([""] + joint if joint else []) + [""]


def table_in(markdown_file: str, header: str) -> list[str]:
    """The table whose header line starts with ``header`` in a benchmark's own markdown (which its script
    writes beside the JSON): shown here as written there, never rendered a second way."""
    lines = (BENCH / markdown_file).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def crag_kit_section(ck: dict) -> list[str]:
    return [
        "## Inside the official CRAG starter kit (`scripts/bench_crag_kit.py KIT_DIR`)",
        "",
        f"The kit's own prediction loop ({ck['kit']}) over its 10 example questions; each batch timed against",
        "batch size x the per-query seconds. Per-question answers in `crag_kit.md`.",
        "",
        *table_in("crag_kit.md", "| run | adapter |"),
        "",
    ]


def hostile_section(h: dict) -> list[str]:
    huge, q = h["huge_html"], h["long_question"]
    out = [
        "## Bad and hostile inputs (`scripts/bench_hostile_inputs.py`)",
        "",
        "| input | before | after |",
        "|---|---|---|",
        f"| one {huge['uncapped']['page_mb']} MB HTML page (time, peak memory of the process) | "
        f"{huge['uncapped']['seconds']} s, {huge['uncapped']['peak_rss_mb']} MB | {huge['capped']['seconds']} s, "
        f"{huge['capped']['peak_rss_mb']} MB (`MAX_PAGE_RAW_CHARS={huge['capped']['raw_cap_chars']}`) |",
    ]
    out += [f"| text kept under {d['levels']} levels of nesting (characters of {d['text_chars']}) | {d['kept_before']} | "
            f"{d['kept_after']} |" for d in h["deep_nesting"]]
    out += [
        f"| anchor step on a {q['cap_off']['words']:,}-word question | {q['cap_off']['seconds']} s | "
        f"{q['cap_default']['seconds']} s, refused (`MAX_QUESTION_CHARS={q['cap_default']['max_question_chars']}`) |",
        "",
        "Sentences flagged as addressing the model in the evaluation data (none of it does, so every flag is a "
        "false positive; a flagged page backs no answer):",
        "",
        "| data | texts | sentences | texts flagged | sentences flagged |",
        "|---|---|---|---|---|",
    ]
    out += [f"| {name} | {v['texts']} | {v['sentences']} | {v['texts_flagged']} | {v['sentences_flagged']} |"
            for name, v in h["untrusted_patterns"].items()]
    if (cat := h.get("hostile_catalogue")) and (speed := h.get("extraction_speed")):
        hid, adr = cat["hiding_methods"], cat["model_addressed"]
        out += [
            "",
            f"The hostile-page catalogue (`agentic_rag/data/hostile_pages.json`), before = revision {cat['before_revision']}; "
            f"extraction speed on the bundled CRAG example pages ({speed['pages']} pages, {speed['page_mb']} MB), both "
            f"extractors alternated in one process, best of {speed['rounds']} rounds:",
            "",
            "| | before | after |",
            "|---|---|---|",
            f"| hiding methods whose planted sentence is extracted (of {hid['methods']}) | {hid['leaked_before']} | "
            f"{hid['leaked_after']} |",
            f"| phrasings addressed to the model not flagged (of {adr['phrasings']}) | {adr['missed_before']} | "
            f"{adr['missed_after']} |",
            f"| ordinary sentences flagged (of {adr['benign_sentences']}) | {len(adr['benign_flagged_before'])} | "
            f"{len(adr['benign_flagged_after'])} |",
            f"| extraction speed (pages/s) | {speed['pages_per_s_before']} | {speed['pages_per_s_after']} "
            f"({speed['after_over_before']}x the time) |",
            f"| characters of text extracted | {speed['text_chars_before']:,} | {speed['text_chars_after']:,} |",
        ]
    return out + [""]


def reliability_section(rel: dict) -> list[str]:
    cases = rel["cases"]
    groups = {g: [c for c in cases if c["group"] == g] for g in dict.fromkeys(c["group"] for c in cases)}
    lost, doubled = sum(c["rows_lost"] for c in cases), sum(c["rows_doubled"] for c in cases)
    out = ["## Reliability (`scripts/bench_reliability.py`, table in reliability.md)", "",
           f"{sum(c['ok'] for c in cases)} of {len(cases)} cases ok ("
           + ", ".join(f"{g} {sum(c['ok'] for c in gc)}/{len(gc)}" for g, gc in groups.items()) + "): "
           f"{sum(c['crash'] for c in cases)} crashed, {sum(c['traceback'] for c in cases)} printed a traceback, "
           f"{lost} results lost, {doubled} doubled."]
    for c in cases:
        if "peak_rss_mb" in c.get("detail", {}):
            out.append(f"Memory ({c['injected']}; wall time on the shared CPU): {c['outcome']}.")
        if "limit_s" in c.get("detail", {}):
            out.append(f"CRAG kit adapter, {c['injected']}: {c['outcome']}.")
    return [*out, ""]


def risk_coverage_section(rc: dict) -> list[str]:
    out = ["## Risk against coverage (`scripts/bench_risk_coverage.py`, default settings)", "",
           "Each curve's points are thresholds on how a system ranks its own answers: the agent by its support "
           "signals, the baseline by the same signals computed on its answers, the cosine gate by the cosine of the "
           "baseline's best retrieved passage. Mean risk: area under the risk-coverage curve per unit of coverage, "
           "over the coverage all three reach (lower is better). Details in `risk_coverage/README.md`.", "",
           "| dataset | system | coverage | accuracy of answered | mean risk (common coverage) |", "|---|---|---|---|---|"]
    for name, r in rc.items():
        for system, f in r["systems"].items():
            out.append(f"| {name} | {system} | {f['coverage']} | {f['accuracy_of_answered']} | {f['mean_risk_common']} |")
    out.append("")
    for name in rc:
        out += [f"![risk-coverage on {name}](risk_coverage/{name}.png)", ""]
    return out


def written_section(heading: str, markdown_file: str) -> list[str]:
    """A benchmark's own markdown as its script wrote it, under ``heading`` (its own title line dropped)."""
    lines = (BENCH / markdown_file).read_text().rstrip("\n").split("\n")
    return [heading, "", *(lines[2:] if lines[0].startswith("# ") else lines), ""]


def main() -> int:
    lines = ["# Benchmarks", "", "Generated by `scripts/bench_report.py` from the JSON files in this folder.", ""]
    if (r := _load("retrieval.json")) is not None:
        lines += retrieval_section(r)
    for name in ("llm_1.5b.json", "llm.json"):
        if (m := _load(name)) is not None:
            lines += llm_section(m)
    if _load("dtype.json") is not None:
        lines += written_section("## The dtype by processor class (`scripts/bench_dtype.py`, dtype.json)", "dtype.md")
    for tag in ("", "fast"):
        if (o := _load(str(Path("agent_vs_baseline", tag, "overview.json")))) is not None:
            lines += agent_section(o, tag)
    if (rc := _load("risk_coverage/risk_coverage.json")) is not None:
        lines += risk_coverage_section(rc)
    for f in sorted(BENCH.glob("refusals/*.md")):
        lines += [f"## Refusals by reason code: {f.stem} (`scripts/bench_refusals.py`)", "",
                  f"Dev-split runs only; the tables are in `refusals/{f.name}`.", ""]
    reports = [(f.stem.partition("_")[2], json.loads(f.read_text())) for f in sorted(BENCH.glob("abstention*.json"))]
    if reports:
        lines += abstention_section(reports)
    for f in sorted(BENCH.glob("frontier_*.json")):
        lines += frontier_section(f.stem.partition("_")[2], json.loads(f.read_text()))
    lines += calibration_section()
    if (t := _load("probe/training.json")) is not None:
        lines += probe_section(t, BENCH)
    if (t := _load("reader_cross/training.json")) is not None:
        lines += cross_reader_section(t, BENCH)
    for title, name in (("The answerability probe by feature set (`scripts/compare_probe_features.py`)", "probe/features.md"),
                        ("The answerability reader: added time and AUC (`scripts/bench_reader.py`)", "reader.md"),
                        ("Anchors met by a bridge page (`scripts/bench_bridges.py`)", "bridges.md")):
        if (BENCH / name).is_file():
            lines += written_section(f"## {title}", name)
    for f in sorted((BENCH / "evidence").glob("*.md")):
        lines += written_section(f"## Gold pages in the context: {f.stem} (`scripts/bench_evidence.py`)", f"evidence/{f.name}")
    for f in sorted((BENCH / "decision").glob("served_*.md")):
        lines += written_section(f"## The agent in-process and served: {f.stem} (`scripts/bench_served.py`)", f"decision/{f.name}")
    if (rc := _load("resume_check.json")) is not None:
        lines += [
            "## Kill and resume (`scripts/bench_resume.py`)",
            "",
            f"An `agentic-rag eval` process on {Path(rc['dataset']).name} ({rc['questions']} questions) was killed with SIGKILL "
            f"after {rc['result_lines_when_killed']} result lines, then resumed: {rc['result_lines_after_resume']} lines, "
            f"{rc['distinct_questions_after_resume']} distinct questions. Its summary.json matches an uninterrupted run on "
            f"all {rc['summary_fields_compared']} fields but latency: {'yes' if rc['same_summary'] else 'no'}.",
            "",
        ]
    if (ck := _load("crag_kit.json")) is not None:
        lines += crag_kit_section(ck)
    if (h := _load("hostile_inputs.json")) is not None:
        lines += hostile_section(h)
    if (rel := _load("reliability.json")) is not None:
        lines += reliability_section(rel)
    for name in ("latency.json", "latency_fast.json"):
        if _load(name) is not None:
            lines += written_section(f"## Where a question's time goes (`scripts/bench_latency.py`, {name})",
                                     str(Path(name).with_suffix(".md")))
    (BENCH / "README.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
