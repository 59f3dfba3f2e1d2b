"""tf.data pipelines: text shards -> language-model batches.

A corpus is one or more text files ("shards") of one whitespace-tokenised
sentence a line. `scan_corpus` reads it once in Python (checking UTF-8,
counting sentences and tokens, and computing the exact number of batches an
epoch holds), and `lm_dataset` streams it with `tf.data`:

    files (shuffled per epoch) -> interleaved lines -> tokens
    -> sentences longer than `max_length` split evenly into pieces
    -> shuffle buffer -> length buckets, batched by token budget
    -> in-graph character ids, forward and backward targets

Batches follow the KerasHub causal-LM convention `(x, y, sample_weight)`:
`x = {"character_ids": (B, T, 50)}` (for a word-input biLM
`{"token_ids": (B, T)}`, vocabulary line + 1); `y` int32 `(B, 2, T + 2)`
holds the forward targets (position j predicts the token at j + 1 of
`<S> tokens </S>`) and the backward targets (position j predicts j - 1);
`sample_weight` float32 `(B, 2, T + 2)` is 1 where a target exists.

Everything is deterministic for a given seed, and a stream can start at any
global step (`start_step`), which is how interrupted training resumes.
"""

import dataclasses
import math

import keras
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.errors.backends import require_tensorflow
from elmo_core.errors.blame import about
from elmo_core.settings.batches import check_batch_budget
from elmo_core.text.lines import WHITESPACE_PATTERN
from elmo_core.text.lines import check_on_bad_line
from elmo_core.text.lines import read_lines
from keras_elmo.data.character_ids import tokens_to_char_ids
from keras_elmo.data.word_ids import lookup_table

_SHUFFLE_BUFFER = 20000


def split_lengths(length, max_length):
    """Lengths of the even pieces a sentence of `length` tokens is cut into."""
    pieces = max(1, math.ceil(length / max_length))
    base, extra = divmod(length, pieces)
    return [base + 1] * extra + [base] * (pieces - extra)


def bucket_plan(max_length, tokens_per_batch):
    """Bucket boundaries and the batch size of each bucket.

    A bucket holds sentences shorter than its boundary; its batch size keeps
    `batch * (longest + 2)` within `tokens_per_batch` (the biLM adds `<S>`
    and `</S>`).
    """
    boundaries = []
    edge = 4
    while edge <= max_length:
        boundaries.append(edge)
        edge += max(4, edge // 4)
    boundaries.append(max_length + 1)
    sizes = [max(1, tokens_per_batch // (b + 1)) for b in boundaries]
    # The last bucket (lengths > max_length) is always empty.
    return boundaries, sizes + [1]


@dataclasses.dataclass
class CorpusScan:
    """What one pass over a corpus found (see `scan_corpus`)."""

    files: list
    num_sentences: int
    num_tokens: int
    num_split: int
    steps_per_epoch: int
    skipped_lines: list
    empty_files: list
    max_length: int
    tokens_per_batch: int

    def summary(self):
        lines = [
            f"{len(self.files)} file(s), {self.num_sentences:,} sentences, "
            f"{self.num_tokens:,} tokens, {self.steps_per_epoch:,} batches "
            f"of <= {self.tokens_per_batch:,} tokens per epoch"
        ]
        if self.num_split:
            lines.append(
                f"{self.num_split:,} sentence(s) longer than "
                f"{self.max_length} tokens are split into pieces"
            )
        if self.skipped_lines:
            where = ", ".join(f"{f}:{n}" for f, n in self.skipped_lines[:5])
            more = len(self.skipped_lines) - 5
            lines.append(
                f"{len(self.skipped_lines):,} line(s) that are not UTF-8 are "
                f"skipped ({where}{f' and {more} more' if more > 0 else ''})"
            )
        for path in self.empty_files:
            lines.append(f"{path} holds no sentences; it is skipped")
        return lines


def _lines_of(path, on_bad_line, skipped):
    """`read_lines` of one of the `files` a scan was given: what is wrong
    with the file is about `files`."""
    with about("files"):
        yield from read_lines(path, on_bad_line, skipped)


def scan_corpus(
    files, max_length=100, tokens_per_batch=4096, on_bad_line="error"
):
    """Reads a corpus once: checks it and counts what an epoch holds.

    Args:
        files: list of str (see `resolve_files`).
        max_length: int. Longer sentences are split evenly into pieces of at
            most this many tokens (never dropped).
        tokens_per_batch: int. Token budget of a batch (boundaries included).
        on_bad_line: `"error"` to stop at the first line that is not UTF-8
            (naming file and line), `"skip"` to leave such lines out and
            report them.

    Returns:
        A `CorpusScan`.

    Example:

    >>> scan = keras_elmo.data.scan_corpus(
    ...     ["tests/fixtures/bilm-tf/train/data.txt"], tokens_per_batch=256)
    >>> scan.num_sentences, scan.num_tokens, scan.steps_per_epoch
    (5, 134, 4)
    """
    check_on_bad_line(on_bad_line)
    check_batch_budget(max_length, tokens_per_batch)
    files = check_strings(files, "files")
    if not files:
        raise KerasElmoError(
            "`files` is empty; give the text files to scan (see "
            "`resolve_files`).",
            "files",
            received=files,
        )
    boundaries, sizes = bucket_plan(max_length, tokens_per_batch)
    bucket_counts = [0] * len(sizes)
    num_sentences = num_tokens = num_split = 0
    skipped, empty_files = [], []
    for path in files:
        sentences_in_file = 0
        for _, tokens in _lines_of(path, on_bad_line, skipped):
            length = len(tokens)
            if not length:
                continue
            sentences_in_file += 1
            num_tokens += length
            pieces = split_lengths(length, max_length)
            num_split += len(pieces) > 1
            for piece in pieces:
                num_sentences += 1
                bucket = sum(piece >= b for b in boundaries)
                bucket_counts[bucket] += 1
        if not sentences_in_file:
            empty_files.append(path)
    if not num_sentences:
        raise KerasElmoError(
            f"No sentences found in {', '.join(files)}: the files are empty "
            "or hold only blank lines. Training needs one tokenised sentence "
            "a line."
        )
    steps = sum(math.ceil(c / s) for c, s in zip(bucket_counts, sizes))
    return CorpusScan(
        files=list(files),
        num_sentences=num_sentences,
        num_tokens=num_tokens,
        num_split=num_split,
        steps_per_epoch=steps,
        skipped_lines=skipped,
        empty_files=empty_files,
        max_length=int(max_length),
        tokens_per_batch=int(tokens_per_batch),
    )


def _split_long(tokens, max_length):
    """Splits a 1-D token tensor into even pieces (as `split_lengths`)."""
    length = tf.size(tokens)
    pieces = tf.maximum(1, (length + max_length - 1) // max_length)
    base, extra = length // pieces, length % pieces
    # Piece i starts at i * base + min(i, extra).
    starts = tf.range(pieces + 1) * base + tf.minimum(
        tf.range(pieces + 1), extra
    )
    return tf.data.Dataset.range(tf.cast(pieces, tf.int64)).map(
        lambda i: tokens[starts[i] : starts[i + 1]]
    )


def _read_lines(path):
    compression = tf.where(
        tf.strings.regex_full_match(path, r"(?i).*\.gz"), "GZIP", ""
    )
    lines = tf.data.TextLineDataset(path, compression_type=compression)
    # A file's UTF-8 byte order mark is not part of its first line (as in
    # `elmo_core.text.lines.numbered_lines`, which the scan reads with).
    return lines.map(lambda line: tf.strings.regex_replace(line, "^\ufeff", ""))


def split_at_whitespace(lines):
    """The tokens of string `lines` (a tensor), split where the scan,
    `embed` and every reader in Python split them (`str.split()`: at
    Unicode whitespace, which `tf.strings.split` alone does not know)."""
    return tf.strings.split(
        tf.strings.regex_replace(lines, WHITESPACE_PATTERN, " ")
    )


def _is_valid_utf8(line):
    cleaned = tf.strings.unicode_transcode(
        line,
        "UTF-8",
        "UTF-8",
        errors="ignore",
        replace_control_characters=False,
    )
    return tf.equal(cleaned, line)


def _token_batches(scan, seed, epoch, shuffle, pad_to_bucket=False):
    """One epoch of padded token batches `(B, T)` (strings, "" padding).

    Runs while `flat_map` traces it: the shuffles take seeds that depend on
    the epoch tensor. TensorFlow combines such a seed with the global one
    (`keras.utils.set_random_seed`) and fails when that is 0, so the
    function's graph drops the global seed: the order depends on `seed`
    and `epoch` only, whatever the global seed.
    """
    tf.compat.v1.get_default_graph().seed = None
    files = tf.data.Dataset.from_tensor_slices(scan.files)
    if shuffle:
        files = files.shuffle(len(scan.files), seed=seed + 7919 * epoch)
    lines = files.interleave(_read_lines, cycle_length=min(4, len(scan.files)))
    if scan.skipped_lines:
        lines = lines.filter(_is_valid_utf8)
    sentences = lines.map(split_at_whitespace)
    sentences = sentences.filter(lambda t: tf.size(t) > 0)
    sentences = sentences.flat_map(
        lambda tokens: _split_long(tokens, scan.max_length)
    )
    if shuffle:
        sentences = sentences.shuffle(
            _SHUFFLE_BUFFER, seed=seed + 104729 * epoch
        )
    boundaries, sizes = bucket_plan(scan.max_length, scan.tokens_per_batch)
    return sentences.bucket_by_sequence_length(
        lambda tokens: tf.size(tokens),
        bucket_boundaries=boundaries,
        bucket_batch_sizes=sizes,
        padded_shapes=[None],
        padding_values="",
        pad_to_bucket_boundary=pad_to_bucket,
    )


def _character_inputs(tokens, ids):
    return {"character_ids": tokens_to_char_ids(tokens)}


def _word_inputs(tokens, ids):
    # Vocabulary line + 1; 0 is the padding id.
    return {"token_ids": tf.where(tf.not_equal(tokens, ""), ids + 1, 0)}


# The model input for each `BiLM.token_encoder`, from the `(B, T)` tokens
# and their vocabulary ids.
LM_INPUTS = {"characters": _character_inputs, "words": _word_inputs}


def make_lm_batch(
    tokens,
    table,
    bos_id,
    eos_id,
    token_encoder="characters",
    extra_inputs=None,
):
    """`(x, y, sample_weight)` for a `(B, T)` batch of tokens ("" pads);
    `extra_inputs(tokens)`, if given, adds its dict of inputs to `x`."""
    is_token = tf.not_equal(tokens, "")
    lengths = tf.reduce_sum(tf.cast(is_token, tf.int32), axis=1)
    ids = tf.where(is_token, table.lookup(tokens), 0)
    batch = tf.shape(tokens)[0]
    bos = tf.fill([batch, 1], bos_id)
    # <S> ids </S>, padded: (B, T + 2).
    wrapped = tf.concat([bos, ids, tf.zeros([batch, 1], tf.int32)], axis=1)
    positions = tf.range(tf.shape(wrapped)[1])[None, :]
    wrapped = tf.where(positions == lengths[:, None] + 1, eos_id, wrapped)
    zeros = tf.zeros([batch, 1], tf.int32)
    forward = tf.concat([wrapped[:, 1:], zeros], axis=1)
    backward = tf.concat([zeros, wrapped[:, :-1]], axis=1)
    forward_weight = positions <= lengths[:, None]
    backward_weight = (positions >= 1) & (positions <= lengths[:, None] + 1)
    targets = tf.stack([forward, backward], axis=1)
    weights = tf.cast(tf.stack([forward_weight, backward_weight], 1), "float32")
    targets = targets * tf.cast(weights, tf.int32)
    x = LM_INPUTS[token_encoder](tokens, ids)
    if extra_inputs is not None:
        x.update(extra_inputs(tokens))
    return keras.utils.pack_x_y_sample_weight(x, targets, weights)


def _check_type(value, kind, argument, words):
    if not isinstance(value, kind):
        raise KerasElmoError(
            f"`{argument}` must be {words}.", argument, received=value
        )


def _token_batches_from(scan, seed, shuffle, pad_to_bucket, repeat, start):
    """The batches of string tokens from global step `start` on (whole
    epochs skipped, then the batches seen of the current one): epochs
    without end with `repeat`, else the rest of one epoch, of known
    length."""
    start_epoch, skip = divmod(start, scan.steps_per_epoch)
    if repeat:
        epochs = tf.data.Dataset.counter(start_epoch)
    else:
        epochs = tf.data.Dataset.range(start_epoch, start_epoch + 1)
    batches = epochs.flat_map(
        lambda epoch: _token_batches(scan, seed, epoch, shuffle, pad_to_bucket)
    )
    # Skipping happens before the costly character ids and lookups.
    batches = batches.skip(skip)
    if not repeat:
        # The exact count lets Keras see the end coming (no "ran out of
        # data" warning from evaluate).
        batches = batches.apply(
            tf.data.experimental.assert_cardinality(scan.steps_per_epoch - skip)
        )
    return batches


def lm_dataset(
    scan,
    vocabulary,
    seed=0,
    shuffle=True,
    repeat=True,
    start_step=0,
    pad_to_bucket=False,
    token_encoder="characters",
    extra_inputs=None,
):
    """Language-model batches for `fit` / `evaluate`.

    Args:
        scan: a `CorpusScan` of the files (fixes batching and epoch size).
        vocabulary: a `keras_elmo.data.Vocabulary` for the targets.
        seed: int. Shuffling seed; epoch `e` uses its own derived seeds.
        shuffle: bool. Shuffle files and sentences. Defaults to `True`.
        repeat: bool. Chain epochs without end (for `fit`); otherwise one
            epoch. Defaults to `True`.
        start_step: int. Global step to start from: whole epochs are
            skipped, then the batches already seen of the current epoch.
        pad_to_bucket: bool. Pad every batch to its length bucket's
            boundary rather than to its longest sentence, so that batches
            come in a few shapes only: XLA (`jit_compile=True`) compiles a
            step once per shape. Costs some padding (about 10% more
            positions). The batches hold the same sentences either way.
            Defaults to `False`.
        token_encoder: str. The `BiLM.token_encoder` the inputs are for:
            `"characters"` (character ids) or `"words"` (word ids from
            `vocabulary`). Defaults to `"characters"`.
        extra_inputs: a function or None. Given the `(batch, time)`
            `tf.string` tokens of a batch (`""` pads), it returns a dict of
            more inputs for `x` (a distilled student's teacher's own
            inputs). Defaults to `None`.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)`.

    Example:

    >>> scan = keras_elmo.data.scan_corpus(
    ...     ["tests/fixtures/bilm-tf/train/data.txt"], tokens_per_batch=256)
    >>> vocabulary = keras_elmo.data.Vocabulary.from_file(
    ...     "tests/fixtures/bilm-tf/train/vocab.txt")
    >>> dataset = keras_elmo.data.lm_dataset(scan, vocabulary, repeat=False)
    >>> x, y, sample_weight = next(iter(dataset))
    >>> x["character_ids"].shape[-1]
    50
    """
    require_tensorflow(
        "The tf.data training pipeline (lm_dataset)", keras.backend.backend()
    )
    from elmo_core.ids.vocabulary import Vocabulary

    check_choice(token_encoder, "token_encoder", choices=LM_INPUTS)
    _check_type(scan, CorpusScan, "scan", "a CorpusScan (from scan_corpus)")
    _check_type(vocabulary, Vocabulary, "vocabulary", "a Vocabulary")
    seed = check_integer(seed, "seed", minimum=0, maximum=2**31 - 1)
    shuffle = check_flag(shuffle, "shuffle")
    repeat = check_flag(repeat, "repeat")
    pad_to_bucket = check_flag(pad_to_bucket, "pad_to_bucket")
    start_step = check_integer(start_step, "start_step", minimum=0)
    table = lookup_table(vocabulary)
    batches = _token_batches_from(
        scan, seed, shuffle, pad_to_bucket, repeat, start_step
    )
    batches = batches.map(
        lambda tokens: make_lm_batch(
            tokens,
            table,
            vocabulary.bos_id,
            vocabulary.eos_id,
            token_encoder,
            extra_inputs,
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return batches.prefetch(tf.data.AUTOTUNE)
