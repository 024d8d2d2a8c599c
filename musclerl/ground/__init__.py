"""The ground under a clip, shared by the plausibility check, the retargeting and the environments:
foot contact from the motion (:mod:`.contact`), the ground measured on the model (:mod:`.surface`),
the lowest point of a clip for putting it on the floor (:mod:`.floor`) and the treadmill belt's
velocity (:mod:`.belt`). Above :mod:`musclerl.models`, below :mod:`musclerl.dynamics`."""
