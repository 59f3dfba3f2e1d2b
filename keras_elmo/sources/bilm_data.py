"""`BiLMData`: what a biLM source holds, read into memory."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class BiLMData:
    """The weights a biLM source holds, as plain data.

    What `BiLMSource.read()` returns, and what training starts a new run
    from (`keras_elmo.training.initialize.initialize`).

    Args:
        bilm: a built `keras_elmo.layers.BiLM` (stateless, as loaded).
        softmax: `(kernel, bias)` NumPy arrays of the language model's
            softmax, or None when the source has none.
        vocabulary: a `elmo_core.ids.Vocabulary` (the softmax rows', or a
            word-input biLM's table rows'), or None.
        description: str. The source in words, for messages (e.g.
            `"the run in runs/en"`).
    """

    bilm: object
    softmax: tuple | None = None
    vocabulary: object = None
    description: str = ""
