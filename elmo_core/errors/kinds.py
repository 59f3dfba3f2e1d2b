"""The error family: `KerasElmoError`, its subclasses, and how an error's
fields compose into its text (`elmo_core.errors` says more)."""

from elmo_core.errors.shown import SHOWN_CHARACTERS
from elmo_core.errors.shown import SHOWN_STRING_CHARACTERS
from elmo_core.errors.shown import shown


class _NotGiven:
    """The `received` of an error that shows no value."""

    def __repr__(self):
        return "NOT_GIVEN"

    def __reduce__(self):
        return "NOT_GIVEN"  # the one instance, by its module name


NOT_GIVEN = _NotGiven()


class KerasElmoError(ValueError):
    """A user mistake: a bad argument, file or value.

    Its text is composed from its fields, here only: the message, then,
    when a value was received, "Received: argument=value." (the value as
    `shown` shows it, never a hostile value whole).

    Args:
        message: str. What is wrong, what is expected and how to fix it,
            Python arguments named in backticks (`init_from`).
        argument: str or None. The Python argument the mistake is in
            (`"init_from"`), when it is one; the command line shows its
            flag instead.
        received: the value received, shown after the message; leave it
            out when the message shows no value.
        expected: str or None. What was expected, in words, for callers
            that report it apart (the message says it too).

    Example:

    >>> error = keras_elmo.KerasElmoError(
    ...     "`units` must be an integer >= 1.", "units", received=0
    ... )
    >>> str(error)
    '`units` must be an integer >= 1. Received: units=0.'
    >>> error.argument, error.received
    ('units', 0)
    """

    def __init__(
        self, message, argument=None, *, received=NOT_GIVEN, expected=None
    ):
        # The composed text is the first argument too: what Keras shows
        # when it re-raises an error from a layer's call with its context.
        super().__init__(compose(message, argument, received))
        self.message = message
        self.argument = argument
        self.received = received
        self.expected = expected

    def __str__(self):
        message = getattr(self, "message", None)
        if message is None:  # a subclass that set its own args
            return super().__str__()
        return compose(message, self.argument, self.received)

    def within(self, context=None, kind=None):
        """This error as met in `context` (a file, a config; None: as it
        is), as a `kind` error (None: its own kind): the message prefixed
        "context: ", the value received kept, and no argument (the names
        in a file are its keys, not arguments).

        >>> error = keras_elmo.KerasElmoError("`dropout` bad.", "dropout",
        ...     received=2)
        >>> str(error.within("run/config.json"))
        'run/config.json: `dropout` bad. Received: 2.'
        """
        message = self.message
        if context is not None:
            message = f"{context}: {message}"
        return (kind or type(self))(
            message, received=self.received, expected=self.expected
        )

    def __reduce__(self):
        # The fields travel with the error (Beam and multiprocessing pickle
        # it): rebuilt from `args` (a subclass whose constructor takes
        # other arguments keeps them as its `args`), then its fields.
        return (type(self), self.args, self.__dict__)


def compose(message, argument=None, received=NOT_GIVEN):
    """The one text of a message: `message`, then "Received: argument=
    value." when a value was `received`. `KerasElmoError` is composed
    here; so is the text of an exception outside the family (a
    `TypeError`, a tensor assertion), which cannot carry fields.

    >>> compose("`units` must be >= 1.", "units", 0)
    '`units` must be >= 1. Received: units=0.'
    >>> compose("The file is empty.", received="")
    "The file is empty. Received: ''."
    """
    return with_received(message, received_text(argument, received))


def received_text(argument, received):
    """The "Received: argument=value." tail ("Received: value." without
    an argument; "" when nothing was received), the value `shown`."""
    if received is NOT_GIVEN:
        return ""
    value = shown(received, _received_limit(received))
    return (
        f"Received: {argument}={value}." if argument else f"Received: {value}."
    )


def _received_limit(received):
    """How many characters a received value is shown in: a string (a
    path) `SHOWN_STRING_CHARACTERS`, anything else `SHOWN_CHARACTERS`."""
    if isinstance(received, str):
        return SHOWN_STRING_CHARACTERS
    return SHOWN_CHARACTERS


def with_received(message, tail):
    """`message` and the "Received: ..." `tail`, one space apart."""
    return f"{message} {tail}" if tail else message


class WeightFileError(KerasElmoError):
    """An options or weight file that does not fit the model it describes.

    Example:

    >>> try:
    ...     keras_elmo.load_bilm(
    ...         "tests/fixtures/bilm-tf/model/options.json",
    ...         "tests/fixtures/bilm-tf-words/model/lm_weights.hdf5")
    ... except keras_elmo.WeightFileError as error:
    ...     print(str(error)[:62])
    tests/fixtures/bilm-tf-words/model/lm_weights.hdf5 has no data
    """


class TextFileError(KerasElmoError):
    """A text file that cannot be read as UTF-8 sentences.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "latin1.txt")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"na\\xefve\\n")
    >>> try:
    ...     keras_elmo.data.scan_corpus([path])
    ... except elmo_core.errors.TextFileError as error:
    ...     print(str(error).split(": ", 1)[1][:18])
    not valid UTF-8 (b
    """


class RunDirectoryError(KerasElmoError):
    """A training run directory that is missing, damaged or of another run.

    Example:

    >>> issubclass(elmo_core.errors.RunDirectoryError, ValueError)
    True
    """


class ClusterError(KerasElmoError):
    """The workers of TF_CONFIG did not find each other, or lost one.

    Example:

    >>> issubclass(elmo_core.errors.ClusterError, keras_elmo.KerasElmoError)
    True
    """


class InputPathError(KerasElmoError):
    """An input path that is not what the reader takes: a directory where
    a file is read (or a file where a directory is), a device, a pipe, a
    socket, a symbolic link loop, or a path that cannot be read.

    Example:

    >>> try:
    ...     keras_elmo.data.scan_corpus(["/dev/zero"])
    ... except elmo_core.errors.InputPathError as error:
    ...     print(str(error)[:45])
    Input file /dev/zero is a character device; e
    """


class MissingInputError(InputPathError, FileNotFoundError):
    """An input path where nothing lies (a `FileNotFoundError` too).

    Example:

    >>> try:
    ...     elmo_core.runtime.ONNXBiLM("nothing.onnx")
    ... except FileNotFoundError as error:
    ...     print(type(error).__name__, str(error)[:34])
    MissingInputError Model file not found: nothing.onnx
    """


class OutputPathError(KerasElmoError):
    """An output path that cannot be written (or would destroy an input).

    Example:

    >>> issubclass(elmo_core.errors.OutputPathError, keras_elmo.KerasElmoError)
    True
    """


class DownloadError(KerasElmoError):
    """A pretrained file that cannot be downloaded, or arrives damaged.

    Example:

    >>> try:
    ...     elmo_core.pretrained.cached_file("https://127.0.0.1:9/x.json")
    ... except keras_elmo.DownloadError as error:
    ...     print(str(error)[:20])
    Cannot download http
    """


class BiLMSourceError(KerasElmoError):
    """A biLM source (name, URL, file or folder) of no kind the loader
    reads, or one that does not exist.

    Example:

    >>> try:
    ...     keras_elmo.load_bilm("orignal")
    ... except elmo_core.errors.BiLMSourceError as error:
    ...     print(str(error)[:59])
    'orignal' is not a pretrained model name. Did you mean 'ori
    """
