"""Batch jobs that run on Spark: the driver talks to brokers, executors do the bulk work.

Each job is a pure planning transform plus a thin driver and a `main()`, so it
runs from gazctl (local mode or `--spark-master`) and through `spark-submit`
alike. `session` builds the SparkSession every job shares.
"""
