#===- __init__.py - The NeuroShard Python package -------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard's Python side: the neural cost models (neuroshard.cost_model)
and their TorchScript bundle export, which the C++ planner loads, and the
pre-training pipeline that feeds them: the synthetic table pool
(neuroshard.table_pool), cost-data collection (neuroshard.collect), training
(neuroshard.train) and its report (neuroshard.report, neuroshard.metrics);
the PyTorch front end (neuroshard.frontend); and the evaluation of plans
against the baselines on held-out tasks (neuroshard.evaluate)."""
