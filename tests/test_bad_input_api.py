"""Bad input to the Python API (issue 11, section 1).

Each case calls a public entry point wrongly and checks the error: a
`KerasElmoError` (or the OS / type error a bad path or type is) whose
message names the argument, field, key, file or shape at fault. Errors
raised inside a graph (a `tf.function`, a SavedModel) are TensorFlow's
`InvalidArgumentError`, carrying our message. Character ids out of range
are caught before the embedding lookup on every path, over many fresh
traces.
"""

import json
import os
import re
import types

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core.characters import batch_to_ids
from elmo_core.errors import KerasElmoError
from elmo_core.errors import TextFileError
from elmo_core.errors import WeightFileError
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.training_config import TrainingConfig
from elmo_core.text.lines import read_lines
from keras_elmo.corpus.bilm_dump import embed_file
from keras_elmo.data import tokens_to_char_ids
from keras_elmo.export import export_savedmodel
from keras_elmo.layers import BiLM
from keras_elmo.layers import ELMoEmbedding
from keras_elmo.layers import ScalarMix
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import assert_words_in
from tests.helpers import named_cases
from tests.helpers import tiny_bilm_kwargs

InvalidArgument = tf.errors.InvalidArgumentError
# TensorFlow's own error for an index outside a gather's table.
GATHER_ERROR = re.compile(r"indices.*not in \[0")
RANGE_MESSAGE = "character ids must lie in 0..261"
CACHED = ["the", "cat"]
MAX_BATCH_TOKENS = 100


def _options(**changes):
    """The fixture options with `changes` ("lstm.dim": -5) applied."""
    with open(OPTIONS) as f:
        options = json.load(f)
    for path, value in changes.items():
        section, key = path.split(".")
        options[section][key] = value
    return options


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A tiny BiLM, an ELMoEmbedding on it and a few bad files."""
    root = tmp_path_factory.mktemp("bad_input_api")
    latin1 = root / "latin1.txt"
    latin1.write_bytes(b"<S>\n</S>\n<UNK>\nna\xefve\nfine\n")
    corpus = root / "corpus.txt"
    corpus.write_bytes(b"a good line\nna\xefve bad line\nanother good one\n")
    sentences = root / "sentences.txt"
    sentences.write_text("hello world\n")
    # One LSTM layer: the traces below are the slow part of this file.
    bilm = BiLM(**tiny_bilm_kwargs(num_layers=1))
    bilm.build()
    return types.SimpleNamespace(
        bilm=bilm,
        embedding=ELMoEmbedding(bilm),
        root=str(root),
        latin1=str(latin1),
        corpus=str(corpus),
        sentences=str(sentences),
    )


def _ids(shape):
    return np.ones(shape, "int32")


def _config(**changes):
    values = dict(train_files=["data.txt"], bilm={}, vocabulary_size=10)
    return TrainingConfig(**dict(values, **changes))


def _lengths_in_graph(lengths):
    """`tokens_to_char_ids` in a graph, where the batch size is unknown."""
    spec = [
        tf.TensorSpec([None, None], tf.string),
        tf.TensorSpec([None], tf.int32),
    ]
    convert = tf.function(tokens_to_char_ids, input_signature=spec)
    return convert(tf.constant([["a", "b"], ["c", ""]]), tf.constant(lengths))


# (id, call(api), expected exception, words the message must contain)
CASES = [
    # --- ELMoEmbedding ---
    ("embedding-none", lambda a: a.embedding(None), KerasElmoError,
     ["ELMoEmbedding takes as `inputs` token strings",
      "Received: inputs=None."]),
    ("embedding-list-of-strings",
     lambda a: a.embedding([["a", "b"], ["c", "d"]]), KerasElmoError,
     ["not a Python list as `inputs`", "tf.constant(",
      "Received: inputs=[['a', 'b'], ['c', 'd']]."]),
    ("embedding-ragged-list", lambda a: a.embedding([["a", "b"], ["c"]]),
     KerasElmoError, ["`inputs`", "not a rectangular array"]),
    ("embedding-list-of-ids",
     lambda a: a.embedding(batch_to_ids([["a"]]).tolist()), KerasElmoError,
     ["not a Python list as `inputs`", "np.asarray",
      "Received: inputs=[[[259, 98, 260"]),
    ("embedding-strings-rank-1",
     lambda a: a.embedding(tf.constant(["a", "b"])), KerasElmoError,
     ["(batch, time)", "Received: inputs=<string tensor of shape (2,)>."]),
    ("embedding-strings-rank-3",
     lambda a: a.embedding(tf.constant([[["a"]]])), KerasElmoError,
     ["Received: inputs=<string tensor of shape (1, 1, 1)>."]),
    ("embedding-float-ids",
     lambda a: a.embedding(tf.zeros((1, 2, 50))), KerasElmoError,
     ["integer tensor", "float32"]),
    ("embedding-ids-rank-2",
     lambda a: a.embedding(tf.zeros((2, 3), tf.int32)), KerasElmoError,
     ["(batch, time, 50)", "Received: inputs=<int32 tensor of shape (2, 3)>."]),
    ("embedding-ids-49-wide",
     lambda a: a.embedding(tf.zeros((1, 2, 49), tf.int32)), KerasElmoError,
     ["(batch, time, 50)",
      "Received: inputs=<int32 tensor of shape (1, 2, 49)>."]),
    ("embedding-bilm-not-a-bilm", lambda a: ELMoEmbedding("nope"),
     KerasElmoError, ["`bilm` must be a keras_elmo.layers.BiLM", "'nope'"]),
    ("embedding-dropout-one",
     lambda a: ELMoEmbedding(a.bilm, dropout=1.0), KerasElmoError,
     ["`dropout` must be a number in [0, 1). Received: dropout=1.0."]),
    ("embedding-no-representations",
     lambda a: ELMoEmbedding(a.bilm, num_output_representations=0),
     KerasElmoError, ["`num_output_representations` must be an integer >= 1",
                     "Received: num_output_representations=0."]),
    ("embedding-vocabulary-for-characters",
     lambda a: ELMoEmbedding(a.bilm, vocabulary=["<S>", "</S>", "<UNK>"]),
     KerasElmoError, ["`vocabulary` is for word-input biLMs"]),
    # --- ScalarMix ---
    ("scalar-mix-empty-list", lambda a: ScalarMix()([]), KerasElmoError,
     ["ScalarMix takes as `inputs` the list of biLM layers",
      "Received: inputs=[]."]),
    ("scalar-mix-different-shapes",
     lambda a: ScalarMix()([tf.zeros((1, 2, 4)), tf.zeros((1, 3, 4))]),
     KerasElmoError, ["must have the same shape",
      "Received: inputs=<tensors of shapes [(1, 2, 4), (1, 3, 4)]>."]),
    ("scalar-mix-one-tensor", lambda a: ScalarMix()(tf.zeros((1, 2, 4))),
     KerasElmoError, ["a single input of shape (1, 2, 4)"]),
    ("scalar-mix-weights-count",
     lambda a: ScalarMix(initial_scalar_weights=[0, 0])(
         [tf.zeros((1, 2, 4))] * 3),
     KerasElmoError, ["`initial_scalar_weights` must be 3 numbers",
                     "Received: initial_scalar_weights=[0.0, 0.0]."]),
    ("scalar-mix-layer-norm-rule",
     lambda a: ScalarMix(layer_norm_rule="x"), KerasElmoError,
     ["`layer_norm_rule` must be one of", "'x'"]),
    ("scalar-mix-l2-negative", lambda a: ScalarMix(l2_coef=-1.0),
     KerasElmoError, ["`l2_coef` must be a finite number >= 0",
                     "Received: l2_coef=-1.0."]),
    # --- BiLM ---
    ("bilm-ids-rank-2", lambda a: a.bilm(_ids((2, 50))), KerasElmoError,
     ["Received: inputs=<int32 tensor of shape (2, 50)>.",
      "(batch, time, 50)"]),
    ("bilm-ids-rank-4", lambda a: a.bilm(_ids((1, 2, 3, 50))),
     KerasElmoError,
     ["Received: inputs=<int32 tensor of shape (1, 2, 3, 50)>."]),
    ("bilm-none", lambda a: a.bilm(None), KerasElmoError,
     ["BiLM takes as `inputs` token strings", "Received: inputs=None."]),
    ("bilm-float-ids", lambda a: a.bilm(np.ones((1, 2, 50), "float32")),
     KerasElmoError, ["integer tensor", "float32"]),
    ("bilm-list-of-ids", lambda a: a.bilm(batch_to_ids([["a"]]).tolist()),
     KerasElmoError,
     ["BiLM takes character ids", "not a Python list as `inputs`"]),
    ("bilm-units-negative", lambda a: BiLM(**tiny_bilm_kwargs(units=-1)),
     KerasElmoError,
     ["`units` must be an integer >= 1", "Received: units=-1."]),
    ("bilm-projection-dim-zero",
     lambda a: BiLM(**tiny_bilm_kwargs(projection_dim=0)), KerasElmoError,
     ["`projection_dim` must be an integer >= 1",
      "Received: projection_dim=0."]),
    ("bilm-projection-above-units",
     lambda a: BiLM(**tiny_bilm_kwargs(projection_dim=16)), KerasElmoError,
     ["`projection_dim` must not exceed `units`"]),
    ("bilm-filters-int", lambda a: BiLM(**tiny_bilm_kwargs(filters=124)),
     KerasElmoError, ["`filters` must be a list", "filters=124"]),
    ("bilm-no-layers", lambda a: BiLM(**tiny_bilm_kwargs(num_layers=0)),
     KerasElmoError,
     ["`num_layers` must be an integer >= 1", "Received: num_layers=0."]),
    ("bilm-token-encoder", lambda a: BiLM(token_encoder="bytes"),
     KerasElmoError, ["`token_encoder` must be one of", "'bytes'"]),
    # --- tokens_to_char_ids and batch_to_ids ---
    ("char-ids-lengths-count",
     lambda a: tokens_to_char_ids(
         tf.constant([["a", "b"], ["c", ""]]), tf.constant([1, 2, 3])),
     KerasElmoError,
     ["sequence_length has 3 entries but tokens has 2 rows",
      "sequence_length (3,)"]),
    ("char-ids-lengths-count-in-graph",
     lambda a: _lengths_in_graph([1, 2, 3]), InvalidArgument,
     ["sequence_length must have one entry per row of tokens",
      "[The shape of sequence_length:] [3] [of tokens:] [2 2]"]),
    ("char-ids-lengths-rank-2",
     lambda a: tokens_to_char_ids(
         tf.constant([["a", "b"]]), tf.constant([[1, 2]])),
     KerasElmoError, ["`sequence_length` of shape (batch,)",
                      "Received: sequence_length=<int32 tensor of shape "
                      "(1, 2)>."]),
    ("char-ids-lengths-negative",
     lambda a: tokens_to_char_ids(
         tf.constant([["a", "b"]]), tf.constant([-1])),
     KerasElmoError, ["`sequence_length` must lie in 0..2",
                      "Received: sequence_length=[-1]."]),
    ("char-ids-lengths-too-long",
     lambda a: tokens_to_char_ids(
         tf.constant([["a", "b"]]), tf.constant([3])),
     KerasElmoError, ["`sequence_length` must lie in 0..2",
                      "Received: sequence_length=[3]."]),
    ("char-ids-lengths-negative-in-graph",
     lambda a: _lengths_in_graph([1, -2]), InvalidArgument,
     ["sequence_length must lie in 0..time", "[1 -2]"]),
    ("char-ids-int-tokens",
     lambda a: tokens_to_char_ids(tf.constant([[1]])),
     KerasElmoError, ["expects a tf.string tensor", "int32"]),
    ("batch-to-ids-string", lambda a: batch_to_ids("hello world"),
     KerasElmoError,
     ["list of sentences", "Received: sentences='hello world'."]),
    ("batch-to-ids-token-int", lambda a: batch_to_ids([["a", 3]]),
     KerasElmoError, ["Token 1 of sentence 0 is 3 of type int"]),
    # --- load_bilm ---
    ("load-options-missing",
     lambda a: keras_elmo.load_bilm("/nowhere/options.json", WEIGHTS),
     FileNotFoundError, ["Options file not found: /nowhere/options.json"]),
    ("load-weights-missing",
     lambda a: keras_elmo.load_bilm(OPTIONS, "/nowhere/weights.hdf5"),
     FileNotFoundError, ["Weight file not found: /nowhere/weights.hdf5"]),
    ("load-options-is-directory",
     lambda a: keras_elmo.load_bilm(a.root, WEIGHTS), WeightFileError,
     ["Options file {root} is a directory"]),
    ("load-options-not-json",
     lambda a: keras_elmo.load_bilm(a.sentences, WEIGHTS), WeightFileError,
     ["Options file {sentences} is not valid JSON"]),
    ("load-weights-not-hdf5",
     lambda a: keras_elmo.load_bilm(OPTIONS, OPTIONS), WeightFileError,
     [f"Could not open {OPTIONS} as an HDF5 weight file"]),
    ("load-weights-wrong-shapes",
     lambda a: keras_elmo.load_bilm(_options(**{"lstm.dim": 32}), WEIGHTS),
     WeightFileError,
     ["'RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0'", "has shape (32, 256)",
      "(32, 128)"]),
    ("load-filters-int",
     lambda a: keras_elmo.load_bilm(
         _options(**{"char_cnn.filters": 124}), WEIGHTS),
     WeightFileError,
     ["options.json `char_cnn.filters` must be a list. Received: 124."]),
    ("load-n-highway-list",
     lambda a: keras_elmo.load_bilm(
         _options(**{"char_cnn.n_highway": [2]}), WEIGHTS),
     WeightFileError, ["options.json `char_cnn.n_highway` must be an integer",
                      "Received: [2]."]),
    ("load-n-layers-str",
     lambda a: keras_elmo.load_bilm(
         _options(**{"lstm.n_layers": "two"}), WEIGHTS),
     WeightFileError, ["options.json `lstm.n_layers` must be an integer",
                      "Received: 'two'."]),
    ("load-dim-negative",
     lambda a: keras_elmo.load_bilm(_options(**{"lstm.dim": -5}), WEIGHTS),
     WeightFileError, ["options.json `lstm.dim` must be an integer >= 1",
                      "Received: -5."]),
    ("load-unknown-preset", lambda a: keras_elmo.load_bilm("no-such-model"),
     KerasElmoError, ["'no-such-model' is not a pretrained model name"]),
    # --- TrainingConfig: each value under its own name ---
    ("config-vocabulary-size", lambda a: _config(vocabulary_size=2),
     KerasElmoError,
     ["`vocabulary_size` must be an integer >= 3",
      "Received: vocabulary_size=2."]),
    ("config-tokens-per-batch", lambda a: _config(tokens_per_batch=0),
     KerasElmoError, ["`tokens_per_batch` must be an integer >= 1",
                     "Received: tokens_per_batch=0."]),
    ("config-max-length-str", lambda a: _config(max_length="10"),
     KerasElmoError, ["`max_length` must be an integer", "max_length='10'"]),
    ("config-num-sampled", lambda a: _config(num_sampled=-1),
     KerasElmoError, ["`num_sampled` must be an integer >= 1",
                     "Received: num_sampled=-1."]),
    ("config-optimizer", lambda a: _config(optimizer="sgd"),
     KerasElmoError, ["`optimizer` must be one of", "optimizer='sgd'"]),
    ("config-schedule", lambda a: _config(learning_rate_schedule="cos"),
     KerasElmoError, ["`learning_rate_schedule` must be one of"]),
    ("config-on-bad-line", lambda a: _config(on_bad_line="ignore"),
     KerasElmoError, ["`on_bad_line` must be one of", "'ignore'"]),
    ("config-mixed-precision", lambda a: _config(mixed_precision="fp8"),
     KerasElmoError, ["`mixed_precision` must be one of", "'fp8'"]),
    ("config-dropout", lambda a: _config(dropout=1.0), KerasElmoError,
     ["`dropout` must be a number in [0, 1). Received: dropout=1.0."]),
    ("config-learning-rate", lambda a: _config(learning_rate=0),
     KerasElmoError, ["`learning_rate` must be a finite number > 0",
                     "Received: learning_rate=0."]),
    ("config-clip-norm", lambda a: _config(clip_norm=-1), KerasElmoError,
     ["`clip_norm` must be a finite number >= 0",
     "Received: clip_norm=-1."]),
    ("config-initial-accumulator",
     lambda a: _config(initial_accumulator_value=-0.5), KerasElmoError,
     ["`initial_accumulator_value` must be a finite number >= 0",
      "Received: initial_accumulator_value=-0.5."]),
    ("config-batch-below-length", lambda a: _config(tokens_per_batch=50),
     KerasElmoError, ["`tokens_per_batch` must hold",
                      "`max_length` + 2 = 102"]),
    ("config-json-unknown-key",
     lambda a: TrainingConfig.from_json(
         dict(train_files=["x"], bilm={}, vocabulary_size=9, colour=1),
         source="run/config.json"),
     KerasElmoError, ["run/config.json has unknown key(s) ['colour']"]),
    ("config-json-not-object", lambda a: TrainingConfig.from_json([1]),
     KerasElmoError, ["config.json must hold a JSON object; found list"]),
    ("config-json-missing-keys",
     lambda a: TrainingConfig.from_json({"train_files": ["x"]}),
     KerasElmoError, ["config.json", "'bilm' and 'vocabulary_size'"]),
    # --- Vocabulary ---
    ("vocabulary-without-specials", lambda a: Vocabulary(["a", "b"]),
     KerasElmoError, ["lacks the special token(s) <S>, </S>, <UNK>"]),
    ("vocabulary-duplicate",
     lambda a: Vocabulary(["<S>", "</S>", "<UNK>", "a", "a"]),
     KerasElmoError, ["lists 'a' twice (again on line 5)"]),
    ("vocabulary-token-with-space",
     lambda a: Vocabulary(["<S>", "</S>", "<UNK>", "a b"]), KerasElmoError,
     ["line 4: 'a b' is not one whitespace-free token"]),
    ("vocabulary-file-not-utf8", lambda a: Vocabulary.from_file(a.latin1),
     TextFileError, ["{latin1}, line 4: not valid UTF-8"]),
    ("vocabulary-min-count",
     lambda a: Vocabulary.from_corpus([a.corpus], min_count=0),
     KerasElmoError, ["`min_count` must be an integer >= 1",
                     "Received: min_count=0."]),
    ("vocabulary-max-size",
     lambda a: Vocabulary.from_corpus([a.corpus], max_size=3),
     KerasElmoError, ["`max_size` must be larger than 3", "max_size=3"]),
    ("vocabulary-corpus-not-utf8",
     lambda a: Vocabulary.from_corpus([a.corpus]), TextFileError,
     ["{corpus}, line 2: not valid UTF-8"]),
    ("vocabulary-corpus-missing",
     lambda a: Vocabulary.from_corpus(["/nowhere/corpus.txt"]),
     FileNotFoundError, ["/nowhere/corpus.txt"]),
    ("vocabulary-sentence-is-string",
     lambda a: Vocabulary(["<S>", "</S>", "<UNK>"]).batch_to_ids(["a b"]),
     KerasElmoError, ["Sentence 0 is a str"]),
    # --- embed_file and export_savedmodel arguments ---
    ("embed-file-batch-size-zero",
     lambda a: embed_file(a.bilm, a.sentences, a.root + "/o.h5",
                          batch_size=0),
     KerasElmoError, ["`batch_size` must be an integer >= 1",
                     "Received: batch_size=0."]),
    ("embed-file-max-batch-tokens-float",
     lambda a: embed_file(a.bilm, a.sentences, a.root + "/o.h5",
                          max_batch_tokens=2.5),
     KerasElmoError, ["`max_batch_tokens` must be an integer >= 1",
                     "Received: max_batch_tokens=2.5."]),
    ("embed-file-output-is-input",
     lambda a: embed_file(a.bilm, a.sentences, a.sentences), KerasElmoError,
     ["`output_file` is also an input",
      "Received: output_file='{sentences}'"]),
    ("export-max-batch-tokens-zero",
     lambda a: export_savedmodel(a.bilm, a.root + "/s", max_batch_tokens=0),
     KerasElmoError, ["`max_batch_tokens` must be a positive integer",
                      "Received: max_batch_tokens=0."]),
    ("export-max-batch-tokens-negative",
     lambda a: export_savedmodel(a.bilm, a.root + "/s", max_batch_tokens=-1),
     KerasElmoError, ["max_batch_tokens=-1"]),
    ("export-max-batch-tokens-str",
     lambda a: export_savedmodel(a.bilm, a.root + "/s",
                                 max_batch_tokens="10"),
     KerasElmoError, ["max_batch_tokens='10'"]),
    ("export-max-batch-tokens-fraction",
     lambda a: export_savedmodel(a.bilm, a.root + "/s",
                                 max_batch_tokens=2.5),
     KerasElmoError, ["max_batch_tokens=2.5"]),
    ("export-into-non-empty-directory",
     lambda a: export_savedmodel(a.bilm, a.root), KerasElmoError,
     ["`output` exists and is not empty", "output='{root}'"]),
]  # fmt: skip


@pytest.mark.parametrize("call, error, words", named_cases(CASES))
def test_bad_input_names_what_is_wrong(api, call, error, words):
    with pytest.raises(error) as raised:
        call(api)
    message = str(raised.value)
    assert_words_in(message, [word.format(**vars(api)) for word in words])
    # The library speaks Python: no command-line flag in its messages.
    assert not re.search(r"--[a-z]", message), message


def test_build_vocabulary_skips_bad_lines(api):
    vocabulary = Vocabulary.from_corpus([api.corpus], on_bad_line="skip")
    specials = ["<S>", "</S>", "<UNK>"]
    assert vocabulary.tokens == [
        *specials,
        "good",
        "a",
        "another",
        "line",
        "one",
    ]
    skipped = []
    list(read_lines(api.corpus, "skip", skipped))
    assert skipped == [(api.corpus, 2)]


def test_nothing_written_by_refused_exports(api):
    entries = sorted(os.listdir(api.root))
    with pytest.raises(KerasElmoError):
        export_savedmodel(api.bilm, api.root + "/s", max_batch_tokens=0)
    with pytest.raises(KerasElmoError):
        embed_file(api.bilm, api.sentences, api.root + "/o.h5", batch_size=0)
    assert sorted(os.listdir(api.root)) == entries


# === The SavedModel signatures ===


@pytest.fixture(scope="module")
def saved(api):
    path = os.path.join(api.root, "saved")
    export_savedmodel(
        api.bilm, path, cache_vocab=CACHED, max_batch_tokens=MAX_BATCH_TOKENS
    )
    return tf.saved_model.load(path).signatures


def _tokens(tokens, lengths):
    return dict(tokens=tf.constant(tokens), sequence_len=tf.constant(lengths))


def _token_ids(ids, lengths):
    return dict(
        token_ids=tf.constant(ids, tf.int32),
        sequence_len=tf.constant(lengths, tf.int32),
    )


# (id, signature, inputs, words of the message, words it must not hold)
SIGNATURE_CASES = [
    ("tokens-rank-1", "tokens", _tokens(["a", "b"], [2]),
     ["tokens must have shape [batch, max_len] (rank 2)"], ["sequence_len"]),
    ("tokens-rank-3", "tokens", _tokens([[["a", "b"]]], [2]),
     ["tokens must have shape [batch, max_len] (rank 2)"], ["sequence_len"]),
    ("sequence-len-rank-2", "tokens", _tokens([["a", "b"]], [[2]]),
     ["sequence_len must have shape [batch] (rank 1)"], []),
    ("sequence-len-negative", "tokens", _tokens([["a", "b"]], [-1]),
     ["sequence_len must not be negative"], []),
    ("sequence-len-too-long", "tokens", _tokens([["a", "b"]], [3]),
     ["sequence_len must not exceed the padded length"], []),
    ("sequence-len-count", "tokens", _tokens([["a", "b"]], [2, 2]),
     ["sequence_len must have one entry per row"], []),
    ("token-ids-too-large", "token_ids", _token_ids([[0, 5]], [2]),
     ["token_ids must be smaller than the size of the vocabulary"], []),
    ("token-ids-negative", "token_ids", _token_ids([[-1, 0]], [2]),
     ["token_ids must be >= 0"], []),
    ("token-ids-rank-1", "token_ids", _token_ids([0, 1], [2]),
     ["token_ids must have shape [batch, max_len] (rank 2)"],
     ["sequence_len"]),
    ("sentences-rank-2", "default", dict(sentences=tf.constant([["a b"]])),
     ["sentences must have shape [batch] (rank 1)"], []),
    ("request-too-large", "tokens",
     _tokens([["a"] * 10] * 11, [10] * 11),
     [f"more than {MAX_BATCH_TOKENS} token positions"], []),
]  # fmt: skip


@pytest.mark.parametrize(
    "signature, inputs, words, absent", named_cases(SIGNATURE_CASES)
)
def test_bad_request_to_the_saved_model(
    saved, signature, inputs, words, absent
):
    with pytest.raises(InvalidArgument) as raised:
        saved[signature](**inputs)
    # The first line holds the failed check's message.
    message = str(raised.value)
    assert_words_in(message, words)
    for word in absent:
        assert f"{word} must" not in message, message
    assert "Shape of tensor" not in message


# === Character ids out of range: caught before the lookup, every path ===


def _bad_ids(trace):
    """Valid ids of shape (1 + trace % 3, 1 + trace // 3, 50) with one
    id out of range (above 261 or negative) somewhere."""
    batch, time = 1 + trace % 3, 1 + trace // 3
    ids = batch_to_ids([[f"w{trace}{t}" for t in range(time)]] * batch)
    bad = 262 + 37 * trace if trace % 2 == 0 else -1 - trace
    ids[trace % batch, (trace * 7) % time, (trace * 5) % 50] = bad
    return ids


def _check_range_error(raised):
    message = str(raised.value)
    assert RANGE_MESSAGE in message, message
    assert not GATHER_ERROR.search(message), message


def test_out_of_range_ids_caught_on_every_fresh_trace(api):
    entry_points = [
        lambda ids: api.bilm(ids)["layer_outputs"][-1],
        lambda ids: api.bilm.encode_tokens(ids),
        lambda ids: api.embedding(ids),
    ]
    for trace in range(21):
        # A new tf.function and a new shape: a fresh trace each time.
        function = tf.function(entry_points[trace % len(entry_points)])
        with pytest.raises(InvalidArgument) as raised:
            function(tf.constant(_bad_ids(trace)))
        _check_range_error(raised)


def test_out_of_range_ids_caught_eagerly(api):
    for trace in range(4):
        with pytest.raises(KerasElmoError) as raised:
            api.bilm(_bad_ids(trace))
        _check_range_error(raised)
        with pytest.raises(KerasElmoError) as raised:
            api.bilm.encode_tokens(_bad_ids(trace))
        _check_range_error(raised)


def test_out_of_range_ids_caught_in_a_saved_model(api):
    module = tf.Module()
    module.bilm = api.bilm
    module.embed = tf.function(
        lambda ids: module.bilm(ids)["layer_outputs"][-1],
        input_signature=[tf.TensorSpec([None, None, 50], tf.int32)],
    )
    path = os.path.join(api.root, "ids_model")
    tf.saved_model.save(module, path)
    loaded = tf.saved_model.load(path)
    good = batch_to_ids([["fine", "ids"]])
    assert loaded.embed(tf.constant(good)).shape == (1, 2, 8)
    for trace in range(6):
        with pytest.raises(InvalidArgument) as raised:
            loaded.embed(tf.constant(_bad_ids(trace)))
        _check_range_error(raised)


@pytest.mark.parametrize(
    "input_file, output_file, named",
    [(None, "out.hdf5", "input_file"), (3, "out.hdf5", "input_file"),
     ("in.txt", None, "output_file"), ("in.txt", b"out", "output_file")],
)  # fmt: skip
def test_embed_names_a_path_that_is_not_one(
    tmp_path, monkeypatch, input_file, output_file, named
):
    # A None input reached the FASTA check as a TypeError (found by the
    # fuzz sweep's random part with oneDNN held to AVX2).
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("Hello world\n")
    with pytest.raises(KerasElmoError, match=f"`{named}` must be a path"):
        keras_elmo.embed(MODEL_DIR, input_file, output_file, verbose=0)
    assert os.listdir(tmp_path) == ["in.txt"]
