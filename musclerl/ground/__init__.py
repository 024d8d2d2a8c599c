"""The ground under a clip, shared by the plausibility check, the retargeting and the environments:
foot contact from the motion (:mod:`.contact`) and the ground measured on the model
(:mod:`.surface`). Above :mod:`musclerl.models`, below :mod:`musclerl.dynamics`."""
