"""What the layers do differently per Keras backend: the one seam.

`BiLM`, `CharCNN`, `ProjectedLSTM` and the token encoders are plain
`keras.ops` model code. Whatever has to be done differently on TensorFlow,
JAX or PyTorch is one function here, as Keras keeps its RNN loops in
`backend/<name>/rnn.py` behind one `lstm` entry point. The backend module
is picked once, on import: `<backend>_backend.py` in this folder
implements each function below that differs there from its plain version
in `keras_ops.py` (plain `keras.ops`, and what a backend without string
or ragged tensors and without assertions in its graphs does), so a fourth
backend is one new file.

- `lstm_recurrences`: the LSTMs of one call (a BiLM layer's two
  directions), from their inputs, state and `Cell` (weights and clips).
  TensorFlow: a `tf.while_loop` each with a hand-written gradient
  (`tensorflow_recurrence.py`); JAX: input products at real tokens only
  (`jax_rows.py`), a `lax.fori_loop` with a hand-written gradient
  (`jax_recurrence.py`); PyTorch: one loop for both directions with a
  hand-written backward pass (`torch_lstm.py`; `torch_recurrence.py`, a
  plain autograd loop, under mixed precision).
- `reverse_sequences(x, lengths)`: `tf.reverse_sequence`, elsewhere a
  gather.
- `encode_distinct(x, encode, slack, finish)`: a token encoder run once
  per distinct token: `UniqueV2`, `torch.unique`, on JAX sorted rows in
  chunks (`jax_tokens.py`).
- `valid_convolution(x, kernel)`: `ops.conv`; on PyTorch one matmul over
  the windows; on JAX XLA's with a matmul gradient.
- `host_values(x)`, with `checked_range` and `check_at_most` here on top
  of it and of the backend's `checked_in_graph` / `assert_at_most`:
  values are checked at once where they are on the host (eager
  TensorFlow, PyTorch, JAX outside `jax.jit`), by assertions inside a
  TensorFlow graph, not inside `jax.jit`.
- `variable_value`, `dense`, `ensure_shape`: reading a variable, ragged
  tensors, static shapes lost in a TensorFlow loop.
- `takes_host_tokens(inputs)`: JAX and PyTorch have no string tensors;
  token lists become ids on the host there.
- `compiled_bilm_call(bilm, inputs, **kwargs)`: an eager BiLM call as a
  compiled program (JAX: one `jax.jit` a shape, `jax_eager.py`), or None
  (call as usual).
"""

import importlib

import keras
import numpy as np

from elmo_core.errors import Described
from elmo_core.errors import KerasElmoError
from keras_elmo.layers.backends import keras_ops
from keras_elmo.layers.backends.cell import Cell

__all__ = ["Cell"]


def name():
    """The Keras backend of this process: "tensorflow", "jax" or "torch"."""
    return keras.backend.backend()


def _backend_module():
    try:
        return importlib.import_module(f"{__name__}.{name()}_backend")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name()}_backend":
            raise
    raise KerasElmoError(
        f"keras_elmo's layers run on the tensorflow, jax and torch "
        f"backends of Keras; this process runs Keras on {name()!r}. Set "
        "KERAS_BACKEND to one of them before keras is imported."
    )


_backend = _backend_module()


def _seam(name):
    """The backend module's function `name`, else the plain one of
    `keras_ops`."""
    return getattr(_backend, name, None) or getattr(keras_ops, name)


# The computations.
lstm_recurrences = _seam("lstm_recurrences")
reverse_sequences = _seam("reverse_sequences")
encode_distinct = _seam("encode_distinct")
valid_convolution = _seam("valid_convolution")
compiled_bilm_call = _seam("compiled_bilm_call")
# Values, checks and tensors.
host_values = _seam("host_values")
_checked_in_graph = _seam("checked_in_graph")
_assert_at_most = _seam("assert_at_most")
variable_value = _seam("variable_value")
dense = _seam("dense")
ensure_shape = _seam("ensure_shape")
# Token lists.
takes_host_tokens = _seam("takes_host_tokens")


def checked_range(x, maximum, message, minimum=0):
    """`x`, checked to lie in `minimum..maximum`; use the returned tensor.

    `maximum` is a number or an array broadcast against the last axis.
    Where the values are on the host they are checked at once
    (`KerasElmoError`: `message` and the range found). In a TensorFlow
    graph the returned tensor exists only once the in-graph assertions
    (same message) have passed: they are its control dependencies, so
    whatever reads it (a gather) cannot run first. Inside `jax.jit` the
    values go unchecked (see `host_values`).
    """
    values = host_values(x)
    if values is None:
        return _checked_in_graph(x, minimum, maximum, message)
    if values.size and (values.min() < minimum or (values > maximum).any()):
        found = f"values from {values.min()} to {values.max()}"
        raise KerasElmoError(message, received=Described(found))
    return x


def check_at_most(value, limit, message, argument):
    """Raises `KerasElmoError` when the integer `value` (of `argument`)
    exceeds `limit`.

    A value known here (a Python int or host value) is checked at once; a
    symbolic TensorFlow value by an assertion inside the graph.
    """
    if not isinstance(value, (int, np.integer)):
        known = host_values(value)
        if known is None:
            _assert_at_most(value, limit, message)
            return
        value = int(known)
    if int(value) > limit:
        raise KerasElmoError(message, argument, received=int(value))
