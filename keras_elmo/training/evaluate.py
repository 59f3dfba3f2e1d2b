"""The held-out perplexity of a trained run (`keras-elmo evaluate`)."""

from keras_elmo.data.file_patterns import resolve_files
from keras_elmo.training.corpus_scans import scan_dataset
from keras_elmo.training.corpus_scans import scan_files
from keras_elmo.training.run_directory import load_run
from keras_elmo.utils.backend import require_tensorflow
from keras_elmo.utils.progress import Progress
from keras_elmo.utils.progress import batch_callback


def evaluate(model_dir, data_patterns, verbose=1):
    """Held-out perplexity of a trained run (full softmax, stateless).

    Returns a dict with `perplexity`, `forward_perplexity`,
    `backward_perplexity`, `tokens` and `sentences`.
    """
    require_tensorflow("keras-elmo evaluate (training.evaluate.evaluate)")
    model, vocabulary, config = load_run(model_dir)
    files = resolve_files(data_patterns)
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
        callbacks=[batch_callback(progress)],
    )
    results = {k: float(v) for k, v in results.items()}
    results.update(tokens=scan.num_tokens, sentences=scan.num_sentences)
    return results
