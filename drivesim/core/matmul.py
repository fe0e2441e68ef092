"""Matrix products at full float32 precision on every platform.

JAX computes a float32 matmul at the platform's fastest precision unless told otherwise: on
NVIDIA GPUs since Ampere (A100, H100, H200) each operand is rounded to TensorFloat-32, 10
mantissa bits. The engine's products are selections (a one-hot matrix picks each agent's
route segments, lane width and route group) and the MLP policy's layers; rounded to TF32,
a lane point 3 km from the origin moves by up to 1 m, and a GPU no longer computes what the
CPU computes. Every product in the engine goes through :func:`matmul` (precision HIGHEST:
float32 operands and sums), which changes nothing on the CPU, where float32 is the only
precision.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.types import Array

PRECISION = jax.lax.Precision.HIGHEST


def matmul(x: Array, y: Array) -> Array:
    """``x @ y`` with float32 operands on every platform (``jnp.matmul`` shapes)."""
    return jnp.matmul(x, y, precision=PRECISION)
