"""Connecting to Ray: ``--ray ADDRESS`` or $TABLEQUEST_RAY_ADDRESS.

Addresses: ``local`` starts Ray on this machine (its CPUs, no dashboard); ``auto`` joins the
cluster this machine is part of (``ray start`` was run here); ``ray://HOST:PORT`` connects to
a cluster's client server (``HOST:PORT`` without the scheme: the head's GCS address, from a
machine of the cluster). Ray is the optional extra ``[ray]``; without it every entry point
says how to install it. The workers of a cluster must have tablequest (and the extras its
methods use) installed, and see the corpus files at the same paths (a shared file system).

Ray stays quiet: its banners ("Started a local Ray instance", the usage-stats notice), its
INFO logging, the workers' output forwarded to the driver and its Python warnings are not
shown; errors still are (`ray.init` with ``log_to_driver=False``, ``logging_level=ERROR``,
``configure_logging=True``; ``RAY_USAGE_STATS_ENABLED=0`` unless the user set it).
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from types import ModuleType
from typing import Any

from tablequest.errors import BadValue, UsageError

__all__ = [
    "RAY_ENV",
    "RAY_EXTRA_HINT",
    "RayUnavailable",
    "connect",
    "import_ray",
    "ray_address",
]

RAY_ENV = "TABLEQUEST_RAY_ADDRESS"
RAY_EXTRA_HINT = "pip install 'tablequest[ray]'"
_QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}  # no usage-stats notice
_REMOTE = re.compile(r"^(ray://)?[\w.-]+:\d+$")  # a client server, or a head's GCS address


class RayUnavailable(UsageError):
    """Ray is not installed, or the cluster cannot be reached; the message says what to do."""


def import_ray() -> ModuleType:
    """The `ray` module, or RayUnavailable naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(f"Ray is not installed: {RAY_EXTRA_HINT}") from exc
    module: ModuleType = ray
    return module


def ray_address(flag: str | None) -> str | None:
    """The Ray address to use: the flag, else the `scale.ray_address` setting's variable
    ($TABLEQUEST_RAY_ADDRESS), else None (no Ray)."""
    if flag is not None:
        return flag.strip() or None
    from tablequest.settings import ScaleSettings, from_env

    return from_env(ScaleSettings).ray_address


def connect(address: str, *, num_cpus: int | None = None) -> ModuleType:
    """Initialize Ray for `address` (no-op when this process is already connected).

    Args:
        address: ``local``, ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``.
        num_cpus: CPUs Ray may use with ``local`` (default: all of this machine's).

    Raises:
        BadValue: an address of another form.
        RayUnavailable: Ray is missing or the cluster cannot be reached.
    """
    if address not in ("local", "auto") and not _REMOTE.match(address):
        raise BadValue(f"--ray takes local, auto or ray://HOST:PORT, got {address!r}")
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ray = import_ray()
        if ray.is_initialized():
            return ray
        kwargs: dict[str, Any] = {
            "address": address,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
            "configure_logging": True,
        }
        if address == "local":  # options of a new cluster; an existing one has its own
            kwargs.update(num_cpus=num_cpus, include_dashboard=False)
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailable(f"cannot connect to Ray at {address!r}: {exc}") from exc
    logging.getLogger("ray").setLevel(logging.ERROR)
    return ray
