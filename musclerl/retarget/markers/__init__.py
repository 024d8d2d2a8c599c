"""Marker trials (OpenSim .trc) -> model: joint centres from a static trial (:mod:`.joint_centres`),
scaling and marker placement by per-pose fits (:mod:`.fit`), stance and belt (:mod:`.ground`), the
whole chain (:mod:`.pipeline`) and the ``retarget markers`` command
(:mod:`musclerl.cli.retarget_markers`)."""
