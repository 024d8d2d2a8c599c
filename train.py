"""Train a muscle-actuated tracking policy: the same as ``musclerl train``.

python train.py                                  # configs/demo.yaml: myolegs + bundled walk, CPU
python train.py --config configs/myolegs_walk.yaml --out runs/walk ppo.num_envs=64
"""

import sys

from musclerl.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
