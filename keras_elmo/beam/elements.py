"""What the steps of the Beam corpus pipeline share: the output tags,
the keyed element type, the check and reading of an input file, the
embedding transforms' model handler, and a `RunInference` result as its
array."""

import typing

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.ml.inference.base import KeyedModelHandler

from elmo_core.embedding_files import parquet_layout as layout
from elmo_core.embedding_files.sentences import BadLine
from elmo_core.errors import InputPathError
from elmo_core.errors import TextFileError
from elmo_core.files.paths import check_input_file
from elmo_core.text import lines as text_lines
from keras_elmo.beam.model_handler import ELMoModelHandler
from keras_elmo.beam.output_directory import is_local
from keras_elmo.beam.output_directory import local_path

BAD = "bad"
SENTENCES = "sentences"
# Rows buffered per Parquet write: bounds a writer's memory (a sentence
# of all layers at the original size is ~300 KB).
RECORD_BATCH = 64
# What a keyed step yields (Beam cannot infer it past tagged outputs).
KEYED = typing.Tuple[typing.Any, typing.Any]


def check_readable(path):
    """A local path must be a regular file: a FIFO would block the worker
    for ever, a device never end."""
    if is_local(path):
        check_input_file(local_path(path), "Input file", "a regular text file")
    text_lines.check_compression(path)


def open_files(pbegin, paths, matched):
    """The `ReadableFile`s of `paths`: patterns matched by Beam
    (`fileio.MatchAll`), or, `matched`, files already matched (by
    `corpus_paths.input_files`), each opened as named: matched again, a
    name holding `[1]`, `*` or `?` would be read as a pattern, and name
    other files than itself."""
    paths = pbegin | "Patterns" >> beam.Create(paths)
    if not matched:
        paths = paths | "Match" >> fileio.MatchAll()
    return paths | "Open" >> fileio.ReadMatches()


def inference_array(element):
    key, prediction = element
    return key, prediction.inference


class EmbedTransform(beam.PTransform):
    """A transform that embeds with `embedder` through `RunInference`;
    `handler_kwargs` go to its `ELMoModelHandler` (batching, sharing)."""

    def __init__(self, embedder, **handler_kwargs):
        super().__init__()
        self.embedder = embedder
        self.handler_kwargs = handler_kwargs

    def model_handler(self):
        """The keyed `ELMoModelHandler` of `embedder`."""
        return KeyedModelHandler(
            ELMoModelHandler(self.embedder, keyed=True, **self.handler_kwargs)
        )


def read_keyed(readable_file, parse):
    """`((path, line), value)` for each `(line, value)` that `parse(lines,
    path)` yields from a matched file (opened, `.gz` decompressed); where
    the file cannot be read on (a damaged `.gz`, no regular file, what
    `parse` refuses as a file), a `BadLine` (`unreadable`) keyed at the
    first line not read. An error of the filesystem itself (a lost
    connection) is raised, for the runner to retry."""
    path = readable_file.metadata.path
    last = 0
    try:
        check_readable(path)
        with readable_file.open(
            compression_type=CompressionTypes.UNCOMPRESSED
        ) as raw:
            with text_lines.decompressed(raw, path) as lines:
                for last, value in parse(lines, path):
                    yield (path, last), value
    except text_lines.GZIP_ERRORS as error:
        detail = text_lines.damaged_gzip(path, error)
        yield (path, last + 1), BadLine(layout.UNREADABLE, detail)
    except (TextFileError, InputPathError) as error:
        yield (path, last + 1), BadLine(layout.UNREADABLE, str(error))
