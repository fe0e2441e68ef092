"""CLI command groups, one module per room; each exposes ``register(app)``."""
