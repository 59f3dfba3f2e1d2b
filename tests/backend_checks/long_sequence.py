"""One backend embeds long protein-like sequences (run as a child).

    python long_sequence.py OPTIONS WEIGHTS OUT_DIR

With `KERAS_BACKEND` set, loads an AllenNLP-format file pair with
`keras_elmo.load_bilm` and embeds, one sequence a call (batch of one,
one residue a token, as SeqVec does), a 100-residue sequence, a
1,000-residue one and a 5,000-residue one, then the 100-residue one
again. Writes `results.npz` (the 1,000-residue layers, the per-protein
means of the 5,000-residue one, both 100-residue results) and
`results.json` (the backend, seconds per call, the peak resident memory
of the process in MB).
"""

import json
import os
import resource
import sys
import time

import numpy as np

import keras_elmo

AMINO_ACIDS = list("ACDEFGHIKLMNPQRSTVWY")
LENGTHS = (100, 1000, 5000)


def sequences():
    """The test sequences: random residues, one seed."""
    rng = np.random.default_rng(26)
    return {n: list(rng.choice(AMINO_ACIDS, size=n)) for n in LENGTHS}


def embed(bilm, sequence):
    """`(3, len, 1024)` float32: every layer of one sequence."""
    import keras

    ids = keras_elmo.batch_to_ids([sequence])
    if keras.backend.backend() == "torch":
        import torch

        with torch.no_grad():
            layers = bilm(ids)["layer_outputs"]
    else:
        layers = bilm(ids)["layer_outputs"]
    return np.stack([keras.ops.convert_to_numpy(x)[0] for x in layers])


def main(options, weights, out):
    import keras

    bilm = keras_elmo.load_bilm(options, weights)
    found, seconds = {}, {}
    for name, n in (("first", 100), ("long", 1000), ("longest", 5000),
                    ("again", 100)):  # fmt: skip
        start = time.perf_counter()
        found[name] = embed(bilm, sequences()[n])
        seconds[name] = time.perf_counter() - start
    np.savez(
        os.path.join(out, "results.npz"),
        first=found["first"],
        again=found["again"],
        long=found["long"],
        longest_mean=found["longest"].mean(axis=1),
        longest_shape=np.asarray(found["longest"].shape),
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(
            {
                "backend": keras.backend.backend(),
                "seconds": seconds,
                "peak_mb": peak,
            },  # fmt: skip
            f,
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
