"""Multi-turn environments: an episode's task, the model's tool calls and messages stepped
through, the final answer judged by any verifier (`base` says what an environment is).

Built-in: `python` (tool calls run in the episode's code session) and one game per `logic.*`
checker; registered environments are declarative (`registry`). The `Runtime` owns one
`Environments`. Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.environments.base import (
    Action,
    Environment,
    EnvironmentKind,
    EpisodeDone,
    EpisodeNotFound,
    Reset,
    Step,
    UnknownEnvironment,
)
from referee.environments.episodes import Episode, EpisodeCounters, Episodes
from referee.environments.generators import GENERATORS, generate
from referee.environments.puzzles import PuzzleKind
from referee.environments.python_env import PYTHON_TOOL, CodeRunner, PythonKind, format_call
from referee.environments.registry import Environments, ProbeCheck, SessionsRunner

__all__ = [
    "GENERATORS",
    "PYTHON_TOOL",
    "Action",
    "CodeRunner",
    "Environment",
    "EnvironmentKind",
    "Environments",
    "Episode",
    "EpisodeCounters",
    "EpisodeDone",
    "EpisodeNotFound",
    "Episodes",
    "ProbeCheck",
    "PuzzleKind",
    "PythonKind",
    "Reset",
    "SessionsRunner",
    "Step",
    "UnknownEnvironment",
    "format_call",
    "generate",
]
