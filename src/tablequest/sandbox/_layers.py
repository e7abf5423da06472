"""Turn what a child measured about itself into the list of isolation layers in force."""

from __future__ import annotations

import os
from typing import Any

from ._launch import Plan
from ._process import HARD_KILL_GRACE, Limits


def _mb(value: Any) -> str:
    return "unlimited" if value in (-1, None) else f"{int(value) >> 20} MB"


def _limit(value: Any) -> str:
    return "unlimited" if value in (-1, None) else str(value)


def describe_rlimits(rlimits: dict[str, Any]) -> str:
    """`AS=2048 MB, CPU=63 s, ...` from the child's (soft, hard) pairs."""

    def soft(name: str) -> Any:
        pair = rlimits.get(name)
        return pair[0] if isinstance(pair, list | tuple) and pair else None

    return (
        f"address space {_mb(soft('AS'))}, CPU {_limit(soft('CPU'))} s (session total), "
        f"file size {_mb(soft('FSIZE'))}, open files {_limit(soft('NOFILE'))}, "
        f"processes/threads {_limit(soft('NPROC'))}, core dumps {_limit(soft('CORE'))}"
    )


Row = tuple[str, bool, str]


def build_layers(plan: Plan, limits: Limits, facts: dict[str, Any]) -> list[Row]:
    """(name, active, detail) for every layer, from the plan and the child's facts."""
    return [
        *_isolation_rows(plan, limits, facts),
        *_privilege_rows(plan, facts),
        *_kernel_rows(limits, facts),
        *_host_rows(plan, limits),
    ]


def _isolation_rows(plan: Plan, limits: Limits, facts: dict[str, Any]) -> list[Row]:
    """The process, its namespaces, its network and its view of the file system."""
    interfaces = [str(i) for i in facts.get("interfaces") or []]
    userns = " plus a user namespace" if facts.get("userns") else ""
    degraded = "; ".join(plan.notes)
    env = ", ".join(str(k) for k in facts.get("env") or [])
    process = (
        f"python -I in its own process (pid {facts.get('pid')} as it sees itself), "
        f"clean environment ({env}), empty working directory {facts.get('cwd')}"
    )
    ns = {
        "bwrap": "bubblewrap: new pid, network, ipc, uts and mount namespaces" + userns,
        "unshare": "degraded (opted in): unshare: new pid, network, ipc, uts and mount "
        "namespaces" + userns,
        "off": "degraded (opted in): none" + (f" ({degraded})" if degraded else ""),
    }[plan.mode]
    no_net = not limits.network and all(i == "lo" for i in interfaces)
    net = f"interfaces visible to the child: {', '.join(interfaces) or 'none'}"
    if limits.network:
        net = "network allowed by configuration; " + net
    if plan.mode == "bwrap":
        view = f"read-only minimal view; / holds only {', '.join(facts.get('root') or [])}"
    else:
        guards = "the unprivileged uid, Landlock" if facts.get("landlock") else "the uid"
        view = f"the host file system is mounted; {guards} and file permissions guard it"
    return [
        ("separate process", True, process),
        ("namespaces", plan.mode != "off", ns),
        ("network isolation", no_net, net),
        ("file-system view", plan.mode == "bwrap", view),
    ]


def _privilege_rows(plan: Plan, facts: dict[str, Any]) -> list[Row]:
    """Uid, capabilities and no_new_privs, as the child measured them."""
    status = facts.get("status") or {}
    host_uid = facts.get("outer_uid") if facts.get("userns") else facts.get("uid")
    caps = {k: str(status.get(k, "?")) for k in ("CapEff", "CapPrm", "CapInh", "CapAmb")}
    no_caps = all(v.strip("0") == "" for v in caps.values())
    detail = ", ".join(f"{k} {v}" for k, v in caps.items())
    return [
        _uid_layer(plan, facts, host_uid),
        ("no capabilities", no_caps, f"{detail}; bounding set {status.get('CapBnd')}"),
        ("no_new_privs", status.get("NoNewPrivs") == "1", f"{status.get('NoNewPrivs')}"),
    ]


def _kernel_rows(limits: Limits, facts: dict[str, Any]) -> list[Row]:
    """Landlock, rlimits, the single-thread lockdown, seccomp and the audit hook."""
    status = facts.get("status") or {}
    abi = int(facts.get("landlock") or 0)
    if abi:
        landlock = (
            f"Landlock ABI {abi}: reads limited to the Python install, /usr and the session, "
            "writes to the session"
            + (", TCP refused" if abi >= 4 and not limits.network else "")
            + (", signals to outside processes refused" if abi >= 6 else "")
        )
    elif not limits.landlock:
        landlock = "disabled by configuration"
    else:
        landlock = f"not available: {facts.get('landlock_error') or 'unknown reason'}"
    tasks = facts.get("tasks_at_lockdown")
    lockdown = f"{tasks} thread(s) when Landlock and seccomp were applied, before any import"
    if status.get("Seccomp") == "2":
        seccomp = (
            f"filter of {facts.get('seccomp_rules')} BPF instructions: fork/exec, sockets, "
            "ptrace, signals to other processes, mount/namespace/module calls refused"
        )
    elif not limits.seccomp:
        seccomp = "disabled by configuration"
    else:
        seccomp = f"not installed: {facts.get('seccomp_error') or 'unknown reason'}"
    audit = bool(facts.get("audit"))
    hook = (
        "a convenience, not a boundary: clear errors for subprocess/exec/fork, sockets, "
        "ctypes, signals, file access outside the session and the Python install"
        if audit
        else "disabled by configuration"
    )
    return [
        ("landlock", abi > 0, landlock),
        ("resource limits", True, describe_rlimits(facts.get("rlimits") or {})),
        ("lockdown before threads", tasks == 1, lockdown),
        ("seccomp", status.get("Seccomp") == "2", seccomp),
        ("audit hook", audit, hook),
    ]


def _host_rows(plan: Plan, limits: Limits) -> list[Row]:
    """What the host enforces: the kill, the disk budget, reply validation."""
    quota = plan.tmpfs or plan.mode == "bwrap"
    files = f" and {limits.max_files} files" if plan.tmpfs else " (no file-count cap)"
    disk = (
        f"session directory is a tmpfs capped at {limits.disk_mb} MB{files}"
        if quota
        else f"the host measures the session after each run and kills the child past "
        f"{limits.max_files} files or {limits.disk_mb} MB (no mount namespace for a tmpfs)"
    )
    replies = (
        f"replies size-capped ({limits.message_cap()} bytes), nesting-bounded, "
        "matched to their request id, validated, "
        f"stdout/value capped at {limits.max_output_bytes} characters, "
        f"at most {limits.max_figures} verified PNG figures of at most "
        f"{limits.max_figure_side} pixels a side; the child is stopped between runs"
    )
    kill = (
        f"TimeoutError in the child at the timeout, process group killed "
        f"{HARD_KILL_GRACE:g} s later"
    )
    return [
        ("wall-clock kill", True, kill),
        ("disk quota", quota, disk),
        ("untrusted replies", True, replies),
    ]


def _uid_layer(plan: Plan, facts: dict[str, Any], host_uid: Any) -> Row:
    """The child's uid: its own unused one (root host), or the host user's (no change)."""
    groups = facts.get("groups")
    who = f"uid {facts.get('uid')} in the sandbox, uid {host_uid} on the host, groups {groups}"
    if plan.drop_uid:
        unpriv = host_uid not in (None, 0) and not groups
        return "unprivileged uid", unpriv, who + " (an unused uid of its own)"
    unpriv = host_uid not in (None, 0) and host_uid == os.geteuid()
    return "unprivileged uid", unpriv, who + " (the host user's; no capabilities)"
