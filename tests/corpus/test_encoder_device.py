"""The MiniLM encoders' device: the setting, CUDA resolution (with a fake torch.cuda), the
agreement check that decides cache names (with fake device runners), and the lean torch path
itself, run on the CPU in fp32 (no test needs CUDA)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from tablequest.corpus.dense import device as dev
from tablequest.corpus.dense.device import (
    DeviceDisagreement,
    DeviceEncoder,
    agreement,
    describe_device,
    parse_device,
    requested_device,
    resolve_device,
)
from tablequest.corpus.dense.encoder_base import (
    EncoderUnavailable,
    Matrix,
    encoding_progress,
    normalize,
)
from tablequest.corpus.dense.encoders import (
    EncoderSettings,
    HashEncoder,
    make_encoder,
    minilm_installed,
)
from tablequest.corpus.dense.torch_minilm import TorchMiniLM, budget_batches
from tablequest.errors import BadValue
from tablequest.settings import Settings

needs_minilm = pytest.mark.skipif(
    not minilm_installed(), reason="needs the [dense] extra (torch, transformers, MiniLM weights)"
)
TEXTS = [
    "",
    "wallet",
    '{"column_name": "payment_method", "cell_value": "Cash on delivery"}',
    "Which nation won the most gold medals?",
    "Nation Gold Silver Bronze\n" + "\n".join(f"Country{i} {i} {i % 3}" for i in range(300)),
    "Year Title Role Notes\n" + " ".join(["Película", "naïve", "東京", "x" * 150] * 40),
]


class FakeCuda:
    """Stands in for `torch.cuda` on a machine with `count` GPUs."""

    def __init__(self, count: int) -> None:
        self.count = count

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count

    def get_device_name(self, index: int) -> str:
        return f"Fake GPU {index}"


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCuda]:
    """A driver and one fake CUDA GPU; `auto` re-resolved for the test."""
    fake = FakeCuda(1)
    monkeypatch.setattr(dev, "_driver_present", lambda: True)
    monkeypatch.setattr(dev, "_torch_cuda", lambda: fake)
    dev._auto_device.cache_clear()
    yield fake
    dev._auto_device.cache_clear()


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(dev, "_driver_present", lambda: False)
    dev._auto_device.cache_clear()
    yield
    dev._auto_device.cache_clear()


class NoisyRunner:
    """A fake device: the reference's vectors plus seeded Gaussian noise of size `noise`."""

    def __init__(self, reference: HashEncoder, noise: float, label: str) -> None:
        self.reference, self.noise, self.label = reference, noise, label
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        clean = self.reference.encode(texts)
        noise = np.random.default_rng(0).normal(0, self.noise, clean.shape).astype(np.float32)
        nonzero = np.linalg.norm(clean, axis=1, keepdims=True) > 0  # "" stays a zero row
        return normalize(clean + noise * nonzero)


class Named:
    """A runner under a cache name: the CPU reference of an agreement check."""

    def __init__(self, name: str, runner: TorchMiniLM) -> None:
        self.name, self.runner = name, runner

    def encode(self, texts: Sequence[str]) -> Matrix:
        return self.runner.encode(texts)


def test_device_values_are_checked_and_the_environment_is_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert [parse_device(s) for s in ("auto", "CPU", " cuda ", "cuda:1")] == [
        "auto", "cpu", "cuda", "cuda:1"]  # fmt: skip
    for bad in ("gpu", "cuda:", "cuda:x", "mps", ""):
        with pytest.raises(BadValue, match="use auto, cpu, cuda or cuda:N"):
            parse_device(bad)
    assert requested_device(None) == "auto"
    monkeypatch.setenv("TABLEQUEST_DEVICE", "cuda:2")
    assert requested_device(None) == "cuda:2"
    assert requested_device("cpu") == "cpu"  # the setting wins over the environment
    monkeypatch.setenv("TABLEQUEST_DEVICE", "tpu")
    with pytest.raises(BadValue, match="TABLEQUEST_DEVICE: unknown device 'tpu'"):
        requested_device(None)


def test_the_loaded_device_travels_with_the_settings_not_the_environment(
    gpus: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = Settings.load({}, env={"TABLEQUEST_DEVICE": "cpu"})  # the driver's preference
    monkeypatch.setenv("TABLEQUEST_DEVICE", "cuda:0")  # the worker's own environment
    carried = EncoderSettings.from_settings(pickle.loads(pickle.dumps(driver)))
    assert (carried.device, carried.preferred_device) == (None, "cpu")
    assert resolve_device(carried.device, carried.preferred_device) == "cpu"
    assert resolve_device(None) == "cuda:0"  # no settings loaded: the environment's
    nothing = EncoderSettings.from_settings(Settings.load({}, env={}))
    assert resolve_device(nothing.device, nothing.preferred_device) == "cuda:0"  # auto
    demanded = EncoderSettings.from_settings(Settings.load({"embeddings.device": "cpu"}, env={}))
    assert (demanded.device, demanded.preferred_device) == ("cpu", "cpu")
    preference = EncoderSettings(preferred_device="cuda")  # MiniLM's preference, not hash's
    assert isinstance(make_encoder("hash", preference), HashEncoder)
    with pytest.raises(BadValue, match=r"embeddings\.device: unknown device 'tpu'"):
        requested_device(None, "tpu")


def test_auto_is_cuda_only_where_torch_sees_a_gpu(gpus: FakeCuda) -> None:
    assert resolve_device(None) == "cuda:0"
    assert resolve_device("cuda") == "cuda:0"
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(EncoderUnavailable, match="torch sees 1 CUDA GPU"):
        resolve_device("cuda:1")
    assert describe_device("auto") == "cuda:0 (Fake GPU 0) (auto)"
    gpus.count = 0
    dev._auto_device.cache_clear()
    assert resolve_device(None) == "cpu"


def test_cuda_asked_for_without_a_driver_fails_and_auto_stays_on_the_cpu(no_gpu: None) -> None:
    assert resolve_device("auto") == "cpu"
    with pytest.raises(EncoderUnavailable, match="no NVIDIA driver"):
        resolve_device("cuda")
    with pytest.raises(EncoderUnavailable, match="no NVIDIA driver"):
        make_encoder("minilm", EncoderSettings(device="cuda"))
    assert describe_device("cuda").startswith("no usable device")


@pytest.mark.skipif(dev._driver_present(), reason="an NVIDIA driver is present here")
def test_auto_on_a_cpu_machine_never_imports_torch() -> None:
    code = (
        "import sys\nfrom tablequest.corpus.dense.encoders import make_encoder, EncoderSettings\n"
        "from tablequest.corpus.dense.device import resolve_device\n"
        "make_encoder('hash', EncoderSettings(device='cpu'))\n"
        "print(resolve_device(None), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["cpu", "False"]


def test_encoders_without_a_device_refuse_one_given_explicitly(
    gpus: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("hash", "minilm-static", "bm25", "api"):
        with pytest.raises(BadValue, match="has no device"):
            make_encoder(name, EncoderSettings(url="http://127.0.0.1:9/v1", model="m",
                                               device="cuda"))  # fmt: skip
    assert isinstance(make_encoder("hash", EncoderSettings(device="cpu")), HashEncoder)
    monkeypatch.setenv("TABLEQUEST_DEVICE", "cuda")  # a MiniLM preference, not hash's
    assert isinstance(make_encoder("hash"), HashEncoder)
    with pytest.raises(BadValue, match="minilm-int8 is a CPU quantization"):
        make_encoder("minilm-int8")


def test_minilm_on_cuda_takes_the_lean_torch_path_named_after_the_cpu_encoder(
    gpus: FakeCuda,
) -> None:
    from tablequest.corpus.dense.onnx_minilm import ONNXMiniLMEncoder

    encoder = make_encoder("minilm")  # device auto → the fake GPU; nothing is loaded yet
    assert isinstance(encoder, DeviceEncoder)
    assert isinstance(encoder.reference, ONNXMiniLMEncoder)
    runner = encoder.runner
    assert isinstance(runner, TorchMiniLM)
    assert (runner.device, runner.fp16, runner.token_budget) == ("cuda:0", True, 131_072)
    assert runner.label == "cuda-fp16-fake-gpu-0"
    on_cpu = make_encoder("minilm", EncoderSettings(device="cpu"))
    assert isinstance(on_cpu, ONNXMiniLMEncoder)
    assert on_cpu.name == "all-MiniLM-L6-v2@128+onnx-v1"  # CPU cache keys unchanged
    st = make_encoder("minilm-st", EncoderSettings(device="cuda:0"))
    assert isinstance(st, DeviceEncoder) and st.reference.name == "all-MiniLM-L6-v2@128"


def test_vectors_that_agree_share_the_cpu_cache_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev, "_VERDICTS", {})
    reference = HashEncoder()
    runner = NoisyRunner(reference, 1e-4, "fake-fp16")
    encoder = DeviceEncoder(reference, runner)
    assert encoder.name == reference.name
    assert encoder.min_cosine is not None and encoder.min_cosine >= 0.999
    second = NoisyRunner(reference, 1e-4, "fake-fp16")
    assert DeviceEncoder(reference, second).name == reference.name
    assert (runner.calls, second.calls) == (1, 0)  # the verdict is kept per process
    vectors = encoder.encode(["a b", "c"])
    assert agreement(vectors, reference.encode(["a b", "c"])).min() >= 0.999


def test_vectors_that_disagree_get_a_device_suffix_and_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dev, "_VERDICTS", {})
    reference = HashEncoder()
    encoder = DeviceEncoder(reference, NoisyRunner(reference, 0.05, "fake-int4"))
    with pytest.warns(DeviceDisagreement, match=r"disagree with hash-256 .*min cosine 0\.[0-8]"):
        name = encoder.name
    assert name == "hash-256+fake-int4"
    assert encoder.min_cosine is not None and encoder.min_cosine < 0.999


@needs_minilm
def test_auto_takes_full_minilm_only_when_a_gpu_is_asked_for_by_name(
    gpus: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tablequest.corpus.dense.encoders.static_installed", lambda: True)
    named = make_encoder("auto", EncoderSettings(device="cuda"))
    assert isinstance(named, DeviceEncoder)
    assert type(make_encoder("auto")).__name__ == "StaticMiniLMEncoder"  # auto device: as before


def test_tokenizing_is_parallel_on_cuda_only_and_the_setting_is_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tablequest.corpus.dense.torch_minilm import _parallel_tokenizing

    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    with _parallel_tokenizing(True):
        assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    with _parallel_tokenizing(False):
        assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    monkeypatch.delenv("TOKENIZERS_PARALLELISM")
    with _parallel_tokenizing(True):
        assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
    assert "TOKENIZERS_PARALLELISM" not in os.environ


def test_agreement_counts_zero_rows_as_equal_and_measures_cosine() -> None:
    a = np.array([[0, 0], [1, 0], [1, 1]], dtype=np.float32)
    b = np.array([[0, 0], [2, 0], [0, 1]], dtype=np.float32)
    assert agreement(a, b).tolist() == pytest.approx([1.0, 1.0, 2**-0.5])


def test_budget_batches_stay_under_the_budget_and_cover_every_text_once() -> None:
    rng = np.random.default_rng(1)
    lengths = [*rng.integers(2, 129, size=500).tolist(), 2000]
    batches = budget_batches(lengths, 1024)
    seen = np.concatenate(batches)
    assert sorted(seen.tolist()) == list(range(len(lengths)))
    assert [lengths[i] for i in seen] == sorted(lengths)
    for batch in batches:
        widest = max(lengths[i] for i in batch)
        assert len(batch) * widest <= 1024 or len(batch) == 1
    assert [len(b) for b in batches if 2000 in [lengths[i] for i in b]] == [1]
    assert budget_batches([], 10) == []
    with pytest.raises(ValueError, match="token budget"):
        budget_batches([1], 0)


@needs_minilm
def test_the_torch_path_on_the_cpu_gives_the_minilm_vectors_in_input_order() -> None:
    reference = make_encoder("minilm-st", EncoderSettings(device="cpu"))
    assert reference is not None
    expected = reference.encode(TEXTS)
    runner = TorchMiniLM("cpu", token_budget=256)  # several batches, long rows alone
    assert (runner.fp16, runner.label) == (False, "cpu-fp32")
    reports: list[tuple[int, int]] = []
    with encoding_progress(lambda done, total: reports.append((done, total))):
        vectors = runner.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert agreement(vectors, expected).min() >= 0.9999
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len(reports) > 1 and reports[-1] == (len(TEXTS), len(TEXTS))
    reversed_texts = TEXTS[::-1]
    assert np.allclose(runner.encode(reversed_texts), vectors[::-1], atol=1e-5)
    assert runner.encode([]).shape == (0, 384)


@needs_minilm
def test_fp16_on_the_device_path_agrees_with_the_cpu_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dev, "_VERDICTS", {})
    reference = Named("minilm-fp32", TorchMiniLM("cpu"))  # fp32, as the CPU encoders
    encoder = DeviceEncoder(reference, TorchMiniLM("cpu", fp16=True), probes=TEXTS)
    assert encoder.name == "minilm-fp32"
    assert encoder.min_cosine is not None and encoder.min_cosine >= 0.999


def test_doctor_reports_the_device(no_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert describe_device() == "cpu (auto)"
    monkeypatch.setenv("TABLEQUEST_DEVICE", "cpu")
    assert describe_device() == "cpu"
    monkeypatch.setenv("TABLEQUEST_DEVICE", "gpu")
    assert "TABLEQUEST_DEVICE: unknown device 'gpu'" in describe_device()
