"""The hardened container configuration every sandbox container is created with.

`tests/sandbox` checks it on a live container (docker inspect) and with hostile programs.
"""

from __future__ import annotations

from typing import Any

from referee.sandbox.settings import SandboxSettings

LABEL = "org.referee.sandbox"
# The supervisor starts as root with three capabilities and nothing else; every candidate
# process runs under a uid of its own (see in_container/supervisor.py), never as root.
SUPERVISOR_USER = "0:0"
SUPERVISOR_CAPS = ["SETUID", "SETGID", "KILL"]
WORKDIR = "/work"
SUPERVISOR_CMD = ["/usr/bin/python3", "-I", "-S", "-B", "/opt/referee/supervisor.py"]
# The only environment a candidate ever sees: nothing from the host.
CANDIDATE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": WORKDIR}
# Inodes of each scratch tmpfs (/work, /tmp): what a program may create there is what the
# supervisor must remove after it, within the program's slot. 16384 nested directories take
# about 0.15 s to remove; 250,000 took 5-7 s of CPU after the verdict. A Go build's cache
# takes about 350.
SCRATCH_INODES = 16384


def container_create_kwargs(api: Any, settings: SandboxSettings, image: str) -> dict[str, Any]:
    """Arguments of `APIClient.create_container` for one hardened sandbox container."""
    from docker.types import LogConfig, Ulimit

    memory = f"{settings.container_memory_mb()}m"
    file_size = settings.file_size_limit_mb << 20
    host_config = api.create_host_config(
        network_mode="none",  # no interface but loopback: connects and DNS fail at once
        cap_drop=["ALL"],
        cap_add=SUPERVISOR_CAPS,
        security_opt=["no-new-privileges:true"],  # the default seccomp profile stays on
        read_only=True,
        tmpfs={
            WORKDIR: f"rw,exec,nosuid,nodev,size={settings.workdir_size_mb}m,nr_inodes={SCRATCH_INODES},mode=1777",
            "/tmp": f"rw,noexec,nosuid,nodev,size={settings.tmp_size_mb}m,nr_inodes={SCRATCH_INODES},mode=1777",
        },
        ipc_mode="none",  # no /dev/shm: /work and /tmp are the only writable places
        mem_limit=memory,
        memswap_limit=memory,  # equal: no swap, so memory overruns end in an OOM kill
        nano_cpus=int(settings.cpus * 1e9),
        pids_limit=settings.max_processes + 1,  # + the supervisor
        ulimits=[
            Ulimit(name="nofile", soft=settings.open_files, hard=settings.open_files),
            Ulimit(name="fsize", soft=file_size, hard=file_size),
            Ulimit(name="core", soft=0, hard=0),
        ],
        # init=False on purpose: the supervisor is PID 1 and reaps every orphan itself; as
        # init it cannot be killed by the candidate (see in_container/supervisor.py).
        init=False,
        log_config=LogConfig(type="none"),  # results travel over the attach stream only
        privileged=False,
    )
    return {
        "image": image,
        "command": SUPERVISOR_CMD,
        "user": SUPERVISOR_USER,
        "working_dir": WORKDIR,
        "environment": dict(CANDIDATE_ENV),
        "hostname": "sandbox",
        "stdin_open": True,
        "tty": False,
        "labels": {LABEL: _instance(settings)},
        "host_config": host_config,
    }


def _instance(settings: SandboxSettings) -> str:
    if settings.instance is None:  # the pool claims one at start (sandbox/instance.py)
        raise ValueError("the sandbox instance is not set: start the pool first")
    return settings.instance
