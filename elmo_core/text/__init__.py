"""Text in: text files read line by line within bounds (`lines`), a line
in its normal form (`normalization`) and split into tokens
(`tokenizers`: whitespace, spaCy, Moses), the record of which
tokenisation a corpus had (`tokenization_record`), which files a user's
patterns name (`patterns`), and why a line is not embedded
(`bad_lines`)."""

from elmo_core.text.normalization import normalize
from elmo_core.text.patterns import resolve_files
from elmo_core.text.tokenizers import tokenizer

__all__ = ["normalize", "resolve_files", "tokenizer"]
