"""Commands that show what was done: `trace`, `compare`, `rejudge`, `graph`, `settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from agentic_rag.cli.common import OverrideOpt, PresetOpt, app, console, err, fail, load_settings
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.errors import is_stream, output_file, write_output
from graphs import get_graph


@app.command("compare")
def compare_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run folders; the first is the reference.")],
    out: Annotated[Optional[str], typer.Option("--out", help="Write the markdown report here (its plots beside it).")] = None,
    title: Annotated[str, typer.Option("--title")] = "Comparison",
    html_out: Annotated[Optional[str], typer.Option("--html", help="Two runs: a page of the questions whose judgement or "
                                                                   "decision flipped, both timelines side by side.")] = None,
) -> None:
    """Side-by-side summary, per-question differences and a paired bootstrap CI on the score."""
    from agentic_rag.eval.compare import SUMMARY_KEYS, compare, paired_sentence, to_markdown

    if len(runs) < 2:
        fail("give at least two run folders")
    out, html_out = output_file(out, "--out"), output_file(html_out, "--html")
    if html_out is not None:
        from agentic_rag.trace.html import render_compare_html, write_page
        from agentic_rag.trace.run import TraceError, load_run

        if len(runs) != 2:
            fail("--html compares two runs: give exactly two run folders")
        try:
            pair = [load_run(r) for r in runs]
            console.print(f"written {write_page(render_compare_html(*pair, *(_run_graph(r, True) for r in pair)), html_out)}")
        except TraceError as exc:
            fail(str(exc))
    try:
        result = compare(runs)
    except FileNotFoundError as exc:
        fail(str(exc))
    if out:
        from agentic_rag.eval.compare import write_plots

        plots = None if is_stream(out) else write_plots(result, out.parent)  # a stream has no folder to put them in
        write_output(out, to_markdown(result, title, plots))
        console.print(f"written {out}")
    from agentic_rag.eval.metrics import metric_label

    table = Table(title=title)
    table.add_column("metric")
    for r in result["runs"]:
        table.add_column(r["name"])
    table.add_column("meaning")
    for key in SUMMARY_KEYS:
        table.add_row(key, *[str(r["summary"].get(key, "")) for r in result["runs"]], escape(metric_label(key)))
    console.print(table)
    for p in result["paired"]:
        console.print(paired_sentence(p), highlight=False)




@app.command("rejudge")
def rejudge_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Finished run folders, judged again in place.")],
) -> None:
    """Score finished runs again with today's judge, with no model call: results, summary and report rewritten."""
    from agentic_rag.eval.lock import RunFolderBusy
    from agentic_rag.eval.rejudge import rejudge_run

    for run in runs:
        was = _summary_score(run)
        try:
            summary, changed = rejudge_run(run)
        except (FileNotFoundError, RunFolderBusy) as exc:
            fail(str(exc))
        console.print(f"{escape(str(run))}: {changed} judgements changed; score {was} -> {summary.get('score')}",
                      highlight=False)


def _summary_score(run: Path):
    import json

    try:
        return json.loads((run / "summary.json").read_text()).get("score")
    except (OSError, ValueError, AttributeError):
        return None


@app.command("graph")
def graph_cmd(
    system: Annotated[str, typer.Option("--system", help="agent or baseline.")] = "agent",
    fmt: Annotated[str, typer.Option("--format", help="mermaid, ascii, dot or png (png needs --out).")] = "mermaid",
    out: Annotated[Optional[str], typer.Option("--out", help="Write the drawing to this file.")] = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Draw a graph's shape offline: Mermaid or DOT text, ASCII art, or a PNG (Graphviz where installed),
    the nodes grouped by their role in the design and each decision's edge labelled with it.
    With EXTENSIONS set, the agent is drawn with its extension nodes in place."""
    from agentic_rag.trace.draw import BINARY_FORMATS, DrawError, draw

    settings = load_settings(preset, override)
    if fmt in BINARY_FORMATS and out is None:
        fail(f"--format {fmt} writes a file: give --out FILE")
    out = output_file(out, "--out")
    try:
        drawing = draw(get_graph(system, settings), fmt)
    except (ValueError, DrawError) as exc:
        fail(str(exc))
    if out is None:
        print(drawing)
        return
    write_output(out, drawing)
    console.print(f"written {out}")


@app.command("trace")
def trace_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `eval`.")],
    qid: Annotated[Optional[str], typer.Option("--id", help="One question (its id, a start of it no other id shares, "
                                                           "or @N for row N from 0): its timeline.")] = None,
    html_out: Annotated[Optional[str], typer.Option("--html", help="Write a self-contained HTML page of the run "
                                                                   "(a file, or a stream such as /dev/stdout).")] = None,
    brief: Annotated[bool, typer.Option("--brief", help="With --id: one line per node, no passages or checks.")] = False,
    steps: Annotated[bool, typer.Option("--steps", help="With --id: list the checkpointed steps.")] = False,
    step: Annotated[Optional[int], typer.Option("--step", help="With --id: the graph state at this checkpointed step.")] = None,
    otlp: Annotated[Optional[str], typer.Option("--otlp", help="Send the run's spans (or --id's) to this OTLP/HTTP collector "
                                                              "(docs/opentelemetry.md).")] = None,
) -> None:
    """Inspect a run: a table of its questions, one question node by node, its checkpoints, or an HTML page."""
    from agentic_rag.trace.run import TraceError, load_run

    html_out = output_file(html_out, "--html")
    try:
        run = load_run(run_dir)
        if otlp is not None:
            from agentic_rag.trace.otel import send_cli

            console.print(send_cli(run, otlp, qid))
            return
        if html_out is not None:
            from agentic_rag.trace.html import write_html

            console.print(f"written {write_html(run, html_out, _run_graph(run, True))}")
            return
        if steps or step is not None:
            if qid is None:
                fail("--steps and --step need --id QUESTION")
            _print_steps(run, run.row(qid)["id"], step)
            return
        if qid is not None:
            from agentic_rag.trace.text import print_question

            print_question(console, run, qid, detail=not brief)
            return
    except TraceError as exc:
        fail(str(exc))
    from agentic_rag.trace.text import run_table

    console.print(run_table(run))


def _run_graph(run, missing_ok: bool = False):
    """The graph the run used, extensions included; one that cannot be rebuilt is a TraceError or, with
    ``missing_ok`` (a page goes without it), said and None."""
    from agentic_rag.trace.run import TraceError

    extended = {k: run.settings[k] for k in ("EXTENSIONS", "EXTENSION_SETTINGS") if run.settings.get(k)}
    try:
        return get_graph(run.system or "agent", Settings.load(overrides=extended) if extended else None)
    except (SettingsError, ValueError) as exc:
        if not missing_ok:
            raise TraceError(f"the run's graph cannot be rebuilt: {exc}") from None
        err.print(f"the graph of {run.path.name} cannot be rebuilt ({exc}); its page goes without it")


def _print_steps(run, qid: str, step: int | None) -> None:
    """The checkpointed steps of one question, or the state at one of them, in the graph the run used."""
    from agentic_rag.trace.steps import checkpoint_file, print_step, print_steps

    path = checkpoint_file(run)
    graph = _run_graph(run)
    bound = load_settings(None, None).paths.MAX_CHECKPOINT_BYTES  # this machine's bound, not the run's
    if step is None:
        print_steps(console, graph, path, qid, bound)
    else:
        print_step(console, err, graph, path, qid, step, run.settings.get("TRACE_TEXT_CHARS", 240), bound)


@app.command("settings")
def show_settings(
    preset: PresetOpt = None,
    override: OverrideOpt = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="One markdown table per section (docs/configuration.md).")] = False,
) -> None:
    """Print every setting by section: its value, unit, where the value comes from, and meaning."""
    from agentic_rag.configuration import SECTIONS, meaning_of, setting_sources, unit_of

    settings = load_settings(preset, override)
    values, sources = settings.public_dump(), setting_sources(preset, override or [])
    rows = [(section, name, str(values[name]), unit_of(field), sources[name], meaning_of(field))
            for section, model in SECTIONS.items() for name, field in model.model_fields.items()]
    if settings.agent.EXTENSIONS:  # each configured extension's own settings, as EXTENSION_SETTINGS sets them
        from agentic_rag.extensions import load_extensions

        for ext in load_extensions(settings):
            options = ext.options(settings)
            given = settings.agent.EXTENSION_SETTINGS.get(ext.name, {})
            for name, field in (type(options).model_fields.items() if options is not None else ()):
                rows.append(("extension", f"{ext.name}.{name}", str(getattr(options, name)), unit_of(field),
                             sources["EXTENSION_SETTINGS"] if name in given else "default", meaning_of(field)))
    if markdown:
        typer.echo(settings_markdown(rows))
        return
    table = Table(title="settings")
    for col in ("section", "name", "value", "unit", "source", "meaning"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table)
    if settings.llm.LLM_BACKEND == "local":  # what the machine made of a setting that depends on it
        from agentic_rag.llm.dtype import local_dtype

        choice = local_dtype(settings)
        console.print(f"LLM_DTYPE={escape(settings.llm.LLM_DTYPE)}: the local model computes in {choice.dtype} here "
                      f"({escape(choice.reason)})", soft_wrap=True, highlight=False)


def settings_markdown(rows: list[tuple[str, ...]]) -> str:
    """The settings as markdown, one table per section, with the section's own description; paths
    under the user cache are written from ``<user cache>`` and others under the home folder from
    ``~``, so the tables read the same on every machine and for every user's environment."""
    from agentic_rag.checks import checks_markdown
    from agentic_rag.configuration import FIELD_SECTIONS, PER_REQUEST_SETTINGS, SECTIONS, USER_CACHE, unit_of

    home, cache = str(Path.home()), str(USER_CACHE)
    out: list[str] = []
    for section in dict.fromkeys(r[0] for r in rows):
        doc = SECTIONS[section].__doc__ if section in SECTIONS else "The configured extensions' own settings."
        out += [f"### {section}", "", " ".join((doc or "").split()), "",
                "| setting | value | unit | per request | meaning |", "|---|---|---|---|---|"]
        for _, name, value, unit, _, meaning in (r for r in rows if r[0] == section):
            if value.startswith(cache):
                value = "<user cache>" + value[len(cache):]
            elif value.startswith(home):
                value = "~" + value[len(home):]
            asked = "yes" if section in SECTIONS and name in PER_REQUEST_SETTINGS else ""
            cells = [f"`{name}`", f"`{value}`", unit, asked, meaning]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")
    units = {name: unit_of(SECTIONS[section].model_fields[name]) for name, section in FIELD_SECTIONS.items()}
    out += ["### checks", "", "What each threshold is held against (agentic_rag/checks.py): a reading passes when it reaches "
            "its setting; a check whose on-switch is off does not apply.", "", checks_markdown(units), ""]
    return "\n".join(out).rstrip() + "\n"


# -- prepare -------------------------------------------------------------------------------------
