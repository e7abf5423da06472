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


def build_layers(plan: Plan, limits: Limits, facts: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """(name, active, detail) for every layer, from the plan and the child's facts."""
    status = facts.get("status") or {}
    interfaces = [str(i) for i in facts.get("interfaces") or []]
    userns = bool(facts.get("userns"))
    host_uid = facts.get("outer_uid") if userns else facts.get("uid")
    degraded = "; ".join(plan.notes)
    out: list[tuple[str, bool, str]] = []
    env = ", ".join(str(k) for k in facts.get("env") or [])
    out.append(
        (
            "separate process",
            True,
            f"python -I in its own process (pid {facts.get('pid')} as it sees itself), "
            f"clean environment ({env}), empty working directory {facts.get('cwd')}",
        )
    )
    ns = {
        "bwrap": "bubblewrap: new pid, network, ipc, uts and mount namespaces"
        + (" plus a user namespace" if userns else ""),
        "unshare": "degraded (opted in): unshare: new pid, network, ipc, uts and mount "
        "namespaces" + (" plus a user namespace" if userns else ""),
        "off": "degraded (opted in): none" + (f" ({degraded})" if degraded else ""),
    }[plan.mode]
    out.append(("namespaces", plan.mode != "off", ns))
    no_net = not limits.network and all(i == "lo" for i in interfaces)
    net = f"interfaces visible to the child: {', '.join(interfaces) or 'none'}"
    if limits.network:
        net = "network allowed by configuration; " + net
    out.append(("network isolation", no_net, net))
    if plan.mode == "bwrap":
        view = f"read-only minimal view; / holds only {', '.join(facts.get('root') or [])}"
    abi = int(facts.get("landlock") or 0)
    if plan.mode != "bwrap":
        guards = "Landlock, the audit hook" if abi else "the audit hook"
        view = f"the host file system is mounted; {guards} and file permissions guard it"
    out.append(("file-system view", plan.mode == "bwrap", view))
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
    out.append(("landlock", abi > 0, landlock))
    out.append(_uid_layer(plan, facts, host_uid))
    caps = {k: str(status.get(k, "?")) for k in ("CapEff", "CapPrm", "CapInh", "CapAmb")}
    no_caps = all(v.strip("0") == "" for v in caps.values())
    detail = ", ".join(f"{k} {v}" for k, v in caps.items())
    out.append(("no capabilities", no_caps, f"{detail}; bounding set {status.get('CapBnd')}"))
    out.append(("no_new_privs", status.get("NoNewPrivs") == "1", f"{status.get('NoNewPrivs')}"))
    out.append(("resource limits", True, describe_rlimits(facts.get("rlimits") or {})))
    tasks = facts.get("tasks_at_lockdown")
    out.append(
        (
            "lockdown before threads",
            tasks == 1,
            f"{tasks} thread(s) when Landlock and seccomp were applied, before any import",
        )
    )
    if status.get("Seccomp") == "2":
        seccomp = (
            f"filter of {facts.get('seccomp_rules')} BPF instructions: fork/exec, sockets, "
            "ptrace, signals to other processes, mount/namespace/module calls refused"
        )
    elif not limits.seccomp:
        seccomp = "disabled by configuration"
    else:
        seccomp = f"not installed: {facts.get('seccomp_error') or 'unknown reason'}"
    out.append(("seccomp", status.get("Seccomp") == "2", seccomp))
    audit = bool(facts.get("audit"))
    out.append(
        (
            "audit hook",
            audit,
            "refuses subprocess/exec/fork, sockets, ctypes, signals, file access outside "
            "the session and the Python install"
            if audit
            else "disabled by configuration",
        )
    )
    out.append(
        (
            "wall-clock kill",
            True,
            f"TimeoutError in the child at the timeout, process group killed "
            f"{HARD_KILL_GRACE:g} s later",
        )
    )
    quota = plan.tmpfs or plan.mode == "bwrap"
    files = f" and {limits.max_files} files" if plan.tmpfs else " (no file-count cap)"
    out.append(
        (
            "disk quota",
            quota,
            f"session directory is a tmpfs capped at {limits.disk_mb} MB{files}"
            if quota
            else f"the host measures the session after each run and kills the child past "
            f"{limits.max_files} files or {limits.disk_mb} MB (no mount namespace for a tmpfs)",
        )
    )
    out.append(
        (
            "untrusted replies",
            True,
            f"replies size-capped ({limits.message_cap()} bytes), nesting-bounded, "
            "matched to their request id, validated, "
            f"stdout/value capped at {limits.max_output_bytes} characters, "
            f"at most {limits.max_figures} verified PNG figures of at most "
            f"{limits.max_figure_side} pixels a side; the child is stopped between runs",
        )
    )
    return out


def _uid_layer(plan: Plan, facts: dict[str, Any], host_uid: Any) -> tuple[str, bool, str]:
    """The child's uid: its own unused one (root host), or the host user's (no change)."""
    groups = facts.get("groups")
    who = f"uid {facts.get('uid')} in the sandbox, uid {host_uid} on the host, groups {groups}"
    if plan.drop_uid:
        unpriv = host_uid not in (None, 0) and not groups
        return "unprivileged uid", unpriv, who + " (an unused uid of its own)"
    unpriv = host_uid not in (None, 0) and host_uid == os.geteuid()
    return "unprivileged uid", unpriv, who + " (the host user's; no capabilities)"
