"""The normal form of raw text before it is split and tokenised.

Every command that reads raw text puts each line in this form before its
tokenisation splits it (`elmo_core.text.tokenizers`: `prepare`, and
`embed`, `embed-corpus` and `SentenceEmbedder` with any `tokenize`), so a
line means the same thing wherever it goes in.

Unicode NFC (a letter and its combining accent become the one code point
the same letter has precomposed, so "é" is one character however it was
typed); control characters (C0, DEL, C1: a DOS end-of-file mark, a stray
escape) become spaces; invisible marks that are not text (the byte order
mark U+FEFF, the zero-width space U+200B, the soft hyphen U+00AD) go; and
every run of whitespace (Unicode's: tabs, no-break spaces, line and
paragraph separators) becomes one space, with none at either end.
The marks and controls go before the composition, so that a form once
normal stays as it is (`normalize(normalize(t)) == normalize(t)`: an
accent after a zero-width space composes with the letter before it).
"""

import re
import unicodedata

from elmo_core.errors import KerasElmoError

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\ufeff\u200b\u00ad]")


def normalize(text):
    """`text` in the normal form above.

    Example:

    >>> from elmo_core.text import normalize
    >>> normalize("  Cafe\\u0301\\x1a  au\\u00a0lait\\u200b ")
    'Café au lait'
    """
    check_string(text, "text")
    text = _INVISIBLE.sub("", _CONTROL.sub(" ", text))
    return " ".join(unicodedata.normalize("NFC", text).split())


def check_string(value, argument):
    """`value` is a str, else `KerasElmoError` naming `argument`."""
    if not isinstance(value, str):
        raise KerasElmoError(
            f"`{argument}` must be a str of text.", argument, received=value
        )
