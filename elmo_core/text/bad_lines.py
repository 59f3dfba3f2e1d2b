"""Why a line or a record is not embedded: the one list of reasons that
the outputs name (`bad_lines-*.jsonl` of a corpus run, the `bad_records`
of `keras-elmo embed` over FASTA) and the readers use."""

EMPTY = "empty"
TOO_LONG = "too_long"
NOT_UTF8 = "not_utf8"
UNREADABLE = "unreadable"
BAD_RESIDUE = "bad_residue"
BAD_ID = "bad_id"
DUPLICATE_ID = "duplicate_id"
# Why a line (or a FASTA record) was not embedded -> what that means.
BAD_LINE_REASONS = {
    EMPTY: "no tokens (an empty or blank line, a FASTA record without "
    "residues)",
    TOO_LONG: "more tokens than max_sentence_tokens (FASTA: residues)",
    NOT_UTF8: "not valid UTF-8",
    UNREADABLE: "file(s) not read to their end (damaged, truncated or not "
    "a regular file)",
    BAD_RESIDUE: "FASTA records with a character outside the amino-acid "
    "alphabet",
    BAD_ID: "FASTA records without an id (or one the output cannot name)",
    DUPLICATE_ID: "FASTA records whose id an earlier record gave to "
    "another sequence",
}
