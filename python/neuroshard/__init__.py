#===- __init__.py - The NeuroShard Python package -------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard's Python side: the neural cost models (neuroshard.cost_model)
and their TorchScript bundle export, which the C++ planner loads."""
