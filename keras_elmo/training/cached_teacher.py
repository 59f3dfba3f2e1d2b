"""A distilled run's teacher through its teacher cache
(`distill(teacher_cache=...)`; the files: `teacher_cache`).

With a cache, every training batch carries the teacher's layer outputs
(`TEACHER_OUTPUTS`, in the cache's precision) and the student's step does
not run the teacher. A sentence the cache holds is read from it; the
others of a batch (all of them in the first epoch) go through the
teacher, once, outside the step, and are kept while the size limit
allows. Each sentence's outputs are rounded to the cache's precision
before the student sees them, read or computed alike, so that every epoch
learns the same targets. A sentence is the cache's by its tokens (after
`max_length` split it), so the epochs' different batches find it.
"""

import contextlib
import hashlib

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.pretrained.units import human_size
from elmo_core.progress import say
from elmo_core.settings.training_config import MIXED_PRECISION
from keras_elmo.models.distilled_language_model import TEACHER_INPUTS
from keras_elmo.models.distilled_language_model import TEACHER_OUTPUTS
from keras_elmo.training.teacher_cache import RECORD
from keras_elmo.training.teacher_cache import open_teacher_cache
from keras_elmo.training.teacher_cache import sentence_key

# The input key of a batch's tokens, from the data pipeline to the cache
# (never to the step).
SENTENCE_TOKENS = "sentence_tokens"


@contextlib.contextmanager
def cached_teacher(config, scan, model, replicas, verbose):
    """Yields the `CachedTeacher` of a distilled run whose config names a
    teacher cache (None for any other run), and closes it after.

    Args:
        config: the run's `TrainingConfig`.
        scan: the `CorpusScan` of its training files.
        model: its `DistilledLanguageModel`, the teacher attached.
        replicas: int. The run's replicas (a cache is one run's, on one).
        verbose: 0 or 1.
    """
    distill = config.distill or {}
    settings = distill.get("teacher_cache")
    if settings is None:
        yield None
        return
    if replicas > 1:
        raise KerasElmoError(
            "The teacher cache is written by one training process on one "
            f"device; this run trains on {replicas} replicas. Leave "
            "`teacher_cache` out, or train on one device.",
            "teacher_cache",
        )
    identity = {
        "teacher_digest": distill["teacher_digest"],
        "text_digest": text_digest(config.train_files),
        "teacher_precision": MIXED_PRECISION[config.mixed_precision]
        or "float32",
        "precision": settings["precision"],
        "layers": model.matched_teacher_layers,
        "width": distill["teacher_width"],
    }
    cache, notes = open_teacher_cache(
        settings["directory"], identity, settings["size_limit"]
    )
    try:
        for line in notes:
            say(verbose, line)
        say(verbose, _describe(cache, scan))
        yield CachedTeacher(cache, model, verbose)
    finally:
        cache.close()


def text_digest(files):
    """The SHA-256 of the training files' bytes, in their order."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(2**20), b""):
                digest.update(chunk)
        digest.update(b"\0")  # where a file ends
    return digest.hexdigest()


def _describe(cache, scan):
    """What the cache holds, and how much of the text it can hold."""
    rows = scan.num_tokens + 2 * scan.num_sentences
    whole = rows * cache.row_bytes + scan.num_sentences * RECORD.itemsize
    layers, width = cache.shape
    line = (
        f"teacher cache: {cache.directory} holds {cache.describe()}; the "
        f"text's {scan.num_sentences:,} sentences take about "
        f"{human_size(whole)} ({layers} teacher layers of {width}, "
        f"{cache.dtype.name})"
    )
    if whole <= cache.size_limit:
        return f"{line}: all fit, the teacher runs on each once at most"
    share = cache.size_limit / whole
    return (
        f"{line}: about {share:.0%} fit within its size limit; the "
        "teacher runs on the others in every epoch"
    )


class CachedTeacher:
    """The batches of a run with a teacher cache (see the module)."""

    def __init__(self, cache, model, verbose):
        self.cache = cache
        self.model = model
        self.verbose = verbose
        self.full = cache.full
        self._compiled = None

    def teacher(self, x):
        """The teacher's outputs `(batch, time + 2, layers, width)` of the
        batch `x`, the layers the cache keeps (compiled once, for any
        batch and time)."""
        import tensorflow as tf

        if self._compiled is None:
            # Any batch and time; the rest (characters a token) as given.
            signature = {
                key: tf.TensorSpec([None, None, *value.shape[2:]], value.dtype)
                for key, value in x.items()
            }
            self._compiled = tf.function(
                self._outputs, input_signature=[signature]
            )
        return self._compiled(x)

    def _outputs(self, x):
        import tensorflow as tf

        outputs = self.model.teacher_outputs(x)
        layers = self.model.matched_teacher_layers
        return tf.stack([outputs[k] for k in layers], axis=2)

    def extra_inputs(self, teacher_inputs):
        """`lm_dataset`'s `extra_inputs`: a batch's tokens, and what
        `teacher_inputs` (a function, or None) adds."""

        def inputs(tokens):
            extra = {SENTENCE_TOKENS: tokens}
            if teacher_inputs is not None:
                extra.update(teacher_inputs(tokens))
            return extra

        return inputs

    def dataset(self, batches):
        """`batches` (of `lm_dataset`, with `extra_inputs`) with the
        teacher's outputs in `x`, in place of the tokens and the teacher's
        own inputs."""
        import tensorflow as tf

        x_spec, y_spec, weight_spec = batches.element_spec
        x_spec = {
            key: spec
            for key, spec in x_spec.items()
            if key not in (SENTENCE_TOKENS, TEACHER_INPUTS)
        }
        x_spec[TEACHER_OUTPUTS] = tf.TensorSpec(
            (None, None, *self.cache.shape), tf.as_dtype(self.cache.dtype)
        )

        def generate():
            for x, y, weights in batches:
                if self.cache.closed:  # the run is over
                    return
                yield self._with_targets(dict(x)), y, weights

        signature = (x_spec, y_spec, weight_spec)
        dataset = tf.data.Dataset.from_generator(
            generate, output_signature=signature
        )
        return dataset.prefetch(2)

    def _with_targets(self, x):
        tokens = x.pop(SENTENCE_TOKENS).numpy()
        x[TEACHER_OUTPUTS] = self.targets(x, tokens)
        x.pop(TEACHER_INPUTS, None)
        return x

    def targets(self, x, tokens):
        """The teacher's outputs `(batch, time + 2, layers, width)` of the
        batch `x` of `tokens` (bytes, `b""` pads), in the cache's
        precision: read where cached, computed (and cached) elsewhere."""
        sentences = [[token for token in row if token] for row in tokens]
        keys = [sentence_key(words) for words in sentences]
        shape = (len(keys), tokens.shape[1] + 2, *self.cache.shape)
        targets = np.zeros(shape, self.cache.dtype)
        missing = []
        for i, entry in enumerate(self.cache.lookup(keys)):
            positions = len(sentences[i]) + 2
            if entry is None:
                missing.append(i)
            else:
                targets[i, :positions] = self.cache.read(entry, positions)
        if missing:
            computed = self._computed(x, missing)
            for j, i in enumerate(missing):
                positions = len(sentences[i]) + 2
                targets[i, :positions] = computed[j, :positions]
                self.cache.add(keys[i], targets[i, :positions])
            self._say_when_full()
        return targets

    def _computed(self, x, rows):
        """The teacher's outputs of the `rows` of `x`, in the cache's
        precision (refused where it cannot hold them)."""
        import tensorflow as tf

        inputs = {key: tf.gather(value, rows) for key, value in x.items()}
        outputs = self.teacher(inputs).numpy()
        rounded = outputs.astype(self.cache.dtype)
        beyond = np.isinf(rounded) & np.isfinite(outputs)
        if beyond.any():
            largest = float(np.max(np.abs(outputs[beyond])))
            raise KerasElmoError(
                f"The teacher's layer outputs reach {largest:,.0f}, beyond "
                f"what {self.cache.dtype.name} holds: start the run again "
                "with `teacher_cache_precision` float32.",
                "teacher_cache_precision",
            )
        return rounded

    def _say_when_full(self):
        if self.cache.full and not self.full:
            self.full = True
            say(
                self.verbose,
                f"teacher cache: full ({self.cache.describe()}); the "
                "teacher runs on the sentences it does not hold in every "
                "epoch (a larger size limit holds more)",
            )
