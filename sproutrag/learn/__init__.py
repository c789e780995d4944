"""learn: training and evaluation (offline, over features held in memory).

Owns labelled datasets on disk (`datasets`: JSON Lines, gold spans), per-head
features and their cache (`features`), evaluation variants composed of
the search functions (`variants`), the losses (`losses`), alpha and the search grid
(`training`, `calibration`), encoder fine-tuning (`finetune`), scoring (`evaluation`,
`metrics`: the paper's measure), reports (`report`) and the long dev sets (`devsets`).
May import: every other sproutrag package and `schemas`.
"""
