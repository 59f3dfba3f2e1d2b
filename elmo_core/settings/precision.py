"""The precision a training run computes in when the user does not say.

`keras-elmo train --mixed-precision auto` (the default) trains in
bfloat16 mixed precision on a CPU that multiplies bfloat16 natively (the
`avx512_bf16` or `amx_bf16` instructions), and in float32 everywhere else:
on the bundled corpus's `cpu` size a step took a quarter less time there
(docs/benchmarks.md, "The main job"). Without those instructions
there is no measured gain to count on (with oneDNN held to AVX2 on that
CPU, `ONEDNN_MAX_CPU_ISA=AVX2`, TensorFlow's bfloat16 products do not
run at all: TensorFlow picks oneDNN's bfloat16 kernels by the CPU's
flags, and oneDNN, held back, aborts the process; so `auto` keeps float32
there and `bf16` is refused). Weights, the LSTM cell state, the softmax
and the loss stay float32 either way (`TrainingConfig`).

A run that resumes keeps the precision it started with, whatever the
machine it resumes on. This is the command's choice: the Python
`train(config)` computes in `config.mixed_precision` as given (None:
float32). TensorFlow-free: `--help` reads it.
"""

import os

from elmo_core.errors import KerasElmoError

# `--mixed-precision` values: `auto` chooses, `off` is float32, the others
# are `TrainingConfig.mixed_precision` values.
AUTO = "auto"
OFF = "off"
# /proc/cpuinfo flags of CPUs that multiply bfloat16 natively.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
CPUINFO = "/proc/cpuinfo"
# oneDNN's switch that holds it to an older instruction set, and the values
# of it below the first with bfloat16 matrix products (AVX512_CORE_BF16):
# TensorFlow still picks oneDNN's bfloat16 kernels by the CPU's flags, and
# oneDNN, held back, cannot build them (the process aborts).
ONEDNN_ISA = "ONEDNN_MAX_CPU_ISA"
ISA_WITHOUT_BF16 = (
    "SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
    "AVX512_CORE_VNNI",
)  # fmt: skip
# /proc/cpuinfo is read up to its first "flags" line, at most this much.
_CPUINFO_LIMIT = 1 << 20


def cpu_flags(path=CPUINFO):
    """The instruction-set flags of this machine's first CPU (Linux), or
    an empty set where they cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(_CPUINFO_LIMIT)
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def bf16_held_back(environ=None):
    """The `ONEDNN_MAX_CPU_ISA` value that keeps oneDNN from bfloat16
    products (`ISA_WITHOUT_BF16`), or None."""
    value = (os.environ if environ is None else environ).get(ONEDNN_ISA, "")
    return value if value.strip().upper() in ISA_WITHOUT_BF16 else None


def choose_precision(
    requested, saved=None, gpu=False, flags=None, environ=None
):
    """`(mixed_precision, reason)`: the `TrainingConfig` value for the
    `--mixed-precision` flag's value, and why (None when the user chose).

    Args:
        requested: str. `auto`, `off`, or a `TrainingConfig` value.
        saved: the run directory's `config.json` values when it holds a
            run (a resumed run keeps its precision), else None.
        gpu: bool. Training runs on a GPU (auto keeps float32 there).
        flags: the CPU's flags (`cpu_flags()` when None).
        environ: the environment (`os.environ` when None): bfloat16 is
            neither chosen nor taken on a CPU while `ONEDNN_MAX_CPU_ISA`
            holds oneDNN below its bfloat16 products.
    """
    held_back = None if gpu else bf16_held_back(environ)
    value, reason = _choose(requested, saved, gpu, flags, held_back)
    if value == "bf16" and held_back:
        kept = " (the run resumes in the precision it started with)"
        raise KerasElmoError(
            f"bfloat16 cannot run here: {ONEDNN_ISA}={held_back} holds "
            "oneDNN below its bfloat16 products, which TensorFlow would "
            "still call (the process would abort)"
            + (kept if reason else "")
            + ". Train in float32 (`mixed_precision` 'off'), or unset the "
            "variable.",
            "mixed_precision",
            received=requested,
        )
    return value, reason


def _choose(requested, saved, gpu, flags, held_back):
    """`choose_precision` before its check of what oneDNN can run."""
    if requested == OFF:
        return None, None
    if requested != AUTO:
        return requested, None
    if saved is not None:
        value = saved.get("mixed_precision")
        return value, f"auto: the run resumes with its own {_name(value)}"
    if gpu:
        return None, "auto: float32 on a GPU"
    if held_back:
        return None, f"auto: {ONEDNN_ISA}={held_back} holds back bfloat16"
    flags = cpu_flags() if flags is None else flags
    native = [flag for flag in NATIVE_BF16_FLAGS if flag in flags]
    if native:
        return (
            "bf16",
            f"auto: this CPU multiplies bfloat16 natively ({native[0]})",
        )
    return None, "auto: this CPU has no native bfloat16"


def _name(value):
    return "float32" if value is None else value
