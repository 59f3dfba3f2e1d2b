"""The held-out perplexity of a trained run (`keras-elmo evaluate`)."""

import keras

from elmo_core.errors import check_verbose
from elmo_core.errors.backends import require_tensorflow
from elmo_core.errors.blame import about
from elmo_core.files.paths import check_path
from elmo_core.progress import Progress
from elmo_core.text.patterns import resolve_files


def evaluate(model_dir, data_patterns, verbose=1):
    """Held-out perplexity of a trained run (full softmax, stateless; on
    TensorFlow).

    Args:
        model_dir: str. The run directory of `keras_elmo.train`.
        data_patterns: str or list of str. Held-out files or globs, one
            whitespace-tokenised sentence a line.
        verbose: 0 or 1. Progress lines.

    Returns:
        A dict with `perplexity`, `forward_perplexity`,
        `backward_perplexity`, `loss`, `tokens` and `sentences`.

    Example:

    >>> import tempfile
    >>> text = "tests/fixtures/bilm-tf/train/data.txt"
    >>> run = keras_elmo.train(
    ...     text, tempfile.mkdtemp(),
    ...     vocab="tests/fixtures/bilm-tf/train/vocab.txt",
    ...     steps=1, units=16, projection_dim=8, verbose=0)
    >>> results = keras_elmo.evaluate(run, text, verbose=0)
    >>> sorted(results)  # doctest: +NORMALIZE_WHITESPACE
    ['backward_perplexity', 'forward_perplexity', 'loss', 'perplexity',
     'sentences', 'tokens']
    """
    model_dir = check_path(model_dir, "model_dir")
    verbose = check_verbose(verbose)
    require_tensorflow(
        "evaluate (keras-elmo evaluate)", keras.backend.backend()
    )
    from keras_elmo.training.batch_progress import BatchProgress
    from keras_elmo.training.corpus_scans import scan_dataset
    from keras_elmo.training.corpus_scans import scan_files
    from keras_elmo.training.run_directory import load_run

    with about("model_dir"):
        model, vocabulary, config = load_run(model_dir)
    files = resolve_files(data_patterns, "data_patterns")
    scan = scan_files(config, files, 1, "evaluation", verbose)
    dataset = scan_dataset(
        None, scan, vocabulary, model, shuffle=False, repeat=False
    )
    progress = Progress(
        scan.steps_per_epoch, "batch", verbose, label="evaluation"
    )
    results = model.evaluate(
        dataset,
        verbose=0,
        return_dict=True,
        callbacks=[BatchProgress(progress)],
    )
    results = {k: float(v) for k, v in results.items()}
    results.update(tokens=scan.num_tokens, sentences=scan.num_sentences)
    return results
