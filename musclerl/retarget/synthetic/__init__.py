"""Generated motions with a known truth: a smooth clip of any model and its markers (:mod:`.clip`),
walking over known ground (:mod:`.gait`) and SMPL clips of it (:mod:`.smpl`)."""
