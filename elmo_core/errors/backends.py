"""The TensorFlow-only boundary.

The layers run on the TensorFlow, JAX and PyTorch backends of Keras 3 (the
backend is fixed per process by `KERAS_BACKEND`, set before `keras` is
imported). Training from text (`keras-elmo train`, `tf.data`, sampled
softmax, `tf.distribute`) and the exports (SavedModel, ONNX, LiteRT) are
TensorFlow programs; they call `require_tensorflow` first with the backend
Keras runs on, so that another backend gets one clear message instead of a
traceback from deep inside. It lives here, below every Keras module, and
takes the backend as a value: this package imports no Keras.
"""

import os

from elmo_core.errors.kinds import KerasElmoError


def require_tensorflow(what, backend):
    """Raises `KerasElmoError` unless Keras runs on TensorFlow.

    Args:
        what: str, the feature asked for, e.g. "keras-elmo train".
        backend: str, the backend Keras runs on
            (`keras.backend.backend()`).

    Example:

    >>> try:
    ...     require_tensorflow("The ONNX export", "jax")
    ... except KerasElmoError as error:
    ...     print(str(error)[:55])
    The ONNX export runs on the TensorFlow backend only (it
    """
    if backend == "tensorflow":
        return
    raise KerasElmoError(
        f"{what} runs on the TensorFlow backend only (it is built on "
        "TensorFlow itself: tf.data, tf.function graphs, SavedModel); this "
        f"process runs Keras on {backend!r} (KERAS_BACKEND="
        f"{os.environ.get('KERAS_BACKEND', backend)!r}). Run it in a process "
        "with KERAS_BACKEND=tensorflow (the default of Keras); the "
        "weights it writes load on every backend."
    )
