import json
import os
import shutil

import h5py
import numpy as np
import pytest

import keras_elmo
from elmo_core.errors.kinds import WeightFileError
from keras_elmo.layers import BiLM
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import TestCase
from tests.helpers import fixture_options
from tests.helpers import tiny_bilm_kwargs

SENTENCES = [["Hello", "world", "!"], ["ELMo", "in", "Keras"], []]


def _datasets(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, obj[...])
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return out


class CheckpointsTest(TestCase):
    def setUp(self):
        super().setUp()
        self.dir = self.get_temp_dir()
        self.ids = keras_elmo.batch_to_ids(SENTENCES)

    def _write_and_load(self, bilm, **kwargs):
        options = os.path.join(self.dir, "options.json")
        weights = os.path.join(self.dir, "weights.hdf5")
        keras_elmo.save_bilm(bilm, options, weights, **kwargs)
        return keras_elmo.load_bilm(options, weights), options, weights

    def test_round_trip_is_exact(self):
        bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
        restored, options, weights = self._write_and_load(bilm)
        original, written = _datasets(WEIGHTS), _datasets(weights)
        self.assertEqual(set(original), set(written))
        for name, value in original.items():
            np.testing.assert_array_equal(written[name], value, err_msg=name)
        with open(options) as f:
            self.assertEqual(json.load(f), fixture_options())
        self.assertAllCloseTree(restored(self.ids), bilm(self.ids), atol=0)

    def test_accepts_261_characters(self):
        bilm = keras_elmo.load_bilm(
            fixture_options(**{"char_cnn.n_characters": 261}), WEIGHTS
        )
        self.assertEqual(bilm.count_params(), 105120)
        with pytest.raises(WeightFileError, match="n_characters=263"):
            keras_elmo.load_bilm(
                fixture_options(**{"char_cnn.n_characters": 263}), WEIGHTS
            )

    def test_missing_clips_and_skip_flag_mean_none(self):
        options = fixture_options(
            **{
                "lstm.cell_clip": None,
                "lstm.proj_clip": None,
                "lstm.use_skip_connections": None,
            }
        )
        bilm = keras_elmo.load_bilm(options, WEIGHTS)
        self.assertIsNone(bilm.cell_clip)
        self.assertIsNone(bilm.forward_layers[0].proj_clip)
        self.assertFalse(bilm.use_skip_connections)

    def test_file_without_token_projection(self):
        # Char CNN width 8 == projection_dim: bilm-tf writes no CNN_proj.
        bilm = BiLM(**tiny_bilm_kwargs(projection_dim=8, units=16))
        self.assertFalse(bilm.use_token_projection)
        restored, _, weights = self._write_and_load(bilm)
        self.assertNotIn("CNN_proj/W_proj", _datasets(weights))
        self.assertAllCloseTree(restored(self.ids), bilm(self.ids), atol=0)
        # Equal sizes but a projection in the file: kept.
        bilm = BiLM(
            **tiny_bilm_kwargs(projection_dim=8, units=16),
            use_token_projection=True,
        )
        restored, _, _ = self._write_and_load(bilm)
        self.assertTrue(restored.use_token_projection)
        self.assertAllCloseTree(restored(self.ids), bilm(self.ids), atol=0)

    def test_file_without_lstm_projection(self):
        bilm = BiLM(**tiny_bilm_kwargs(projection_dim=8, units=8))
        restored, _, weights = self._write_and_load(bilm)
        self.assertFalse(any("W_P_0" in name for name in _datasets(weights)))
        self.assertAllCloseTree(restored(self.ids), bilm(self.ids), atol=0)

    def test_mismatched_options_name_dataset_and_shapes(self):
        with pytest.raises(
            WeightFileError,
            match=r"'RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0'.* shape "
            r"\(32, 256\), but the options imply \(32, 512\)",
        ):
            keras_elmo.load_bilm(fixture_options(**{"lstm.dim": 128}), WEIGHTS)
        with pytest.raises(
            WeightFileError, match=r"'char_embed'.*\(261, 4\).*\(261, 8\)"
        ):
            keras_elmo.load_bilm(
                fixture_options(**{"char_cnn.embedding.dim": 8}), WEIGHTS
            )
        with pytest.raises(WeightFileError, match=r"no dataset 'CNN_high_2"):
            keras_elmo.load_bilm(
                fixture_options(**{"char_cnn.n_highway": 3}), WEIGHTS
            )

    def test_missing_projection_when_needed(self):
        weights = os.path.join(self.dir, "no_proj.hdf5")
        shutil.copy(WEIGHTS, weights)
        with h5py.File(weights, "a") as f:
            del f["CNN_proj"]
        with pytest.raises(
            WeightFileError, match=r"no dataset 'CNN_proj/W_proj'.*\(124, 16\)"
        ):
            keras_elmo.load_bilm(OPTIONS, weights)

    def test_bad_options(self):
        with pytest.raises(WeightFileError, match="activation='gelu'"):
            keras_elmo.load_bilm(
                fixture_options(**{"char_cnn.activation": "gelu"}), WEIGHTS
            )
        with pytest.raises(WeightFileError, match="no `lstm.dim`"):
            keras_elmo.load_bilm(fixture_options(**{"lstm.dim": None}), WEIGHTS)
        broken = os.path.join(self.dir, "broken.json")
        with open(broken, "w") as f:
            f.write('{"lstm": ')
        with pytest.raises(WeightFileError, match="not valid JSON"):
            keras_elmo.load_bilm(broken, WEIGHTS)

    def test_missing_and_damaged_files(self):
        with pytest.raises(FileNotFoundError, match="Options file not found"):
            keras_elmo.load_bilm("nope.json", WEIGHTS)
        with pytest.raises(FileNotFoundError, match="Weight file not found"):
            keras_elmo.load_bilm(OPTIONS, "nope.hdf5")
        truncated = os.path.join(self.dir, "truncated.hdf5")
        with open(WEIGHTS, "rb") as src, open(truncated, "wb") as dst:
            dst.write(src.read()[:5000])
        with pytest.raises(WeightFileError, match="truncated.hdf5"):
            keras_elmo.load_bilm(OPTIONS, truncated)
        with pytest.raises(WeightFileError, match="as an HDF5 weight file"):
            keras_elmo.load_bilm(OPTIONS, OPTIONS)
