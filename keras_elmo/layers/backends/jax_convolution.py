"""The char CNN's convolution on JAX: XLA's forward, a matmul backward.

XLA's CPU convolution is fast, but its gradient is not everywhere:
inside `lax.map` or `lax.cond` (where `jax_tokens.py` encodes the
distinct tokens) the gradient of the char CNN's convolutions took 30
times as long as at top level (256 tokens of the published filters: 7.5
s against 0.29 s, AMD EPYC [avx2,avx512_vnni,avx512f], 2 cores). The
convolution is linear, so its gradient is written here as matmuls over
the windows, which XLA runs at the same speed in and outside loops: the
same numbers in another summation order.
"""

_CONVOLUTION = []


def valid_convolution(x, kernel):
    """The "valid" 1D cross-correlation of `x` `(N, L, d)` with `kernel`
    `(w, d, n)`, stride 1; its gradient by matmuls."""
    if not _CONVOLUTION:
        _CONVOLUTION.append(_define())
    return _CONVOLUTION[0](x, kernel)


def _define():
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def convolution(x, kernel):
        return jax.lax.conv_general_dilated(
            x,
            kernel,
            window_strides=(1,),
            padding="VALID",
            dimension_numbers=("NWC", "WIO", "NWC"),
        )

    def forward(x, kernel):
        return convolution(x, kernel), (x, kernel)

    def backward(saved, gradient):
        x, kernel = saved
        width, depth, num = kernel.shape
        steps = gradient.shape[1]
        windows = jnp.concatenate(
            [x[:, k : k + steps] for k in range(width)], axis=-1
        )
        d_kernel = jnp.einsum("nlk,nlf->kf", windows, gradient)
        d_windows = gradient @ kernel.reshape(width * depth, num).T
        d_x = sum(
            jnp.pad(
                d_windows[..., k * depth : (k + 1) * depth],
                [(0, 0), (k, width - 1 - k), (0, 0)],
            )
            for k in range(width)
        )
        return d_x.astype(x.dtype), d_kernel.reshape(kernel.shape)

    convolution.defvjp(forward, backward)
    return convolution
