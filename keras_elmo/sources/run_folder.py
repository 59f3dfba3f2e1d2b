"""`RunFolder`: a training run directory."""

import os

from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import real_files
from keras_elmo.sources.bilm_source import register_source_kind


@register_source_kind
class RunFolder(BiLMSource):
    """A training run directory (what `keras_elmo.runs.train` writes):
    its latest checkpoint, with the softmax and the vocabulary of the run.

    Args:
        path: str. The run directory.
    """

    kind = "run"
    summary = "a training run directory (config.json and checkpoint/)"
    # After an ELMoForManyLangs folder: both hold a config.json.
    order = 20

    def __init__(self, path):
        super().__init__(f"the run in {path}")
        self.path = path

    @classmethod
    def matches(cls, source):
        from keras_elmo.training.run_directory import RunDirectory

        return RunDirectory(source).is_run()

    def inputs(self):
        # What a run is read from: its config, vocabulary, history, plan
        # and checkpoint, not the folder as a whole, so that what is made
        # from the run may be written beside them (`export-weights --output
        # RUN/export`, the documented layout); nothing may go into the
        # checkpoint folder or replace one of these files.
        from elmo_core.formats import run_layout

        names = (
            run_layout.CONFIG_FILE,
            run_layout.VOCAB_FILE,
            run_layout.HISTORY_FILE,
            run_layout.PLAN_FILE,
            run_layout.CHECKPOINT_DIR,
        )
        return real_files(*(os.path.join(self.path, name) for name in names))

    def _read(self):
        from keras_elmo.training.run_directory import RunDirectory

        model, vocabulary, _ = RunDirectory(self.path).load()
        softmax = (model.softmax_kernel.numpy(), model.softmax_bias.numpy())
        return BiLMData(model.bilm, softmax, vocabulary, self.description)

    def bilm_size(self):
        # From the run's config, without building the model.
        from keras_elmo.training.run_directory import RunDirectory

        return dict(RunDirectory(self.path).read_config().bilm)
