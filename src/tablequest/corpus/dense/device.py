"""Where the MiniLM encoders run (the device setting) and when a device's vectors may share a
cache key with the CPU's (the agreement check).

Device (`requested_device`, `resolve_device`): ``auto`` (default), ``cpu``, ``cuda`` or
``cuda:N``: the ``embeddings.device`` setting (`tablequest.settings`; ``--device``, or the
variable ``TABLEQUEST_DEVICE``). A flag's value is a demand (`EncoderSettings.device`); a
value from elsewhere is a preference (`EncoderSettings.preferred_device`). Both are carried by
the loaded settings — a Ray worker uses its job's, never its own environment; only encoder
settings built without loaded settings (a library call) fall back to the variable. Anything
else is refused with a message naming the source and the accepted forms. ``auto`` is resolved
once per process: CUDA when torch sees a GPU, else the CPU. Only ``minilm`` and ``minilm-st``
(and ``auto`` when it picks one of them) have a device; ``minilm-static``, ``hash`` and
``api`` run where they run (numpy, a server): a demanded non-CPU device is refused by them,
and a preference does not concern them. ``minilm-int8`` is a CPU quantization: it
stays on the CPU under ``auto`` and refuses an explicit CUDA device.

Agreement (`DeviceEncoder`): an encoder's name is part of every embedding cache key, so
vectors made on a device reuse the CPU encoder's name only where they agree with it. At first
use of the name, a fixed probe set (`PROBE_TEXTS`: 16 short questions and cell texts, 16 long
table texts) is encoded on the device and by the CPU encoder; a minimum cosine ≥ 0.999
(`AGREEMENT`) keeps the CPU name, else the name gets the device's label as a suffix
(``…+cuda-fp16-nvidia-h200``) and a `DeviceDisagreement` warning says so. The verdict is
memoized per process (per CPU name and device label). The check needs the CPU encoder too:
for ``minilm`` its ONNX export (built once per user, ~1 min) on the first GPU run.

Choices (ours; the issue fixes only ``auto``'s meaning and the 0.999 threshold):
- ``auto`` does not import torch where no NVIDIA driver is present (Linux: no
  ``/proc/driver/nvidia`` and no ``/dev/nvidia*``), so CPU machines keep their start-up time;
  elsewhere it asks ``torch.cuda.is_available()``, and answers ``cpu`` when torch is missing.
- An explicit ``cuda`` that torch cannot use is an `EncoderUnavailable` error, never a silent
  fallback to the CPU.
- The suffix names the GPU model: two GPUs that each disagree with the CPU may disagree with
  each other too.
"""

from __future__ import annotations

import functools
import re
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tablequest.corpus.dense.encoder_base import Encoder, EncoderUnavailable, Matrix
from tablequest.errors import BadValue

__all__ = [
    "AGREEMENT",
    "DEVICE_ENV",
    "PROBE_TEXTS",
    "DeviceDisagreement",
    "DeviceEncoder",
    "DeviceRunner",
    "describe_device",
    "gpu_name",
    "parse_device",
    "requested_device",
    "resolve_device",
]

DEVICE_ENV = "TABLEQUEST_DEVICE"
AGREEMENT = 0.999
_DEVICE_RE = re.compile(r"auto|cpu|cuda(:\d+)?")

_QUESTIONS = [
    "which team won the most games?",
    "how many medals did norway win in 1994?",
    "what is the total population of the three largest cities?",
    "who was the last coach before 2003?",
    "wallet",
    "",
    "Película naïve 東京",
    "list every album released after the band's second tour",
    '{"column_name": "payment_method", "cell_value": "Cash on delivery"}',
    '{"column_name": "Year", "cell_value": "2004"}',
    '{"column_name": "Team", "cell_value": "Rochester Rhinos"}',
    '{"column_name": "Notes", "cell_value": "retired in the 3rd round (injury)"}',
    "Nation | Gold",
    "Fans | 5,871",
    "what percentage of votes went to the incumbent?",
    "x" * 200,
]
_HEADERS = ["Year", "Team", "League", "Fans", "Nation", "Gold", "Silver", "Notes"]


def _table_text(seed: int) -> str:
    rows = [" ".join(_HEADERS[seed % 4 : seed % 4 + 4])]
    for i in range(40 + 20 * seed):
        fans = (i * 1373 + seed * 97) % 9000
        rows.append(
            f"{1990 + (i * seed) % 30} Club{(i * 7 + seed) % 13} Division {i % 4} "
            f"{fans:,} Country{i % 11} {i % 5} {seed}"
        )
    return "\n".join(rows)


PROBE_TEXTS: tuple[str, ...] = (*_QUESTIONS, *(_table_text(s) for s in range(16)))
"""The fixed probe set of the agreement check: short questions and cells, long tables."""


class DeviceDisagreement(UserWarning):
    """Vectors made on a device disagree with the CPU's: they get a cache name of their own."""


def parse_device(spec: str, *, source: str = "device") -> str:
    """`spec` lower-cased and checked: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

    Raises:
        BadValue: any other value (the message names `source` and the accepted forms).
    """
    value = spec.strip().lower()
    if not _DEVICE_RE.fullmatch(value):
        raise BadValue(f"{source}: unknown device {spec!r}; use auto, cpu, cuda or cuda:N")
    return value


def requested_device(spec: str | None, preference: str | None = None) -> str:
    """The device asked for (checked): `spec` (a demand), else `preference` (the loaded
    setting, carried to workers), else — for a caller that loaded no settings — the
    `embeddings.device` setting's variable (``$TABLEQUEST_DEVICE``), else ``auto``."""
    if spec is not None:
        return parse_device(spec)
    if preference is not None:
        return parse_device(preference, source="embeddings.device")
    from tablequest.settings import EmbeddingsSettings, SettingsError, from_env

    try:
        return from_env(EmbeddingsSettings).device or "auto"
    except SettingsError as exc:
        raise BadValue(str(exc)) from None


def _driver_present() -> bool:
    """Whether an NVIDIA driver may be here (cheap: no torch import on Linux)."""
    if not Path("/proc").is_dir():  # not Linux: only torch can tell
        return True
    return Path("/proc/driver/nvidia").exists() or any(Path("/dev").glob("nvidia[0-9]*"))


def _torch_cuda() -> Any:
    """`torch.cuda`, or None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda


@functools.cache
def _auto_device() -> str:
    if not _driver_present():
        return "cpu"
    cuda = _torch_cuda()
    return "cuda:0" if cuda is not None and cuda.is_available() else "cpu"


def resolve_device(spec: str | None, preference: str | None = None) -> str:
    """The device the MiniLM encoders run on: ``cpu`` or ``cuda:N`` (`requested_device`).

    Raises:
        BadValue: an invalid device (see `parse_device`).
        EncoderUnavailable: CUDA asked for but torch sees no such GPU.
    """
    device = requested_device(spec, preference)
    if device == "auto":
        return _auto_device()
    if device == "cpu":
        return device
    index = int(device.partition(":")[2] or 0)
    seen = _cuda_seen(index)
    if seen:
        raise EncoderUnavailable(
            f"device {device!r} asked for, but {seen}; use device cpu or auto "
            f"(--device, or {DEVICE_ENV})"
        )
    return f"cuda:{index}"


def _cuda_seen(index: int) -> str:
    """Why CUDA GPU `index` cannot be used ("" when it can)."""
    if not _driver_present():
        return "no NVIDIA driver is present"
    cuda = _torch_cuda()
    if cuda is None:
        return "torch is not installed"
    count = int(cuda.device_count()) if cuda.is_available() else 0
    return "" if index < count else f"torch sees {count} CUDA GPU(s)"


def describe_device(spec: str | None = None, preference: str | None = None) -> str:
    """One line for `tablequest doctor`: the device the MiniLM encoders would use, and why."""
    try:
        asked = requested_device(spec, preference)
        device = resolve_device(spec, preference)
    except (BadValue, EncoderUnavailable) as exc:
        return f"no usable device ({exc})"
    if device.startswith("cuda"):
        device += f" ({gpu_name(device)})"
    return device if asked == device else f"{device} ({asked})"


def gpu_name(device: str) -> str:
    """The model name of CUDA device ``cuda:N`` (``NVIDIA H200``), as torch reports it."""
    cuda = _torch_cuda()
    if cuda is None:
        raise EncoderUnavailable(f"device {device!r} needs torch")
    return str(cuda.get_device_name(int(device.partition(":")[2] or 0)))


class DeviceRunner(Protocol):
    """Encodes on one device; `label` (``cuda-fp16-nvidia-h200``) names it in cache keys."""

    label: str

    def encode(self, texts: Sequence[str]) -> Matrix: ...


_VERDICTS: dict[tuple[str, str], tuple[str, float]] = {}
_VERDICT_LOCK = threading.Lock()


def agreement(a: Matrix, b: Matrix) -> Matrix:
    """Row-wise cosine of two matrices of vectors (rows of zeros count as agreeing)."""
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    both_zero = (na == 0) & (nb == 0)
    cos = (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)
    out: Matrix = np.where(both_zero, 1.0, cos).astype(np.float32)
    return out


class DeviceEncoder:
    """An encoder that runs on a device (`runner`) and is named after the CPU encoder
    (`reference`) only where their vectors agree on the probe set (see the module doc)."""

    def __init__(
        self,
        reference: Encoder,
        runner: DeviceRunner,
        *,
        probes: Sequence[str] = PROBE_TEXTS,
        threshold: float = AGREEMENT,
    ) -> None:
        self.reference = reference
        self.runner = runner
        self.probes = list(probes)
        self.threshold = threshold
        self.min_cosine: float | None = None
        self._name: str | None = None

    @property
    def name(self) -> str:
        """The cache name: the reference's, or the reference's + the device label."""
        if self._name is None:
            self._name, self.min_cosine = self._settle()
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def _settle(self) -> tuple[str, float]:
        key = (self.reference.name, self.runner.label)
        with _VERDICT_LOCK:
            if key in _VERDICTS:
                return _VERDICTS[key]
        cos = agreement(self.runner.encode(self.probes), self.reference.encode(self.probes))
        worst = float(cos.min())
        name = self.reference.name
        if worst < self.threshold:
            name = f"{name}+{self.runner.label}"
            warnings.warn(
                f"vectors on {self.runner.label} disagree with {self.reference.name} on the "
                f"CPU (min cosine {worst:.5f} < {self.threshold}); they are cached as {name}",
                DeviceDisagreement,
                stacklevel=3,
            )
        with _VERDICT_LOCK:
            _VERDICTS[key] = (name, worst)
        return name, worst

    def encode(self, texts: Sequence[str]) -> Matrix:
        """L2-normalized vectors of `texts` made on the device, in order."""
        return self.runner.encode(texts)
