"""How much int16 saturation would cost the ONNX int8 export on a CPU with
AVX2 (or AVX-512) but no VNNI, measured on any CPU by emulation.

    python benchmarks/int8_saturation.py FLOAT32.onnx [--rows 300]

onnxruntime's u8 x s8 kernel on such CPUs multiplies with `vpmaddubsw`:
two adjacent products a[2j] * w[2j] + a[2j + 1] * w[2j + 1] (uint8
activations, int8 weights) are added into a saturating int16 before the
int32 accumulation. This script quantizes the float32 export (from
`keras-elmo export-onnx`) twice, with 8-bit weights and with the 7-bit
weights the package uses, takes the uint8 activations that reach the LSTM
input products (the MatMulIntegers outside the loops) for a batch of
held-out sentences, and compares the exact int32 products with the
saturating pair sums: the share of outputs changed and the relative L1
error of the integer products (before the zero-point correction, which
does not depend on the kernel).
"""

import argparse
import logging
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def quantize(source, target, reduce_range):
    from onnxruntime import quantization

    logging.disable(logging.WARNING)
    quantization.quantize_dynamic(
        source,
        target,
        weight_type=quantization.QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        reduce_range=reduce_range,
        extra_options={
            "EnableSubgraph": True,
            "MatMulConstBOnly": True,
            "WeightSymmetric": True,
        },
    )
    logging.disable(logging.NOTSET)


def activations(model, ids):
    """{MatMulInteger name: (uint8 activations 2-D, int8 weights)}."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    initializers = {t.name: t for t in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    for node in matmuls:
        output = onnx.helper.make_empty_tensor_value_info(node.input[0])
        model.graph.output.append(output)
    options = ort.SessionOptions()
    # No fusion: the quantized activations stay visible.
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(None, {"character_ids": ids})))
    result = {}
    for node in matmuls:
        a = values[node.input[0]]
        weights = numpy_helper.to_array(initializers[node.input[1]])
        result[node.name] = (a.reshape(-1, a.shape[-1]), weights)
    return result


def saturating_product(a, w):
    """a @ w with every adjacent k pair clipped to int16 (vpmaddubsw)."""
    a, w = a.astype(np.int64), w.astype(np.int64)
    total = np.zeros((a.shape[0], w.shape[1]), np.int64)
    for j in range(0, w.shape[0], 2):
        pair = a[:, j : j + 1] * w[j]
        if j + 1 < w.shape[0]:
            pair += a[:, j + 1 : j + 2] * w[j + 1]
        total += np.clip(pair, -(2**15), 2**15 - 1)
    return total


def main():
    import deploy
    import onnx

    from elmo_core.runtime import batch_to_ids

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a float32 export (.onnx)")
    parser.add_argument("--rows", type=int, default=300)
    args = parser.parse_args()
    ids = batch_to_ids(deploy.real_sentences(64, 25))
    with tempfile.TemporaryDirectory() as directory:
        for bits, reduce_range in ((8, False), (7, True)):
            path = os.path.join(directory, f"int{bits}.onnx")
            quantize(args.model, path, reduce_range)
            found = activations(onnx.load(path), ids)
            for name, (a, w) in found.items():
                if "Tensordot" not in name:  # the LSTM input products
                    continue
                a = a[: args.rows]
                exact = a.astype(np.int64) @ w.astype(np.int64)
                emulated = saturating_product(a, w)
                changed = float(np.mean(emulated != exact))
                error = np.abs(emulated - exact).sum() / np.abs(exact).sum()
                print(
                    f"{bits}-bit weights (max |w| {np.abs(w).max()}) {name}: "
                    f"{changed:.1%} of outputs saturated, relative L1 "
                    f"error {error:.2%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
