"""What a training batch must hold: the checks of `tokens_per_batch`
against the longest sentence piece and against a window."""

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer


def check_batch_budget(max_length, tokens_per_batch):
    """A batch must hold the longest sentence piece and its boundaries."""
    # Token counts are int32 in the graph.
    max_length = check_integer(
        max_length, "max_length", minimum=1, maximum=2**31 - 3
    )
    tokens_per_batch = check_integer(
        tokens_per_batch, "tokens_per_batch", minimum=1, maximum=2**31 - 1
    )
    if tokens_per_batch < max_length + 2:
        raise KerasElmoError(
            "`tokens_per_batch` must hold the longest sentence piece and "
            "its boundaries, at least `max_length` + 2 = "
            f"{max_length + 2} tokens. Raise `tokens_per_batch` or lower "
            f"`max_length` (now {max_length!r}).",
            "tokens_per_batch",
            received=tokens_per_batch,
        )


def check_window_length(length, tokens_per_batch):
    """The rows of a batch of windows of `length` tokens in a budget of
    `tokens_per_batch`: at least one."""
    length = check_integer(length, "window_length", minimum=1)
    if tokens_per_batch < length:
        raise KerasElmoError(
            f"`tokens_per_batch` ({tokens_per_batch:,}) must hold one window "
            f"of `window_length` ({length}) tokens; a batch is "
            "tokens_per_batch // window_length rows. Raise tokens_per_batch "
            "or shorten the windows.",
            "window_length",
            received=length,
        )
    return tokens_per_batch // length
