"""`keras-elmo download` and `keras-elmo presets`: pretrained models
(`elmo_core.pretrained.download` and `presets`; neither imports Keras)."""

import os
import sys

from keras_elmo_cli.arguments import add_quiet


def add_parser(commands):
    from elmo_core.pretrained.cache import CACHE_VARIABLE
    from elmo_core.pretrained.mirror import MIRROR_VARIABLE

    download = commands.add_parser(
        "download",
        help="download pretrained models into the cache ahead of time",
        description="Downloads each named pretrained model (see `keras-elmo "
        "presets`) or http(s) URL into the cache, so that later commands "
        "run offline. Every name is tried and reported; the exit status is "
        "non-zero if any failed. Interrupted downloads resume; each file is "
        "checked (size, hash where known, that it loads) and its size and "
        "SHA-256 are recorded in the cache index; a damaged cached copy is "
        f"fetched again. ${CACHE_VARIABLE} chooses the cache directory, "
        f"${MIRROR_VARIABLE} a mirror to fetch from. "
        "elmo_core.pretrained.download(NAME) from Python.",
    )
    download.add_argument(
        "models", nargs="+", metavar="NAME|URL", help="preset names or URLs"
    )
    download.add_argument(
        "--verify",
        action="store_true",
        help="also check the SHA-256 of files already in the cache against "
        "the cache index (the size is checked on every use); fetch damaged "
        "ones again",
    )
    add_quiet(download)
    download.set_defaults(run=run_download, needs_keras=False)

    presets = commands.add_parser(
        "presets",
        help="list the pretrained models and what is cached",
        description="Lists the pretrained model names that --model, "
        "keras_elmo.load_bilm(NAME) and ELMoEmbedding(NAME) accept, their "
        "download sizes and whether they are in the cache. "
        "elmo_core.pretrained.presets() from Python.",
    )
    presets.set_defaults(run=run_presets, needs_keras=False)


def run_download(args):
    """Runs `keras-elmo download`: `elmo_core.pretrained.download` on each
    name, every one tried and reported."""
    from elmo_core.errors import KerasElmoError
    from elmo_core.pretrained import download

    failed = []
    for model in args.models:
        try:
            paths = download(model, progress=not args.quiet, verify=args.verify)
        except KerasElmoError as e:
            failed.append(model)
            print(f"{model}: failed: {e}", file=sys.stderr, flush=True)
            continue
        for role, path in paths.items():
            print(f"{model} {role}: {path}")
        print(f"{model}: ok, {_total(paths.values())} in the cache", flush=True)
    if failed:
        raise KerasElmoError(
            f"{len(failed)} of {len(args.models)} failed "
            f"({', '.join(failed)}); see the messages above."
        )


def _total(paths):
    from elmo_core.pretrained.units import human_size

    total = 0
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                total += sum(
                    os.path.getsize(os.path.join(root, n)) for n in names
                )
        else:
            total += os.path.getsize(path)
    return human_size(total)


def _size(row):
    """A preset's size in `presets()`'s `row` in human units: `~` before
    an approximate one, `?` for an unknown one."""
    from elmo_core.pretrained.units import human_size

    if row["size"] is None:
        return "?"
    return f"{'~' if row['approximate'] else ''}{human_size(row['size'])}"


def run_presets(args):
    """Runs `keras-elmo presets`: `elmo_core.pretrained.presets()` as a
    table, and where the cache and the mirror are."""
    from elmo_core import pretrained
    from elmo_core.pretrained.mirror import describe_mirror

    rows = [("name", "kind", "lang", "size", "cached", "description")]
    for row in pretrained.presets():
        rows.append(
            (
                row["name"],
                row["kind"],
                row["language"],
                _size(row),
                row["cached"],
                row["description"],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        print("  ".join([*cells, row[5]]).rstrip())
    mirror = describe_mirror()
    print(
        f"\ncache: {pretrained.cache_dir()} (set "
        f"{pretrained.CACHE_VARIABLE} to use another directory); "
        f"mirror: {mirror or f'none (set {pretrained.MIRROR_VARIABLE})'}; "
        "~: approximate, exact once downloaded"
    )
