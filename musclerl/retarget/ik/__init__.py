"""Inverse kinematics in JAX: kinematic tree (:mod:`.kinematics`, :mod:`.rotations`), what is fitted
(:mod:`.tasks`) and what is held (:mod:`.constraints`), both through one interface (:mod:`.term`),
the problem (:mod:`.problem`), the batched solve of a clip (:mod:`.solver`) and the clip solver
both retargeting pipelines build on it (:mod:`.clip`). Knows nothing of motion formats or the
ground."""
