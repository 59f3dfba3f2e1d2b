"""What the steps of the Beam corpus pipeline hand each other: the
output tags, the keyed element type, the check of an input file, and a
`RunInference` result as its array."""

import typing

from keras_elmo.beam.output_directory import is_local
from keras_elmo.beam.output_directory import local_path
from keras_elmo.data import text
from keras_elmo.files.paths import check_input_file

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
    text.check_compression(path)


def inference_array(element):
    key, prediction = element
    return key, prediction.inference
