"""The hdf5 layouts of embedding dumps, without TensorFlow (SPEC §12).

`keras-elmo embed` writes AllenNLP's `allennlp elmo` layout (which extends
bilm-tf's): one float32 dataset `str(i)` for line `i` of the input (from 0)
and a `sentence_to_index` dataset, shape `(1,)` of one variable-length
string: the JSON object {sentence text (the line stripped of surrounding
whitespace): its dataset key}; a sentence given twice maps to its last
line. `dump-token-embeddings` writes bilm-tf's `embedding` dataset.
"""

import itertools
import json

import numpy as np

from keras_elmo.data.token_batches import DEFAULT_MAX_BATCH_TOKENS

# A batch of `embed`: at most this many sentences (and at most
# `DEFAULT_MAX_BATCH_TOKENS` padded token positions, why in
# keras_elmo/data/token_batches.py).
DEFAULT_SENTENCE_BATCH = 256
DEFAULT_TOKEN_BATCH = 1024
SENTENCE_INDEX = "sentence_to_index"
TOKEN_EMBEDDINGS = "embedding"

# Which layers a sentence's dataset holds (AllenNLP's --all / --top /
# --average): -> the shape of the dataset of an n-token sentence.
OUTPUT_LAYERS = {
    "all": "(num_layers + 1, n, 2 * projection_dim)",
    "top": "(n, 2 * projection_dim): the top LSTM layer",
    "average": "(n, 2 * projection_dim): the mean of all layers",
}
DEFAULT_OUTPUT_LAYERS = "all"
# Sentences read at a time, in batches' worth (`batch_size` each); sorted
# by length inside a chunk so that batches carry little padding.
BATCHES_PER_CHUNK = 16


def select_layers(layers, output_layers):
    """The dataset of one sentence: `layers` is float32
    `(num_layers + 1, n, width)`."""
    if output_layers == "top":
        return layers[-1]
    if output_layers == "average":
        return layers.mean(axis=0, dtype=np.float32)
    return layers


def write_sentence_index(out, index):
    """Writes the `sentence_to_index` dataset of `index` {text: key} into
    the open h5py file `out`."""
    import h5py

    dataset = out.create_dataset(
        SENTENCE_INDEX, (1,), dtype=h5py.string_dtype(encoding="utf-8")
    )
    dataset[0] = json.dumps(index)


def write_sentence_embeddings(
    layers_of,
    input_file,
    output_file,
    batch_size,
    verbose=1,
    on_bad_line="error",
    output_layers=DEFAULT_OUTPUT_LAYERS,
    sentence_index=True,
    max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
):
    """Writes the embedding of every line of `input_file` to the hdf5 file
    `output_file` (atomically), in the layout above, whatever runs the biLM.

    Args:
        layers_of: callable: a batch of tokenised sentences -> float32
            `(batch, num_layers + 1, time, 2 * projection_dim)`.
        input_file, output_file, batch_size, verbose, on_bad_line,
        output_layers, sentence_index, max_batch_tokens: as
            `keras_elmo.embedding_files.bilm_dump.embed_file`.

    Returns:
        The number of sentences written.
    """
    from keras_elmo.data.text import check_unchanged
    from keras_elmo.data.text import count_lines
    from keras_elmo.data.text import file_version
    from keras_elmo.data.text import read_text_lines
    from keras_elmo.data.text import split_tokens
    from keras_elmo.data.token_batches import token_batches
    from keras_elmo.files import hdf5_output
    from keras_elmo.utils.progress import Progress

    # Reads the whole input first: bad UTF-8 or gzip fails before any work.
    version = file_version(input_file)
    total = count_lines(input_file, on_bad_line)
    progress = Progress(total, "sentence", verbose, label="embed")
    lines = read_text_lines(input_file, on_bad_line)
    index = {}
    with hdf5_output(output_file) as out:
        done = 0
        while chunk := list(
            itertools.islice(lines, batch_size * BATCHES_PER_CHUNK)
        ):
            # In line order, so a repeated sentence maps to its last line.
            if sentence_index:
                index.update((text.strip(), str(n - 1)) for n, text in chunk)
            sentences = [(n, split_tokens(text)) for n, text in chunk]
            lengths = [len(tokens) for _, tokens in sentences]
            for rows in token_batches(lengths, max_batch_tokens, batch_size):
                batch = [sentences[i] for i in rows]
                values = layers_of([tokens for _, tokens in batch])
                for row, (n, tokens) in enumerate(batch):
                    out.create_dataset(
                        str(n - 1),
                        data=select_layers(
                            values[row, :, : len(tokens)], output_layers
                        ),
                    )
                done += len(batch)
                progress.update(done)
        check_unchanged(input_file, version, total, done)
        if sentence_index:
            write_sentence_index(out, index)
    return done


def write_token_embeddings(
    embed_tokens, vocab_file, output_file, width, verbose=1
):
    """Writes the `embedding` dataset of every line of `vocab_file` to the
    hdf5 file `output_file` (atomically: `files.hdf5_output`), whatever
    runs the biLM.

    Args:
        embed_tokens: callable: an iterator of token strings -> an
            iterator of float32 arrays `(rows, width)`, in order.
        vocab_file: str. One token a line (an empty line, an empty token).
        output_file: str. The hdf5 file.
        width: int. The biLM's `projection_dim`.
        verbose: 0 or 1.

    Returns:
        The number of tokens written.
    """
    from keras_elmo.data.text import check_unchanged
    from keras_elmo.data.text import count_lines
    from keras_elmo.data.text import file_version
    from keras_elmo.data.text import iter_sentences
    from keras_elmo.files import hdf5_output
    from keras_elmo.utils.progress import Progress

    version = file_version(vocab_file)
    total = count_lines(vocab_file)
    progress = Progress(total, "token", verbose, label="dump")
    # A vocabulary line is one token; an empty line an empty token. A line
    # past the count is a change of the file (checked below), not a row.
    words = (" ".join(line) for line in iter_sentences(vocab_file))
    words = itertools.islice(words, total)
    with hdf5_output(output_file) as out:
        embedding = out.create_dataset(
            TOKEN_EMBEDDINGS, shape=(total, width), dtype="float32"
        )
        start = 0
        for values in embed_tokens(words):
            embedding[start : start + len(values)] = values
            start += len(values)
            progress.update(start)
        check_unchanged(vocab_file, version, total, start)
    return total
