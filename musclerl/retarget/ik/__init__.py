"""Inverse kinematics in JAX: kinematic tree (:mod:`.kinematics`, :mod:`.rotations`), what is fitted
(:mod:`.tasks`), what is held (:mod:`.constraints`), the problem (:mod:`.problem`) and the batched
solve of a clip (:mod:`.solver`). Knows nothing of motion formats or the ground."""
