"""An exported biLM file (`.onnx`, `.tflite`) run over text files, in the
hdf5 layouts of `keras_elmo.dump`, without TensorFlow: what `keras-elmo
embed` and `dump-token-embeddings` run for `--model FILE.onnx|.tflite`.

The layouts are those of `keras_elmo.dump.embed_file` (dataset `str(i)`,
float32 `(num_layers + 1, n_i, 2 * projection_dim)` for line i) and
`dump_token_embeddings` (dataset `embedding`, `(num_tokens,
projection_dim)`); the token embedding of an exported model is the first
half of its layer 0 for a one-token sentence (layer 0 is `[e, e]`).
"""

import itertools
import os

import numpy as np

from keras_elmo.errors import KerasElmoError

# File suffix -> the runtime that runs it.
RUNTIMES = {".onnx": "onnx", ".tflite": "litert"}
# Sentences read at a time; sorted by length inside a chunk so that batches
# carry little padding (as keras_elmo.dump).
_BATCHES_PER_CHUNK = 16


def runtime_of(path):
    """`"onnx"` or `"litert"` when `path` names an exported model file
    (by its suffix), else None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return RUNTIMES.get(suffix)


def open_model(path, runtime=None, precision=None, num_threads=None):
    """The exported model at `path`, loaded by its runtime, after checking
    it against `--runtime` / `--precision` when they were given.

    Raises:
        KerasElmoError: the file is missing, of another runtime than
            `runtime`, or of another precision than `precision`.
    """
    from keras_elmo import runtime as runtimes

    kind = runtime_of(path)
    if kind is None:
        raise KerasElmoError(
            f"--model {path}: not an exported model file; expected a .onnx "
            "(keras-elmo export-onnx) or .tflite (export-litert) file."
        )
    if runtime not in (None, kind):
        raise KerasElmoError(
            f"--model {path} is a {kind} model but --runtime is {runtime}; "
            f"drop --runtime, or pass --runtime {kind}."
        )
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}[kind]
    model = load(path, num_threads=num_threads)
    if precision not in (None, model.precision):
        raise KerasElmoError(
            f"--model {path} was exported in {model.precision} but "
            f"--precision is {precision}; drop --precision (a file has one "
            "precision), or export the biLM again in the one you want."
        )
    return model


def _batches(sentences, batch_size):
    """Batches of `(line_number, tokens)`, sorted by length per chunk."""
    while chunk := list(
        itertools.islice(sentences, batch_size * _BATCHES_PER_CHUNK)
    ):
        chunk.sort(key=lambda item: len(item[1]))
        for start in range(0, len(chunk), batch_size):
            yield chunk[start : start + batch_size]


def embed_file(
    model, input_file, output_file, batch_size, verbose=1, on_bad_line="error"
):
    """`keras_elmo.dump.embed_file` for an exported model.

    Returns:
        The number of sentences written.
    """
    import h5py

    from keras_elmo.data.text import count_lines
    from keras_elmo.data.text import read_lines
    from keras_elmo.files import atomic_output
    from keras_elmo.files import check_output_file
    from keras_elmo.progress import Progress

    check_output_file(output_file, inputs=[input_file, model.path])
    total = count_lines(input_file, on_bad_line)
    progress = Progress(total, "sentence", verbose, label="embed")
    sentences = read_lines(input_file, on_bad_line)
    done = 0
    with atomic_output(output_file) as temporary:
        with h5py.File(temporary, "w") as out:
            for batch in _batches(sentences, batch_size):
                layers = model([tokens for _, tokens in batch])
                values = np.stack(layers["layer_outputs"], axis=1)
                for row, (line_number, tokens) in enumerate(batch):
                    out.create_dataset(
                        str(line_number - 1),
                        data=values[row, :, : len(tokens)],
                    )
                done += len(batch)
                progress.update(done)
    return total


def dump_token_embeddings(
    model, vocab_file, output_file, batch_size, verbose=1
):
    """`keras_elmo.dump.dump_token_embeddings` for an exported model.

    Returns:
        The number of tokens written.
    """
    import h5py

    from keras_elmo.data.text import count_lines
    from keras_elmo.data.text import iter_sentences
    from keras_elmo.files import atomic_output
    from keras_elmo.files import check_output_file
    from keras_elmo.progress import Progress

    check_output_file(output_file, inputs=[vocab_file, model.path])
    total = count_lines(vocab_file)
    progress = Progress(total, "token", verbose, label="dump")
    # A vocabulary line is one token; an empty line an empty token.
    words = (" ".join(line) for line in iter_sentences(vocab_file))
    with atomic_output(output_file) as temporary:
        with h5py.File(temporary, "w") as out:
            embedding = out.create_dataset(
                "embedding",
                shape=(total, model.projection_dim),
                dtype="float32",
            )
            start = 0
            while chunk := list(itertools.islice(words, batch_size)):
                values = model([[word] for word in chunk])
                embedding[start : start + len(chunk)] = values[
                    "token_embeddings"
                ][:, 0]
                start += len(chunk)
                progress.update(start)
    return total
