"""Launching a plan on several processes (docs/distributed.md): ``chainplan.parallelize``
(:mod:`chainplan.launch.build`) builds a :class:`~chainplan.launch.candidate.LaunchCandidate`
(a candidate's one JSON shape) on a ``DeviceMesh``; :mod:`chainplan.launch.measure`
measures the run. The package's ``__init__`` loads nothing, so that reading a candidate
does not import torch.
"""
