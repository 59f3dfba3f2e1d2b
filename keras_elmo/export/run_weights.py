"""A trained run as the official files: `export_weights`, what
`keras-elmo export-weights` runs."""

import os

from elmo_core.errors import KerasElmoError
from elmo_core.errors.blame import about
from elmo_core.files import check_output_directory
from elmo_core.files.paths import check_path
from elmo_core.formats.run_layout import EXPORT_OPTIONS
from elmo_core.formats.run_layout import EXPORT_SOFTMAX
from elmo_core.formats.run_layout import EXPORT_WEIGHTS
from elmo_core.formats.run_layout import VOCAB_FILE
from elmo_core.formats.run_layout import write_softmax
from elmo_core.text.tokenization_record import recorded_tokenization
from elmo_core.text.tokenization_record import write_record
from keras_elmo.formats.bilm_tf import save_bilm
from keras_elmo.sources.run_folder import RunFolder


def export_weights(model, output):
    """Writes a training run as the official bilm-tf / AllenNLP files:
    `options.json` (`n_characters` 262) and `weights.hdf5`, with the
    run's `vocab.txt`, `softmax.hdf5` (so that the export is a source for
    `init_from`) and its `tokenization.json` where it has one. What
    `keras-elmo export-weights` runs.

    Args:
        model: str. A training run directory (what `keras_elmo.train`
            writes); its latest checkpoint is exported.
        output: str. The directory to write; it may lie in the run
            directory (`RUN/export`, the documented layout) but be none of
            the run's files.

    Returns:
        `output`, an export directory: a biLM source of every loader.

    Example:

    >>> import os, tempfile
    >>> output = os.path.join(tempfile.mkdtemp(), "export")
    >>> _ = keras_elmo.export.export_weights(
    ...     "tests/fixtures/compat/run", output)
    >>> sorted(os.listdir(output))
    ['options.json', 'softmax.hdf5', 'vocab.txt', 'weights.hdf5']
    >>> keras_elmo.load_bilm(output).projection_dim
    8
    """
    model = check_path(model, "model")
    run = RunFolder(model)
    output = check_output_directory(output, run.inputs(), "output")
    if os.path.abspath(model) == os.path.abspath(output):
        raise KerasElmoError(
            "`output` is the run directory itself (`model`); its files are "
            "the input of the export. Choose another directory.",
            "output",
            received=output,
        )
    with about("model"):
        data = run.read()
    os.makedirs(output, exist_ok=True)
    save_bilm(
        data.bilm,
        os.path.join(output, EXPORT_OPTIONS),
        os.path.join(output, EXPORT_WEIGHTS),
    )
    data.vocabulary.save(os.path.join(output, VOCAB_FILE))
    write_record(output, recorded_tokenization(model))
    write_softmax(os.path.join(output, EXPORT_SOFTMAX), *data.softmax)
    return output
