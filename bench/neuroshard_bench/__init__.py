#===- __init__.py - NeuroShard's benchmarks and experiments ---------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The bench: NeuroShard's evaluation harness and experiments, apart from the
package users import (bench/README.md). Each module is a command,

    PYTHONPATH=python:bench:build/lib/python3/dist-packages \\
        /usr/bin/python3 -m neuroshard_bench.MODULE --help

  evaluate              every algorithm on held-out synthetic tasks, planned
                        and priced, and measured with --measure-tasks
  evaluate_distributed  plans run end to end, one MPI rank per device
  stress                a bundle's predictions on tables unlike its training
  selection_noise       the host's noise of measured selection for an
                        existing bundle, or against an evaluation's runs
  race_agreement        measured selection's timings against
                        neuroshard-collect's
  plan_scaling          planning time against the table count
  cluster_scaling       planning for clusters of many devices
  row_wise_benchmark    row pieces and replicas against the other types

The bench imports the package (neuroshard); the package never imports the
bench."""
