"""Windows of continuous text: bilm-tf's training batches.

bilm-tf trains on a fixed number of rows, each a stream of sentences laid
end to end (`<S> w1 ... wn </S> <S> ...`), cut into windows of `length`
tokens; the LSTM state of each row is carried from one window to the
next, across sentence boundaries. The backward direction reads its own
stream of reversed sentences (`</S> wn ... w1 <S>`, drawn in another
order) the same way.

A row takes the next sentence of its direction's stream whenever it
needs more tokens, so the batches depend only on the files, the seed and
the row count: `window_batches(..., start_step=k)` gives the batches from
`k` on, the same as skipping `k` batches. Each epoch reads the files in a
seeded order through a seeded shuffle buffer of sentences; epochs follow
one another without a break in the streams.

Layout of one batch (rows `R`, window `N`), as `ELMoLanguageModel` reads
it in window mode: `x` holds the forward window and the backward window
*reversed in time* (the backward LSTM walks each row from its end, so it
reads the reversed-sentence stream in order), each as character ids
`(R, N, 50)` or word ids `(R, N)`; `y` `(R, 2, N)` the next token of each
position in its own stream; `sample_weight` ones.

TensorFlow-free but for `windows_dataset`.
"""

import math
import random

import keras
import numpy as np

from elmo_core.characters.ids import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters.ids import token_to_ids
from elmo_core.errors import KerasElmoError
from elmo_core.errors.backends import require_tensorflow
from elmo_core.text.lines import read_lines

# Sentences held by each stream's shuffle buffer.
SHUFFLE_BUFFER = 10_000
# The character ids of this many distinct tokens are kept, then forgotten.
_CACHE_LIMIT = 200_000
# The inputs the window layout has for each `BiLM.token_encoder`.
WINDOW_ENCODERS = ("characters", "words")


def windows_per_epoch(num_tokens, num_sentences, rows, length):
    """Batches in one pass over a corpus: its tokens and two boundaries a
    sentence, `rows` x `length` of them a batch."""
    return max(1, math.ceil((num_tokens + 2 * num_sentences) / (rows * length)))


class _Stream:
    """The sentences of one direction, epoch after epoch, each wrapped in
    its boundaries (reversed for the backward direction)."""

    def __init__(self, files, seed, backward, on_bad_line):
        self.files = list(files)
        self.seed = seed
        self.backward = backward
        self.on_bad_line = on_bad_line
        self.sentences = self._sentences()

    def _sentences(self):
        epoch = 0
        while True:
            found = False
            for tokens in self._epoch(epoch):
                found = True
                if self.backward:
                    yield ["</S>", *tokens[::-1], "<S>"]
                else:
                    yield ["<S>", *tokens, "</S>"]
            if not found:
                raise KerasElmoError(
                    "The training files hold no sentences: there is no text "
                    "to cut into windows.",
                    "files",
                )
            epoch += 1

    def _epoch(self, epoch):
        rng = random.Random(f"{self.seed}/{int(self.backward)}/{epoch}")
        files = list(self.files)
        rng.shuffle(files)
        buffer = []
        for path in files:
            for _, tokens in read_lines(path, self.on_bad_line):
                if not tokens:
                    continue
                if len(buffer) < SHUFFLE_BUFFER:
                    buffer.append(tokens)
                    continue
                k = rng.randrange(len(buffer))
                yield buffer[k]
                buffer[k] = tokens
        rng.shuffle(buffer)
        yield from buffer


class _Rows:
    """`rows` token streams of one direction drawing sentences from one
    `_Stream`; `take` returns each row's next `length + 1` tokens (the
    window and the next token) and moves it on by `length`."""

    def __init__(self, stream, rows):
        self.stream = stream
        self.pending = [[] for _ in range(rows)]

    def take(self, length):
        windows = []
        for row in self.pending:
            while len(row) < length + 1:
                row.extend(next(self.stream.sentences))
            windows.append(row[: length + 1])
            del row[:length]
        return windows


class _Inputs:
    """Model inputs of windows of tokens: character ids (cached per
    token) or word ids (vocabulary line + 1)."""

    def __init__(self, vocabulary, token_encoder):
        if token_encoder not in WINDOW_ENCODERS:
            raise KerasElmoError(
                "Windows of continuous text train a biLM that reads "
                f"characters or words; token_encoder={token_encoder!r} is "
                "neither. Train it on sentences (no window length).",
                "token_encoder",
                received=token_encoder,
            )
        self.vocabulary = vocabulary
        self.words = token_encoder == "words"
        self.cache = {}

    def __call__(self, windows):
        if self.words:
            return np.array(
                [[self.vocabulary.id(t) + 1 for t in w] for w in windows],
                "int32",
            )
        ids = np.empty(
            (len(windows), len(windows[0]), MAX_CHARACTERS_PER_TOKEN), "int32"
        )
        for i, window in enumerate(windows):
            for j, token in enumerate(window):
                ids[i, j] = self._characters(token)
        return ids

    def _characters(self, token):
        row = self.cache.get(token)
        if row is None:
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.clear()
            row = self.cache[token] = token_to_ids(token)
        return row


def window_batches(
    files,
    vocabulary,
    rows,
    length,
    seed=0,
    start_step=0,
    token_encoder="characters",
    on_bad_line="error",
):
    """Batches `(x, y, sample_weight)` of NumPy arrays, without end (see
    the module doc for the layout). `start_step` batches are skipped (the
    streams are advanced, no ids computed)."""
    forward = _Rows(_Stream(files, seed, False, on_bad_line), rows)
    backward = _Rows(_Stream(files, seed, True, on_bad_line), rows)
    inputs = _Inputs(vocabulary, token_encoder)
    names = ("token_ids", "backward_token_ids")
    if token_encoder == "characters":
        names = ("character_ids", "backward_character_ids")
    step = 0
    while True:
        ahead, behind = forward.take(length), backward.take(length)
        step += 1
        if step <= start_step:
            continue
        # The backward window reversed in time: row position j holds the
        # token its LSTM reads (length - 1 - j)th, and predicts the next.
        x = {
            names[0]: inputs([w[:length] for w in ahead]),
            names[1]: inputs([w[length - 1 :: -1] for w in behind]),
        }
        targets = np.stack(
            [
                [[vocabulary.id(t) for t in w[1:]] for w in ahead],
                [[vocabulary.id(t) for t in w[length:0:-1]] for w in behind],
            ],
            axis=1,
        ).astype("int32")
        yield x, targets, np.ones(targets.shape, "float32")


def windows_dataset(files, vocabulary, rows, length, **kwargs):
    """`window_batches` as a `tf.data.Dataset` (for `fit`)."""
    require_tensorflow(
        "Windows of continuous text (windows_dataset)", keras.backend.backend()
    )
    import tensorflow as tf

    token_encoder = kwargs.get("token_encoder", "characters")
    if token_encoder == "words":
        names, shape = ("token_ids", "backward_token_ids"), (rows, length)
    else:
        names = ("character_ids", "backward_character_ids")
        shape = (rows, length, MAX_CHARACTERS_PER_TOKEN)
    spec = (
        {name: tf.TensorSpec(shape, tf.int32) for name in names},
        tf.TensorSpec((rows, 2, length), tf.int32),
        tf.TensorSpec((rows, 2, length), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(
        lambda: window_batches(files, vocabulary, rows, length, **kwargs),
        output_signature=spec,
    )
    return dataset.prefetch(4)
