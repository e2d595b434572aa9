"""Verifier audits: accuracy on labelled rows and probe batteries (`run`, `probes`), what a
judge verifier's calls cost (`judging`), code test-suite strength (`strength`, `mutate`), and
their reports (`report`).

Transport-free: `run_audit` and `run_strength` take a `ScoreGroups` callable (in-process
scoring, a running service, or a service's own scorer) and a `progress(done, total)` callback,
so a service can run them as background jobs.
"""

from referee.audit.backend import ScoreGroups, in_process, over_http, scorer_backend
from referee.audit.data import (
    LabelledFileError,
    LabelledRow,
    load_labelled,
    parse_verifier,
    read_rows,
    row_from_mapping,
)
from referee.audit.judging import JudgeCost
from referee.audit.mutate import Mutant, mutants
from referee.audit.probes import Graded, Probe, battery, generic, judge_battery
from referee.audit.report import audit_html, audit_markdown, strength_html, strength_markdown, write_reports
from referee.audit.run import AuditReport, ProbeResult, RowResult, run_audit
from referee.audit.strength import Problem, ProblemStrength, StrengthReport, load_problems, run_strength

__all__ = [
    "AuditReport",
    "Graded",
    "JudgeCost",
    "LabelledFileError",
    "LabelledRow",
    "Mutant",
    "Probe",
    "ProbeResult",
    "Problem",
    "ProblemStrength",
    "RowResult",
    "ScoreGroups",
    "StrengthReport",
    "audit_html",
    "audit_markdown",
    "battery",
    "generic",
    "in_process",
    "judge_battery",
    "load_labelled",
    "load_problems",
    "mutants",
    "over_http",
    "parse_verifier",
    "read_rows",
    "row_from_mapping",
    "run_audit",
    "run_strength",
    "scorer_backend",
    "strength_html",
    "strength_markdown",
    "write_reports",
]
