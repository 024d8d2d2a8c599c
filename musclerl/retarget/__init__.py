"""Retargeting: motion files onto a model's joint coordinates, in layers (each imports only those above).

* :mod:`~musclerl.retarget.ik`: kinematic tree and Jacobians in JAX, IK tasks and constraints, the
  problem and its batched Levenberg–Marquardt solve;
* :mod:`~musclerl.retarget.correspondence`: the one landmark table (which model point each
  keypoint or foot stands for), shared by the ground, marker and keypoint layers;
* :mod:`~musclerl.retarget.ground`: foot contact, terrain, sole points, the ground constraint;
* :mod:`~musclerl.retarget.report`: the quality report of a retargeted clip (both pipelines);
* :mod:`~musclerl.retarget.markers`: OpenSim-style markers -> scaled model -> IK (``retarget markers``);
* :mod:`~musclerl.retarget.keypoints`: SMPL/AMASS and DeepMimic keypoints -> scaled model -> IK
  (``retarget smpl``, and the bundled motions);
* :mod:`~musclerl.retarget.batch`: the folder runner of both commands (outputs per input,
  resume, worker processes, the failure rule);
* :mod:`~musclerl.retarget.synthetic`: generated motions with a known truth, for tests and
  :mod:`~musclerl.bench.ik` (``musclerl bench ik``).
"""
