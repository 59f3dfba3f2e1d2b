"""Batches of sentences planned by their lengths.

A biLM call pads its sentences to the longest one, and its memory grows
with the padded positions (sentences x longest), while a CPU's matmuls
run faster the more rows each LSTM step has. So the callers sort
sentences by length and cut them into batches of at most a budget of
padded positions (and, where given, of sentences): short sentences go
many to a batch, long ones few.

Pure Python: no NumPy, no TensorFlow.
"""

# Padded token positions (sentences x the longest) per biLM call, for
# every command and class that embeds sentences (`embed`, `embed-corpus`,
# `SentenceEmbedder`, `dump_bilm`): it bounds the memory of a batch of
# long sentences (a longer sentence goes alone), and more rows a batch
# make the LSTM steps' products faster on a CPU (the 300 held-out
# sentences at the original size: 256 sentences / 16,384 positions took
# about 10 % less time than batches of 64, docs/benchmarks.md).
DEFAULT_MAX_BATCH_TOKENS = 16384


def token_batches(lengths, max_batch_tokens, max_batch_size=None):
    """Plans biLM calls: lists of indices into `lengths`, each list sorted
    by length, with `len(batch) * longest <= max_batch_tokens` (a sentence
    longer than the budget goes alone) and, with `max_batch_size`, at most
    that many sentences.

    >>> token_batches([3, 1, 2, 8, 2], max_batch_tokens=6)
    [[1, 2, 4], [0], [3]]
    >>> token_batches([3, 1, 2, 8, 2], max_batch_tokens=6, max_batch_size=2)
    [[1, 2], [4, 0], [3]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch = [], []
    for i in order:
        full = max_batch_size is not None and len(batch) >= max_batch_size
        if batch and (full or (len(batch) + 1) * lengths[i] > max_batch_tokens):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches
