"""Keypoint motions (SMPL/AMASS, DeepMimic) -> model: the scaled model and stance (:mod:`.model`),
segment orientation targets (:mod:`.orientations`), the ground-aware chain (:mod:`.pipeline`), one
motion file with its report (:mod:`.files`, run by the ``retarget smpl`` command,
:mod:`musclerl.cli.retarget_smpl`) and the bundled motions (:mod:`.bundled`)."""
