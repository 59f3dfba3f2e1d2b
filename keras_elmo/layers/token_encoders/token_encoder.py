"""The token-encoder contract: `TokenEncoder` and its registry.

A token encoder turns the input of one token (50 character ids, one word
id, ...) into its context-insensitive embedding `e` of `projection_dim`.
Each kind is a small plain object (not a Layer) that holds every fact about
its input in one place. It creates its sublayers, and the `BiLM` sets them
as its own attributes (`layers()`), so their weights live where they always
have (`bi_lm/char_cnn/...`) and saved files do not depend on the encoder
object.

A new kind is one subclass, registered with `register_token_encoder`;
`BiLM(token_encoder=NAME, **its_arguments)` then builds it, passing the
kind's constructor arguments (`arguments()`) through without naming them.
"""

import inspect

from elmo_core.errors import KerasElmoError

# `BiLM(token_encoder=...)` name (and each older name) -> kind.
TOKEN_ENCODERS = {}
_ALIASES = {}


class TokenEncoder:
    """Base class of the token-encoder kinds (like keras-hub's `Tokenizer`).

    Class attributes every kind sets:
        name: str. The `BiLM(token_encoder=...)` value.
        aliases: tuple of str. Older names still read from saved configs.
        input_name: str. The key of its input in a `BiLM` input dict.
        input_aliases: tuple of str. Older input keys, still accepted.
        needs_vocabulary: bool. Whether text needs a vocabulary file to
            become its input (word ids do).

    Instance attributes: `projection_dim` (the width of `e`) and
    `input_shape`, the shape of one token's input (`()` for one id).

    Constructor: `__init__(projection_dim, dtype, **arguments)`; the
    keyword arguments after `dtype` are the kind's `BiLM` arguments, and
    `config()` returns them (the kind's part of the `BiLM` config).
    """

    name = None
    aliases = ()
    input_name = None
    input_aliases = ()
    needs_vocabulary = False

    def __init__(self, projection_dim, dtype):
        self.projection_dim = projection_dim
        self.input_shape = ()

    @classmethod
    def arguments(cls):
        """The kind's `BiLM` constructor arguments (its `__init__`
        keywords after `projection_dim` and `dtype`)."""
        parameters = inspect.signature(cls.__init__).parameters
        return tuple(parameters)[3:]

    def layers(self):
        """Sublayers, by the `BiLM` attribute that holds them."""
        raise NotImplementedError

    def config(self):
        """The kind's `BiLM` arguments, as saved in the `BiLM` config."""
        raise NotImplementedError

    def build(self):
        """Builds the sublayers."""
        raise NotImplementedError

    def check(self, ids):
        """`ids`, checked (dtype, shape, range); raises `KerasElmoError`."""
        raise NotImplementedError

    def mask(self, ids):
        """Boolean `(batch, time)`: which tokens are present."""
        raise NotImplementedError

    def boundaries(self):
        """The inputs of the sentence boundaries `<S>` and `</S>`."""
        raise NotImplementedError

    def encode(self, ids):
        """Token embeddings `(..., projection_dim)` of inputs
        `(..., *input_shape)`."""
        raise NotImplementedError

    def batch_to_inputs(self, sentences, vocabulary=None):
        """NumPy inputs of tokenised sentences."""
        raise NotImplementedError

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` `(batch, time)` token tensor."""
        raise NotImplementedError


def register_token_encoder(kind):
    """Registers a `TokenEncoder` subclass under its `name` (and
    `aliases`); usable as a class decorator. Returns `kind`."""
    if not (isinstance(kind, type) and issubclass(kind, TokenEncoder)):
        raise KerasElmoError(
            "register_token_encoder takes a TokenEncoder subclass.",
            "kind",
            received=kind,
        )
    if not kind.name or not kind.input_name:
        raise KerasElmoError(
            f"{kind.__name__} needs a `name` and an `input_name`."
        )
    TOKEN_ENCODERS[kind.name] = kind
    for alias in kind.aliases:
        _ALIASES[alias] = kind.name
    return kind


def get_token_encoder(name):
    """The kind registered as `name` (or as one of its older names)."""
    if isinstance(name, str):
        name = _ALIASES.get(name, name)
    if not isinstance(name, str) or name not in TOKEN_ENCODERS:
        raise KerasElmoError(
            f"`token_encoder` must be one of {sorted(TOKEN_ENCODERS)}.",
            "token_encoder",
            received=name,
        )
    return TOKEN_ENCODERS[name]


def encoder_arguments():
    """Every registered kind's `BiLM` arguments: `{argument: kind names}`."""
    owners = {}
    for kind in TOKEN_ENCODERS.values():
        for argument in kind.arguments():
            owners.setdefault(argument, []).append(kind.name)
    return owners


def take_arguments(encoder_class, kwargs):
    """Takes the token encoder's arguments out of `kwargs` (the rest go to
    `keras.layers.Layer`); an argument of another kind is an error."""
    mine = encoder_class.arguments()
    owners = encoder_arguments()
    arguments = {}
    for name in list(kwargs):
        if name in mine:
            arguments[name] = kwargs.pop(name)
        elif name in owners:
            value = kwargs.pop(name)
            if value is None:
                continue
            hint = ""
            if name == "vocabulary_size":
                hint = (
                    " (a character-input biLM's softmax size belongs to "
                    "ELMoLanguageModel)"
                )
            raise KerasElmoError(
                f"`{name}` is an argument of token_encoder "
                f"{' or '.join(repr(k) for k in owners[name])}; this BiLM "
                f"reads token_encoder={encoder_class.name!r}{hint}. Pass "
                "the token_encoder it belongs to, or drop it.",
                name,
                received=value,
            )
    return arguments
