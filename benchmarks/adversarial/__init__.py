"""The adversarial sweep's harness and case families (run by benchmarks/adversarial_sweep.py)."""
