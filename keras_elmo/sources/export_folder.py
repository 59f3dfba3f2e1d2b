"""`ExportFolder`: a folder holding one options file and one weights
file."""

import os

from keras_elmo.sources.bilm_source import register_source_kind
from keras_elmo.sources.official_files import OfficialFiles


@register_source_kind
class ExportFolder(OfficialFiles):
    """A folder of official files: `options.json` + `weights.hdf5` (what
    `keras-elmo export-weights` writes), or exactly one `*options*.json`
    and one `*weights*.hdf5` file (e.g. bilm-tf's test model,
    `options.json` + `lm_weights.hdf5`). Read as `OfficialFiles`, with
    the `vocab.txt` and `softmax.hdf5` beside them.

    Args:
        path: str. The folder.
    """

    summary = (
        "an export directory (options.json + weights.hdf5, or one "
        "*options*.json and one *weights*.hdf5 file)"
    )
    order = 30
    local = True

    def __init__(self, path):
        from elmo_core.files.paths import check_input_directory

        path = check_input_directory(path, "`path`", argument="path")
        options, weights = self.find_files(path)
        super().__init__(options, weights, f"the export in {path}")
        self.path = path

    def inputs(self):
        # The folder too: the files are found by looking into it.
        return [*super().inputs(), os.path.realpath(self.path)]

    @classmethod
    def matches(cls, source):
        return os.path.isdir(source) and None not in cls.find_files(source)

    @classmethod
    def open(cls, source, progress=True, argument=None):
        return cls(source)

    @classmethod
    def near_miss(cls, path):
        """A folder of more than one options or weights file."""
        if not os.path.isdir(path):
            return None
        options, weights = cls.candidates(path)
        if len(options) > 1 or len(weights) > 1:
            return (
                f"holds more than one export: options {', '.join(options)} "
                f"and weights {', '.join(weights)}. Which one? Pass its "
                "pair as OPTIONS.json,WEIGHTS.hdf5, or keep each export in "
                "a folder of its own."
            )
        return None

    @staticmethod
    def find_files(path):
        """`(options, weights)` of the folder `path`, each None if not
        found."""
        from elmo_core.formats.run_layout import EXPORT_OPTIONS
        from elmo_core.formats.run_layout import EXPORT_WEIGHTS

        options = os.path.join(path, EXPORT_OPTIONS)
        weights = os.path.join(path, EXPORT_WEIGHTS)
        if os.path.isfile(options) and os.path.isfile(weights):
            return options, weights
        options, weights = ExportFolder.candidates(path)
        return (
            os.path.join(path, options[0]) if len(options) == 1 else None,
            os.path.join(path, weights[0]) if len(weights) == 1 else None,
        )

    @staticmethod
    def candidates(path):
        """The names of the folder's `*options*.json` files and of its
        `*weights*.hdf5` (`.h5`) files."""
        return (
            _files_named(path, "options", ".json"),
            _files_named(path, "weights", (".hdf5", ".h5")),
        )


def _files_named(path, word, endings):
    """The files of `path` whose names hold `word` and end with one of
    `endings` (bilm-tf's `*_options.json`, `*_weights.hdf5`)."""
    return [
        name
        for name in sorted(os.listdir(path))
        if word in name
        and name.endswith(endings)
        and os.path.isfile(os.path.join(path, name))
    ]
