"""`keras-elmo download` and `keras-elmo presets`: pretrained models."""

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
        f"${MIRROR_VARIABLE} a mirror to fetch from.",
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
    download.set_defaults(run=run_download)

    presets = commands.add_parser(
        "presets",
        help="list the pretrained models and what is cached",
        description="Lists the pretrained model names that --model, "
        "keras_elmo.load_bilm(NAME) and ELMoEmbedding(NAME) accept, their "
        "download sizes and whether they are in the cache.",
    )
    presets.set_defaults(run=run_presets, needs_keras=False)


def run_download(args):
    from elmo_core.errors import KerasElmoError
    from keras_elmo.loading import download

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


def _size(preset, cached, recorded):
    """The download size in human units: in the table, in the cache index
    (`recorded`) or of the cached copy, else `~` an approximate size, else
    `?`."""
    from elmo_core.pretrained.units import human_size

    total, approximate = 0, False
    for role, record in preset.files.items():
        if record.size is not None:
            total += record.size
        elif cached[role] is not None and record.url in recorded:
            total += recorded[record.url].get("size", 0)
        elif cached[role] is not None and os.path.isfile(cached[role]):
            total += os.path.getsize(cached[role])
        elif record.approximate_size is not None:
            total += record.approximate_size
            approximate = True
        elif not record.url.endswith(".json"):
            return "?"
    return f"{'~' if approximate else ''}{human_size(total)}"


def run_presets(args):
    from elmo_core import pretrained
    from elmo_core.pretrained.cache import read_index
    from elmo_core.pretrained.mirror import describe_mirror

    recorded = read_index()
    rows = [("name", "kind", "lang", "size", "cached", "description")]
    for name, preset in pretrained.PRESETS.items():
        cached = pretrained.cached_files(name)
        count = sum(path is not None for path in cached.values())
        state = {0: "no", len(cached): "yes"}.get(count, "partly")
        rows.append(
            (
                name,
                preset.kind,
                preset.language,
                _size(preset, cached, recorded),
                state,
                preset.description,
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
