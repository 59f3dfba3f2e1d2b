"""What an embedding run reads, and the settings that belong to it.

Sentences, one a line (read by a tokenisation,
`elmo_core.text.tokenizers`), or protein FASTA records (one residue a
token, bounded by `max_residues`, written as per-residue and per-protein
vectors). `input_settings` is the one rule of `embed`, `embed-corpus`
and their library functions: the format by the files' suffix unless
given, and a setting of the other format an error naming it, never
ignored.
"""

import collections

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.proteins.fasta import DEFAULT_MAX_RESIDUES
from elmo_core.proteins.fasta import input_format_of
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION

# `embed` of a FASTA file writes, per record id, the vectors asked for.
PER_RESIDUE = "per_residue"  # the record's layers, as a line's
PER_PROTEIN = "per_protein"  # float32 (2 * projection_dim,)
PROTEIN_VECTORS = {
    "both": (PER_RESIDUE, PER_PROTEIN),
    "per-residue": (PER_RESIDUE,),
    "per-protein": (PER_PROTEIN,),
}
DEFAULT_PROTEIN_VECTORS = "both"


class InputSettings(
    collections.namedtuple(
        "InputSettings", "input_format max_residues protein_vectors"
    )
):
    """`input_format` (`"lines"` or `"fasta"`); for FASTA, `max_residues`
    and `protein_vectors` (None for lines)."""


def input_settings(
    inputs,
    input_format=None,
    max_residues=None,
    protein_vectors=None,
    tokenize=DEFAULT_TOKENIZATION,
    sentence_index=True,
):
    """The checked `InputSettings` of an embedding run over the files
    `inputs` (paths; by their suffix when `input_format` is None).

    `max_residues` and `protein_vectors` (None: not given) are for FASTA
    input, and default there to `DEFAULT_MAX_RESIDUES` and `"both"`; a
    `tokenize` other than `whitespace`, or `sentence_index` False, is for
    lines of text. A setting given for the other format is an error
    naming it.

    Example:

    >>> from elmo_core.embedding_files.inputs import input_settings
    >>> tuple(input_settings(["proteins.fasta.gz"]))
    ('fasta', 10000, 'both')
    >>> input_settings(["sentences.txt"]).input_format
    'lines'
    """
    input_format = input_format_of(inputs, input_format)
    if input_format == "lines":
        for name, value in (
            ("max_residues", max_residues),
            ("protein_vectors", protein_vectors),
        ):
            if value is not None:
                raise KerasElmoError(
                    f"`{name}` is for FASTA input; the input is read as one "
                    "sentence a line (by its suffix, or `input_format`). "
                    f"Leave `{name}` out, or give `input_format` 'fasta'.",
                    name,
                    received=value,
                )
        return InputSettings(input_format, None, None)
    if tokenize != DEFAULT_TOKENIZATION:
        raise KerasElmoError(
            "`tokenize` is for sentences of text; FASTA input is one "
            "residue a token. Leave `tokenize` out.",
            "tokenize",
            received=tokenize,
        )
    if not check_flag(sentence_index, "sentence_index"):
        raise KerasElmoError(
            "`sentence_index` is for sentences: FASTA input has no text to "
            "index (its output is keyed by record id). Leave it out.",
            "sentence_index",
            received=sentence_index,
        )
    if max_residues is None:
        max_residues = DEFAULT_MAX_RESIDUES
    if protein_vectors is None:
        protein_vectors = DEFAULT_PROTEIN_VECTORS
    return InputSettings(
        input_format,
        check_integer(max_residues, "max_residues", minimum=1),
        check_choice(
            protein_vectors, "protein_vectors", choices=tuple(PROTEIN_VECTORS)
        ),
    )
