"""ALOHA's joint layout: two 7-joint arms, left then right, as ALOHA's recorders write them."""

ALOHA_JOINTS = [
    f"{side}_{joint}"
    for side in ("left", "right")
    for joint in ("waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate", "gripper")
]
