"""verl 0.9.1 loads the reward function on each of its paths, with verl's own loader.

`custom_fn` calls verl's `verl/trainer/ppo/reward.py::get_custom_reward_fn` (through
`verl/utils/import_utils.py::load_extern_object`): a `pkg://` path is imported by name; a file
path is executed under a module name of verl's own (`custom_module_<hash>`, not in
`sys.modules`); the function is wrapped in `functools.partial` with `reward_kwargs`, and a
coroutine function is awaited by the reward loop
(`verl/experimental/reward_loop/reward_manager/naive.py`), one call per sample, all concurrently.
The reward managers themselves are driven in test_verl_real.py.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import subprocess
import sys
from typing import Any

import httpx
import pytest

# verl ships reward functions to its workers with cloudpickle (the `dev` extra has it here).
cloudpickle = pytest.importorskip("cloudpickle", reason="needs the `dev` extra: pip install -e '.[dev]'")
pytest.importorskip(
    "verl",
    reason="needs verl: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from omegaconf import DictConfig  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402

import referee.trainer_adapter.verl as verl_module  # noqa: E402

PKG = "pkg://referee.trainer_adapter.verl"


def custom_fn(referee_url: str, name: str, path: str = PKG, **reward_kwargs: Any) -> Any:
    """What verl gives its reward manager for `reward.custom_reward_function.{path,name,reward_kwargs}`."""
    function = {"path": path, "name": name, "reward_kwargs": {"url": referee_url, **reward_kwargs}}
    return get_custom_reward_fn(DictConfig({"reward": {"custom_reward_function": function}}))


def groups_requests(url: str) -> float:
    """/v1/groups requests the service has answered so far (its Prometheus counter)."""
    total = 0.0
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("referee_http_requests_total{") and 'route="/v1/groups"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_pkg_path_async_function_batches_a_step_into_one_request(referee_url: str) -> None:
    fn = custom_fn(referee_url, "compute_score_async")
    assert inspect.iscoroutinefunction(fn)  # what the reward loop checks to await it natively
    before = groups_requests(referee_url)
    # The reward loop: one awaited call per sample, 256 at once (keyword arguments, as verl).
    results = await asyncio.gather(
        *(
            fn(
                data_source="openai/gsm8k",
                solution_str=f"so #### {i % 7}",
                ground_truth=str(i % 5),
                extra_info={},
            )
            for i in range(256)
        )
    )
    assert results == [1.0 if i % 7 == i % 5 else 0.0 for i in range(256)]
    assert 1 <= groups_requests(referee_url) - before <= 2  # one burst, not 256 requests


@pytest.mark.slow
def test_file_path_form_pickles_into_a_fresh_process(referee_url: str) -> None:
    """verl's file-path form: the module runs under verl's own name, then Ray ships the function
    with cloudpickle and PRIME's process pool with plain pickle. It must score in the worker as
    it does here (not silently 0)."""
    fn = custom_fn(referee_url, "compute_score", path=verl_module.__file__, verifier="math")
    assert fn("openai/gsm8k", "#### 72", "72") == 1.0
    worker = (  # one fresh process, both pickles (cloudpickle's output is a standard pickle)
        "import pickle, sys\n"
        "for fn in (pickle.load(sys.stdin.buffer), pickle.load(sys.stdin.buffer)):\n"
        "    print(fn('openai/gsm8k', 'it is #### 72', '72'), fn('openai/gsm8k', '#### 71', '72'))\n"
    )
    shipped = cloudpickle.dumps(fn) + pickle.dumps(fn)
    out = subprocess.run(
        [sys.executable, "-c", worker], input=shipped, capture_output=True, check=True, timeout=60
    )
    assert out.stdout.split() == [b"1.0", b"0.0"] * 2, out.stderr.decode()[-2000:]


def test_functions_pickle_by_reference_from_the_package(referee_url: str) -> None:
    for name in ("compute_score", "compute_score_batch", "compute_score_async"):
        for path in (PKG, verl_module.__file__):
            fn = custom_fn(referee_url, name, path=path)
            assert fn.args[0] is getattr(verl_module, name)  # the file form hands out the package's
            assert cloudpickle.loads(cloudpickle.dumps(fn)).args[0] is getattr(verl_module, name)
