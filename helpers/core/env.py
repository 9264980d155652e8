"""Where the course runs: device, device class, versions, scale, seeds and compile caches (ch01)."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import random
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUPPORTED_TORCH = ("2.11",)  # the oldest torch the course runs on


VERIFIED_TORCH = ("2.11", "2.13", "2.15")  # every chapter verified on these (2.11: H200; 2.13: CI; 2.15: CPU)

#: The GPUs the book has been run on, by device class, with the torch versions run there. A GPU figure
#: is checked as verified only on these; elsewhere (a T4, sm75; torch 2.13 on a GPU) a value that differs
#: is "unverified", never a failure, because no GPU run of that kind has said what it should be.
VERIFIED_GPU = {"sm90": ("2.11",)}


def verified_torch_for(classes: list[str]) -> tuple[str, ...]:
    """The torch versions verified for a device (its classes, most specific first): CPU or one GPU class."""
    if "cpu" in classes or not classes:
        return VERIFIED_TORCH
    return VERIFIED_GPU.get(classes[0], ())


REPO_ROOT = Path(__file__).resolve().parents[2]


class CourseError(RuntimeError):
    """An error whose message tells the reader what went wrong and what to do."""


def _version_tuple(v: str) -> tuple[int, ...]:
    core = v.split("+")[0]
    out = []
    for part in core.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def require_torch(minimum: str = SUPPORTED_TORCH[0], version: str | None = None) -> str:
    """Raise CourseError unless torch (or ``version``) is at least ``minimum``; return the version."""
    if version is None:
        try:
            import torch
        except ImportError as exc:  # pragma: no cover - torch is a hard dependency
            raise CourseError("torch is not installed: run `make setup` or `pip install torch`.") from exc
        version = torch.__version__
    if _version_tuple(version) < _version_tuple(minimum):
        raise CourseError(
            f"This course needs torch >= {minimum}; found {version}. "
            f"Upgrade with `pip install -U 'torch>={minimum}'` (verified: {', '.join(VERIFIED_TORCH)})."
        )
    return version


def in_colab() -> bool:
    """True inside Google Colab."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


@dataclass
class Env:
    """The facts a figure's expectation depends on, recorded with every run."""

    device: str  # "cpu" or "cuda"
    device_class: str  # "cpu" or e.g. "sm90"
    device_name: str
    scale: str  # "quick" or "full"
    torch: str
    triton: str | None
    python: str
    driver: str | None = None
    cpu_count: int = 0
    threads: int = 0  # intra-op threads torch uses (set by configure: 1 on a CPU, so timings survive a busy machine)
    colab: bool = False
    git_commit: str | None = None
    date: str = ""
    chapter: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def classes(self) -> list[str]:
        """Device classes from most to least specific, used to pick a band."""
        return [self.device_class, "cuda"] if self.device == "cuda" else ["cpu"]

    @property
    def torch_minor(self) -> str:
        return ".".join(self.torch.split("+")[0].split(".")[:2])

    @property
    def on_gpu(self) -> bool:
        return self.device == "cuda"

    @property
    def verified_torch(self) -> bool:
        return self.torch_minor in verified_torch_for(self.classes)

    def banner(self) -> str:
        gpu = f"{self.device_name} ({self.device_class}, driver {self.driver})" if self.on_gpu else (
            f"CPU ({self.cpu_count} cores: {self.device_name}; timing with {self.threads or '?'} "
            f"thread{'s' if self.threads != 1 else ''}, vector ISA {self.extra.get('cpu_capability', '?')})")
        tri = f", triton {self.triton}" if self.triton else ""
        lines = [f"device:  {gpu}, scale {self.scale}",
                 f"software: torch {self.torch}{tri}, python {self.python}",
                 f"run:     {self.date}, course commit {self.git_commit or 'unknown'}"]
        if not self.verified_torch:
            where = (f"on a {self.device_class} GPU" if self.on_gpu else "on a CPU")
            known = verified_torch_for(self.classes)
            done = (f"verified there: torch {', '.join(known)}" if known else
                    f"no {self.device_class} GPU has run the course; verified GPUs: "
                    + ", ".join(f"{c} (torch {', '.join(v)})" for c, v in VERIFIED_GPU.items()))
            lines.append(f"note:    torch {self.torch_minor} {where} is not a verified combination ({done}). "
                         "Everything runs, but where this machine behaves differently the text describes "
                         "the verified runs, and such figures are marked 'unverified'.")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return asdict(self)


def _git_commit() -> str | None:
    if os.environ.get("COURSE_GIT_COMMIT"):
        return os.environ["COURSE_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip()
        if not commit:
            return None
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def resolve_device(device: str = "auto") -> str:
    """'auto' → 'cuda' if a GPU is visible else 'cpu'; 'cuda' without a GPU is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CourseError("--device cuda was asked for, but torch sees no CUDA GPU on this machine. "
                          "Run with --device cpu (or auto), or use a GPU machine / Colab GPU runtime.")
    if device not in ("cpu", "cuda"):
        raise CourseError(f"unknown device {device!r}: use auto, cpu or cuda.")
    return device


def resolve_scale(scale: str, device: str) -> str:
    """'auto' → 'full' on a GPU, 'quick' on CPU."""
    if scale == "auto":
        return "full" if device == "cuda" else "quick"
    if scale not in ("quick", "full"):
        raise CourseError(f"unknown scale {scale!r}: use auto, quick or full.")
    return scale


def detect(device: str = "auto", scale: str = "auto", chapter: str | None = None) -> Env:
    """Probe the machine and return an Env (no side effects)."""
    import torch

    version = require_torch()
    device = resolve_device(device)
    try:
        import triton  # noqa: F401

        triton_version = triton.__version__
    except Exception:  # triton is absent on CPU builds
        triton_version = None
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        name, cls, driver = torch.cuda.get_device_name(), f"sm{major}{minor}", _driver()
    else:
        name, cls, driver = _cpu_name(), "cpu", None
    extra = {}
    try:
        extra["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except Exception:  # pragma: no cover - very old torch
        pass
    return Env(device=device, device_class=cls, device_name=name, scale=resolve_scale(scale, device),
               torch=version, triton=triton_version, python=platform.python_version(), driver=driver,
               cpu_count=os.cpu_count() or 1, threads=torch.get_num_threads(), colab=in_colab(),
               git_commit=_git_commit(), date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               chapter=chapter, extra=extra)


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy (if present) and torch."""
    import torch

    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)


def cache_root() -> Path:
    """The folder the runner gives this run (COURSE_CACHE_DIR), else one per user in the temp dir."""
    root = os.environ.get("COURSE_CACHE_DIR")
    return Path(root) if root else Path(tempfile.gettempdir()) / "course_compile_cache"


def use_cache_dir(path: str | os.PathLike) -> Path:
    """Point Inductor's and Triton's on-disk caches at ``path`` (call before the first compile)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path)
    os.environ["TRITON_CACHE_DIR"] = str(path / "triton")
    return path
