"""Muscle names of OpenSim's gait2392/gait2354 models mapped onto Rajagopal's (myolegs, MyoSuite).

Both families descend from Delp's 1990 lower limb, so most muscles have a one-to-one partner;
the multi-compartment ones keep their numbering (``glut_med1`` anterior -> ``glmed1``). Left out:
the adductor magnus, split into parts that do not correspond (gait2392 ``add_mag1..3``, Rajagopal
``addmagDist/Isch/Mid/Prox``), and muscles without a partner (``pect``, ``quad_fem``, ``gem``,
``per_tert``, the trunk's ``ercspn``/``intobl``/``extobl``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.motion.storage import Table

#: gait2392 base name (no side suffix) -> Rajagopal base name.
GAIT2392_TO_RAJAGOPAL: dict[str, str] = {
    "glut_med1": "glmed1",
    "glut_med2": "glmed2",
    "glut_med3": "glmed3",
    "glut_min1": "glmin1",
    "glut_min2": "glmin2",
    "glut_min3": "glmin3",
    "semimem": "semimem",
    "semiten": "semiten",
    "bifemlh": "bflh",
    "bifemsh": "bfsh",
    "sar": "sart",
    "add_long": "addlong",
    "add_brev": "addbrev",
    "tfl": "tfl",
    "grac": "grac",
    "glut_max1": "glmax1",
    "glut_max2": "glmax2",
    "glut_max3": "glmax3",
    "iliacus": "iliacus",
    "psoas": "psoas",
    "peri": "piri",
    "rect_fem": "recfem",
    "vas_med": "vasmed",
    "vas_int": "vasint",
    "vas_lat": "vaslat",
    "med_gas": "gasmed",
    "lat_gas": "gaslat",
    "soleus": "soleus",
    "tib_post": "tibpost",
    "flex_dig": "fdl",
    "flex_hal": "fhl",
    "tib_ant": "tibant",
    "per_brev": "perbrev",
    "per_long": "perlong",
    "ext_dig": "edl",
    "ext_hal": "ehl",
}

SIDES = ("r", "l")


def gait2392_to_rajagopal(name: str) -> str | None:
    """``tib_ant_r`` -> ``tibant_r``; None for a column without a partner (residuals included)."""
    base, _, side = name.rpartition("_")
    if side not in SIDES:
        return None
    partner = GAIT2392_TO_RAJAGOPAL.get(base)
    return f"{partner}_{side}" if partner else None


def rename_gait2392_table(table: Table) -> Table:
    """The table's muscle columns under Rajagopal names; columns without a partner dropped."""
    keep = [(j, gait2392_to_rajagopal(c)) for j, c in enumerate(table.columns)]
    keep = [(j, n) for j, n in keep if n is not None]
    return dataclasses.replace(
        table,
        columns=tuple(n for _, n in keep),
        data=np.asarray(table.data, dtype=float)[:, [j for j, _ in keep]],
    )
