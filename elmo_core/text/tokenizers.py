"""Tokenisations: how raw text becomes the tokens a biLM reads.

The package's own rule is `whitespace` (`str.split()`, what every
command reads by default, as bilm-tf and AllenNLP do). The others come
from maintained libraries, imported on first use (the `prepare` extra:
`pip install 'keras-elmo[prepare]'`):

- `spacy`: spaCy's rule-based tokenizer of `spacy.blank(language)` (no
  model download) and its punctuation `sentencizer`, with two
  corrections at quotations: an opening quote it leaves at the end of a
  sentence starts the next one, and what goes on after a quotation's
  `!`, `?` or `.` in lower case (`"Oh!" said she.`) stays in its
  sentence (both measured on the bundled corpus: its sentences came
  near those of the script that made it before, 43,828 against 42,337
  where the sentencizer alone gave 44,675);
- `moses`: the Moses tokenizer rules of `sacremoses` (those that
  tokenised the 1B Word Benchmark the original ELMo learned from) in
  spaCy's sentences.

And `device`, the package's rule for an app that cannot carry spaCy
(`elmo_core.text.device_tokenizer`, twinned in Java): a short
approximation of spaCy's English tokens, a line one sentence.

How they were chosen, by agreement with the bundled corpus and UD
English-EWT, speed and languages: `benchmarks/tokenization.py` and the
benchmarks page (spaCy: 0.976 token F1 on the corpus, 0.982 on EWT,
448k tokens/s, 75 languages; pysbd's sentences missed a third of the
corpus's, so Moses takes spaCy's).

Every tokenizer takes one line as a sentence (`tokenize`) or one
paragraph (`sentences`: its sentences, each a list of tokens) of raw
text, puts it in the normal form first (`elmo_core.text.normalization`:
the one text path, whatever reads the text: `prepare`, `embed`,
`embed-corpus`, `SentenceEmbedder`), and never returns an empty token or
one holding whitespace, so that its tokens written with single spaces
read back as the same tokens. `whitespace` splits no sentences: a line
is one sentence, as written (`splits_sentences` is False, and `prepare`
gives it each line alone).
"""

import functools

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_strings
from elmo_core.text import device_tokenizer
from elmo_core.text.normalization import normalize

# The tokenisation every command uses unless told otherwise.
DEFAULT_TOKENIZATION = "whitespace"
# The tokenisation `keras-elmo prepare` uses unless told otherwise.
DEFAULT_PREPARE_TOKENIZATION = "spacy"
DEFAULT_LANGUAGE = "en"
# The extra that installs the libraries below.
EXTRA = "prepare"
# The longest text a tokenizer is given at once, in characters: longer
# paragraphs are cut at a space first (elmo_core.preparation.documents).
MAX_TEXT = 100_000


class Tokenizer:
    """One tokenisation of one language.

    Args:
        language: str. An ISO 639-1 code such as `"en"`.
    """

    name = None
    libraries = ()
    # Whether `sentences` finds the sentences of a paragraph (else a line
    # is one sentence, and a paragraph is never given more than a line).
    splits_sentences = True

    def __init__(self, language=DEFAULT_LANGUAGE):
        self.language = language

    def tokenize(self, text):
        """The tokens of the line `text` read as one sentence (a list of
        str), the line in its normal form first."""
        return self.normal_tokens(normalize(text))

    def sentences(self, text):
        """The sentences of the paragraph `text`, each a list of tokens,
        the text in its normal form first."""
        return self.normal_sentences(normalize(text))

    def normal_tokens(self, text):
        """The tokens of the normalised sentence `text`."""
        raise NotImplementedError

    def normal_sentences(self, text):
        """The sentences of the normalised paragraph `text`."""
        raise NotImplementedError

    def record(self):
        """What a prepared corpus records of its tokenisation (JSON)."""
        return {"tokenization": self.name, "language": self.language}


class Whitespace(Tokenizer):
    """`str.split()`: a line is one sentence, as written."""

    name = "whitespace"
    splits_sentences = False

    def normal_tokens(self, text):
        return text.split()

    def normal_sentences(self, text):
        tokens = text.split()
        return [tokens] if tokens else []


class Device(Tokenizer):
    """The device rule (`elmo_core.text.device_tokenizer`, with its Java
    twin for an app): a line is one sentence, split by a short
    approximation of spaCy's English tokens, without spaCy."""

    name = "device"
    splits_sentences = False

    def __init__(self, language=DEFAULT_LANGUAGE):
        super().__init__(language)
        if language != "en":
            raise KerasElmoError(
                "`tokenize` 'device' is a rule for English ('en') only; "
                "pass `language` 'en', or `tokenize` spacy or moses.",
                "language",
                received=language,
            )

    def normal_tokens(self, text):
        return device_tokenizer.tokenize(text)

    def normal_sentences(self, text):
        tokens = self.normal_tokens(text)
        return [tokens] if tokens else []


class Spacy(Tokenizer):
    """spaCy's rule-based tokenizer and `sentencizer` for `language`."""

    name = "spacy"
    libraries = ("spacy",)

    def __init__(self, language=DEFAULT_LANGUAGE):
        super().__init__(language)
        spacy = _library("spacy", self)
        try:
            self.nlp = spacy.blank(language)
        except (ImportError, KeyError, ValueError) as error:
            raise _unknown_language(self, error) from None
        self.nlp.add_pipe("sentencizer")
        self.nlp.max_length = max(self.nlp.max_length, 2 * MAX_TEXT)

    def normal_tokens(self, text):
        return _words(self.nlp.make_doc(text))

    def normal_sentences(self, text):
        return _continued(_words(span) for span in self.spans(text))

    def spans(self, text):
        """spaCy's sentences of `text`, each a list of spaCy tokens; an
        opening quote the sentencizer left at the end of one (`... . "` |
        `Oh ! "`: a quote after a space, before none) moved to the
        next."""
        sentences = [list(span) for span in self.nlp(text).sents]
        for before, after in zip(sentences, sentences[1:]):
            if len(before) > 1 and _opens(before[-1], before[-2]):
                after.insert(0, before.pop())
        return sentences


class Moses(Spacy):
    """The Moses tokenizer (`sacremoses`) in spaCy's sentences."""

    name = "moses"
    libraries = ("sacremoses", "spacy")

    def __init__(self, language=DEFAULT_LANGUAGE):
        super().__init__(language)
        sacremoses = _library("sacremoses", self)
        self.moses = sacremoses.MosesTokenizer(lang=language)

    def normal_tokens(self, text):
        tokens = self.moses.tokenize(text, escape=False)
        return [token for token in tokens if token and not token.isspace()]

    def normal_sentences(self, text):
        return _continued(
            self.normal_tokens("".join(token.text_with_ws for token in span))
            for span in self.spans(text)
        )


TOKENIZERS = {kind.name: kind for kind in (Whitespace, Device, Spacy, Moses)}
TOKENIZATIONS = tuple(TOKENIZERS)


def tokenizer(tokenize=DEFAULT_TOKENIZATION, language=DEFAULT_LANGUAGE):
    """The `Tokenizer` named `tokenize` (one of `TOKENIZATIONS`) for
    `language`.

    Example:

    >>> elmo_core.text.tokenizer("whitespace").tokenize("Hello ,  world")
    ['Hello', ',', 'world']
    """
    tokenize, language = _checked(tokenize, language)
    return TOKENIZERS[tokenize](language)


def _checked(tokenize, language):
    """`(tokenize, language)` checked, the language code stripped."""
    check_choice(tokenize, "tokenize", choices=TOKENIZATIONS)
    (language,) = check_strings([language], "language")
    if not language.strip() or len(language) > 16:
        raise KerasElmoError(
            "`language` must be a language code such as 'en', 'de' or 'fr'.",
            "language",
            received=language,
        )
    return tokenize, language.strip()


def shared_tokenizer(tokenize=DEFAULT_TOKENIZATION, language=DEFAULT_LANGUAGE):
    """`tokenizer(tokenize, language)`, made once a process (what an
    embedder that pickles small, or a worker, asks for again)."""
    return _shared(*_checked(tokenize, language))


@functools.lru_cache(maxsize=16)
def _shared(tokenize, language):
    return TOKENIZERS[tokenize](language)


def _continued(sentences):
    """The token lists `sentences`, each one that goes on a quotation the
    one before ended (that one ends in `!`, `?` or `.` and a closing
    quote, and it begins in lower case) joined to it: the sentencizer
    ends a sentence at every `!`, `?` and `.`, inside a quotation too
    (`" What is to be done ? "` | `was his first exclamation .`). Empty
    ones are left out."""
    joined = []
    for tokens in sentences:
        if joined and _ends_quotation(joined[-1]) and _lower_first(tokens):
            joined[-1].extend(tokens)
        elif tokens:
            joined.append(list(tokens))
    return joined


# Tokens that close a quotation, and those that end a sentence inside one.
_QUOTES = frozenset("\"'\u201d\u2019\u00bb\u201c\u2018\u00ab")
_ENDS = frozenset("!?.")


def _ends_quotation(tokens):
    """Whether `tokens` end in `!`, `?` or `.` and then closing quotes."""
    end = len(tokens)
    while end and tokens[end - 1] in _QUOTES:
        end -= 1
    return 0 < end < len(tokens) and tokens[end - 1][-1] in _ENDS


def _opens(token, previous):
    """Whether the spaCy `token` is a quote that opens what follows."""
    return (
        token.text in _QUOTES and previous.whitespace_ and not token.whitespace_
    )


def _lower_first(tokens):
    first = next((token for token in tokens if token[0].isalpha()), None)
    return first is not None and first[0].islower()


def _words(tokens):
    return [token.text for token in tokens if not token.is_space]


def _library(name, kind):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise KerasElmoError(
            f"`tokenize` '{kind.name}' needs {' and '.join(kind.libraries)}"
            f", which {'is' if len(kind.libraries) == 1 else 'are'} not "
            f"installed: pip install 'keras-elmo[{EXTRA}]'.",
            "tokenize",
            received=kind.name,
        ) from None


def _unknown_language(kind, error):
    return KerasElmoError(
        f"`tokenize` '{kind.name}' has no rules for language "
        f"'{kind.language}' ({error}). Pass an ISO 639-1 code it covers "
        "(benchmarks/tokenization.py lists them), or another `tokenize`.",
        "language",
        received=kind.language,
    )
