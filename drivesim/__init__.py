"""drivesim: autonomous-driving scenario simulation by the million on every JAX device."""

__version__ = "0.1.0"
