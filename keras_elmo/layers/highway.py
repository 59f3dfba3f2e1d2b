import keras
from keras import ops

from keras_elmo.layers.validation import keras_initializer
from keras_elmo.layers.validation import known_last_dimension


@keras.saving.register_keras_serializable(package="keras_elmo")
class Highway(keras.layers.Layer):
    """One highway layer with a relu transform, as in the ELMo token encoder.

    Computes `t = sigmoid(x @ carry_kernel + carry_bias)`,
    `u = relu(x @ transform_kernel + transform_bias)` and returns
    `t * u + (1 - t) * x`. The names follow the official weight files: the
    "carry" gate actually weights the transform. The transform is relu even
    when the char CNN uses tanh, as in the original. Stack several of these
    for a multi-layer highway network.

    Masking: supports masking and passes the mask through unchanged; values
    at masked positions are computed like any other.

    Args:
        carry_bias_initializer: initializer for the gate bias. Defaults to
            `keras.initializers.Constant(-2.0)`, which starts the gate mostly
            closed (the layer close to the identity).

    Call arguments:
        inputs: float tensor `(..., features)`.

    Returns:
        Tensor of the same shape as `inputs`.

    Example:

    >>> layer = keras_elmo.layers.Highway()
    >>> layer(np.ones((2, 3, 8), "float32")).shape
    TensorShape([2, 3, 8])

    Reference:
        Srivastava et al. 2015, "Highway Networks"; Peters et al. 2018.
    """

    def __init__(self, carry_bias_initializer=None, **kwargs):
        super().__init__(**kwargs)
        if carry_bias_initializer is None:
            carry_bias_initializer = keras.initializers.Constant(-2.0)
        self.carry_bias_initializer = keras_initializer(
            carry_bias_initializer, "carry_bias_initializer"
        )
        self.supports_masking = True

    def build(self, input_shape):
        dim = known_last_dimension(
            input_shape, "Highway needs a known last dimension."
        )
        # bilm-tf initialises both kernels with stddev sqrt(1 / dim).
        stddev = (1.0 / dim) ** 0.5
        self.carry_kernel = self.add_weight(
            name="carry_kernel",
            shape=(dim, dim),
            initializer=keras.initializers.RandomNormal(stddev=stddev),
        )
        self.carry_bias = self.add_weight(
            name="carry_bias",
            shape=(dim,),
            initializer=self.carry_bias_initializer,
        )
        self.transform_kernel = self.add_weight(
            name="transform_kernel",
            shape=(dim, dim),
            initializer=keras.initializers.RandomNormal(stddev=stddev),
        )
        self.transform_bias = self.add_weight(
            name="transform_bias", shape=(dim,), initializer="zeros"
        )

    def call(self, inputs):
        gate = ops.sigmoid(
            ops.matmul(inputs, self.carry_kernel) + self.carry_bias
        )
        transform = ops.relu(
            ops.matmul(inputs, self.transform_kernel) + self.transform_bias
        )
        return gate * transform + (1.0 - gate) * inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["carry_bias_initializer"] = keras.initializers.serialize(
            self.carry_bias_initializer
        )
        return config
