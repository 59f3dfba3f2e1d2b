"""The precision a training run computes in when the user does not say.

`keras-elmo train --mixed-precision auto` (the default) trains in
bfloat16 mixed precision on a CPU that multiplies bfloat16 natively (the
`avx512_bf16` or `amx_bf16` instructions), and in float32 everywhere else:
on the bundled corpus's `cpu` size a step took a quarter less time there
(docs/benchmarks.md, "The main job"). Without those instructions
there is no measured gain to count on (with oneDNN held to AVX2 on that
CPU, `ONEDNN_MAX_CPU_ISA=AVX2`, TensorFlow's bfloat16 convolution did not
run at all). Weights, the LSTM cell state, the softmax and the loss stay
float32 either way (`TrainingConfig`).

A run that resumes keeps the precision it started with, whatever the
machine it resumes on. This is the command's choice: the Python
`train(config)` computes in `config.mixed_precision` as given (None:
float32). TensorFlow-free: `--help` reads it.
"""

# `--mixed-precision` values: `auto` chooses, `off` is float32, the others
# are `TrainingConfig.mixed_precision` values.
AUTO = "auto"
OFF = "off"
# /proc/cpuinfo flags of CPUs that multiply bfloat16 natively.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
CPUINFO = "/proc/cpuinfo"
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


def choose_precision(requested, saved=None, gpu=False, flags=None):
    """`(mixed_precision, reason)`: the `TrainingConfig` value for the
    `--mixed-precision` flag's value, and why (None when the user chose).

    Args:
        requested: str. `auto`, `off`, or a `TrainingConfig` value.
        saved: the run directory's `config.json` values when it holds a
            run (a resumed run keeps its precision), else None.
        gpu: bool. Training runs on a GPU (auto keeps float32 there).
        flags: the CPU's flags (`cpu_flags()` when None).
    """
    if requested == OFF:
        return None, None
    if requested != AUTO:
        return requested, None
    if saved is not None:
        value = saved.get("mixed_precision")
        return value, f"auto: the run resumes with its own {_name(value)}"
    if gpu:
        return None, "auto: float32 on a GPU"
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
