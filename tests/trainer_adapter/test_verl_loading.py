"""verl loads the reward function the way verl 0.9.1 does, on each of its paths.

`load_module` and `get_custom_reward_fn` below mirror verl 0.9.1's
`verl/utils/import_utils.py::load_module` and `verl/trainer/ppo/reward.py::get_custom_reward_fn`
(verl itself needs torch, tensordict and Ray to import, which these tests do not install):
a `pkg://` path is imported by name; a file path is executed under a module name of verl's own
(`custom_module_<hash>`), so cloudpickle copies its functions *by value* when Ray ships them; the
function is wrapped in `functools.partial` with `reward_kwargs`, and a coroutine function is
awaited by the reward loop (`verl/experimental/reward_loop/reward_manager/naive.py`), one call
per sample, all concurrently.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
from functools import partial
from typing import Any

import cloudpickle
import httpx

import referee.trainer_adapter.verl as verl_module

PKG_PATH_PREFIX = "pkg://"


def load_module(module_path: str) -> Any:
    if module_path.startswith(PKG_PATH_PREFIX):
        return importlib.import_module(module_path[len(PKG_PATH_PREFIX) :].replace("/", "."))
    spec = importlib.util.spec_from_file_location(
        f"custom_module_{hash(os.path.abspath(module_path))}", module_path
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _call_with_kwargs(raw_fn: Any, extra_kwargs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    return raw_fn(*args, **{**kwargs, **extra_kwargs})


async def _call_with_kwargs_async(
    raw_fn: Any, extra_kwargs: dict[str, Any], *args: Any, **kwargs: Any
) -> Any:
    return await raw_fn(*args, **{**kwargs, **extra_kwargs})


def get_custom_reward_fn(path: str, name: str, reward_kwargs: dict[str, Any]) -> Any:
    raw_fn = getattr(load_module(path), name)
    if not inspect.iscoroutinefunction(raw_fn):
        return partial(_call_with_kwargs, raw_fn, reward_kwargs)
    return partial(_call_with_kwargs_async, raw_fn, reward_kwargs)


def groups_requests(url: str) -> float:
    """/v1/groups requests the service has answered so far (its Prometheus counter)."""
    total = 0.0
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("referee_http_requests_total{") and 'route="/v1/groups"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_pkg_path_async_function_batches_a_step_into_one_request(referee_url: str) -> None:
    fn = get_custom_reward_fn(
        "pkg://referee.trainer_adapter.verl", "compute_score_async", {"url": referee_url}
    )
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


def test_file_path_form_survives_cloudpickle_into_a_fresh_process(referee_url: str) -> None:
    """verl's file-path form: the module runs under verl's own name and Ray ships the function
    by value. It must score in the worker as it does here (not silently 0)."""
    fn = get_custom_reward_fn(verl_module.__file__, "compute_score", {"url": referee_url, "verifier": "math"})
    assert fn("openai/gsm8k", "#### 72", "72") == 1.0
    shipped = cloudpickle.dumps(fn)
    worker = (
        "import pickle, sys\n"
        "fn = pickle.loads(sys.stdin.buffer.read())\n"
        "print(fn('openai/gsm8k', 'it is #### 72', '72'), fn('openai/gsm8k', '#### 71', '72'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", worker], input=shipped, capture_output=True, check=True, timeout=60
    )
    assert out.stdout.split() == [b"1.0", b"0.0"], out.stderr.decode()[-2000:]


def test_functions_pickle_by_reference_from_the_package(referee_url: str) -> None:
    for name in ("compute_score", "compute_score_batch", "compute_score_async"):
        fn = get_custom_reward_fn("pkg://referee.trainer_adapter.verl", name, {"url": referee_url})
        assert cloudpickle.loads(cloudpickle.dumps(fn)).args[0] is getattr(verl_module, name)
