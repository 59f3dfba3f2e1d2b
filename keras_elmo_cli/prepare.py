"""`keras-elmo prepare`: raw text files -> the corpus `train` reads; it
parses its flags and calls `elmo_core.prepare`."""

from keras_elmo_cli.arguments import add_input_files
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import add_tokenize
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.arguments import non_negative_float


def add_parser(commands):
    from elmo_core.preparation import documents
    from elmo_core.preparation import prepare_text
    from elmo_core.text import tokenizers
    from elmo_core.text.lines import ON_BAD_LINE

    parser = commands.add_parser(
        "prepare",
        help="turn raw text files into a training corpus (sentences split, "
        "tokenised, held-out part by document)",
        description="Reads raw text (UTF-8 unless --encoding says, .gz "
        "allowed, any size), normalises it (Unicode NFC, control "
        "characters, whitespace), splits it into sentences and tokens "
        "(--tokenize), and writes to the folder --output: "
        f"{prepare_text.TRAIN_FILE} and {prepare_text.HELD_OUT_FILE} "
        "(one sentence a line, tokens joined by spaces: what `keras-elmo "
        f"train` and `embed` read) and {prepare_text.RECORD_FILE} (the "
        "counts, the "
        "settings and the tokenisation, which `train` records with the "
        "biLM). The files are written to temporary names and renamed when "
        "complete; other files in --output are left alone. Needs the "
        "prepare extra for spacy and moses: pip install "
        "'keras-elmo[prepare]'.",
    )
    io = parser.add_argument_group("input and output")
    add_input_files(io, "a raw text file or glob")
    io.add_argument("--output", required=True, help="output folder")
    io.add_argument(
        "--encoding",
        default=",".join(documents.DEFAULT_ENCODINGS),
        help="the files' text encoding, or several tried in order, each "
        "file read in the first that decodes all of it, e.g. "
        "utf-8,latin-1 (default %(default)s)",
    )
    io.add_argument(
        "--stop-at",
        metavar="PATTERN",
        help="a regular expression: in each file, the first line in which "
        "it is found, and all after it, are left out (e.g. a licence "
        "footer: '^End of (the )?Project Gutenberg')",
    )
    io.add_argument(
        "--on-bad-line",
        choices=ON_BAD_LINE,
        default="error",
        help="a line the encoding does not decode: stop with an error "
        "naming it (default), or leave it out (counted in the summary)",
    )
    text = parser.add_argument_group("sentences and tokens")
    add_tokenize(text, tokenizers.DEFAULT_PREPARE_TOKENIZATION)
    text.add_argument(
        "--deduplicate",
        action="store_true",
        help="keep each distinct sentence once, where it first appears",
    )
    split = parser.add_argument_group("held-out part")
    split.add_argument(
        "--documents",
        choices=documents.DOCUMENTS,
        default=documents.DEFAULT_DOCUMENTS,
        help="what a document is: a whole file (default), each block "
        "between blank lines, or each line",
    )
    split.add_argument(
        "--held-out",
        type=non_negative_float,
        default=prepare_text.DEFAULT_HELD_OUT,
        help="the share of sentences held out, in [0, 1) (default "
        "%(default)s; 0: none)",
    )
    split.add_argument(
        "--held-out-by",
        choices=prepare_text.HELD_OUT_BY,
        default=prepare_text.DEFAULT_HELD_OUT_BY,
        help="document: whole documents, drawn by name; tail: the last "
        "sentences of every document (for a few long documents, such as "
        "books); auto (default): document, but tail for fewer than "
        f"{prepare_text.MIN_FILES_TO_DRAW} files that are each a document",
    )
    split.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the seed of the held-out draw (default %(default)s)",
    )
    add_quiet(
        parser,
        "no progress output and no summary (what was left out is still shown)",
    )
    parser.set_defaults(run=run, needs_keras=False)


def run(args):
    from elmo_core.preparation.prepare_text import prepare

    summary = prepare(**library_arguments(args, prepare))
    lines = [] if args.quiet else summary_lines(summary, args.output)
    for line in lines + left_out_lines(summary, args.output):
        print(line)


def left_out_lines(summary, output):
    """The lines on what the input held that the corpus does not: lines
    left out as not decoded (`--on-bad-line skip`)."""
    import os

    from elmo_core.preparation.prepare_text import RECORD_FILE

    skipped = summary["lines_skipped"]
    if not skipped:
        return []
    return [
        f"Left out {_count(skipped, 'line')} that "
        f"{'is' if skipped == 1 else 'are'} not "
        f"{summary['settings']['encoding']} (--on-bad-line skip); "
        f"{'it is' if skipped == 1 else 'the first are'} listed in "
        f"{os.path.join(output, RECORD_FILE)} (lines_skipped_first)"
    ]


def summary_lines(summary, output):
    """The lines `prepare` prints of its `summary`."""
    import os

    from elmo_core.preparation.prepare_text import HELD_OUT_FILE
    from elmo_core.preparation.prepare_text import TRAIN_FILE

    lines = [
        f"Prepared {_count(summary['files'], 'file')}, "
        f"{_count(summary['documents'], 'document')} "
        f"({summary['tokenization']}, {summary['language']}):"
    ]
    for part, name in (("train", TRAIN_FILE), ("held_out", HELD_OUT_FILE)):
        counts = summary[part]
        if counts["sentences"]:
            lines.append(
                f"  {os.path.join(output, name)}: "
                f"{_count(counts['sentences'], 'sentence')}, "
                f"{_count(counts['tokens'], 'token')}, from "
                f"{_count(counts['documents'], 'document')}"
            )
    longest = summary["longest_sentence"]
    changed = summary["lines_changed"] / max(1, summary["lines_read"])
    lines.append(
        f"  longest sentence {_count(longest['tokens'], 'token')} "
        f"({longest['file']}); {changed:.1%} of "
        f"{_count(summary['lines_read'], 'line')} changed by normalisation; "
        f"{_count(summary['empty_documents'], 'empty document')}; "
        f"{_count(summary['duplicates_dropped'], 'duplicate sentence')} "
        "dropped"
    )
    return lines


def _count(number, word):
    return f"{number:,} {word}{'' if number == 1 else 's'}"
