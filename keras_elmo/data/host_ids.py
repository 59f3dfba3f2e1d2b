"""Tokens to biLM inputs on the host, with NumPy: for the JAX and PyTorch
backends, and for input pipelines of any framework.

On TensorFlow, `ELMoEmbedding` turns `tf.string` tokens into ids inside the
graph. JAX and PyTorch have no string tensors, so there the layers take
tokens as Python lists of token lists (or NumPy string arrays `(batch,
time)`, `""` for padding) and convert them here, before the backend sees
them, with each kind's NumPy rules: `keras_elmo.characters` for character
biLMs, `Vocabulary.batch_to_ids` for word biLMs and the ELMoForManyLangs
encoder's `batch_to_inputs`. The ids are the same as the in-graph ones.

`TokenBatcher` is the same conversion as a plain callable, for a
`torch.utils.data.DataLoader` (`collate_fn=`), a `grain` map or a
`tf.data` `py_function`.
"""

import numpy as np

from keras_elmo.errors import KerasElmoError


def is_host_tokens(inputs):
    """True for token lists or a NumPy string array (host tokens)."""
    if isinstance(inputs, np.ndarray):
        return inputs.dtype.kind in "US" or (
            inputs.dtype == object
            and inputs.size > 0
            and isinstance(inputs.flat[0], str)
        )
    if not isinstance(inputs, (list, tuple)) or not inputs:
        return False
    first = inputs[0]
    return isinstance(first, (list, tuple, np.ndarray)) and all(
        isinstance(t, str) for s in inputs for t in s
    )


def host_inputs(encoder, tokens, vocabulary=None):
    """The int32 NumPy inputs of `tokens` for a biLM's token encoder.

    Args:
        encoder: the biLM's `encoder` (any kind).
        tokens: a list of sentences, each a list of token strings; or a
            NumPy string array `(batch, time)` with `""` for padding.
        vocabulary: a `keras_elmo.data.Vocabulary`, for word biLMs only.

    Returns:
        `(batch, time, *encoder.input_shape)` int32, zero at padding.
    """
    if encoder.needs_vocabulary and vocabulary is None:
        raise KerasElmoError(
            "This biLM reads word ids; to take string tokens it needs its "
            "vocabulary: ELMoEmbedding(bilm, vocabulary='vocab.txt'), or "
            "keras_elmo.data.Vocabulary(...).batch_to_ids(sentences)."
        )
    if not isinstance(tokens, np.ndarray):
        return np.asarray(
            encoder.batch_to_inputs([list(s) for s in tokens], vocabulary),
            "int32",
        )
    if tokens.ndim != 2:
        raise KerasElmoError(
            "String tokens must have shape (batch, time), '' for padding; "
            f"received a NumPy array of shape {tokens.shape}."
        )
    rows = [[str(t) for t in row] for row in tokens]
    ids = np.asarray(encoder.batch_to_inputs(rows, vocabulary), "int32")
    ids = ids.reshape((*tokens.shape, *encoder.input_shape))
    present = (tokens != "").reshape((*tokens.shape,) + (1,) * (ids.ndim - 2))
    return ids * present


class TokenBatcher:
    """Batches of token lists -> the NumPy inputs of one biLM.

    A callable for input pipelines: `torch.utils.data.DataLoader(
    sentences, batch_size=32, collate_fn=TokenBatcher(bilm))`, a `grain`
    map over batches, or `tf.numpy_function`. Same ids as `ELMoEmbedding`
    computes from strings.

    Args:
        bilm: a `keras_elmo.layers.BiLM`.
        vocabulary: for a word-input biLM, its vocabulary (a
            `keras_elmo.data.Vocabulary`, a list of tokens or a file path).

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4]], char_embedding_dim=4, num_highway_layers=0,
    ...     units=8, projection_dim=4)
    >>> TokenBatcher(bilm)([["Hello", "world"], ["Hi"]]).shape
    (2, 2, 50)
    """

    def __init__(self, bilm, vocabulary=None):
        self.encoder = bilm.encoder
        self.vocabulary = None
        if vocabulary is not None:
            from keras_elmo.data.vocabulary import check_vocabulary

            self.vocabulary = check_vocabulary(vocabulary, self.encoder)

    def __call__(self, sentences):
        return host_inputs(self.encoder, sentences, self.vocabulary)
