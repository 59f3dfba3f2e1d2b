"""The language model's softmax losses: the sampled softmax of training
(candidates drawn without replacement from the log-uniform distribution
over frequency-sorted words, bilm-tf's) and the full softmax of
evaluation, in chunks."""

import keras
import numpy as np
from keras import ops

# Rows of full-softmax logits computed at once in evaluation, so that a
# large vocabulary never needs a (tokens x V) matrix in memory.
_LOGITS_PER_CHUNK = 2**24


def log_uniform_probabilities(vocabulary_size):
    """`P(k) = log((k + 2) / (k + 1)) / log(V + 1)`: the Zipf-like sampling
    distribution of bilm-tf, which suits a vocabulary sorted by descending
    frequency."""
    k = np.arange(vocabulary_size, dtype="float64")
    return np.log((k + 2.0) / (k + 1.0)) / np.log(vocabulary_size + 1.0)


def log_uniform_bias(shape, dtype=None):
    """A softmax bias initializer: the log of `log_uniform_probabilities`
    over `shape[0]` frequency-sorted words, so that a fresh language model
    predicts a Zipf-like unigram distribution from its first step instead
    of a uniform one (zeros, bilm-tf's start). Its frequent words need not
    climb, nor its rare ones sink, by a small learning rate's steps: a
    short run learns more (docs/benchmarks.md, "Size by budget")."""
    bias = np.log(log_uniform_probabilities(shape[0]))
    return ops.convert_to_tensor(bias.astype("float32"), dtype=dtype)


def inclusion_log_probabilities(probabilities, num_sampled):
    """Log-probability that each class is among `num_sampled` distinct
    classes drawn without replacement.

    Uses `1 - (1 - p) ** n`, with the number of draws `n` solved so that the
    inclusion probabilities sum to `num_sampled`: the form TensorFlow's
    unique candidate samplers use, with their random number of draws
    replaced by this deterministic one.
    """
    p = np.asarray(probabilities, dtype="float64")
    if num_sampled >= len(p):
        return np.zeros(len(p), "float32")
    log_miss = np.log1p(-np.minimum(p, 1.0 - 1e-12))

    def expected(n):
        return np.sum(-np.expm1(n * log_miss))

    low, high = float(num_sampled), float(num_sampled)
    while expected(high) < num_sampled:
        high *= 2.0
    for _ in range(100):
        middle = 0.5 * (low + high)
        low, high = (
            (middle, high)
            if expected(middle) < num_sampled
            else (
                low,
                middle,
            )
        )
    inclusion = -np.expm1(high * log_miss)
    return np.log(inclusion).astype("float32")


def sample_without_replacement(log_probabilities, num_sampled, seed):
    """`num_sampled` distinct class ids, drawn one after another in
    proportion to `exp(log_probabilities)` (Gumbel top-k); stateless given
    `seed`."""
    u = keras.random.uniform(
        ops.shape(log_probabilities), minval=1e-20, maxval=1.0, seed=seed
    )
    keys = log_probabilities - ops.log(-ops.log(u))
    return ops.top_k(keys, num_sampled, sorted=False)[1]


def sampled_softmax_loss(
    hidden, labels, kernel, bias, sampled, sampled_log_q, labels_log_q
):
    """Per-token sampled softmax cross-entropy.

    The candidate set is the true class plus the `sampled` classes; every
    logit is corrected by `-log q` (q the expected count of the class in the
    sample) and sampled classes equal to the true class ("accidental hits")
    are removed. With all classes sampled and `log q = 0` this is exactly the
    full softmax cross-entropy.

    Args:
        hidden: float32 `(N, P)`.
        labels: int `(N,)`.
        kernel: `(V, P)` softmax weights; bias: `(V,)`.
        sampled: int `(S,)` sampled class ids.
        sampled_log_q: float32 `(S,)`; labels_log_q: float32 `(N,)`.

    Returns:
        float32 `(N,)` losses.
    """
    # Gathers keep the gradients of the (V, P) softmax sparse.
    true_weights = ops.take(kernel, labels, axis=0)
    true_logits = ops.sum(hidden * true_weights, axis=-1)
    true_logits += ops.take(bias, labels, axis=0) - labels_log_q
    sampled_weights = ops.take(kernel, sampled, axis=0)
    sampled_logits = ops.matmul(hidden, ops.transpose(sampled_weights))
    sampled_logits += ops.take(bias, sampled, axis=0) - sampled_log_q
    hits = ops.equal(labels[:, None], sampled[None, :])
    sampled_logits = ops.where(hits, -1e30, sampled_logits)
    logits = ops.concatenate([true_logits[:, None], sampled_logits], axis=1)
    return ops.logsumexp(logits, axis=1) - true_logits


def full_softmax_loss(hidden, labels, kernel, bias):
    """Per-token full softmax cross-entropy, in chunks of rows."""
    import tensorflow as tf

    rows = max(1, _LOGITS_PER_CHUNK // int(kernel.shape[0]))
    num = ops.shape(hidden)[0]
    padded = (num + rows - 1) // rows * rows
    hidden = ops.pad(hidden, [[0, padded - num], [0, 0]])
    labels = ops.pad(labels, [[0, padded - num]])
    hidden = ops.reshape(hidden, (-1, rows, ops.shape(hidden)[1]))
    labels = ops.reshape(labels, (-1, rows))
    kernel_t = ops.transpose(kernel)  # once, not per chunk

    def chunk(args):
        # log(sum(exp(logits))) - the label's logit: the loss alone, without
        # the gradient tensor that `sparse_softmax_cross_entropy_with_logits`
        # also writes (evaluation has no use for it).
        h, y = args
        logits = tf.matmul(h, kernel_t) + bias
        label_logits = tf.reduce_sum(h * tf.gather(kernel, y), axis=1)
        return tf.reduce_logsumexp(logits, axis=1) - (
            label_logits + tf.gather(bias, y)
        )

    losses = tf.map_fn(chunk, (hidden, labels), fn_output_signature=tf.float32)
    return ops.reshape(losses, (-1,))[:num]
