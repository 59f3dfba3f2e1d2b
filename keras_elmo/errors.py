"""The errors keras_elmo raises about user input.

Every mistake a user can make (a bad flag, file, option or argument) raises
a `KerasElmoError` (a `ValueError`) or one of its subclasses, with a message
that says what was received, what was expected and how to fix it. The
`keras-elmo` command catches this family in one place and prints the
message; anything else is a bug and keeps its traceback.
"""


class KerasElmoError(ValueError):
    """A user mistake: a bad argument, flag, file or value."""


class WeightFileError(KerasElmoError):
    """An options or weight file that does not fit the model it describes."""


class TextFileError(KerasElmoError):
    """A text file that cannot be read as UTF-8 sentences."""


class RunDirectoryError(KerasElmoError):
    """A training run directory that is missing, damaged or of another run."""


class ClusterError(KerasElmoError):
    """The workers of TF_CONFIG did not find each other, or lost one."""


class OutputPathError(KerasElmoError):
    """An output path that cannot be written (or would destroy an input)."""


class DownloadError(KerasElmoError):
    """A pretrained file that cannot be downloaded, or arrives damaged."""


class BiLMSourceError(KerasElmoError):
    """A biLM source (name, URL, file or folder) of no kind the loader
    reads, or one that does not exist."""
