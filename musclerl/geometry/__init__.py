"""Geometry shared by every stage, below all of them (it imports no other musclerl package):
rotations in numpy and jax (quaternions are MuJoCo's (w, x, y, z)), and the small
array-namespace-agnostic helpers the environments run on numpy or jax (:mod:`.arrays`)."""
