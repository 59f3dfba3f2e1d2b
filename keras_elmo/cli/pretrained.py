"""`keras-elmo download` and `keras-elmo presets`: pretrained models."""

import os

from keras_elmo.cli.arguments import add_quiet


def add_parser(commands):
    from keras_elmo.pretrained import CACHE_VARIABLE

    download = commands.add_parser(
        "download",
        help="download pretrained models into the cache ahead of time",
        description="Downloads each named pretrained model (see `keras-elmo "
        "presets`) or http(s) URL into the cache, so that later commands "
        "run offline. Interrupted downloads resume; each file is checked "
        f"(size, hash where known, that it loads). ${CACHE_VARIABLE} "
        "chooses the cache directory.",
    )
    download.add_argument(
        "models", nargs="+", metavar="NAME|URL", help="preset names or URLs"
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
    presets.set_defaults(run=run_presets, needs_tensorflow=False)


def run_download(args):
    from keras_elmo import pretrained
    from keras_elmo.errors import KerasElmoError

    progress = not args.quiet
    for model in args.models:
        if pretrained.is_url(model):
            paths = {"file": pretrained.cached_file(model, progress=progress)}
        elif model in pretrained.PRESETS:
            paths = pretrained.fetch(model, progress=progress)
        else:
            raise KerasElmoError(
                f"{model!r} is neither a pretrained model name nor an "
                "http(s) URL; `keras-elmo presets` lists the names."
            )
        for role, path in paths.items():
            print(f"{model} {role}: {path}")


def _size(preset, cached):
    """The download size in MB: recorded or of the cached copy, else `~`
    an approximate size, else `?`."""
    total, approximate = 0, False
    for role, record in preset.files.items():
        if record.size is not None:
            total += record.size
        elif cached[role] is not None and os.path.isfile(cached[role]):
            total += os.path.getsize(cached[role])
        elif record.approximate_size is not None:
            total += record.approximate_size
            approximate = True
        elif not record.url.endswith(".json"):
            return "?"
    megabytes = f"{total / 1e6:,.0f}" if total >= 1e7 else f"{total / 1e6:.1f}"
    return f"{'~' if approximate else ''}{megabytes} MB"


def run_presets(args):
    from keras_elmo import pretrained

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
                _size(preset, cached),
                state,
                preset.description,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        print("  ".join([*cells, row[5]]).rstrip())
    print(
        f"\ncache: {pretrained.cache_dir()} (set "
        f"{pretrained.CACHE_VARIABLE} to use another directory); ~: "
        "approximate, exact once downloaded"
    )
