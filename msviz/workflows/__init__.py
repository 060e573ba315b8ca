"""Workflows that drive the engine, a room above it: a shape family's cover and its
cross-measurement (``shapes``), a bundle reproduced (``reproduce``), a restricted space re-run
(``rerun``), what a tuning library covers of a model (``coverage``), two tuned models
compared in paired rounds (``compare_models``) and a tuned model against ONNX Runtime and
OpenVINO, operator by operator (``vs_runtimes``). Each uses a
:class:`~msviz.engine.session.Session` or the measuring service
(:mod:`msviz.engine.measure.service`) through their public API; none builds or runs a kernel
itself."""
