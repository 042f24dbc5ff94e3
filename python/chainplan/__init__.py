"""chainplan: stage-by-stage profiling and memory-aware training schedules for PyTorch."""

__all__: list[str] = []
