"""The ground under a retargeted clip: the support geometry foot contact implies (:mod:`.terrain`),
sole points of the model's feet (:mod:`.soles`) and the ground held by the IK (:mod:`.constraint`);
foot contact and the measured ground surface are :mod:`musclerl.ground`."""
