"""Audit and strength reports as JSON, Markdown and one self-contained HTML page.

The HTML page embeds its plots (matplotlib, Agg backend) as base64 PNG and its style inline, so
it is one file that opens anywhere, offline.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from referee.audit.judging import COST_NOTE, cost_line, cost_table
from referee.audit.run import AuditReport, ProbeResult, RowResult
from referee.audit.strength import StrengthReport

MAX_LISTED = 50


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _short(text: str | None, n: int = 90) -> str:
    text = (text or "").replace("\n", "⏎")
    return text if len(text) <= n else text[: n - 1] + "…"


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def _row_cells(r: RowResult) -> list[Any]:
    return [r.id, r.category, f"{r.expected:g}", _score(r.score), r.status, _short(r.reason, 60)]


_ROW_HEADER = ("id", "category", "expected", "score", "status", "reason")
_PROBE_HEADER = ("battery", "probe", "attack", "verifier", "score", "status", "result")


def _probe_cells(p: ProbeResult) -> list[Any]:
    want = "control (must be 1)" if p.control else f"≤ {p.max_score:g}"
    return [
        p.battery,
        p.name,
        p.attack,
        p.verifier,
        _score(p.score),
        p.status,
        ("pass " if p.passed else "FAIL ") + want,
    ]


def _listing(rows: Sequence[RowResult]) -> list[list[Any]]:
    return [_row_cells(r) for r in rows[:MAX_LISTED]]


# ---- audit: Markdown -----------------------------------------------------------------------


def audit_markdown(report: AuditReport, *, title: str | None = None, html_name: str | None = None) -> str:
    c = report.confusion
    lat = report.latency
    failed_probes = [p for p in report.probes if not p.passed]
    out = [f"# {title or 'Audit of ' + report.verifier}", ""]
    out.append(f"Verifier `{report.verifier}` on `{report.source}` ({report.rows} rows), {report.created}.")
    if html_name:
        out.append(f"The [HTML report]({html_name}) has the plots.")
    out += [
        "",
        f"- **accuracy** {report.accuracy:.2%} ({report.rows - len(report.false_positives) - len(report.false_negatives) - len(report.errors)}/{report.rows} rows agree with their label)",
        f"- **false positives** (scored above the label) {len(report.false_positives)}, "
        f"false negatives {len(report.false_negatives)}, error verdicts {len(report.errors)}",
        f"- confusion at 0.5: TP {c.tp} · FP {c.fp} · TN {c.tn} · FN {c.fn} · error {c.error}",
        f"- latency per verdict: p50 {lat.p50_ms:.2f} ms · p99 {lat.p99_ms:.2f} ms · max {lat.max_ms:.2f} ms",
        f"- probe battery: {sum(p.passed for p in report.probes)}/{len(report.probes)} probes pass"
        + ("" if report.probes_passed else f" — **{len(failed_probes)} FAIL**"),
        *([f"- **judge cost**: {cost_line(report.judge)}"] if report.judge else []),
        f"- wall time {report.wall_s:.1f} s",
        "",
        "## False positives",
        "",
    ]
    out += _md_table(_ROW_HEADER, _listing(report.false_positives)) if report.false_positives else ["None."]
    if report.judge or report.judge_probes:
        out += [
            "",
            "## Judge cost",
            "",
            *_md_table(*cost_table(report.judge, report.judge_probes)),
            "",
            COST_NOTE,
        ]
    out += ["", "## Probe battery", ""]
    batteries = [
        [name, s.probes, s.passed, ", ".join(s.failed) or "—"] for name, s in report.batteries.items()
    ]
    out += (
        _md_table(("battery", "probes", "passed", "failed"), batteries) if batteries else ["No probes run."]
    )
    if failed_probes:
        out += ["", "Failing probes:", ""]
        out += _md_table(
            (*_PROBE_HEADER, "response"), [[*_probe_cells(p), _short(p.response)] for p in failed_probes]
        )
    out += ["", "## Per category", ""]
    out += _md_table(
        ("category", "rows", "accuracy", "false positives", "false negatives", "errors"),
        [
            [k, s.rows, f"{s.accuracy:.1%}", s.false_positives, s.false_negatives, s.errors]
            for k, s in report.per_category.items()
        ],
    )
    out += ["", "## False negatives", ""]
    out += _md_table(_ROW_HEADER, _listing(report.false_negatives)) if report.false_negatives else ["None."]
    out += ["", "## Error verdicts", ""]
    out += _md_table(_ROW_HEADER, _listing(report.errors)) if report.errors else ["None."]
    out.append("")
    return "\n".join(out)


# ---- plots ---------------------------------------------------------------------------------


def _png(draw: Callable[[Any], None], size: tuple[float, float] = (6.4, 3.6)) -> str:
    """The plot as base64 PNG; "" without matplotlib (the `train` extra), as in the service's
    image: the page then says so instead of showing it."""
    try:
        import matplotlib
    except ImportError:
        return ""

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=size, dpi=100)
    try:
        draw(ax)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def audit_plots(report: AuditReport) -> dict[str, str]:
    """Plot title -> base64 PNG."""
    plots: dict[str, str] = {}
    cats = list(report.per_category.items())

    def categories(ax: Any) -> None:
        names = [k for k, _ in cats]
        ax.barh(
            names,
            [s.accuracy for _, s in cats],
            color=["#c0392b" if s.false_positives else "#2e86c1" for _, s in cats],
        )
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy (red: the category has false positives)")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=7)

    if cats:
        plots["Accuracy per category"] = _png(categories, (6.4, max(2.0, 0.22 * len(cats) + 1)))
    durations = [r.duration_ms for r in report.results if not r.error]

    def latency(ax: Any) -> None:
        ax.hist(durations, bins=40, color="#5d6d7e")
        ax.set_xlabel("verdict latency (ms)")
        ax.set_ylabel("rows")
        for q, value in (("p50", report.latency.p50_ms), ("p99", report.latency.p99_ms)):
            ax.axvline(value, color="#c0392b", linestyle="--")
            ax.annotate(q, (value, ax.get_ylim()[1] * 0.9), fontsize=8)

    if durations:
        plots["Latency"] = _png(latency)
    c = report.confusion

    def confusion(ax: Any) -> None:
        grid = [[c.tn, c.fp], [c.fn, c.tp]]
        ax.imshow(grid, cmap="Blues")
        for i in range(2):
            for j in range(2):
                ax.text(j, i, str(grid[i][j]), ha="center", va="center", fontsize=14)
        ax.set_xticks([0, 1], ["scored < 0.5", "scored ≥ 0.5"])
        ax.set_yticks([0, 1], ["label < 0.5", "label ≥ 0.5"])
        ax.set_title(f"error verdicts: {c.error}", fontsize=9)

    plots["Confusion"] = _png(confusion, (4.2, 3.4))
    if report.batteries:
        names = list(report.batteries)

        def probes(ax: Any) -> None:
            passed = [report.batteries[n].passed for n in names]
            failed = [report.batteries[n].probes - report.batteries[n].passed for n in names]
            ax.barh(names, passed, color="#27ae60", label="pass")
            ax.barh(names, failed, left=passed, color="#c0392b", label="fail")
            ax.set_xlabel("probes")
            ax.invert_yaxis()
            ax.legend(fontsize=8)
            ax.tick_params(axis="y", labelsize=8)

        plots["Probe battery"] = _png(probes, (6.4, max(2.0, 0.3 * len(names) + 1)))
    return plots


# ---- HTML ----------------------------------------------------------------------------------

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b2631}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}
th,td{border:1px solid #d5d8dc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f3f4}.fail{color:#c0392b;font-weight:600}.pass{color:#1e8449}
.figs{display:flex;flex-wrap:wrap;gap:1em}.figs figure{margin:0}code{background:#f4f6f6;padding:0 3px}
.summary li{margin:.2em 0}
"""


def _html_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], classes: Sequence[str] | None = None
) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figures(plots: dict[str, str]) -> str:
    plots = {title: png for title, png in plots.items() if png}
    if not plots:
        return "<p>No plots: they need matplotlib (<code>pip install 'referee[train]'</code>).</p>"
    return (
        '<div class="figs">'
        + "".join(
            f'<figure><img alt="{html.escape(t)}" src="data:image/png;base64,{png}"><figcaption>{html.escape(t)}</figcaption></figure>'
            for t, png in plots.items()
        )
        + "</div>"
    )


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def audit_html(report: AuditReport, *, title: str | None = None) -> str:
    title = title or f"Audit of {report.verifier}"
    c, lat = report.confusion, report.latency
    summary = [
        f"Verifier <code>{html.escape(report.verifier)}</code> on <code>{html.escape(report.source)}</code> ({report.rows} rows), {html.escape(report.created)}",
        f"<b>accuracy</b> {report.accuracy:.2%}; <b>false positives</b> {len(report.false_positives)}, false negatives {len(report.false_negatives)}, error verdicts {len(report.errors)}",
        f"confusion at 0.5: TP {c.tp} · FP {c.fp} · TN {c.tn} · FN {c.fn} · error {c.error}",
        f"latency: p50 {lat.p50_ms:.2f} ms · p99 {lat.p99_ms:.2f} ms · max {lat.max_ms:.2f} ms",
        f"probe battery: {sum(p.passed for p in report.probes)}/{len(report.probes)} pass",
        *([f"<b>judge cost</b>: {html.escape(cost_line(report.judge))}"] if report.judge else []),
    ]
    probes = sorted(report.probes, key=lambda p: p.passed)
    parts = [
        '<ul class="summary">' + "".join(f"<li>{s}</li>" for s in summary) + "</ul>",
        "<h2>False positives</h2>",
        _html_table(_ROW_HEADER, _listing(report.false_positives))
        if report.false_positives
        else "<p>None.</p>",
        *(
            [
                "<h2>Judge cost</h2>",
                _html_table(*cost_table(report.judge, report.judge_probes)),
                f"<p>{html.escape(COST_NOTE)}</p>",
            ]
            if report.judge or report.judge_probes
            else []
        ),
        "<h2>Plots</h2>",
        _figures(audit_plots(report)),
        "<h2>Probe battery</h2>",
        _html_table(
            (*_PROBE_HEADER, "response"),
            [[*_probe_cells(p), _short(p.response, 120)] for p in probes],
            ["" if p.passed else "fail" for p in probes],
        ),
        "<h2>Per category</h2>",
        _html_table(
            ("category", "rows", "accuracy", "false positives", "false negatives", "errors"),
            [
                [k, s.rows, f"{s.accuracy:.1%}", s.false_positives, s.false_negatives, s.errors]
                for k, s in report.per_category.items()
            ],
        ),
        "<h2>False negatives</h2>",
        _html_table(_ROW_HEADER, _listing(report.false_negatives))
        if report.false_negatives
        else "<p>None.</p>",
        "<h2>Error verdicts</h2>",
        _html_table(_ROW_HEADER, _listing(report.errors)) if report.errors else "<p>None.</p>",
    ]
    return _page(title, "".join(parts))


# ---- strength ------------------------------------------------------------------------------

_STRENGTH_HEADER = (
    "problem",
    "format",
    "tests",
    "reference",
    "kill rate",
    "killed/mutants",
    "trivial programs passing",
    "flag",
)


def _strength_rows(report: StrengthReport) -> list[list[Any]]:
    return [
        [
            p.id,
            p.format,
            p.tests if p.tests is not None else "—",
            p.reference_verdict or "—",
            "—" if p.kill_rate is None else f"{p.kill_rate:.0%}",
            f"{p.killed}/{p.mutants}",
            ", ".join(p.trivial_passing) or "none",
            "broken" if p.broken else ("weak tests" if p.weak else "ok"),
        ]
        for p in report.problems
    ]


def strength_markdown(
    report: StrengthReport, *, title: str | None = None, html_name: str | None = None
) -> str:
    weak, broken = report.weak, report.broken
    judged = [p for p in report.problems if p.kill_rate is not None]
    mean = sum(p.kill_rate or 0.0 for p in judged) / len(judged) if judged else 0.0
    out = [f"# {title or 'Test-suite strength'}", ""]
    out.append(
        f"`{report.source}`: {len(report.problems)} problems with a reference solution, {report.created}."
    )
    if html_name:
        out.append(f"The [HTML report]({html_name}) has the plot.")
    out += [
        "",
        f"- **weak tests**: {len(weak)} ({', '.join(weak) or 'none'})",
        f"- **broken** (the reference fails its tests): {len(broken)} ({', '.join(broken) or 'none'})",
        f"- mean kill rate {mean:.0%} over {sum(p.mutants for p in judged)} mutants; a problem is weak when a trivial program passes or more than {report.max_survival:.0%} of its mutants survive",
        f"- wall time {report.wall_s:.1f} s",
        "",
    ]
    out += _md_table(_STRENGTH_HEADER, _strength_rows(report))
    flagged = [p for p in report.problems if p.why]
    if flagged:
        out += ["", "## Why flagged", ""]
        for p in flagged:
            out.append(f"- **{p.id}**: " + "; ".join(p.why))
            out += [f"    - survives: {s}" for s in p.surviving]
    out.append("")
    return "\n".join(out)


def strength_html(report: StrengthReport, *, title: str | None = None) -> str:
    title = title or "Test-suite strength"
    problems = report.problems

    def kills(ax: Any) -> None:
        names = [p.id for p in problems]
        ax.barh(
            names,
            [p.kill_rate or 0.0 for p in problems],
            color=["#7f8c8d" if p.broken else "#c0392b" if p.weak else "#27ae60" for p in problems],
        )
        ax.axvline(1.0 - report.max_survival, color="#34495e", linestyle="--")
        ax.set_xlim(0, 1)
        ax.set_xlabel("mutant kill rate (red: weak tests, grey: broken; dashed: threshold)")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=8)

    plots = (
        {"Kill rate per problem": _png(kills, (6.4, max(2.0, 0.3 * len(problems) + 1)))} if problems else {}
    )
    details = []
    for p in problems:
        if not p.why:
            continue
        details.append(f"<h3>{html.escape(p.id)}</h3><p>{html.escape('; '.join(p.why))}</p>")
        shown = [r for r in p.programs if r.passed and r.kind != "reference"]
        if shown:
            details.append(
                _html_table(
                    ("program", "kind", "verdict", "what"),
                    [[r.name, r.kind, r.verdict or "", r.description] for r in shown],
                )
            )
    body = (
        f"<p><code>{html.escape(report.source)}</code>: {len(problems)} problems, {html.escape(report.created)}; "
        f"weak: {len(report.weak)}, broken: {len(report.broken)}; threshold: more than {report.max_survival:.0%} surviving mutants.</p>"
        + _html_table(
            _STRENGTH_HEADER, _strength_rows(report), ["fail" if p.weak or p.broken else "" for p in problems]
        )
        + _figures(plots)
        + "<h2>Flagged problems: programs that pass</h2>"
        + ("".join(details) or "<p>None.</p>")
    )
    return _page(title, body)


def write_reports(
    report: AuditReport | StrengthReport, out_dir: str | Path, stem: str, *, title: str | None = None
) -> dict[str, Path]:
    """`stem.json`, `stem.md` and `stem.html` in `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {kind: out / f"{stem}.{kind}" for kind in ("json", "md", "html")}
    paths["json"].write_text(report.to_json() + "\n", encoding="utf-8")
    if isinstance(report, AuditReport):
        md = audit_markdown(report, title=title, html_name=paths["html"].name)
        page = audit_html(report, title=title)
    else:
        md = strength_markdown(report, title=title, html_name=paths["html"].name)
        page = strength_html(report, title=title)
    paths["md"].write_text(md, encoding="utf-8")
    paths["html"].write_text(page, encoding="utf-8")
    return paths
