"""Measuring a PyTorch chain stage by stage: memory probes, saved tensors, timings."""

__all__: list[str] = []
