import keras
from keras import ops

from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from keras_elmo.layers import backends
from keras_elmo.layers.validation import keras_initializer
from keras_elmo.layers.validation import known_last_dimension


@keras.saving.register_keras_serializable(package="keras_elmo")
class ProjectedLSTM(keras.layers.Layer):
    """LSTM with a projection of its output and clipped cell and output.

    The recurrent layer of ELMo: an LSTM of `units` cells whose output is
    projected to `projection_dim` (the projection is also the recurrent
    state), with the cell state clipped to `[-cell_clip, cell_clip]` and the
    projected output to `[-proj_clip, proj_clip]`, a forget-gate bias of 1.0
    added at run time, and no peepholes. Gates are ordered (i, j, f, o) in
    the kernels, j being the candidate.

    The input-to-hidden products of all timesteps are computed in one matmul
    before the time loop; only the recurrent product runs inside it, and the
    loop itself is the backend's (`keras_elmo/layers/backends/`; on
    TensorFlow with a hand-written gradient whose weight gradients are
    single large matmuls too).

    Masking: the mask must mark a prefix of each sequence (right padding).
    Outputs at masked steps are zero and the state is carried through them
    unchanged, so the final state is the state after the last valid step.
    With `go_backwards=True` each sequence is processed from its last valid
    step to its first, and the outputs are returned aligned with the inputs
    (unlike Keras `go_backwards`, they are not reversed).

    Args:
        units: int. Number of LSTM cells `H`.
        projection_dim: int or None. Size `P` of the projected output; None
            for no projection (the output is then the `H`-dim cell output).
            Defaults to `None`.
        cell_clip: float or None. Clip value for the cell state. Defaults to
            `None` (no clipping).
        proj_clip: float or None. Clip value for the projected output.
            Defaults to `None`.
        go_backwards: bool. Process each sequence in reverse within its valid
            length. Defaults to `False`.
        return_state: bool. Also return the final state `[c, h]`. Defaults to
            `False`.
        kernel_initializer: initializer for `kernel`, `recurrent_kernel` and
            `projection_kernel`. Defaults to `"glorot_uniform"`.

    Call arguments:
        inputs: float tensor `(batch, time, input_dim)`.
        mask: optional boolean tensor `(batch, time)`.
        initial_state: optional list `[c, h]` of shapes `(batch, units)` and
            `(batch, output_dim)`; zeros by default.

    Returns:
        Tensor `(batch, time, output_dim)`, and with `return_state=True` also
        the final `c` (float32) and `h`.

    Example:

    >>> layer = keras_elmo.layers.ProjectedLSTM(
    ...     units=8, projection_dim=4, cell_clip=3.0, proj_clip=3.0)
    >>> layer(np.ones((2, 5, 6), "float32")).shape
    TensorShape([2, 5, 4])

    Reference:
        Sak et al. 2014, "Long Short-Term Memory Recurrent Neural Network
        Architectures for Large Scale Acoustic Modeling"; Józefowicz et al.
        2016, "Exploring the Limits of Language Modeling"; Peters et al. 2018.
    """

    def __init__(
        self,
        units,
        projection_dim=None,
        cell_clip=None,
        proj_clip=None,
        go_backwards=False,
        return_state=False,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        units = check_integer(units, "units", minimum=1)
        if projection_dim is not None:
            projection_dim = check_integer(
                projection_dim, "projection_dim", minimum=1
            )
        for name, value in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
            if value is not None:  # None: no clipping
                check_number(value, name, minimum=0.0, above=True)
        go_backwards = check_flag(go_backwards, "go_backwards")
        return_state = check_flag(return_state, "return_state")
        self.units = int(units)
        self.projection_dim = (
            None if projection_dim is None else int(projection_dim)
        )
        self.cell_clip = None if cell_clip is None else float(cell_clip)
        self.proj_clip = None if proj_clip is None else float(proj_clip)
        self.go_backwards = bool(go_backwards)
        self.return_state = bool(return_state)
        self.kernel_initializer = keras_initializer(
            kernel_initializer, "kernel_initializer"
        )
        self.output_dim = self.projection_dim or self.units
        self.supports_masking = True

    def build(self, input_shape):
        input_dim = known_last_dimension(
            input_shape, "ProjectedLSTM needs a known input feature dimension."
        )
        gates = 4 * self.units
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, gates),
            initializer=self._clone_kernel_initializer(),
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(self.output_dim, gates),
            initializer=self._clone_kernel_initializer(),
        )
        self.bias = self.add_weight(
            name="bias", shape=(gates,), initializer="zeros"
        )
        self.projection_kernel = None
        if self.projection_dim is not None:
            self.projection_kernel = self.add_weight(
                name="projection_kernel",
                shape=(self.units, self.projection_dim),
                initializer=self._clone_kernel_initializer(),
            )

    def _clone_kernel_initializer(self):
        # Each weight gets its own copy of the initializer (as keras-hub's
        # clone_initializer: its class from its config).
        initializer = self.kernel_initializer
        return type(initializer).from_config(initializer.get_config())

    def call(self, inputs, mask=None, initial_state=None, training=None):
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        outputs, states = run_lstms(
            [self],
            [inputs],
            mask,
            None if initial_state is None else [initial_state],
            training=training,
        )
        if self.return_state:
            return [outputs[0], *states[0]]
        return outputs[0]

    def cell(self):
        """The layer's weights and clips as one `backends.Cell`."""
        return backends.Cell(
            self.kernel,
            self.bias,
            self.recurrent_kernel,
            self.projection_kernel,
            self.cell_clip,
            self.proj_clip,
        )

    def compute_mask(self, inputs, mask=None):
        if self.return_state:
            return [mask, None, None]
        return mask

    def compute_output_shape(self, input_shape):
        output_shape = (*input_shape[:2], self.output_dim)
        if self.return_state:
            batch = input_shape[0]
            return [output_shape, (batch, self.units), (batch, self.output_dim)]
        return output_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "projection_dim": self.projection_dim,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "go_backwards": self.go_backwards,
                "return_state": self.return_state,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config


def zero_state(layer, batch_size):
    """The zero `[c, h]` state of a ProjectedLSTM (c in float32)."""
    return [
        ops.zeros((batch_size, layer.units), dtype="float32"),
        ops.zeros((batch_size, layer.output_dim), dtype=layer.compute_dtype),
    ]


def run_lstms(layers, inputs, mask, initial_states=None, training=None):
    """Runs independent ProjectedLSTMs over a shared time axis.

    The BiLM runs its forward and backward layers through this together.
    Each layer reads its own input and, with `go_backwards`, walks each
    sequence backwards within its valid length.

    Args:
        layers: list of built `ProjectedLSTM`.
        inputs: list of float tensors `(batch, time, input_dim)`, one a layer.
        mask: boolean tensor `(batch, time)`, a prefix of each row.
        initial_states: optional list of `[c, h]`, one a layer.
        training: bool. With True the loop keeps what the hand-written
            gradient needs; otherwise it runs the forward pass alone.

    Returns:
        `(outputs, final_states)`: lists with one `(batch, time, output_dim)`
        tensor (zero at masked steps) and one `[c, h]` a layer.
    """
    for layer, x in zip(layers, inputs):
        if not layer.built:
            layer.build(x.shape)
    mask = ops.cast(mask, "bool")
    batch_size = ops.shape(mask)[0]
    lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
    if initial_states is None:
        initial_states = [zero_state(layer, batch_size) for layer in layers]
    # Not [:, :, None]: see BiLM.call (the TFLite converter).
    time_mask = ops.expand_dims(ops.transpose(mask), -1)

    runs = []
    for layer, x, (c, h) in zip(layers, inputs, initial_states):
        x = ops.cast(x, layer.compute_dtype)
        if layer.go_backwards:
            x = backends.reverse_sequences(x, lengths)
        # Time-major (T, B, D): the backend computes the input products of
        # all timesteps at once, before its time loop.
        runs.append(
            (
                ops.transpose(x, (1, 0, 2)),
                ops.cast(c, "float32"),
                ops.cast(h, layer.compute_dtype),
                layer.cell(),
            )
        )
    results = backends.lstm_recurrences(runs, time_mask, training=training)

    outputs, final_states = [], []
    for layer, x, (y, c, h) in zip(layers, inputs, results):
        y = ops.transpose(y, (1, 0, 2))
        if layer.go_backwards:
            y = backends.reverse_sequences(y, lengths)
        y = backends.ensure_shape(y, (*x.shape[:2], layer.output_dim))
        outputs.append(y)
        final_states.append([c, h])
    return outputs, final_states
