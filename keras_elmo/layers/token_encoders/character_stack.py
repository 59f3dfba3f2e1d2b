"""The character stack the character kinds share: a char CNN and its
highway layers, created and built the same way (SPEC §2-3)."""

from elmo_core.errors import check_integer
from elmo_core.settings.limits import MAX_LAYERS
from keras_elmo.layers.char_cnn import CharCNN
from keras_elmo.layers.highway import Highway


def character_stack(
    filters,
    char_embedding_dim,
    activation,
    num_highway_layers,
    max_characters_per_token,
    dtype,
    num_characters=None,
):
    """`(char_cnn, highway_layers)`, named `char_cnn` and `highway_{k}`."""
    num_highway_layers = check_integer(
        num_highway_layers, "num_highway_layers", minimum=0, maximum=MAX_LAYERS
    )
    extra = {} if num_characters is None else {"num_characters": num_characters}
    char_cnn = CharCNN(
        filters=filters,
        char_embedding_dim=char_embedding_dim,
        activation=activation,
        max_characters_per_token=max_characters_per_token,
        dtype=dtype,
        name="char_cnn",
        **extra,
    )
    highway_layers = [
        Highway(dtype=dtype, name=f"highway_{k}")
        for k in range(num_highway_layers)
    ]
    return char_cnn, highway_layers


def character_stack_config(char_cnn, highway_layers):
    """The config entries of a stack: the `character_stack` arguments it
    was made with, but `max_characters_per_token` and `dtype` (which an
    encoder keeps apart), in the order the encoders' configs list them."""
    return {
        "filters": [list(f) for f in char_cnn.filters],
        "char_embedding_dim": char_cnn.char_embedding_dim,
        "activation": char_cnn.activation,
        "num_highway_layers": len(highway_layers),
    }


def build_character_stack(char_cnn, highway_layers):
    """Builds the stack; returns its output width."""
    char_cnn.build((None, None, char_cnn.max_characters_per_token))
    features = (None, None, char_cnn.output_dim)
    for highway in highway_layers:
        highway.build(features)
    return char_cnn.output_dim
