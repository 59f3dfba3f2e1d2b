"""A training run directory: its config, vocabulary, history, time-budget
plan and checkpoints (the file names are the layout's,
`elmo_core.formats.run_layout`; a trained run is exported by
`keras_elmo.export.export_weights`). Every file is written atomically.
"""

import dataclasses
import os
import re
import zipfile

import numpy as np

from elmo_core.errors import InputPathError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import RunDirectoryError
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.files import atomic_output
from elmo_core.files.paths import check_input_file
from elmo_core.formats.run_layout import CHECKPOINT_DIR
from elmo_core.formats.run_layout import CHECKPOINT_FORMAT
from elmo_core.formats.run_layout import CONFIG_FILE
from elmo_core.formats.run_layout import HISTORY_FILE
from elmo_core.formats.run_layout import PLAN_FILE
from elmo_core.formats.run_layout import VOCAB_FILE
from elmo_core.formats.run_layout import read_json
from elmo_core.formats.run_layout import write_json
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.training_config import TrainingConfig
from elmo_core.settings.training_config import window_rows
from keras_elmo.training.compiled_model import build_model

# Replicas a checkpoint may say it was trained on (a run of windows keeps
# state for each of their rows).
MAX_REPLICAS = 4096


def _state_variables(model):
    """`{key: variable}` for every model and optimizer variable.

    The key is the variable's path with the names Keras numbers per process
    (`el_mo_language_model_1`, `bi_lm_2`, `sparse_adagrad`) replaced by
    `model`, `bilm` and `optimizer`, so that it is the same in every process
    that builds the same model. Random-seed states (`seed_generator_N`,
    numbered per process and all alike) are keyed by their order.
    """
    names = [(model.name, "model"), (model.optimizer.name, "optimizer")]
    bilm = getattr(model, "bilm", None)
    if bilm is not None:
        names.append((bilm.name, "bilm"))
    keyed, seeds = {}, 0
    for variable in list(model.variables) + list(model.optimizer.variables):
        if variable.path.split("/")[0].startswith("seed_generator"):
            key = f"seed_generator#{seeds}"
            seeds += 1
        else:
            key = _stable_path(variable.path, names)
        if key in keyed:
            raise RunDirectoryError(
                f"Two variables of the model map to the checkpoint key {key}; "
                "the model cannot be checkpointed by variable path."
            )
        keyed[key] = variable
    return keyed


def _differences(saved, current, prefix=""):
    """`key: value there, value now` for each key whose values differ,
    the keys of two dicts (a `distill` setting) one by one."""
    differences = []
    for key in [*current, *(k for k in saved if k not in current)]:
        theirs, ours = saved.get(key), current.get(key)
        if theirs == ours:
            continue
        if isinstance(theirs, dict) and isinstance(ours, dict):
            differences += _differences(theirs, ours, f"{prefix}{key}.")
        else:
            differences.append(f"{prefix}{key}: {theirs!r} there, {ours!r} now")
    return differences


# A distillation's teacher is recorded by the SHA-256 of its weights.
_DIGEST = "distill.teacher_digest"
_TEACHER_WEIGHTS = f"{_DIGEST}: the teacher's weights differ"


def _teacher_weights(differences):
    """`differences`, that of the teacher's digest in words (two digests
    of 64 hex digits say only that the weights differ)."""
    return [
        _TEACHER_WEIGHTS if line.startswith(f"{_DIGEST}:") else line
        for line in differences
    ]


def _stable_path(path, names):
    for name, stable in names:
        # Whole path parts, and inside optimizer slot names, which join the
        # variable's path with "_".
        path = re.sub(
            rf"(^|[/_]){re.escape(name)}(?=[/_]|$)", rf"\g<1>{stable}", path
        )
    return path


class RunDirectory:
    """The files of one training run (see the module docstring).

    Args:
        path: str. The directory (it need not exist yet).
    """

    def __init__(self, path):
        self.path = os.fspath(path)

    def file(self, name):
        return os.path.join(self.path, name)

    def is_run(self):
        return os.path.isfile(self.file(CONFIG_FILE))

    # === Config and vocabulary ===

    def read_config(self):
        path = self.file(CONFIG_FILE)
        if not os.path.isdir(self.path):
            raise RunDirectoryError(
                f"{self.path} is not a directory; expected a training run "
                "directory (a folder that training wrote, with "
                f"{CONFIG_FILE})."
            )
        values = read_json(path)
        if values is None:
            raise RunDirectoryError(
                f"{self.path} is not a training run directory (no "
                f"{CONFIG_FILE}). Pass a folder that training wrote."
            )
        return TrainingConfig.from_json(values, source=path)

    def check_same_run(self, config):
        """Refuses to resume a run of other settings; a damaged
        `config.json` (a value no run writes) is blamed on the file."""
        path = self.file(CONFIG_FILE)
        saved = read_json(path)
        if saved is None:
            return
        if not isinstance(saved, dict):
            raise RunDirectoryError(
                f"{path} must hold a JSON object; found "
                f"{type(saved).__name__}. The file is damaged: restore it, "
                "or start the run in a new directory."
            )
        # Compared as read (a key a later version added takes the value
        # that means what runs did before it), not as written.
        saved = TrainingConfig.from_json(saved, source=path).to_json()
        differences = _teacher_weights(_differences(saved, config.to_json()))
        if differences == [_TEACHER_WEIGHTS]:
            raise RunDirectoryError(
                f"The teacher ({config.distill['teacher']}) is not the one "
                f"the run in {self.path} was started with: its weights "
                "differ (changed in place since?). Give that teacher to "
                "resume, or choose a new `output_dir`.",
                "teacher",
            )
        if differences:
            raise RunDirectoryError(
                f"{self.path} holds a run with other settings, so it cannot "
                "be resumed with these (" + "; ".join(differences) + "). "
                "Pass the original settings to resume, or choose a new "
                "`output_dir`."
            )

    def write_config(self, config):
        write_json(self.file(CONFIG_FILE), config.to_json())

    def read_vocabulary(self):
        return Vocabulary.from_file(self.file(VOCAB_FILE))

    def check_vocabulary(self, vocabulary):
        """Refuses to resume with another vocabulary."""
        path = self.file(VOCAB_FILE)
        if os.path.exists(path):
            if Vocabulary.from_file(path).tokens != vocabulary.tokens:
                raise RunDirectoryError(
                    f"{self.path} was trained with the vocabulary in {path}, "
                    "not the one given now; pass that one to resume, or "
                    "choose a new `output_dir`."
                )

    # === History ===

    def read_history(self):
        return read_json(self.file(HISTORY_FILE), [])

    def write_history(self, history):
        write_json(self.file(HISTORY_FILE), history)

    # === Time budget ===

    def read_plan(self):
        """The saved time-budget plan (see `write_plan`), or None."""
        path = self.file(PLAN_FILE)
        plan = read_json(path)
        if plan is None:
            return None
        try:
            return _check_plan(plan)
        except KerasElmoError as error:
            raise RunDirectoryError(
                f"{path} is damaged ({error.message.rstrip('.')}); delete it "
                "to plan the rest of the run again, or start the run in a "
                "new directory.",
                received=error.received,
            ) from None

    def write_plan(self, total_steps, spent_s, schedule_state=None):
        """Saves the planned last step, the seconds of the budget spent,
        and the state of the learning-rate decay."""
        write_json(
            self.file(PLAN_FILE),
            {
                "total_steps": int(total_steps),
                "spent_s": round(float(spent_s), 1),
                "schedule": schedule_state,
            },
        )

    # === Checkpoints ===

    def save_checkpoint(self, model, step, num_replicas=1):
        """Writes every model and optimizer variable and the step.

        The previous checkpoint is replaced only once the new one is
        complete. `num_replicas` (of the global batches) is recorded: a run
        resumes only with as many replicas, so that its data stream lines
        up.
        """
        keyed = _state_variables(model)
        with atomic_output(self.file(CHECKPOINT_DIR), directory=True) as tmp:
            np.savez(
                os.path.join(tmp, "state.npz"),
                **{
                    f"v{i}": np.asarray(v.numpy())
                    for i, v in enumerate(keyed.values())
                },
            )
            write_json(
                os.path.join(tmp, "meta.json"),
                {
                    "format": CHECKPOINT_FORMAT,
                    "step": int(step),
                    "num_replicas": int(num_replicas),
                    "variables": [
                        [key, list(v.shape)] for key, v in keyed.items()
                    ],
                },
            )

    def _checkpoint_replicas(self):
        """The replicas the checkpoint was trained on (1 without one)."""
        path = self._checkpoint_path()
        meta = read_json(os.path.join(path, "meta.json")) if path else None
        if not isinstance(meta, dict):
            return 1  # none yet, or damaged: `restore_checkpoint` says so
        replicas = meta.get("num_replicas", 1)
        if type(replicas) is not int or not 1 <= replicas <= MAX_REPLICAS:
            raise self._damaged(
                path,
                f"meta.json num_replicas is {replicas!r}, not 1 to "
                f"{MAX_REPLICAS:,}",
            )
        return replicas

    def _checkpoint_path(self):
        final = self.file(CHECKPOINT_DIR)
        if os.path.exists(os.path.join(final, "meta.json")):
            return final
        # Killed between the two renames of a checkpoint replacement.
        previous = f"{final}.previous"
        if os.path.exists(os.path.join(previous, "meta.json")):
            return previous
        return None

    def restore_checkpoint(self, model, num_replicas=None):
        """Loads the latest checkpoint into `model`, variable by path.

        With `num_replicas`, also checks that the checkpoint was trained
        with that many replicas. Returns the step it was taken at, or None
        if there is none. A checkpoint that does not fit the model is an
        error naming the variable.
        """
        path = self._checkpoint_path()
        if path is None:
            return None
        meta = read_json(os.path.join(path, "meta.json"))
        if not isinstance(meta, dict) or "variables" not in meta:
            raise self._damaged(path, "meta.json lacks the variable list")
        saved_replicas = meta.get("num_replicas", 1)
        if num_replicas is not None and saved_replicas != num_replicas:
            raise RunDirectoryError(
                f"The checkpoint in {path} was trained on {saved_replicas} "
                f"replica(s) and this run has {num_replicas}: a step is one "
                "global batch of (replicas x tokens_per_batch) tokens, so "
                "the data position would not line up. Resume on as many "
                "devices (`strategy` and TF_CONFIG as before), or choose a "
                "new `output_dir`."
            )
        keyed = _state_variables(model)
        values = self._read_state(path, meta, keyed)
        self._check_fits(path, keyed, values)
        for key, variable in keyed.items():
            variable.assign(values[key])
        return int(meta["step"])

    def _read_state(self, path, meta, keyed):
        """`{variable key: array}` of a checkpoint."""
        keys = [key for key, _ in meta["variables"]]
        if meta.get("format", 1) < CHECKPOINT_FORMAT:
            # Written before checkpoints were keyed by path (in variable
            # order): read in the model's order, shapes checked after.
            keys = list(keyed)[: len(keys)] + keys[len(keyed) :]
        state_file = os.path.join(path, "state.npz")
        try:
            check_input_file(state_file, "Checkpoint file", "a .npz file")
            # Opened here: np.load leaks its own handle on a damaged file.
            with open(state_file, "rb") as f, np.load(f) as state:
                return {key: state[f"v{i}"] for i, key in enumerate(keys)}
        except InputPathError as error:
            raise error.within(kind=RunDirectoryError) from None
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            raise self._damaged(path, "state.npz cannot be read") from None

    def _check_fits(self, path, keyed, values):
        missing = [key for key in keyed if key not in values]
        extra = [key for key in values if key not in keyed]
        if missing or extra:
            raise RunDirectoryError(
                f"The checkpoint in {path} does not fit this model: "
                + (f"the model's {missing[0]} is not in it" if missing else "")
                + ("; " if missing and extra else "")
                + (
                    f"it holds {extra[0]}, which the model lacks"
                    if extra
                    else ""
                )
                + f" ({len(missing)} missing, {len(extra)} unexpected). Was "
                "it written by a run with other settings?"
            )
        for key, variable in keyed.items():
            found = tuple(values[key].shape)
            if found != tuple(variable.shape):
                raise RunDirectoryError(
                    f"The checkpoint in {path} does not fit this model: "
                    f"{key} has shape {found} there and "
                    f"{tuple(variable.shape)} in the model."
                )

    def _damaged(self, path, what):
        return RunDirectoryError(
            f"The checkpoint in {path} is damaged ({what}). Delete {path} "
            "to start the run over, or restore it from a copy."
        )

    # === Loading a trained run ===

    def load(self):
        """The trained model, vocabulary and config of the run.

        The model computes in the global Keras precision (float32 unless
        the caller set another policy), whatever precision the run
        trained in (`config.mixed_precision`): the weights are float32
        either way, and a run loaded from its folder gives the numbers of
        its export. (Training itself resumes through `build_model` and
        `restore_checkpoint`, in the run's own precision.)
        """
        config = self.read_config()
        vocabulary = self.read_vocabulary()
        # The state a run of windows carries is kept per global row.
        model = build_model(config, replicas=self._checkpoint_replicas())
        if self.restore_checkpoint(model) is None:
            raise RunDirectoryError(
                f"{self.path} has no checkpoint yet: train for at least "
                "`checkpoint_every` steps first."
            )
        if config.mixed_precision is not None:
            model = _in_global_precision(model, config, model.window_rows)
        return model, vocabulary, config


def _in_global_precision(model, config, rows):
    """A copy of the trained `model` built without its training precision
    (its mixed-precision policy, and fp16's loss scaling), holding its
    values (`rows`: its window rows, or None)."""
    float32 = dataclasses.replace(config, mixed_precision=None)
    replicas = 1 if rows is None else rows // window_rows(config)
    copy = build_model(float32, replicas=replicas)
    trained = _state_variables(model)
    weights = {id(variable) for variable in copy.variables}
    for key, variable in _state_variables(copy).items():
        value = trained.get(key)
        if value is not None and tuple(value.shape) == tuple(variable.shape):
            variable.assign(value.numpy())
        elif id(variable) in weights:  # never a weight left as initialised
            raise RunDirectoryError(
                f"The model's {key} has no trained value to copy in float32 "
                "(a bug: please report it)."
            )
    return copy


def _check_plan(plan):
    if not isinstance(plan, dict):
        raise KerasElmoError(f"not a JSON object but {type(plan).__name__}")
    total = check_integer(
        plan.get("total_steps"), where="`total_steps`", minimum=1
    )
    spent = check_number(plan.get("spent_s"), where="`spent_s`", minimum=0.0)
    schedule = plan.get("schedule")
    if schedule is not None:
        if not isinstance(schedule, dict):
            raise KerasElmoError("schedule is not a JSON object")
        schedule = {
            key: check_number(
                schedule.get(key), where=f"`schedule.{key}`", minimum=0.0
            )
            for key in ("anchor_step", "anchor_rate", "end_step")
        }
    return {"total_steps": total, "spent_s": spent, "schedule": schedule}


def load_run(directory):
    """The trained model, vocabulary and config of a run directory."""
    return RunDirectory(directory).load()
