"""The exported whole model: what `keras_elmo.export.export_onnx(model,
...)` and `export_litert(model, ...)` write into an ONNX or LiteRT file of
a Keras model holding ELMo, and `elmo_core.runtime.ONNXModel` / `LiteRTModel`
read back. NumPy only (no TensorFlow), so that the runtime imports it.

The file is one function of the model's inputs, by name, to its outputs,
by name. Each input is of one kind:

- `CHARACTERS`: string tokens in Keras, read by a character biLM; in the
  file its character ids, int32 `(batch, time, 50)`
  (`elmo_core.characters.batch_to_ids`);
- `WORDS`: string tokens read by a word-input biLM; in the file its word
  ids, int32 `(batch, time)` (vocabulary line + 1, unknown words
  `<UNK>`, padding 0: `Vocabulary.batch_to_ids`); the vocabulary is in
  the metadata;
- `ARRAY`: any other input, as the Keras model takes it.

The metadata (JSON under `exported_file.METADATA_KEY`) holds the entries
every exported file has (`exported_file.common_metadata`), `"contents":
"model"`, and:

- `"inputs"`: a list of `{"name", "kind", "dtype", "shape"}` (a shape is
  a list of sizes, null where dynamic), `"vocabulary"` for `WORDS`;
- `"outputs"`: a list of `{"name", "dtype", "shape"}`;
- `"structure"`: `{"inputs": s, "outputs": s}`, each `"single"`, `"list"`
  or `"dict"`: how the Keras model takes its inputs and gives its
  outputs, so that the runtime hands them back the same way;
- `"bilm_options"`: the official options of each biLM the model holds;
- `"export_options"`: the options of the export.

`parse_metadata` is the reader's check of all of it.
"""

import re

from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.formats import exported_file
from elmo_core.formats.exported_file import CONTENTS_KEY
from elmo_core.formats.exported_file import MODEL

CHARACTERS = "characters"
WORDS = "words"
ARRAY = "array"
INPUT_KINDS = (CHARACTERS, WORDS, ARRAY)
# The shape of the ids of each kind of token input, after (batch, time).
TOKEN_IDS_SHAPE = {CHARACTERS: (MAX_CHARACTERS_PER_TOKEN,), WORDS: ()}
STRUCTURES = ("single", "list", "dict")
# The dtypes an input or output may have.
DTYPES = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
)
# Bounds of what a file may declare (a reader allocates after them).
MAX_TENSORS = 256
MAX_RANK = 8
MAX_VOCABULARY = 10_000_000
# Input and output names: kept as they are by the converters (TensorFlow
# op names, ONNX value names, LiteRT signature keys).
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


def metadata(
    kind,
    precision,
    inputs,
    outputs,
    structure,
    bilm_options,
    **options,
):
    """The metadata dict of a whole-model export (stored as
    `exported_file.metadata_json`)."""
    return {
        **exported_file.common_metadata(kind, precision),
        CONTENTS_KEY: MODEL,
        "inputs": inputs,
        "outputs": outputs,
        "structure": structure,
        "bilm_options": bilm_options,
        "export_options": options,
    }


def parse_metadata(text, path, kind):
    """The metadata dict of a whole model's file of `kind`, checked."""
    info = exported_file.parse_metadata(text, path, kind, contents=MODEL)
    try:
        _check_tensors(info.get("inputs"), "inputs", inputs=True)
        _check_tensors(info.get("outputs"), "outputs", inputs=False)
        _check_structure(info)
    except KerasElmoError as error:
        raise KerasElmoError(
            f"{path}: its keras_elmo metadata is damaged "
            f"({error.message.rstrip('.')}); export it again with "
            f"keras_elmo.export.to_{kind.name}.",
            received=error.received,
        ) from None
    return info


def _check_tensors(specs, key, inputs):
    if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_TENSORS:
        raise KerasElmoError(
            f"`{key}` must be a list of 1 to {MAX_TENSORS} tensors.",
            received=specs,
        )
    names = set()
    for i, spec in enumerate(specs):
        where = f"`{key}[{i}]`"
        if not isinstance(spec, dict):
            raise KerasElmoError(f"{where} must be an object.", received=spec)
        name = spec.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise KerasElmoError(
                f"{where} must have a plain name (a letter, then letters, "
                "digits or _).",
                received=name,
            )
        if name in names:
            raise KerasElmoError(
                f"{where} repeats the name of another.", received=name
            )
        names.add(name)
        check_choice(spec.get("dtype"), where=f"{where} dtype", choices=DTYPES)
        _check_shape(spec.get("shape"), where)
        if inputs:
            _check_input(spec, where)


def _check_shape(shape, where):
    if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_RANK:
        raise KerasElmoError(
            f"{where} shape must be a list of 1 to {MAX_RANK} sizes.",
            received=shape,
        )
    for size in shape:
        if size is not None:
            check_integer(
                size, where=f"{where} size", minimum=1, maximum=2**31 - 1
            )


def _check_input(spec, where):
    kind = check_choice(
        spec.get("kind"), where=f"{where} kind", choices=INPUT_KINDS
    )
    if kind == ARRAY:
        return
    want = [None, None, *TOKEN_IDS_SHAPE[kind]]
    shape = spec["shape"]
    if (
        spec["dtype"] != "int32"
        or len(shape) != len(want)
        or shape[2:] != want[2:]
    ):
        raise KerasElmoError(
            f"{where} holds {kind} ids, which must be int32 of shape {want}.",
            received=(spec["dtype"], shape),
        )
    if kind == WORDS:
        vocabulary = spec.get("vocabulary")
        if not isinstance(vocabulary, list) or not (
            3 <= len(vocabulary) <= MAX_VOCABULARY
        ):
            raise KerasElmoError(
                f"{where} vocabulary must be a list of 3 to "
                f"{MAX_VOCABULARY:,} tokens.",
                received=vocabulary,
            )
        check_strings(vocabulary, where=f"{where} vocabulary")


def _check_structure(info):
    structure = info.get("structure")
    if not isinstance(structure, dict):
        raise KerasElmoError(
            "`structure` must be an object.", received=structure
        )
    for key in ("inputs", "outputs"):
        value = check_choice(
            structure.get(key), where=f"`structure.{key}`", choices=STRUCTURES
        )
        if value == "single" and len(info[key]) != 1:
            raise KerasElmoError(
                f"`structure.{key}` is single but there are {len(info[key])}."
            )


def expected_signature(info):
    """`(inputs, outputs)` of the file that metadata `info` describes,
    each `{name: (dtype name, shape)}` (None for a dynamic size), as
    `exported_file.check_signature` takes them."""

    def tensors(specs):
        return {
            spec["name"]: (spec["dtype"], tuple(spec["shape"]))
            for spec in specs
        }

    return tensors(info["inputs"]), tensors(info["outputs"])
