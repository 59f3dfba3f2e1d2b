"""The hdf5 layouts of embedding dumps, without TensorFlow (SPEC §12).

`keras-elmo embed` writes AllenNLP's `allennlp elmo` layout (which extends
bilm-tf's): one float32 dataset `str(i)` for line `i` of the input (from 0)
and a `sentence_to_index` dataset, shape `(1,)` of one variable-length
string: the JSON object {sentence text (the line stripped of surrounding
whitespace): its dataset key}; a sentence given twice maps to its last
line. `dump-token-embeddings` writes bilm-tf's `embedding` dataset.

`embed` of a protein FASTA file writes, keyed by record id, the groups
`per_residue` and / or `per_protein` (`write_protein_embeddings`), the
JSON datasets `id_to_hash` and (records left out) `bad_records`.
"""

import itertools
import json

import numpy as np

from elmo_core.embedding_files.inputs import DEFAULT_PROTEIN_VECTORS
from elmo_core.embedding_files.inputs import PER_PROTEIN
from elmo_core.embedding_files.inputs import PER_RESIDUE
from elmo_core.embedding_files.inputs import PROTEIN_VECTORS
from elmo_core.embedding_files.inputs import input_settings
from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.errors.blame import about
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION
from elmo_core.text.tokenizers import tokenizer

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

# `embed` of a FASTA file writes, per record id, the groups of the vectors
# asked for (`inputs.PROTEIN_VECTORS`: `per_residue`, `per_protein`), and:
ID_TO_HASH = "id_to_hash"  # JSON {id: md5 of the sequence}
BAD_RECORDS = "bad_records"  # JSON [{"line", "id", "reason", "detail"}]


def check_embed_settings(
    batch_size, max_batch_tokens, output_layers, input_file=None
):
    """`(batch_size, max_batch_tokens, output_layers)` of an `embed` run,
    checked before anything is loaded (and `input_file`, when given: a
    readable file)."""
    from elmo_core.errors import check_choice
    from elmo_core.errors import check_integer
    from elmo_core.files.paths import check_input_file

    if input_file is not None:
        check_input_file(
            input_file,
            "`input_file`",
            "a text file of one sentence a line, or a FASTA file",
            argument="input_file",
        )
    return (
        check_integer(batch_size, "batch_size", minimum=1),
        check_integer(max_batch_tokens, "max_batch_tokens", minimum=1),
        check_choice(
            output_layers, "output_layers", choices=tuple(OUTPUT_LAYERS)
        ),
    )


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
    split=None,
):
    """Writes the embedding of every line of `input_file` to the hdf5 file
    `output_file` (atomically), in the layout above, whatever runs the biLM.

    Args:
        layers_of: callable: a batch of tokenised sentences -> float32
            `(batch, num_layers + 1, time, 2 * projection_dim)`.
        input_file, output_file, batch_size, verbose, on_bad_line,
        output_layers, sentence_index, max_batch_tokens: as
            `keras_elmo.corpus.bilm_dump.embed_file`.
        split: callable: a line -> its tokens. Defaults to the
            `whitespace` tokenisation (`elmo_core.text.tokenizers`: the
            line's normal form split at whitespace).

    Returns:
        The number of sentences written.
    """
    from elmo_core.embedding_files.token_batches import token_batches
    from elmo_core.files import hdf5_output
    from elmo_core.progress import Progress
    from elmo_core.text.lines import check_unchanged
    from elmo_core.text.lines import count_lines
    from elmo_core.text.lines import file_version
    from elmo_core.text.lines import read_text_lines

    # Reads the whole input first: bad UTF-8 or gzip fails before any
    # work, as an error about `input_file`.
    with about("input_file"):
        version = file_version(input_file)
        total = count_lines(input_file, on_bad_line)
    progress = Progress(total, "sentence", verbose, label="embed")
    lines = read_text_lines(input_file, on_bad_line)
    split = split or tokenizer().tokenize
    index = {}
    with hdf5_output(output_file) as out:
        done = 0
        while chunk := list(
            itertools.islice(lines, batch_size * BATCHES_PER_CHUNK)
        ):
            # In line order, so a repeated sentence maps to its last line.
            if sentence_index:
                index.update((text.strip(), str(n - 1)) for n, text in chunk)
            sentences = [(n, split(text)) for n, text in chunk]
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


def write_embeddings(
    layers_of,
    input_file,
    output_file,
    batch_size,
    input_format=None,
    max_residues=None,
    protein_vectors=None,
    sentence_index=True,
    tokenize=DEFAULT_TOKENIZATION,
    language=DEFAULT_LANGUAGE,
    **options,
):
    """`write_sentence_embeddings` (lines split by `tokenize` for
    `language`), or for FASTA input (`input_format`, by the suffix when
    None; the settings checked by `inputs.input_settings`)
    `write_protein_embeddings`; `options` (`verbose`, `on_bad_line`,
    `output_layers`, `max_batch_tokens`) go to either."""
    split = tokenizer(tokenize, language).tokenize
    settings = input_settings(
        [input_file],
        input_format,
        max_residues,
        protein_vectors,
        tokenize,
        sentence_index,
    )
    if settings.input_format == "fasta":
        return write_protein_embeddings(
            layers_of,
            input_file,
            output_file,
            batch_size,
            max_residues=settings.max_residues,
            protein_vectors=settings.protein_vectors,
            **options,
        )
    return write_sentence_embeddings(
        layers_of,
        input_file,
        output_file,
        batch_size,
        sentence_index=sentence_index,
        split=split,
        **options,
    )


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
    from elmo_core.files import hdf5_output
    from elmo_core.progress import Progress
    from elmo_core.text.lines import check_unchanged
    from elmo_core.text.lines import count_lines
    from elmo_core.text.lines import file_version
    from elmo_core.text.lines import iter_sentences

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


# === Proteins (FASTA input) ===


def protein_vector(layers, output_layers):
    """The per-protein vector of one protein's float32 `(num_layers + 1,
    n, width)` layers: SeqVec's rule, the sum over the layers then the
    mean over the residues, for `"all"`; the mean over the residues of
    the layer (or mix) chosen otherwise (`mixed`, `(n, width)`)."""
    if output_layers == "all":
        return layers.sum(axis=0, dtype=np.float32).mean(axis=0)
    return layers.mean(axis=0, dtype=np.float32)


def write_json_dataset(out, name, value):
    """A `(1,)` dataset of one UTF-8 string, the JSON of `value`."""
    import h5py

    dataset = out.create_dataset(
        name, (1,), dtype=h5py.string_dtype(encoding="utf-8")
    )
    dataset[0] = json.dumps(value)


def _fasta_error(path, record):
    from elmo_core.errors import TextFileError
    from elmo_core.text.bad_lines import TOO_LONG

    fix, argument = "Fix the record", "on_bad_line"
    if record.reason == TOO_LONG:
        # A longer record takes memory in proportion to its length.
        fix, argument = "Raise `max_residues` to embed it", "max_residues"
    return TextFileError(
        f"{path}, line {record.line} (record {record.id or '(no id)'}): "
        f"{record.detail} [{record.reason}]. {fix}, or leave such records "
        "out with `on_bad_line` 'skip' (they are listed in the output's "
        f"{BAD_RECORDS}).",
        argument,
    )


def _checked_records(input_file, max_residues, on_bad_line, bad):
    """The records of a FASTA file, each good one once per id: a repeat
    of an id with the same sequence is left out (it is the same
    dataset), and an id given to another sequence, or one that cannot be
    an hdf5 name (holds '/'), is bad: an error, or listed in `bad`."""
    from elmo_core.proteins.fasta import read_fasta
    from elmo_core.proteins.fasta import sequence_hash
    from elmo_core.text.bad_lines import BAD_ID
    from elmo_core.text.bad_lines import DUPLICATE_ID

    hashes = {}
    for record in read_fasta(input_file, max_residues):
        digest = None
        if record.reason is None:
            digest = sequence_hash(record.sequence)
            known = hashes.get(record.id)
            if "/" in record.id or record.id in (".", ".."):
                record = record._replace(
                    reason=BAD_ID,
                    detail=f"the id {record.id!r} cannot name an hdf5 "
                    "dataset ('/' separates hdf5 groups); rename it",
                )
            elif known == digest:
                continue
            elif known is not None:
                record = record._replace(
                    reason=DUPLICATE_ID,
                    detail=f"the id {record.id!r} was given to another "
                    "sequence before; ids must be unique",
                )
        if record.reason is not None:
            if on_bad_line == "error":
                raise _fasta_error(input_file, record)
            bad.append(record)
            continue
        hashes[record.id] = digest
        yield record, digest


def write_protein_embeddings(
    layers_of,
    input_file,
    output_file,
    batch_size,
    verbose=1,
    on_bad_line="error",
    output_layers=DEFAULT_OUTPUT_LAYERS,
    max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
    max_residues=None,
    protein_vectors=DEFAULT_PROTEIN_VECTORS,
):
    """Writes the vectors of every protein of a FASTA file to the hdf5
    file `output_file` (atomically), keyed by record id: `per_residue/ID`
    (the record's layers, as `output_layers` picks for a line),
    `per_protein/ID` (`protein_vector`), `id_to_hash` and, for records
    left out, `bad_records`. A sequence under several ids is embedded
    once: the other ids are hdf5 hard links to its datasets.

    Args:
        layers_of, batch_size, verbose, output_layers, max_batch_tokens:
            as `write_sentence_embeddings`.
        input_file: str. A FASTA file (`elmo_core.proteins.fasta`).
        on_bad_line: `"error"` stops before any work at the first bad
            record; `"skip"` leaves bad records out and lists them.
        max_residues: int. A longer record is bad. Defaults to
            `elmo_core.proteins.fasta.DEFAULT_MAX_RESIDUES`.
        protein_vectors: `"both"` (default), `"per-residue"` or
            `"per-protein"`: which groups are written.

    Returns:
        The number of ids written.
    """
    from elmo_core.files import hdf5_output
    from elmo_core.progress import Progress
    from elmo_core.proteins.fasta import DEFAULT_MAX_RESIDUES
    from elmo_core.text.lines import check_unchanged
    from elmo_core.text.lines import file_version

    if max_residues is None:
        max_residues = DEFAULT_MAX_RESIDUES
    groups = PROTEIN_VECTORS[protein_vectors]
    # Checks the whole input first: a bad record fails before any work,
    # as an error about `input_file`.
    bad = []
    with about("input_file"):
        version = file_version(input_file)
        id_to_hash = {
            record.id: digest
            for record, digest in _checked_records(
                input_file, max_residues, on_bad_line, bad
            )
        }
    total = len(id_to_hash)
    progress = Progress(total, "protein", verbose, label="embed")
    records = _checked_records(input_file, max_residues, "skip", [])
    written = {}  # sequence hash -> the first id written with it
    done = 0
    with hdf5_output(output_file) as out:
        for group in groups:
            out.create_group(group)
        while chunk := list(
            itertools.islice(records, batch_size * BATCHES_PER_CHUNK)
        ):
            vectors = _chunk_vectors(
                layers_of, chunk, written, batch_size, max_batch_tokens,
                output_layers,
            )  # fmt: skip
            for record, digest in chunk:
                for group in groups:
                    if digest in written:  # embedded once: a hard link
                        out[group][record.id] = out[group][written[digest]]
                    else:
                        out[group].create_dataset(
                            record.id, data=vectors[digest][group]
                        )
                written.setdefault(digest, record.id)
                done += 1
            progress.update(done)
        check_unchanged(input_file, version, total, done)
        write_json_dataset(out, ID_TO_HASH, id_to_hash)
        if bad:
            write_json_dataset(out, BAD_RECORDS, _bad_records(bad))
    return done


def _chunk_vectors(
    layers_of, chunk, written, batch_size, max_batch_tokens, output_layers
):
    """{sequence hash: {group: array}} of the sequences of `chunk` (its
    `(record, hash)` pairs) not `written` yet, each embedded once."""
    from elmo_core.embedding_files.token_batches import token_batches

    new = {}  # hash -> sequence, embedded in this chunk
    for record, digest in chunk:
        if digest not in written and digest not in new:
            new[digest] = record.sequence
    order = list(new)
    lengths = [len(new[digest]) for digest in order]
    vectors = {}
    for rows in token_batches(lengths, max_batch_tokens, batch_size):
        values = layers_of([list(new[order[i]]) for i in rows])
        for row, i in enumerate(rows):
            layers = values[row, :, : lengths[i]]
            chosen = select_layers(layers, output_layers)
            vectors[order[i]] = {
                PER_RESIDUE: chosen,
                PER_PROTEIN: protein_vector(
                    layers if output_layers == "all" else chosen,
                    output_layers,
                ),
            }
    return vectors


def _bad_records(bad):
    """The `bad_records` dataset's JSON: each bad record's line, id,
    reason and detail."""
    return [
        {"line": r.line, "id": r.id, "reason": r.reason, "detail": r.detail}
        for r in bad
    ]
