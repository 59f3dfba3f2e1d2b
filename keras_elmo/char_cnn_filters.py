"""The char CNN's filter facts, without TensorFlow: the published widths
(SPEC §1) and their check, which the training sizes (and so `keras-elmo
train --help`) need before any layer is built."""

from keras_elmo.errors import KerasElmoError

# Published ELMo models all use these filters (SPEC §1).
DEFAULT_FILTERS = (
    (1, 32),
    (2, 32),
    (3, 64),
    (4, 128),
    (5, 256),
    (6, 512),
    (7, 1024),
)


def check_filters(filters, max_characters_per_token):
    """Validates `[(width, num_filters), ...]` and returns it as tuples."""
    try:
        filters = tuple((int(w), int(n)) for w, n in filters)
    except (TypeError, ValueError):
        raise KerasElmoError(
            "`filters` must be a list of [width, num_filters] pairs, e.g. "
            f"[[1, 32], [2, 32]]. Received: filters={filters!r}"
        ) from None
    if not filters:
        raise KerasElmoError("`filters` must name at least one filter width.")
    for width, num in filters:
        if not 1 <= width <= max_characters_per_token or num < 1:
            raise KerasElmoError(
                f"Each filter needs 1 <= width <= {max_characters_per_token} "
                f"and num_filters >= 1. Received: [{width}, {num}] in "
                f"filters={list(map(list, filters))}"
            )
    return filters
