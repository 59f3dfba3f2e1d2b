"""`ELMoForManyLangsFolder`: an ELMoForManyLangs model folder."""

from elmo_core.errors import WeightFileError
from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import real_files
from keras_elmo.sources.bilm_source import register_source_kind


@register_source_kind
class ELMoForManyLangsFolder(BiLMSource):
    """An ELMoForManyLangs model folder (`config.json`, `char.dic`,
    `*.pkl`), or a folder holding just one: a biLM without a softmax,
    read by `keras_elmo.formats.elmo_for_many_langs`.

    Args:
        path: str. The model folder (or the folder holding it).
        description: str or None. The source in words. Defaults to
            "the ELMoForManyLangs model in PATH".
    """

    kind = "elmo_for_many_langs"
    summary = "an ELMoForManyLangs model folder (config.json, char.dic, *.pkl)"
    # Before a run folder: both hold a config.json.
    order = 10

    def __init__(self, path, description=None):
        super().__init__(description or f"the ELMoForManyLangs model in {path}")
        self.path = path

    @classmethod
    def matches(cls, source):
        from elmo_core.formats.elmo_for_many_langs_files import is_model_dir

        return is_model_dir(source)

    def inputs(self):
        from elmo_core.formats.elmo_for_many_langs_files import PACKAGED_CONFIGS
        from elmo_core.formats.elmo_for_many_langs_files import find_model_dir
        from elmo_core.formats.elmo_for_many_langs_files import (
            read_network_config,
        )

        try:
            _, network = read_network_config(find_model_dir(self.path))
        except WeightFileError:  # reading the folder says what is wrong
            network = None
        if network in PACKAGED_CONFIGS:
            network = None
        # The network config may lie outside the folder (config_path).
        return real_files(self.path, network)

    def _read(self):
        from keras_elmo.formats.elmo_for_many_langs import (
            load_elmo_for_many_langs,
        )

        return BiLMData(
            load_elmo_for_many_langs(self.path), description=self.description
        )

    def load_bilm(self, vocabulary=None, **kwargs):
        from keras_elmo.formats.elmo_for_many_langs import (
            load_elmo_for_many_langs,
        )
        from keras_elmo.layers.token_encoders.word_encoder import (
            check_bilm_vocabulary,
        )

        bilm = self.read_straight(
            lambda: load_elmo_for_many_langs(self.path, **kwargs), None, kwargs
        )
        if vocabulary is not None:
            check_bilm_vocabulary(bilm.encoder, vocabulary, self.description)
        return bilm


@register_source_kind
class _FolderAroundOne(ELMoForManyLangsFolder):
    """A folder holding just one ELMoForManyLangs model folder (an archive
    unpacked with its folder): that model, once no other kind matches the
    folder itself."""

    summary = None
    order = 50

    @classmethod
    def matches(cls, source):
        from elmo_core.formats.elmo_for_many_langs_files import inner_model_dir

        return inner_model_dir(source) is not None

    @classmethod
    def open(cls, source, progress=True, argument=None):
        from elmo_core.formats.elmo_for_many_langs_files import inner_model_dir

        return ELMoForManyLangsFolder(inner_model_dir(source))
