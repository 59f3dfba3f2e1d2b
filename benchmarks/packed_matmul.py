"""The LSTM step's products on PyTorch: `torch.mm` against a weight packed
once for oneDNN (`keras_elmo/layers/backends/torch_matmul.py`).

    python benchmarks/packed_matmul.py [--threads 2] [--repeats 30]

For the weights of the small and original biLM sizes (recurrent kernel,
projection, and their transposes in the backward pass) and 1 to 64 rows,
prints milliseconds per product both ways and their ratio: the table in
`torch_matmul.py`'s docstring, from which `MIN_PACKED_ELEMENTS` is chosen.
"""

import argparse
import time

import torch
from backends import cpu_name  # benchmarks/backends.py

from keras_elmo.layers.backends import torch_matmul

# (K, N) of `x @ weight`: the original size (P 512, H 4096), then the
# small size (P 128, H 1024).
WEIGHTS = [
    (512, 16384), (16384, 512), (4096, 512), (512, 4096),
    (128, 4096), (4096, 128), (1024, 128), (128, 1024),
]  # fmt: skip
ROWS = (1, 2, 4, 8, 16, 32, 64)


def milliseconds(function, repeats):
    function()
    function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    onednn = "available" if torch_matmul.onednn_available() else "MISSING"
    print(f"CPU: {cpu_name()}, {args.threads} thread(s), torch "
          f"{torch.__version__}, oneDNN {onednn}")  # fmt: skip
    for k, n in WEIGHTS:
        weight = torch.randn(k, n) / k**0.5
        with torch_matmul.packing_from(0):  # packed whatever its size
            packed = torch_matmul.RepeatedMatmul(weight)
        for rows in ROWS:
            x, out = torch.randn(rows, k), torch.empty(rows, n)
            plain = milliseconds(
                lambda: torch.mm(x, weight, out=out), args.repeats
            )
            fast = milliseconds(lambda: packed(x, out=out), args.repeats)
            print(f"{k:>6} x {n:<6} {rows:>3} rows: torch.mm {plain:7.3f} ms, "
                  f"packed {fast:7.3f} ms, {plain / fast:5.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
