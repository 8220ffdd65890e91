"""Spark for gazette: the `gazette` data source, and batch jobs run by gazctl or spark-submit.

Layers, lowest first; a module imports only its own layer or lower ones:
- `selection` (which journals: listing and file-root checks; `head_listing`, a read's
  listing up to the write head) and `job_errors`;
- `decode/`: the read engine executors run (content, Arrow blocks, sequencing);
- `source/`: the data source's reads (options, planning, range and stream reads);
- `sink/`: the data source's writes;
- `datasource` (the face registered with Spark), `session` (the SparkSession
  every job shares) and `journals_frame` (`read_journals`);
- the jobs, each a pure planning transform plus a thin driver and a `main()`,
  so it runs from gazctl (local mode or `--spark-master`) and through
  `spark-submit` alike: `prune` and `shards_prune` (with `fragment_deletes`
  and `shards_prune_plan`), `frame_export`.
"""
