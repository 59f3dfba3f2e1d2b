"""Pretraining runs: `fit` with resumable checkpoints, evaluation, export.

A run lives in one directory:

    config.json     what defines the run (model, data, batching, seed)
    vocab.txt       the output vocabulary
    checkpoint/     the latest training state: every model and optimizer
                    variable (dropout and sampler seeds included) and the
                    global step, written atomically every N steps
    history.json    held-out perplexity at each validation, with the
                    training estimate, step, epoch and elapsed time
    logs/           TensorBoard

Running the same training again on the same directory resumes from the
checkpoint: same weights, same optimizer state, and the data stream starts
at the batch after the last one trained, so an interruption (even
`kill -9`) loses at most the steps since the last checkpoint.

On one device training is `model.fit`; under a `tf.distribute` strategy
(`keras_elmo.distribute`) it is a small loop of `strategy.run` steps with
the same callbacks, and only the chief writes the run directory.
"""

import contextlib
import dataclasses
import json
import math
import os
import shutil
import time

import h5py
import keras
import numpy as np

from keras_elmo.checkpoints import WeightFileError
from keras_elmo.checkpoints import load_bilm
from keras_elmo.checkpoints import save_bilm
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import resolve_files
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.distribute import DEFAULT_CLUSTER_TIMEOUT
from keras_elmo.distribute import DistributedLoop
from keras_elmo.distribute import agree_on_step
from keras_elmo.distribute import describe
from keras_elmo.distribute import distribute_lm_dataset
from keras_elmo.distribute import is_chief
from keras_elmo.distribute import num_replicas
from keras_elmo.distribute import resolve_strategy
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.char_cnn import DEFAULT_FILTERS
from keras_elmo.models.elmo_language_model import ELMoLanguageModel
from keras_elmo.optimizers.loss_scale_optimizer import LossScaleOptimizer
from keras_elmo.optimizers.sparse_adagrad import SparseAdagrad
from keras_elmo.optimizers.sparse_adam import SparseAdam

_PUBLISHED = dict(
    filters=[list(f) for f in DEFAULT_FILTERS],
    char_embedding_dim=16,
    activation="relu",
    use_token_projection=None,
    cell_clip=3.0,
    proj_clip=3.0,
    use_skip_connections=True,
    num_layers=2,
)
# Model sizes: the published ELMo configurations (SPEC §1), and "cpu", a
# small biLM that trains on a laptop CPU in minutes (the README's demo).
PRESETS = {
    "cpu": dict(
        _PUBLISHED,
        filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
        num_highway_layers=1,
        units=512,
        projection_dim=128,
    ),
    "small": dict(
        _PUBLISHED, num_highway_layers=1, units=1024, projection_dim=128
    ),
    "medium": dict(
        _PUBLISHED, num_highway_layers=1, units=2048, projection_dim=256
    ),
    "original": dict(
        _PUBLISHED, num_highway_layers=2, units=4096, projection_dim=512
    ),
}
BILM_KEYS = tuple(PRESETS["cpu"])


@dataclasses.dataclass
class TrainingConfig:
    """Everything that defines a run (see `train`)."""

    train_files: list
    bilm: dict
    vocabulary_size: int
    validation_files: list = None
    tokens_per_batch: int = 4096
    max_length: int = 100
    num_sampled: int = 8192
    dropout: float = 0.1
    optimizer: str = "adagrad"
    learning_rate: float = None
    learning_rate_schedule: str = "constant"
    initial_accumulator_value: float = 1.0
    clip_norm: float = 10.0
    seed: int = 0
    on_bad_line: str = "error"
    mixed_precision: str = None

    def to_json(self):
        return dataclasses.asdict(self)


OPTIMIZERS = {"adagrad": 0.2, "adam": 0.001}  # name -> default rate
# --mixed-precision -> Keras dtype policy. The layers keep the LSTM cell
# state, the softmax and the loss in float32; float16 also needs loss
# scaling.
MIXED_PRECISION = {
    None: None,
    "bf16": "mixed_bfloat16",
    "fp16": "mixed_float16",
}


def _optimizer(config, total_steps):
    if config.optimizer not in OPTIMIZERS:
        raise ValueError(
            f"Unknown optimizer {config.optimizer!r}; expected one of "
            f"{sorted(OPTIMIZERS)}."
        )
    learning_rate = config.learning_rate or OPTIMIZERS[config.optimizer]
    if config.learning_rate_schedule == "linear":
        # Decays linearly to zero at the last step of the run.
        learning_rate = keras.optimizers.schedules.PolynomialDecay(
            learning_rate, decay_steps=max(1, total_steps or 1), power=1.0
        )
    elif config.learning_rate_schedule != "constant":
        raise ValueError(
            "learning_rate_schedule must be 'constant' or 'linear'; received "
            f"{config.learning_rate_schedule!r}."
        )
    if config.optimizer == "adam":
        return SparseAdam(
            learning_rate=learning_rate,
            global_clipnorm=config.clip_norm or None,
        )
    return SparseAdagrad(
        learning_rate=learning_rate,
        initial_accumulator_value=config.initial_accumulator_value,
        global_clipnorm=config.clip_norm or None,
    )


def build_model(config, total_steps=None, jit_compile="auto"):
    """A compiled `ELMoLanguageModel` for a `TrainingConfig`.

    `total_steps` sets the length of a decaying learning-rate schedule;
    `jit_compile` is `compile`'s ("auto": XLA with a GPU, not on a CPU).
    """
    if config.mixed_precision not in MIXED_PRECISION:
        raise ValueError(
            "mixed_precision must be None, 'bf16' or 'fp16'; received "
            f"{config.mixed_precision!r}."
        )
    dtype = MIXED_PRECISION[config.mixed_precision]
    bilm = BiLM(**config.bilm, dropout=config.dropout, dtype=dtype)
    model = ELMoLanguageModel(
        bilm,
        vocabulary_size=config.vocabulary_size,
        num_sampled=config.num_sampled,
        dropout=config.dropout,
        seed=config.seed,
        dtype=dtype,
    )
    optimizer = _optimizer(config, total_steps)
    if config.mixed_precision == "fp16":
        optimizer = LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer, jit_compile=jit_compile)
    model.build()
    model.optimizer.build(model.trainable_variables)
    return model


# === Checkpoints ===


def _state_variables(model):
    return list(model.variables) + list(model.optimizer.variables)


def save_checkpoint(model, directory, step, num_replicas=1):
    """Writes every model and optimizer variable and the step, atomically.

    `num_replicas` (of the global batches) is recorded: a run resumes only
    with as many replicas, so that its data stream lines up.
    """
    final = os.path.join(directory, "checkpoint")
    temporary = f"{final}.partial"
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(temporary)
    variables = _state_variables(model)
    np.savez(
        os.path.join(temporary, "state.npz"),
        **{f"v{i}": np.asarray(v.numpy()) for i, v in enumerate(variables)},
    )
    with open(os.path.join(temporary, "meta.json"), "w") as f:
        json.dump(
            {
                "step": int(step),
                "num_replicas": int(num_replicas),
                "variables": [[v.path, list(v.shape)] for v in variables],
            },
            f,
        )
    # Replace the previous checkpoint only once the new one is complete.
    previous = f"{final}.previous"
    shutil.rmtree(previous, ignore_errors=True)
    if os.path.exists(final):
        os.rename(final, previous)
    os.rename(temporary, final)
    shutil.rmtree(previous, ignore_errors=True)


def _checkpoint_dir(directory):
    final = os.path.join(directory, "checkpoint")
    if os.path.exists(os.path.join(final, "meta.json")):
        return final
    # Killed between the two renames of save_checkpoint.
    previous = f"{final}.previous"
    if os.path.exists(os.path.join(previous, "meta.json")):
        return previous
    return None


def restore_checkpoint(model, directory, num_replicas=None):
    """Loads the latest checkpoint of `directory` into `model`.

    With `num_replicas`, also checks that the checkpoint was trained with
    that many replicas. Returns the step it was taken at, or None if there
    is none.
    """
    path = _checkpoint_dir(directory)
    if path is None:
        return None
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    variables = _state_variables(model)
    saved = meta["variables"]
    if len(saved) != len(variables) or any(
        list(v.shape) != shape for v, (_, shape) in zip(variables, saved)
    ):
        raise ValueError(
            f"The checkpoint in {path} does not fit this model (it holds "
            f"{len(saved)} variables, the model has {len(variables)}). Was "
            "it written by a run with other settings?"
        )
    saved_replicas = meta.get("num_replicas", 1)
    if num_replicas is not None and saved_replicas != num_replicas:
        raise ValueError(
            f"The checkpoint in {path} was trained on {saved_replicas} "
            f"replica(s) and this run has {num_replicas}: a step is one "
            "global batch of (replicas x tokens_per_batch) tokens, so the "
            "data position would not line up. Resume on as many devices "
            "(--strategy and TF_CONFIG as before), or choose a new --output "
            "directory."
        )
    with np.load(os.path.join(path, "state.npz")) as state:
        for i, variable in enumerate(variables):
            variable.assign(state[f"v{i}"])
    return meta["step"]


# === The run directory ===


def _write_json(path, value):
    temporary = f"{path}.partial"
    with open(temporary, "w") as f:
        json.dump(value, f, indent=2)
    os.replace(temporary, path)


def _read_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def _check_same_run(directory, config):
    saved = _read_json(os.path.join(directory, "config.json"))
    if saved is None:
        return
    differences = [
        f"{key}: {saved.get(key)!r} there, {value!r} now"
        for key, value in config.to_json().items()
        if saved.get(key) != value
    ]
    if differences:
        raise ValueError(
            f"{directory} holds a run with other settings, so it cannot be "
            "resumed with these ("
            + "; ".join(differences)
            + "). Pass the original settings to resume, or choose a new "
            "--output directory."
        )


def load_run(directory):
    """The trained model, vocabulary and config of a run directory."""
    config_json = _read_json(os.path.join(directory, "config.json"))
    if config_json is None:
        raise FileNotFoundError(
            f"{directory} is not a training run directory (no config.json). "
            "Pass the --output directory of `keras-elmo train`."
        )
    config = TrainingConfig(**config_json)
    vocabulary = Vocabulary.from_file(os.path.join(directory, "vocab.txt"))
    model = build_model(config)
    if restore_checkpoint(model, directory) is None:
        raise FileNotFoundError(
            f"{directory} has no checkpoint yet: train for at least "
            "--checkpoint-every steps first."
        )
    return model, vocabulary, config


# === Initialisation from existing weights ===


def read_init_source(path):
    """Options, weights and (optional) softmax + vocab of `--init-from`.

    `path` is a training run directory, a directory with `options.json` and
    `weights.hdf5` (an export, or official files under those names), or an
    options file whose weights file is given as `OPTIONS,WEIGHTS`.
    """
    if "," in path:
        options, weights = path.split(",", 1)
        return {"options": options, "weights": weights}
    if os.path.exists(os.path.join(path, "config.json")):
        return {"run": path}
    options = os.path.join(path, "options.json")
    weights = os.path.join(path, "weights.hdf5")
    if not (os.path.exists(options) and os.path.exists(weights)):
        raise FileNotFoundError(
            f"--init-from {path}: expected a training run directory, a "
            "directory holding options.json and weights.hdf5, or "
            "OPTIONS.json,WEIGHTS.hdf5."
        )
    source = {"options": options, "weights": weights}
    softmax = os.path.join(path, "softmax.hdf5")
    vocab = os.path.join(path, "vocab.txt")
    if os.path.exists(softmax) and os.path.exists(vocab):
        source.update(softmax=softmax, vocab=vocab)
    return source


def _initialize_from(model, source, vocabulary):
    """Copies biLM (and, with the same vocabulary, softmax) weights."""
    if "run" in source:
        trained, trained_vocab, _ = load_run(source["run"])
        bilm = trained.bilm
        softmax = [trained.softmax_kernel.numpy(), trained.softmax_bias.numpy()]
        same_vocab = trained_vocab.tokens == vocabulary.tokens
    else:
        bilm = load_bilm(source["options"], source["weights"])
        softmax, same_vocab = None, False
        if "softmax" in source:
            with h5py.File(source["softmax"], "r") as f:
                softmax = [f["softmax/W"][...], f["softmax/b"][...]]
            vocab = Vocabulary.from_file(source["vocab"])
            same_vocab = vocab.tokens == vocabulary.tokens
    ours = [w for w in model.bilm.weights if w.trainable]
    theirs = [w for w in bilm.weights if w.trainable]
    for mine, other in zip(ours, theirs):
        if tuple(mine.shape) != tuple(other.shape):
            name = other.path.split("/", 1)[-1]
            raise WeightFileError(
                f"--init-from weights do not fit the model: {name} has "
                f"shape {tuple(other.shape)} there but "
                f"{tuple(mine.shape)} in the model the flags describe. Give "
                "the flags of the source (or no size flags, to take its "
                "size)."
            )
        mine.assign(other.numpy())
    if softmax is not None and same_vocab:
        model.softmax_kernel.assign(softmax[0])
        model.softmax_bias.assign(softmax[1])
        return "biLM and softmax"
    return "biLM (softmax started fresh: the vocabulary differs)"


def init_source_bilm_config(source):
    """The biLM size of an `--init-from` source, as BiLM arguments."""
    if "run" in source:
        return _read_json(os.path.join(source["run"], "config.json"))["bilm"]
    bilm = load_bilm(source["options"], source["weights"])
    config = bilm.get_config()
    return {key: config[key] for key in BILM_KEYS}


# === Callbacks ===


class _Training(keras.callbacks.Callback):
    """Checkpoints, validation, progress lines and the stop at the last step.

    `fit` runs in chunks of `checkpoint_every` steps (one Keras "epoch"
    each), so a checkpoint always falls on a chunk boundary and a resumed
    run lines up with the uninterrupted one. `validate` returns held-out
    perplexities (None: no validation); only the `chief` writes files.
    """

    def __init__(
        self,
        directory,
        start_step,
        total_steps,
        steps_per_epoch,
        validate_every,
        validate,
        verbose,
        chief=True,
        num_replicas=1,
    ):
        super().__init__()
        self.directory = directory
        self.step = start_step
        self.total_steps = total_steps
        self.steps_per_epoch = steps_per_epoch
        self.validate_every = validate_every
        self.validate = validate
        self.verbose = verbose
        self.chief = chief
        self.num_replicas = num_replicas
        self.history = _read_json(os.path.join(directory, "history.json"), [])
        self.elapsed = self.history[-1]["elapsed_s"] if self.history else 0.0

    def on_train_begin(self, logs=None):
        self.started = self.last_print = time.time()
        self._restart_rate()

    def _restart_rate(self):
        # Training speed is measured from here (validation time excluded).
        self.rate_since = (self.step, time.time())

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        logs = logs or {}
        now = time.time()
        if self.verbose and (now - self.last_print > 15 or self.step == 1):
            self.last_print = now
            self._print_progress(logs, now)
        if self.step >= self.total_steps:
            self.model.stop_training = True

    def _print_progress(self, logs, now):
        first_step, since = self.rate_since
        rate = (self.step - first_step) / max(now - since, 1e-9)
        eta = (self.total_steps - self.step) / max(rate, 1e-9)
        print(
            f"step {self.step:,}/{self.total_steps:,} "
            f"(epoch {self.step / self.steps_per_epoch:.2f}) "
            f"loss {logs.get('loss', float('nan')):.3f} "
            f"train ppl {logs.get('perplexity', float('nan')):.1f} "
            f"(sampled) | {rate:.2f} steps/s | ETA {eta / 60:.1f} min",
            flush=True,
        )

    def on_epoch_end(self, epoch, logs=None):
        if self.chief:
            save_checkpoint(
                self.model, self.directory, self.step, self.num_replicas
            )
        if self.validate is None:
            return
        last = self.history[-1]["step"] if self.history else 0
        done = self.step >= self.total_steps
        if done or self.step - last >= self.validate_every:
            self._validate(logs or {})

    def _validate(self, train_logs):
        start = time.time()
        self.elapsed += start - self.started
        results = self.validate()
        self.started = time.time()
        self._restart_rate()
        entry = {
            "step": self.step,
            "epoch": round(self.step / self.steps_per_epoch, 3),
            "train_perplexity_sampled": float(
                train_logs.get("perplexity", float("nan"))
            ),
            "valid_forward_perplexity": results["forward_perplexity"],
            "valid_backward_perplexity": results["backward_perplexity"],
            "valid_perplexity": results["perplexity"],
            "elapsed_s": round(self.elapsed, 1),
        }
        self.history.append(entry)
        if self.chief:
            path = os.path.join(self.directory, "history.json")
            _write_json(path, self.history)
        if self.verbose:
            print(
                f"validation at step {self.step:,} (epoch "
                f"{entry['epoch']:.2f}): perplexity "
                f"{entry['valid_perplexity']:.1f} (forward "
                f"{entry['valid_forward_perplexity']:.1f}, backward "
                f"{entry['valid_backward_perplexity']:.1f}) "
                f"[{time.time() - start:.0f}s]",
                flush=True,
            )


# === Entry points ===


def _lm_dataset(strategy, scan, vocabulary, **kwargs):
    if strategy is None:
        return lm_dataset(scan, vocabulary, **kwargs)
    return distribute_lm_dataset(strategy, scan, vocabulary, **kwargs)


def _scan(config, files, replicas, what, verbose):
    """Scans `files` for global batches of `replicas` x the config's token
    budget, and reports what it found."""
    scan = scan_corpus(
        files,
        max_length=config.max_length,
        tokens_per_batch=config.tokens_per_batch * replicas,
        on_bad_line=config.on_bad_line,
    )
    for line in scan.summary():
        _log(verbose, f"{what} data: {line}")
    return scan


def _log(verbose, message):
    if verbose:
        print(message, flush=True)


def train(
    output_dir,
    config,
    vocabulary,
    epochs=None,
    steps=None,
    checkpoint_every=200,
    validate_every=None,
    init_from=None,
    verbose=1,
    strategy="auto",
    cluster_timeout=DEFAULT_CLUSTER_TIMEOUT,
    jit_compile="auto",
):
    """Trains (or resumes) a biLM run in `output_dir`.

    Args:
        output_dir: str. The run directory (created if needed). If it holds
            a checkpoint of the same run, training resumes from it. With
            several workers, a directory they all see (shared storage).
        config: a `TrainingConfig`. Its `tokens_per_batch` is the budget of
            one replica: a step trains on `replicas` times as many tokens.
        vocabulary: a `keras_elmo.data.Vocabulary`.
        epochs: float or None. Passes over the training data, counted from
            the data itself. Defaults to 1 when `steps` is None too.
        steps: int or None. Total steps instead of epochs.
        checkpoint_every: int. Steps between checkpoints.
        validate_every: int or None. Steps between held-out evaluations
            (at the next checkpoint); None means once an epoch.
        init_from: dict from `read_init_source`, or None.
        verbose: 0 or 1.
        strategy: str, `tf.distribute.Strategy` or None. A name of
            `keras_elmo.distribute.STRATEGIES` ("auto": several workers or
            GPUs if there are, else one device), a strategy, or None for
            one device with `model.fit`. Defaults to `"auto"`.
        cluster_timeout: float. With several workers: seconds to wait for
            the others (at start-up and in each step) before an error.
        jit_compile: bool or "auto". Compile the training step with XLA
            (batches are then padded to their length bucket, so that few
            shapes are compiled). "auto" (default) follows Keras: XLA with
            a GPU, not on a CPU. Not with a strategy (their loop runs
            without XLA).

    Returns:
        The trained `ELMoLanguageModel`.
    """
    if int(checkpoint_every) < 1:
        raise ValueError(
            f"checkpoint_every must be >= 1; received {checkpoint_every}."
        )
    # First: the multi-worker runtime starts here.
    strategy = resolve_strategy(strategy, cluster_timeout)
    if jit_compile not in (True, False, "auto"):
        raise ValueError(
            f"jit_compile must be True, False or 'auto'; received "
            f"{jit_compile!r}."
        )
    if strategy is not None:
        if jit_compile is True:
            raise ValueError(
                "jit_compile=True (--jit-compile on) is not supported with a "
                f"strategy ({describe(strategy)}): the distributed loop runs "
                "without XLA. Drop one of the two."
            )
        jit_compile = False
    replicas = num_replicas(strategy)
    chief = is_chief(strategy)
    verbose = verbose if chief else 0
    os.makedirs(output_dir, exist_ok=True)
    _check_same_run(output_dir, config)
    scan = _scan(config, config.train_files, replicas, "training", verbose)
    if strategy is not None:
        _log(
            verbose,
            f"{describe(strategy)}: {replicas} replica(s), global "
            f"batches of {replicas} x {config.tokens_per_batch:,} tokens",
        )
    if steps is None:
        steps = math.ceil(
            (1.0 if epochs is None else epochs) * scan.steps_per_epoch
        )
    total_steps = int(steps)
    if total_steps < 1:
        raise ValueError("Nothing to train: steps/epochs give 0 steps.")

    with strategy.scope() if strategy else contextlib.nullcontext():
        model = build_model(config, total_steps, jit_compile)
    pad_to_bucket = bool(model.jit_compile)
    if pad_to_bucket:
        _log(
            verbose,
            "XLA: the step is compiled once per batch shape (batches are "
            "padded to their length bucket)",
        )
    start_step = restore_checkpoint(model, output_dir, replicas)
    if start_step is not None:
        _log(verbose, f"resuming {output_dir} from step {start_step:,}")
    else:
        start_step = 0
        if init_from is not None:
            what = _initialize_from(model, init_from, vocabulary)
            _log(verbose, f"initialised the {what} from --init-from")
    vocab_file = os.path.join(output_dir, "vocab.txt")
    if os.path.exists(vocab_file) and start_step:
        if Vocabulary.from_file(vocab_file).tokens != vocabulary.tokens:
            raise ValueError(
                f"{output_dir} was trained with the vocabulary in "
                f"{vocab_file}, not the one given now; pass that one to "
                "resume, or choose a new --output directory."
            )
    # With several workers, also the point after which the chief writes.
    agree_on_step(strategy, start_step)
    if chief:
        vocabulary.save(vocab_file)
        _write_json(os.path.join(output_dir, "config.json"), config.to_json())
    if start_step >= total_steps:
        _log(verbose, f"{output_dir} already trained {start_step:,} steps.")
        return model

    loop = None if strategy is None else DistributedLoop(model, strategy)
    dataset = _lm_dataset(
        strategy,
        scan,
        vocabulary,
        seed=config.seed,
        start_step=start_step,
        pad_to_bucket=pad_to_bucket,
    )
    validate = None
    if config.validation_files:
        validation_scan = _scan(
            config, config.validation_files, replicas, "validation", verbose
        )
        validation = _lm_dataset(
            strategy,
            validation_scan,
            vocabulary,
            shuffle=False,
            repeat=False,
            pad_to_bucket=pad_to_bucket,
        )

        def validate():
            if loop is None:
                return model.evaluate(validation, verbose=0, return_dict=True)
            return loop.evaluate(validation, validation_scan.steps_per_epoch)

    callbacks = [
        _Training(
            output_dir,
            start_step=start_step,
            total_steps=total_steps,
            steps_per_epoch=scan.steps_per_epoch,
            validate_every=validate_every or scan.steps_per_epoch,
            validate=validate,
            verbose=verbose,
            chief=chief,
            num_replicas=replicas,
        )
    ]
    if chief:
        logs = os.path.join(output_dir, "logs")
        callbacks.append(keras.callbacks.TensorBoard(logs))
    chunk = int(checkpoint_every)
    _log(
        verbose,
        f"training steps {start_step + 1:,}..{total_steps:,} "
        f"({total_steps / scan.steps_per_epoch:.2f} epochs), checkpoint "
        f"every {chunk} steps",
    )
    chunks = dict(
        initial_epoch=start_step // chunk,
        epochs=math.ceil(total_steps / chunk),
        steps_per_epoch=chunk,
    )
    if loop is None:
        model.fit(
            dataset,
            shuffle=False,  # the dataset shuffles itself, reproducibly
            callbacks=callbacks,
            verbose=0,
            **chunks,
        )
    else:
        loop.fit(dataset, callbacks, **chunks)
    return model


def evaluate(model_dir, data_patterns, verbose=1):
    """Held-out perplexity of a trained run (full softmax, stateless).

    Returns a dict with `perplexity`, `forward_perplexity`,
    `backward_perplexity`, `tokens` and `sentences`.
    """
    model, vocabulary, config = load_run(model_dir)
    files = resolve_files(data_patterns)
    scan = _scan(config, files, 1, "evaluation", verbose)
    dataset = lm_dataset(
        scan,
        vocabulary,
        shuffle=False,
        repeat=False,
        pad_to_bucket=bool(model.jit_compile),
    )
    results = model.evaluate(dataset, verbose=verbose, return_dict=True)
    results = {k: float(v) for k, v in results.items()}
    results.update(tokens=scan.num_tokens, sentences=scan.num_sentences)
    return results


def export_weights(model_dir, output_dir):
    """Writes a run as official `options.json` + `weights.hdf5`, plus
    `vocab.txt` and `softmax.hdf5` (for `--init-from`)."""
    model, vocabulary, _ = load_run(model_dir)
    os.makedirs(output_dir, exist_ok=True)
    save_bilm(
        model.bilm,
        os.path.join(output_dir, "options.json"),
        os.path.join(output_dir, "weights.hdf5"),
    )
    vocabulary.save(os.path.join(output_dir, "vocab.txt"))
    with h5py.File(os.path.join(output_dir, "softmax.hdf5"), "w") as f:
        f.create_dataset("softmax/W", data=model.softmax_kernel.numpy())
        f.create_dataset("softmax/b", data=model.softmax_bias.numpy())
    return output_dir
