"""`BiLMSource`: the contract every kind of biLM source follows, and the
registry of the kinds.

A new kind is one subclass in one file of `keras_elmo.sources`,
registered with `register_source_kind`; `keras_elmo.loading.classify`
tries the registered kinds in their `order` and builds the first that
matches.
"""

import os

from elmo_core.errors import KerasElmoError

# The registered kinds, in the order `keras_elmo.loading.classify` tries
# them (their `order`).
_KINDS = []


class BiLMSource:
    """Base class of the biLM source kinds (like keras-hub's
    `PresetLoader`): where a biLM's weights are, and how to read them.

    Each kind is one small subclass in one file of `keras_elmo.sources`,
    registered with `register_source_kind`.

    Class attributes every kind sets:
        kind: str. The format its files are read as, in the one vocabulary
            of kinds shared with `elmo_core.pretrained.Preset.kind`:
            `"bilm-tf"` (options.json + hdf5 weights),
            `"elmo_for_many_langs"`, `"run"` (a training run directory) or
            `"keras"` (a `.keras` file).
        summary: str or None. What the kind accepts, in words, for the
            "nothing matches" error (None: said by another kind's).
        order: int. Where the resolver tries it: lower first.
        local: bool. Whether it matches a local file or folder that
            exists (True), or a string that names one elsewhere (a
            pretrained model name, a pair of paths or URLs).

    Methods a kind implements:
        matches(source): classmethod. Whether the str `source` (a path, or
            what the user typed) is of this kind, by its format's one rule.
        _read(): the `BiLMData` of the source (called once, by `read`).
        inputs(): every file the source reads, and every folder it reads
            whole or looks into, as real paths (for output checks: no
            command writes over, or into, one of them).

    Methods a kind may override: `open` (the source of a str that
    matches), `near_miss` (why a path that matches no kind is not of
    this one, if it nearly is) and `load_bilm` (a format that reads
    straight into a `BiLM` of other arguments).

    Instance attribute: `description`, the source in words for messages.
    """

    kind = None
    summary = None
    order = None
    local = True

    def __init__(self, description):
        self.description = description
        self._data = None

    @classmethod
    def matches(cls, source):
        raise NotImplementedError

    @classmethod
    def open(cls, source, progress=True, argument=None):
        """The source of the str `source`, which `matches`; `progress`:
        print download progress; `argument`: the Python argument it came
        in, for messages."""
        return cls(source)

    @classmethod
    def near_miss(cls, path):
        """Why the local `path`, which no kind matches, is not of this
        kind although it nearly is (what it is, and how to fix it), as a
        message that follows the argument's name; None if it is not
        near."""
        return None

    def _read(self):
        raise NotImplementedError

    def inputs(self):
        raise NotImplementedError

    def read(self):
        """The source's `BiLMData` (the biLM, softmax, vocabulary); read
        once, then kept."""
        if self._data is None:
            self._data = self._read()
        return self._data

    def load_bilm(self, vocabulary=None, **arguments):
        """A `BiLM` of the source built with other `BiLM` arguments
        (`stateful=True`, `dtype`, ...): here a new `BiLM` of the same
        sizes, holding the weights read (matched by the layers that hold
        them, `keras_elmo.layers.bilm_weights`); a kind whose format reads
        straight into a `BiLM` of other arguments does that instead.
        `vocabulary` is checked against a word-input biLM's table."""
        bilm = self.read().bilm
        if arguments:
            bilm = _with_arguments(bilm, arguments, self.description)
        if vocabulary is not None:
            from keras_elmo.layers.token_encoders.word_encoder import (
                check_bilm_vocabulary,
            )

            check_bilm_vocabulary(bilm.encoder, vocabulary, self.description)
        return bilm

    def read_straight(self, read, vocabulary, arguments):
        """`read()`, for a kind whose format reads straight into a `BiLM`
        of other `arguments` (no second copy of the weights) when none of
        them may change a size. Otherwise, or when that fails, the copy
        path of `load_bilm` checks every weight (and names the argument
        at fault, with the first weight it no longer fits)."""
        from keras_elmo.layers.bilm_weights import SHAPE_FREE_ARGUMENTS

        if not set(arguments) <= SHAPE_FREE_ARGUMENTS:
            return BiLMSource.load_bilm(self, vocabulary, **arguments)
        try:
            return read()
        except (KerasElmoError, TypeError, ValueError, KeyError, IndexError):
            if not arguments:
                raise
            BiLMSource.load_bilm(self, vocabulary, **arguments)
            raise

    def bilm_size(self):
        """The biLM's size, as the `BiLM` arguments a run is built with
        (`elmo_core.settings.sizes.size_of`)."""
        from elmo_core.settings.sizes import size_of

        return size_of(self.read().bilm.arguments())


def register_source_kind(kind):
    """Registers a `BiLMSource` subclass, to be tried in its `order`;
    usable as a class decorator. Returns `kind`."""
    if not (isinstance(kind, type) and issubclass(kind, BiLMSource)):
        raise KerasElmoError(
            "register_source_kind takes a BiLMSource subclass.",
            "kind",
            received=kind,
        )
    if not isinstance(kind.order, int):
        raise KerasElmoError(f"{kind.__name__} needs an integer `order`.")
    _KINDS[:] = sorted(
        [k for k in _KINDS if k is not kind] + [kind], key=lambda k: k.order
    )
    return kind


def source_kinds(local=None):
    """The registered kinds in their order: all of them, or those that
    match a local path (`local=True`) or a string (`local=False`)."""
    return [k for k in _KINDS if local is None or k.local == local]


def real_files(*paths):
    """The real paths of the files among `paths`, and of the folders among
    them with every file in them (walked whole), each once; paths that do
    not exist are left out. (A folder counts too: no output may go into
    one a source reads.)"""
    found = []
    for path in paths:
        if path is None:
            continue
        if os.path.isdir(path):
            for directory, _, names in sorted(os.walk(path)):
                found.append(directory)
                found += [os.path.join(directory, n) for n in sorted(names)]
        elif os.path.lexists(path):
            found.append(path)
    return list(dict.fromkeys(os.path.realpath(path) for path in found))


def _with_arguments(bilm, arguments, description):
    """A new `BiLM` of `bilm`'s config with other `arguments`, holding
    its weights; an argument that is no `BiLM` argument, or that changes
    a size the weights fix, is refused by name."""
    from keras_elmo.layers.bilm_weights import copy_bilm_weights

    config = dict(bilm.arguments(), dtype=bilm.dtype_policy, name=bilm.name)
    copy = _built(config, arguments, description)
    misfit = copy_bilm_weights(copy, bilm)
    if misfit is None:
        return copy
    name = _culprit(
        arguments,
        lambda one: copy_bilm_weights(_built(config, one, description), bilm),
    )
    if name is not None:
        misfit = copy_bilm_weights(
            _built(config, {name: arguments[name]}, description), bilm
        )
    else:  # only together
        name = sorted(arguments)[0]
    raise KerasElmoError(
        f"`{name}` changes the sizes of {description}: {misfit} with it. "
        "A biLM's sizes come from its weights: leave it out (the weights "
        f"say {name}={config.get(name)!r}).",
        name,
        received=arguments[name],
    )


def _built(config, arguments, description):
    """`BiLM(**config, **arguments)`, built; an argument it refuses is
    named."""
    from keras_elmo.layers.bilm import BiLM

    def build(overrides):
        return BiLM(**{**config, **overrides})

    try:
        copy = build(arguments)
    except (KerasElmoError, TypeError, ValueError) as error:
        raise _blamed(error, arguments, build, description) from None
    copy.build()
    return copy


def _blamed(error, arguments, build, description):
    """The error of `build(arguments)` (a `BiLM` of the source's config
    with `arguments`), about the argument that alone makes it fail."""
    # Keras may wrap the layer's own error.
    if not isinstance(error, KerasElmoError):
        if isinstance(error.__context__, KerasElmoError):
            error = error.__context__
    if isinstance(error, KerasElmoError) and error.argument in arguments:
        return error
    reason = error.message if isinstance(error, KerasElmoError) else None
    name = _culprit(arguments, lambda one: _refused(build, one))
    name = sorted(arguments)[0] if name is None else name
    return KerasElmoError(
        f"`{name}` is not a valid BiLM argument for {description} "
        f"({reason or _first_line(error)}); it takes the arguments of "
        "keras_elmo.layers.BiLM that fit its weights.",
        name,
        received=arguments[name],
    )


def _refused(build, overrides):
    """The error `build(overrides)` raises, or None."""
    try:
        build(overrides)
    except (KerasElmoError, TypeError, ValueError) as error:
        return error
    return None


def _culprit(arguments, fails):
    """The first of `arguments` (sorted) for which `fails({name: value})`
    is not None, or None when none fails alone."""
    for name in sorted(arguments):
        if fails({name: arguments[name]}) is not None:
            return name
    return None


def _first_line(error):
    """The first line of what an exception says, without Keras's dump of
    the whole config around it."""
    text = str(error).strip()
    _, found, cause = text.partition("Exception encountered: ")
    return (cause if found else text).strip().split("\n")[0][:300]
