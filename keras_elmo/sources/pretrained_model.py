"""`PretrainedModel`: a published biLM named by its preset name."""

from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.pretrained.remote import looks_like_path
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import register_source_kind
from keras_elmo.sources.elmo_for_many_langs_folder import ELMoForManyLangsFolder
from keras_elmo.sources.official_files import OfficialFiles


@register_source_kind
class PretrainedModel(BiLMSource):
    """A pretrained model name (`elmo_core.pretrained.PRESETS`): its files
    are downloaded once into the cache (`open`), then read as the kind
    `Preset.kind` names. A damaged cached file is named as such, with how
    to fetch it again.

    Args:
        files: the `BiLMSource` of the cached files.
        description: str. The source in words.
    """

    summary = "a pretrained model name (`keras-elmo presets` lists them)"
    # After `OPTIONS,WEIGHTS`, which is no path either.
    order = 70
    local = False

    def __init__(self, files, description):
        super().__init__(description)
        self.files = files

    @property
    def kind(self):
        return self.files.kind

    @classmethod
    def matches(cls, source):
        """A preset name, or a string that cannot be a path or a URL (the
        name is then checked, with close names suggested for a typo)."""
        from elmo_core import pretrained

        if source in pretrained.PRESETS:
            return True
        return not (looks_like_path(source) or pretrained.is_url(source))

    @classmethod
    def open(cls, name, progress=True, argument=None):
        """The source of the preset `name`, its files in the cache
        (downloaded if needed)."""
        from elmo_core import pretrained

        preset = pretrained.get_preset(name)
        paths = pretrained.fetch(preset, progress=progress)
        description = f"the pretrained model {preset.name!r}"
        if preset.kind == OfficialFiles.kind:
            files = OfficialFiles(
                paths["options"], paths["weights"], description
            )
        elif preset.kind == ELMoForManyLangsFolder.kind:
            files = ELMoForManyLangsFolder(paths["model"], description)
        else:
            raise KerasElmoError(
                f"Preset {preset.name!r} has kind {preset.kind!r}, which "
                "this version of keras_elmo cannot load (it loads "
                f"{OfficialFiles.kind}, {ELMoForManyLangsFolder.kind})."
            )
        return cls(files, description)

    def inputs(self):
        return self.files.inputs()

    def _read(self):
        return self.files.read()

    def bilm_size(self):
        return self.files.bilm_size()

    def load_bilm(self, vocabulary=None, **kwargs):
        try:
            return self.files.load_bilm(vocabulary, **kwargs)
        except WeightFileError as error:
            raise WeightFileError(
                f"{error.message} ({self.description}, read from the cache. "
                "Delete its files there to download them again.)",
                received=error.received,
            ) from None
