"""A training run's faults, as a run meets them: the service killed and restarted, every
sandbox container killed, every core saturated -- while trainer-like clients keep scoring.

    .venv/bin/python -m bench.bench_faults [--clients 32] [--outage-s 10] [--hog-factor 8]

Starts `referee serve` (Docker sandbox) on a fixed port and runs `--clients` clients (half
sending math requests of 8 one-answer groups, half code groups of 8 programs) that score
labelled groups through `referee.client.AsyncClient` -- the trainer adapters' own path,
with its default patience -- until the schedule below is over:

    baseline        no fault                           (the reference throughput)
    restart         SIGKILL the service, restart it `--outage-s` later on the same port
    containers      `docker rm -f` every sandbox container of the service at once
    saturated       busy loops on every core (`--hog-factor` per core) for `--saturate-s`
    recovered       no fault again
    drain           no new requests; those in flight are answered (bounded by `--drain-s`)

Every response is labelled (the development sets: code pass fractions, math true/false), so
each verdict is checked. Reported per phase and class: requests answered per second in it and
the ratio to the baseline phase of the same run, and the latency of the requests sent in it (a request waits
out an outage, so its latency is where a fault shows); and over the whole run: trainer crashes (an
exception out of the client: a trainer would have died), right answers scored 0, any other
verdict that disagrees with its label, masked verdicts (status "error": the trainer skips
them, a cost but not a wrong reward) and lost requests (sent, never answered). The goal
(issue 27): 0 crashes, 0 right answers scored 0, 0 wrong verdicts, 0 lost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.data import devset
from tests.support.service_process import ServiceProcess

from bench.bench_mixed_load import percentile
from referee.client import AsyncClient

INSTANCE = "bench-faults"
READY_WITHIN_S = 120.0  # a start with the sandbox: the pool's first containers
LABEL = "org.referee.sandbox"
CODE_GROUP = 8  # samples of one program per group (a comment apart, so none is deduplicated)
MATH_GROUPS = 8  # one-sample math groups per request
PHASES = ("baseline", "restart", "containers", "saturated", "recovered", "drain")
# Client i sends requests of class i mod 2 (as bench_mixed_load does): a slow code group must not
# hide whether math verdicts kept flowing through a fault, and the other way round.
CLASSES = ("math", "code")
Body = tuple[list[dict[str, Any]], list[list[float]], list[str]]


@dataclass
class Tally:
    sent: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    # per class: answers by the phase in which they came (throughput), and seconds to each
    # answer by the phase its request was sent in
    served: dict[str, dict[str, int]] = field(
        default_factory=lambda: {c: dict.fromkeys(PHASES, 0) for c in CLASSES}
    )
    latency: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {c: {p: [] for p in PHASES} for c in CLASSES}
    )
    verdicts: int = 0
    crashes: list[str] = field(default_factory=list)
    right_scored_zero: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)


# An honest program per language (the sum of the integers on stdin): compilers and runtimes
# are what a loaded node slows down most (rustc, javac, node), so each language is in the mix.
SUM_PROGRAMS = {
    "python": "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
    "c": '#include <stdio.h>\nint main(void){long long s=0,x;while(scanf("%lld",&x)==1)s+=x;printf("%lld\\n",s);return 0;}\n',
    "cpp": "#include <iostream>\nint main(){long long s=0,x;while(std::cin>>x)s+=x;std::cout<<s<<std::endl;}\n",
    "java": (
        "import java.util.*;\npublic class Main{public static void main(String[] a){"
        "Scanner in=new Scanner(System.in);long s=0;while(in.hasNextLong())s+=in.nextLong();"
        "System.out.println(s);}}\n"
    ),
    "javascript": (
        "const t=require('fs').readFileSync(0,'utf8').split(/\\s+/).filter(Boolean);"
        "console.log(t.reduce((s,x)=>s+Number(x),0));\n"
    ),
    "go": (
        'package main\nimport "fmt"\nfunc main(){var s,x int64\nfor{if _,e:=fmt.Scan(&x);e!=nil{break}\ns+=x}\n'
        "fmt.Println(s)}\n"
    ),
    "rust": (
        "use std::io::Read;\nfn main(){let mut t=String::new();std::io::stdin().read_to_string(&mut t).unwrap();"
        'let s:i64=t.split_whitespace().map(|x|x.parse::<i64>().unwrap()).sum();println!("{}",s);}\n'
    ),
}


def sum_tests(rng: random.Random) -> list[dict[str, str]]:
    tests = []
    for _ in range(5):
        numbers = [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 20))]
        tests.append({"input": " ".join(map(str, numbers)) + "\n", "output": f"{sum(numbers)}\n"})
    return tests


def workload(seed: int = 0) -> dict[str, list[Body]]:
    """Per class, (groups, expected scores per group, row ids) of each body a client may send."""
    rng = random.Random(seed)
    bodies: list[Body] = []
    for row in devset("code").rows:
        reference = {"language": row["language"], "test_format": row["test_format"], "tests": row["tests"]}
        group = {
            "verifier": "code",
            "reference": reference,
            "options": {"reward": "fraction"},
            "responses": [
                f"{row['candidate']}\n{_comment(row['language'])} sample {i}\n" for i in range(CODE_GROUP)
            ],
        }
        bodies.append(([group], [[row["expected_pass_fraction"]] * CODE_GROUP], [row["id"]]))
    for language, program in SUM_PROGRAMS.items():
        for variant in range(4):
            reference = {"language": language, "tests": sum_tests(rng)}
            responses = [f"{program}{_comment(language)} sample {variant}.{i}\n" for i in range(CODE_GROUP)]
            group = {
                "verifier": "code",
                "reference": reference,
                "options": {"reward": "fraction"},
                "responses": responses,
            }
            bodies.append(([group], [[1.0] * CODE_GROUP], [f"sum_{language}_{variant}"]))
    code, bodies = bodies, []
    math_rows = devset("math").rows
    for _ in range(len(code)):
        rows = rng.sample(math_rows, MATH_GROUPS)
        groups = [{"verifier": "math", "reference": r["gold"], "responses": [r["response"]]} for r in rows]
        bodies.append((groups, [[float(r["expected"])] for r in rows], [r["id"] for r in rows]))
    return {"math": bodies, "code": code}


def _comment(language: str) -> str:
    return "#" if language == "python" else "//"


def kill_sandbox_containers() -> int:
    import docker

    engine = docker.from_env()
    try:
        containers = engine.containers.list(all=True, filters={"label": f"{LABEL}={INSTANCE}"})
        for container in containers:
            container.remove(force=True)
        return len(containers)
    finally:
        engine.close()


def saturate(cores: int, factor: int) -> list[subprocess.Popen[bytes]]:
    """Busy loops on every core: the node's load becomes cores * factor."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores * factor)]


async def client_loop(
    client: AsyncClient,
    kind: str,
    bodies: list[Body],
    phase: list[str],
    done: asyncio.Event,
    tally: Tally,
    seed: int,
) -> None:
    rng = random.Random(seed)
    while not done.is_set():
        groups, expected, ids = rng.choice(bodies)
        sent_in, sent_at = phase[0], time.monotonic()
        tally.sent[sent_in] += 1
        try:
            result = await client.score_groups(groups)
        except Exception as exc:  # what would have ended a training run
            tally.crashes.append(f"{sent_in}: {exc!r}"[:300])
            continue
        tally.served[kind][phase[0]] += 1
        tally.latency[kind][sent_in].append(time.monotonic() - sent_at)
        for group, wanted, row_id in zip(result.groups, expected, ids, strict=True):
            for verdict, label in zip(group.verdicts, wanted, strict=True):
                tally.verdicts += 1
                if verdict.status == "error":
                    tally.masked.append(f"{sent_in} {row_id}: {verdict.reason}"[:300])
                elif label > 0 and verdict.score == 0:
                    tally.right_scored_zero.append(f"{sent_in} {row_id}: {verdict.reason}"[:300])
                elif abs(verdict.score - label) > 5e-5:
                    tally.disagreements.append(f"{sent_in} {row_id}: {verdict.score} vs {label}")


async def run(args: argparse.Namespace, service: ServiceProcess) -> tuple[Tally, dict[str, float]]:
    bodies = workload()
    tally, phase, done = Tally(), ["baseline"], asyncio.Event()
    durations: dict[str, float] = {}
    async with AsyncClient(service.url, timeout=600) as client:
        clients = [
            asyncio.create_task(
                client_loop(client, CLASSES[seed % 2], bodies[CLASSES[seed % 2]], phase, done, tally, seed)
            )
            for seed in range(args.clients)
        ]
        loop = asyncio.get_running_loop()

        async def enter(name: str, action: Any = None) -> None:
            durations[phase[0]] = time.monotonic() - entered[0]
            phase[0], entered[0] = name, time.monotonic()
            print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)
            if action is not None:
                await loop.run_in_executor(None, action)

        entered = [time.monotonic()]
        await asyncio.sleep(args.phase_s)

        def restart() -> None:
            service.kill()
            time.sleep(args.outage_s)
            service.start(ready_within_s=READY_WITHIN_S)

        await enter("restart", restart)
        await asyncio.sleep(args.phase_s)
        await enter("containers", kill_sandbox_containers)
        await asyncio.sleep(args.phase_s)
        hogs = saturate(os.cpu_count() or 1, args.hog_factor)
        try:
            await enter("saturated")
            await asyncio.sleep(args.saturate_s)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        await enter("recovered")
        await asyncio.sleep(args.phase_s)
        await enter("drain")
        done.set()
        # Requests in flight are answered, not abandoned: a bounded wait, then they are lost.
        _finished, pending = await asyncio.wait(clients, timeout=args.drain_s)
        durations[phase[0]] = time.monotonic() - entered[0]
        for task in pending:
            task.cancel()
    return tally, durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--phase-s", type=float, default=30.0, help="length of the fault-free phases")
    parser.add_argument("--outage-s", type=float, default=10.0)
    parser.add_argument("--saturate-s", type=float, default=30.0)
    parser.add_argument("--hog-factor", type=int, default=8, help="busy loops per core while saturated")
    parser.add_argument("--drain-s", type=float, default=300.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="referee-bench-faults-") as state_dir:
        # The same service across the restart: its port, its databases and sandbox state
        # (gone after the run), its sandbox instance label.
        service = ServiceProcess(
            Path(state_dir),
            REFEREE_SANDBOX="true",
            REFEREE_WORKERS=str(os.cpu_count() or 1),
            REFEREE_LOG_LEVEL="warning",
            REFEREE_SANDBOX_INSTANCE=INSTANCE,
            XDG_DATA_HOME=state_dir,
        )
        service.start(ready_within_s=READY_WITHIN_S)
        try:
            time.sleep(5)  # the sandbox pool fills at start-up
            tally, durations = asyncio.run(run(args, service))
        finally:
            service.stop()
    answered = sum(sum(by_phase.values()) for by_phase in tally.served.values())
    lost = sum(tally.sent.values()) - answered - len(tally.crashes)
    print(
        f"\n{args.clients} clients; outage {args.outage_s:g} s; load {args.hog_factor}x cores while saturated"
    )
    print("requests/s: answers received in the phase (x: against the baseline phase);")
    print("latency p50/p99: of the requests sent in the phase (a request waits out a fault)")
    header = "".join(f" {kind + ' req/s':>12} {'x':>6} {'p50/p99 s':>12}" for kind in CLASSES)
    print(f"{'phase':11} {'seconds':>7}{header}")
    for name in PHASES:
        line = f"{name:11} {durations[name]:7.1f}"
        for kind in CLASSES:
            rate = tally.served[kind][name] / durations[name]
            base = tally.served[kind]["baseline"] / durations["baseline"]
            times = tally.latency[kind][name]
            spread = f"{percentile(times, 0.5):.1f}/{percentile(times, 0.99):.1f}" if times else "-"
            line += f" {rate:12.2f} {rate / base if base else float('nan'):5.2f}x {spread:>12}"
        print(line)
    print(f"verdicts checked against their labels: {tally.verdicts}")
    for title, items in (
        ("trainer crashes (exceptions out of the client)", tally.crashes),
        ("right answers scored 0", tally.right_scored_zero),
        ("other verdicts that disagree with their label", tally.disagreements),
        ("masked verdicts (status error, skipped by the trainer)", tally.masked),
    ):
        print(f"{title}: {len(items)}")
        for item in items[:5]:
            print(f"    {item}")
    print(f"lost requests (sent, never answered): {lost}")


if __name__ == "__main__":
    main()
