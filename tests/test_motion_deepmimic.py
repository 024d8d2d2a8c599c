"""DeepMimic humanoid3d clips: the real walk and run, and hand-made frames."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musclerl.motion.deepmimic import DEEPMIMIC_KEYPOINT_NAMES, DEEPMIMIC_PARENTS, read_deepmimic

K = {name: i for i, name in enumerate(DEEPMIMIC_KEYPOINT_NAMES)}
IDENTITY_FRAME = (
    [1 / 30, 0.0, 0.9, 0.0, 1, 0, 0, 0]
    + [1, 0, 0, 0] * 3
    + [0.0]
    + [1, 0, 0, 0] * 2
    + [0.0]
    + [1, 0, 0, 0]
    + [0.0]
    + [1, 0, 0, 0] * 2
    + [0.0]
)


@pytest.fixture(scope="module")
def deepmimic_dir(shared_data):
    path = shared_data / "deepmimic"
    if not path.is_dir():
        pytest.skip("deepmimic data not present")
    return path


def _write(tmp_path, frames, loop="none", name="clip.txt"):
    path = tmp_path / name
    path.write_text(json.dumps({"Loop": loop, "Frames": frames}))
    return path


def test_identity_frame_is_the_rest_skeleton(tmp_path):
    assert len(IDENTITY_FRAME) == 44
    motion = read_deepmimic(_write(tmp_path, [IDENTITY_FRAME, IDENTITY_FRAME]))
    p = motion.positions_m[0]
    np.testing.assert_allclose(p[K["root"]], [0, 0, 0.9])
    # humanoid3d.txt: hips 0.084887 to the side (right = DeepMimic +z = MuJoCo -y),
    # thigh 0.421546, shin 0.40987
    np.testing.assert_allclose(p[K["right_hip"]], [0, -0.084887, 0.9])
    np.testing.assert_allclose(p[K["left_knee"]], [0, 0.084887, 0.9 - 0.421546])
    np.testing.assert_allclose(p[K["right_ankle"], 2], 0.9 - 0.421546 - 0.409870)
    np.testing.assert_allclose(p[K["right_shoulder"]], [-0.02405, -0.18311, 0.9 + 0.236151 + 0.24350])
    assert p[K["right_toe"], 0] > p[K["right_heel"], 0]  # feet point along +x
    assert motion.rate_hz == pytest.approx(30.0) and not motion.loop


def test_knee_and_elbow_hinges(tmp_path):
    frame = list(IDENTITY_FRAME)
    frame[20] = -np.pi / 2  # right knee: DeepMimic flexion is negative
    frame[29] = np.pi / 2  # right elbow: flexion is positive
    p = read_deepmimic(_write(tmp_path, [frame, frame])).positions_m[0]
    np.testing.assert_allclose(p[K["right_ankle"]] - p[K["right_knee"]], [-0.40987, 0, 0], atol=1e-12)
    np.testing.assert_allclose(p[K["right_wrist"]] - p[K["right_elbow"]], [0.258947, 0, 0], atol=1e-12)


def test_root_rotation_turns_the_body(tmp_path):
    frame = list(IDENTITY_FRAME)
    frame[4:8] = [np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0]  # +90 deg about DeepMimic's up axis
    p = read_deepmimic(_write(tmp_path, [frame, frame], name="turn.json")).positions_m[0]
    assert p[K["right_toe"], 1] > p[K["right_heel"], 1] + 0.1  # now facing MuJoCo +y (turned left)


@pytest.mark.parametrize("name, speed_range", [("walk", (0.8, 1.6)), ("run", (2.5, 6.0))])
def test_real_clips(deepmimic_dir, name, speed_range):
    motion = read_deepmimic(deepmimic_dir / f"humanoid3d_{name}.txt")
    assert motion.loop and motion.rate_hz == pytest.approx(30.0, rel=1e-3)
    assert motion.positions_m.shape == ({"walk": 39, "run": 25}[name], 20, 3)
    assert motion.parents == DEEPMIMIC_PARENTS
    p = motion.positions_m
    bones = np.linalg.norm(p[:, 1:] - p[:, list(DEEPMIMIC_PARENTS[1:])], axis=-1)
    np.testing.assert_allclose(bones, np.broadcast_to(bones[0], bones.shape), atol=1e-9)  # rigid skeleton
    root = motion.keypoint("root")
    speed = (root[-1, 0] - root[0, 0]) / motion.duration_s
    assert speed_range[0] < speed < speed_range[1]  # forward along +x
    assert abs(root[-1, 1] - root[0, 1]) < 0.1
    assert np.all(p[:, K["head"], 2] > root[:, 2] + 0.4)
    # left on +y relative to right, in every frame (the clips walk straight along +x)
    assert np.all(p[:, K["left_hip"], 1] > p[:, K["right_hip"], 1])
    heels = p[:, [K["left_heel"], K["right_heel"]], 2]
    assert -0.07 < heels.min() < 0.03  # feet reach the floor (the run clip sinks a few cm)
