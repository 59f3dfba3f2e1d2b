"""The examples that end each command's `--help`, as `git` and
`huggingface-cli` show them: one or two typical command lines a command.

Keys are the command names (`""`: `keras-elmo` itself). Every line
parses with the command's parser (tests/test_docs.py checks it), and the
documentation's command-line page shows the same commands at length.
"""

EXAMPLES = {
    "": (
        "keras-elmo embed --model original --input sentences.txt "
        "--output embeddings.hdf5",
        "keras-elmo train --train 'corpus/*.txt' --build-vocab "
        "--output runs/mylm --time-budget 2h",
        "keras-elmo export-litert --model runs/mylm --precision int8 "
        "--output elmo-int8.tflite",
    ),
    "prepare": (
        "keras-elmo prepare --input 'books/*.txt.gz' --output corpus",
        "keras-elmo prepare --input dump.txt --documents blank-line "
        "--language de --deduplicate --output corpus-de",
    ),
    "embed": (
        "keras-elmo embed --model original --input sentences.txt "
        "--output embeddings.hdf5",
        "keras-elmo embed --model elmo-int8.onnx --input sentences.txt "
        "--output top.hdf5 --top",
    ),
    "dump-token-embeddings": (
        "keras-elmo dump-token-embeddings --model original --vocab vocab.txt "
        "--output tokens.hdf5",
    ),
    "embed-corpus": (
        "keras-elmo embed-corpus --model original --input 'corpus/*.txt.gz' "
        "--output elmo-out --top -- --direct_num_workers=2",
        "keras-elmo embed-corpus --model original --input "
        "'gs://bucket/*.gz' --output gs://bucket/elmo --runner "
        "DataflowRunner -- --project my-project --region europe-west4",
    ),
    "train": (
        "keras-elmo train --train 'corpus/*.txt' --validation heldout.txt "
        "--build-vocab --output runs/mylm --time-budget 2h",
        "keras-elmo train --train 'corpus/*.txt' --vocab vocab.txt "
        "--output runs/tuned --init-from original --steps 2000",
    ),
    "distill": (
        "keras-elmo distill --teacher runs/mylm --train 'corpus/*.txt' "
        "--build-vocab --output runs/tiny --time-budget 15m",
        "keras-elmo distill --teacher original --train 'corpus/*.txt' "
        "--vocab vocab.txt --units 256 --projection-dim 64 --output runs/small",
    ),
    "evaluate": (
        "keras-elmo evaluate --model runs/mylm --data 'heldout/*.txt'",
    ),
    "export-weights": (
        "keras-elmo export-weights --model runs/mylm --output runs/mylm/export",
    ),
    "export-savedmodel": (
        "keras-elmo export-savedmodel --model original "
        "--output elmo_savedmodel",
        "keras-elmo export-savedmodel --model runs/mylm/export "
        "--output elmo_cached --cache-vocab vocab.txt",
    ),
    "export-onnx": (
        "keras-elmo export-onnx --model original --precision int8 "
        "--output elmo-int8.onnx",
    ),
    "export-litert": (
        "keras-elmo export-litert --model original --precision int8 "
        "--output elmo-int8.tflite",
    ),
    "download": (
        "keras-elmo download original zh   # fetch ahead, then work offline",
        "keras-elmo download --verify original",
    ),
    "presets": ("keras-elmo presets",),
}


def _wrapped(line, width=76):
    """`line` as shell lines of about `width` characters at most, cut
    before a flag (a flag stays with its values) and continued with a
    backslash."""
    units = []
    for word in line.split():
        if units and not word.startswith("--"):
            units[-1] += " " + word
        else:
            units.append(word)
    rows = [units[0]]
    for unit in units[1:]:
        if len(rows[-1]) + 1 + len(unit) > width:
            rows[-1] += " \\"
            rows.append("    " + unit)
        else:
            rows[-1] += " " + unit
    return rows


def epilog(command):
    """The `examples:` block that ends `command`'s help (`""`: none)."""
    rows = [row for line in EXAMPLES.get(command, ()) for row in _wrapped(line)]
    return "examples:\n" + "".join(f"  {row}\n" for row in rows) if rows else ""
