"""The device tokenizer: raw text to tokens by one short rule, written
twice, here and in Java (`examples/device/ElmoTokenizer.java`, for an
app), so that a phone splits a sentence as this module does.
`tests/test_device_ids.py` compiles the Java with the JDK and checks its
tokens and ids equal these on odd input.

The rule is a small approximation of spaCy's English tokenizer (what
`keras-elmo prepare` uses by default), for a device that cannot carry
spaCy; what it costs a tagger against spaCy's tokens is measured by
`benchmarks/device_tokenizer.py` (docs/benchmarks.md). A sentence:

1. is put in the normal form `keras-elmo prepare` gives a line
   (`elmo_core.text.normalization`: Unicode NFC, control characters to
   spaces, the invisible marks U+FEFF, U+200B and U+00AD removed);
2. is split at whitespace (Python's `str.split()`) into words;
3. each word loses, one at a time, from its front: a punctuation mark
   (`PUNCTUATION`), a currency sign (`CURRENCY`) or a run of two or more
   periods;
4. then, one at a time, from its end: a punctuation mark, `%`, a run of
   two or more periods, a clitic (`CLITICS`: `n't`, `'s`, `'m`, `'d`,
   `'ll`, `'re`, `'ve`, with `'` or `’`, ASCII letters in any case),
   or one period, unless what it ends is an abbreviation: a letter, or
   letters each followed by a period (`U.S.`, `e.g.`), or a word of
   `ABBREVIATIONS` (`Mr.`), in which case the period stays and nothing
   more is taken;
5. what is left, unless it is an address (it holds `://` or `@`, or
   begins with `www.`), is split around each run inside it of: two or
   more periods; `…`; hyphens or dashes (`HYPHENS`) between a letter or
   digit and a letter (`well-known`: `well - known`), or between two
   digits (`1998-2004`); `/` between a letter or digit and a letter;
   `,` between two letters.

No step takes a whole word (what is left of it is its last token), so
no token is empty and none holds whitespace. Letters are Unicode's
(`str.isalpha()`, Java's `Character.isLetter`), digits the ASCII 0-9.
"""

from elmo_core.text.normalization import normalize

PUNCTUATION = frozenset("!\"#&'()*,:;<>?[]_`{}¡«»¿‘’‚“”„…–—。、，！？；：")
CURRENCY = frozenset("$£€¥")
PERCENT = "%"
HYPHENS = frozenset("-–—")
ELLIPSIS = "…"
APOSTROPHES = "'’"
CLITICS = ("n't", "'s", "'m", "'d", "'ll", "'re", "'ve")
ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr St Jr Sr Prof Rev Gen Gov Sen Rep Mt Inc Ltd Co Corp "
    "Bros vs Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
ADDRESS_MARKS = ("://", "@")
JOINERS = frozenset("/,")
RUNS = (HYPHENS, frozenset("."), frozenset(ELLIPSIS), JOINERS)


def tokenize(text):
    """The tokens of the sentence `text` (a str), by the rule above.

    Example:

    >>> from elmo_core.text.device_tokenizer import tokenize
    >>> tokenize("Mr. Smith-Jones didn't pay $5...")
    ['Mr.', 'Smith', '-', 'Jones', 'did', "n't", 'pay', '$', '5', '...']
    >>> tokenize('"U.S. shares," (e.g. IBM).')
    ['"', 'U.S.', 'shares', ',', '"', '(', 'e.g.', 'IBM', ')', '.']
    """
    tokens = []
    for word in normalize(text).split():
        tokens += _word_tokens(word)
    return tokens


def _word_tokens(word):
    """The tokens of one whitespace-free `word`: steps 3 to 5."""
    front, word = _front(word)
    word, back = _back(word)
    return front + _inside(word) + back[::-1]


def _front(word):
    """`(pieces taken from the front, the rest)`."""
    pieces = []
    while len(word) > 1:
        run = _period_run(word)
        if run > 1 and run < len(word):
            size = run
        elif word[0] in PUNCTUATION or word[0] in CURRENCY:
            size = 1
        else:
            break
        pieces.append(word[:size])
        word = word[size:]
    return pieces, word


def _back(word):
    """`(the rest, pieces taken from the end, last first)`."""
    pieces = []
    while len(word) > 1:
        size = _back_piece(word)
        if not size:
            break
        pieces.append(word[-size:])
        word = word[:-size]
    return word, pieces


def _back_piece(word):
    """The length of the piece step 4 takes from the end of `word`, 0 for
    none."""
    run = len(word) - len(word.rstrip("."))
    if run > 1:
        return run if run < len(word) else 0
    if word[-1] in PUNCTUATION or word[-1] == PERCENT:
        return 1
    clitic = _clitic(word)
    if clitic:
        return clitic
    if run == 1 and not _abbreviation(word[:-1]):
        return 1
    return 0


def _clitic(word):
    """The length of the clitic `word` ends with (something before it),
    else 0."""
    for clitic in CLITICS:
        end = word[-len(clitic) :]
        if len(word) > len(clitic) and _same_clitic(end, clitic):
            return len(clitic)
    return 0


def _same_clitic(text, clitic):
    """`text` is `clitic`, either apostrophe, ASCII letters in any
    case."""
    return all(
        a in APOSTROPHES if b == "'" else a in (b, b.upper())
        for a, b in zip(text, clitic)
    )


def _abbreviation(word):
    """`word` (without its last period) is an abbreviation: one of
    `ABBREVIATIONS`, or letters each followed by a period (`U.S`)."""
    if word in ABBREVIATIONS:
        return True
    return (
        all(
            _is_letter(c) if i % 2 == 0 else c == "."
            for i, c in enumerate(word)
        )
        and len(word) % 2 == 1
    )


def _inside(word):
    """Step 5: `word` split around the runs `_splits` names."""
    if any(mark in word for mark in ADDRESS_MARKS) or word.startswith("www."):
        return [word]
    tokens, start, i = [], 0, 1
    while i < len(word) - 1:
        end = _run_end(word, i)
        if end is None:
            i += 1
            continue
        if end < len(word) and _splits(word, i, end):
            tokens += [word[start:i], word[i:end]]
            start = end
        i = end
    return tokens + [word[start:]]


def _run_end(word, i):
    """The end of the run of one of `RUNS` that begins at `i`, None for a
    character of none."""
    for kind in RUNS:
        if word[i] in kind:
            end = i
            while end < len(word) and word[end] in kind:
                end += 1
            return end
    return None


def _splits(word, start, end):
    """Whether the run `word[start:end]` (inside the word) is split off:
    two periods or more; `...`; hyphens between a letter or digit and a
    letter, or between two digits; `/` between a letter or digit and a
    letter; `,` between two letters."""
    first, before, after = word[start], word[start - 1], word[end]
    if first == ".":
        return end - start > 1
    if first == ELLIPSIS:
        return True
    if first == ",":
        return _is_letter(before) and _is_letter(after)
    if _is_digit(before) and _is_digit(after):
        return first in HYPHENS
    return _is_alphanumeric(before) and _is_letter(after)


def _is_alphanumeric(character):
    return _is_letter(character) or _is_digit(character)


def _is_digit(character):
    return "0" <= character <= "9"


def _is_letter(character):
    return character.isalpha()


def _period_run(word):
    """The number of periods `word` begins with."""
    return len(word) - len(word.lstrip("."))
