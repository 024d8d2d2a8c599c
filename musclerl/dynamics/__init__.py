"""Dynamics of a model over a motion, shared by the retargeting (balance), the environments (start
activations) and the evaluation (ID/SO references): inverse dynamics with applied loads, static
optimisation, and the physical-plausibility check (:mod:`.plausibility`)."""
